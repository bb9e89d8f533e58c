"""Keywords an agent or a run does not take, and upstream's spellings of them
(spec/agent.md AG-12, spec/threads.md, spec/sessions.md SE-9, SE-60, SE-65).

Rules
-----
1. The core answers every keyword it does not take itself, with a plain `TypeError`
   that names the callable and the keyword, also in a copy of the core without folders:
   every unknown keyword of ``Agent(...)``, and a keyword of ``run(...)`` that is one
   of upstream's, a chat option, or one edit away from one of ``run``'s own keywords
   (``sesion=``). A keyword of upstream's says what to write instead; a near miss names
   the keyword meant. The hint tables are here: they are error text, not
   compatibility behaviour. (Two attributes of the middleware contexts are spellings
   too — ``context.terminate``, ``AgentContext.session`` for ``thread`` — and stay
   members of those classes, MW-12, SE-9.)
2. A spelling is never silently ignored: it works as upstream's does, or it is a
   `TypeError` that says what to write instead.
3. What upstream's API does beyond a spelling (the thread era, per-service-call history,
   SE-60) lives in ``minagent/upstream/`` and is reached through the edge
   (``_edge``), never by an import of that folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _edge
from ._exceptions import AgentInvalidRequestException
from ._options import ChatOptions
from ._sessions import AgentSession

__all__ = [
    "AGENT_KEYWORDS",
    "AGENT_SPELLINGS",
    "RUN_KEYWORDS",
    "RUN_SPELLINGS",
    "RUN_STREAM_HINT",
    "reject_spellings",
    "session_of",
]

# AG-12: upstream's keywords of run() that minagent does not take, and what to write
RUN_SPELLINGS = {
    "context_provider": "context providers belong to the agent: Agent(client, context_providers=[...])",
    "context_providers": "context providers belong to the agent: Agent(client, context_providers=[...])",
    "chat_options": "pass chat options as options={...}",
    "additional_function_arguments": "pass function_invocation_kwargs={...}",
    "compaction_strategy": "minagent has no compaction strategies; trim the messages in chat middleware",
    "tokenizer": "minagent has no tokenizers; count tokens in chat middleware",
}
# AG-12: upstream's keywords of Agent() that minagent does not take, and what to write
AGENT_SPELLINGS = {
    "chat_client": "the client is the first argument: Agent(client, ...) (chat_client= was renamed client=)",
    "context_provider": "pass a list: context_providers=[...]",
    "compaction_strategy": "minagent has no compaction strategies; trim the messages in chat middleware",
    "tokenizer": "minagent has no tokenizers",
    "additional_properties": "minagent agents have no additional_properties",
}
# The keywords `RawAgent.run` and `Agent.__init__` name (a test compares them with the
# signatures): a keyword one edit away from one of these is a misspelling (AG-12).
RUN_KEYWORDS = (
    "messages",
    "stream",
    "thread",
    "session",
    "options",
    "tools",
    "middleware",
    "inbox",
    "function_invocation_kwargs",
    "client_kwargs",
)
AGENT_KEYWORDS = (
    "client",
    "instructions",
    "id",
    "name",
    "description",
    "tools",
    "default_options",
    "context_providers",
    "middleware",
)
RUN_STREAM_HINT = "run_stream() was replaced: call run(..., stream=True)"

_OPTION_KEYS = frozenset(ChatOptions.__annotations__) | {"model_id"}
# SE-60: upstream's keyword minagent adopts (its feature lives in minagent/upstream/)
_PER_CALL = "require_per_service_call_history_persistence"


def reject_spellings(
    kwargs: Mapping[str, Any], kind: str, where: str, parts: Any = None
) -> Any:
    """AG-12: a `TypeError` for the first keyword of ``kwargs`` that ``where`` does not
    take (``kind`` ``"run"`` or ``"agent"``), saying what to write instead; an agent's
    ``require_per_service_call_history_persistence`` is adopted (SE-60) and ``parts``
    (its context providers and middleware) returned as that feature makes them. Kind
    ``"session"``: a structured ``service_session_id`` given to a chat client's run, an
    `AgentInvalidRequestException` (SE-65)."""
    if kind == "session":
        raise AgentInvalidRequestException(
            f"{where} expects a string service_session_id (a chat client's conversation id), got a "
            f"{type(kwargs['service_session_id']).__name__}: a structured id belongs to an agent that "
            "understands it; run this agent with a session whose service_session_id is a str, or none"
        )
    spellings = RUN_SPELLINGS if kind == "run" else AGENT_SPELLINGS
    if kind == "agent":
        kwargs = dict(kwargs)
        if kwargs.pop(_PER_CALL, False):
            parts = _edge.current().per_service_call(*parts)
    for key in kwargs:
        if key in spellings:
            raise TypeError(f"{where} got {key}=: {spellings[key]}")
        # AG-12, OP-60
        if key in _OPTION_KEYS and where.endswith(("run()", "get_response()")):
            raise TypeError(
                f"{where} got {key}=: chat options go in options={{{key!r}: ...}}"
            )
        if kind == "run" and where.endswith("run()"):
            meant = _near_miss(key, RUN_KEYWORDS)
            if meant is not None:
                raise TypeError(
                    f"{where} got an unexpected keyword argument {key!r}: did you mean {meant}=?"
                )
    if kind == "agent" and kwargs:
        key = next(iter(kwargs))
        meant = _near_miss(key, AGENT_KEYWORDS)
        raise TypeError(
            f"{where} got an unexpected keyword argument {key!r}"
            + (f": did you mean {meant}=?" if meant is not None else "")
        )
    return parts


def _near_miss(key: str, names: tuple[str, ...]) -> str | None:
    """The one of ``names`` that ``key`` misspells (one letter added, dropped, changed,
    or two neighbours swapped), else None; a key of two letters or fewer misspells
    nothing."""
    if len(key) <= 2:
        return None
    return next((name for name in names if _one_edit(key, name)), None)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by exactly one edit (Damerau's four kinds)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    # the first place they differ; the longer one has one letter more there
    i = next(
        (
            i
            for i, (x, y) in enumerate(zip(short, long[: len(short)], strict=True))
            if x != y
        ),
        len(short),
    )
    return short[i:] == long[i + 1 :]


def session_of(thread: Any, session: Any) -> AgentSession | None:
    """The run's session, from either spelling (SE-9); both at once, or something else,
    is a TypeError."""
    if thread is not None and session is not None:
        raise TypeError(
            "run() got both thread= and session=: they are two spellings of one thing; pass one"
        )
    given = session if session is not None else thread
    if given is not None and not isinstance(given, AgentSession):
        raise TypeError(
            f"session= must be an AgentSession from agent.create_session() (or thread= an AgentThread from "
            f"agent.get_new_thread()), got {type(given).__name__}"
        )
    return given
