"""minagent: a dependency-free agent core.

Three middleware pipelines (agent, chat, function), a tool-calling loop, `ResponseStream`,
options merging, threads and context providers, in the standard library only. The rules
are in ``spec/``; every name in ``__all__`` is part of that specification.
"""

from ._exceptions import (
    ContentError,
    MiddlewareException,
    MiddlewareTermination,
    MinagentError,
    SerializationError,
    StreamError,
)
from ._options import ChatOptions, merge_options
from ._responses import AgentResponse, AgentResponseUpdate, ChatResponse, ChatResponseUpdate
from ._stream import ResponseStream
from ._types import FORMAT_VERSION, Content, Message, UsageDetails, normalize_messages
from ._version import __version__

__all__ = [
    "FORMAT_VERSION",
    "AgentResponse",
    "AgentResponseUpdate",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "ContentError",
    "Message",
    "MiddlewareException",
    "MiddlewareTermination",
    "MinagentError",
    "ResponseStream",
    "SerializationError",
    "StreamError",
    "UsageDetails",
    "__version__",
    "merge_options",
    "normalize_messages",
]
