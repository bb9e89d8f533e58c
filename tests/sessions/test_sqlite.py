"""SQLite history and sessions (spec/sessions.md SE-12 to SE-17)."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentSession,
    Message,
    SerializationError,
    SessionBusyError,
    SQLiteHistoryProvider,
    SQLiteSessionStore,
    chat_middleware,
    tool,
)
from minagent.stores import sqlite as _sqlite
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run
from tests._support.strategies import messages as message_strategy

from ._util import texts

ROOT = Path(__file__).resolve().parents[2]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_history_in_a_file_survives_the_agent(
    tmp_path: Path, stream: bool
) -> None:
    """SE-13: Agent(client, context_providers=[SQLiteHistoryProvider("history",
    path=...)]) keeps the conversation in the file: a new agent and provider on the same
    file continue it; the file holds several sessions; it is in WAL mode."""
    path = tmp_path / "chat.db"
    client = ScriptedChatClient(
        [reply(call("add", {"a": 1, "b": 2})), "3", "other", "still 3"]
    )
    agent = Agent(
        client,
        tools=[add],
        context_providers=[SQLiteHistoryProvider("history", path=str(path))],
    )
    session = agent.create_session(session_id="alice")
    await run(agent, "add 1 and 2", stream=stream, session=session)
    await run(
        agent, "hello", stream=stream, session=agent.create_session(session_id="bob")
    )
    later = Agent(
        client,
        tools=[add],
        context_providers=[SQLiteHistoryProvider("history", path=path)],
    )
    await run(
        later, "what was it?", stream=stream, session=AgentSession(session_id="alice")
    )
    kinds = [c.type for m in client.requests[3].messages for c in m.contents]
    assert kinds == ["text", "function_call", "function_result", "text", "text"]
    assert session.state == {}  # the history is in the file, not in the session
    stored = await SQLiteHistoryProvider("history", path=path).get_messages("alice")
    assert texts(stored)[-2:] == [("user", "what was it?"), ("assistant", "still 3")]
    assert texts(
        await SQLiteHistoryProvider("history", path=path).get_messages("bob")
    ) == [
        ("user", "hello"),
        ("assistant", "other"),
    ]
    assert (
        await SQLiteHistoryProvider("other_source", path=path).get_messages("alice")
        == []
    )
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_database_calls_run_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-13: every connection is opened (and used) in a worker thread, never on the
    loop's thread."""
    threads: list[threading.Thread] = []
    real_connect = sqlite3.connect

    def spy(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        threads.append(threading.current_thread())
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", spy)
    provider = SQLiteHistoryProvider("h", path=tmp_path / "x.db")
    await provider.save_messages("s", [Message("user", ["hi"])])
    await provider.get_messages("s")
    store = SQLiteSessionStore(tmp_path / "x.db")
    await store.set("s", AgentSession(session_id="s"))
    await store.get("s")
    assert len(threads) == 4
    assert all(t is not threading.main_thread() for t in threads)


async def test_schema_version_and_migrations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-14: a new file gets the current schema version (user_version, 2: SE-40's run
    keys); a later schema's migration step runs once when an older file is opened; a
    file newer than the code is a SQLiteSchemaError."""
    path = tmp_path / "v.db"
    await SQLiteHistoryProvider("h", path=path).save_messages(
        "s", [Message("user", ["kept"])]
    )
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    ran: list[int] = []

    def to_v3(conn: sqlite3.Connection) -> None:
        ran.append(3)
        conn.execute("ALTER TABLE messages ADD COLUMN note TEXT")

    monkeypatch.setattr(_sqlite, "SCHEMA_VERSION", 3)
    monkeypatch.setitem(_sqlite.MIGRATIONS, 2, to_v3)
    assert texts(await SQLiteHistoryProvider("h", path=path).get_messages("s")) == [
        ("user", "kept")
    ]
    await SQLiteHistoryProvider("h", path=path).get_messages("s")
    assert ran == [3]
    monkeypatch.setattr(_sqlite, "SCHEMA_VERSION", 2)
    with pytest.raises(
        _sqlite.SQLiteSchemaError, match="newer than this minagent knows"
    ):
        await SQLiteHistoryProvider("h", path=path).get_messages("s")


@settings(max_examples=30)
@given(batch=st.lists(message_strategy(), min_size=1, max_size=6))
def test_every_content_type_round_trips(
    tmp_path_factory: pytest.TempPathFactory, batch: list[Message]
) -> None:
    """SE-15: messages (text, calls, results, approval requests and responses, errors,
    unknown kinds, unknown fields) come back from the file equal to what was saved."""
    path = tmp_path_factory.mktemp("rt") / "rt.db"

    async def trip() -> list[Message]:
        provider = SQLiteHistoryProvider("h", path=path)
        await provider.save_messages("s", batch)
        return await provider.get_messages("s")

    assert [m.to_dict() for m in asyncio.run(trip())] == [m.to_dict() for m in batch]


class Boom(Exception):
    pass


async def test_a_failed_or_cancelled_run_writes_nothing(
    tmp_path: Path, stream: bool
) -> None:
    """SE-5, SE-15: nothing of a run that fails or is cancelled midway reaches the
    file."""
    provider = SQLiteHistoryProvider("h", path=tmp_path / "f.db")

    def fail(messages: Any, options: Any) -> Any:
        raise Boom("down")

    started, gate = asyncio.Event(), asyncio.Event()

    @chat_middleware
    async def hold(context: Any, call_next: Any) -> None:
        started.set()
        await gate.wait()
        await call_next()

    client = ScriptedChatClient(["first", fail, "never"])
    agent = Agent(client, context_providers=[provider])
    session = agent.create_session()
    await run(agent, "one", stream=stream, session=session)
    with pytest.raises(Boom):
        await run(agent, "two", stream=stream, session=session)
    task = asyncio.create_task(
        run(agent, "three", stream=stream, session=session, middleware=[hold])
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert texts(await provider.get_messages(session.session_id)) == [
        ("user", "one"),
        ("assistant", "first"),
    ]


async def test_a_write_that_fails_midway_writes_nothing(tmp_path: Path) -> None:
    """SE-15: a run's messages are one transaction: when the third insert fails, none is
    stored; a message that cannot be written as JSON fails before anything is
    written."""
    path = tmp_path / "t.db"
    provider = SQLiteHistoryProvider("h", path=path)
    await provider.save_messages("s", [Message("user", ["before"])])
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TRIGGER third BEFORE INSERT ON messages WHEN NEW.seq = 3 "
            "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
    with pytest.raises(sqlite3.IntegrityError, match="disk says no"):
        await provider.save_messages("s", [Message("user", [str(i)]) for i in range(3)])
    bad = Message("user", ["x"], additional_properties={"handle": object()})
    with pytest.raises(TypeError):
        await provider.save_messages("s", [Message("user", ["ok"]), bad])
    assert texts(await provider.get_messages("s")) == [("user", "before")]


async def test_fifty_concurrent_runs_on_one_store(tmp_path: Path) -> None:
    """SE-13, SE-12: 50 runs on 50 sessions at once, one file: each session holds its
    own turn."""

    def echo(messages: Any, options: Any) -> str:
        return f"echo {messages[-1].text}"

    client = ScriptedChatClient([echo] * 100)
    agent = Agent(
        client,
        context_providers=[SQLiteHistoryProvider("h", path=tmp_path / "many.db")],
    )
    sessions = [agent.create_session(session_id=f"s{i}") for i in range(50)]
    await asyncio.gather(
        *(agent.run(f"q{i}", session=s) for i, s in enumerate(sessions))
    )
    await asyncio.gather(
        *(agent.run(f"r{i}", session=s) for i, s in enumerate(sessions))
    )
    provider = SQLiteHistoryProvider("h", path=tmp_path / "many.db")
    for i in range(50):
        assert texts(await provider.get_messages(f"s{i}")) == [
            ("user", f"q{i}"),
            ("assistant", f"echo q{i}"),
            ("user", f"r{i}"),
            ("assistant", f"echo r{i}"),
        ]


async def test_a_second_run_on_a_running_sqlite_session_is_rejected(
    tmp_path: Path,
) -> None:
    """SE-12: the concurrency rule holds with the SQLite history: the second run is a
    SessionBusyError and writes nothing; the first run's messages are stored."""
    started, gate = asyncio.Event(), asyncio.Event()

    @chat_middleware
    async def hold(context: Any, call_next: Any) -> None:
        started.set()
        await gate.wait()
        await call_next()

    provider = SQLiteHistoryProvider("h", path=tmp_path / "busy.db")
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


WRITER = """
import asyncio, sys
from minagent import Message, SQLiteHistoryProvider

async def main(path, name, runs):
    provider = SQLiteHistoryProvider("h", path=path)
    for i in range(runs):
        await provider.save_messages("shared", [Message("user", [f"{name}{i}:{k}"]) for k in range(3)])

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def test_two_processes_append_to_one_file(tmp_path: Path) -> None:
    """SE-16: two processes appending to one session in one file at once lose nothing,
    and each run's messages stay together."""
    path = tmp_path / "shared.db"
    # the schema, before both start
    asyncio.run(SQLiteHistoryProvider("h", path=path).get_messages("shared"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, "40"], cwd=ROOT
        )
        for name in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    stored = [
        m.text
        for m in asyncio.run(
            SQLiteHistoryProvider("h", path=path).get_messages("shared")
        )
    ]
    assert len(stored) == 240
    runs = [stored[i : i + 3] for i in range(0, 240, 3)]
    for batch in runs:
        prefix = batch[0].split(":")[0]
        assert batch == [f"{prefix}:{k}" for k in range(3)]
    assert sorted(b[0].split(":")[0] for b in runs) == sorted(
        [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(40)]
    )


async def test_sqlite_session_store(tmp_path: Path) -> None:
    """SE-17, SE-11: get/set/delete of to_dict() data by id, sharing a file with the
    history; bad ids are ValueErrors; a state that is not JSON is a SerializationError
    and writes nothing."""
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    history = SQLiteHistoryProvider("h", path=path)
    agent = Agent(ScriptedChatClient(["a"]), context_providers=[history])
    session = agent.create_session(session_id="s1")
    session.state["prefs"] = {"lang": "fr"}
    await agent.run("q", session=session)
    await store.set("s1", session)
    assert await store.get("missing") is None
    again = await SQLiteSessionStore(path).get("s1")
    assert again == session
    assert again is not session
    session.state["bad"] = object()
    with pytest.raises(SerializationError):
        await store.set("s1", session)
    assert (await store.get("s1")) == again
    await store.delete("s1")
    assert await store.get("s1") is None
    assert len(await history.get_messages("s1")) == 2
    with pytest.raises(ValueError, match="session_id"):
        await store.set("", session)
