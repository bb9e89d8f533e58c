"""A save that names its run is stored once (spec/sessions.md SE-40, SE-67,
spec/redis.md RD-9): the SQLite history, the plain-file one and the Redis plugin's,
repeated saves, concurrent saves from two processes, the take-back of SE-20, and a plain
run that names no run."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentSession,
    FileHistoryProvider,
    HistoryProvider,
    Message,
    SQLiteHistoryProvider,
)
from minagent.testing import ScriptedChatClient
from tests._support.modes import run
from tests._support.redis_server import SERVER, RedisServer

from ._util import texts

ROOT = Path(__file__).resolve().parents[2]
KINDS = ["sqlite", "files", "files-msgpack", "redis"]


@pytest.fixture(scope="module")
def redis_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RedisServer | None]:
    """One real redis-server for the module (RD-6), or None where there is none."""
    if SERVER is None:
        yield None
        return
    instance = RedisServer(tmp_path_factory.mktemp("redis"))
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()


class Stores:
    """Fresh providers of one kind: a new SQLite file, a new directory of plain files
    (JSON lines or MessagePack), or a new key prefix on the shared server."""

    def __init__(self, kind: str, directory: Path, server: RedisServer | None) -> None:
        self.kind, self.directory, self.server = kind, directory, server
        self.made: list[Any] = []
        self.count = 0
        # this test's keys on the shared server
        self.prefix = f"t{uuid.uuid4().hex[:12]}:"

    def target(self) -> str:
        """Where the stores of this test keep their data: a file, or a Redis URL and
        prefix."""
        if self.kind == "sqlite":
            return str(self.directory / "runs.db")
        if self.kind.startswith("files"):
            return str(self.directory / "files")
        assert self.server is not None
        return f"{self.server.url} {self.prefix}"

    def new(self, source_id: str = "h", **kwargs: Any) -> HistoryProvider:
        if self.kind == "sqlite":
            provider: HistoryProvider = SQLiteHistoryProvider(
                source_id, path=self.directory / "runs.db", **kwargs
            )
        # a provider of another source id keeps another directory
        elif self.kind.startswith("files"):
            fmt = "msgpack" if self.kind == "files-msgpack" else "json"
            provider = FileHistoryProvider(
                Path(self.target()) / source_id, serialization_format=fmt, **kwargs
            )
        else:
            redis = pytest.importorskip("minagent_redis")
            url, prefix = self.target().split(" ")
            provider = redis.RedisHistoryProvider(
                source_id, url=url, key_prefix=prefix, **kwargs
            )
        self.made.append(provider)
        return provider

    async def close(self) -> None:
        while self.made:
            provider = self.made.pop()
            if hasattr(provider, "aclose"):
                await provider.aclose()


@pytest.fixture(params=KINDS)
def stores(
    request: pytest.FixtureRequest, tmp_path: Path, redis_server: RedisServer | None
) -> Stores:
    """The providers a test makes; the test closes them on its own event loop
    (`Stores.close`)."""
    if request.param == "redis" and redis_server is None:
        pytest.skip(
            "needs redis-server on PATH (Debian: apt-get install -y redis-server)"
        )
    return Stores(request.param, tmp_path, redis_server)


def batch(label: str, n: int = 2) -> list[Message]:
    return [
        Message("user" if i % 2 == 0 else "assistant", [f"{label}.{i}"])
        for i in range(n)
    ]


async def test_a_repeated_save_with_the_same_key_appends_nothing(
    stores: Stores,
) -> None:
    """SE-40, RD-9: a save repeated with the same key (as run_key= or as
    state["run_key"]) appends nothing; a different key appends; a save without a key
    appends every time; the key is per session and per source id."""
    try:
        provider = stores.new()
        await provider.save_messages("s", batch("a"), run_key="w1:0")
        await provider.save_messages("s", batch("a"), run_key="w1:0")
        await provider.save_messages("s", batch("a"), state={"run_key": "w1:0"})
        assert texts(await provider.get_messages("s")) == texts(batch("a"))
        await provider.save_messages("s", batch("b"), state={"run_key": "w1:1"})
        await provider.save_messages("s", batch("b"), run_key="w1:1")
        assert texts(await provider.get_messages("s")) == texts(batch("a") + batch("b"))
        await provider.save_messages("s", batch("c"))
        await provider.save_messages("s", batch("c"))
        assert texts(await provider.get_messages("s")) == texts(
            batch("a") + batch("b") + batch("c") + batch("c")
        )
        # another session: its own keys
        await provider.save_messages("other", batch("a"), run_key="w1:0")
        other_source = stores.new("h2")
        # another provider: its own keys
        await other_source.save_messages("s", batch("a"), run_key="w1:0")
        assert texts(await provider.get_messages("other")) == texts(batch("a"))
        assert texts(await other_source.get_messages("s")) == texts(batch("a"))
        assert texts(await stores.new().get_messages("s")) == texts(
            batch("a") + batch("b") + batch("c") + batch("c")
        )
    finally:
        await stores.close()


async def test_a_run_key_that_is_not_a_string_is_a_value_error(stores: Stores) -> None:
    """SE-40: a run key is a non-empty string; anything else is a ValueError and nothing
    is written."""
    try:
        provider = stores.new()
        for bad in ("", 7):
            with pytest.raises(ValueError, match="run_key must be a non-empty string"):
                await provider.save_messages("s", batch("a"), run_key=bad)
            with pytest.raises(ValueError, match="run_key must be a non-empty string"):
                await provider.save_messages("s", batch("a"), state={"run_key": bad})
        assert await provider.get_messages("s") == []
    finally:
        await stores.close()


async def test_discard_and_clear_forget_the_key(stores: Stores) -> None:
    """SE-40, SE-20, RD-9: discard_messages with the key takes the messages and the key
    back, so the run saved again is stored once; clear forgets the session's keys."""
    try:
        provider = stores.new()
        await provider.save_messages("s", batch("a"), run_key="w1:0")
        await provider.save_messages("s", batch("b"), run_key="w2:0")
        await provider.discard_messages("s", batch("b"), state={"run_key": "w2:0"})
        assert texts(await provider.get_messages("s")) == texts(batch("a"))
        await provider.save_messages("s", batch("b"), run_key="w2:0")
        await provider.save_messages("s", batch("b"), run_key="w2:0")
        assert texts(await provider.get_messages("s")) == texts(batch("a") + batch("b"))
        await provider.clear("s")  # type: ignore[attr-defined]
        await provider.save_messages("s", batch("a"), run_key="w1:0")
        assert texts(await provider.get_messages("s")) == texts(batch("a"))
    finally:
        await stores.close()


async def test_a_keyed_load_is_the_history_before_the_run(stores: Stores) -> None:
    """SE-40, RD-9: a load naming a run returns what was stored before that run's
    messages (not them, not what came after); a key the store does not hold, or no key,
    loads everything; the window (SQLite's last=, Redis' max_messages) and a take-back
    keep the places exact."""
    try:
        provider = stores.new()
        await provider.save_messages("s", batch("a"))
        await provider.save_messages("s", batch("b"), run_key="w:0")
        await provider.save_messages("s", batch("c"), state={"run_key": "w:1"})
        await provider.save_messages("s", batch("d"))
        every = batch("a") + batch("b") + batch("c") + batch("d")
        assert texts(await provider.get_messages("s", run_key="w:0")) == texts(
            batch("a")
        )
        assert texts(
            await provider.get_messages("s", state={"run_key": "w:1"})
        ) == texts(batch("a") + batch("b"))
        assert texts(await provider.get_messages("s", run_key="unknown")) == texts(
            every
        )
        assert texts(await provider.get_messages("s")) == texts(every)
        if stores.kind == "sqlite":
            assert texts(
                await provider.get_messages("s", run_key="w:1", last=3)
            ) == texts(batch("a")[1:] + batch("b"))
        await provider.save_messages("s", batch("e"), run_key="w:2")
        await provider.discard_messages("s", batch("e"), run_key="w:2")
        assert texts(await provider.get_messages("s", run_key="w:1")) == texts(
            batch("a") + batch("b")
        )
        await provider.save_messages("s", batch("e", 3), run_key="w:3")
        assert texts(await provider.get_messages("s", run_key="w:3")) == texts(every)
        if stores.kind == "redis":
            trimmed = stores.new("t", max_messages=4)
            for n in range(4):
                await trimmed.save_messages("s", batch(f"r{n}"), run_key=f"k{n}")
            assert [m.text for m in await trimmed.get_messages("s")] == [
                "r2.0",
                "r2.1",
                "r3.0",
                "r3.1",
            ]
            assert [m.text for m in await trimmed.get_messages("s", run_key="k3")] == [
                "r2.0",
                "r2.1",
            ]
            assert [m.text for m in await trimmed.get_messages("s", run_key="k1")] == []
    finally:
        await stores.close()


async def test_keys_with_ttl_and_max_messages(stores: Stores) -> None:
    """RD-9, RD-2, SE-23: a keyed save keeps the window's rules (Redis: max_messages
    trims, and the runs hash expires with the list under ttl); a repeated key still
    appends nothing."""
    try:
        if stores.kind.startswith("files"):
            pytest.skip("FileHistoryProvider has no window (SE-24)")
        window: dict[str, Any] = {
            "max_messages": 3,
            **({"ttl": 100} if stores.kind == "redis" else {}),
        }
        provider = stores.new(**window)
        for n in range(3):
            await provider.save_messages("s", batch(f"r{n}"), run_key=f"k{n}")
            await provider.save_messages("s", batch(f"r{n}"), run_key=f"k{n}")
        assert [m.text for m in await provider.get_messages("s")][-3:] == [
            "r1.1",
            "r2.0",
            "r2.1",
        ]
        if stores.kind == "redis":
            stored = [m.text for m in await provider.get_messages("s")]
            assert stored == ["r1.1", "r2.0", "r2.1"]
            redis: Any = provider
            assert 0 < await redis.redis.ttl(redis.runs_key("s")) <= 100
            assert await redis.redis.hgetall(redis.runs_key("s")) == {
                b"": b"6",
                b"k0": b"0",
                b"k1": b"2",
                b"k2": b"4",
            }
    finally:
        await stores.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    keys=st.lists(
        st.one_of(st.none(), st.sampled_from(["w:0", "w:1", "v:0"])),
        min_size=1,
        max_size=8,
    )
)
def test_what_is_stored_is_the_first_save_of_each_key(
    stores: Stores, keys: list[str | None]
) -> None:
    """SE-40, RD-9: for any sequence of saves, keyed or not, the store holds, in order,
    every save without a key and the first save of each key."""
    session = f"s{stores.count}"
    stores.count += 1
    expected: list[Message] = []
    seen: set[str] = set()

    async def saves() -> list[Message]:
        provider = stores.new()
        try:
            for i, key in enumerate(keys):
                messages = batch(f"{i}-{key}", 1 + i % 3)
                await provider.save_messages(session, messages, run_key=key)
                if key is None or key not in seen:
                    expected.extend(messages)
                if key is not None:
                    seen.add(key)
            return await provider.get_messages(session)
        finally:
            await stores.close()

    assert texts(asyncio.run(saves())) == texts(expected)


SAVER = """
import asyncio, sys, time
from minagent import FileHistoryProvider, Message, SQLiteHistoryProvider

async def main(kind, target, start):
    if kind == "sqlite":
        provider = SQLiteHistoryProvider("h", path=target)
    elif kind.startswith("files"):
        fmt = "msgpack" if kind == "files-msgpack" else "json"
        provider = FileHistoryProvider(target + "/h", serialization_format=fmt)
    else:
        from minagent_redis import RedisHistoryProvider
        url, prefix = target.split(" ")
        provider = RedisHistoryProvider("h", url=url, key_prefix=prefix)
    time.sleep(max(0.0, start - time.time()))
    await asyncio.gather(*(
        provider.save_messages("shared", [Message("user", [f"run {k}"]), Message("assistant", [f"answer {k}"])],
                               run_key=f"w{k}:0")
        for k in range(20) for _ in range(3)
    ))
    if hasattr(provider, "aclose"):
        await provider.aclose()

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
"""


def test_concurrent_saves_of_one_run_from_two_processes_append_once(
    stores: Stores,
) -> None:
    """SE-40, RD-9, SE-16: two processes that each save the same 20 runs three times,
    concurrently, at the same moment, leave each run's messages in the store once, whole
    and together."""
    import time

    start = str(time.time() + 2.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAVER, stores.kind, stores.target(), start],
            cwd=ROOT,
            env=dict(os.environ),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err

    async def read() -> list[str]:
        try:
            return [m.text for m in await stores.new().get_messages("shared")]
        finally:
            await stores.close()

    stored = asyncio.run(read())
    assert len(stored) == 40
    pairs = sorted(zip(stored[::2], stored[1::2], strict=True))
    assert pairs == sorted((f"run {k}", f"answer {k}") for k in range(20))


async def test_a_plain_run_names_no_run(stores: Stores, stream: bool) -> None:
    """SE-40: outside a durable run nothing names the run: the same turn run twice on
    one session is stored twice, as before."""
    try:
        provider = stores.new()
        agent = Agent(
            ScriptedChatClient(["same", "same"]), context_providers=[provider]
        )
        session = AgentSession(session_id="plain")
        await run(agent, "q", stream=stream, session=session)
        await run(agent, "q", stream=stream, session=session)
        assert (
            texts(await provider.get_messages("plain"))
            == [("user", "q"), ("assistant", "same")] * 2
        )
        assert session.state == {}
    finally:
        await stores.close()
