"""Upstream's API on minagent: provider class bases, helpers and exception names
(spec/upstream.md).

Optional: loaded on first use of one of its names (``minagent.FunctionInvocationLayer``,
...).

Rules
-----
1. Built on the core's public names only; the core never imports this folder. What the
   core asks of upstream's API (other content kinds, the thread era, upstream's single
   provider hook, per-service-call history) it asks of the edge this folder installs
   when it is imported (``edge.py``, spec/decisions.md "The edge", UP-10).
2. ``__init__`` only re-exports, and installs the edge.
"""

from minagent._edge import install
from minagent._tools import SKIP_PARSING
from minagent._toolset import normalize_tools

from .edge import UpstreamEdge
from .exceptions import (
    AdditionItemMismatch,
    AgentException,
    AgentFrameworkException,
    AgentInvalidRequestException,
    AgentInvalidResponseException,
    ChatClientException,
    ChatClientInvalidRequestException,
    ChatClientInvalidResponseException,
    ToolException,
    ToolExecutionException,
    UserInputRequiredException,
)
from .helpers import (
    Annotation,
    TextSpanRegion,
    ToolMode,
    add_usage_details,
    detect_media_type_from_base64,
    map_chat_to_agent_update,
    normalize_function_invocation_configuration,
    prepend_instructions_to_messages,
    validate_tool_mode,
)
from .layers import (
    ChatMiddlewareLayer,
    ChatTelemetryLayer,
    FunctionInvocationLayer,
    OptionsCoT,
    adapt_single_hook,
)
from .state import register_state_type
from .threads import AgentThread, Context

__all__ = [
    "SKIP_PARSING",
    "AdditionItemMismatch",
    "AgentException",
    "AgentFrameworkException",
    "AgentInvalidRequestException",
    "AgentInvalidResponseException",
    "AgentThread",
    "Annotation",
    "ChatClientException",
    "ChatClientInvalidRequestException",
    "ChatClientInvalidResponseException",
    "ChatMiddlewareLayer",
    "ChatTelemetryLayer",
    "Context",
    "FunctionInvocationLayer",
    "OptionsCoT",
    "TextSpanRegion",
    "ToolException",
    "ToolExecutionException",
    "ToolMode",
    "UserInputRequiredException",
    "adapt_single_hook",
    "add_usage_details",
    "detect_media_type_from_base64",
    "map_chat_to_agent_update",
    "normalize_function_invocation_configuration",
    "normalize_tools",
    "prepend_instructions_to_messages",
    "register_state_type",
    "validate_tool_mode",
]


install(UpstreamEdge())


def __getattr__(name: str) -> object:
    """SE-64: one of upstream's names minagent has not is an AttributeError saying what
    to use."""
    from .spellings import hint

    raise AttributeError(f"module 'minagent' has no attribute {name!r}{hint(name)}")
