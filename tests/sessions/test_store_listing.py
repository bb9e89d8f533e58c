"""The stores list what they hold: ``list_ids(prefix, limit)`` on the in-memory, SQLite,
plain-file and Redis session stores (spec/sessions.md SE-69, spec/redis.md RD-11)."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import AgentSession, SessionStore
from minagent.stores.files import FileSessionStore
from minagent.stores.sqlite import SQLiteSessionStore
from tests._support.redis_server import SERVER, RedisServer


class _LazyRedis:
    """One redis-server for the module (RD-6), started when a Redis case first needs
    it; each store gets a key prefix of its own, so the cases never see each other."""

    def __init__(self) -> None:
        self.folder: tempfile.TemporaryDirectory[str] | None = None
        self.server: RedisServer | None = None

    def url(self) -> str:
        if self.server is None:
            self.folder = tempfile.TemporaryDirectory()
            self.server = RedisServer(Path(self.folder.name))
            self.server.start()
        return self.server.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.folder is not None:
            self.folder.cleanup()


@pytest.fixture(scope="module")
def redis() -> Iterator[_LazyRedis]:
    lazy = _LazyRedis()
    try:
        yield lazy
    finally:
        lazy.stop()


def _redis_store(url: str) -> Any:
    plugin = pytest.importorskip("minagent_redis")
    return plugin.RedisSessionStore(url=url, key_prefix=f"t-{uuid.uuid4().hex}:")


MAKERS: dict[str, Callable[[Path, Callable[[], str]], Any]] = {
    "memory": lambda folder, url: SessionStore(),
    "sqlite": lambda folder, url: SQLiteSessionStore(folder / "s.db"),
    "files": lambda folder, url: FileSessionStore(folder / "files"),
    "redis": lambda folder, url: _redis_store(url()),
}
KINDS = [
    pytest.param(
        kind,
        marks=pytest.mark.skipif(
            kind == "redis" and SERVER is None, reason="needs redis-server on PATH"
        ),
    )
    for kind in MAKERS
]


async def _close(store: Any) -> None:
    closing = getattr(store, "aclose", None)
    if closing is not None:
        await closing()


# ids the file store keeps under readable names and under encoded ones (SE-24)
IDS = st.sampled_from(
    ["a/1", "a/2", "a/3", "ab/1", "b/1", "a", "plain-id", "a/ü 2", "x;y%", "a/%_"]
)
OPS = st.lists(st.tuples(st.sampled_from(["set", "delete"]), IDS), max_size=12)


async def _apply(store: Any, ops: list[tuple[str, str]]) -> list[str]:
    """Run the operations; the ids in the order of their last set, oldest first."""
    order: list[str] = []
    for op, key in ops:
        if op == "set":
            # one after the other, as fast as they come: each set takes a stamp after
            # the one before (SE-69), whatever the clock's tick
            await store.set(key, AgentSession(session_id=key))
            if key in order:
                order.remove(key)
            order.append(key)
        else:
            await store.delete(key)
            if key in order:
                order.remove(key)
    return order


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None)
@given(
    ops=OPS,
    prefix=st.sampled_from(["", "a", "a/", "ab/", "x;y%", "a/%"]),
    limit=st.integers(1, 12),
)
def test_list_ids_is_the_last_set_first(
    redis: _LazyRedis,
    kind: str,
    ops: list[tuple[str, str]],
    prefix: str,
    limit: int,
) -> None:
    """SE-69, RD-11: for any sets and deletes, ``list_ids`` is the ids still stored that
    start with the prefix (matched as text: % and _ are not patterns), the last set
    first, at most ``limit``."""

    async def check() -> None:
        with tempfile.TemporaryDirectory() as folder:
            store = MAKERS[kind](Path(folder), redis.url)
            try:
                order = await _apply(store, ops)
                expected = [k for k in reversed(order) if k.startswith(prefix)][:limit]
                assert await store.list_ids(prefix=prefix, limit=limit) == expected
            finally:
                await _close(store)

    asyncio.run(check())


@pytest.mark.parametrize("kind", list(MAKERS))
async def test_list_ids_refuses_bad_arguments(kind: str, tmp_path: Path) -> None:
    """SE-69, RD-11: a limit below 1 (or not an integer) and a prefix that is not a
    string are ValueErrors, found before anything is sent (the Redis store here points
    at a port where nothing listens, and says ValueError, not unavailable)."""
    store = MAKERS[kind](tmp_path, lambda: "redis://127.0.0.1:1/0")
    try:
        for limit in (0, -1, True, 1.5):
            with pytest.raises(ValueError, match="limit"):
                await store.list_ids(limit=limit)
        with pytest.raises(ValueError, match="prefix"):
            await store.list_ids(prefix=None)
    finally:
        await _close(store)


async def test_the_file_store_skips_what_it_cannot_name(tmp_path: Path) -> None:
    """SE-69: the file store lists only ids it can read back from a file name: a hashed
    name (an id too long to encode), a temporary file, another format's file and a
    folder are skipped."""
    store = FileSessionStore(tmp_path)
    long_id = "ü" * 120  # its base64 is over 180 characters: stored under a hash
    await store.set(long_id, AgentSession(session_id="x"))
    await store.set("kept", AgentSession(session_id="kept"))
    (tmp_path / ".kept.json.123.tmp").write_text("{}")
    (tmp_path / "other.msgpack").write_bytes(b"")
    (tmp_path / "folder.json").mkdir()
    assert await store.get(long_id) is not None
    assert await store.list_ids() == ["kept"]


@pytest.mark.parametrize("kind", ["sqlite", "files"])
async def test_sets_within_one_tick_of_the_clock_list_in_their_order(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-69: sets made one after the other while the clock does not move (a tick of
    the clock or of the file system) still list the last set first: each takes a stamp
    after the one before."""
    from minagent.stores import memory

    monkeypatch.setattr(memory.time, "time_ns", lambda: 1_800_000_000 * 10**9)
    store = MAKERS[kind](tmp_path, lambda: "unused")
    try:
        for session_id in ("a/1", "a/2", "a/1", "a/3", "a/2"):
            await store.set(session_id, AgentSession(session_id=session_id))
        assert await store.list_ids() == ["a/2", "a/3", "a/1"]
    finally:
        await _close(store)
