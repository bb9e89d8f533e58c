"""Sessions, context providers and history providers (spec/sessions.md).

Rules
-----
1. A session holds ids and ``state``, never a provider; each provider owns its ``state``
   entry.
2. A session serves one run at a time (SE-12): `claim` and `release` are the only way
   in; a claim waits briefly for a run that is letting go (SE-19).
3. Nothing of a failed run is stored (SE-5): a history provider's save waits until every
   provider's ``after_run`` succeeded, and saves made before one that failed are
   discarded (SE-20).

Theory of operation
-------------------
An `AgentSession` is a conversation between runs: an id (``session_id``), optionally the
id the service keeps the conversation under (``service_session_id``), and ``state``, a
JSON-native dict that the agent's context providers share; each provider owns the entry
under its ``source_id``. A session holds no provider and no message of its own:
messages live wherever a history provider keeps them — in the session's state
(`InMemoryHistoryProvider`, the default), in a SQLite file, in Redis.

One run is one `SessionContext`: the agent creates it, every provider's ``before_run``
adds to it (messages per source, instructions, tools, chat/function middleware) in
registration order, the client is called with what was collected, the response is set on
it, and every provider's ``after_run`` runs in reverse order (SE-3). So a history
provider writes a run's messages only after the run succeeded, and a run that fails or
is cancelled writes nothing (SE-5).

The thread-era spelling (`AgentThread`, ``invoking``/``invoked``) is this same
machinery: a thread is a session whose messages are the default in-memory provider's
(SE-9), and `ContextProvider`'s default ``before_run``/``after_run`` call
``invoking``/``invoked`` (SE-10).
"""

from __future__ import annotations

import asyncio
import copy
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from . import _edge
from ._exceptions import MiddlewareException, MinagentError, SerializationError
from ._middleware import categorize_middleware
from ._types import FORMAT_VERSION, Message
from ._wire import _expect_mapping, _expect_type, _get

__all__ = [
    "STATE_TYPES_BY_CLASS",
    "STATE_TYPES_BY_ID",
    "AgentSession",
    "ContextProvider",
    "HistoryProvider",
]
__all__ += [
    "InMemoryHistoryProvider",
    "SessionBusyError",
    "SessionContext",
    "check_session_id",
    "decode_state",
]
__all__ += ["encode_state", "source_id_of"]


class SessionBusyError(MinagentError, RuntimeError):
    """A second run on a session that is running already (SE-12)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r} is already running a run: await that run (or finish its stream) "
            "before starting another on the same session, or use a separate session"
        )
        self.session_id = session_id


# -- state as JSON ------------------------------------------------------------------------------


# SE-2: the classes registered to live in session state, by type id and by class: each
# entry's ``encode(value, path, encode_state)`` / ``decode(data, path, decode_state)``
# (minagent.upstream.state)
STATE_TYPES_BY_ID: dict[str, Any] = {}
STATE_TYPES_BY_CLASS: dict[type[Any], Any] = {}


def encode_state(value: Any, path: str = "state") -> Any:
    """State as plain JSON (SE-2): JSON-native values as they are (tuples become lists),
    `Message` objects as their versioned dict; anything else is a `SerializationError`
    naming its path."""
    try:
        return _encode(value, path)
    except RecursionError:
        raise SerializationError(path, "nested too deeply") from None


def _encode(value: Any, path: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SerializationError(
                path, f"{value!r} is not a finite float: JSON has no NaN or Infinity"
            )
        return value
    if isinstance(value, Message):
        return copy.deepcopy(value.to_dict())
    registered = STATE_TYPES_BY_CLASS.get(type(value))
    if registered is not None:
        return registered.encode(value, path, _encode)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise SerializationError(path, f"key {key!r} is not a string")
            out[key] = _encode(item, f"{path}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [_encode(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise SerializationError(
        path,
        f"{type(value).__name__} is not JSON-native: keep JSON values or Message objects in session state, "
        f"or register_state_type({type(value).__name__})",
    )


def decode_state(value: Any, path: str = "state") -> Any:
    """The inverse of `encode_state`: a dict of type ``"message"`` becomes a `Message`
    (SE-2)."""
    try:
        return _decode(copy.deepcopy(value), path)
    except RecursionError:
        raise SerializationError(path, "nested too deeply") from None


def _decode(value: Any, path: str) -> Any:
    if isinstance(value, Mapping):
        if value.get("type") == "message":
            return Message.from_dict(value, path=path)
        kind = value.get("type")
        registered = STATE_TYPES_BY_ID.get(kind) if isinstance(kind, str) else None
        if registered is not None:
            return registered.decode(value, path, _decode)
        return {key: _decode(item, f"{path}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item, f"{path}[{i}]") for i, item in enumerate(value)]
    return value


# -- the session --------------------------------------------------------------------------------


def _new_id() -> str:
    """A random (version 4) UUID as text, without importing `uuid` (import time)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class AgentSession:
    """A conversation: its id, the service's id for it, and the providers' shared state
    (SE-1)."""

    # SE-12: what a run claims, when not the session id (AG-14)
    _claim_key: str | None = None
    _checked: Sequence[Message] = ()  # SE-51: the last history a run of it found valid

    def __init__(
        self,
        *,
        session_id: str | None = None,
        # a dict: a structured id, SE-65
        service_session_id: str | dict[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        if session_id is not None and (
            not isinstance(session_id, str) or not session_id
        ):
            raise ValueError(
                f"session_id must be a non-empty string, got {session_id!r}"
            )
        self._session_id = session_id or _new_id()
        self.service_session_id = service_session_id
        self.state: dict[str, Any] = dict(state or {})

    @property
    def session_id(self) -> str:
        return self._session_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._session_id}>"

    def to_dict(self) -> dict[str, Any]:
        """Versioned plain JSON data; `from_dict` restores an equal session (SE-2)."""
        out: dict[str, Any] = {
            "type": "session",
            "version": FORMAT_VERSION,
            "session_id": self._session_id,
        }
        if self.service_session_id is not None:
            out["service_session_id"] = copy.deepcopy(self.service_session_id)
        out["state"] = encode_state(self.state)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentSession:
        """The session `to_dict()` wrote; shares nothing with ``data``; bad data is a
        `SerializationError` naming the path (SE-2)."""
        path = "session"
        data = _expect_mapping(data, path)
        _expect_type(data, "session", path)
        _get(data, "version", int, path)
        session_id = _get(data, "session_id", str, path)
        if not session_id:
            raise SerializationError(f"{path}.session_id", "expected a non-empty str")
        state = decode_state(_get(data, "state", dict, path) or {}, f"{path}.state")
        # SE-65
        service = copy.deepcopy(_get(data, "service_session_id", (str, dict), path))
        return cls(session_id=session_id, service_session_id=service, state=state)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentSession):
            return NotImplemented
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


_RUNNING: set[str] = set()
CLAIM_WAIT = 1.0  # seconds a run waits for its session's previous run to let go (SE-19)


async def claim(session: AgentSession | None) -> str | None:
    """Claim ``session`` for a run (SE-12): its key, to pass to `release`. A session
    another run holds is waited for, up to `CLAIM_WAIT` seconds (SE-19), then
    `SessionBusyError`."""
    if session is None:
        return None
    # AG-16: an as_tool run's own claim
    key = getattr(session, "_claim_key", None) or session.session_id
    # a few loop turns, then every 10 ms
    for attempt in range(8 + int(CLAIM_WAIT * 100)):
        if key not in _RUNNING:
            break
        await asyncio.sleep(0 if attempt < 8 else 0.01)
    else:
        raise SessionBusyError(key)
    _RUNNING.add(key)
    return key


def release(key: str | None) -> None:
    if key is not None:
        _RUNNING.discard(key)


# -- one run's context ------------------------------------------------------------------------


class SessionContext:
    """What the providers of one run add and see (SE-3): the run's input, the messages
    each provider added (by ``source_id``, in provider order), instructions, tools,
    chat/function middleware, the run's options (read only), and after the run the
    response."""

    def __init__(
        self,
        *,
        session_id: str | None = None,
        service_session_id: str | dict[str, Any] | None = None,
        input_messages: list[Message],
        context_messages: dict[str, list[Message]] | None = None,
        instructions: list[str] | None = None,
        tools: list[Any] | None = None,
        middleware: dict[str, list[Any]] | None = None,
        options: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.service_session_id = service_session_id
        self.input_messages = input_messages
        self.context_messages: dict[str, list[Message]] = context_messages or {}
        self.instructions: list[str] = instructions or []
        self.tools: list[Any] = tools or []
        self.middleware: dict[str, list[Any]] = {}
        for source_id, items in (middleware or {}).items():
            self.extend_middleware(source_id, items)
        self.options: dict[str, Any] = options or {}
        self.metadata: dict[str, Any] = metadata or {}
        self._response: Any = None
        # what the caller passed as thread=/session= (None: no session), for invoking()
        self._thread: Any = None
        # the run's, made last (SE-20)
        self._saves: list[tuple[Any, str | None, list[Message], Any]] | None = None

    @property
    def response(self) -> Any:
        """The run's `AgentResponse`, set before ``after_run`` (None before)."""
        return self._response

    def extend_messages(
        self,
        source: str | object,
        messages: Sequence[Message],
        *,
        origin_session_ids: Sequence[str] | None = None,
    ) -> None:
        """Add messages from ``source`` (a ``source_id`` or a provider), as copies; with
        ``origin_session_ids`` (content from other sessions) each copy says so in
        ``additional_properties["_attribution"]``, as upstream marks it (SE-3)."""
        source_id = source if isinstance(source, str) else source_id_of(source)
        copies = [m.with_contents(m.contents) for m in messages]
        for copy_ in copies if origin_session_ids else ():
            given = copy_.additional_properties.get("_attribution")
            mark = (
                dict(given) if isinstance(given, Mapping) else {"source_id": source_id}
            )
            if not isinstance(source, str) and not isinstance(given, Mapping):
                mark["source_type"] = type(source).__name__
            origins = [*mark.get("origin_session_ids", ()), *(origin_session_ids or ())]
            # each once, in order
            mark["origin_session_ids"] = list(dict.fromkeys(origins))
            copy_.additional_properties["_attribution"] = mark
        self.context_messages.setdefault(source_id, []).extend(copies)

    def extend_instructions(
        self, source_id: str, instructions: str | Sequence[str]
    ) -> None:
        self.instructions.extend(
            [instructions] if isinstance(instructions, str) else instructions
        )

    def extend_tools(self, source_id: str, tools: Sequence[Any]) -> None:
        self.tools.extend(tools)

    def extend_middleware(self, source_id: str, middleware: Any) -> None:
        """Chat or function middleware for this run; agent middleware is a
        `MiddlewareException` (SE-3)."""
        items = (
            list(middleware) if isinstance(middleware, list | tuple) else [middleware]
        )
        if categorize_middleware(items).agent:
            raise MiddlewareException(
                f"Context providers may only add chat or function middleware: {source_id!r} added agent "
                "middleware (agent middleware belongs to Agent(middleware=...))"
            )
        self.middleware.setdefault(source_id, []).extend(items)

    def get_middleware(self) -> list[Any]:
        return [item for items in self.middleware.values() for item in items]

    def get_messages(
        self,
        *,
        sources: set[str] | None = None,
        exclude_sources: set[str] | None = None,
        include_input: bool = False,
        include_response: bool = False,
    ) -> list[Message]:
        """Context messages in provider order, filtered by source, then optionally input
        and response."""
        out: list[Message] = []
        for source_id, messages in self.context_messages.items():
            if (sources is not None and source_id not in sources) or (
                exclude_sources is not None and source_id in exclude_sources
            ):
                continue
            out.extend(messages)
        if include_input:
            out.extend(self.input_messages)
        if include_response and self._response is not None:
            out.extend(self._response.messages)
        return out


# -- providers ----------------------------------------------------------------------------------


def source_id_of(provider: object) -> str:
    """A provider's ``source_id``; a thread-era provider without one is known by its
    class name."""
    source_id = getattr(provider, "source_id", None)
    return (
        source_id
        if isinstance(source_id, str) and source_id
        else type(provider).__name__
    )


class ContextProvider:
    """Adds context before a run and observes its result after (SE-4, AG-6).

    Override either pair: ``before_run``/``after_run`` (keyword-only, with this
    provider's ``state``) or the thread-era ``invoking``/``invoked``; the default
    ``before_run`` and ``after_run`` call ``invoking`` and ``invoked`` (SE-10). All four
    default to doing nothing.
    """

    source_id: str | None = None

    def __init__(self, source_id: str | None = None) -> None:
        if source_id is not None and (not isinstance(source_id, str) or not source_id):
            raise ValueError(f"source_id must be a non-empty string, got {source_id!r}")
        self.source_id = source_id or type(self).__name__

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        # SE-10: a thread-era provider
        if type(self).invoking is not ContextProvider.invoking:
            await _edge.current().invoking_as_before_run(
                self, agent=agent, context=context
            )

    async def after_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        if type(self).invoked is not ContextProvider.invoked:
            await _edge.current().invoked_as_after_run(
                self, agent=agent, context=context
            )

    async def invoking(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        """The thread era's hook (SE-10, AG-6): a `Context` to add; here an empty
        one."""
        return _edge.current().empty_context()

    async def invoked(
        self,
        request_messages: Sequence[Message],
        response_messages: Sequence[Message],
        **kwargs: Any,
    ) -> None:
        return None


class HistoryProvider(ContextProvider):
    """A provider that keeps the conversation's messages (SE-6).

    Subclasses implement ``get_messages`` and ``save_messages``; ``before_run`` loads
    the history into the run (unless ``load_messages=False``: the agent then skips
    ``before_run``) and ``after_run`` saves, in one ``save_messages`` call, the run's
    input (``store_inputs``), other providers' messages (``store_context_messages``, or
    only those of ``store_context_from``) and the response (``store_outputs``).
    """

    # a subclass's source_id when none is given
    DEFAULT_SOURCE_ID: ClassVar[str | None] = None

    def __init__(
        self,
        source_id: str | None = None,
        *,
        load_messages: bool = True,
        store_inputs: bool = True,
        store_context_messages: bool = False,
        store_context_from: set[str] | None = None,
        store_outputs: bool = True,
    ) -> None:
        super().__init__(source_id or self.DEFAULT_SOURCE_ID)
        self.load_messages = load_messages
        self.store_inputs = store_inputs
        self.store_context_messages = store_context_messages
        self.store_context_from = store_context_from
        self.store_outputs = store_outputs

    async def get_messages(
        self,
        session_id: str | None,
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Message]:
        raise NotImplementedError(f"{type(self).__name__} must implement get_messages")

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement save_messages")

    def messages_to_store(self, context: SessionContext) -> list[Message]:
        """What ``after_run`` saves for this run, in conversation order (SE-6)."""
        out: list[Message] = []
        if self.store_context_messages:
            if self.store_context_from is not None:
                out.extend(context.get_messages(sources=self.store_context_from))
            else:
                out.extend(context.get_messages(exclude_sources={source_id_of(self)}))
        if self.store_inputs:
            out.extend(context.input_messages)
        if self.store_outputs and context.response is not None:
            out.extend(context.response.messages)
        return out

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        # SE-50: as they are, no copies
        loaded = await self.get_messages(context.session_id, state=state)
        context.context_messages.setdefault(source_id_of(self), []).extend(loaded)

    async def after_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        messages = self.messages_to_store(context)
        # in a run: saved once every after_run succeeded (SE-20)
        if messages and context._saves is not None:
            context._saves.append((self, context.session_id, messages, state))
        elif messages:
            await self.save_messages(context.session_id, messages, state=state)

    async def discard_messages(
        self, session_id: str | None, messages: Sequence[Message], **kwargs: Any
    ) -> None:
        """Take back ``messages``, the last this provider saved, when a later save of
        the run failed (SE-20)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot take back what it saved"
        )


class InMemoryHistoryProvider(HistoryProvider):
    """Keeps the messages in the session's state, ``state["messages"]`` of its entry
    (SE-7); the default when an agent has no history provider that loads messages
    (SE-8)."""

    DEFAULT_SOURCE_ID: ClassVar[str] = "in_memory"

    async def get_messages(
        self,
        session_id: str | None,
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Message]:
        return [] if state is None else list(state.get("messages", []))

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if state is None:
            return
        stored = state.setdefault("messages", [])
        # the session's own copies (TH-7)
        stored.extend(m.with_contents(m.contents) for m in messages)

    async def discard_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        # the session is this run's (SE-12): its last entries are these
        if state is not None and messages:
            del state.get("messages", [])[-len(messages) :]


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
    return session_id
