"""Tracing: OpenTelemetry GenAI spans and the run trace (spec/observability.md).

Optional: loaded on first use (``minagent.set_tracer``, ``minagent.RunTrace``, ...). It
attaches to the core's wrap points (`minagent._observe`); the core never imports this
folder.
"""

from .genai import (
    GenAIObserver,
    RecordedToolError,
    Span,
    Tracer,
    current_span,
    error_type,
    get_tracer,
    records_content,
    set_tracer,
)
from .runtrace import RunTrace, render_mermaid

__all__ = [
    "GenAIObserver",
    "RecordedToolError",
    "RunTrace",
    "Span",
    "Tracer",
    "current_span",
    "error_type",
    "get_tracer",
    "records_content",
    "render_mermaid",
    "set_tracer",
]
