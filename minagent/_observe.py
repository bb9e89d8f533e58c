"""Observing the route: the wrap points an observer attaches to (spec/observability.md
OB-1, OB-2).

Rules
-----
1. The route never asks whether it is observed. It calls the wrap points of `OBSERVER`,
   read once per run or per request; what they do is decided once, when an observer is
   installed.
2. An observer passes through: the same arguments in, the same result or exception out,
   in the same order. It may look; it never changes what it sees.
3. This module builds no span and knows no tracing library: `minagent.tracing` installs
   the observer that does (`set_tracer`), and anything else may install its own.

Theory of operation
-------------------
`Observer` is the default and observes nothing: a wrap point returns what it is given, a
note does nothing. The route uses three wrap points and three notes:

    point                                      called by          once per     wraps or
    notes
    run(agent, messages, stream, result)       RawAgent.run       run          the run (or its stream)
    model_call(call) -> call                   ToolLoop           request      the one
    model-call leaf tool_call(invoke, lookup) -> invoke        CallRunner
    request      one tool call model_turn(number, tool_choice, last)      ToolLoop
    model call   the loop calls the model step(outcome, next_step)
    ToolLoop           step         the table answered injected(count)
    ToolLoop           inbox drain  messages joined tool_raised(error)
    CallRunner         tool failure the tool itself raised

One more wrap point, ``middleware(layer, fns) -> fns``, is asked by RawAgent.run (the
agent layer, once per run), ToolLoop (chat) and CallRunner (function, both once per
request), and only for a pipeline that has middleware (OB-31): an observer may stand in
for each middleware, to time it.

One more wrap point serves a face that answers HTTP (minagent/hosting, spec/hosting.md
HS-180): ``request(scope, route, app) -> app`` wraps the ASGI callable that answers one
HTTP request, so every run the request makes happens inside what the observer puts
around it (a tracer's server span).

A wrapped callable is made once per request (pluggy's hook-call monitoring replaces its
executor the same way), so a run without an observer pays one pass-through call per wrap
point and nothing per update.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = [
    "OBSERVER",
    "REDACTIONS",
    "ASGIApp",
    "ModelCall",
    "Observer",
    "ToolInvoke",
    "current",
    "install",
]

T = TypeVar("T")

# (client, messages, options, client kwargs, stream) -> an awaitable ChatResponse, or a
# ResponseStream
ModelCall = Callable[[Any, list[Any], dict[str, Any], dict[str, Any], bool], Any]
# (call, the call's transcript view) -> (its result or None when pending, whether it
# terminated the loop)
ToolInvoke = Callable[[Any, Any], Awaitable[tuple[Any, bool]]]
# an ASGI 3 application: (scope, receive, send) -> an awaitable of None
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]
# the filters of the chat middleware around a model call (Redact), for what an observer
# records of its output (OB-21)
REDACTIONS: ContextVar[tuple[Callable[[str], str], ...]] = ContextVar(
    "minagent_redactions", default=()
)


class Observer:
    """The wrap points of the route; this base observes nothing (see the module
    docstring)."""

    def run(self, agent: Any, messages: Sequence[Any], stream: bool, result: T) -> T:
        """Wrap one agent run: ``result`` is its coroutine, or its ResponseStream when
        streaming."""
        return result

    def model_call(self, call: ModelCall) -> ModelCall:
        """Wrap the model-call leaf (the provider call behind chat middleware) for one
        request."""
        return call

    def tool_call(self, invoke: ToolInvoke, lookup: Callable[[Any], Any]) -> ToolInvoke:
        """Wrap one tool call's execution for one request; ``lookup(call)`` is the
        call's tool."""
        return invoke

    def request(
        self, scope: Mapping[str, Any], route: str | None, app: ASGIApp
    ) -> ASGIApp:
        """Wrap ``app``, the ASGI callable answering the one HTTP request ``scope``
        (HS-180); ``route`` is its path template when the server knows it."""
        return app

    def middleware(self, layer: str, middleware: Sequence[Any]) -> Sequence[Any]:
        """Wrap the middleware of one ``layer``'s pipeline (``agent`` once per run,
        ``chat`` and ``function`` once per request), only when it has some (OB-31):
        the middleware, or stand-ins that call each with the same context and a
        ``call_next`` running the rest."""
        return middleware

    def model_turn(self, number: int, tool_choice: Any, last: bool) -> None:
        """The loop is about to call the model (through chat middleware)."""

    def step(self, outcome: str, next_step: str) -> None:
        """The loop's table answered: ``outcome`` leads to ``next_step``."""

    def injected(self, count: int) -> None:
        """``count`` messages from the steering inbox joined the transcript."""

    def tool_raised(self, error: BaseException) -> None:
        """The tool itself raised; its call gets an error result."""


OBSERVER: Observer = Observer()


def install(observer: Observer | None) -> Observer:
    """Observe every run and request that starts from now on with ``observer`` (None:
    the default, which observes nothing); returns the observer that was installed
    before."""
    global OBSERVER
    if observer is not None and not isinstance(observer, Observer):
        raise TypeError(f"install() takes an Observer, got {type(observer).__name__}")
    previous, OBSERVER = OBSERVER, observer if observer is not None else Observer()
    return previous


def current() -> Observer:
    """The observer installed now."""
    return OBSERVER
