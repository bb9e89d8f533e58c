"""minagent-redis: conversation history and sessions in Redis (spec/sessions.md, RD
rules).

Theory of operation
-------------------
`RedisHistoryProvider` keeps a session's messages in one Redis list,
``{key_prefix}{source_id}:{session_id}``, one element per message (our versioned JSON).
A run's messages are appended in one MULTI/EXEC transaction, after the run succeeded
(SE-5):
RPUSH of all of them, then EXPIRE when a ``ttl`` is set. With ``max_messages`` the
append is an optimistic transaction: WATCH the list, read it, compute the cut that keeps
at most ``max_messages`` and never starts on a tool result (so a call is never split
from its result), then MULTI / RPUSH / LTRIM / EXPIRE / EXEC, retried when another
writer changed the list meanwhile. `RedisSessionStore` keeps `AgentSession.to_dict()`
JSON under ``{key_prefix}session:{session_id}`` (SET with EX when ``ttl`` is set), and
lists its ids (RD-11) from the sorted set ``{key_prefix}session-index``: each ``set`` is
one Lua script that writes the session, takes a stamp from the counter
``{key_prefix}session-stamp`` (INCR) and scores the id's index entry with it; ``delete``
removes both in one MULTI/EXEC. Listing pages through the index newest first by score,
keeps the ids with the prefix whose session key exists (EXISTS, in one pipeline a page),
and removes the entries of sessions that expired (WATCH, so one set again meanwhile
stays). Prefixes are filtered in Python over the pages rather than kept in a second,
lexicographic index: a listing is ordered by stamp, which a lexicographic range cannot
give, and one index keeps ``set`` to one write.

A save that names its run (``run_key=``, or ``state["run_key"]``, SE-40) is stored once.
The hash ``{key_prefix}runs:{source_id}:{session_id}`` counts the messages ever pushed
to the session's list (field ``""``, raised by every append in its transaction, lowered
by a take-back) and holds each keyed run's count before it. The keyed append is an
optimistic transaction that WATCHes the hash (and the list, with ``max_messages``),
reads the run's field, and appends nothing when it is there; otherwise MULTI / RPUSH (/
LTRIM) / HSET / HINCRBY / EXPIRE / EXEC, retried when another writer changed them, so of
concurrent saves of one run exactly one appends. A keyed load drops the last ``pushed -
before`` elements: the run's own and those pushed after it, so a recovered run sees the
history without its own messages; trimming drops from the front and keeps this exact
(RD-9). (A take-back of messages pushed before a keyed run, from another process, would
shift that run's place by their number; SE-20 takes back a run's own, newest messages.)

A Redis that cannot be reached is a `RedisUnavailableError` naming the URL, for every
call (``clear`` and ``delete`` included); a failed append writes nothing, so once Redis
is back the stored history is exactly the runs that succeeded. What is stored and cannot
be read — not JSON, nested too deeply, a key of another type, a run count that is not an
integer — is a `SerializationError` naming the key and element (RD-7). Any other refusal
— a read-only replica, ``maxmemory`` reached, an ACL that denies the key or command, a
refused login — is a `RedisCommandError` with Redis' error code and words, naming the
server and the key (RD-10). ``discard_messages`` takes a run's append back when a later
save of the same run failed (SE-20, RD-8).
"""

from __future__ import annotations

import ast
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as aioredis
from redis import exceptions as errors
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError, WatchError
from redis.exceptions import TimeoutError as RedisTimeoutError

from minagent import (
    AgentSession,
    HistoryProvider,
    Message,
    MinagentError,
    SerializationError,
)
from minagent.stores.memory import check_listing

__all__ = [
    "RedisCommandError",
    "RedisHistoryProvider",
    "RedisSessionStore",
    "RedisUnavailableError",
]


class RedisUnavailableError(MinagentError, ConnectionError):
    """Redis could not be reached; nothing was written (RD-4)."""


class RedisCommandError(MinagentError, RuntimeError):
    """Redis refused a command for a reason that is not the stored data (RD-10):
    ``code`` is Redis' error code (``"READONLY"``, ``"OOM"``, ``"NOPERM"``,
    ``"WRONGPASS"``, ``"ERR"``, ...), ``key`` the key the call was about, ``command``
    the refused command's name when known, ``reply`` Redis' words."""

    def __init__(
        self, server: str, key: str, code: str, reply: str, command: str | None
    ) -> None:
        what = f"{command} on {key!r}" if command else f"a command on {key!r}"
        super().__init__(f"{server} refused {what}: {code} {reply}")
        self.server, self.key, self.code, self.reply, self.command = (
            server,
            key,
            code,
            reply,
            command,
        )


# RD-10: the error codes redis-py turns into classes of their own (and strips from the
# message)
_CODES: tuple[tuple[type[Exception], str], ...] = (
    (errors.ReadOnlyError, "READONLY"),
    (errors.NoPermissionError, "NOPERM"),
    (errors.OutOfMemoryError, "OOM"),
    (errors.ExecAbortError, "EXECABORT"),
    (errors.NoScriptError, "NOSCRIPT"),
    (errors.MasterDownError, "MASTERDOWN"),
    (errors.ClusterDownError, "CLUSTERDOWN"),
    (errors.TryAgainError, "TRYAGAIN"),
    (errors.ClusterCrossSlotError, "CROSSSLOT"),
    (errors.MovedError, "MOVED"),
    (errors.AskError, "ASK"),
)
# RD-7: about what is stored
_DATA_ERRORS = ("WRONGTYPE", "ERR hash value is not an integer")


def _refusal(exc: Exception) -> tuple[str, str, str | None]:
    """RD-10: Redis' error code, its words and the refused command (named when redis-py
    annotated a pipeline's error: ``Command # n (CMD args...) of pipeline caused error:
    (reply,)``)."""
    text, command = str(exc.args[0]) if exc.args else str(exc), None
    head, marker, tail = text.partition(" of pipeline caused error: ")
    if marker and head.startswith("Command # ") and "(" in head:
        command = head.split("(", 1)[1].split(" ", 1)[0].rstrip(")").upper() or None
        try:
            original = ast.literal_eval(tail)
            text = (
                str(original[0]) if isinstance(original, tuple) and original else tail
            )
        except (ValueError, SyntaxError):
            text = tail
    if isinstance(exc, errors.AuthenticationError):
        return ("NOAUTH" if "required" in text.lower() else "WRONGPASS"), text, command
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code, text, command
    first, _, rest = text.partition(" ")
    if first.isupper() and first.isalpha():
        return first, rest, command
    return "ERR", text, command


def _client(url: str | None, client: aioredis.Redis | None) -> aioredis.Redis:
    if client is not None:
        return client
    return aioredis.Redis.from_url(url or "redis://localhost:6379/0")


def _describe(client: aioredis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis at {kwargs.get('host', '?')}:{kwargs.get('port', '?')}"


@asynccontextmanager
async def _typed(client: aioredis.Redis, key: str) -> AsyncIterator[None]:
    """RD-4, RD-7, RD-10: redis' own errors as ours: a refused login, unreachable, a key
    holding another type (the stored data), or any other refusal."""
    try:
        yield
    except (errors.AuthenticationError, errors.AuthorizationError) as exc:
        raise RedisCommandError(_describe(client), key, *_refusal(exc)) from exc
    except (RedisConnectionError, RedisTimeoutError) as exc:
        raise RedisUnavailableError(
            f"{_describe(client)} is unavailable: {exc}"
        ) from exc
    except ResponseError as exc:
        code, reply, command = _refusal(exc)
        if f"{code} {reply}".startswith(_DATA_ERRORS):
            raise SerializationError(key, f"Redis refused it: {code} {reply}") from None
        raise RedisCommandError(_describe(client), key, code, reply, command) from exc


def _loaded(item: bytes | str, where: str) -> Any:
    """RD-7: a stored element's JSON, or a `SerializationError` naming it."""
    try:
        return json.loads(item)
    except (ValueError, RecursionError) as exc:
        problem = (
            "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        )
        raise SerializationError(
            where, f"the stored data is not valid JSON ({problem})"
        ) from None


def _message(item: bytes | str, where: str) -> Message:
    try:
        return Message.from_dict(_loaded(item, where), path=where)
    except RecursionError:
        raise SerializationError(
            where, "the stored message is nested too deeply"
        ) from None


def _count(value: bytes | str | None, where: str) -> int:
    """RD-7: a count of the runs hash (RD-9), or a `SerializationError` naming it."""
    try:
        return int(value or 0)
    except ValueError:
        raise SerializationError(
            where, f"the stored count is not an integer ({value!r:.60})"
        ) from None


def _check_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
    return session_id


def _check_ttl(ttl: int | None) -> int | None:
    if ttl is not None and (
        not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0
    ):
        raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
    return ttl


# RD-9: the field of the runs hash that counts the messages pushed (a run key is never
# empty)
_PUSHED = ""


def _run_key(run_key: object, state: dict[str, Any] | None) -> str | None:
    """SE-40, RD-9: the run a save names, ``run_key=`` or else ``state["run_key"]``;
    None when none."""
    key = run_key if run_key is not None else (state or {}).get("run_key")
    if key is not None and (not isinstance(key, str) or not key):
        raise ValueError(f"run_key must be a non-empty string, got {key!r}")
    return key


def _is_result(message: dict[str, Any]) -> bool:
    return any(
        isinstance(c, dict)
        and c.get("type") in ("function_result", "function_approval_response")
        for c in message.get("contents", [])
    )


def safe_cut(messages: Sequence[dict[str, Any]], keep: int) -> int:
    """The index of the first message kept so that at most ``keep`` remain and the kept
    part does not start with a tool result (whose call would be gone) (RD-2)."""
    start = max(0, len(messages) - keep)
    while start < len(messages) and _is_result(messages[start]):
        start += 1
    return start


class RedisHistoryProvider(HistoryProvider):
    """A session's messages in Redis (RD-1): ``RedisHistoryProvider("history",
    url="redis://...")``."""

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
        if max_messages is not None and (
            not isinstance(max_messages, int) or max_messages <= 0
        ):
            raise ValueError(
                f"max_messages must be a positive int, got {max_messages!r}"
            )
        self.redis = _client(url, client)
        self.key_prefix = key_prefix
        self.ttl = _check_ttl(ttl)
        self.max_messages = max_messages

    def key(self, session_id: str) -> str:
        return f"{self.key_prefix}{self.source_id}:{_check_id(session_id)}"

    def runs_key(self, session_id: str) -> str:
        """RD-9: the hash of the session's run keys (each the count of messages pushed
        before that run; the field "" the count pushed in all)."""
        return f"{self.key_prefix}runs:{self.source_id}:{_check_id(session_id)}"

    async def get_messages(
        self,
        session_id: str | None,
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> list[Message]:
        """The session's messages in order; for a run that names itself, only those
        pushed before its own (RD-9)."""
        key, run = self.key(_check_id(session_id)), _run_key(run_key, state)
        async with _typed(self.redis, key):
            if run is None:
                raw: list[bytes | str] = await self.redis.lrange(key, 0, -1)
            else:
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.lrange(key, 0, -1)
                    pipe.hmget(self.runs_key(_check_id(session_id)), [run, _PUSHED])
                    raw, (before, pushed) = await pipe.execute()
                # the run's messages and those pushed after them are the last ones
                if before is not None:
                    runs = self.runs_key(_check_id(session_id))
                    since = _count(pushed, f"{runs}[{_PUSHED!r}]") - _count(
                        before, f"{runs}[{run!r}]"
                    )
                    raw = raw[: max(0, len(raw) - since)]
        return [_message(item, f"{key}[{i}]") for i, item in enumerate(raw)]

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        """All of a run's messages in one transaction, or none (RD-3); nothing when the
        run ``run_key`` (or ``state["run_key"]``) names is stored already (RD-9)."""
        key, run = self.key(_check_id(session_id)), _run_key(run_key, state)
        # fails before anything is sent
        data = [json.dumps(m.to_dict(), ensure_ascii=False) for m in messages]
        if not data:
            return
        async with _typed(self.redis, key):
            await self._append(key, self.runs_key(_check_id(session_id)), run, data)

    async def _append(
        self, key: str, runs: str, run: str | None, data: list[str]
    ) -> None:
        """RD-3, RD-9: RPUSH ``data`` (trimmed with ``max_messages``) and count it in
        ``runs``; a keyed append records its run and appends nothing when the run is
        there (optimistic, retried)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    watched = [
                        *([runs] if run is not None else []),
                        *([key] if self.max_messages else []),
                    ]
                    pushed = 0
                    if watched:
                        await pipe.watch(*watched)
                    if run is not None:
                        before, total = await pipe.hmget(runs, [run, _PUSHED])
                        if before is not None:
                            # this run's messages are here already (leaving the pipeline
                            # unwatches)
                            return
                        pushed = _count(total, f"{runs}[{_PUSHED!r}]")
                    start = 0
                    if self.max_messages is not None:
                        stored: list[bytes | str] = await pipe.lrange(key, 0, -1)
                        every = [
                            _loaded(item, f"{key}[{i}]")
                            for i, item in enumerate([*stored, *data])
                        ]
                        start = safe_cut(every, self.max_messages)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.rpush(key, *data)
                    if start:
                        pipe.ltrim(key, start, -1)
                    if run is not None:
                        pipe.hset(runs, run, pushed)
                    pipe.hincrby(runs, _PUSHED, len(data))
                    if self.ttl is not None:
                        pipe.expire(key, self.ttl)
                        pipe.expire(runs, self.ttl)
                    await pipe.execute()
                    return
                except WatchError:
                    # another writer changed the list or the runs meanwhile: read again
                    continue

    async def discard_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        """SE-20, RD-8: take back the newest elements equal to ``messages`` (what this
        run appended), and the run's key (RD-9)."""
        key, run = self.key(_check_id(session_id)), _run_key(run_key, state)
        data = [json.dumps(m.to_dict(), ensure_ascii=False) for m in messages]
        if not data:
            return
        async with (
            _typed(self.redis, key),
            self.redis.pipeline(transaction=True) as pipe,
        ):
            while True:
                try:
                    await pipe.watch(key)
                    tail = [
                        i.decode() if isinstance(i, bytes) else i
                        for i in await pipe.lrange(key, -len(data) - 1000, -1)
                    ]
                    starts = [
                        s
                        for s in range(len(tail) - len(data), -1, -1)
                        if tail[s : s + len(data)] == data
                    ]
                    if not starts and run is None:
                        return
                    pipe.multi()  # type: ignore[no-untyped-call]
                    marker = f"minagent-discarded:{id(pipe)}"
                    # mark the run's elements, then remove the marks
                    for offset in range(len(data) if starts else 0):
                        pipe.lset(key, starts[0] + offset - len(tail), marker)
                    pipe.lrem(key, 0, marker)
                    runs = self.runs_key(_check_id(session_id))
                    # as if never pushed, so the runs before keep their places (RD-9)
                    if starts:
                        pipe.hincrby(runs, _PUSHED, -len(data))
                    if run is not None:
                        pipe.hdel(runs, run)
                    await pipe.execute()
                    return
                except WatchError:
                    continue  # another writer changed the list meanwhile: read again

    async def clear(self, session_id: str) -> None:
        """Forget the session's messages and run keys (RD-9)."""
        key = self.key(session_id)
        async with _typed(self.redis, key):
            await self.redis.delete(key, self.runs_key(session_id))

    async def aclose(self) -> None:
        await self.redis.aclose()


def _member(member: bytes | str, index: str) -> str:
    """RD-7, RD-11: an id of the index as text, or a `SerializationError` naming it."""
    if isinstance(member, str):
        return member
    try:
        return member.decode()
    except UnicodeDecodeError:
        raise SerializationError(
            index, f"a stored id is not UTF-8 ({member!r:.60})"
        ) from None


# RD-11: how many index entries one listing round reads
_PAGE = 200

# RD-5, RD-11: a set, atomic and in one round trip (so one write to Redis' append-only
# file): the session (SET first, so a refused write writes nothing: a script is not rolled
# back), then its stamp from the counter (INCR) and its index entry with that score; with
# a ttl the index and the counter expire with the last set, when every session in the
# index has expired too. KEYS: session, index, counter; ARGV: data, id, ttl or "".
_SET = """
if ARGV[3] == '' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
end
local stamp = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], stamp, ARGV[2])
if ARGV[3] ~= '' then
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  redis.call('EXPIRE', KEYS[3], ARGV[3])
end
return stamp
"""


class RedisSessionStore:
    """Sessions by id in Redis (RD-5): ``get`` (None when absent), ``set``, ``delete``
    (SE-11), and ``list_ids`` (SE-69, RD-11)."""

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
        self._set_script = self.redis.register_script(_SET)

    def key(self, session_id: str) -> str:
        return f"{self.key_prefix}session:{_check_id(session_id)}"

    # RD-11: no ":" after the prefix, so neither name is a session key nor a key of a
    # RedisHistoryProvider (``{source_id}:{session_id}``, ``runs:...``) under the same
    # prefix
    @property
    def index_key(self) -> str:
        """RD-11: the sorted set of the stored ids, scored by their last set's stamp."""
        return f"{self.key_prefix}session-index"

    @property
    def stamp_key(self) -> str:
        """RD-11: the counter each ``set`` raises for its stamp."""
        return f"{self.key_prefix}session-stamp"

    async def get(self, session_id: str) -> AgentSession | None:
        key = self.key(session_id)
        async with _typed(self.redis, key):
            raw = await self.redis.get(key)
        if raw is None:
            return None
        try:
            return AgentSession.from_dict(_loaded(raw, key))
        except RecursionError:
            raise SerializationError(
                key, "the stored session is nested too deeply"
            ) from None
        except SerializationError as exc:
            if exc.path.startswith(key):
                raise
            # RD-7: from_dict names only its own path
            raise SerializationError(key, str(exc)) from exc

    async def set(self, session_id: str, session: AgentSession) -> None:
        """Store the session and its index entry at once (RD-5, RD-11)."""
        key = self.key(session_id)
        data = json.dumps(session.to_dict(), ensure_ascii=False)
        async with _typed(self.redis, key):
            await self._set_script(
                keys=[key, self.index_key, self.stamp_key],
                args=[data, session_id, "" if self.ttl is None else self.ttl],
            )

    async def delete(self, session_id: str) -> None:
        """Forget the session and its index entry in one transaction (RD-11)."""
        key = self.key(session_id)
        async with (
            _typed(self.redis, key),
            self.redis.pipeline(transaction=True) as pipe,
        ):
            pipe.delete(key)
            pipe.zrem(self.index_key, session_id)
            await pipe.execute()

    async def list_ids(self, prefix: str = "", limit: int = 100) -> list[str]:
        """SE-69, RD-11: the stored ids starting with ``prefix``, the last set first, at
        most ``limit``; no session is loaded."""
        check_listing(prefix, limit)
        index = self.index_key
        out: list[str] = []
        # RD-11: pages by score (below the last stamp read), so entries set or pruned
        # while listing never shift a page
        below: str = "+inf"
        async with _typed(self.redis, index):
            while len(out) < limit:
                raw: list[Any] = await self.redis.zrevrangebyscore(
                    index, below, "-inf", start=0, num=_PAGE, withscores=True
                )
                page = [(member, float(score)) for member, score in raw]
                if not page:
                    break
                below = f"({page[-1][1]!r}"
                ids = [_member(i, index) for i, _ in page]
                wanted = [i for i in ids if i.startswith(prefix)]
                if not wanted:
                    continue
                async with self.redis.pipeline(transaction=False) as pipe:
                    for session_id in wanted:
                        pipe.exists(self.key(session_id))
                    present = await pipe.execute()
                found = [i for i, there in zip(wanted, present, strict=True) if there]
                if len(found) < len(wanted):
                    kept = set(found)
                    await self._prune([i for i in wanted if i not in kept])
                out.extend(found[: limit - len(out)])
        return out

    async def _prune(self, gone: list[str]) -> None:
        """RD-11: remove the index entries of sessions that are gone, unless one was
        set again meanwhile (then nothing is removed this time)."""
        keys = [self.key(session_id) for session_id in gone]
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(*keys)
                if await pipe.exists(*keys):
                    return
                pipe.multi()  # type: ignore[no-untyped-call]
                pipe.zrem(self.index_key, *gone)
                await pipe.execute()
            except WatchError:
                # a session came back between the check and the removal: keep them all
                return
            except ResponseError:
                # tidying only: a refused removal (a read-only replica) does not fail
                # the listing, which answers without the gone entries anyway
                return

    async def aclose(self) -> None:
        await self.redis.aclose()
