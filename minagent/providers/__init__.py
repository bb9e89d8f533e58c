"""What provider plugins build on (spec/providers.md). A plugin imports from here.

- ``errors``: the `ProviderError` family, ``error_for_status``, ``describe``, the
  server's delay;
- ``secrets``: `Secret`, ``redact``, ``redact_headers``;
- ``retry``: `RetryPolicy`, ``retry_call``;
- ``sse``: the sans-I/O server-sent events decoder;
- ``transport``: the `Transport` protocol (what moves bytes), `TransportError`,
  `LoopBound`;
- ``default``: ``transport_for`` (a plugin's default transport: aiohttp's when it can
  be imported, else ``stdlib``'s `StdlibTransport`, HTTP/1.1 over asyncio streams,
  loaded on first use);
- ``http``: the `WireCodec` protocol a plugin writes, and `HTTPChatClient`, the one HTTP
  chat client every provider plugin subclasses;
- ``registry``: ``get_client`` and the ``minagent.clients`` entry points;
- ``wire``: strict JSON of wire data and what an unreadable answer is (``wire.loads``,
  PV-49);
- the core's tool records a codec reads: `ToolSpec`, ``tool_specs(options["tools"])``
  (TL-13).

Optional: the core never imports this folder; ``minagent.get_client`` and the provider
errors (``minagent.RateLimitError``, ...) load it on first use. Standard library only.
"""

from .._toolset import ToolSpec, tool_specs
from .default import transport_for
from .errors import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    describe,
    error_for_status,
    parse_duration,
    server_delay,
)
from .http import HTTPChatClient, StreamDecoder, WireCodec
from .registry import (
    ENTRY_POINT_GROUP,
    PluginNotFoundError,
    available_providers,
    get_client,
)
from .retry import RetryPolicy, SupportsRandom, retry_call
from .secrets import Secret, redact, redact_headers
from .sse import SSEDecoder, SSEEvent, SSELimitError
from .transport import (
    LoopBound,
    Request,
    Response,
    Timeouts,
    Transport,
    TransportError,
)
from .wire import WIRE_ERRORS, unreadable
from .wire import loads as wire_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stdlib import StdlibTransport


def __getattr__(name: str) -> object:
    """`StdlibTransport` loads on first use (it imports ``zlib`` and, for HTTPS,
    ``ssl``)."""
    if name == "StdlibTransport":
        from .stdlib import StdlibTransport

        return StdlibTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENTRY_POINT_GROUP",
    "WIRE_ERRORS",
    "AuthenticationError",
    "BadRequestError",
    "HTTPChatClient",
    "LoopBound",
    "NotFoundError",
    "PluginNotFoundError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "Request",
    "Response",
    "RetryPolicy",
    "SSEDecoder",
    "SSEEvent",
    "SSELimitError",
    "Secret",
    "ServerError",
    "StdlibTransport",
    "StreamDecoder",
    "StreamInterruptedError",
    "SupportsRandom",
    "Timeouts",
    "ToolSpec",
    "Transport",
    "TransportError",
    "WireCodec",
    "available_providers",
    "describe",
    "error_for_status",
    "get_client",
    "parse_duration",
    "redact",
    "redact_headers",
    "retry_call",
    "server_delay",
    "tool_specs",
    "transport_for",
    "unreadable",
    "wire_json",
]
