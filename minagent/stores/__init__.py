"""Durable stores in the standard library: history and sessions in SQLite (spec/sessions.md).

Optional: loaded on first use (``minagent.SQLiteHistoryProvider``, ``minagent.SQLiteSessionStore``).
"""

from .sqlite import SCHEMA_VERSION, SQLiteHistoryProvider, SQLiteSchemaError, SQLiteSessionStore

__all__ = ["SCHEMA_VERSION", "SQLiteHistoryProvider", "SQLiteSchemaError", "SQLiteSessionStore"]
