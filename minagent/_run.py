"""One agent run: its request, and the context providers around it (spec/agent.md AG-5,
AG-9; spec/sessions.md SE-3 .. SE-5, SE-8, SE-12).

Rules
-----
1. A run's providers see the run in order: every ``before_run`` in registration order
   before the model is called, every ``after_run`` in reverse order after it succeeded,
   then the history providers' saves; nothing of a failed run is stored (SE-5, SE-20).
2. A run holds its session (SE-12) and what it entered (AG-9) until it ends, in either
   mode; `RunRequest.close` releases both, once.

Theory of operation
-------------------
`RunRequest` is the run's inputs as the agent middleware left them, plus what the run
holds: the session claim, the resources it entered, the providers' view
(`SessionContext`) and the list of (provider, session, source id) that ``after_run``
walks back. With a session and no history provider that loads messages, the default
in-memory history goes first, so the history precedes the providers' messages (SE-8,
AG-5).
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

from . import _edge
from ._sessions import (
    AgentSession,
    HistoryProvider,
    InMemoryHistoryProvider,
    SessionContext,
    claim,
    release,
    source_id_of,
)
from ._types import Message

__all__ = [
    "DEFAULT_HISTORY",
    "NOTHING_PROVIDED",
    "RunRequest",
    "after_run",
    "before_run",
]


class RunRequest:
    """One run's inputs, as the agent middleware left them."""

    __slots__ = (
        "claim",
        "client_kwargs",
        "context",
        "function_kwargs",
        "kwargs",
        "messages",
        "options",
        "providers",
        "resources",
        "thread",
        "tools",
    )

    def __init__(
        self,
        messages: list[Message],
        thread: AgentSession | None,
        options: dict[str, Any],
        tools: Any,
        kwargs: dict[str, Any],
        function_kwargs: dict[str, Any],
        client_kwargs: dict[str, Any],
    ) -> None:
        self.messages = messages
        self.thread = thread
        self.options = options
        self.tools = tools
        self.kwargs = kwargs
        self.function_kwargs = function_kwargs
        self.client_kwargs = client_kwargs
        # what this run entered; closed when it ends (AG-9)
        self.resources: AsyncExitStack | None = None
        # the providers' view of the run (SE-3)
        self.context: SessionContext | None = None
        # (provider, its session, its source_id)
        self.providers: list[tuple[Any, AgentSession, str]] = []
        self.claim: str | None = None  # the session this run holds (SE-12)

    async def enter(self, resource: Any) -> None:
        if self.resources is None:
            self.resources = AsyncExitStack()
        await self.resources.enter_async_context(resource)

    async def close(self) -> None:
        if self.claim is not None:
            release(self.claim)
            self.claim = None
        stack, self.resources = self.resources, None
        if stack is not None:
            await stack.aclose()


# keeps nothing itself: the messages are in each session's state
DEFAULT_HISTORY = InMemoryHistoryProvider()
# a run without session and providers: read, never handed out
NOTHING_PROVIDED = SessionContext(input_messages=[])


def _provider_state(session: AgentSession, source_id: str) -> dict[str, Any]:
    """The provider's entry of the session's state (SE-4); a new dict when it has none
    yet."""
    state = session.state.get(source_id)
    return state if isinstance(state, dict) else {}


def _keep_state(session: AgentSession, source_id: str, state: dict[str, Any]) -> None:
    """A new entry joins the session's state once the provider put something in it
    (SE-4)."""
    if state and session.state.get(source_id) is not state:
        session.state[source_id] = state


async def before_run(agent: Any, request: RunRequest) -> SessionContext:
    """The run's providers, each ``before_run`` in registration order (SE-3).

    The session is claimed first (SE-12). With a session and no history provider that
    loads messages, the default in-memory history comes first (SE-8), so the history
    precedes the providers' messages (AG-5). Without a session the providers get a fresh
    one.
    """
    given = request.thread
    if given is not None:
        request.claim = await claim(given)
    providers: list[Any] = list(agent.context_providers)
    session = given if given is not None or not providers else AgentSession()
    if (
        given is not None
        and not given.service_session_id
        and not any(
            isinstance(p, HistoryProvider) and p.load_messages for p in providers
        )
    ):
        providers.insert(0, DEFAULT_HISTORY)
    context = SessionContext(
        session_id=session.session_id if session is not None else None,
        service_session_id=session.service_session_id if session is not None else None,
        input_messages=list(request.messages),
        options=request.options,
    )
    context._thread = given
    # the history providers' saves, made once every after_run succeeded (SE-20)
    context._saves = []
    request.context = context
    for provider in providers:
        assert session is not None  # there are providers: the run has a session (SE-4)
        source_id = source_id_of(provider)
        request.providers.append((provider, session, source_id))
        if isinstance(provider, HistoryProvider) and not provider.load_messages:
            continue
        if hasattr(provider, "before_run"):
            state = _provider_state(session, source_id)
            await provider.before_run(
                agent=agent, session=session, context=context, state=state
            )
            _keep_state(session, source_id, state)
        else:
            # SE-10
            await _edge.current().invoking_as_before_run(
                provider, agent=agent, context=context
            )
    return context


async def after_run(
    agent: Any, request: RunRequest, result: Any, conversation_id: str | None
) -> None:
    """Every provider's ``after_run`` in reverse order, then the service's id (SE-3,
    TH-1).

    Runs only when the run succeeded, so nothing of a failed run is stored (SE-5). The
    default history stops saving once the service keeps the conversation (TH-1).
    """
    context = request.context
    if context is None:  # a run that prepared nothing
        return
    context._response = result
    states: list[tuple[AgentSession, str, dict[str, Any]]] = []
    for provider, session, source_id in reversed(request.providers):
        if provider is DEFAULT_HISTORY and conversation_id:
            continue
        if hasattr(provider, "after_run"):
            states.append((session, source_id, _provider_state(session, source_id)))
            await provider.after_run(
                agent=agent, session=session, context=context, state=states[-1][2]
            )
        else:
            await _edge.current().invoked_as_after_run(
                provider, agent=agent, context=context
            )
    await _save(context._saves or [])
    # an entry a save filled joins the session now (SE-4)
    for session, source_id, state in states:
        _keep_state(session, source_id, state)
    if request.thread is not None and conversation_id:
        request.thread.service_session_id = conversation_id


async def _save(saves: list[tuple[Any, str | None, list[Message], Any]]) -> None:
    """SE-20: the run's saves in order; when one fails, those made before it are taken
    back."""
    for done, (provider, session_id, messages, state) in enumerate(saves):
        try:
            await provider.save_messages(session_id, messages, state=state)
        except BaseException:
            for earlier, earlier_id, earlier_messages, earlier_state in reversed(
                saves[:done]
            ):
                try:
                    await earlier.discard_messages(
                        earlier_id, earlier_messages, state=earlier_state
                    )
                # the run fails with the first error; this one is logged
                except Exception as exc:
                    logging.getLogger("minagent").error(
                        "%s kept the failed run's messages: %r", earlier, exc
                    )
            raise
