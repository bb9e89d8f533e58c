"""Per-run state of the library's middleware: `_PerRun` (spec/middleware-library.md,
ML-5, ML-6, ML-8).

Rules
-----
1. A value that belongs to one run lives in the context variable ``_RUN``, set by the
   run scope compiled in before the middleware's hooks; never on the middleware
   instance, which concurrent runs share.
2. Nothing outlives the run: the previous value is restored however the run ends,
   including failure and an abandoned stream (its cleanup hook, ST-6).

Theory of operation
-------------------
`_PerRun` compiles one more agent middleware, ``run_scope``, outermost of its parts. It
maps ``id(middleware)`` to fresh `_RunCounts` in ``_RUN`` for the run; the hooks read
them through ``_counts()``. Concurrent runs, each in its own task, never see each
other's counts. Counts per thread live in ``thread.state`` under the class's key, so
they travel with a serialised thread (TH-2).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import MinagentError
from .._middleware import AgentContext, CallNext, MiddlewareFn, agent_middleware
from .._types import Content
from ..hooks import HookMiddleware


@dataclass
class _RunCounts:
    thread: Any = None
    model: int = 0
    tools: int = 0
    ended: bool = False
    approvals: dict[str, Content] = field(default_factory=dict)


_RUN: contextvars.ContextVar[dict[int, _RunCounts]] = contextvars.ContextVar(
    "minagent_middleware_run"
)


class _PerRun(HookMiddleware):
    """Per-run state in a context variable (see the module docstring); per-thread counts
    in ``thread.state`` (so they travel with a serialised thread, TH-2)."""

    def _counts(self) -> _RunCounts:
        counts = _RUN.get({}).get(id(self))
        if (
            counts is None
        ):  # pragma: no cover - run_scope is compiled in with every hook of these classes
            raise MinagentError(
                f"{type(self).__name__} needs an Agent run: pass it to Agent(middleware=[...])"
            )
        return counts

    def _compile(self, hooks: frozenset[str], tools: list[Any]) -> list[MiddlewareFn]:
        """The run scope first (outermost of this middleware's parts), then the hooks
        (HK-1)."""
        owner = self

        async def run_scope(context: AgentContext, call_next: CallNext) -> None:
            """Fresh counts for this run; the previous value is restored however the run
            ends, also when it fails, so nothing outlives the run (a stream restores it
            in its cleanup, ST-6)."""
            previous = _RUN.get({})
            _RUN.set({**previous, id(owner): _RunCounts(context.thread)})
            if context.stream:
                context.stream_cleanup_hooks.append(lambda: _RUN.set(previous))
                await call_next()
                return
            try:
                await call_next()
            finally:
                _RUN.set(previous)

        run_scope.__qualname__ = run_scope.__name__ = f"{self.name}.run_scope"
        return [agent_middleware(run_scope), *super()._compile(hooks, tools)]

    def _thread_key(self) -> str:
        return f"minagent.middleware.{type(self).__name__}"

    def _thread_count(self, thread: Any) -> int:
        count = thread.state.get(self._thread_key(), 0) if thread is not None else 0
        return count if isinstance(count, int) else 0

    def _bump_thread(self, thread: Any) -> None:
        if thread is not None:
            thread.state[self._thread_key()] = self._thread_count(thread) + 1
