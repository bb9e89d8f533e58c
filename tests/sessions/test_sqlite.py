"""SQLite history and sessions (spec/sessions.md SE-12 to SE-17, SE-21 to SE-23)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import threading
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
    SerializationError,
    SessionBusyError,
    SQLiteHistoryProvider,
    SQLiteSessionStore,
    chat_middleware,
    tool,
)
from minagent.middleware import HistoryTrimmer
from minagent.stores import SQLiteSchemaError
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


@contextlib.contextmanager
def connected(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection of the test's own to ``path``: committed and closed after the block
    (``with sqlite3.connect(...)`` commits but never closes)."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


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
    with connected(path) as conn:
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
    with connected(path) as conn:
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


def fingerprint(path: Path) -> tuple[str, int, list[str], str]:
    with connected(path) as conn:
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = sorted(
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
    return journal, version, tables, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.usefixtures("no_descriptor_left")
async def test_our_files_old_and_new_open(tmp_path: Path) -> None:
    """SE-21, SE-14, SE-40: a new file gets minagent's application id; a version-1 file
    written before the id (our two tables, application id 0) still opens, keeps its
    messages, and is migrated to version 2 (the runs table) with the id."""
    new = tmp_path / "new.db"
    await SQLiteHistoryProvider(path=new).save_messages("s", [Message("user", ["hi"])])
    with connected(new) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x6D696E61
    old = tmp_path / "old.db"
    # as a minagent of schema version 1, before the id, wrote it
    with connected(old) as conn:
        conn.execute(
            "CREATE TABLE messages (source_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " data TEXT NOT NULL, PRIMARY KEY (source_id, session_id, seq))"
        )
        conn.execute(
            "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, data TEXT NOT NULL, updated REAL NOT NULL)"
        )
        row = json.dumps(Message("user", ["hi"]).to_dict())
        conn.execute(
            "INSERT INTO messages VALUES ('sqlite_history', 's', 0, ?)", (row,)
        )
        conn.execute("PRAGMA user_version = 1")
    assert texts(await SQLiteHistoryProvider(path=old).get_messages("s")) == [
        ("user", "hi")
    ]
    await SQLiteHistoryProvider(path=old).save_messages(
        "s", [Message("user", ["again"])], run_key="r"
    )
    await SQLiteHistoryProvider(path=old).save_messages(
        "s", [Message("user", ["again"])], run_key="r"
    )
    assert texts(await SQLiteHistoryProvider(path=old).get_messages("s")) == [
        ("user", "hi"),
        ("user", "again"),
    ]
    with connected(old) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x6D696E61
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2


def conversation(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out += [
            Message("user", [f"q{i}"]),
            Message("assistant", [call("lookup", {"i": i}, call_id=f"c{i}")]),
            Message("tool", [call_result(f"c{i}")]),
            Message("assistant", [f"a{i}"]),
        ]
    return out


def call_result(call_id: str) -> Any:
    from minagent import Content

    return Content.from_function_result(call_id, "found")


class CountingSQLite(SQLiteHistoryProvider):
    """Counts the messages each run loads."""

    loaded: list[int]

    async def get_messages(
        self, session_id: str | None, **kwargs: Any
    ) -> list[Message]:
        messages = await super().get_messages(session_id, **kwargs)
        self.loaded = [*getattr(self, "loaded", []), len(messages)]
        return messages


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
    with connected(path) as conn:
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


async def test_sqlite_edges(tmp_path: Path) -> None:
    """SE-13, SE-17: an empty path is a ValueError; saving nothing writes nothing; clear
    forgets a session's messages; the provider and the store report their file."""
    with pytest.raises(ValueError, match="path"):
        SQLiteHistoryProvider("h", path="")
    path = tmp_path / "e.db"
    provider = SQLiteHistoryProvider("h", path=path)
    assert provider.path == str(path)
    assert SQLiteSessionStore(path).path == str(path)
    await provider.save_messages("s", [])
    assert not path.exists()
    await provider.save_messages("s", [Message("user", ["x"])])
    await provider.clear("s")
    assert await provider.get_messages("s") == []
    with pytest.raises(ValueError, match="session_id"):
        await provider.get_messages(None)


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


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize("kind", ["history", "store"])
async def test_a_foreign_database_is_refused_and_left_untouched(
    tmp_path: Path, kind: str
) -> None:
    """SE-21: another application's database (a `messages` table of its own) is a
    SQLiteSchemaError naming the file, and its journal mode, user_version, tables and
    bytes are as before."""
    path = tmp_path / "app.db"
    with connected(path) as conn:
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO messages (body) VALUES ('theirs')")
    before = fingerprint(path)
    read = (
        SQLiteHistoryProvider(path=path).get_messages("s")
        if kind == "history"
        else SQLiteSessionStore(path).get("s")
    )
    with pytest.raises(
        SQLiteSchemaError, match=rf"{path}: not a minagent database .*tables: messages"
    ):
        await read
    assert fingerprint(path) == before


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    """SE-21: a text file is a SQLiteSchemaError naming it; its bytes are as before."""
    path = tmp_path / "notes.txt"
    path.write_text("just notes\n" * 200)
    with pytest.raises(SQLiteSchemaError, match=rf"{path}: not an SQLite database"):
        await SQLiteHistoryProvider(path=path).get_messages("s")
    assert path.read_text() == "just notes\n" * 200


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize(
    ("data", "problem"),
    [("{not json", "not valid JSON"), ("[" * 100_000, "nested too deeply")],
    ids=["not-json", "deep"],
)
async def test_a_corrupt_row_is_a_serialization_error_naming_it(
    tmp_path: Path, data: str, problem: str
) -> None:
    """SE-22: a stored message or session that cannot be read is a SerializationError
    naming the file, the session and the row."""
    path = tmp_path / "h.db"
    provider = SQLiteHistoryProvider("h", path=path)
    await provider.save_messages("s", [Message("user", ["fine"])])
    with connected(path) as conn:
        conn.execute("INSERT INTO messages VALUES ('h', 's', 1, ?)", (data,))
        conn.execute("INSERT INTO sessions VALUES ('s', ?, 0)", (data,))
    with pytest.raises(
        SerializationError,
        match=rf"{path}: session 's', row 1: the stored data .*{problem}",
    ):
        await provider.get_messages("s")
    with pytest.raises(
        SerializationError, match=rf"{path}: session 's': the stored data .*{problem}"
    ):
        await SQLiteSessionStore(path).get("s")


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_row_from_dict_refuses_is_a_serialization_error_naming_it(
    tmp_path: Path,
) -> None:
    """SE-22: valid JSON that is not a message or a session (what `from_dict` refuses)
    is a SerializationError naming the file, the session and the row, then what was
    wrong."""
    path = tmp_path / "h.db"
    provider = SQLiteHistoryProvider("h", path=path)
    await provider.save_messages("s", [Message("user", ["fine"])])
    with connected(path) as conn:
        conn.execute(
            "INSERT INTO messages VALUES ('h', 's', 1, ?)", ('{"type": "other"}',)
        )
        conn.execute("INSERT INTO sessions VALUES ('s', ?, 0)", ('{"type": "other"}',))
    where = re.escape(f"{path}: session 's'")
    with pytest.raises(
        SerializationError,
        match=rf"^{where}, row 1\.type: expected 'message', got 'other'$",
    ):
        await provider.get_messages("s")
    with pytest.raises(
        SerializationError,
        match=rf"^{where}: session\.type: expected 'session', got 'other'$",
    ):
        await SQLiteSessionStore(path).get("s")


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_run_loads_only_what_the_trimmer_sends(
    tmp_path: Path, stream: bool
) -> None:
    """SE-23, ML-9: with a HistoryTrimmer(max_messages=6) in the agent's middleware, a
    run on a long SQLite session loads at most 6 stored messages, starting after any
    leading tool result, and the model gets exactly what it got when the whole session
    was loaded."""
    path = tmp_path / "h.db"
    seed = SQLiteHistoryProvider("h", path=path)
    await seed.save_messages("s", conversation(500))
    windowed, whole = CountingSQLite("h", path=path), CountingSQLite("h", path=path)
    clients = [ScriptedChatClient(["ok"]), ScriptedChatClient(["ok"])]
    trimmer = HistoryTrimmer(max_messages=6)
    session = AgentSession(session_id="s")
    await run(
        Agent(clients[0], context_providers=[windowed], middleware=[trimmer]),
        "next",
        stream=stream,
        session=session,
    )
    await seed.discard_messages(
        "s", [Message("user", ["next"]), Message("assistant", ["ok"])]
    )
    # the same trimmer given to the run only: the provider cannot see it and loads the
    # whole session
    await run(
        Agent(clients[1], context_providers=[whole]),
        "next",
        stream=stream,
        session=session,
        middleware=[trimmer],
    )
    # the 6th newest is a tool result: its call is outside the window
    assert windowed.loaded == [5]
    assert whole.loaded == [2000]
    assert texts(clients[0].requests[0].messages) == texts(
        clients[1].requests[0].messages
    )


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_a_bad_window_is_refused(tmp_path: Path, bad: Any) -> None:
    """SE-23: max_messages must be an int >= 1 or None."""
    with pytest.raises(ValueError, match="max_messages must be an int >= 1 or None"):
        SQLiteHistoryProvider(path=tmp_path / "h.db", max_messages=bad)


@pytest.mark.usefixtures("no_descriptor_left")
async def test_an_explicit_window_loads_the_last_messages(tmp_path: Path) -> None:
    """SE-23: SQLiteHistoryProvider(max_messages=3) gives a run the last 3 stored
    messages."""
    path = tmp_path / "h.db"
    provider = CountingSQLite("h", path=path, max_messages=3)
    await provider.save_messages("s", [Message("user", [f"m{i}"]) for i in range(40)])
    client = ScriptedChatClient(["ok"])
    await Agent(client, context_providers=[provider]).run(
        "now", session=AgentSession(session_id="s")
    )
    assert texts(client.requests[0].messages) == [
        ("user", "m37"),
        ("user", "m38"),
        ("user", "m39"),
        ("user", "now"),
    ]


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_database_another_process_is_creating_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-21: a store whose check reads a new file while another process creates it
    (here: the creator's schema steps committing right after the check read the
    application id) sees the file before or after those steps, never a mix of the two,
    and opens it."""
    import threading

    from minagent.stores import sqlite as store_module

    path = tmp_path / "new.db"
    # created empty, as a racing process's connect leaves it
    sqlite3.connect(path).close()
    creator_done = threading.Event()

    # the other process: each schema step in its own transaction, as the store does
    def create() -> None:
        other = sqlite3.connect(path, timeout=10, isolation_level=None)
        for version in sorted(store_module.MIGRATIONS):
            other.execute("BEGIN IMMEDIATE")
            other.execute(f"PRAGMA application_id = {store_module.APPLICATION_ID}")
            store_module.MIGRATIONS[version](other)
            other.execute(f"PRAGMA user_version = {version + 1}")
            other.execute("COMMIT")
        other.close()
        creator_done.set()

    class Racing(sqlite3.Connection):
        fired = False

        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            cursor = super().execute(sql, *args)
            if sql == "PRAGMA application_id" and not Racing.fired:
                Racing.fired = True
                threading.Thread(target=create).start()
                # it commits now unless this check holds its read (then after it)
                creator_done.wait(1.0)
            return cursor

    real_connect = sqlite3.connect
    monkeypatch.setattr(
        sqlite3, "connect", lambda *a, **k: real_connect(*a, **k, factory=Racing)
    )
    provider = SQLiteHistoryProvider(path=path)
    assert await provider.get_messages("s") == []
    assert Racing.fired
    assert creator_done.wait(10)
    monkeypatch.undo()
    await provider.save_messages("s", [Message("user", ["hi"])])
    assert texts(await SQLiteHistoryProvider(path=path).get_messages("s")) == [
        ("user", "hi")
    ]
