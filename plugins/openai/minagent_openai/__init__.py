"""minagent-openai: the OpenAI-compatible Chat Completions provider for minagent.

The package has two halves (spec/providers.md):

- the sans-I/O codec, importable without aiohttp: `build_request`, `parse_response`,
  `parse_error`, `ChatCompletionsStreamDecoder`, `SSEDecoder` and the errors;
- the aiohttp transport, `OpenAIChatClient` (the ``minagent.clients`` entry point ``openai``),
  in ``_client``, the only module that imports aiohttp, loaded on first use (PV-1);
- the Responses API (spec/openai-responses.md): the codec `build_responses_request`,
  `parse_responses_response`, `ResponsesStreamDecoder`, and the transport
  `OpenAIResponsesClient` (entry point ``openai-responses``), also loaded on first use (OR-21).
"""

from typing import TYPE_CHECKING, Any

from ._codec import (
    ChatCompletionsStreamDecoder,
    OpenAIProtocolError,
    OpenAIStreamError,
    build_request,
    decode_response,
    encode_request,
    parse_error,
    parse_response,
)
from ._responses_codec import build_responses_request, parse_responses_response
from ._responses_stream import ResponsesStreamDecoder
from ._sse import SSEDecoder, SSEEvent

if TYPE_CHECKING:
    from ._client import AzureOpenAIChatClient, OpenAIChatClient
    from ._responses_client import AzureOpenAIResponsesClient, OpenAIResponsesClient


def __getattr__(name: str) -> Any:
    """``OpenAIChatClient`` is imported on first use: the codec never loads aiohttp (PV-1)."""
    if name == "OpenAIChatClient":
        from ._client import OpenAIChatClient

        return OpenAIChatClient
    if name == "AzureOpenAIChatClient":  # OA-32
        from ._client import AzureOpenAIChatClient

        return AzureOpenAIChatClient
    if name == "OpenAIResponsesClient":  # OR-21: the Responses transport, loaded on first use too
        from ._responses_client import OpenAIResponsesClient

        return OpenAIResponsesClient
    if name == "AzureOpenAIResponsesClient":  # OR-23
        from ._responses_client import AzureOpenAIResponsesClient

        return AzureOpenAIResponsesClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AzureOpenAIChatClient",
    "AzureOpenAIResponsesClient",
    "ChatCompletionsStreamDecoder",
    "OpenAIChatClient",
    "OpenAIProtocolError",
    "OpenAIResponsesClient",
    "OpenAIStreamError",
    "ResponsesStreamDecoder",
    "SSEDecoder",
    "SSEEvent",
    "build_request",
    "build_responses_request",
    "decode_response",
    "encode_request",
    "parse_error",
    "parse_response",
    "parse_responses_response",
]
