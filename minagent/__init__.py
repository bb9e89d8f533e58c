"""minagent: a dependency-free agent core (spec/README.md).

Three middleware pipelines (agent, chat, function), a tool-calling loop,
`ResponseStream`, options merging, threads and context providers, in the standard
library only. The rules are in ``spec/``; every name in ``__all__`` is part of that
specification.
"""

from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import _edge
from ._agents import Agent, BaseAgent, RawAgent, SupportsAgentRun
from ._clients import BaseChatClient, SupportsChatGetResponse
from ._convert import ArgumentConversionError
from ._exceptions import (
    ContentError,
    MiddlewareException,
    MiddlewareTermination,
    MinagentError,
    NoValueError,
    SerializationError,
    StreamError,
    UserInputRequiredError,
)
from ._history import is_valid_history, repair_history
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
from ._responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
)
from ._sessions import (
    AgentSession,
    ContextProvider,
    HistoryProvider,
    InMemoryHistoryProvider,
    SessionBusyError,
    SessionContext,
    register_state_type,
)
from ._stream import ResponseStream
from ._tools import (
    FunctionInvocationConfiguration,
    FunctionTool,
    ToolError,
    ToolProtocol,
    UnknownToolError,
    tool,
)
from ._types import (
    FORMAT_VERSION,
    Content,
    Message,
    MessageInput,
    Role,
    UsageDetails,
    normalize_messages,
)
from ._validate import (
    ArgumentLimits,
    ValidationIssue,
    argument_limits,
    set_argument_limits,
)
from ._version import __version__

# what type checkers see of the optional names (each folder's __all__)
if TYPE_CHECKING:
    from .mcp import *
    from .middleware.injection import *
    from .providers import *
    from .stores import *
    from .structured import *
    from .tracing import *
    from .upstream import *

# The optional features (spec/decisions.md, "The house"): each name loads its folder on
# first use (PEP 562), so `import minagent` loads the core only. Upstream's spellings
# (UP-9) resolve the same way but are not minagent's own API: they are not in __all__. A
# copy of the core without a folder still imports; the name then fails with an
# ImportError that names the missing folder. Upstream's API reached through a core object
# loads `upstream` by the same function, through the edge (`_load_upstream`, UP-10).
_FOLDERS = {
    "providers": "AuthenticationError BadRequestError NotFoundError PluginNotFoundError ProviderConnectionError "
    "ProviderError ProviderTimeoutError RateLimitError ServerError StreamInterruptedError get_client",
    "middleware": "MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY MessageInjectionMiddleware enqueue_messages",
    "mcp": "MCPConnectionError MCPError MCPProtocolError MCPRequestError MCPServer MCPStdioTool MCPTimeoutError "
    "MCPTool MCPToolError",
    "stores": "FileHistoryProvider FileSessionStore SQLiteHistoryProvider SQLiteSessionStore SessionStore",
    "structured": "ResponseFormat StructuredOutputDecodeError StructuredOutputError StructuredOutputValidationError",
    "tracing": "RunTrace Span Tracer current_span get_tracer render_mermaid set_tracer",
    "upstream": "AgentThread Context AdditionItemMismatch AgentException AgentFrameworkException "
    "AgentInvalidRequestException AgentInvalidResponseException Annotation ChatClientException "
    "ChatClientInvalidRequestException ChatClientInvalidResponseException ChatMiddlewareLayer "
    "ChatTelemetryLayer FunctionInvocationLayer SKIP_PARSING TextSpanRegion ToolException "
    "ToolExecutionException ToolMode UserInputRequiredException add_usage_details "
    "detect_media_type_from_base64 map_chat_to_agent_update normalize_function_invocation_configuration "
    # then names it says to replace:
    "OptionsCoT normalize_tools prepend_instructions_to_messages validate_tool_mode "
    "ChatMessageStore ChatMessageStoreProtocol ChatMessageStoreState AgentThreadState AggregateContextProvider "
    "ChatAgent ChatMessage AgentRunResponse AgentRunResponseUpdate AIFunction ai_function TextContent "
    "FunctionCallContent FunctionResultContent ChatClientProtocol",  # SE-64
}
_LAZY: dict[str, str] = {
    name: folder for folder, names in _FOLDERS.items() for name in names.split()
}


def _folder(folder: str, what: str) -> ModuleType:
    """The optional folder ``folder``, imported now for ``what``; in a copy of the core
    without it, an ImportError that names the folder to copy (PK-9)."""
    import importlib

    try:
        return importlib.import_module(f".{folder}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{folder}":
            raise
        raise ImportError(
            f"{what} lives in the optional folder minagent/{folder}/, which this copy of minagent "
            f"does not have; copy that folder beside the core to use it"
        ) from exc


def _require_folders(folders: tuple[str, ...], needed_by: str) -> None:
    """PK-19: import the optional folders a vendored plugin (``needed_by``) uses beside
    the core. In a copy of minagent without one of them, or with it incomplete, an
    ImportError that names the plugin and the folder and says to copy it (as PK-9 does
    for the core's own optional names); a module missing for another reason
    propagates."""
    import importlib
    import os

    for folder in folders:
        wanted = f"{__name__}.{folder}"
        try:
            importlib.import_module(wanted)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (
                exc.name == wanted or exc.name.startswith(wanted + ".")
            ):
                raise
            raise ImportError(
                f"{needed_by} needs the optional folder minagent/{folder}/ beside the "
                f"core; the copy of minagent at {os.path.dirname(__file__)} does not have "
                f"it whole (no module {exc.name}): copy that folder beside the core to use it"
            ) from exc


def __getattr__(name: str) -> Any:
    folder = _LAZY.get(name)
    if folder is None:
        raise AttributeError(f"module 'minagent' has no attribute {name!r}")
    value = getattr(_folder(folder, f"minagent.{name}"), name)
    globals()[name] = value  # resolved once
    return value


def _load_upstream(what: str) -> None:
    """The edge's loader (spec/decisions.md "The edge"): upstream's API reached through a
    core object (``Content.from_hosted_file``, ``agent.get_new_thread()``, ...) imports
    ``minagent/upstream/``, which installs its edge."""
    _folder("upstream", what)


_edge.set_loader(_load_upstream)


# the public names, sorted (PK-7)
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
    "FileHistoryProvider",
    "FileSessionStore",
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
    "NoValueError",
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
