"""Sessions by id in memory: `SessionStore` (spec/sessions.md, SE-11).

Rules
-----
1. A stored session is its `to_dict` data: ``get`` gives an independent copy, ``set``
   keeps a copy; the durable stores (`SQLiteSessionStore`, `FileSessionStore`, the Redis
   plugin's) keep the same three methods and the same `AgentSession.to_dict` data.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .._sessions import AgentSession, check_session_id

__all__ = ["SessionStore", "check_listing", "save_stamp"]

# SE-69: the last stamp `save_stamp` gave, and the lock that orders its callers
_last_stamp = 0
_stamp_lock = threading.Lock()
# apart by this much (100 us), two stamps stay apart as a SQLite julian day (about 45 us
# of resolution today) and on a file system that keeps microseconds
STAMP_STEP_NS = 100_000


def check_listing(prefix: str, limit: int) -> None:
    """SE-69: the arguments of ``list_ids``, checked the same way by every store."""
    if not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string, not {type(prefix).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an integer of at least 1, not {limit!r}")


def save_stamp() -> int:
    """SE-69: when a durable store's ``set`` is taken to happen, in nanoseconds since the
    epoch: the clock, but strictly later than every stamp this process gave before (by
    at least `STAMP_STEP_NS`), so sets made one after the other list in that order even
    within one tick of the clock."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(time.time_ns(), _last_stamp + STAMP_STEP_NS)
        return _last_stamp


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
        key = check_session_id(session_id)
        data = session.to_dict()
        # SE-69: the dict's order is the order of the last set, oldest first
        self._sessions.pop(key, None)
        self._sessions[key] = data

    async def delete(self, session_id: str) -> None:
        self._sessions.pop(check_session_id(session_id), None)

    async def list_ids(self, prefix: str = "", limit: int = 100) -> list[str]:
        """SE-69: the stored ids starting with ``prefix``, the last set first, at most
        ``limit``."""
        check_listing(prefix, limit)
        out: list[str] = []
        for key in reversed(self._sessions):
            if key.startswith(prefix):
                out.append(key)
                if len(out) == limit:
                    break
        return out
