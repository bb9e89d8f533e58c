"""The Gemini API's wire format as one `minagent.providers.WireCodec`
(spec/gemini.md, spec/providers.md PV-38).

Theory of operation
-------------------
Sans-I/O (PV-1): `GeminiCodec` only joins the codec's parts for `HTTPChatClient`.
``encode`` renders the body (``_request.build_request``, GM-1 .. GM-11) as UTF-8 JSON and
returns the seed of the answer's generated call ids (``call_id_seed``, GM-14) as the
context that goes with it, so both modes make the same ids. ``decode`` reads a whole
answer (``_response``), ``stream_decoder`` an SSE stream (``_stream``); ``parse_error``
and ``status_error`` read and type a non-2xx answer (GM-18). A stream is complete with a
finish reason (GM-21): Gemini sends no terminator event.
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
    unreadable,
    wire_json,
)
from ._request import build_request, call_id_seed
from ._response import GeminiProtocolError, parse_error, parse_response, status_error
from ._stream import GeminiStreamDecoder

__all__ = ["GeminiCodec"]


class GeminiCodec:
    """``generateContent`` / ``streamGenerateContent?alt=sse``: JSON bodies,
    server-sent event streams (spec/gemini.md)."""

    provider = "gemini"
    request_id_headers = ("x-request-id",)
    protocol_error = GeminiProtocolError

    def headers(self, *, stream: bool) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, str]:
        """The body as UTF-8 JSON, and the seed of the answer's call ids (GM-14)."""
        request = build_request(messages, options, model=model)
        body = json.dumps(request, ensure_ascii=False).encode("utf-8")
        return body, call_id_seed(request)

    def decode(self, body: bytes, context: str) -> ChatResponse:
        """A whole answer; a body that is not valid JSON, or not an answer, is a
        `GeminiProtocolError` (PV-10, PV-49)."""
        data = wire_json(body, "response body", GeminiProtocolError)
        try:
            return parse_response(data, id_seed=context)
        except ProviderError:
            raise
        # PV-49: hostile values where the protocol has others
        except WIRE_ERRORS as exc:
            raise GeminiProtocolError(unreadable("the response body", exc)) from None

    def stream_decoder(
        self, context: str, *, max_line_size: int | None
    ) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(context, max_line_size=max_line_size)

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
        return status_error(status, message, request_id, headers=headers)

    def unfinished(self, decoder: GeminiStreamDecoder, finished: bool) -> str | None:
        if decoder.done or finished:
            return None
        return "the stream ended before a candidate's finishReason"
