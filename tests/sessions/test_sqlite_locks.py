"""SQLite stores under another connection's lock (spec/sessions.md SE-68): every step
waits within the store's timeout, the first open's steps included, and a lock that
outlasts it is a typed error naming the file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minagent import Message
from minagent.stores import (
    SQLiteHistoryProvider,
    SQLiteLockedError,
    SQLiteSessionStore,
)
from minagent.stores.sqlite import _Database

ROOT = Path(__file__).resolve().parents[2]


def hold_exclusive(path: Path) -> sqlite3.Connection:
    """Another connection that holds the file's exclusive lock until it is closed."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


@pytest.mark.parametrize("opened_before", [False, True])
async def test_a_lock_that_outlasts_the_timeout_is_a_typed_error(
    tmp_path: Path, opened_before: bool
) -> None:
    """SE-68: on the first open and on an ordinary statement, a lock held past the
    store's timeout is a `SQLiteLockedError` (a `TimeoutError`) naming the file and the
    timeout, and the file holds nothing of the refused save."""
    path = tmp_path / "chat.db"
    provider = SQLiteHistoryProvider("h", path=path, timeout=0.2)
    if opened_before:
        await provider.save_messages("s", [Message("user", ["kept"])])
    else:
        sqlite3.connect(path).close()
    other = hold_exclusive(path)
    try:
        with pytest.raises(SQLiteLockedError) as caught:
            await provider.save_messages("s", [Message("user", ["refused"])])
    finally:
        other.close()
    assert isinstance(caught.value, TimeoutError)
    assert str(path) in str(caught.value)
    assert "0.2 s" in str(caught.value)
    stored = await provider.get_messages("s")
    assert [m.text for m in stored] == (["kept"] if opened_before else [])


async def test_the_session_store_waits_for_a_lock_released_within_the_timeout(
    tmp_path: Path,
) -> None:
    """SE-68: a lock released before the timeout is waited for, on the first open."""
    import asyncio

    path = tmp_path / "sessions.db"
    sqlite3.connect(path).close()
    other = hold_exclusive(path)
    store = SQLiteSessionStore(path, timeout=10)
    waiting = asyncio.ensure_future(store.get("s"))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    other.close()
    assert await waiting is None


def test_the_first_open_retries_what_sqlite_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-68: a lock error from a first-open step that SQLite's busy handler does not
    retry (injected here: the journal-mode step answers SQLITE_BUSY at once) is retried
    until the step succeeds; an error that is not a lock is not retried."""
    database = _Database(tmp_path / "a.db", timeout=10)
    real = database._migrate
    failures = iter([sqlite3.OperationalError("database is locked")] * 3)
    calls: list[int] = []

    def flaky(conn: sqlite3.Connection) -> None:
        calls.append(1)
        failure = next(failures, None)
        if failure is not None:
            raise failure
        real(conn)

    monkeypatch.setattr(database, "_migrate", flaky)
    database.connect().close()
    assert len(calls) == 4

    other = _Database(tmp_path / "b.db", timeout=10)
    broken: list[int] = []

    def fails(conn: sqlite3.Connection) -> None:
        broken.append(1)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(other, "_migrate", fails)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        other.connect()
    assert broken == [1]


OPENER = """
import asyncio, sys, time
from minagent import Message, SQLiteHistoryProvider, SQLiteSessionStore

async def main(path, name, start):
    time.sleep(max(0.0, start - time.time()))
    history = SQLiteHistoryProvider("h", path=path)
    store = SQLiteSessionStore(path)
    await asyncio.gather(
        history.save_messages("shared", [Message("user", [name])]),
        store.get("shared"),
    )

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
"""


def test_processes_opening_one_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    """SE-68, SE-21: six processes that open the same new file at the same moment (each
    a history provider and a session store: the first open's check, journal mode and
    schema steps race) all succeed, and each one's message is stored once."""
    path = tmp_path / "new.db"
    start = str(time.time() + 1.5)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(path), f"p{k}", start],
            cwd=ROOT,
            env=dict(os.environ),
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(6)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    assert rows == 6
    assert mode == "wal"
