"""minagent-anthropic: the Anthropic Messages API provider for minagent
(spec/anthropic.md).

A plugin is its codec and its connection (spec/providers.md, PV-38):

- the sans-I/O codec, importable without aiohttp: `build_request`, `wire_tool_ids`
  (``_request``), `parse_response`, `parse_error` and the errors (``_response``),
  `MessagesStreamDecoder` (``_stream``, over the shared `SSEDecoder`); ``_codec`` joins
  them as the `WireCodec` of `minagent.providers.HTTPChatClient`;
- the connection, `AnthropicChatClient` (the ``minagent.clients`` entry point
  ``anthropic``), in ``_client``: the environment, the URL and the key over the shared
  HTTP client and the aiohttp transport of ``minagent_http``, loaded on first use (PV-1,
  AN-21).
"""

from typing import TYPE_CHECKING, Any

from ._minagent import SSEDecoder, SSEEvent, SSELimitError
from ._request import (
    API_VERSION,
    DEFAULT_MAX_TOKENS,
    build_request,
    wire_tool_id,
    wire_tool_ids,
)
from ._response import (
    AnthropicProtocolError,
    AnthropicStreamError,
    finish_reason,
    parse_error,
    parse_response,
    usage_details,
)
from ._stream import DEFAULT_MAX_LINE_SIZE, MessagesStreamDecoder

if TYPE_CHECKING:
    from ._client import AnthropicChatClient


def __getattr__(name: str) -> Any:
    """``AnthropicChatClient`` is imported on first use: the codec never loads aiohttp
    (PV-1)."""
    if name == "AnthropicChatClient":
        from ._client import AnthropicChatClient

        return AnthropicChatClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "API_VERSION",
    "DEFAULT_MAX_LINE_SIZE",
    "DEFAULT_MAX_TOKENS",
    "AnthropicChatClient",
    "AnthropicProtocolError",
    "AnthropicStreamError",
    "MessagesStreamDecoder",
    "SSEDecoder",
    "SSEEvent",
    "SSELimitError",
    "build_request",
    "finish_reason",
    "parse_error",
    "parse_response",
    "usage_details",
    "wire_tool_id",
    "wire_tool_ids",
]
