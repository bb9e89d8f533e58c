"""Upstream's API on minagent: provider class bases and helpers (spec/upstream.md).

Optional: loaded on first use of one of its names (``minagent.FunctionInvocationLayer`` ...).

Rules
-----
1. Built on the core's public names only; the core reaches it through one seam (a provider class
   with upstream's single hook, spec/decisions.md).
2. ``__init__`` only re-exports.
"""

from .layers import ChatMiddlewareLayer, ChatTelemetryLayer, FunctionInvocationLayer, OptionsCoT, adapt_single_hook

__all__ = ["ChatMiddlewareLayer", "ChatTelemetryLayer", "FunctionInvocationLayer", "OptionsCoT", "adapt_single_hook"]
