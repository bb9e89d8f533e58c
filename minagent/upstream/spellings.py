"""What to use instead of upstream's names minagent has not (spec/sessions.md SE-64).

``minagent.<name>`` (and ``minagent.upstream.<name>``) of one of upstream's names that
minagent has not, mostly of the thread era, is an `AttributeError` that says what to use
instead. (Upstream's keywords an agent or a run does not take are answered by the core
itself: ``minagent._compat``, AG-12.)
"""

from __future__ import annotations

__all__ = ["REMOVED_NAMES", "hint"]

_HISTORY = "a history provider, InMemoryHistoryProvider (the default) or a HistoryProvider subclass"
# SE-64: upstream names (mostly of the thread era) minagent has not, and what to use
REMOVED_NAMES = {
    "ChatMessageStore": _HISTORY,
    "ChatMessageStoreProtocol": _HISTORY,
    "ChatMessageStoreState": _HISTORY,
    "AgentThreadState": "AgentThread.serialize() / agent.deserialize_thread(data), or AgentSession.to_dict()",
    "AggregateContextProvider": "Agent(client, context_providers=[a, b]) with every provider",
    "ChatAgent": "Agent (ChatAgent was renamed Agent)",
    "ChatMessage": "Message (ChatMessage was renamed Message)",
    "AgentRunResponse": "AgentResponse (AgentRunResponse was renamed AgentResponse)",
    "AgentRunResponseUpdate": "AgentResponseUpdate (AgentRunResponseUpdate was renamed AgentResponseUpdate)",
    "AIFunction": "FunctionTool (AIFunction was renamed FunctionTool)",
    "ai_function": "tool (@ai_function was renamed @tool)",
    "TextContent": "Content.from_text(...) (one Content class with a type)",
    "FunctionCallContent": "Content.from_function_call(...) (one Content class with a type)",
    "FunctionResultContent": "Content.from_function_result(...) (one Content class with a type)",
    "ChatClientProtocol": "SupportsChatGetResponse",
}


def hint(name: str) -> str:
    """SE-64: what to use instead of ``minagent.<name>`` when it is one of upstream's
    names; else nothing."""
    found = REMOVED_NAMES.get(name)
    return f": use {found}" if found else ""
