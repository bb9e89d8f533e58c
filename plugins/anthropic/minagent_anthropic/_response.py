"""Answers of the Messages API: whole messages and errors (spec/anthropic.md, AN-13 ..
AN-15, AN-18).

Theory of operation
-------------------
Sans-I/O: nothing here opens a socket or imports aiohttp (PV-1).
``parse_response(body)`` maps a whole message (AN-13 .. AN-15). One function per block
kind (``_block``) maps whole blocks and the start of streamed blocks (``_stream``), so
both modes give equal responses (PV-9). ``parse_error`` reads a non-2xx answer (PV-11,
AN-18). The errors of the plugin live here too.
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
    "AnthropicProtocolError",
    "AnthropicStreamError",
    "finish_reason",
    "parse_error",
    "parse_response",
    "usage_details",
]

_SNIPPET = 200  # characters of offending data quoted in an error (PV-10)
_ERROR_TEXT = 500  # characters of a plain-text error body kept (PV-11)
PROVIDER = "anthropic"


# --------------------------------------------------------------------------------------------
# Errors


class AnthropicStreamError(ProviderError):
    """The server reported an error (an ``error`` event, or an error body with a 2xx)
    (AN-17).

    A `ProviderError` with ``status`` None (AN-20). ``type`` is the provider's error
    type (for example ``overloaded_error``); ``updates`` holds the updates decoded by
    the same ``feed()`` / ``close()`` call before the error, which a transport yields
    before raising (PV-14).
    """

    def __init__(
        self, message: str, *, type: str | None = None, body: Any = None
    ) -> None:
        super().__init__(message, provider=PROVIDER)
        self.type = type
        self.body = body
        self.updates: list[ChatResponseUpdate] = []


class AnthropicProtocolError(ProviderError, ValueError):
    """The server's answer is not what the protocol allows (PV-10): bad JSON, wrong
    shape."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider=PROVIDER)
        self.updates: list[ChatResponseUpdate] = []


def _snippet(data: object, limit: int = _SNIPPET) -> str:
    text = data if isinstance(data, str) else _dump(data)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _raise_error(data: Mapping[str, Any]) -> None:
    error = data.get("error")
    if isinstance(error, Mapping):
        message = _str_or_none(error.get("message")) or _dump(error)
        raise AnthropicStreamError(
            message, type=_str_or_none(error.get("type")), body=data
        )
    raise AnthropicStreamError(str(error) if error else _dump(data), body=data)


# --------------------------------------------------------------------------------------------
# Blocks, finish reasons, usage (AN-13 .. AN-15)

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def finish_reason(stop_reason: Any) -> str | None:
    """minagent's finish reason for an Anthropic ``stop_reason`` (AN-14)."""
    value = _str_or_none(stop_reason)
    return None if value is None else _FINISH.get(value, value)


def _stop_properties(source: Mapping[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if _str_or_none(source.get("stop_reason")):
        props["stop_reason"] = source["stop_reason"]
    if _str_or_none(source.get("stop_sequence")):
        props["stop_sequence"] = source["stop_sequence"]
    return props


def _call_id(block: Mapping[str, Any], tool_ids: Mapping[str, str]) -> str:
    call_id = block.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise AnthropicProtocolError(f"tool_use block without an id: {_snippet(block)}")
    return tool_ids.get(call_id, call_id)


def _block(
    block: Any, index: int, tool_ids: Mapping[str, str], *, whole: bool
) -> Content | None:
    """One content block as a content: a whole block, or the start of a streamed one
    (AN-13)."""
    if not isinstance(block, Mapping):
        raise AnthropicProtocolError(
            f"content block {index} is not an object: {_snippet(block)}"
        )
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return Content.from_text(text) if isinstance(text, str) and text else None
    if kind == "tool_use":
        name = block.get("name")
        raw = block.get("input")
        arguments = _dump(raw if raw is not None else {}) if whole or raw else ""
        return Content.from_function_call(
            _call_id(block, tool_ids),
            name if isinstance(name, str) else "",
            arguments,
            raw_representation=block,
        )
    if kind == "thinking":
        text = block.get("thinking")
        return Content.from_text_reasoning(
            text if isinstance(text, str) and text else None,
            id=f"thinking_{index}",
            protected_data=_str_or_none(block.get("signature")),
            additional_properties={"anthropic_type": "thinking"},
        )
    if kind == "redacted_thinking":
        return Content.from_text_reasoning(
            id=f"thinking_{index}",
            protected_data=_str_or_none(block.get("data")),
            additional_properties={"anthropic_type": "redacted_thinking"},
        )
    if not isinstance(kind, str) or not kind:
        raise AnthropicProtocolError(
            f"content block {index} has no type: {_snippet(block)}"
        )
    return Content(
        kind,
        additional_properties={"anthropic_block": dict(block)},
        raw_representation=block,
    )


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> int | None:
    return value if _is_count(value) else None


def usage_details(usage: Any) -> UsageDetails | None:
    """AN-15: Anthropic usage as `UsageDetails` (input counts all input, cached
    included)."""
    if not isinstance(usage, Mapping):
        return None
    uncached = _count(usage.get("input_tokens"))
    created = _count(usage.get("cache_creation_input_tokens"))
    read = _count(usage.get("cache_read_input_tokens"))
    output = _count(usage.get("output_tokens"))
    total_input = None if uncached is None else uncached + (created or 0) + (read or 0)
    total = (
        None
        if total_input is None and output is None
        else (total_input or 0) + (output or 0)
    )
    details = usage.get("output_tokens_details")
    thinking = (
        _count(details.get("thinking_tokens")) if isinstance(details, Mapping) else None
    )
    extra: dict[str, int] = {}
    if uncached is not None:
        extra["input_tokens"] = uncached
    for key in ("cache_creation", "server_tool_use"):
        nested = usage.get(key)
        if isinstance(nested, Mapping):
            for field, value in nested.items():
                if _is_count(value):
                    extra[f"{key}.{field}"] = value
    return UsageDetails(
        input_token_count=total_input,
        output_token_count=output,
        total_token_count=total,
        cache_read_input_token_count=read,
        cache_creation_input_token_count=created,
        reasoning_output_token_count=thinking,
        additional_counts=extra,
    )


# --------------------------------------------------------------------------------------------
# Whole responses (AN-13)


def parse_response(
    body: Any, *, tool_ids: Mapping[str, str] | None = None
) -> ChatResponse:
    """A non-streaming Messages body as a `ChatResponse` (PV-8, AN-13 .. AN-15)."""
    if not isinstance(body, Mapping):
        raise AnthropicProtocolError(
            f"response body is not a JSON object: {_snippet(body)}"
        )
    if body.get("type") == "error":
        _raise_error(body)
    blocks = body.get("content")
    if not isinstance(blocks, list):
        raise AnthropicProtocolError(
            f"response body has no content list: {_snippet(body)}"
        )
    ids = tool_ids or {}
    contents: list[Content] = []
    for i, block in enumerate(blocks):
        content = _block(block, i, ids, whole=True)
        if content is None:
            continue
        if content.type == "text" and contents and contents[-1].type == "text":
            # as a stream merges
            contents[-1] = Content.from_text(
                (contents[-1].text or "") + (content.text or "")
            )
        else:
            contents.append(content)
    response_id = _str_or_none(body.get("id"))
    role = _str_or_none(body.get("role")) or "assistant"
    return ChatResponse(
        [Message(role, contents, message_id=response_id)],
        response_id=response_id,
        model=_str_or_none(body.get("model")),
        finish_reason=finish_reason(body.get("stop_reason")),
        usage_details=usage_details(body.get("usage")),
        additional_properties=_stop_properties(body),
        raw_representation=body,
    )


# --------------------------------------------------------------------------------------------
# Errors of non-2xx answers (PV-11, AN-18)


def parse_error(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(provider message, request id)`` of a non-2xx answer."""
    request_id = None
    if headers:
        lowered = {str(k).lower(): v for k, v in headers.items()}
        request_id = lowered.get("request-id") or lowered.get("x-request-id") or None
    data: Any = body
    text = ""
    if isinstance(body, bytes | bytearray):
        text = bytes(body).decode("utf-8", errors="replace")
    elif isinstance(body, str):
        text = body
    elif isinstance(body, Mapping):
        text = _dump(body)
    if text and not isinstance(body, Mapping):
        try:
            # PV-49: never raises past here
            data = wire_json(text, "error body", AnthropicProtocolError)
        except AnthropicProtocolError:
            data = None
    message = None
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping):
            message = _str_or_none(error.get("message"))
        elif isinstance(error, str) and error:
            message = error
        message = message or _str_or_none(data.get("message"))
        request_id = request_id or _str_or_none(data.get("request_id"))
    if message is None:
        message = text.strip()[:_ERROR_TEXT] if text.strip() else None
    if message is None:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        message = f"HTTP {status} {reason}".rstrip()
    return message, request_id
