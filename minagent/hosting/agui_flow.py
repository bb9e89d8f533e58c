"""The flow of an AG-UI run in detail (spec/hosting.md HS-98): each middleware's own time
and the loop table's decisions, as the run's ``CUSTOM`` events.

Rules
-----
1. Nothing is measured twice: the loop's decisions are the observer's ``step`` notes
   (OB-11) and the middleware are timed through the observer's ``middleware`` wrap
   point (OB-31). This module installs no tracer and builds no span.
2. The observer is the process's (OB-2). While runs that asked for the flow go on,
   `FlowObserver` stands in front of the observer installed before and passes every
   wrap point and note through to it unchanged; it reports only to the run whose
   context it is called in (a context variable), so other runs see nothing of it.
3. A run's reports are synchronous (a note cannot await); the run keeps them and sends
   them before its next event (`minagent.hosting.agui`).

Theory of operation
-------------------
`flow_run(sink)` is entered around one run: it sets the context variable to the run's
`FlowSink` and, for the first such run, installs a `FlowObserver` wrapping the observer
in place; the last run to leave puts that observer back, unless another was installed
meanwhile (then the newer one stays). A middleware the observer stands in for is timed
by `_timed`: the time from its start to its end, less the time spent in its
``call_next``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

from minagent._observe import ModelCall, Observer, ToolInvoke, current, install

from .devui import _name_of

__all__ = ["FlowObserver", "FlowSink", "flow_run"]


class FlowSink(Protocol):
    """What a run that asked for the flow is told (`minagent.hosting.agui._Run`)."""

    def own(self, middleware: Any) -> bool:
        """Whether ``middleware`` is the endpoint's own (not reported, HS-98)."""
        ...

    def middleware_done(
        self, layer: str, name: str, context: Any, milliseconds: float
    ) -> None:
        """A middleware of ``layer`` finished, having spent ``milliseconds`` itself."""
        ...

    def decided(self, outcome: str, next_step: str) -> None:
        """The loop's table answered (OB-11)."""
        ...


# the sink of the run whose context the observer is called in
_SINK: ContextVar[FlowSink | None] = ContextVar("minagent_agui_flow", default=None)


def _timed(sink: FlowSink, layer: str, middleware: Any) -> Callable[..., Any]:
    """A stand-in for ``middleware`` that reports its own time to ``sink`` (OB-31)."""
    name = _name_of(middleware)

    async def timed(context: Any, call_next: Any) -> None:
        inside = 0.0

        async def next_(*args: Any) -> None:
            nonlocal inside
            began = time.perf_counter()
            try:
                await call_next(*args)
            finally:
                inside += time.perf_counter() - began

        began = time.perf_counter()
        try:
            await middleware(context, next_)
        finally:
            spent = time.perf_counter() - began - inside
            sink.middleware_done(layer, name, context, max(0.0, spent) * 1000)

    return timed


class FlowObserver(Observer):
    """Passes everything through to ``inner``; tells the current run's sink of each
    loop decision and times its middleware (HS-98)."""

    def __init__(self, inner: Observer) -> None:
        self.inner = inner

    def run(
        self, agent: Any, messages: Sequence[Any], stream: bool, result: Any
    ) -> Any:
        return self.inner.run(agent, messages, stream, result)

    def model_call(self, call: ModelCall) -> ModelCall:
        return self.inner.model_call(call)

    def tool_call(self, invoke: ToolInvoke, lookup: Callable[[Any], Any]) -> ToolInvoke:
        return self.inner.tool_call(invoke, lookup)

    def request(self, scope: Any, route: str | None, app: Any) -> Any:
        return self.inner.request(scope, route, app)

    def model_turn(self, number: int, tool_choice: Any, last: bool) -> None:
        self.inner.model_turn(number, tool_choice, last)

    def injected(self, count: int) -> None:
        self.inner.injected(count)

    def tool_raised(self, error: BaseException) -> None:
        self.inner.tool_raised(error)

    def step(self, outcome: str, next_step: str) -> None:
        self.inner.step(outcome, next_step)
        sink = _SINK.get()
        if sink is not None:
            sink.decided(outcome, next_step)

    def middleware(self, layer: str, middleware: Sequence[Any]) -> Sequence[Any]:
        middleware = self.inner.middleware(layer, middleware)
        sink = _SINK.get()
        if sink is None:
            return middleware
        return [m if sink.own(m) else _timed(sink, layer, m) for m in middleware]


# the observer this module installed, and how many runs use it
_installed: FlowObserver | None = None
_users = 0


@contextlib.contextmanager
def flow_run(sink: FlowSink) -> Iterator[None]:
    """Report the flow of the runs made in this context to ``sink`` (HS-98)."""
    global _installed, _users
    if _installed is None or current() is not _installed:
        _installed = FlowObserver(current())
        install(_installed)
    _users += 1
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)
        _users -= 1
        if _users == 0:
            if _installed is not None and current() is _installed:
                install(_installed.inner)
            _installed = None
