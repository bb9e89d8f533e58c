"""Upstream's thread era on sessions: `AgentThread`, thread-era providers
(spec/threads.md, spec/sessions.md SE-9, SE-10).

An `AgentThread` is an `AgentSession` (SE-9): ``thread_id`` is its ``session_id``,
``service_thread_id`` its ``service_session_id``, ``state`` its state, and ``messages``
the list the default `InMemoryHistoryProvider` keeps in that state
(``state["in_memory"]["messages"]``). So a thread holds the conversation's local
history, or, once a service has given the conversation an id, that id; from then on the
local history is kept as a record but no longer sent or extended (TH-1). It is updated
only when a run finishes, so a failed or abandoned run leaves it as it was (TH-3).
``serialize()`` writes the thread-era format: the messages apart from the rest of the
state.

A thread-era provider implements ``invoking``/``invoked``; `invoking_as_before_run` and
`invoked_as_after_run` run it as a ``before_run``/``after_run`` (SE-10). The core
reaches this module only through the edge this folder installs (``edge.py``,
spec/decisions.md "The edge").
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minagent import (
    AgentSession,
    InMemoryHistoryProvider,
    Message,
    SerializationError,
    SessionContext,
)
from minagent._sessions import decode_state, encode_state, source_id_of
from minagent._types import FORMAT_VERSION
from minagent._wire import expect_mapping, expect_type, get_field

__all__ = [
    "THREAD_ATTRIBUTES",
    "AgentThread",
    "Context",
    "SerializedThread",
    "invoked_as_after_run",
    "invoking_as_before_run",
]

_HISTORY = InMemoryHistoryProvider.DEFAULT_SOURCE_ID
_STORE = "the history is kept by the agent's history provider (InMemoryHistoryProvider by default)"
THREAD_ATTRIBUTES = {  # SE-64: what a thread-era attribute became
    "message_store": f"{_STORE}; read thread.messages, or pass a HistoryProvider in Agent(context_providers=[...])",
    "chat_message_store": f"{_STORE}; read thread.messages",
    "context_provider": "context providers belong to the agent: Agent(client, context_providers=[...])",
    "context_providers": "context providers belong to the agent: Agent(client, context_providers=[...])",
    "is_initialized": "a thread is always ready: there is nothing to initialise",
    "on_new_messages": "history providers save a run's messages after it succeeds; write a HistoryProvider",
    "update_from_thread_state": "restore with agent.deserialize_thread(data) or AgentSession.from_dict(data)",
}


@dataclass
class Context:
    """What a thread-era provider's ``invoking`` adds to one run: instructions,
    messages, tools."""

    instructions: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: list[Any] = field(default_factory=list)


async def invoking_as_before_run(
    provider: Any, *, agent: Any, context: SessionContext
) -> None:
    """A thread-era ``invoking`` as a ``before_run`` (SE-10): its `Context` goes into
    the run's context."""
    result = await provider.invoking(
        context.input_messages, thread=context._thread, agent=agent
    )
    if result is None:
        return
    source_id = source_id_of(provider)
    if result.instructions:
        context.extend_instructions(source_id, result.instructions)
    if result.messages:
        context.extend_messages(source_id, result.messages)
    if result.tools:
        context.extend_tools(source_id, list(result.tools))


async def invoked_as_after_run(
    provider: Any, *, agent: Any, context: SessionContext
) -> None:
    """A thread-era ``invoked`` as an ``after_run`` (SE-10)."""
    response = context.response
    await provider.invoked(
        context.input_messages,
        response.messages if response is not None else [],
        thread=context._thread,
        agent=agent,
    )


class AgentThread(AgentSession):
    """A conversation: its local history, or its service-side id, and providers'
    state."""

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
            # its messages list is replaced, never the caller's dict
            state[_HISTORY] = dict(state[_HISTORY])
        super().__init__(
            session_id=thread_id or None,
            service_session_id=service_thread_id,
            state=state,
        )
        if messages:
            self.messages = list(messages)

    def __getattr__(self, name: str) -> Any:
        """F16, SE-64: an attribute of upstream's thread era minagent has no more says
        what to use instead."""
        hint = THREAD_ATTRIBUTES.get(name)
        if hint is None:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}"
            )
        raise AttributeError(
            f"{type(self).__name__}.{name} is upstream's thread-era API: {hint}"
        )

    @property
    def thread_id(self) -> str:
        return self.session_id

    @property
    def service_thread_id(self) -> str | dict[str, Any] | None:
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
        """``await agent.deserialize_thread(data)`` (upstream's thread-era spelling) is
        the thread (TH-6)."""
        yield from ()
        return self

    def _other_state(self) -> dict[str, Any]:
        """The state without the messages ``serialize()`` writes apart (an emptied entry
        dropped)."""
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
        """Plain JSON data with a format version; `deserialize` restores it exactly
        (TH-2)."""
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
            # TH-7: new data, sharing nothing with the thread
            out["state"] = encode_state(state)
        return out

    @classmethod
    def deserialize(cls, data: Mapping[str, Any]) -> AgentThread:
        """The thread `serialize()` wrote; shares nothing with ``data`` (TH-7). Data of
        the wrong shape, however deeply nested, is a `SerializationError` naming the
        path (TH-2)."""
        try:
            return cls._deserialize(copy.deepcopy(data))
        except RecursionError:
            raise SerializationError("agent_thread", "nested too deeply") from None

    @classmethod
    def _deserialize(cls, data: Mapping[str, Any]) -> AgentThread:
        path = "agent_thread"
        data = expect_mapping(data, path)
        expect_type(data, "agent_thread", path)
        get_field(data, "version", int, path)
        raw = get_field(data, "messages", list, path) or []
        return cls(
            messages=[
                Message.from_dict(m, path=f"{path}.messages[{i}]")
                for i, m in enumerate(raw)
            ],
            service_thread_id=get_field(data, "service_thread_id", str, path),
            thread_id=get_field(data, "thread_id", str, path),
            state=decode_state(
                get_field(data, "state", dict, path) or {}, f"{path}.state"
            ),
        )


class SerializedThread(dict[str, Any]):
    """The dict `AgentThread.serialize()` returns: plain JSON data that can also be
    awaited, since upstream's thread-era samples write ``await thread.serialize()``
    (TH-6)."""

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        yield from ()
        return dict(self)
