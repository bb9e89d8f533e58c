"""What to write instead of upstream's keywords minagent does not take (spec/agent.md
AG-12).

Each name upstream code passes where minagent takes none is an error that says what to
write instead, never a keyword that silently joins ``**kwargs``; the core loads this
table through ``minagent._compat.reject_spellings`` only when such a keyword arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minagent import ChatOptions

__all__ = [
    "AGENT_SPELLINGS",
    "CONFIG_SPELLINGS",
    "REMOVED_NAMES",
    "RUN_SPELLINGS",
    "config_hint",
    "hint",
    "reject",
]

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
    "additional_properties": "minagent agents have no additional_properties",
}
# LP-60: upstream's configuration keys minagent has not, and what to write instead
CONFIG_SPELLINGS = {
    "max_duration_seconds": "wrap the run in asyncio.timeout(seconds); cancelling a run closes what it opened",
    "allow_concurrent_invocation": "a batch's calls run concurrently; a tool made with sequential=True runs alone",
}


def config_hint(name: str) -> str:
    """LP-60: what to write instead of an unknown configuration key that is upstream's
    ('' for others)."""
    return (
        f"; {name} is upstream's: {CONFIG_SPELLINGS[name]}"
        if name in CONFIG_SPELLINGS
        else ""
    )


_OPTION_KEYS = frozenset(ChatOptions.__annotations__) | {"model_id"}
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


def reject(kwargs: Mapping[str, Any], kind: str, where: str, parts: Any = None) -> Any:
    """A `TypeError` for the first keyword of ``kwargs`` that is one of upstream's
    (AG-12); an agent's ``require_per_service_call_history_persistence`` is adopted
    (SE-60) and its parts returned."""
    if kind == "session":  # SE-65
        from .exceptions import AgentInvalidRequestException

        raise AgentInvalidRequestException(
            f"{where} expects a string service_session_id (a chat client's conversation id), got a "
            f"{type(kwargs['service_session_id']).__name__}: a structured id belongs to an agent that "
            "understands it; run this agent with a session whose service_session_id is a str, or none"
        )
    spellings = RUN_SPELLINGS if kind == "run" else AGENT_SPELLINGS
    if kind == "agent":
        kwargs = dict(kwargs)
        if kwargs.pop("require_per_service_call_history_persistence", False):
            from .persistence import per_service_call

            parts = per_service_call(*parts)
    for key in kwargs:
        if key in spellings:
            raise TypeError(f"{where} got {key}=: {spellings[key]}")
        # AG-12, OP-60
        if key in _OPTION_KEYS and where.endswith(("run()", "get_response()")):
            raise TypeError(
                f"{where} got {key}=: chat options go in options={{{key!r}: ...}}"
            )
    if kind == "agent" and kwargs:
        raise TypeError(
            f"{where} got an unexpected keyword argument {next(iter(kwargs))!r}"
        )
    return parts
