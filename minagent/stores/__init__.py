"""Durable stores in the standard library: history and sessions in SQLite (spec/sessions.md).

Optional: loaded on first use (``minagent.SQLiteHistoryProvider``, ``minagent.SQLiteSessionStore``).

Rules
-----
1. A store is a `HistoryProvider` or a `SessionStore` of the core, built on their public names
   only; the core never imports a store.
2. ``__init__`` only re-exports.
"""

from .sqlite import SCHEMA_VERSION, SQLiteHistoryProvider, SQLiteSchemaError, SQLiteSessionStore

__all__ = ["SCHEMA_VERSION", "SQLiteHistoryProvider", "SQLiteSchemaError", "SQLiteSessionStore"]
