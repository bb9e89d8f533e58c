"""The Ollama wire format as one `minagent.providers.WireCodec` (spec/ollama.md,
spec/providers.md PV-38).

Theory of operation
-------------------
Sans-I/O (PV-1): `OllamaCodec` only joins the codec's parts for `HTTPChatClient`.
``encode`` renders the body (``_request.build_request``, OL-1 .. OL-10, OL-24) as UTF-8
JSON, refusing what JSON cannot carry before anything is sent, and returns the request's
``call_id_seed`` as the context that goes with it, so generated tool-call ids are the
same in both modes (OL-15). ``decode`` reads a whole body (``_response``),
``stream_decoder`` an NDJSON stream (``_stream``); a non-2xx answer is read by
``parse_error`` and typed by ``error_for_answer`` (OL-19, OL-20). A stream is complete
only with its ``"done": true`` chunk (OL-22).
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
from ._response import (
    OllamaProtocolError,
    error_for_answer,
    parse_error,
    parse_response,
)
from ._stream import OllamaStreamDecoder

__all__ = ["OllamaCodec", "error_for_answer"]


class OllamaCodec:
    """``POST /api/chat``: JSON bodies, NDJSON streams (spec/ollama.md)."""

    provider = "ollama"
    # a proxy's; Ollama itself sends none (OL-19)
    request_id_headers = ("x-request-id",)
    protocol_error = OllamaProtocolError

    def headers(self, *, stream: bool) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": "application/x-ndjson" if stream else "application/json",
        }

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, str]:
        """The body as UTF-8 JSON, and the seed of its calls' ids (OL-15)."""
        request = build_request(messages, options, model=model, stream=stream)
        try:
            data = json.dumps(request, ensure_ascii=False, allow_nan=False).encode(
                "utf-8"
            )
        except ValueError as exc:
            raise ValueError(
                f"the request cannot be sent as JSON: {exc} (NaN and infinities are not JSON)"
            ) from None
        return data, call_id_seed(request)

    def decode(self, body: bytes, context: str) -> ChatResponse:
        """A whole body; one that is not valid JSON, or not an answer, is an
        `OllamaProtocolError` (PV-10, PV-49, OL-14)."""
        data = wire_json(body, "response body", OllamaProtocolError)
        try:
            return parse_response(data, id_seed=context)
        except ProviderError:
            raise
        # PV-49: hostile values where the protocol has others
        except WIRE_ERRORS as exc:
            raise OllamaProtocolError(unreadable("the response body", exc)) from None

    def stream_decoder(
        self, context: str, *, max_line_size: int | None
    ) -> OllamaStreamDecoder:
        return OllamaStreamDecoder(context, max_line_size=max_line_size)

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
        return error_for_answer(status, message, request_id, headers=headers)

    def unfinished(self, decoder: OllamaStreamDecoder, finished: bool) -> str | None:
        return (
            None if decoder.done else 'the stream ended before its "done": true chunk'
        )
