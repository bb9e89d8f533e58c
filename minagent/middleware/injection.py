"""Messages queued for a session's next model call: `enqueue_messages` and
`MessageInjectionMiddleware`, upstream's names for the session's steering inbox
(spec/loop.md LP-32).

A session keeps the messages waiting for its next model call in its state, under
upstream's key ``"message_injection.pending_messages"``, so they last as the session
does (a durable store keeps them too). Every run on the session drains them into the
conversation before each model call, and a message queued while the model answers gets
the model called once more — the core's steering inbox (design decision 3) over the
session (`minagent.Inbox(session)`). `MessageInjectionMiddleware` adds nothing to that
but the check upstream makes: the run has a session.
"""

from __future__ import annotations

from typing import Any

from minagent import (
    AgentSession,
    ChatContext,
    ChatMiddleware,
    Inbox,
    MessageInput,
    normalize_messages,
)
from minagent._loop import PENDING_KEY

from ..upstream import ChatClientInvalidRequestException

__all__ = [
    "MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY",
    "MessageInjectionMiddleware",
    "enqueue_messages",
]

MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY = PENDING_KEY


def enqueue_messages(session: AgentSession, messages: MessageInput) -> None:
    """LP-32: queue ``messages`` (anything a run takes) for the session's next model
    call."""
    inbox = Inbox(session)
    for message in normalize_messages(messages):
        inbox.put(message)


class MessageInjectionMiddleware(ChatMiddleware):
    """LP-32: upstream's middleware for the session's queued messages; the run must have
    a session."""

    def enqueue_messages(self, session: AgentSession, messages: MessageInput) -> None:
        enqueue_messages(session, messages)

    def get_pending_messages(self, session: AgentSession) -> list[Any]:
        """The messages waiting for the session's next model call, as a new list."""
        return list(session.state.get(PENDING_KEY) or ())

    async def process(self, context: ChatContext, call_next: Any) -> None:
        if context.session is None:
            raise ChatClientInvalidRequestException(
                "MessageInjectionMiddleware requires an AgentSession: run the agent with session=..., or call "
                "get_response(..., session=...)"
            )
        await call_next()
