"""minagent-ollama: the native Ollama ``/api/chat`` provider for minagent (spec/ollama.md).

The package has two halves (spec/providers.md):

- the sans-I/O codec, importable without aiohttp: `build_request`, `parse_response`,
  `parse_error`, `OllamaStreamDecoder`, `call_id_seed`, `parse_host` and the errors;
- the aiohttp transport, `OllamaChatClient` (the ``minagent.clients`` entry point ``ollama``),
  in ``_client``, the only module that imports aiohttp, loaded on first use (PV-1, OL-23).
"""

from typing import TYPE_CHECKING, Any

from ._codec import (
    DEFAULT_HOST,
    OllamaModelNotFoundError,
    OllamaProtocolError,
    OllamaStreamDecoder,
    OllamaStreamError,
    build_request,
    call_id_seed,
    parse_error,
    parse_host,
    parse_response,
)

if TYPE_CHECKING:
    from ._client import OllamaChatClient


def __getattr__(name: str) -> Any:
    """``OllamaChatClient`` is imported on first use: the codec never loads aiohttp (PV-1)."""
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
