"""Durable stores in the standard library: history and sessions in SQLite or in plain files
(spec/sessions.md).

Optional: loaded on first use (``minagent.SQLiteHistoryProvider``, ``minagent.FileSessionStore``, ...).

Rules
-----
1. A store is a `HistoryProvider` or a `SessionStore` of the core, built on their public names
   only; the core never imports a store.
2. ``__init__`` only re-exports.
"""

from .files import FileHistoryProvider, FileSessionStore
from .memory import SessionStore
from .sqlite import SCHEMA_VERSION, SQLiteHistoryProvider, SQLiteSchemaError, SQLiteSessionStore

__all__ = [
    "SCHEMA_VERSION",
    "FileHistoryProvider",
    "FileSessionStore",
    "SQLiteHistoryProvider",
    "SQLiteSchemaError",
    "SQLiteSessionStore",
    "SessionStore",
]
