"""Answers of Ollama's native chat API: whole bodies and errors (spec/ollama.md OL-11 ..
OL-15, OL-19, OL-20).

Theory of operation
-------------------
Sans-I/O: nothing here touches a socket, a task or a clock, and aiohttp is never
imported (PV-1). ``parse_response`` maps a whole body (OL-11 .. OL-15); a streamed chunk
has the same shape, so the stream decoder (``_stream``) maps each line with the same
``_contents``, and both modes agree (PV-9). Ollama may send no tool-call ids:
``_CallIds`` makes deterministic ones from the request's ``call_id_seed`` and the call
itself (OL-15). ``parse_error`` reads a non-2xx answer (OL-19) and ``error_for_answer``
types it, a model that is not pulled as `OllamaModelNotFoundError` (OL-20). The errors
of the plugin live here too.
"""

from __future__ import annotations

import hashlib
import http
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ._minagent import (
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    NotFoundError,
    ProviderError,
    UsageDetails,
    describe,
    error_for_status,
    wire_json,
)

__all__ = [
    "OllamaModelNotFoundError",
    "OllamaProtocolError",
    "OllamaStreamError",
    "error_for_answer",
    "parse_error",
    "parse_response",
]

PROVIDER = "ollama"
_SNIPPET = 200  # characters of offending data quoted in an error (PV-10)
_ERROR_TEXT = 500  # characters of a plain-text error body kept (PV-11)


class OllamaStreamError(ProviderError):
    """Ollama reported an error object, inside a stream or as a 2xx body (PV-14, OL-18).

    ``updates`` holds the updates decoded by the same ``feed()`` / ``close()`` call
    before the error; a transport yields them before raising.
    """

    def __init__(self, message: str, *, body: Any = None) -> None:
        super().__init__(message, provider=PROVIDER)
        self.body = body
        self.updates: list[ChatResponseUpdate] = []


class OllamaProtocolError(ProviderError, ValueError):
    """Ollama's answer is not what the protocol allows (PV-10): bad JSON, wrong
    shape."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider=PROVIDER)
        self.updates: list[ChatResponseUpdate] = []


class OllamaModelNotFoundError(NotFoundError):
    """HTTP 404: the model is not pulled on this Ollama server (OL-20). ``model`` names
    it."""

    def __init__(self, message: str, *, model: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.model = model


def _snippet(data: object, limit: int = _SNIPPET) -> str:
    text = data if isinstance(data, str) else repr(data)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


# --------------------------------------------------------------------------------------------
# Errors of non-2xx answers (OL-19, OL-20)


def parse_error(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(provider message, request id)`` of a non-2xx answer (PV-11, OL-19)."""
    request_id = None
    if headers:
        lowered = {str(k).lower(): v for k, v in headers.items()}
        request_id = lowered.get("x-request-id") or lowered.get("request-id") or None
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
            data = wire_json(text, "error body", OllamaProtocolError)
        except OllamaProtocolError:
            data = None
    message = _error_message(data) if isinstance(data, Mapping) else None
    if message is None:
        message = text.strip()[:_ERROR_TEXT] if text.strip() else None
    if message is None:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        message = f"HTTP {status} {reason}".rstrip()
    return message, request_id


def _error_message(data: Mapping[str, Any]) -> str | None:
    error = data.get("error")
    if isinstance(error, Mapping):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message
    elif isinstance(error, str) and error:
        return error
    message = data.get("message")
    if isinstance(message, str) and message:
        return message
    return None


_NOT_PULLED = re.compile(
    r"model\s+[\"'`]?(?P<model>[^\"'`\s]+)[\"'`]?\s+not found", re.IGNORECASE
)


def error_for_answer(
    status: int,
    message: str,
    request_id: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The typed error of a non-2xx answer: PV-23's class, or OL-20's for a model not
    pulled."""
    match = _NOT_PULLED.search(message) if status == 404 else None
    if match is None:
        return error_for_status(
            status, message, request_id, provider=PROVIDER, headers=headers
        )
    model = match.group("model")
    return OllamaModelNotFoundError(
        describe(
            status,
            f"{message} (run: ollama pull {model})",
            request_id,
            provider=PROVIDER,
        ),
        model=model,
        status=status,
        provider_message=message,
        request_id=request_id,
        retryable=False,
        provider=PROVIDER,
        headers=headers,
    )


# --------------------------------------------------------------------------------------------
# Response (OL-11 .. OL-15)


class _CallIds:
    """Numbers the calls of one response and gives each its id (OL-15)."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.count = 0

    def next(self, call_id: Any, name: str, arguments: str) -> str:
        index = self.count
        self.count += 1
        if isinstance(call_id, str) and call_id:
            return call_id
        digest = hashlib.sha256(
            f"{self.seed}\x1f{index}\x1f{name}\x1f{arguments}".encode()
        ).hexdigest()
        return f"call_{digest[:24]}"


def parse_response(body: Mapping[str, Any], *, id_seed: str = "") -> ChatResponse:
    """A non-streaming ``/api/chat`` body as a `ChatResponse` (PV-8, OL-11 .. OL-15)."""
    if not isinstance(body, Mapping):
        raise OllamaProtocolError(
            f"response body is not a JSON object: {_snippet(_dump(body))}"
        )
    _raise_if_error(body)
    message = body.get("message")
    if not isinstance(message, Mapping):
        if not body.get("done"):
            raise OllamaProtocolError(
                f"response body has no message object: {_snippet(_dump(body))}"
            )
        message = {}
    contents = _contents(message, _CallIds(id_seed))
    role = message.get("role")
    return ChatResponse(
        [Message(role if isinstance(role, str) and role else "assistant", contents)],
        model=_str_or_none(body.get("model")),
        created_at=_created_at(body.get("created_at")),
        finish_reason=_str_or_none(body.get("done_reason")),
        usage_details=_usage(body),
        raw_representation=body,
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$"
)


def _created_at(value: Any) -> str | None:
    """OL-13: RFC 3339 (nanoseconds, any offset) as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC."""
    if not isinstance(value, str):
        return None
    match = _RFC3339.match(value.strip())
    if match is None:
        return None
    date, clock, zone = match.groups()
    zone = "+00:00" if zone in (None, "Z", "z") else zone
    if len(zone) == 5:  # +hhmm
        zone = f"{zone[:3]}:{zone[3:]}"
    try:
        moment = datetime.fromisoformat(f"{date}T{clock}{zone}")
    except ValueError:
        return None
    if moment.year <= 1:  # Go's zero time: no timestamp
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _contents(message: Mapping[str, Any], calls: _CallIds) -> list[Content]:
    """OL-11: thinking, text, tool calls."""
    out: list[Content] = []
    thinking = message.get("thinking")
    if isinstance(thinking, str) and thinking:
        out.append(Content.from_text_reasoning(thinking))
    text = message.get("content")
    if isinstance(text, str) and text:
        out.append(Content.from_text(text))
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for position, call in enumerate(tool_calls):
            out.append(_call_content(call, position, calls))
    elif tool_calls is not None:
        raise OllamaProtocolError(
            f"tool_calls is not a list: {_snippet(_dump(tool_calls))}"
        )
    return out


def _call_content(call: Any, position: int, calls: _CallIds) -> Content:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        raise OllamaProtocolError(
            f"tool_calls[{position}] has no function object: {_snippet(_dump(call))}"
        )
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise OllamaProtocolError(
            f"tool_calls[{position}] has no function name: {_snippet(_dump(call))}"
        )
    args = function.get("arguments")
    if args is None:
        arguments = "{}"
    elif isinstance(args, str):
        arguments = args
    else:
        arguments = json.dumps(args, ensure_ascii=False)
    assert isinstance(call, Mapping)
    return Content.from_function_call(
        calls.next(call.get("id"), name, arguments), name, arguments
    )


_DURATIONS = (
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
)


def _usage(body: Mapping[str, Any]) -> UsageDetails | None:
    """OL-12."""
    prompt = _count(body.get("prompt_eval_count"))
    output = _count(body.get("eval_count"))
    durations = {k: v for k in _DURATIONS if (v := _count(body.get(k))) is not None}
    if prompt is None and output is None and not durations:
        return None
    return UsageDetails(
        input_token_count=prompt,
        output_token_count=output,
        total_token_count=prompt + output
        if prompt is not None and output is not None
        else None,
        additional_counts=durations,
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _raise_if_error(chunk: Mapping[str, Any]) -> None:
    """OL-14, OL-18: ``{"error": "text"}`` or ``{"error": {"message": ...}}``."""
    error = chunk.get("error")
    if error is None:
        return
    if isinstance(error, Mapping):
        message = error.get("message")
        text = message if isinstance(message, str) and message else _dump(error)
    else:
        text = str(error)
    raise OllamaStreamError(text or "error object without a message", body=dict(chunk))
