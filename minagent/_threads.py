"""Threads and context providers (spec/threads.md, spec/agent.md).

An `AgentThread` is a conversation's memory between runs: the local message history, or,
once a service has given the conversation an id (`service_thread_id`), that id; from then on
the local history is kept as a record but no longer sent or extended (TH-1). It is
updated only when a run finishes, so a failed or abandoned run leaves it as it was (TH-3).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import SerializationError
from ._types import FORMAT_VERSION, Message, _expect_mapping, _expect_type, _get

__all__ = ["AgentThread", "Context", "ContextProvider"]


class AgentThread:
    """A conversation: its local history, or its service-side id, and providers' state."""

    __slots__ = ("messages", "service_thread_id", "state", "thread_id")

    def __init__(
        self,
        *,
        messages: Sequence[Message] | None = None,
        service_thread_id: str | None = None,
        thread_id: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        self.thread_id = thread_id or os.urandom(16).hex()
        self.messages: list[Message] = list(messages or [])
        self.service_thread_id = service_thread_id
        self.state: dict[str, Any] = dict(state or {})

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

    __hash__ = None  # type: ignore[assignment]

    def __await__(self) -> Generator[Any, None, AgentThread]:
        """``await agent.deserialize_thread(data)`` (upstream's thread-era spelling) is the thread (TH-6)."""
        yield from ()
        return self

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
        if self.state:
            out["state"] = copy.deepcopy(self.state)  # TH-7: the data shares nothing with the thread
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
            state=_get(data, "state", dict, path),
        )


class SerializedThread(dict[str, Any]):
    """The dict `AgentThread.serialize()` returns: plain JSON data that can also be awaited, since
    upstream's thread-era samples write ``await thread.serialize()`` (TH-6)."""

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        yield from ()
        return dict(self)


@dataclass
class Context:
    """What a context provider adds to one run: instructions, messages before the input, tools."""

    instructions: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: list[Any] = field(default_factory=list)


class ContextProvider:
    """Adds context before a run and observes its result after (AG-6).

    Subclass and override either method; both default to doing nothing.
    """

    async def invoking(self, messages: Sequence[Message], **kwargs: Any) -> Context:
        return Context()

    async def invoked(
        self,
        request_messages: Sequence[Message],
        response_messages: Sequence[Message],
        **kwargs: Any,
    ) -> None:
        return None
