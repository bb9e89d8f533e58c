"""minagent: a dependency-free agent core.

Three middleware pipelines (agent, chat, function), a tool-calling loop, `ResponseStream`,
options merging, threads and context providers, in the standard library only. The rules
are in ``spec/``; every name in ``__all__`` is part of that specification.
"""

from typing import TYPE_CHECKING, Any

from ._agents import Agent, BaseAgent, RawAgent, SupportsAgentRun
from ._clients import BaseChatClient, SupportsChatGetResponse
from ._convert import ArgumentConversionError
from ._exceptions import (
    ContentError,
    MiddlewareException,
    MiddlewareTermination,
    MinagentError,
    SerializationError,
    StreamError,
    UserInputRequiredError,
)
from ._history import is_valid_history, repair_history
from ._limits import ArgumentLimits, argument_limits, set_argument_limits
from ._loop import Inbox
from ._middleware import (
    AgentContext,
    AgentMiddleware,
    CallNext,
    CategorizedMiddleware,
    ChatContext,
    ChatMiddleware,
    FunctionInvocationContext,
    FunctionMiddleware,
    agent_middleware,
    categorize_middleware,
    chat_middleware,
    function_middleware,
)
from ._options import ChatOptions, merge_options
from ._plugins import PluginNotFoundError, get_client
from ._responses import AgentResponse, AgentResponseUpdate, ChatResponse, ChatResponseUpdate
from ._schema import ValidationIssue
from ._sessions import (
    AgentSession,
    HistoryProvider,
    InMemoryHistoryProvider,
    SessionBusyError,
    SessionContext,
    SessionStore,
    register_state_type,
)
from ._sqlite import SQLiteHistoryProvider, SQLiteSessionStore
from ._stream import ResponseStream
from ._structured import (
    ResponseFormat,
    StructuredOutputDecodeError,
    StructuredOutputError,
    StructuredOutputValidationError,
)
from ._threads import AgentThread, Context, ContextProvider
from ._tools import FunctionInvocationConfiguration, FunctionTool, ToolError, ToolProtocol, UnknownToolError, tool
from ._tracing import Span, Tracer, current_span, get_tracer, set_tracer
from ._types import FORMAT_VERSION, Content, Message, MessageInput, Role, UsageDetails, normalize_messages
from ._version import __version__

if TYPE_CHECKING:
    from ._mcp_client import MCPStdioTool, MCPTool
    from ._mcp_server import MCPServer
    from ._mcp_session import (
        MCPConnectionError,
        MCPError,
        MCPProtocolError,
        MCPRequestError,
        MCPTimeoutError,
        MCPToolError,
    )
    from ._providers import (
        AuthenticationError,
        BadRequestError,
        NotFoundError,
        ProviderConnectionError,
        ProviderError,
        ProviderTimeoutError,
        RateLimitError,
        ServerError,
        StreamInterruptedError,
    )
    from ._runtrace import RunTrace, render_mermaid

# Provider errors are for plugins and their callers; their module (retry policy, secrets) loads on
# first use, which keeps `import minagent` within its import-time budget (benchmarks/README.md).
_PROVIDER_ERRORS = frozenset(
    {
        "AuthenticationError",
        "BadRequestError",
        "NotFoundError",
        "ProviderConnectionError",
        "ProviderError",
        "ProviderTimeoutError",
        "RateLimitError",
        "ServerError",
        "StreamInterruptedError",
    }
)


# MCP (spec/mcp.md) loads on first use too: most programs never touch it.
_MCP = {
    "MCPConnectionError": "_mcp_session",
    "MCPError": "_mcp_session",
    "MCPProtocolError": "_mcp_session",
    "MCPRequestError": "_mcp_session",
    "MCPTimeoutError": "_mcp_session",
    "MCPToolError": "_mcp_session",
    "MCPTool": "_mcp_client",
    "MCPStdioTool": "_mcp_client",
    "MCPServer": "_mcp_server",
}

# The run trace (spec/observability.md OB-12) loads on first use too.
_RUN_TRACE = {"RunTrace": "_runtrace", "render_mermaid": "_runtrace"}


def __getattr__(name: str) -> Any:
    if name in _PROVIDER_ERRORS:
        from . import _providers

        return getattr(_providers, name)
    if name in _MCP or name in _RUN_TRACE:
        import importlib

        module = _MCP.get(name) or _RUN_TRACE[name]
        return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module 'minagent' has no attribute {name!r}")


__all__ = [
    "FORMAT_VERSION",
    "Agent",
    "AgentContext",
    "AgentMiddleware",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentSession",
    "AgentThread",
    "ArgumentConversionError",
    "ArgumentLimits",
    "AuthenticationError",
    "BadRequestError",
    "BaseAgent",
    "BaseChatClient",
    "CallNext",
    "CategorizedMiddleware",
    "ChatContext",
    "ChatMiddleware",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "ContentError",
    "Context",
    "ContextProvider",
    "FunctionInvocationConfiguration",
    "FunctionInvocationContext",
    "FunctionMiddleware",
    "FunctionTool",
    "HistoryProvider",
    "InMemoryHistoryProvider",
    "Inbox",
    "MCPConnectionError",
    "MCPError",
    "MCPProtocolError",
    "MCPRequestError",
    "MCPServer",
    "MCPStdioTool",
    "MCPTimeoutError",
    "MCPTool",
    "MCPToolError",
    "Message",
    "MessageInput",
    "MiddlewareException",
    "MiddlewareTermination",
    "MinagentError",
    "NotFoundError",
    "PluginNotFoundError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "RawAgent",
    "ResponseFormat",
    "ResponseStream",
    "Role",
    "RunTrace",
    "SQLiteHistoryProvider",
    "SQLiteSessionStore",
    "SerializationError",
    "ServerError",
    "SessionBusyError",
    "SessionContext",
    "SessionStore",
    "Span",
    "StreamError",
    "StreamInterruptedError",
    "StructuredOutputDecodeError",
    "StructuredOutputError",
    "StructuredOutputValidationError",
    "SupportsAgentRun",
    "SupportsChatGetResponse",
    "ToolError",
    "ToolProtocol",
    "Tracer",
    "UnknownToolError",
    "UsageDetails",
    "UserInputRequiredError",
    "ValidationIssue",
    "__version__",
    "agent_middleware",
    "argument_limits",
    "categorize_middleware",
    "chat_middleware",
    "current_span",
    "function_middleware",
    "get_client",
    "get_tracer",
    "is_valid_history",
    "merge_options",
    "normalize_messages",
    "register_state_type",
    "render_mermaid",
    "repair_history",
    "set_argument_limits",
    "set_tracer",
    "tool",
]
