"""Sessions, context and history providers, and one run's calls of them
(spec/sessions.md; spec/agent.md AG-5, AG-9).

This module owns what a run keeps between runs and what it shows its providers: the
session and its state as JSON (with the classes registered to live in it), the
providers' base classes, a run's `SessionContext`, and the run's request that calls the
providers around the model call (`RunRequest`, `before_run`, `after_run`).

Rules
-----
1. A session holds ids and ``state``, never a provider; each provider owns its ``state``
   entry.
2. A session serves one run at a time (SE-12): `claim` and `release` are the only way
   in; a claim waits briefly for a run that is letting go (SE-19). A run holds its
   session and what it entered (AG-9) until it ends, in either mode; `RunRequest.close`
   releases both, once.
3. A run's providers see the run in order: every ``before_run`` in registration order
   before the model is called, every ``after_run`` in reverse order after it succeeded,
   then the history providers' saves (SE-3).
4. Nothing of a failed run is stored (SE-5): a history provider's save waits until every
   provider's ``after_run`` succeeded, and saves made before one that failed are
   discarded (SE-20).
5. What the run keeps in a `SessionContext` besides the providers' view (the session
   the caller passed, the staged saves, the response) is set in this module, by
   `before_run` and `after_run`.
6. A history provider's messages enter the run as loaded (SE-50); a provider's hook that
   reads them gets the run's own copies, in place in the context's lists, and the
   in-memory history keeps copies that own their contents (SE-53).

Theory of operation
-------------------
An `AgentSession` is a conversation between runs: an id (``session_id``), optionally the
id the service keeps the conversation under (``service_session_id``), and ``state``, a
JSON-native dict that the agent's context providers share; each provider owns the entry
under its ``source_id``. A session holds no provider and no message of its own:
messages live wherever a history provider keeps them — in the session's state
(`InMemoryHistoryProvider`, the default), in a SQLite file, in Redis. `encode_state` and
`decode_state` write and read that state as JSON; an instance of a class registered with
`register_state_type` is written by its `StateType` (SE-2).

One run is one `SessionContext`: the agent creates it, every provider's ``before_run``
adds to it (messages per source, instructions, tools, chat/function middleware) in
registration order, the client is called with what was collected, the response is set on
it, and every provider's ``after_run`` runs in reverse order (SE-3). So a history
provider writes a run's messages only after the run succeeded, and a run that fails or
is cancelled writes nothing (SE-5).

The agent drives that through a `RunRequest`: the run's inputs as the agent middleware
left them, plus what the run holds: the session claim, the resources it entered, the
providers' view (the `SessionContext`) and the list of (provider, session, source id)
that `after_run` walks back. `before_run` claims the session and calls the providers;
with a session and no history provider that loads messages, the default in-memory
history goes first, so the history precedes the providers' messages (SE-8, AG-5).
`after_run` sets the response, calls the providers in reverse order, then makes the
staged saves (SE-20).

The thread-era spelling (`AgentThread`, ``invoking``/``invoked``) is this same
machinery: a thread is a session whose messages are the default in-memory provider's
(SE-9), and `ContextProvider`'s default ``before_run``/``after_run`` call
``invoking``/``invoked`` (SE-10).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any, ClassVar

from . import _edge
from ._exceptions import MiddlewareException, MinagentError, SerializationError
from ._history import own_copy
from ._middleware import categorize_middleware
from ._types import FORMAT_VERSION, Message
from ._wire import _expect_mapping, _expect_type, _get

__all__ = [
    "DEFAULT_HISTORY",
    "NOTHING_PROVIDED",
    "STATE_TYPES_BY_CLASS",
    "STATE_TYPES_BY_ID",
    "AgentSession",
    "ContextProvider",
    "HistoryProvider",
    "InMemoryHistoryProvider",
    "RunRequest",
    "SessionBusyError",
    "SessionContext",
    "StateCodec",
    "StateType",
    "after_run",
    "before_run",
    "check_session_id",
    "decode_state",
    "encode_state",
    "register_state_type",
    "source_id_of",
]


class SessionBusyError(MinagentError, RuntimeError):
    """A second run on a session that is running already (SE-12)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r} is already running a run: await that run (or finish its stream) "
            "before starting another on the same session, or use a separate session"
        )
        self.session_id = session_id


# -- state as JSON ------------------------------------------------------------------------------


# the state codec's own writer (or reader) of a value inside a registered one, at a path
StateCodec = Callable[[Any, str], Any]


class StateType:
    """A class registered to live in session state (SE-2): `register_state_type` makes
    one and enters it in `STATE_TYPES_BY_ID` and `STATE_TYPES_BY_CLASS`, which
    `encode_state` and `decode_state` read. Never changed once registered."""

    __slots__ = ("cls", "decoder", "encoder", "type_id")

    def __init__(
        self,
        cls: type[Any],
        type_id: str,
        encoder: Callable[[Any], Mapping[str, Any]],
        decoder: Callable[[Mapping[str, Any]], Any],
    ) -> None:
        self.cls = cls
        self.type_id = type_id
        self.encoder = encoder
        self.decoder = decoder

    def __repr__(self) -> str:
        return f"StateType({self.cls.__qualname__}, {self.type_id!r})"

    def encode(self, value: Any, path: str, encode: StateCodec) -> dict[str, Any]:
        """``value`` as its encoder's dict, each item written by ``encode``, plus
        ``"type": type_id``."""
        payload = self.encoder(value)
        if not isinstance(payload, Mapping):
            raise SerializationError(
                path, f"the encoder of {self.cls.__name__} returned no dict"
            )
        out = {k: encode(v, f"{path}.{k}") for k, v in payload.items() if k != "type"}
        out["type"] = self.type_id
        return out

    def decode(self, data: Mapping[str, Any], path: str, decode: StateCodec) -> Any:
        """The instance ``data`` describes, each item read by ``decode`` first; what the
        decoder raises is a `SerializationError` naming ``path``."""
        try:
            return self.decoder({k: decode(v, f"{path}.{k}") for k, v in data.items()})
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(
                path, f"{self.cls.__name__} could not be restored: {exc}"
            ) from exc


# SE-2: the classes registered to live in session state, by type id and by class
STATE_TYPES_BY_ID: dict[str, StateType] = {}
STATE_TYPES_BY_CLASS: dict[type[Any], StateType] = {}


def register_state_type(
    cls: type[Any],
    *,
    type_id: str | None = None,
    encoder: Callable[[Any], Mapping[str, Any]] | None = None,
    decoder: Callable[[Mapping[str, Any]], Any] | None = None,
) -> None:
    """Let instances of ``cls`` live in session state (SE-2, upstream's function).

    They are written as their encoder's dict plus ``"type": type_id`` and restored by
    the decoder. Without callbacks, a class with ``to_dict``/``from_dict`` or a
    pydantic-style model (``model_dump``/``model_validate``) gets default ones;
    ``type_id`` defaults to the class's ``_get_type_identifier()``, else its ``TYPE``,
    else the lowercased class name. Registering again the same way is a no-op; a
    conflict is a `ValueError`.
    """
    # upstream's spellings of a type id, then the class name
    named = getattr(cls, "_get_type_identifier", None)
    resolved = (
        type_id
        or (named() if callable(named) else None)
        or getattr(cls, "TYPE", None)
        or cls.__name__.lower()
    )
    if not isinstance(resolved, str) or not resolved or resolved == "message":
        raise ValueError(
            f"state type id must be a non-empty string other than 'message', got {resolved!r}"
        )
    if (encoder is None) != (decoder is None):
        raise ValueError("pass encoder and decoder together, or neither")
    known = STATE_TYPES_BY_CLASS.get(cls)
    if known is not None:
        if known.type_id != resolved or (
            encoder is not None and known.encoder is not encoder
        ):
            raise ValueError(
                f"{cls.__name__} is already registered as {known.type_id!r} with other callbacks"
            )
        return
    if resolved in STATE_TYPES_BY_ID:
        raise ValueError(
            f"state type id {resolved!r} is already registered for {STATE_TYPES_BY_ID[resolved].cls.__name__}"
        )
    if encoder is None or decoder is None:
        encoder, decoder = _default_callbacks(cls)
    entry = StateType(cls, resolved, encoder, decoder)
    STATE_TYPES_BY_ID[resolved] = entry
    STATE_TYPES_BY_CLASS[cls] = entry


def _default_callbacks(
    cls: type[Any],
) -> tuple[Callable[[Any], Mapping[str, Any]], Callable[[Mapping[str, Any]], Any]]:
    """SE-2: the encoder and decoder of a class registered without them: its
    ``to_dict``/``from_dict``, else a pydantic-style model's
    ``model_dump``/``model_validate``; any other class is a `ValueError`."""
    if callable(getattr(cls, "to_dict", None)) and callable(
        getattr(cls, "from_dict", None)
    ):
        return (lambda value: value.to_dict()), (lambda data: cls.from_dict(dict(data)))
    if callable(getattr(cls, "model_dump", None)) and callable(
        getattr(cls, "model_validate", None)
    ):
        return (
            (lambda value: value.model_dump(mode="json")),
            (
                lambda data: cls.model_validate(
                    {k: v for k, v in data.items() if k != "type"}
                )
            ),
        )
    raise ValueError(
        f"{cls.__name__} needs to_dict()/from_dict(), a pydantic model's model_dump()/model_validate(), "
        "or encoder= and decoder= to live in session state"
    )


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
        self._context_messages: dict[str, list[Message]] = context_messages or {}
        # SE-53: the sources whose lists hold a history provider's messages as it
        # loaded them (SE-50), and whether a provider's hook is running; a hook's first
        # read of such a list replaces its messages with copies of the run's own
        self._borrowed: set[str] = set()
        self._lending = False
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

    @property
    def context_messages(self) -> dict[str, list[Message]]:
        """The messages each provider added, by ``source_id`` in provider order. Read by
        a provider's hook, a history provider's messages are the run's own copies
        (SE-53): an edit changes this run, never the store."""
        if self._borrowed and self._lending:
            self._lend(set(self._borrowed))
        return self._context_messages

    @context_messages.setter
    def context_messages(self, value: dict[str, list[Message]]) -> None:
        self._borrowed.clear()
        self._context_messages = value

    def _borrow(self, source_id: str, messages: Sequence[Message]) -> None:
        """A history provider's messages, as it loaded them (SE-50): lent as copies to
        a hook that reads them (SE-53)."""
        self._context_messages.setdefault(source_id, []).extend(messages)
        if messages:
            self._borrowed.add(source_id)

    def _lend(self, sources: set[str]) -> None:
        """SE-53: the borrowed lists of ``sources`` hold copies from now on."""
        for source_id in sources & self._borrowed:
            self._borrowed.discard(source_id)
            messages = self._context_messages.get(source_id)
            if messages:
                messages[:] = [own_copy(m) for m in messages]

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
        self._context_messages.setdefault(source_id, []).extend(copies)

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
        and response (a history provider's lent as copies to a hook, SE-53)."""
        out: list[Message] = []
        chosen = [
            source_id
            for source_id in self._context_messages
            if (sources is None or source_id in sources)
            and (exclude_sources is None or source_id not in exclude_sources)
        ]
        if self._borrowed and self._lending:
            self._lend(set(chosen))
        for source_id in chosen:
            out.extend(self._context_messages[source_id])
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
        # SE-50: as they are, no copies (a hook that reads them gets copies, SE-53)
        loaded = await self.get_messages(context.session_id, state=state)
        context._borrow(source_id_of(self), loaded)

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
        # the session's own copies (TH-7), down to each content, so that no layer of
        # this run or a later one edits them through the run's messages (SE-53)
        stored.extend(own_copy(m) for m in messages)

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


# -- one run: its request and its providers' calls ----------------------------------------------


class RunRequest:
    """One run's inputs, as the agent middleware left them."""

    __slots__ = (
        "claim",
        "client_kwargs",
        "context",
        "function_kwargs",
        "kwargs",
        "messages",
        "options",
        "providers",
        "resources",
        "thread",
        "tools",
    )

    def __init__(
        self,
        messages: list[Message],
        thread: AgentSession | None,
        options: dict[str, Any],
        tools: Any,
        kwargs: dict[str, Any],
        function_kwargs: dict[str, Any],
        client_kwargs: dict[str, Any],
    ) -> None:
        self.messages = messages
        self.thread = thread
        self.options = options
        self.tools = tools
        self.kwargs = kwargs
        self.function_kwargs = function_kwargs
        self.client_kwargs = client_kwargs
        # what this run entered; closed when it ends (AG-9)
        self.resources: AsyncExitStack | None = None
        # the providers' view of the run (SE-3)
        self.context: SessionContext | None = None
        # (provider, its session, its source_id)
        self.providers: list[tuple[Any, AgentSession, str]] = []
        self.claim: str | None = None  # the session this run holds (SE-12)

    async def enter(self, resource: Any) -> None:
        if self.resources is None:
            self.resources = AsyncExitStack()
        await self.resources.enter_async_context(resource)

    async def close(self) -> None:
        if self.claim is not None:
            release(self.claim)
            self.claim = None
        stack, self.resources = self.resources, None
        if stack is not None:
            await stack.aclose()


# keeps nothing itself: the messages are in each session's state
DEFAULT_HISTORY = InMemoryHistoryProvider()
# a run without session and providers: read, never handed out
NOTHING_PROVIDED = SessionContext(input_messages=[])


def _provider_state(session: AgentSession, source_id: str) -> dict[str, Any]:
    """The provider's entry of the session's state (SE-4); a new dict when it has none
    yet."""
    state = session.state.get(source_id)
    return state if isinstance(state, dict) else {}


def _keep_state(session: AgentSession, source_id: str, state: dict[str, Any]) -> None:
    """A new entry joins the session's state once the provider put something in it
    (SE-4)."""
    if state and session.state.get(source_id) is not state:
        session.state[source_id] = state


async def before_run(agent: Any, request: RunRequest) -> SessionContext:
    """The run's providers, each ``before_run`` in registration order (SE-3).

    The session is claimed first (SE-12). With a session and no history provider that
    loads messages, the default in-memory history comes first (SE-8), so the history
    precedes the providers' messages (AG-5). Without a session the providers get a fresh
    one.
    """
    given = request.thread
    if given is not None:
        request.claim = await claim(given)
    providers: list[Any] = list(agent.context_providers)
    session = given if given is not None or not providers else AgentSession()
    if (
        given is not None
        and not given.service_session_id
        and not any(
            isinstance(p, HistoryProvider) and p.load_messages for p in providers
        )
    ):
        providers.insert(0, DEFAULT_HISTORY)
    context = SessionContext(
        session_id=session.session_id if session is not None else None,
        service_session_id=session.service_session_id if session is not None else None,
        input_messages=list(request.messages),
        options=request.options,
    )
    context._thread = given
    # the history providers' saves, made once every after_run succeeded (SE-20)
    context._saves = []
    request.context = context
    # SE-53: what the hooks read of a history is lent as copies; the agent, building
    # the request after them, reads the messages as they are (SE-50)
    context._lending = True
    try:
        for provider in providers:
            # there are providers: the run has a session (SE-4)
            assert session is not None
            source_id = source_id_of(provider)
            request.providers.append((provider, session, source_id))
            if isinstance(provider, HistoryProvider) and not provider.load_messages:
                continue
            if hasattr(provider, "before_run"):
                state = _provider_state(session, source_id)
                await provider.before_run(
                    agent=agent, session=session, context=context, state=state
                )
                _keep_state(session, source_id, state)
            else:
                # SE-10
                await _edge.current().invoking_as_before_run(
                    provider, agent=agent, context=context
                )
    finally:
        context._lending = False
    return context


async def after_run(
    agent: Any, request: RunRequest, result: Any, conversation_id: str | None
) -> None:
    """Every provider's ``after_run`` in reverse order, then the service's id (SE-3,
    TH-1).

    Runs only when the run succeeded, so nothing of a failed run is stored (SE-5). The
    default history stops saving once the service keeps the conversation (TH-1).
    """
    context = request.context
    if context is None:  # a run that prepared nothing
        return
    context._response = result
    states: list[tuple[AgentSession, str, dict[str, Any]]] = []
    context._lending = True  # SE-53
    try:
        for provider, session, source_id in reversed(request.providers):
            if provider is DEFAULT_HISTORY and conversation_id:
                continue
            if hasattr(provider, "after_run"):
                states.append((session, source_id, _provider_state(session, source_id)))
                await provider.after_run(
                    agent=agent, session=session, context=context, state=states[-1][2]
                )
            else:
                await _edge.current().invoked_as_after_run(
                    provider, agent=agent, context=context
                )
    finally:
        context._lending = False
    await _save(context._saves or [])
    # an entry a save filled joins the session now (SE-4)
    for session, source_id, state in states:
        _keep_state(session, source_id, state)
    if request.thread is not None and conversation_id:
        request.thread.service_session_id = conversation_id


async def _save(saves: list[tuple[Any, str | None, list[Message], Any]]) -> None:
    """SE-20: the run's saves in order; when one fails, those made before it are taken
    back."""
    for done, (provider, session_id, messages, state) in enumerate(saves):
        try:
            await provider.save_messages(session_id, messages, state=state)
        except BaseException:
            for earlier, earlier_id, earlier_messages, earlier_state in reversed(
                saves[:done]
            ):
                try:
                    await earlier.discard_messages(
                        earlier_id, earlier_messages, state=earlier_state
                    )
                # the run fails with the first error; this one is logged
                except Exception as exc:
                    logging.getLogger("minagent").error(
                        "%s kept the failed run's messages: %r", earlier, exc
                    )
            raise
