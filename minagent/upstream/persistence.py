"""Per-service-call history persistence, upstream's
``require_per_service_call_history_persistence`` (spec/sessions.md SE-60 .. SE-63).

Rules
-----
1. ``Agent(..., require_per_service_call_history_persistence=True)`` replaces each of
   the agent's history providers by a `PerCallHistory` that stands in for it, and adds
   one `PerCallSaver` as chat middleware; ``False`` changes nothing (SE-60).
2. After every model call the saver hands each history provider what that call added:
   the run's input on the first call, the tool results and injected messages since the
   previous call on the others (``store_inputs``), and the call's response
   (``store_outputs``). Nothing is saved again at the end of the run (SE-61).
3. Where the service keeps the conversation (the effective ``store`` is true, or unset
   and the client's ``STORES_BY_DEFAULT`` is true) history is not loaded, a provider
   that would load is warned about, and the service's id reaches the session after every
   call (SE-62).
4. Where it does not, a ``conversation_id`` is refused: one given to the run
   (`AgentInvalidRequestException`) or one the service returns
   (`ChatClientInvalidResponseException`); the responses carry no ``response_id``, since
   the history, not the service, holds the conversation (SE-63).

Theory of operation
-------------------
A `PerCallHistory`'s ``before_run`` decides the run's mode, loads (or not) and records
the run in a context variable, which the run's model calls inherit, under its saver and
the run's session; the saver reads that record, so concurrent runs of one agent, and the
runs of agents nested in a tool of another, never share one. What a later call adds is
what follows the last assistant message of its messages (the previous call's response):
the tool results and injected messages; a call that continues a service's conversation
is sent only those.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Sequence
from typing import Any

from minagent import (
    AgentResponse,
    AgentSession,
    ChatMiddleware,
    HistoryProvider,
    Message,
    SessionContext,
)
from minagent._history import own_copy
from minagent._sessions import source_id_of

from .exceptions import AgentInvalidRequestException, ChatClientInvalidResponseException

__all__ = ["PerCallHistory", "PerCallSaver", "per_service_call"]

_LOG = logging.getLogger("agent_framework")
_NAME = "require_per_service_call_history_persistence"


class _Run:
    __slots__ = ("agent", "called", "context", "entries", "storing")

    def __init__(self, agent: Any, context: SessionContext, storing: bool) -> None:
        self.agent = agent
        self.context = context
        self.storing = storing
        self.entries: list[tuple[HistoryProvider, AgentSession, dict[str, Any]]] = []
        self.called = False  # whether a model call of the run returned


# the runs under way in this context, by (saver, the run's session): nested runs of
# other agents keep theirs
_RUNS: contextvars.ContextVar[dict[tuple[int, int], _Run] | None] = (
    contextvars.ContextVar("minagent_per_call", default=None)
)


def _key(saver: Any, session: Any) -> tuple[int, int]:
    return id(saver), id(session)


def _stores(client: Any, options: dict[str, Any]) -> bool:
    store = options.get("store")
    return (
        bool(getattr(client, "STORES_BY_DEFAULT", False))
        if store is None
        else bool(store)
    )


class PerCallHistory(HistoryProvider):
    """Stands in for a history provider when history is saved after every model call
    (SE-60)."""

    def __init__(self, inner: HistoryProvider, saver: PerCallSaver) -> None:
        # loads or not by ``inner``: no default history
        super().__init__(inner.source_id, load_messages=True)
        self.inner = inner
        self.saver = saver

    async def get_messages(
        self,
        session_id: str | None,
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Message]:
        return await self.inner.get_messages(session_id, state=state, **kwargs)

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        await self.inner.save_messages(session_id, messages, state=state, **kwargs)

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        runs = _RUNS.get()
        if runs is None:
            runs = {}
            _RUNS.set(runs)
        # the session the run was given (None: none)
        key = _key(self.saver, context._thread)
        run = runs.get(key)
        if run is None or run.context is not context:
            options = {**getattr(agent, "default_options", {}), **context.options}
            run = _Run(agent, context, _stores(getattr(agent, "client", None), options))
            runs[key] = run
            if not run.storing and (
                context.options.get("conversation_id") or context.service_session_id
            ):
                raise AgentInvalidRequestException(
                    f"{_NAME} cannot be used with a service-managed conversation_id when the service does not "
                    "store history (store=False): drop the conversation_id, or let the service store it"
                )
        run.entries.append((self.inner, session, state))
        if run.storing:
            if self.inner.load_messages:
                _LOG.warning(
                    "%s: the service stores the conversation, so %s's load_messages=True is not used",
                    _NAME,
                    self.source_id,
                )
        elif self.inner.load_messages:
            context.extend_messages(
                self, await self.inner.get_messages(context.session_id, state=state)
            )

    async def after_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        return None  # saved after every model call (SE-61)


class PerCallSaver(ChatMiddleware):
    """Saves what each model call added to the run's history providers (SE-61)."""

    async def process(self, context: Any, call_next: Any) -> None:
        run = (_RUNS.get() or {}).get(_key(self, context.session))
        if run is None:
            await call_next()
            return
        new = (
            _added_since_last_call(context.messages)
            if run.called
            else list(run.context.input_messages)
        )
        # the history, as saved so far, precedes what is new
        if run.called and not run.storing:
            history: list[Message] = []
            for provider, session, state in run.entries:
                if provider.load_messages:
                    history = await provider.get_messages(
                        session.session_id, state=state
                    )
                    break
            others = run.context.get_messages(
                exclude_sources={source_id_of(p) for p, _, _ in run.entries}
            )
            # copies, as LP-3 makes them: the history is the store's own objects and
            # what is new the transcript's, and the chat middleware after this one may
            # edit what it reads (SE-52, SE-53)
            context.messages = [own_copy(m) for m in (*others, *history, *new)]
        await call_next()
        if context.stream and context.result is not None:

            async def save(response: Any) -> Any:
                await self._save(run, new, response)
                return response

            context.result = context.result.with_result_hook(save)
        elif context.result is not None:
            await self._save(run, new, context.result)

    async def _save(self, run: _Run, new: list[Message], response: Any) -> None:
        run.called = True
        conversation_id = getattr(response, "conversation_id", None)
        if run.storing:
            if conversation_id:
                for _, session, _ in run.entries:
                    session.service_session_id = conversation_id
            else:
                _LOG.warning(
                    "%s: the service returned no conversation_id; the next run cannot resume it",
                    _NAME,
                )
        elif conversation_id:
            raise ChatClientInvalidResponseException(
                f"{_NAME} cannot be used when the service manages the conversation (it returned conversation_id "
                f"{conversation_id!r} with store=False): drop {_NAME}, or let the service store it"
            )
        else:
            response.response_id = None
        this_call = AgentResponse(
            list(response.messages),
            response_id=response.response_id,
            created_at=response.created_at,
            finish_reason=response.finish_reason,
            usage_details=response.usage_details,
            continuation_token=response.continuation_token,
            additional_properties=dict(response.additional_properties),
            raw_representation=response,
        )
        for provider, session, state in run.entries:
            view = SessionContext(
                session_id=session.session_id,
                service_session_id=session.service_session_id,
                input_messages=new,
                context_messages=run.context.context_messages,
                options=run.context.options,
            )
            view._response = this_call
            await provider.after_run(
                agent=run.agent, session=session, context=view, state=state
            )
            key = source_id_of(provider)
            # a new entry joins once it holds something (SE-4)
            if state and session.state.get(key) is not state:
                session.state[key] = state


def _added_since_last_call(messages: Sequence[Message]) -> list[Message]:
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return list(messages[last + 1 :])


def per_service_call(
    context_providers: Any, middleware: Any
) -> tuple[list[Any], list[Any]]:
    """The agent's providers and middleware when history is saved after every model call
    (SE-60)."""
    if context_providers is None:
        providers: list[Any] = []
    elif isinstance(context_providers, Sequence):
        providers = list(context_providers)
    else:
        providers = [context_providers]
    if not any(isinstance(p, HistoryProvider) for p in providers):
        from minagent import InMemoryHistoryProvider

        providers.insert(0, InMemoryHistoryProvider())
    saver = PerCallSaver()
    providers = [
        PerCallHistory(p, saver) if isinstance(p, HistoryProvider) else p
        for p in providers
    ]
    given = (
        []
        if middleware is None
        else list(middleware)
        if isinstance(middleware, Sequence)
        else [middleware]
    )
    return providers, [*given, saver]
