"""Upstream's spellings in one place (spec/agent.md AG-12, spec/threads.md,
spec/sessions.md SE-9).

Rules
-----
1. Every spelling of upstream's API that the core accepts, or rejects with what to write
   instead, goes through here: ``thread=`` beside ``session=``, ``run_stream``, and the
   keywords upstream passes where minagent takes none (their table, loaded only then, is
   ``minagent.upstream.spellings``). (Two attributes of the middleware contexts are
   spellings too — ``context.terminate``, ``AgentContext.session`` for ``thread`` — and
   stay members of those classes, MW-12, SE-9.)
2. A spelling is never silently ignored: it works as upstream's does, or it is a
   `TypeError` that says what to write instead.
3. The thread era (`AgentThread`, thread-era providers) lives in
   ``minagent.upstream.threads``; ``minagent._sessions.thread_era`` is the one seam that
   loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._sessions import AgentSession

__all__ = ["RUN_STREAM_HINT", "reject_spellings", "session_of"]


def reject_spellings(
    kwargs: Mapping[str, Any], kind: str, where: str, parts: Any = None
) -> Any:
    """AG-12: upstream's keyword where minagent takes none is a `TypeError` saying what
    to write instead, by a table loaded only then; one minagent adopts (SE-60) gives the
    agent's (context providers, middleware)."""
    from .upstream.spellings import reject  # the seam (spec/decisions.md)

    return reject(kwargs, kind, where, parts)


RUN_STREAM_HINT = "run_stream() was replaced: call run(..., stream=True)"


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
