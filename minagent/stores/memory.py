"""Sessions by id in memory: `SessionStore` (spec/sessions.md, SE-11).

Rules
-----
1. A stored session is its `to_dict` data: ``get`` gives an independent copy, ``set``
   keeps a copy; the durable stores (`SQLiteSessionStore`, `FileSessionStore`, the Redis
   plugin's) keep the same three methods and the same `AgentSession.to_dict` data.
"""

from __future__ import annotations

from typing import Any

from .._sessions import AgentSession, check_session_id

__all__ = ["SessionStore"]


class SessionStore:
    """Sessions by id, in memory (SE-11): ``get`` returns an independent copy (or None),
    ``set`` stores a copy, ``delete`` forgets. Durable stores (`SQLiteSessionStore`,
    Redis) keep the same three methods and the same `to_dict` data."""

    def __init__(self) -> None:
        self._sessions: dict[str, dict[str, Any]] = {}

    async def get(self, session_id: str) -> AgentSession | None:
        data = self._sessions.get(check_session_id(session_id))
        return None if data is None else AgentSession.from_dict(data)

    async def set(self, session_id: str, session: AgentSession) -> None:
        self._sessions[check_session_id(session_id)] = session.to_dict()

    async def delete(self, session_id: str) -> None:
        self._sessions.pop(check_session_id(session_id), None)
