"""The Converse wire format as one `minagent.providers.WireCodec` (spec/bedrock.md,
spec/providers.md PV-38).

Theory of operation
-------------------
Sans-I/O (PV-1): `ConverseCodec` joins the codec's parts for `HTTPChatClient`.
``encode`` renders the body (``_request.build_request``, BR-1 .. BR-8) as UTF-8 JSON;
``decode`` reads a whole answer (``_response``), ``stream_decoder`` an event stream
(``_stream`` over ``_eventstream``); ``parse_error`` reads a non-2xx answer (BR-20).
``headers`` name the operation: a ConverseStream request accepts
``application/vnd.amazon.eventstream`` (BR-21), which is how the connection knows which
path to send it to.
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
    wire_json,
)
from ._request import build_request
from ._response import PROVIDER, BedrockProtocolError, parse_error, parse_response
from ._stream import ConverseStreamDecoder

__all__ = ["EVENT_STREAM", "ConverseCodec"]

EVENT_STREAM = "application/vnd.amazon.eventstream"


class ConverseCodec:
    """``POST /model/{modelId}/converse`` and ``converse-stream`` (spec/bedrock.md)."""

    provider = PROVIDER
    request_id_headers = ("x-amzn-requestid", "x-amz-request-id")
    protocol_error = BedrockProtocolError

    def headers(self, *, stream: bool) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "accept": EVENT_STREAM if stream else "application/json",
        }

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, None]:
        """The body as UTF-8 JSON; no context (Converse keeps the caller's ids)."""
        body = build_request(messages, options, model=model)
        return json.dumps(body, ensure_ascii=False).encode("utf-8"), None

    def decode(self, body: bytes, context: None) -> ChatResponse:
        data = wire_json(body, "response body", BedrockProtocolError)
        try:
            return parse_response(data)
        except ProviderError:
            raise
        except WIRE_ERRORS as exc:  # PV-49
            raise BedrockProtocolError(unreadable("the response body", exc)) from None

    def stream_decoder(
        self, context: None, *, max_line_size: int | None
    ) -> ConverseStreamDecoder:
        return ConverseStreamDecoder(max_line_size=max_line_size)

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

    def unfinished(self, decoder: ConverseStreamDecoder, finished: bool) -> str | None:
        if decoder.done or finished:
            return None
        return "the stream ended before messageStop and its metadata"
