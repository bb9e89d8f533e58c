"""Answers of Converse: whole responses and errors (spec/bedrock.md BR-9 .. BR-11,
BR-20).

Theory of operation
-------------------
Sans-I/O (PV-1). ``parse_response(body)`` maps a Converse output (BR-9): text and
``toolUse`` blocks, the stop reason (BR-10) and usage (BR-11); the model gives no
response id, so the request id (``x-amzn-RequestId``) stands for it when the client
passes one. ``parse_error`` reads a non-2xx answer: its ``message`` (or ``Message``) and
the error type from ``x-amzn-ErrorType`` or ``__type`` (BR-20).
"""

from __future__ import annotations

import http
import json
from collections.abc import Mapping
from typing import Any

from ._minagent import (
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ProviderError,
    UsageDetails,
    wire_json,
)

__all__ = [
    "PROVIDER",
    "BedrockProtocolError",
    "BedrockStreamError",
    "error_type",
    "finish_reason",
    "parse_error",
    "parse_response",
    "usage_details",
]

PROVIDER = "bedrock"
_SNIPPET = 200
_ERROR_TEXT = 500
# BR-18: exception events a retry can cure (they are still not retried mid-stream, PV-29)
_RETRYABLE_EXCEPTIONS = frozenset(
    {
        "throttlingException",
        "internalServerException",
        "serviceUnavailableException",
        "modelNotReadyException",
    }
)


class BedrockStreamError(ProviderError):
    """The server reported an error inside a stream: an ``exception`` or ``error``
    message of the event stream (BR-18). ``exception_type`` is its type (for example
    ``throttlingException``); ``status`` is None; ``updates`` holds what the same
    ``feed()`` decoded before it (PV-14)."""

    def __init__(
        self, message: str, *, exception_type: str | None = None, body: Any = None
    ) -> None:
        super().__init__(
            message,
            provider=PROVIDER,
            provider_message=message,
            retryable=exception_type in _RETRYABLE_EXCEPTIONS,
        )
        self.exception_type = exception_type
        self.body = body
        self.updates: list[ChatResponseUpdate] = []


class BedrockProtocolError(ProviderError, ValueError):
    """The answer is not what the protocol allows (PV-10): bad JSON, a wrong shape, an
    event stream with a bad CRC or length (BR-16)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider=PROVIDER)
        self.updates: list[ChatResponseUpdate] = []


def snippet(data: object) -> str:
    text = data if isinstance(data, str) else _dump(data)
    return repr(text if len(text) <= _SNIPPET else text[:_SNIPPET] + "...")


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --------------------------------------------------------------------------------------------
# Stop reasons and usage (BR-10, BR-11)

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


def finish_reason(stop_reason: Any) -> str | None:
    """minagent's finish reason for a Converse ``stopReason`` (BR-10); others as they
    are."""
    value = _str(stop_reason)
    return None if value is None else _FINISH.get(value, value)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_details(usage: Any) -> UsageDetails | None:
    """BR-11: ``inputTokens`` etc. as `UsageDetails`; cache reads and writes kept."""
    if not isinstance(usage, Mapping):
        return None
    return UsageDetails(
        input_token_count=_count(usage.get("inputTokens")),
        output_token_count=_count(usage.get("outputTokens")),
        total_token_count=_count(usage.get("totalTokens")),
        cache_read_input_token_count=_count(usage.get("cacheReadInputTokens")),
        cache_creation_input_token_count=_count(usage.get("cacheWriteInputTokens")),
    )


# --------------------------------------------------------------------------------------------
# Whole responses (BR-9)


def block_content(block: Any, index: int) -> Content | None:
    """One output content block; unmapped kinds are kept whole in
    ``additional_properties['bedrock_block']`` (BR-9)."""
    if not isinstance(block, Mapping):
        raise BedrockProtocolError(
            f"content block {index} is not an object: {snippet(block)}"
        )
    if "text" in block:
        text = block["text"]
        if not isinstance(text, str):
            raise BedrockProtocolError(f"content block {index}: text is not a string")
        return Content.from_text(text) if text else None
    if "toolUse" in block:
        use = block["toolUse"]
        if not isinstance(use, Mapping) or not _str(use.get("toolUseId")):
            raise BedrockProtocolError(
                f"content block {index}: toolUse without a toolUseId: {snippet(block)}"
            )
        name = use.get("name")
        arguments = use.get("input")
        return Content.from_function_call(
            use["toolUseId"],
            name if isinstance(name, str) else "",
            _dump(arguments if arguments is not None else {}),
            raw_representation=dict(block),
        )
    return Content(
        "bedrock_block",
        additional_properties={"bedrock_block": dict(block)},
        raw_representation=dict(block),
    )


def parse_response(body: Any, *, request_id: str | None = None) -> ChatResponse:
    """A Converse body as a `ChatResponse` (PV-8, BR-9 .. BR-11)."""
    if not isinstance(body, Mapping):
        raise BedrockProtocolError(
            f"response body is not a JSON object: {snippet(body)}"
        )
    output = body.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
        raise BedrockProtocolError(
            f"response body has no output.message.content list: {snippet(body)}"
        )
    contents: list[Content] = []
    for index, block in enumerate(message["content"]):
        content = block_content(block, index)
        if content is None:
            continue
        if content.type == "text" and contents and contents[-1].type == "text":
            contents[-1] = Content.from_text(
                (contents[-1].text or "") + (content.text or "")
            )
        else:
            contents.append(content)
    props: dict[str, Any] = {}
    if _str(body.get("stopReason")):
        props["stop_reason"] = body["stopReason"]
    return ChatResponse(
        [Message(_str(message.get("role")) or "assistant", contents)],
        response_id=request_id,
        finish_reason=finish_reason(body.get("stopReason")),
        usage_details=usage_details(body.get("usage")),
        additional_properties=props,
        raw_representation=body,
    )


# --------------------------------------------------------------------------------------------
# Errors of non-2xx answers (BR-20)


def error_type(headers: Mapping[str, str] | None, data: Any) -> str | None:
    """The AWS error type: ``x-amzn-ErrorType`` (before its ``:``), else ``__type``
    (after its ``#``)."""
    lowered = {str(k).lower(): v for k, v in (headers or {}).items()}
    header = _str(lowered.get("x-amzn-errortype"))
    if header:
        return header.split(":", 1)[0]
    if isinstance(data, Mapping) and _str(data.get("__type")):
        return str(data["__type"]).rsplit("#", 1)[-1]
    return None


def parse_error(
    status: int, body: bytes | str | None, headers: Mapping[str, str] | None = None
) -> tuple[str, str | None]:
    """``(provider message, request id)`` of a non-2xx answer (PV-11, BR-20); the AWS
    error type leads the message."""
    lowered = {str(k).lower(): v for k, v in (headers or {}).items()}
    request_id = _str(lowered.get("x-amzn-requestid")) or _str(
        lowered.get("x-amz-request-id")
    )
    text = (
        bytes(body).decode("utf-8", "replace")
        if isinstance(body, bytes | bytearray)
        else body or ""
    )
    data: Any = None
    if text.strip():
        try:
            data = wire_json(text, "error body", BedrockProtocolError)  # PV-49
        except BedrockProtocolError:
            data = None
    message = None
    if isinstance(data, Mapping):
        message = _str(data.get("message")) or _str(data.get("Message"))
    if message is None and text.strip():
        message = text.strip()[:_ERROR_TEXT]
    if message is None:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        message = f"HTTP {status} {reason}".rstrip()
    kind = error_type(headers, data)
    return (f"{kind}: {message}" if kind else message), request_id
