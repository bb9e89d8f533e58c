"""minagent-ollama: the native Ollama ``/api/chat`` provider for minagent
(spec/ollama.md).

A plugin is its codec and its connection (spec/providers.md, PV-38):

- the sans-I/O codec, importable without aiohttp: `build_request` (``_request``),
  `parse_response`, `parse_error` and the errors (``_response``), `OllamaStreamDecoder`
  (``_stream``), `call_id_seed`, `parse_host`; ``_codec`` joins them as the `WireCodec`
  of `minagent.providers.HTTPChatClient`;
- the connection, `OllamaChatClient` (the ``minagent.clients`` entry point ``ollama``),
  in ``_client``: the environment, the URL and the key over the shared HTTP client and
  the aiohttp transport of ``minagent_http``, loaded on first use (PV-1, OL-23).
"""

from typing import TYPE_CHECKING, Any

from ._request import DEFAULT_HOST, build_request, call_id_seed, parse_host
from ._response import (
    OllamaModelNotFoundError,
    OllamaProtocolError,
    OllamaStreamError,
    parse_error,
    parse_response,
)
from ._stream import OllamaStreamDecoder

if TYPE_CHECKING:
    from ._client import OllamaChatClient


def __getattr__(name: str) -> Any:
    """``OllamaChatClient`` is imported on first use: the codec never loads aiohttp
    (PV-1)."""
    if name == "OllamaChatClient":
        from ._client import OllamaChatClient

        return OllamaChatClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_HOST",
    "OllamaChatClient",
    "OllamaModelNotFoundError",
    "OllamaProtocolError",
    "OllamaStreamDecoder",
    "OllamaStreamError",
    "build_request",
    "call_id_seed",
    "parse_error",
    "parse_host",
    "parse_response",
]
