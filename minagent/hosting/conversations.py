"""One protocol conversation, one session (spec/hosting.md HS-140 .. HS-143).

Every protocol the application serves names its conversations its own way (the
Responses API's ``conversation`` and ``previous_response_id``, A2A's ``contextId``,
AG-UI's ``threadId``). `Conversations` maps each such id to one `AgentSession` kept in
one session store, so a conversation continues across requests and, with a shared
durable store (SQLite, Redis), across worker processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

from minagent import AgentSession

__all__ = ["Conversations", "SessionStoreLike", "conversation_key"]


class SessionStoreLike(Protocol):
    """What `Conversations` needs of a session store: the three methods every store of
    `minagent.stores` (and the Redis plugin's) has (SE-11)."""

    async def get(self, session_id: str) -> AgentSession | None: ...

    async def set(self, session_id: str, session: AgentSession) -> None: ...

    async def delete(self, session_id: str) -> None: ...


def _key(agent_name: str, conversation_id: str) -> str:
    # HS-141: conversations are per agent; the same id under two agents is two
    # sessions. The agent's name comes first, so one store can hold every agent's.
    return f"{agent_name}/{conversation_id}"


class Conversations:
    """Conversation ids to sessions, in one store (HS-140).

    ``store`` defaults to an in-memory `SessionStore` (one process); pass a
    `SQLiteSessionStore` or the Redis plugin's store to share conversations between
    processes.
    """

    def __init__(self, store: SessionStoreLike | None = None) -> None:
        if store is None:
            from minagent import SessionStore

            store = SessionStore()
        self.store: SessionStoreLike = store
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def session(
        self, agent_name: str, conversation_id: str
    ) -> AsyncIterator[AgentSession]:
        """The conversation's session, new if the store has none, held for one run.

        HS-142: runs of one conversation in this process take turns (a second request
        waits for the first to finish), so neither reads the session before the other
        has saved it. HS-143: the session is saved only when the block ends without an
        exception; a failed or cancelled run leaves the stored session as it was.
        """
        key = _key(agent_name, conversation_id)
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                session = await self.store.get(key)
                if session is None:
                    session = AgentSession(session_id=key)
                yield session
                await self.store.set(key, session)
        finally:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key]
                del self._locks[key]

    async def get(self, agent_name: str, conversation_id: str) -> AgentSession | None:
        """The stored session of a conversation, or None (read-only: nothing is
        saved)."""
        return await self.store.get(_key(agent_name, conversation_id))

    async def list_ids(self, agent_name: str, limit: int) -> list[str] | None:
        """HS-228: the agent's conversation ids, the last saved first, when the store
        can list them (SE-69); None when it cannot."""
        lister = getattr(self.store, "list_ids", None)
        if not callable(lister):
            return None
        prefix = _key(agent_name, "")
        keys = await lister(prefix=prefix, limit=limit)
        return [key[len(prefix) :] for key in keys if key.startswith(prefix)]

    async def forget(self, agent_name: str, conversation_id: str) -> None:
        """Delete a conversation's session."""
        await self.store.delete(_key(agent_name, conversation_id))


def conversation_key(agent_name: str, conversation_id: str) -> str:
    """The store key of a conversation (HS-141)."""
    return _key(agent_name, conversation_id)
