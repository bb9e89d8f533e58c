"""Upstream's spellings in one place (spec/agent.md AG-12, spec/threads.md, spec/sessions.md SE-9).

Rules
-----
1. Every spelling of upstream's API that minagent accepts, or rejects with what to write instead,
   lives here: `AgentThread` (the thread-era spelling of a session), ``thread=`` beside
   ``session=``, ``run_stream``, and the keywords upstream passes where minagent takes none. (Two
   attributes of the middleware contexts are spellings too — ``context.terminate`` rejected,
   ``AgentContext.session`` for ``thread`` — and stay members of those classes, MW-12, SE-9.)
2. A spelling is never silently ignored: it works as upstream's does, or it is a `TypeError`
   that says what to write instead.

Threads
-------

An `AgentThread` is an `AgentSession` (SE-9): ``thread_id`` is its ``session_id``,
``service_thread_id`` its ``service_session_id``, ``state`` its state, and ``messages`` the
list the default `InMemoryHistoryProvider` keeps in that state (``state["in_memory"]["messages"]``).
So a thread holds the conversation's local history, or, once a service has given the
conversation an id, that id; from then on the local history is kept as a record but no longer
sent or extended (TH-1). It is updated only when a run finishes, so a failed or abandoned run
leaves it as it was (TH-3). ``serialize()`` writes the thread-era format: the messages apart from
the rest of the state.
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from ._exceptions import SerializationError
from ._options import ChatOptions
from ._sessions import AgentSession, Context, ContextProvider, InMemoryHistoryProvider, decode_state, encode_state
from ._types import FORMAT_VERSION, Message
from ._wire import _expect_mapping, _expect_type, _get

__all__ = [
    "AGENT_SPELLINGS",
    "RUN_SPELLINGS",
    "RUN_STREAM_HINT",
    "AgentThread",
    "Context",
    "ContextProvider",
    "reject_spellings",
    "session_of",
]

_HISTORY = InMemoryHistoryProvider.DEFAULT_SOURCE_ID


class AgentThread(AgentSession):
    """A conversation: its local history, or its service-side id, and providers' state."""

    def __init__(
        self,
        *,
        messages: Sequence[Message] | None = None,
        service_thread_id: str | None = None,
        thread_id: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        state = dict(state or {})
        if isinstance(state.get(_HISTORY), Mapping):
            state[_HISTORY] = dict(state[_HISTORY])  # its messages list is replaced, never the caller's dict
        super().__init__(session_id=thread_id or None, service_session_id=service_thread_id, state=state)
        if messages:
            self.messages = list(messages)

    @property
    def thread_id(self) -> str:
        return self.session_id

    @property
    def service_thread_id(self) -> str | None:
        return self.service_session_id

    @service_thread_id.setter
    def service_thread_id(self, value: str | None) -> None:
        self.service_session_id = value

    @property
    def messages(self) -> list[Message]:
        """The default history provider's messages in this thread's state (SE-9)."""
        entry = self.state.setdefault(_HISTORY, {})
        return entry.setdefault("messages", [])  # type: ignore[no-any-return]

    @messages.setter
    def messages(self, value: Sequence[Message]) -> None:
        self.state.setdefault(_HISTORY, {})["messages"] = list(value)

    def __repr__(self) -> str:
        where = (
            f"service_thread_id={self.service_thread_id!r}"
            if self.service_thread_id
            else f"{len(self.messages)} messages"
        )
        return f"<AgentThread {self.thread_id} {where}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentThread):
            return NotImplemented
        return self.serialize() == other.serialize()

    __hash__ = None

    def __await__(self) -> Generator[Any, None, AgentThread]:
        """``await agent.deserialize_thread(data)`` (upstream's thread-era spelling) is the thread (TH-6)."""
        yield from ()
        return self

    def _other_state(self) -> dict[str, Any]:
        """The state without the messages ``serialize()`` writes apart (an emptied entry dropped)."""
        state = dict(self.state)
        entry = state.get(_HISTORY)
        if isinstance(entry, dict) and "messages" in entry:
            rest = {k: v for k, v in entry.items() if k != "messages"}
            if rest:
                state[_HISTORY] = rest
            else:
                del state[_HISTORY]
        return state

    def serialize(self) -> SerializedThread:
        """Plain JSON data with a format version; `deserialize` restores it exactly (TH-2)."""
        out = SerializedThread(
            {
                "type": "agent_thread",
                "version": FORMAT_VERSION,
                "thread_id": self.thread_id,
            }
        )
        if self.service_thread_id is not None:
            out["service_thread_id"] = self.service_thread_id
        out["messages"] = copy.deepcopy([m.to_dict() for m in self.messages])  # TH-7
        state = self._other_state()
        if state:
            out["state"] = encode_state(state)  # TH-7: new data, sharing nothing with the thread
        return out

    @classmethod
    def deserialize(cls, data: Mapping[str, Any]) -> AgentThread:
        """The thread `serialize()` wrote; shares nothing with ``data`` (TH-7). Data of the wrong
        shape, however deeply nested, is a `SerializationError` naming the path (TH-2)."""
        try:
            return cls._deserialize(copy.deepcopy(data))
        except RecursionError:
            raise SerializationError("agent_thread", "nested too deeply") from None

    @classmethod
    def _deserialize(cls, data: Mapping[str, Any]) -> AgentThread:
        path = "agent_thread"
        data = _expect_mapping(data, path)
        _expect_type(data, "agent_thread", path)
        _get(data, "version", int, path)
        raw = _get(data, "messages", list, path) or []
        return cls(
            messages=[Message.from_dict(m, path=f"{path}.messages[{i}]") for i, m in enumerate(raw)],
            service_thread_id=_get(data, "service_thread_id", str, path),
            thread_id=_get(data, "thread_id", str, path),
            state=decode_state(_get(data, "state", dict, path) or {}, f"{path}.state"),
        )


class SerializedThread(dict[str, Any]):
    """The dict `AgentThread.serialize()` returns: plain JSON data that can also be awaited, since
    upstream's thread-era samples write ``await thread.serialize()`` (TH-6)."""

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        yield from ()
        return dict(self)


# Names that upstream code passes and minagent does not take there: each is an error that says
# what to write instead (AG-12), never a keyword that silently joins **kwargs.
RUN_SPELLINGS = {
    "context_provider": "context providers belong to the agent: Agent(client, context_providers=[...])",
    "context_providers": "context providers belong to the agent: Agent(client, context_providers=[...])",
    "chat_options": "pass chat options as options={...}",
    "additional_function_arguments": "pass function_invocation_kwargs={...}",
    "compaction_strategy": "minagent has no compaction strategies; trim the messages in chat middleware",
    "tokenizer": "minagent has no tokenizers; count tokens in chat middleware",
}
AGENT_SPELLINGS = {
    "chat_client": "the client is the first argument: Agent(client, ...) (chat_client= was renamed client=)",
    "context_provider": "pass a list: context_providers=[...]",
    "compaction_strategy": "minagent has no compaction strategies; trim the messages in chat middleware",
    "tokenizer": "minagent has no tokenizers",
    "require_per_service_call_history_persistence": "minagent saves history once per run, after it succeeds; "
    "there is no per-service-call persistence",
    "additional_properties": "minagent agents have no additional_properties",
}
_OPTION_KEYS = frozenset(ChatOptions.__annotations__) | {"model_id"}


def reject_spellings(kwargs: Mapping[str, Any], spellings: Mapping[str, str], where: str) -> None:
    for key in kwargs:
        if key in spellings:
            raise TypeError(f"{where} got {key}=: {spellings[key]}")
        if key in _OPTION_KEYS and where.endswith("run()"):
            raise TypeError(f"{where} got {key}=: chat options go in options={{{key!r}: ...}}")


RUN_STREAM_HINT = "run_stream() was replaced: call run(..., stream=True)"


def session_of(thread: Any, session: Any) -> AgentSession | None:
    """The run's session, from either spelling (SE-9); both at once, or something else, is a TypeError."""
    if thread is not None and session is not None:
        raise TypeError("run() got both thread= and session=: they are two spellings of one thing; pass one")
    given = session if session is not None else thread
    if given is not None and not isinstance(given, AgentSession):
        raise TypeError(
            f"session= must be an AgentSession from agent.create_session() (or thread= an AgentThread from "
            f"agent.get_new_thread()), got {type(given).__name__}"
        )
    return given
