"""Stores in the standard library: sessions in memory, history and sessions in SQLite or
in plain files (spec/sessions.md).

Optional: loaded on first use (``minagent.SessionStore``,
``minagent.SQLiteHistoryProvider``, ``minagent.FileSessionStore``, ...).

Rules
-----
1. A store is a `HistoryProvider` of the core or a `SessionStore`, built on the core's
   public names only; the core never imports a store.
2. ``__init__`` only re-exports.
"""

from .files import FileHistoryProvider, FileSessionStore
from .memory import SessionStore
from .sqlite import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    SQLiteHistoryProvider,
    SQLiteLockedError,
    SQLiteSchemaError,
    SQLiteSessionStore,
)

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "FileHistoryProvider",
    "FileSessionStore",
    "SQLiteHistoryProvider",
    "SQLiteLockedError",
    "SQLiteSchemaError",
    "SQLiteSessionStore",
    "SessionStore",
]
