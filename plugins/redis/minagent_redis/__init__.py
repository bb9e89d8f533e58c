"""minagent-redis: conversation history and sessions in Redis (spec/sessions.md, RD rules).

Theory of operation
-------------------
`RedisHistoryProvider` keeps a session's messages in one Redis list,
``{key_prefix}{source_id}:{session_id}``, one element per message (our versioned JSON).
A run's messages are appended in one MULTI/EXEC transaction, after the run succeeded (SE-5):
RPUSH of all of them, then EXPIRE when a ``ttl`` is set. With ``max_messages`` the append is an
optimistic transaction: WATCH the list, read it, compute the cut that keeps at most
``max_messages`` and never starts on a tool result (so a call is never split from its result),
then MULTI / RPUSH / LTRIM / EXPIRE / EXEC, retried when another writer changed the list
meanwhile. `RedisSessionStore` keeps `AgentSession.to_dict()` JSON under
``{key_prefix}session:{session_id}`` (SET with EX when ``ttl`` is set).

A Redis that cannot be reached is a `RedisUnavailableError` naming the URL; a failed append
writes nothing, so once Redis is back the stored history is exactly the runs that succeeded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.exceptions import WatchError

from minagent import AgentSession, HistoryProvider, Message, MinagentError

__all__ = ["RedisHistoryProvider", "RedisSessionStore", "RedisUnavailableError"]


class RedisUnavailableError(MinagentError, ConnectionError):
    """Redis could not be reached; nothing was written (RD-4)."""


def _client(url: str | None, client: aioredis.Redis | None) -> aioredis.Redis:
    if client is not None:
        return client
    return aioredis.Redis.from_url(url or "redis://localhost:6379/0")


def _describe(client: aioredis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis at {kwargs.get('host', '?')}:{kwargs.get('port', '?')}"


def _check_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
    return session_id


def _check_ttl(ttl: int | None) -> int | None:
    if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0):
        raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
    return ttl


def _is_result(message: dict[str, Any]) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") in ("function_result", "function_approval_response")
        for c in message.get("contents", [])
    )


def safe_cut(messages: Sequence[dict[str, Any]], keep: int) -> int:
    """The index of the first message kept so that at most ``keep`` remain and the kept part does
    not start with a tool result (whose call would be gone) (RD-2)."""
    start = max(0, len(messages) - keep)
    while start < len(messages) and _is_result(messages[start]):
        start += 1
    return start


class RedisHistoryProvider(HistoryProvider):
    """A session's messages in Redis (RD-1): ``RedisHistoryProvider("history", url="redis://...")``."""

    def __init__(
        self,
        source_id: str = "redis_history",
        *,
        url: str | None = None,
        client: aioredis.Redis | None = None,
        key_prefix: str = "minagent:",
        ttl: int | None = None,
        max_messages: int | None = None,
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
        if max_messages is not None and (not isinstance(max_messages, int) or max_messages <= 0):
            raise ValueError(f"max_messages must be a positive int, got {max_messages!r}")
        self.redis = _client(url, client)
        self.key_prefix = key_prefix
        self.ttl = _check_ttl(ttl)
        self.max_messages = max_messages

    def key(self, session_id: str) -> str:
        return f"{self.key_prefix}{self.source_id}:{_check_id(session_id)}"

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        key = self.key(_check_id(session_id))
        try:
            raw: list[bytes | str] = await self.redis.lrange(key, 0, -1)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise RedisUnavailableError(f"{_describe(self.redis)} is unavailable: {exc}") from exc
        return [Message.from_dict(json.loads(item), path=f"{key}[{i}]") for i, item in enumerate(raw)]

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """All of a run's messages in one transaction, or none (RD-3)."""
        key = self.key(_check_id(session_id))
        data = [json.dumps(m.to_dict(), ensure_ascii=False) for m in messages]  # fails before anything is sent
        if not data:
            return
        try:
            if self.max_messages is None:
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.rpush(key, *data)
                    if self.ttl is not None:
                        pipe.expire(key, self.ttl)
                    await pipe.execute()
                return
            await self._append_trimmed(key, data, self.max_messages)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise RedisUnavailableError(f"{_describe(self.redis)} is unavailable: {exc}") from exc

    async def _append_trimmed(self, key: str, data: list[str], keep: int) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    stored: list[bytes | str] = await pipe.lrange(key, 0, -1)
                    every = [json.loads(item) for item in stored] + [json.loads(item) for item in data]
                    start = safe_cut(every, keep)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.rpush(key, *data)
                    if start:
                        pipe.ltrim(key, start, -1)
                    if self.ttl is not None:
                        pipe.expire(key, self.ttl)
                    await pipe.execute()
                    return
                except WatchError:
                    continue  # another writer appended meanwhile: read again

    async def clear(self, session_id: str) -> None:
        await self.redis.delete(self.key(session_id))

    async def aclose(self) -> None:
        await self.redis.aclose()


class RedisSessionStore:
    """Sessions by id in Redis (RD-5): ``get`` (None when absent), ``set``, ``delete`` (SE-11)."""

    def __init__(
        self,
        *,
        url: str | None = None,
        client: aioredis.Redis | None = None,
        key_prefix: str = "minagent:",
        ttl: int | None = None,
    ) -> None:
        self.redis = _client(url, client)
        self.key_prefix = key_prefix
        self.ttl = _check_ttl(ttl)

    def key(self, session_id: str) -> str:
        return f"{self.key_prefix}session:{_check_id(session_id)}"

    async def get(self, session_id: str) -> AgentSession | None:
        try:
            raw = await self.redis.get(self.key(session_id))
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise RedisUnavailableError(f"{_describe(self.redis)} is unavailable: {exc}") from exc
        return None if raw is None else AgentSession.from_dict(json.loads(raw))

    async def set(self, session_id: str, session: AgentSession) -> None:
        key = self.key(session_id)
        data = json.dumps(session.to_dict(), ensure_ascii=False)
        try:
            await self.redis.set(key, data, ex=self.ttl)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise RedisUnavailableError(f"{_describe(self.redis)} is unavailable: {exc}") from exc

    async def delete(self, session_id: str) -> None:
        await self.redis.delete(self.key(session_id))

    async def aclose(self) -> None:
        await self.redis.aclose()
