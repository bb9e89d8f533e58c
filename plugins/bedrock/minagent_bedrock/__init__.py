"""minagent-bedrock: the Amazon Bedrock Converse API provider for minagent
(spec/bedrock.md).

A plugin is its codec and its connection (spec/providers.md, PV-38):

- the sans-I/O codec, importable without aiohttp: `build_request` (``_request``),
  `parse_response`, `parse_error` and the errors (``_response``), the event-stream
  framing (``_eventstream``), `ConverseStreamDecoder` (``_stream``), SigV4 and the
  credentials (``_sigv4``); ``_codec`` joins them as the `WireCodec` of
  `minagent.providers.HTTPChatClient`;
- the connection, `BedrockChatClient` (the ``minagent.clients`` entry point
  ``bedrock``), in ``_client``: region, endpoint, credentials and signing over the
  shared HTTP client and transport, loaded on first use (PV-1).
"""

from typing import TYPE_CHECKING, Any

from ._codec import EVENT_STREAM, ConverseCodec
from ._eventstream import (
    EventMessage,
    EventStreamDecoder,
    EventStreamError,
    encode_message,
)
from ._request import build_request
from ._response import (
    BedrockProtocolError,
    BedrockStreamError,
    finish_reason,
    parse_error,
    parse_response,
    usage_details,
)
from ._sigv4 import Credentials, CredentialsError, resolve_credentials, sign_headers
from ._stream import ConverseStreamDecoder

if TYPE_CHECKING:
    from ._client import BedrockChatClient, SigningTransport


def __getattr__(name: str) -> Any:
    """The connection is imported on first use (PV-1)."""
    if name in ("BedrockChatClient", "SigningTransport"):
        from . import _client

        return getattr(_client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EVENT_STREAM",
    "BedrockChatClient",
    "BedrockProtocolError",
    "BedrockStreamError",
    "ConverseCodec",
    "ConverseStreamDecoder",
    "Credentials",
    "CredentialsError",
    "EventMessage",
    "EventStreamDecoder",
    "EventStreamError",
    "SigningTransport",
    "build_request",
    "encode_message",
    "finish_reason",
    "parse_error",
    "parse_response",
    "resolve_credentials",
    "sign_headers",
    "usage_details",
]
