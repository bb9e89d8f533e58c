"""Upstream's spellings in one place (spec/agent.md AG-12, spec/threads.md, spec/sessions.md SE-9).

Rules
-----
1. Every spelling of upstream's API that the core accepts, or rejects with what to write instead,
   lives here: ``thread=`` beside ``session=``, ``run_stream``, and the keywords upstream passes
   where minagent takes none. (Two
   attributes of the middleware contexts are spellings too — ``context.terminate``,
   ``AgentContext.session`` for ``thread`` — and stay members of those classes, MW-12, SE-9.)
2. A spelling is never silently ignored: it works as upstream's does, or it is a `TypeError`
   that says what to write instead.
3. The thread era (`AgentThread`, thread-era providers) lives in ``minagent.upstream.threads``;
   ``minagent._sessions.thread_era`` is the one seam that loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._options import ChatOptions
from ._sessions import AgentSession

__all__ = ["AGENT_SPELLINGS", "RUN_SPELLINGS", "RUN_STREAM_HINT", "reject_spellings", "session_of"]


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
    "require_per_service_call_history_persistence": "minagent saves history once per run, after it succeeds "
    "(spec/sessions.md SE-5); there is no per-service-call persistence",
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
