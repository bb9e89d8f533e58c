"""What to write instead of upstream's keywords minagent does not take (spec/agent.md AG-12).

Each name upstream code passes where minagent takes none is an error that says what to write
instead, never a keyword that silently joins ``**kwargs``; the core loads this table through
``minagent._compat.reject_spellings`` only when such a keyword arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minagent import ChatOptions

__all__ = ["AGENT_SPELLINGS", "RUN_SPELLINGS", "reject"]

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


def reject(kwargs: Mapping[str, Any], kind: str, where: str) -> None:
    """A `TypeError` for the first keyword of ``kwargs`` that is one of upstream's (AG-12)."""
    spellings = RUN_SPELLINGS if kind == "run" else AGENT_SPELLINGS
    for key in kwargs:
        if key in spellings:
            raise TypeError(f"{where} got {key}=: {spellings[key]}")
        if key in _OPTION_KEYS and where.endswith("run()"):
            raise TypeError(f"{where} got {key}=: chat options go in options={{{key!r}: ...}}")
