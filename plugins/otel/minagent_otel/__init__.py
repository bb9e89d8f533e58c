"""minagent-otel: minagent's spans as OpenTelemetry spans (spec/observability.md OB-17
.. OB-20).

Theory of operation
-------------------
``instrument()`` installs an `OtelTracer` as minagent's tracer
(``minagent.set_tracer``). The core calls it at three places (agent run, model call,
tool call) with the span name, the GenAI semantic-convention attributes and the parent
span; the bridge starts an OpenTelemetry span under that parent's OpenTelemetry span,
or, for a run with no minagent parent, under whatever span is current in OpenTelemetry's
own context (so an application's span encloses the run). While a tool runs, the core
enters ``activate(span)``, which makes the ``execute_tool`` span current in
OpenTelemetry's context: spans the tool starts itself nest under it. ``uninstrument()``
puts the previous tracer back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

import minagent
from minagent.tracing import error_type

__all__ = ["OtelTracer", "instrument", "uninstrument"]

SCOPE = "minagent"
_KINDS = {"chat": SpanKind.CLIENT}
_previous: list[tuple[Any, bool]] = []


class OtelSpan:
    """A minagent span backed by an OpenTelemetry span (OB-17)."""

    __slots__ = ("server", "span")

    def __init__(self, span: trace.Span, server: bool = False) -> None:
        self.span = span
        self.server = server

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.span.set_attributes(_attributes(attributes))
        # HS-185: a server span that answered 5xx has the status ERROR (a 4xx is the
        # client's error, not the server's)
        status = attributes.get("http.response.status_code")
        if self.server and isinstance(status, int) and status >= 500:
            self.span.set_status(Status(StatusCode.ERROR))

    def record_error(self, error: BaseException) -> None:
        # a RecordedToolError's: the tool's exception (OB-21)
        kind = error_type(error).rpartition(".")[2]
        self.span.record_exception(error, attributes={"exception.type": kind})
        self.span.set_status(Status(StatusCode.ERROR, kind))

    def add_event(self, name: str, attributes: Mapping[str, Any]) -> None:
        self.span.add_event(name, _attributes(attributes))

    def end(self) -> None:
        self.span.end()


class OtelTracer:
    """minagent's tracer protocol on an OpenTelemetry tracer (OB-17)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer(
            SCOPE, minagent.__version__, tracer_provider=tracer_provider
        )

    def start_span(
        self, name: str, attributes: Mapping[str, Any], parent: Any
    ) -> OtelSpan:
        context = (
            trace.set_span_in_context(parent.span)
            if isinstance(parent, OtelSpan)
            else None
        )
        operation = attributes.get("gen_ai.operation.name")
        kind = (
            _KINDS.get(operation, SpanKind.INTERNAL)
            if isinstance(operation, str)
            else SpanKind.INTERNAL
        )
        # spec/hosting.md HS-185: the span of an HTTP request the hosting application
        # answers (it has a request method and no GenAI operation) is a SERVER span
        server = operation is None and "http.request.method" in attributes
        span = self.tracer.start_span(
            name,
            context=context,
            kind=SpanKind.SERVER if server else kind,
            attributes=_attributes(attributes),
        )
        return OtelSpan(span, server)

    def activate(self, span: Any) -> AbstractContextManager[Any]:
        """OB-19: the tool's span is OpenTelemetry's current span while the tool
        runs."""
        otel_span = span.span if isinstance(span, OtelSpan) else trace.INVALID_SPAN
        return trace.use_span(
            otel_span,
            end_on_exit=False,
            record_exception=False,
            set_status_on_exception=False,
        )


def instrument(
    tracer_provider: trace.TracerProvider | None = None, *, record_content: bool = False
) -> OtelTracer:
    """Trace every minagent run with OpenTelemetry from now on (OB-17); returns the
    tracer.

    ``tracer_provider`` defaults to the global one; ``record_content=True`` also records
    message contents and tool arguments and results (OB-6)."""
    tracer = OtelTracer(tracer_provider)
    _previous.append((minagent.get_tracer(), _record_content()))
    minagent.set_tracer(tracer, record_content=record_content)
    return tracer


def uninstrument() -> None:
    """Put back the tracer that was in use before the last ``instrument()`` (OB-17)."""
    if _previous:
        tracer, record_content = _previous.pop()
        minagent.set_tracer(tracer, record_content=record_content)
    else:
        minagent.set_tracer(None)


def _record_content() -> bool:
    from minagent.tracing import records_content

    return records_content()


_Value = str | bool | int | float


def _attributes(attributes: Mapping[str, Any]) -> dict[str, _Value | Sequence[_Value]]:
    """OB-18: values OpenTelemetry accepts: scalars, and sequences of one scalar type
    (else strings)."""
    out: dict[str, _Value | Sequence[_Value]] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, str | bool | int | float):
            out[key] = value
        elif isinstance(value, list | tuple):
            items = [v for v in value if v is not None]
            same = items and all(
                type(v) is type(items[0]) and isinstance(v, str | bool | int | float)
                for v in items
            )
            out[key] = list(items) if same else [str(v) for v in items]
        else:
            out[key] = str(value)
    return out
