"""The Redis plugin against a real redis-server started and stopped by the tests
(spec/redis.md)."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentSession,
    Message,
    SessionBusyError,
    chat_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run
from tests._support.redis_server import SERVER, RedisServer
from tests._support.strategies import messages as message_strategy
from tests.sessions._util import texts

redis_asyncio = pytest.importorskip("redis.asyncio")
minagent_redis = pytest.importorskip("minagent_redis")
RedisHistoryProvider = minagent_redis.RedisHistoryProvider
RedisSessionStore = minagent_redis.RedisSessionStore
RedisUnavailableError = minagent_redis.RedisUnavailableError

pytestmark = pytest.mark.skipif(
    SERVER is None,
    reason="needs redis-server on PATH (Debian: apt-get install -y redis-server)",
)


def test_the_server_is_real_and_stopped(tmp_path: Path) -> None:
    """RD-6: the tests talk to a real redis-server process, which they stop: afterwards
    the port is closed."""
    instance = RedisServer(tmp_path)
    instance.start()
    assert instance.proc is not None
    with socket.create_connection(("127.0.0.1", instance.port), timeout=2) as conn:
        conn.sendall(b"INFO server\r\n")
        assert b"redis_version" in conn.recv(4096)
    instance.stop()
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection(("127.0.0.1", instance.port), timeout=2),
    ):
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    instance = RedisServer(tmp_path)
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_history_in_redis(server: RedisServer, stream: bool) -> None:
    """RD-1, SE-13-like use: an agent with a RedisHistoryProvider keeps the conversation
    in Redis; a new provider continues it; the list key is prefix + source id + session
    id."""
    provider = RedisHistoryProvider("history", url=server.url, key_prefix="t:")
    client = ScriptedChatClient([reply(call("add", {"a": 1, "b": 2})), "3", "still 3"])
    agent = Agent(client, tools=[add], context_providers=[provider])
    await run(
        agent, "add", stream=stream, session=agent.create_session(session_id="alice")
    )
    later = RedisHistoryProvider("history", url=server.url, key_prefix="t:")
    await run(
        Agent(client, tools=[add], context_providers=[later]),
        "again",
        stream=stream,
        session=AgentSession(session_id="alice"),
    )
    kinds = [c.type for m in client.requests[2].messages for c in m.contents]
    assert kinds == ["text", "function_call", "function_result", "text", "text"]
    assert await provider.redis.llen("t:history:alice") == 6
    await provider.aclose()
    await later.aclose()


def test_every_content_type_round_trips(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """RD-1: messages of every content type come back from Redis equal to what was
    saved."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:

        @settings(max_examples=25)
        @given(batch=st.lists(message_strategy(), min_size=1, max_size=5))
        def trip(batch: list[Message]) -> None:
            sid = uuid.uuid4()  # a new list per example

            async def go() -> list[Message]:
                provider = RedisHistoryProvider("h", url=server.url)
                try:
                    await provider.save_messages(str(sid), batch)
                    return await provider.get_messages(str(sid))
                finally:
                    await provider.aclose()

            assert [m.to_dict() for m in asyncio.run(go())] == [
                m.to_dict() for m in batch
            ]

        trip()
    finally:
        server.stop()


async def test_ttl_expires_an_idle_conversation(server: RedisServer) -> None:
    """RD-2, RD-5: with ttl every append renews the expiry; an idle conversation and
    session expire."""
    provider = RedisHistoryProvider("h", url=server.url, ttl=1)
    store = RedisSessionStore(url=server.url, ttl=1)
    await provider.save_messages("s", [Message("user", ["hi"])])
    await store.set("s", AgentSession(session_id="s"))
    assert 0 < await provider.redis.ttl(provider.key("s")) <= 1
    await asyncio.sleep(2.2)
    assert await provider.get_messages("s") == []
    assert await store.get("s") is None
    with pytest.raises(ValueError, match="ttl"):
        RedisHistoryProvider("h", url=server.url, ttl=0)
    await provider.aclose()
    await store.aclose()


async def test_max_messages_never_splits_a_call_from_its_result(
    server: RedisServer,
) -> None:
    """RD-2: max_messages keeps the newest messages, and the kept part never starts with
    a result:
    of [user, call, result, answer], 3 keep [call, result, answer] and 2 keep only
    [answer]."""
    three = RedisHistoryProvider(
        "three", url=server.url, max_messages=3, load_messages=False
    )
    two = RedisHistoryProvider("two", url=server.url, max_messages=2)
    client = ScriptedChatClient([reply(call("add", {"a": 1, "b": 1})), "2", "plain"])
    agent = Agent(client, tools=[add], context_providers=[two, three])
    session = agent.create_session()
    await agent.run("add", session=session)
    kept = await three.get_messages(session.session_id)
    assert [[c.type for c in m.contents] for m in kept] == [
        ["function_call"],
        ["function_result"],
        ["text"],
    ]
    assert texts(await two.get_messages(session.session_id)) == [("assistant", "2")]
    await agent.run("more", session=session)
    assert texts(client.requests[-1].messages) == [("assistant", "2"), ("user", "more")]
    assert texts(await two.get_messages(session.session_id)) == [
        ("user", "more"),
        ("assistant", "plain"),
    ]
    await two.aclose()
    await three.aclose()


async def test_concurrent_appends_are_atomic(server: RedisServer) -> None:
    """RD-3: 50 concurrent appends of 3 messages to one session (with and without
    max_messages) lose nothing and keep each batch together; 50 runs on 50 sessions
    share one provider."""
    for limit in (None, 1000):
        provider = RedisHistoryProvider("h", url=server.url, max_messages=limit)
        sid = f"shared-{limit}"
        await asyncio.gather(
            *(
                provider.save_messages(
                    sid, [Message("user", [f"{i}:{k}"]) for k in range(3)]
                )
                for i in range(50)
            )
        )
        stored = [m.text for m in await provider.get_messages(sid)]
        assert len(stored) == 150
        for start in range(0, 150, 3):
            prefix = stored[start].split(":")[0]
            assert stored[start : start + 3] == [f"{prefix}:{k}" for k in range(3)]
        await provider.aclose()

    def echo(messages: Any, options: Any) -> str:
        return f"echo {messages[-1].text}"

    provider = RedisHistoryProvider("h", url=server.url)
    agent = Agent(ScriptedChatClient([echo] * 50), context_providers=[provider])
    await asyncio.gather(
        *(
            agent.run(f"q{i}", session=AgentSession(session_id=f"s{i}"))
            for i in range(50)
        )
    )
    for i in range(50):
        assert texts(await provider.get_messages(f"s{i}")) == [
            ("user", f"q{i}"),
            ("assistant", f"echo q{i}"),
        ]
    await provider.aclose()


async def test_a_second_run_on_a_running_redis_session_is_rejected(
    server: RedisServer,
) -> None:
    """SE-12: the concurrency rule holds with the Redis history."""
    started, gate = asyncio.Event(), asyncio.Event()

    @chat_middleware
    async def hold(context: Any, call_next: Any) -> None:
        started.set()
        await gate.wait()
        await call_next()

    provider = RedisHistoryProvider("h", url=server.url)
    agent = Agent(ScriptedChatClient(["done"]), context_providers=[provider])
    first = asyncio.create_task(
        agent.run("one", session=AgentSession(session_id="x"), middleware=[hold])
    )
    await started.wait()
    with pytest.raises(SessionBusyError):
        await agent.run("two", session=AgentSession(session_id="x"))
    gate.set()
    await first
    assert texts(await provider.get_messages("x")) == [
        ("user", "one"),
        ("assistant", "done"),
    ]
    await provider.aclose()


async def test_redis_restart_between_runs(server: RedisServer) -> None:
    """RD-4: history survives a restart of a persisting Redis; while it is down a run
    fails with a RedisUnavailableError and stores nothing; after it is back the history
    is exactly the runs that succeeded and the conversation continues."""
    client = ScriptedChatClient(["first", "second"])
    provider = RedisHistoryProvider("h", url=server.url)
    store = RedisSessionStore(url=server.url)
    agent = Agent(client, context_providers=[provider])
    session = agent.create_session(session_id="r")
    await agent.run("one", session=session)
    await store.set("r", session)
    server.stop()
    with pytest.raises(RedisUnavailableError, match=f"127.0.0.1:{server.port}"):
        await agent.run("two", session=session)
    with pytest.raises(RedisUnavailableError):
        await store.get("r")
    server.start()
    assert await store.get("r") == session
    await agent.run("three", session=session)
    assert texts(client.requests[-1].messages) == [
        ("user", "one"),
        ("assistant", "first"),
        ("user", "three"),
    ]
    assert texts(await provider.get_messages("r")) == [
        ("user", "one"),
        ("assistant", "first"),
        ("user", "three"),
        ("assistant", "second"),
    ]
    await provider.aclose()
    await store.aclose()


async def test_a_failed_run_stores_nothing_in_redis(
    server: RedisServer, stream: bool
) -> None:
    """SE-5, RD-3: a run whose client fails leaves the Redis history as it was."""

    def fail(messages: Any, options: Any) -> Any:
        raise RuntimeError("model down")

    provider = RedisHistoryProvider("h", url=server.url)
    agent = Agent(ScriptedChatClient(["first", fail]), context_providers=[provider])
    session = agent.create_session()
    await run(agent, "one", stream=stream, session=session)
    with pytest.raises(RuntimeError, match="model down"):
        await run(agent, "two", stream=stream, session=session)
    assert texts(await provider.get_messages(session.session_id)) == [
        ("user", "one"),
        ("assistant", "first"),
    ]
    await provider.aclose()


async def test_clear_and_delete_with_redis_down_are_typed(server: RedisServer) -> None:
    """RD-7, RD-4: with Redis gone, clear() and delete() raise RedisUnavailableError
    naming the server."""
    provider = RedisHistoryProvider("h", url=server.url)
    store = RedisSessionStore(url=server.url)
    server.stop()
    try:
        with pytest.raises(
            RedisUnavailableError,
            match=f"redis at 127.0.0.1:{server.port} is unavailable",
        ):
            await provider.clear("s")
        with pytest.raises(
            RedisUnavailableError,
            match=f"redis at 127.0.0.1:{server.port} is unavailable",
        ):
            await store.delete("s")
    finally:
        await provider.aclose()
        await store.aclose()


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 100_000, "nested too deeply"),
        (None, "WRONGTYPE"),
    ],
    ids=["not-json", "deep", "wrong-type"],
)
async def test_corrupt_stored_data_is_a_serialization_error_naming_it(
    server: RedisServer, stored: str | None, problem: str
) -> None:
    """RD-7, SE-22: an element that is not JSON or nested too deeply, or a key of
    another type, is a SerializationError naming the key (and element), for the provider
    and the session store."""
    from minagent import SerializationError

    provider = RedisHistoryProvider("h", url=server.url)
    store = RedisSessionStore(url=server.url)
    try:
        if stored is None:
            await provider.redis.set("minagent:h:s", "a string, not a list")
            await provider.redis.rpush("minagent:session:s", "a list, not a string")
            element, session_key = "minagent:h:s", "minagent:session:s"
        else:
            fine = json.dumps(Message("user", ["fine"]).to_dict())
            await provider.redis.rpush("minagent:h:s", fine, stored)
            await provider.redis.set("minagent:session:s", stored)
            element, session_key = r"minagent:h:s\[1\]", "minagent:session:s"
        with pytest.raises(SerializationError, match=rf"^{element}: .*{problem}"):
            await provider.get_messages("s")
        with pytest.raises(SerializationError, match=rf"^{session_key}: .*{problem}"):
            await store.get("s")
    finally:
        await provider.aclose()
        await store.aclose()


async def test_data_from_dict_refuses_is_a_serialization_error_naming_it(
    server: RedisServer,
) -> None:
    """RD-7, SE-22: valid JSON that is not a message or a session (what `from_dict`
    refuses) is a SerializationError naming the key (and element), then what was
    wrong."""
    from minagent import SerializationError

    provider = RedisHistoryProvider("h", url=server.url)
    store = RedisSessionStore(url=server.url)
    try:
        await provider.redis.rpush(
            "minagent:h:s",
            json.dumps(Message("user", ["fine"]).to_dict()),
            '{"type": "other"}',
        )
        await provider.redis.set("minagent:session:s", '{"type": "other"}')
        with pytest.raises(
            SerializationError,
            match=r"^minagent:h:s\[1\]\.type: expected 'message', got 'other'$",
        ):
            await provider.get_messages("s")
        with pytest.raises(
            SerializationError,
            match=r"^minagent:session:s: session\.type: expected 'session', got 'other'$",
        ):
            await store.get("s")
    finally:
        await provider.aclose()
        await store.aclose()


async def test_a_failed_later_save_takes_the_redis_append_back(
    server: RedisServer, stream: bool
) -> None:
    """SE-20, RD-8: when a save after the Redis provider's fails, the run's elements are
    removed from the list (also when another writer appended meanwhile); a failed
    after_run stores nothing."""
    from minagent import InMemoryHistoryProvider

    class Broken(InMemoryHistoryProvider):
        async def save_messages(
            self, session_id: Any, messages: Any, *, state: Any = None, **kw: Any
        ) -> None:
            await other.save_messages("s", [Message("user", ["another writer"])])
            raise ConnectionError("store down")

    provider = RedisHistoryProvider("h", url=server.url)
    other = RedisHistoryProvider("h", url=server.url)
    try:
        await other.save_messages("s", [Message("user", ["before"])])
        agent = Agent(
            ScriptedChatClient(["answer"]),
            context_providers=[Broken("broken", load_messages=False), provider],
        )
        with pytest.raises(ConnectionError, match="store down"):
            await run(
                agent, "hello", stream=stream, session=AgentSession(session_id="s")
            )
        assert texts(await provider.get_messages("s")) == [
            ("user", "before"),
            ("user", "another writer"),
        ]
    finally:
        await provider.aclose()
        await other.aclose()
