"""Sessions and durable stores, second round: a run right after leaving a stream early
(SE-19), a failed run stores nothing anywhere (SE-20), a foreign SQLite file is refused
untouched (SE-21), corrupt rows are typed errors (SE-22), and a run loads only what it
can send (SE-23)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentSession,
    ContextProvider,
    InMemoryHistoryProvider,
    Message,
    SerializationError,
    SessionBusyError,
    chat_middleware,
    set_tracer,
)
from minagent.middleware import HistoryTrimmer
from minagent.stores import SQLiteHistoryProvider, SQLiteSchemaError, SQLiteSessionStore
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run

from ..observability._recording import RecordingTracer
from ._util import texts


@pytest.fixture
def no_descriptor_left() -> Iterator[None]:
    """The test closes what it opened: as many file descriptors after it as before (each
    test of this module asks for it, wherever the test is kept)."""
    before = len(os.listdir("/proc/self/fd"))
    yield
    assert len(os.listdir("/proc/self/fd")) == before


# -- SE-19 ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
async def test_a_run_right_after_break_out_of_a_stream_gets_the_session(
    stream: bool, traced: bool
) -> None:
    """SE-19, ST-7: after `break` out of a run's stream, the next statement's run on the
    same session (either mode, traced or not) proceeds; the abandoned run stored nothing
    (SE-5)."""
    set_tracer(RecordingTracer() if traced else None)
    try:
        agent = Agent(ScriptedChatClient(["one two three four", "again"]))
        session = AgentSession()
        async for _update in agent.run("hi", stream=True, session=session):
            break
        answer = await run(agent, "next", stream=stream, session=session)
    finally:
        set_tracer(None)
    assert answer.text == "again"
    assert texts(session.state["in_memory"]["messages"]) == [
        ("user", "next"),
        ("assistant", "again"),
    ]


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_run_that_still_holds_the_session_is_waited_for_then_busy() -> None:
    """SE-19, SE-12: a second run waits for a first that really runs, up to the bound,
    then is SessionBusyError; once the first ends, the session takes a new run."""
    gate, started = asyncio.Event(), asyncio.Event()

    @chat_middleware
    async def hold(context: Any, call_next: Any) -> None:
        started.set()
        await gate.wait()
        await call_next()

    agent = Agent(ScriptedChatClient(["first", "third"]))
    session = AgentSession()
    first = asyncio.create_task(agent.run("1", session=session, middleware=[hold]))
    await started.wait()
    with pytest.raises(SessionBusyError):
        await agent.run("2", session=session)
    gate.set()
    assert (await first).text == "first"
    assert (await agent.run("3", session=session)).text == "third"


# -- SE-20 ---------------------------------------------------------------------------------------


class FailsOnce(ContextProvider):
    """A provider whose after_run fails the first time (a memory service that is
    down)."""

    def __init__(self) -> None:
        super().__init__("flaky")
        self.failures = 1

    async def after_run(
        self, *, agent: Any, session: AgentSession, context: Any, state: dict[str, Any]
    ) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("memory service down")


def rows(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        data = [
            json.loads(r[0])
            for r in conn.execute("SELECT data FROM messages ORDER BY session_id, seq")
        ]
    finally:
        conn.close()
    return [(m["role"], m["contents"][0].get("text", "")) for m in data]


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize("order", ["flaky-first", "flaky-last"])
async def test_a_failed_after_run_stores_nothing_and_a_retry_stores_the_turn_once(
    tmp_path: Path, stream: bool, order: str
) -> None:
    """SE-20, SE-5: a provider's after_run fails after (or before) the SQLite and
    in-memory history providers' turn: the run fails, nothing is stored in either; the
    retry stores the turn once."""
    path = tmp_path / "history.db"
    flaky = FailsOnce()
    histories = [
        SQLiteHistoryProvider(path=path),
        InMemoryHistoryProvider("memory", load_messages=False),
    ]
    providers = [flaky, *histories] if order == "flaky-first" else [*histories, flaky]
    agent = Agent(ScriptedChatClient(["answer", "answer"]), context_providers=providers)
    session = AgentSession()
    with pytest.raises(RuntimeError, match="memory service down"):
        await run(agent, "hello", stream=stream, session=session)
    assert rows(path) == []
    assert "memory" not in session.state
    await run(agent, "hello", stream=stream, session=session)
    assert rows(path) == [("user", "hello"), ("assistant", "answer")]
    assert texts(session.state["memory"]["messages"]) == [
        ("user", "hello"),
        ("assistant", "answer"),
    ]


class BrokenStore(InMemoryHistoryProvider):
    """A history provider whose save fails (its store is down)."""

    async def save_messages(
        self, session_id: str | None, messages: Any, *, state: Any = None, **kw: Any
    ) -> None:
        raise ConnectionError("store down")


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_failed_save_takes_back_the_saves_before_it(
    tmp_path: Path, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """SE-20: when one history provider's save fails, the saves of the same run before
    it (SQLite, in memory) are taken back: the run fails and no store keeps its
    messages; a provider that cannot take back is logged at ERROR."""
    path = tmp_path / "history.db"
    providers = [
        BrokenStore("broken", load_messages=False),
        SQLiteHistoryProvider(path=path),
    ]
    agent = Agent(ScriptedChatClient(["first", "second"]), context_providers=providers)
    session = AgentSession()
    with pytest.raises(ConnectionError, match="store down"):
        await run(agent, "hello", stream=stream, session=session)
    assert rows(path) == []

    class Stubborn(SQLiteHistoryProvider):
        async def discard_messages(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("cannot take back")

    agent = Agent(
        ScriptedChatClient(["second"]),
        context_providers=[providers[0], Stubborn(path=path)],
    )
    with (
        caplog.at_level(logging.ERROR, logger="minagent"),
        pytest.raises(ConnectionError),
    ):
        await run(agent, "again", stream=stream, session=session)
    assert rows(path) == [("user", "again"), ("assistant", "second")]
    assert any(
        "kept the failed run's messages" in r.getMessage() for r in caplog.records
    )


@pytest.mark.usefixtures("no_descriptor_left")
async def test_discard_takes_back_exactly_the_runs_rows(tmp_path: Path) -> None:
    """SE-20: discard_messages removes the newest rows equal to the run's messages, even
    when another writer appended after them, and nothing else."""
    provider = SQLiteHistoryProvider(path=tmp_path / "h.db")
    ours = [Message("user", ["q"]), Message("assistant", ["a"])]
    # an earlier equal turn
    await provider.save_messages(
        "s", [Message("user", ["q"]), Message("assistant", ["a"])]
    )
    await provider.save_messages("s", ours)
    await provider.save_messages("s", [Message("user", ["other process"])])
    await provider.discard_messages("s", ours)
    assert texts(await provider.get_messages("s")) == [
        ("user", "q"),
        ("assistant", "a"),
        ("user", "other process"),
    ]


# -- SE-21 ---------------------------------------------------------------------------------------


def fingerprint(path: Path) -> tuple[str, int, list[str], str]:
    with sqlite3.connect(path) as conn:
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = sorted(
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
    conn.close()
    return journal, version, tables, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize("kind", ["history", "store"])
async def test_a_foreign_database_is_refused_and_left_untouched(
    tmp_path: Path, kind: str
) -> None:
    """SE-21: another application's database (a `messages` table of its own) is a
    SQLiteSchemaError naming the file, and its journal mode, user_version, tables and
    bytes are as before."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO messages (body) VALUES ('theirs')")
    conn.close()
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
async def test_our_files_old_and_new_open(tmp_path: Path) -> None:
    """SE-21, SE-14, SE-40: a new file gets minagent's application id; a version-1 file
    written before the id (our two tables, application id 0) still opens, keeps its
    messages, and is migrated to version 2 (the runs table) with the id."""
    new = tmp_path / "new.db"
    await SQLiteHistoryProvider(path=new).save_messages("s", [Message("user", ["hi"])])
    with sqlite3.connect(new) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x6D696E61
    conn.close()
    old = tmp_path / "old.db"
    # as a minagent of schema version 1, before the id, wrote it
    with sqlite3.connect(old) as conn:
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
    conn.close()
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
    with sqlite3.connect(old) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x6D696E61
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    conn.close()


# -- SE-22 ---------------------------------------------------------------------------------------


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
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO messages VALUES ('h', 's', 1, ?)", (data,))
        conn.execute("INSERT INTO sessions VALUES ('s', ?, 0)", (data,))
    conn.close()
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
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO messages VALUES ('h', 's', 1, ?)", ('{"type": "other"}',)
        )
        conn.execute("INSERT INTO sessions VALUES ('s', ?, 0)", ('{"type": "other"}',))
    conn.close()
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


# -- SE-23 ---------------------------------------------------------------------------------------


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
