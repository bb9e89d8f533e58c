"""SQLite older than 3.42 under DBOS 3.4.0 on Python >= 3.12 (spec/dbos.md DU-17).

DBOS's SQLite schema gives timestamp columns the default ``unixepoch('subsec') * 1000``
on Python >= 3.12; the ``subsec`` modifier came with SQLite 3.42, and an older SQLite
evaluates the whole expression to NULL, so ``DBOS.launch()`` fails on a NOT NULL
constraint. Where the running SQLite is older, every SQLite connection SQLAlchemy opens
gets a ``unixepoch`` function that understands ``subsec`` (SQLite lets an application
function replace a built-in one); elsewhere nothing changes.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from typing import Any

__all__ = ["NEEDED", "install", "unixepoch"]

NEEDED = sys.version_info >= (3, 12) and sqlite3.sqlite_version_info < (3, 42, 0)
_NOW = {"now", "subsec", "subsecond"}


def unixepoch(*args: Any) -> float | int | None:
    """SQLite's ``unixepoch(time-value, modifier, ...)``, with ``subsec`` (fractional
    seconds)."""
    subsec = any(
        isinstance(a, str) and a.lower() in ("subsec", "subsecond") for a in args
    )
    rest = [
        a
        for a in args
        if not (isinstance(a, str) and a.lower() in ("subsec", "subsecond"))
    ]
    if all(isinstance(a, str) and a.lower() in _NOW for a in rest):
        now = time.time()
        return now if subsec else int(now)
    # the built-in date arithmetic, without subsec
    with sqlite3.connect(":memory:") as scratch:
        (seconds,) = scratch.execute(
            f"SELECT julianday({', '.join('?' * len(rest))})", rest
        ).fetchone()
    if seconds is None:
        return None
    value = (seconds - 2440587.5) * 86400.0
    return value if subsec else int(value)


def install(connection: Any) -> None:
    """Give one sqlite3 connection the ``unixepoch`` above."""
    connection.create_function("unixepoch", -1, unixepoch)


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        install(dbapi_connection)


if NEEDED:  # pragma: no cover - depends on the interpreter's SQLite
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    event.listen(Engine, "connect", _on_connect)
