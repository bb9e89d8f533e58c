"""Tracing: OpenTelemetry GenAI spans and the run trace (spec/observability.md).

Optional: loaded on first use (``minagent.RunTrace``, ``minagent.render_mermaid``).
"""

from .runtrace import RunTrace, render_mermaid

__all__ = ["RunTrace", "render_mermaid"]
