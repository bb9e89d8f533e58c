"""Refusals that are not about the stored data (spec/redis.md RD-10, RD-7), produced by
a real redis-server (RD-6): a read-only replica (REPLICAOF), `maxmemory` reached (CONFIG
SET), an ACL that denies the keys (ACL SETUSER), a wrong password. Each is a
`RedisCommandError` with Redis' code and words naming the server and the key, never a
`SerializationError` or a `ConnectionError`, and writes nothing; the data errors stay
`SerializationError`s."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from minagent import Agent, AgentSession, Message, SerializationError
from minagent.testing import ScriptedChatClient
from tests._support.modes import run
from tests._support.redis_server import RedisServer

from .test_redis import (
    RedisHistoryProvider,
    RedisSessionStore,
    minagent_redis,
)

RedisCommandError = minagent_redis.RedisCommandError
Call = Callable[[], Awaitable[Any]]
STORED = [Message("user", ["q"]), Message("assistant", ["a"])]


def calls(provider: Any, store: Any, *, writes_only: bool = False) -> dict[str, Call]:
    """Every call of the provider and the store, by name (the writes only, when
    asked)."""
    message = [Message("user", ["new"])]
    every: dict[str, tuple[bool, Call]] = {
        "save": (True, lambda: provider.save_messages("s", message)),
        "keyed save": (
            True,
            lambda: provider.save_messages("s", message, run_key="w:0"),
        ),
        "take back": (
            True,
            lambda: provider.discard_messages("s", STORED, run_key="w:1"),
        ),
        "clear": (True, lambda: provider.clear("s")),
        "session set": (True, lambda: store.set("s", AgentSession(session_id="s"))),
        "session delete": (True, lambda: store.delete("s")),
        "load": (False, lambda: provider.get_messages("s")),
        "keyed load": (False, lambda: provider.get_messages("s", run_key="w:0")),
        "session get": (False, lambda: store.get("s")),
    }
    return {
        name: call for name, (write, call) in every.items() if write or not writes_only
    }


async def refused(call: Call, code: str, key: str, port: int) -> Any:
    """The RedisCommandError ``call`` raises, checked against what RD-10 says it
    carries."""
    with pytest.raises(RedisCommandError) as caught:
        await call()
    error = caught.value
    assert not isinstance(error, SerializationError | ConnectionError)
    assert (error.code, error.key, error.server) == (
        code,
        key,
        f"redis at 127.0.0.1:{port}",
    )
    assert str(error).startswith(f"redis at 127.0.0.1:{port} refused ")
    assert f" on {key!r}: {code} {error.reply}" in str(error)
    assert error.reply
    assert '"contents"' not in str(error)  # the command's data is not in the message
    assert error.__cause__ is not None
    return error


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own (RD-6): the tests change its configuration."""
    instance = RedisServer(tmp_path)
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()


@asynccontextmanager
async def stores(server: RedisServer) -> AsyncIterator[tuple[Any, Any, Any]]:
    """A provider, a store and an admin client on the server, a run of two messages
    stored."""
    provider = RedisHistoryProvider("h", url=server.url)
    store = RedisSessionStore(url=server.url)
    admin = provider.redis
    try:
        await provider.save_messages("s", STORED, run_key="w:1")
        await store.set("s", AgentSession(session_id="s", state={"kept": 1}))
        yield provider, store, admin
    finally:
        await provider.aclose()
        await store.aclose()


async def snapshot(admin: Any) -> dict[bytes, Any]:
    return {key: await admin.dump(key) for key in sorted(await admin.keys("*"))}


async def test_a_read_only_replica_is_a_command_error(server: RedisServer) -> None:
    """RD-10, RD-3: on a read-only replica every write of the provider (plain, keyed,
    with max_messages; the take-back; clear) and of the store is a RedisCommandError
    "READONLY" naming the key, the transaction's refused command named; reads still
    work; nothing changes (RD-11: the store's index and stamp counter neither)."""
    async with stores(server) as (provider, store, admin):
        trimmed = RedisHistoryProvider("h", url=server.url, max_messages=1)
        before = await snapshot(admin)
        # a master nobody runs: stays read-only
        await admin.execute_command("REPLICAOF", "127.0.0.1", "1")
        try:
            for name, call in calls(provider, store).items():
                if name in ("load", "keyed load", "session get"):
                    await call()
                    continue
                key = (
                    "minagent:session:s"
                    if name.startswith("session")
                    else "minagent:h:s"
                )
                error = await refused(call, "READONLY", key, server.port)
                assert "read only replica" in error.reply
                if name == "save":
                    assert error.command == "RPUSH"
            await refused(
                lambda: trimmed.save_messages("s", [Message("user", ["x"])]),
                "READONLY",
                "minagent:h:s",
                server.port,
            )
        finally:
            await admin.execute_command("REPLICAOF", "NO", "ONE")
            await trimmed.aclose()
        assert await snapshot(admin) == before


async def test_maxmemory_reached_is_a_command_error(server: RedisServer) -> None:
    """RD-10: past `maxmemory` (policy noeviction) every write Redis refuses there
    (appends, the take-back's LSET, SET) is a RedisCommandError "OOM" naming the key;
    nothing changes (RD-11: the store's set script writes its session first, so its
    index and stamp counter neither)."""
    async with stores(server) as (provider, store, admin):
        before = await snapshot(admin)
        await admin.config_set("maxmemory-policy", "noeviction")
        await admin.config_set("maxmemory", 1)
        try:
            for name in ("save", "keyed save", "take back", "session set"):
                key = (
                    "minagent:session:s"
                    if name.startswith("session")
                    else "minagent:h:s"
                )
                error = await refused(
                    calls(provider, store)[name], "OOM", key, server.port
                )
                assert "maxmemory" in error.reply
            assert [m.text for m in await provider.get_messages("s")] == ["q", "a"]
        finally:
            await admin.config_set("maxmemory", 0)
        assert await snapshot(admin) == before


async def test_an_acl_that_denies_the_keys_is_a_command_error(
    server: RedisServer,
) -> None:
    """RD-10: a user whose ACL does not cover the keys gets a RedisCommandError "NOPERM"
    naming the key from every call, reads included; nothing changes."""
    async with stores(server) as (_provider, _store, admin):
        await admin.execute_command(
            "ACL", "SETUSER", "limited", "on", ">secret", "~other:*", "+@all"
        )
        url = f"redis://limited:secret@127.0.0.1:{server.port}/0"
        provider, store = RedisHistoryProvider("h", url=url), RedisSessionStore(url=url)
        before = await snapshot(admin)
        try:
            for name, call in calls(provider, store).items():
                key = (
                    "minagent:session:s"
                    if name.startswith("session")
                    else "minagent:h:s"
                )
                error = await refused(call, "NOPERM", key, server.port)
                assert "no permissions" in error.reply
        finally:
            await provider.aclose()
            await store.aclose()
        assert await snapshot(admin) == before


async def test_a_wrong_password_is_a_command_error_not_unavailable(
    server: RedisServer,
) -> None:
    """RD-10, RD-4: a refused login (redis-py: a connection error) is a
    RedisCommandError "WRONGPASS", not RedisUnavailableError: the server is there, the
    credentials are wrong."""
    async with stores(server) as (_provider, _store, admin):
        await admin.execute_command(
            "ACL", "SETUSER", "limited", "on", ">secret", "~*", "+@all"
        )
        url = f"redis://limited:wrong@127.0.0.1:{server.port}/0"
        provider, store = RedisHistoryProvider("h", url=url), RedisSessionStore(url=url)
        try:
            for name, call in calls(provider, store).items():
                key = (
                    "minagent:session:s"
                    if name.startswith("session")
                    else "minagent:h:s"
                )
                error = await refused(call, "WRONGPASS", key, server.port)
                assert not isinstance(error, minagent_redis.RedisUnavailableError)
        finally:
            await provider.aclose()
            await store.aclose()


async def test_data_errors_stay_serialization_errors(server: RedisServer) -> None:
    """RD-7: a key of another type (WRONGTYPE) and a run count that is not an integer
    are about the stored data: SerializationErrors naming the key, never
    RedisCommandErrors."""
    async with stores(server) as (provider, _store, admin):
        await admin.hset("minagent:runs:h:s", "", "many")
        for call in (
            lambda: provider.get_messages("s", run_key="w:1"),
            lambda: provider.save_messages(
                "s", [Message("user", ["x"])], run_key="w:2"
            ),
            # HINCRBY on it
            lambda: provider.save_messages("s", [Message("user", ["x"])]),
        ):
            with pytest.raises(
                SerializationError, match=r"^minagent:(runs:)?h:s"
            ) as caught:
                await call()
            assert not isinstance(caught.value, RedisCommandError)
        await admin.delete("minagent:h:s", "minagent:runs:h:s")
        await admin.set("minagent:h:s", json.dumps("a string"))
        with pytest.raises(SerializationError, match="WRONGTYPE"):
            await provider.save_messages("s", [Message("user", ["x"])])


async def test_a_run_on_a_replica_fails_with_the_command_error(
    server: RedisServer,
    stream: bool,
) -> None:
    """RD-10, SE-20: a run whose history save Redis refuses fails with that
    RedisCommandError, in either mode, and the history is as before it."""
    async with stores(server) as (provider, _store, admin):
        agent = Agent(ScriptedChatClient(["answer"]), context_providers=[provider])
        await admin.execute_command("REPLICAOF", "127.0.0.1", "1")
        try:
            with pytest.raises(RedisCommandError, match="READONLY"):
                await run(
                    agent,
                    "question",
                    stream=stream,
                    session=AgentSession(session_id="s"),
                )
        finally:
            await admin.execute_command("REPLICAOF", "NO", "ONE")
        assert [m.text for m in await provider.get_messages("s")] == ["q", "a"]
