"""The two OpenAI wire formats as `minagent.providers.WireCodec`s (spec/providers.md,
spec/openai-responses.md).

Theory of operation
-------------------
Sans-I/O (PV-1): each codec only joins its parts for `HTTPChatClient`.

* `ChatCompletionsCodec` (``POST /chat/completions``): ``encode`` is ``build_request``
  (with the client's ``max_tokens_key``, OA-9) and ``encode_request`` (valid JSON or a
  ``ValueError``, OA-27); ``decode`` is ``decode_response``; streams are
  ``ChatCompletionsStreamDecoder``s; a stream is complete with ``[DONE]`` or a finish
  reason (PV-15).
* `ResponsesCodec` (``POST /responses``): ``encode`` is ``build_responses_request`` as
  UTF-8 JSON, and the request's ``store`` option is the context that goes with it
  (OR-15); ``decode`` reads strict JSON and ``parse_responses_response``; streams are
  ``ResponsesStreamDecoder``s, complete only with their terminal event (OR-18, OR-20).

Both read non-2xx answers with the same ``parse_error`` (OA-19) and raise the same
errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._minagent import (
    WIRE_ERRORS,
    ChatResponse,
    Message,
    ProviderError,
    error_for_status,
    unreadable,
)
from ._request import build_request, encode_request
from ._response import OpenAIProtocolError, decode_response, loads, parse_error
from ._responses_request import build_responses_request
from ._responses_response import parse_responses_response
from ._responses_stream import ResponsesStreamDecoder
from ._stream import ChatCompletionsStreamDecoder

__all__ = ["ChatCompletionsCodec", "ResponsesCodec"]


class _OpenAIWire:
    """What the two APIs share: JSON requests, server-sent event streams, the error
    body."""

    provider = "openai"
    request_id_headers = ("x-request-id",)
    protocol_error = OpenAIProtocolError

    def headers(self, *, stream: bool) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
        }

    def parse_error(
        self, status: int, body: bytes, headers: Mapping[str, str]
    ) -> tuple[str, str | None]:
        return parse_error(status, body, headers)

    def status_error(
        self,
        status: int,
        message: str,
        request_id: str | None,
        headers: Mapping[str, str],
    ) -> ProviderError:
        return error_for_status(
            status, message, request_id, provider=self.provider, headers=headers
        )


class ChatCompletionsCodec(_OpenAIWire):
    """``POST /chat/completions`` (spec/providers.md, OA-1 .. OA-34)."""

    def __init__(self, *, max_tokens_key: str = "max_completion_tokens") -> None:
        self.max_tokens_key = max_tokens_key

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, None]:
        request = build_request(
            messages,
            options,
            model=model,
            stream=stream,
            max_tokens_key=self.max_tokens_key,
        )
        return encode_request(request), None

    def decode(self, body: bytes, context: None) -> ChatResponse:
        return decode_response(body)

    def stream_decoder(
        self, context: None, *, max_line_size: int | None
    ) -> ChatCompletionsStreamDecoder:
        return ChatCompletionsStreamDecoder(max_line_size=max_line_size)

    def unfinished(
        self, decoder: ChatCompletionsStreamDecoder, finished: bool
    ) -> str | None:
        if decoder.done or finished:
            return None
        return "the stream ended before [DONE] and without a finish_reason"


class ResponsesCodec(_OpenAIWire):
    """``POST /responses`` (spec/openai-responses.md, OR-1 .. OR-20)."""

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, bool | None]:
        """The body as UTF-8 JSON, and the request's ``store`` option (OR-15)."""
        request = build_responses_request(messages, options, model=model, stream=stream)
        store = options.get("store")
        return json.dumps(request, ensure_ascii=False, allow_nan=False).encode(
            "utf-8"
        ), (store if isinstance(store, bool) else None)

    def decode(self, body: bytes, context: bool | None) -> ChatResponse:
        """A whole ``response`` object; a body that is not strict JSON, or not a
        response, is a protocol error (PV-10, PV-49)."""
        data = loads(body, "the response body")
        try:
            return parse_responses_response(data, store=context)
        except ProviderError:
            raise
        # PV-49: hostile values where the protocol has others
        except WIRE_ERRORS as exc:
            raise OpenAIProtocolError(unreadable("the response body", exc)) from None

    def stream_decoder(
        self, context: bool | None, *, max_line_size: int | None
    ) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder(store=context, max_line_size=max_line_size)

    def unfinished(self, decoder: ResponsesStreamDecoder, finished: bool) -> str | None:
        return None if decoder.done else "the stream ended before response.completed"
