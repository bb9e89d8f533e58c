"""minagent-openai: the OpenAI-compatible Chat Completions provider for minagent.

A plugin is its codecs and its connections (spec/providers.md, PV-38):

- the sans-I/O codecs, importable without aiohttp. Chat Completions: `build_request`
  (``_request``), `parse_response`, `parse_error` and the errors (``_response``),
  `ChatCompletionsStreamDecoder` (``_stream``, over the shared `SSEDecoder`). The
  Responses API (spec/openai-responses.md): `build_responses_request`
  (``_responses_request``), `parse_responses_response` (``_responses_response``),
  `ResponsesStreamDecoder` (``_responses_stream``). ``_codec`` joins each as a
  `WireCodec`;
- the connections, `OpenAIChatClient` and `AzureOpenAIChatClient` (``_client``, entry
  points ``openai`` and ``azure_openai``), `OpenAIResponsesClient` and
  `AzureOpenAIResponsesClient` (``_responses_client``, entry points ``openai-responses``
  and ``azure_openai_responses``):
  the environment, the URL and the credentials over the shared HTTP client and the
  aiohttp transport of ``minagent_http``, loaded on first use (PV-1, OA-25, OR-21).
"""

from typing import TYPE_CHECKING, Any

from ._minagent import SSEDecoder, SSEEvent
from ._request import build_request, encode_request
from ._response import (
    OpenAIProtocolError,
    OpenAIStreamError,
    decode_response,
    parse_error,
    parse_response,
)
from ._responses_request import build_responses_request
from ._responses_response import parse_responses_response
from ._responses_stream import ResponsesStreamDecoder
from ._stream import ChatCompletionsStreamDecoder

if TYPE_CHECKING:
    from ._client import AzureOpenAIChatClient, OpenAIChatClient

    # OA-25, decision 19: agent-framework-openai 1.17's name for the same class
    OpenAIChatCompletionClient = OpenAIChatClient
    from ._responses_client import AzureOpenAIResponsesClient, OpenAIResponsesClient


def __getattr__(name: str) -> Any:
    """The clients are imported on first use: the codec never loads aiohttp (PV-1)."""
    # OA-25, decision 19: agent-framework-openai 1.17 calls the Chat Completions
    # client OpenAIChatCompletionClient; here both names are that one class.
    if name in ("OpenAIChatClient", "OpenAIChatCompletionClient"):
        from ._client import OpenAIChatClient

        return OpenAIChatClient
    if name == "AzureOpenAIChatClient":  # OA-32
        from ._client import AzureOpenAIChatClient

        return AzureOpenAIChatClient
    # OR-21: the Responses transport, loaded on first use too
    if name == "OpenAIResponsesClient":
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
    "OpenAIChatCompletionClient",
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
