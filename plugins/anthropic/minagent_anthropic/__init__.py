"""minagent-anthropic: the Anthropic Messages API provider for minagent (spec/anthropic.md).

The package has two halves (spec/providers.md):

- the sans-I/O codec, importable without aiohttp: `build_request`, `wire_tool_ids`,
  `parse_response`, `parse_error`, `MessagesStreamDecoder`, `SSEDecoder` and the errors;
- the aiohttp transport, `AnthropicChatClient` (the ``minagent.clients`` entry point
  ``anthropic``), in ``_client``, the only module that imports aiohttp, loaded on first use
  (PV-1, AN-21).
"""

from typing import TYPE_CHECKING, Any

from ._request import API_VERSION, DEFAULT_MAX_TOKENS, build_request, wire_tool_id, wire_tool_ids
from ._response import (
    DEFAULT_MAX_LINE_SIZE,
    AnthropicProtocolError,
    AnthropicStreamError,
    MessagesStreamDecoder,
    finish_reason,
    parse_error,
    parse_response,
    usage_details,
)
from ._sse import SSEDecoder, SSEEvent, SSELimitError

if TYPE_CHECKING:
    from ._client import AnthropicChatClient


def __getattr__(name: str) -> Any:
    """``AnthropicChatClient`` is imported on first use: the codec never loads aiohttp (PV-1)."""
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
