"""minagent-gemini: the Gemini API provider for minagent (spec/gemini.md).

A plugin is its codec and its connection (spec/providers.md, PV-38):

- the sans-I/O codec, importable without aiohttp: `build_request`, `model_path`,
  `call_id_seed` (``_request``), `parse_response`, `parse_error`, `finish_reason`,
  `usage_details` and the errors (``_response``), `GeminiStreamDecoder` (``_stream``,
  over the shared `SSEDecoder`); ``_codec`` joins them as the `WireCodec` of
  `minagent.providers.HTTPChatClient`;
- the connection, `GeminiChatClient` (the ``minagent.clients`` entry point ``gemini``),
  in ``_client``: the environment, the URL and the key over the shared HTTP client and
  its default transport, loaded on first use (PV-1, GM-24).
"""

from typing import TYPE_CHECKING, Any

from ._codec import GeminiCodec
from ._request import build_request, call_id_seed, model_path
from ._response import (
    GeminiProtocolError,
    GeminiSafetyError,
    GeminiStreamError,
    finish_reason,
    parse_error,
    parse_response,
    usage_details,
)
from ._stream import DEFAULT_MAX_LINE_SIZE, GeminiStreamDecoder

if TYPE_CHECKING:
    from ._client import GeminiChatClient


def __getattr__(name: str) -> Any:
    """``GeminiChatClient`` is imported on first use: the codec never loads a network
    library (PV-1)."""
    if name == "GeminiChatClient":
        from ._client import GeminiChatClient

        return GeminiChatClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MAX_LINE_SIZE",
    "GeminiChatClient",
    "GeminiCodec",
    "GeminiProtocolError",
    "GeminiSafetyError",
    "GeminiStreamDecoder",
    "GeminiStreamError",
    "build_request",
    "call_id_seed",
    "finish_reason",
    "model_path",
    "parse_error",
    "parse_response",
    "usage_details",
]
