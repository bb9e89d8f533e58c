"""The Messages API wire format as one `minagent.providers.WireCodec`
(spec/anthropic.md, spec/providers.md PV-38).

Theory of operation
-------------------
Sans-I/O (PV-1): `MessagesCodec` only joins the codec's parts for `HTTPChatClient`.
``encode`` renders the body (``_request.build_request`` with the client's ``max_tokens``
and API version, AN-1 .. AN-12) as UTF-8 JSON and returns the request's map of
normalised tool ids (``wire_tool_ids``, AN-8) as the context that goes with it, so the
answer's ids map back in both modes. ``decode`` reads a whole message (``_response``),
``stream_decoder`` an event stream (``_stream``); ``parse_error`` reads a non-2xx answer
(AN-18). The wire's headers carry the ``anthropic-version`` (AN-19). A stream is
complete with its ``message_stop``, or with a stop reason (AN-20).
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
from ._request import API_VERSION, DEFAULT_MAX_TOKENS, build_request, wire_tool_ids
from ._response import AnthropicProtocolError, parse_error, parse_response
from ._stream import MessagesStreamDecoder

__all__ = ["MessagesCodec"]


class MessagesCodec:
    """``POST /v1/messages``: JSON bodies, server-sent event streams
    (spec/anthropic.md)."""

    provider = "anthropic"
    request_id_headers = ("request-id", "x-request-id")
    protocol_error = AnthropicProtocolError

    def __init__(
        self, *, max_tokens: int = DEFAULT_MAX_TOKENS, api_version: str = API_VERSION
    ) -> None:
        self.max_tokens = max_tokens
        self.api_version = api_version

    def headers(self, *, stream: bool) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
            "anthropic-version": self.api_version,
        }

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, dict[str, str]]:
        """The body as UTF-8 JSON, and the request's ``{wire id: original id}`` map
        (AN-8)."""
        request = build_request(
            messages,
            options,
            model=model,
            stream=stream,
            max_tokens=self.max_tokens,
            api_version=self.api_version,
        )
        return json.dumps(request, ensure_ascii=False).encode("utf-8"), wire_tool_ids(
            messages
        )

    def decode(self, body: bytes, context: Mapping[str, str]) -> ChatResponse:
        """A whole message; a body that is not valid JSON, or not a message, is an
        `AnthropicProtocolError` (PV-10, PV-49)."""
        data = wire_json(body, "response body", AnthropicProtocolError)
        try:
            return parse_response(data, tool_ids=context)
        except ProviderError:
            raise
        # PV-49: hostile values where the protocol has others
        except WIRE_ERRORS as exc:
            raise AnthropicProtocolError(unreadable("the response body", exc)) from None

    def stream_decoder(
        self, context: Mapping[str, str], *, max_line_size: int | None
    ) -> MessagesStreamDecoder:
        return MessagesStreamDecoder(tool_ids=context, max_line_size=max_line_size)

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

    def unfinished(self, decoder: MessagesStreamDecoder, finished: bool) -> str | None:
        if decoder.done or finished:
            return None
        return "the stream ended before message_stop and without a stop_reason"
