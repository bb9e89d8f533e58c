"""Lifecycle hooks (seed 004), compiled onto the three middleware pipelines
(spec/hooks.md).

Rules
-----
1. This package is optional: nothing in the core imports it, and it reaches the core
   through public names only.
2. ``__init__`` only re-exports: what hooks receive is in `requests.py`,
   `HookMiddleware`, its checks and the decorators in `compile.py`, the streaming bridge
   of ``wrap_model_call`` in `streaming.py`.
"""

from .compile import (
    HookMiddleware,
    after_agent,
    after_model,
    before_agent,
    before_model,
    wrap_model_call,
    wrap_tool_call,
)

# the wrap hooks' second parameter; importable, as before
from .requests import Handler as Handler
from .requests import HookState, ModelRequest, ToolCallRequest

__all__ = [
    "HookMiddleware",
    "HookState",
    "ModelRequest",
    "ToolCallRequest",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
    "wrap_model_call",
    "wrap_tool_call",
]
