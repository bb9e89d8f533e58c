"""Durable history and sessions in one SQLite file (spec/sessions.md, SE-13 to SE-17).

Rules
-----
1. Never on the event loop: every database call runs in a worker thread, on a connection opened
   for that call and closed after it (SE-13).
2. A run's messages are stored all or nothing, in one transaction (SE-15, SE-16).
3. The schema changes only through `MIGRATIONS`; a file newer than this code is refused (SE-14).
4. ``sqlite3`` is imported on first use, never when the module is.

Theory of operation
-------------------
One database file holds many sessions: table ``messages`` (one row per message: provider
``source_id``, ``session_id``, a sequence number, the message as our versioned JSON) and table
``sessions`` (one row per stored `AgentSession`, its `to_dict` JSON). The file's schema version
is ``PRAGMA user_version``; opening a file of an older version runs the steps of `MIGRATIONS`
in order, one transaction each, and a file newer than this code knows is an error (SE-14).

Every call runs in a worker thread (``asyncio.to_thread``), never on the event loop, on a
connection opened for that call and closed after it, so no connection is shared between
threads or outlives a call (SE-13). The file is in WAL mode (readers do not block the writer)
and every connection waits up to ``timeout`` seconds for a lock. A run's messages are written
by one ``save_messages`` call in one ``BEGIN IMMEDIATE`` transaction that reads the next
sequence number and inserts every row: a run's messages are stored all or nothing, and runs
from several processes appending to one session interleave as whole runs (SE-15, SE-16). A
cancellation that arrives while a write is under way does not cut it: the thread finishes the
transaction, which commits whole or not at all.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._exceptions import MinagentError
from .._sessions import AgentSession, HistoryProvider, check_session_id
from .._types import Message

if TYPE_CHECKING:
    import sqlite3

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQLiteHistoryProvider", "SQLiteSchemaError", "SQLiteSessionStore"]

SCHEMA_VERSION = 1


def _create_v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS messages ("
        " source_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,"
        " PRIMARY KEY (source_id, session_id, seq))"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, data TEXT NOT NULL, updated REAL NOT NULL)"
    )


# MIGRATIONS[n] takes a file of schema version n to n + 1 (SE-14). A later schema adds its step
# here and raises SCHEMA_VERSION; files written by older versions are migrated when opened.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {0: _create_v1}


class SQLiteSchemaError(MinagentError, RuntimeError):
    """The database file's schema is newer than this minagent knows (SE-14)."""


class _Database:
    """One file: connections per call, the schema checked on this object's first call."""

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
                    self._migrate(conn)
                    self._ready = True
        except BaseException:
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
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
                MIGRATIONS[version](conn)
                conn.execute(f"PRAGMA user_version = {version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    async def call(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """``work(connection)`` in a worker thread, on a connection of its own (SE-13)."""

        def run() -> Any:
            conn = self.connect()
            try:
                return work(conn)
            finally:
                conn.close()

        return await asyncio.to_thread(run)


def _write(conn: sqlite3.Connection, statements: Callable[[sqlite3.Connection], object]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        statements(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class SQLiteHistoryProvider(HistoryProvider):
    """A session's messages in a SQLite file (SE-13): ``SQLiteHistoryProvider("history", path="chat.db")``.

    The ``source_id`` keys the rows, so several providers (or agents) may share one file.
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
    ) -> None:
        super().__init__(
            source_id,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_context_messages=store_context_messages,
            store_context_from=store_context_from,
            store_outputs=store_outputs,
        )
        self._db = _Database(path, timeout)

    @property
    def path(self) -> str:
        return self._db.path

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        key, source = check_session_id(session_id), self._source()

        def read(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "SELECT data FROM messages WHERE source_id = ? AND session_id = ? ORDER BY seq", (source, key)
            )
            return [row[0] for row in rows]

        rows: list[str] = await self._db.call(read)
        return [Message.from_dict(json.loads(row), path=f"{self.path}[{key}][{i}]") for i, row in enumerate(rows)]

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """All of ``messages`` in one transaction, after the stored ones (SE-15)."""
        key, source = check_session_id(session_id), self._source()
        data = [json.dumps(m.to_dict(), ensure_ascii=False) for m in messages]  # fails before anything is written
        if not data:
            return

        def append(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) FROM messages WHERE source_id = ? AND session_id = ?", (source, key)
            ).fetchone()
            start = int(row[0]) + 1
            conn.executemany(
                "INSERT INTO messages (source_id, session_id, seq, data) VALUES (?, ?, ?, ?)",
                [(source, key, start + i, item) for i, item in enumerate(data)],
            )

        await self._db.call(lambda conn: _write(conn, append))

    async def clear(self, session_id: str) -> None:
        """Forget the session's messages."""
        key, source = check_session_id(session_id), self._source()
        await self._db.call(
            lambda conn: _write(
                conn, lambda c: c.execute("DELETE FROM messages WHERE source_id = ? AND session_id = ?", (source, key))
            )
        )

    def _source(self) -> str:
        return self.source_id or type(self).__name__


class SQLiteSessionStore:
    """Sessions by id in a SQLite file (SE-17): ``get`` (None when absent), ``set``, ``delete``,
    with the data `AgentSession.to_dict()` writes; may share its file with `SQLiteHistoryProvider`."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self._db = _Database(path, timeout)

    @property
    def path(self) -> str:
        return self._db.path

    async def get(self, session_id: str) -> AgentSession | None:
        key = check_session_id(session_id)
        row = await self._db.call(
            lambda conn: conn.execute("SELECT data FROM sessions WHERE session_id = ?", (key,)).fetchone()
        )
        return None if row is None else AgentSession.from_dict(json.loads(row[0]))

    async def set(self, session_id: str, session: AgentSession) -> None:
        key = check_session_id(session_id)
        data = json.dumps(session.to_dict(), ensure_ascii=False)  # a state that is not JSON fails here, nothing written

        def upsert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO sessions (session_id, data, updated) VALUES (?, ?, julianday('now')) "
                "ON CONFLICT(session_id) DO UPDATE SET data = excluded.data, updated = excluded.updated",
                (key, data),
            )

        await self._db.call(lambda conn: _write(conn, upsert))

    async def delete(self, session_id: str) -> None:
        key = check_session_id(session_id)
        await self._db.call(
            lambda conn: _write(conn, lambda c: c.execute("DELETE FROM sessions WHERE session_id = ?", (key,)))
        )
