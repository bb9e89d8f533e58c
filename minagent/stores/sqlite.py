"""Durable history and sessions in one SQLite file (spec/sessions.md, SE-13 to SE-17).

Rules
-----
1. Never on the event loop: every database call runs in a worker thread, on a connection
   opened for that call and closed after it (SE-13).
2. A run's messages are stored all or nothing, in one transaction (SE-15, SE-16), and
   taken back when a later save of the same run failed (SE-20); a run that names itself
   (``run_key``) is stored once, however often it is saved (SE-40).
3. The schema changes only through `MIGRATIONS`; a file newer than this code is refused
   (SE-14), and so is a database that is not ours, before anything in it changes
   (SE-21).
4. ``sqlite3`` is imported on first use, never when the module is.
5. What is stored and cannot be read is a `SerializationError` naming the file and the
   row (SE-22).

Theory of operation
-------------------
One database file holds many sessions: table ``messages`` (one row per message: provider
``source_id``, ``session_id``, a sequence number, the message as our versioned JSON) and
table ``sessions`` (one row per stored `AgentSession`, its `to_dict` JSON), and, from
schema version 2, table ``runs`` (the keys of the runs whose messages a session holds,
SE-40). The file's schema version is ``PRAGMA user_version``; opening a file of an older
version runs the steps of `MIGRATIONS` in order, one transaction each, and a file newer
than this code knows is an error (SE-14). A file is ours when its ``PRAGMA
application_id`` is `APPLICATION_ID` (set when we create it), when it is empty, or when
it holds exactly our two tables (a file written before the id was set); anything else is
refused by reading alone, before WAL mode or a table touches it (SE-21). With a window
(``max_messages``, or the agent's `HistoryTrimmer`) a run loads only the last messages,
newest first through the primary key, never the whole session (SE-23).

Every call runs in a worker thread (``asyncio.to_thread``), never on the event loop, on
a connection opened for that call and closed after it, so no connection is shared
between threads or outlives a call (SE-13). The file is in WAL mode (readers do not
block the writer) and every connection waits up to ``timeout`` seconds for a lock. A
run's messages are written by one ``save_messages`` call in one ``BEGIN IMMEDIATE``
transaction that reads the next sequence number and inserts every row: a run's messages
are stored all or nothing, and runs from several processes appending to one session
interleave as whole runs (SE-15, SE-16). A cancellation that arrives while a write is
under way does not cut it: the thread finishes the transaction, which commits whole or
not at all. A keyed save first inserts its key into ``runs`` in that same transaction
(``INSERT OR IGNORE``, with the sequence number of its first message); when the key was
there already the transaction appends nothing, so a save repeated after a crash, or
raced by another process, appends once. A keyed load reads only the rows before that
first sequence number: a recovered run sees the history without its own messages.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._exceptions import MinagentError, SerializationError
from .._sessions import AgentSession, HistoryProvider, SessionContext, check_session_id
from .._types import Message
from .memory import check_listing, save_stamp

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SQLiteHistoryProvider",
    "SQLiteLockedError",
    "SQLiteSchemaError",
    "SQLiteSessionStore",
]

SCHEMA_VERSION = 2
# "mina": PRAGMA application_id of a file minagent created (SE-21)
APPLICATION_ID = 0x6D696E61
# a `save_stamp` as SQLite's julian day (`julianday('now')` counts days from noon, 4714 BC)
_NS_PER_DAY = 86_400 * 10**9
_UNIX_EPOCH_JULIAN_DAY = 2_440_587.5
_OUR_TABLES = {
    "messages": {"source_id", "session_id", "seq", "data"},
    "sessions": {"session_id", "data", "updated"},
}


def _create_v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS messages ("
        " source_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,"
        " PRIMARY KEY (source_id, session_id, seq))"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, data TEXT NOT NULL, updated REAL NOT NULL)"
    )


def _create_v2(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS runs (source_id TEXT NOT NULL, session_id TEXT NOT NULL, run_key TEXT NOT NULL,"
        " first_seq INTEGER NOT NULL, PRIMARY KEY (source_id, session_id, run_key))"
    )


# MIGRATIONS[n] takes a file of schema version n to n + 1 (SE-14). A later schema adds
# its step here and raises SCHEMA_VERSION; files written by older versions are migrated
# when opened.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    0: _create_v1,
    1: _create_v2,
}


class SQLiteSchemaError(MinagentError, RuntimeError):
    """The database file's schema is newer than this minagent knows (SE-14), or the file
    is not a minagent database (SE-21); the message names the file."""


class SQLiteLockedError(MinagentError, TimeoutError):
    """Another connection held the database file's lock for longer than the store's
    ``timeout`` (SE-68); the message names the file and the timeout."""


def _is_lock(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's answer to a lock another connection holds."""
    import sqlite3

    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Database:
    """One file: connections per call, the schema checked on this object's first
    call."""

    def __init__(self, path: str | os.PathLike[str], timeout: float) -> None:
        self.path = os.fspath(path)
        if not self.path:
            raise ValueError("path must name a database file")
        self.timeout = timeout
        self._ready = False
        self._ready_lock = threading.Lock()

    def connect(self) -> sqlite3.Connection:
        import sqlite3  # loaded on first use: `import minagent` stays light

        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            with self._ready_lock:
                if not self._ready:
                    self._first_open(conn)
                    self._ready = True
        except BaseException:
            conn.close()
            raise
        return conn

    def _first_open(self, conn: sqlite3.Connection) -> None:
        # SE-68: SQLite does not pass the first open's steps through its busy handler
        # in every case (changing the journal mode needs the file to itself, and a
        # reader that meets a WAL file being set up gets SQLITE_BUSY at once), so the
        # whole first open is retried, with short growing pauses, until the store's
        # timeout is spent. Each step is its own transaction: a retry starts over
        # from a consistent file.
        deadline = time.monotonic() + self.timeout
        pause = 0.005
        while True:
            try:
                self._migrate(conn)
                return
            except Exception as exc:
                if not _is_lock(exc) or time.monotonic() >= deadline:
                    raise
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 0.2)

    def locked(self, exc: BaseException) -> SQLiteLockedError:
        """SE-68: the typed error for a lock that outlasted the timeout."""
        return SQLiteLockedError(
            f"{self.path}: the database stayed locked by another connection for over "
            f"{self.timeout:g} s (the store's timeout); nothing was written"
        )

    def _migrate(self, conn: sqlite3.Connection) -> None:
        self._check_ours(conn)
        conn.execute("PRAGMA journal_mode = WAL")
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if version > SCHEMA_VERSION:
                    raise SQLiteSchemaError(
                        f"{self.path}: schema version {version} is newer than this minagent knows "
                        f"({SCHEMA_VERSION}); upgrade minagent to open it"
                    )
                if version == SCHEMA_VERSION:
                    conn.execute("COMMIT")
                    return
                # SE-21: the file is ours (checked)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                MIGRATIONS[version](conn)
                conn.execute(f"PRAGMA user_version = {version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _check_ours(self, conn: sqlite3.Connection) -> None:
        """SE-21: refuse, by reading alone, a file that is not a minagent database."""
        import sqlite3

        # one read transaction: a file another process is creating is seen before or
        # after a step, never mid-way
        try:
            conn.execute("BEGIN")
            app = int(conn.execute("PRAGMA application_id").fetchone()[0])
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                )
            }
            columns = {
                t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")}
                for t in tables & _OUR_TABLES.keys()
            }
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            # SE-68: a lock says nothing about the file; the first open retries it
            if _is_lock(exc):
                raise
            raise SQLiteSchemaError(
                f"{self.path}: not an SQLite database ({exc}); nothing was changed"
            ) from None
        # written before the id
        ours = columns == _OUR_TABLES and tables == _OUR_TABLES.keys() and app == 0
        if app == APPLICATION_ID or (app == 0 and version == 0 and not tables) or ours:
            return
        shown = ", ".join(sorted(tables)) or "none"
        raise SQLiteSchemaError(
            f"{self.path}: not a minagent database (application_id {app}, user_version {version}, tables: "
            f"{shown}); nothing was changed: give the store a new file or one minagent created"
        )

    async def call(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """``work(connection)`` in a worker thread, on a connection of its own
        (SE-13)."""

        def run() -> Any:
            try:
                conn = self.connect()
                try:
                    return work(conn)
                finally:
                    conn.close()
            except Exception as exc:
                if _is_lock(exc):
                    raise self.locked(exc) from exc
                raise

        return await asyncio.to_thread(run)


def _loaded(text: str, where: str) -> Any:
    """SE-22: a stored row's JSON, or a `SerializationError` naming the row."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        problem = (
            "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        )
        raise SerializationError(
            where, f"the stored data is not valid JSON ({problem})"
        ) from None


def _message(text: str, where: str) -> Message:
    try:
        return Message.from_dict(_loaded(text, where), path=where)
    except RecursionError:
        raise SerializationError(
            where, "the stored message is nested too deeply"
        ) from None


def _is_result(message: Message) -> bool:
    """A message that starts with a tool result or approval answer: its call is further
    back (SE-23)."""
    return any(
        c.type in ("function_result", "function_approval_response")
        for c in message.contents
    )


def _window(agent: Any) -> int | None:
    """SE-23: what the agent's `HistoryTrimmer` sends at most (its ``history_window``),
    or None."""
    middleware = getattr(agent, "middleware", None)
    items = middleware if isinstance(middleware, list | tuple) else [middleware]
    windows = [
        w for m in items if isinstance(w := getattr(m, "history_window", None), int)
    ]
    return min(windows) if windows else None


def _run_key(run_key: object, state: dict[str, Any] | None) -> str | None:
    """SE-40: the run a save names, ``run_key=`` or else ``state["run_key"]``; None when
    none."""
    key = run_key if run_key is not None else (state or {}).get("run_key")
    if key is not None and (not isinstance(key, str) or not key):
        raise ValueError(f"run_key must be a non-empty string, got {key!r}")
    return key


def _write(
    conn: sqlite3.Connection, statements: Callable[[sqlite3.Connection], object]
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        statements(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class SQLiteHistoryProvider(HistoryProvider):
    """A session's messages in a SQLite file (SE-13): ``SQLiteHistoryProvider("history",
    path="chat.db")``.

    The ``source_id`` keys the rows, so several providers (or agents) may share one
    file. With ``max_messages`` (or a `HistoryTrimmer` with ``max_messages`` in the
    agent's middleware) a run loads only the last messages (SE-23).
    """

    def __init__(
        self,
        source_id: str = "sqlite_history",
        *,
        path: str | os.PathLike[str],
        timeout: float = 30.0,
        load_messages: bool = True,
        store_inputs: bool = True,
        store_context_messages: bool = False,
        store_context_from: set[str] | None = None,
        store_outputs: bool = True,
        max_messages: int | None = None,
    ) -> None:
        super().__init__(
            source_id,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_context_messages=store_context_messages,
            store_context_from=store_context_from,
            store_outputs=store_outputs,
        )
        if max_messages is not None and (
            isinstance(max_messages, bool)
            or not isinstance(max_messages, int)
            or max_messages < 1
        ):
            raise ValueError(
                f"max_messages must be an int >= 1 or None, got {max_messages!r}"
            )
        self.max_messages = max_messages
        self._db = _Database(path, timeout)

    @property
    def path(self) -> str:
        return self._db.path

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """The stored messages as this provider's context, at most the window's
        (SE-23)."""
        window = self.max_messages or _window(agent)
        context.extend_messages(
            self, await self.get_messages(context.session_id, state=state, last=window)
        )

    async def get_messages(
        self,
        session_id: str | None,
        *,
        state: dict[str, Any] | None = None,
        last: int | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> list[Message]:
        """The session's messages in order; with ``last``, only the last ``last`` of
        them, starting after any leading tool result whose call is further back (SE-23);
        for a run that names itself, only those stored before its own (SE-40)."""
        key, source, run = (
            check_session_id(session_id),
            self._source(),
            _run_key(run_key, state),
        )

        def read(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            where, args = (
                "FROM messages WHERE source_id = ? AND session_id = ?",
                [source, key],
            )
            # SE-40: the history as it was before this run's messages
            if run is not None:
                where += " AND seq < COALESCE((SELECT first_seq FROM runs WHERE source_id = ? AND session_id = ?"
                where += " AND run_key = ?), seq + 1)"
                args += [source, key, run]
            if last is None:
                return conn.execute(
                    f"SELECT seq, data {where} ORDER BY seq", args
                ).fetchall()
            newest = conn.execute(
                f"SELECT seq, data {where} ORDER BY seq DESC LIMIT ?", [*args, last]
            )
            return list(reversed(newest.fetchall()))

        rows: list[tuple[int, str]] = await self._db.call(read)
        messages = [
            _message(data, f"{self.path}: session {key!r}, row {seq}")
            for seq, data in rows
        ]
        while last is not None and messages and _is_result(messages[0]):
            messages.pop(0)  # SE-23: never a result without its call
        return messages

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        """All of ``messages`` in one transaction, after the stored ones (SE-15);
        nothing when the run ``run_key`` (or ``state["run_key"]``) names is stored
        already (SE-40)."""
        key, source, run = (
            check_session_id(session_id),
            self._source(),
            _run_key(run_key, state),
        )
        # fails before anything is written
        data = [json.dumps(m.to_dict(), ensure_ascii=False) for m in messages]
        if not data:
            return

        def append(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) FROM messages WHERE source_id = ? AND session_id = ?",
                (source, key),
            ).fetchone()
            start = int(row[0]) + 1
            if (
                run is not None
                and not conn.execute(
                    "INSERT OR IGNORE INTO runs (source_id, session_id, run_key, first_seq) VALUES (?, ?, ?, ?)",
                    (source, key, run, start),
                ).rowcount
            ):
                return  # SE-40: this run's messages are here already
            conn.executemany(
                "INSERT INTO messages (source_id, session_id, seq, data) VALUES (?, ?, ?, ?)",
                [(source, key, start + i, item) for i, item in enumerate(data)],
            )

        await self._db.call(lambda conn: _write(conn, append))

    async def discard_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        """SE-20: take back the newest rows equal to ``messages`` (what this run's save
        wrote), and the run's key (SE-40)."""
        key, source, run = (
            check_session_id(session_id),
            self._source(),
            _run_key(run_key, state),
        )
        data = [json.dumps(m.to_dict(), ensure_ascii=False) for m in messages]

        def remove(conn: sqlite3.Connection) -> None:
            if run is not None:
                where = "source_id = ? AND session_id = ? AND run_key = ?"
                conn.execute(f"DELETE FROM runs WHERE {where}", (source, key, run))
            rows = conn.execute(
                "SELECT seq, data FROM messages WHERE source_id = ? AND session_id = ? ORDER BY seq DESC LIMIT ?",
                # other processes' runs may have come after this one (SE-16)
                (source, key, len(data) + 1000),
            ).fetchall()[::-1]
            for start in range(len(rows) - len(data), -1, -1):
                if [d for _seq, d in rows[start : start + len(data)]] == data:
                    first, end = rows[start][0], rows[start + len(data) - 1][0]
                    where = "source_id = ? AND session_id = ? AND seq BETWEEN ? AND ?"
                    conn.execute(
                        f"DELETE FROM messages WHERE {where}", (source, key, first, end)
                    )
                    return

        if data:
            await self._db.call(lambda conn: _write(conn, remove))

    async def clear(self, session_id: str) -> None:
        """Forget the session's messages and run keys (SE-40)."""
        key, source = check_session_id(session_id), self._source()

        def forget(conn: sqlite3.Connection) -> None:
            for table in ("messages", "runs"):
                conn.execute(
                    f"DELETE FROM {table} WHERE source_id = ? AND session_id = ?",
                    (source, key),
                )

        await self._db.call(lambda conn: _write(conn, forget))

    def _source(self) -> str:
        return self.source_id or type(self).__name__


class SQLiteSessionStore:
    """Sessions by id in a SQLite file (SE-17): ``get`` (None when absent), ``set``,
    ``delete``, with the data `AgentSession.to_dict()` writes; may share its file with
    `SQLiteHistoryProvider`."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self._db = _Database(path, timeout)

    @property
    def path(self) -> str:
        return self._db.path

    async def get(self, session_id: str) -> AgentSession | None:
        key = check_session_id(session_id)
        row = await self._db.call(
            lambda conn: conn.execute(
                "SELECT data FROM sessions WHERE session_id = ?", (key,)
            ).fetchone()
        )
        if row is None:
            return None
        where = f"{self.path}: session {key!r}"
        try:
            return AgentSession.from_dict(_loaded(row[0], where))
        except RecursionError:
            raise SerializationError(
                where, "the stored session is nested too deeply"
            ) from None
        except SerializationError as exc:
            if exc.path.startswith(where):
                raise
            # SE-22: from_dict names only its own path
            raise SerializationError(where, str(exc)) from exc

    async def set(self, session_id: str, session: AgentSession) -> None:
        key = check_session_id(session_id)
        # a state that is not JSON fails here, nothing written
        data = json.dumps(session.to_dict(), ensure_ascii=False)

        # SE-69: the set's stamp as a julian day, taken in the order of the calls
        updated = save_stamp() / _NS_PER_DAY + _UNIX_EPOCH_JULIAN_DAY

        def upsert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO sessions (session_id, data, updated) VALUES (?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET data = excluded.data, updated = excluded.updated",
                (key, data, updated),
            )

        await self._db.call(lambda conn: _write(conn, upsert))

    async def delete(self, session_id: str) -> None:
        key = check_session_id(session_id)
        await self._db.call(
            lambda conn: _write(
                conn,
                lambda c: c.execute(
                    "DELETE FROM sessions WHERE session_id = ?", (key,)
                ),
            )
        )

    async def list_ids(self, prefix: str = "", limit: int = 100) -> list[str]:
        """SE-69: the stored ids starting with ``prefix``, the last updated first, at
        most ``limit``."""
        check_listing(prefix, limit)
        # substr rather than LIKE: a prefix holding % or _ is matched as it is
        rows = await self._db.call(
            lambda conn: conn.execute(
                "SELECT session_id FROM sessions WHERE substr(session_id, 1, ?) = ? "
                "ORDER BY updated DESC, rowid DESC LIMIT ?",
                (len(prefix), prefix, limit),
            ).fetchall()
        )
        return [str(row[0]) for row in rows]
