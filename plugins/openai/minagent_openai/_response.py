"""Answers of the OpenAI-compatible Chat Completions API: whole bodies and errors
(spec/providers.md).

Theory of operation
-------------------
Sans-I/O: nothing here touches a socket, a task or a clock, and aiohttp is never
imported (PV-1).

* ``loads`` reads wire JSON strictly and repairs what cannot be sent back (OA-28,
  OA-34).
* ``parse_response(body)`` turns a non-streaming body into a ``ChatResponse`` (OA-11 ..
  OA-13); ``decode_response(bytes)`` is ``loads`` then ``parse_response``.
* ``parse_error(status, body, headers)`` extracts the provider's message and request id
  from a non-2xx answer (PV-11, OA-19).
* The errors of the plugin, `OpenAIStreamError` and `OpenAIProtocolError`, live here.

The delta of a streamed chunk (``_stream``) and the message of a whole response have the
same fields, so one function (``_contents``) maps both; streaming and non-streaming
agree (PV-9). The Responses API (``_responses_*``) shares the errors, ``loads`` and
``parse_error``.
"""

from __future__ import annotations

import http
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ._minagent import (
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ProviderError,
    SSEEvent,
    UsageDetails,
    wire_json,
)

__all__ = [
    "OpenAIProtocolError",
    "OpenAIStreamError",
    "decode_response",
    "loads",
    "parse_error",
    "parse_response",
]

_SNIPPET = 200  # characters of offending data quoted in an error (PV-10)
# 10000-01-01T00:00:00Z: a later ``created`` counts as absent (OA-13)
_MAX_CREATED = 253402300800
_ERROR_TEXT = 500  # characters of a plain-text error body kept (PV-11)


# --------------------------------------------------------------------------------------------
# Errors


class OpenAIStreamError(ProviderError):
    """The server reported an error object (inside a stream, or as a 2xx body) (PV-14,
    OA-18).

    A `ProviderError` with ``status`` None (OA-22). ``updates`` holds the updates
    decoded by the same ``feed()`` / ``close()`` call before the error; a transport
    yields them before raising.
    """

    def __init__(
        self,
        message: str,
        *,
        type: str | None = None,
        code: str | int | None = None,
        param: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message, provider="openai")
        self.type = type
        self.code = code
        self.param = param
        self.body = body
        self.updates: list[ChatResponseUpdate] = []


class OpenAIProtocolError(ProviderError, ValueError):
    """The server's answer is not what the protocol allows (PV-10): bad JSON, wrong
    shape.

    A `ProviderError` (OA-22) and a `ValueError`. ``updates``: as for
    `OpenAIStreamError`.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, provider="openai")
        self.updates: list[ChatResponseUpdate] = []


def _snippet(data: object, limit: int = _SNIPPET) -> str:
    if isinstance(data, bytes | bytearray):
        data = bytes(data[: limit * 4]).decode("utf-8", "replace")
    try:
        text = data if isinstance(data, str) else repr(data)
    except (RecursionError, ValueError):  # nested too deep, or an int too long to print
        text = f"<{type(data).__name__} that cannot be shown>"
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _repair(text: str) -> str:
    """Unpaired surrogates become U+FFFD (OA-34); an escaped pair was already joined by
    ``json``."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def loads(data: bytes | bytearray | str, what: str) -> Any:
    """Strict JSON of wire data (PV-10, OA-28, PV-49): anything that is not JSON, NaN
    and Infinity included, is an `OpenAIProtocolError` naming ``what``, never a bare
    ``ValueError``, ``RecursionError`` or ``UnicodeDecodeError``; integers longer than
    the interpreter's digit limit and nesting deeper than its recursion limit are errors
    too; invalid bytes and unpaired surrogates become U+FFFD (OA-34)."""
    return wire_json(data, what, OpenAIProtocolError)


# --------------------------------------------------------------------------------------------
# Response (OA-11 .. OA-13)


def decode_response(raw: bytes | bytearray | str) -> ChatResponse:
    """The bytes of a non-streaming answer as a `ChatResponse`: ``loads`` then
    ``parse_response``.

    Only `OpenAIProtocolError` and `OpenAIStreamError` come out of it, whatever the
    bytes (OA-28).
    """
    return parse_response(loads(raw, "response body"))


def parse_response(body: Mapping[str, Any]) -> ChatResponse:
    """A non-streaming Chat Completions body as a `ChatResponse` (PV-8, OA-11 ..
    OA-13)."""
    if not isinstance(body, Mapping):
        raise OpenAIProtocolError(
            f"response body is not a JSON object: {_snippet(body)}"
        )
    _raise_if_error(body, None)
    choices = body.get("choices")
    choice = _choice_zero(choices) if isinstance(choices, list) else None
    if choice is None:
        raise OpenAIProtocolError(
            f"response body has no choice: {_snippet(_dump(body))}"
        )
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise OpenAIProtocolError(
            f"choice has no message object: {_snippet(_dump(choice))}"
        )
    meta = _meta(body)
    contents = _contents(message, _CallIds(meta["response_id"]), whole=True)
    usage = _usage(body.get("usage"))
    role = message.get("role")
    return ChatResponse(
        [
            Message(
                role if isinstance(role, str) and role else "assistant",
                contents,
                message_id=meta["response_id"],
            )
        ],
        response_id=meta["response_id"],
        model=meta["model"],
        created_at=meta["created_at"],
        finish_reason=_str_or_none(choice.get("finish_reason")),
        usage_details=usage,
        raw_representation=body,
    )


def _dump(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return _snippet(value)


def _choice_zero(choices: list[Any]) -> Mapping[str, Any] | None:
    """The choice whose ``index`` is 0 (a choice without an index counts as 0)."""
    for choice in choices:
        if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
            return choice
    return None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _meta(chunk: Mapping[str, Any]) -> dict[str, Any]:
    """Response-level fields; an empty id or model and ``created == 0`` count as absent
    (OA-13)."""
    created = chunk.get("created")
    created_at = None
    if (
        isinstance(created, int | float)
        and not isinstance(created, bool)
        and 0 < created < _MAX_CREATED
    ):
        created_at = (
            datetime.fromtimestamp(created, tz=UTC).isoformat().replace("+00:00", "Z")
        )
    return {
        "response_id": _str_or_none(chunk.get("id")),
        "model": _str_or_none(chunk.get("model")),
        "created_at": created_at,
    }


class _CallIds:
    """Call ids by ``index`` for one response, and ids for calls that arrive without
    one.

    OA-11, OA-15.
    """

    def __init__(self, response_id: str | None) -> None:
        self.response_id = response_id
        self.by_index: dict[int, str] = {}
        self.named: set[str] = set()
        self.order: dict[str, None] = {}  # every call id, in order of appearance
        self.last: int | None = None

    def seen(self, call_id: str) -> None:
        self.order.setdefault(call_id)

    def unnamed(self) -> list[str]:
        return [call_id for call_id in self.order if call_id not in self.named]

    def synthetic(self, index: int) -> str:
        return (
            f"call_{index}_{self.response_id}" if self.response_id else f"call_{index}"
        )

    def resolve(self, index: Any, call_id: Any) -> str:
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if not isinstance(index, int) or isinstance(index, bool):
            if call_id is not None:
                known = [i for i, c in self.by_index.items() if c == call_id]
                index = known[-1] if known else max(self.by_index, default=-1) + 1
            elif self.last is not None:
                index = self.last
            else:
                index = 0
        self.last = index
        if call_id is not None:
            self.by_index[index] = call_id
        elif index not in self.by_index:
            self.by_index[index] = self.synthetic(index)
        return self.by_index[index]

    def name_once(self, call_id: str, name: Any) -> str:
        """The name the first time a call shows one; ``""`` after that (PV-13)."""
        if call_id in self.named or not isinstance(name, str) or not name:
            return ""
        self.named.add(call_id)
        return name


def _contents(
    message: Mapping[str, Any], calls: _CallIds, *, whole: bool
) -> list[Content]:
    """The contents of a whole message or of one streamed delta, in the order of OA-11.

    In a whole message a tool call without ``index`` is at its position in
    ``tool_calls``.
    """
    out: list[Content] = []
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str) or not reasoning:
        reasoning = message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        out.append(Content.from_text_reasoning(reasoning))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        out.append(Content.from_text(refusal, additional_properties={"refusal": True}))
    text = message.get("content")
    if isinstance(text, str) and text:
        out.append(Content.from_text(text))
    elif text is not None and not isinstance(text, str | list):
        raise OpenAIProtocolError(
            f"content must be a string, a list or null: {_snippet(_dump(text))}"
        )
    elif isinstance(text, list):  # some compatible servers answer with content parts
        for part in text:
            if not isinstance(part, Mapping) or part.get("type") != "text":
                continue
            part_text = part.get("text")
            if isinstance(part_text, str) and part_text:
                out.append(Content.from_text(part_text))
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for position, call in enumerate(tool_calls):
            if not isinstance(call, Mapping):
                raise OpenAIProtocolError(
                    f"tool_calls[{position}] is not an object: {_snippet(_dump(call))}"
                )
            index = call.get("index", position) if whole else call.get("index")
            content = _call_content(call, index, calls)
            if whole and not content.name:
                raise OpenAIProtocolError(
                    f"tool_calls[{position}] has no function name: {_snippet(_dump(call))}"
                )
            out.append(content)
    elif tool_calls is not None:
        raise OpenAIProtocolError(
            f"tool_calls must be a list or null: {_snippet(_dump(tool_calls))}"
        )
    return out


def _call_content(call: Mapping[str, Any], index: Any, calls: _CallIds) -> Content:
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    call_id = calls.resolve(index, call.get("id"))
    args = function.get("arguments")
    if args is None:
        arguments = ""
    elif isinstance(args, str):
        arguments = args
    else:
        arguments = _dump_arguments(args)
    calls.seen(call_id)
    return Content.from_function_call(
        call_id, calls.name_once(call_id, function.get("name")), arguments
    )


def _dump_arguments(args: Any) -> str:
    problem = ""
    try:
        return json.dumps(args, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        problem = f"{type(exc).__name__}: {str(exc)[:100]}"
    raise OpenAIProtocolError(
        f"tool call arguments cannot be sent on as JSON ({problem})"
    )


def _usage(value: Any) -> UsageDetails | None:
    """OA-12."""
    if not isinstance(value, Mapping):
        return None
    prompt = value.get("prompt_tokens_details")
    completion = value.get("completion_tokens_details")
    prompt = prompt if isinstance(prompt, Mapping) else {}
    completion = completion if isinstance(completion, Mapping) else {}
    extra: dict[str, int] = {}
    for key, details, mapped in (
        ("prompt_tokens_details", prompt, "cached_tokens"),
        ("completion_tokens_details", completion, "reasoning_tokens"),
    ):
        for field, count in details.items():
            if field != mapped and _is_count(count):
                extra[f"{key}.{field}"] = count
    return UsageDetails(
        input_token_count=_count(value.get("prompt_tokens")),
        output_token_count=_count(value.get("completion_tokens")),
        total_token_count=_count(value.get("total_tokens")),
        cache_read_input_token_count=_count(prompt.get("cached_tokens")),
        reasoning_output_token_count=_count(completion.get("reasoning_tokens")),
        additional_counts=extra,
    )


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> int | None:
    return value if _is_count(value) else None


def _raise_if_error(chunk: Mapping[str, Any], event: SSEEvent | None) -> None:
    """OA-18: ``{"error": {...}}``, ``{"error": "text"}`` or ``{"object": "error",
    ...}``."""
    error: Any = chunk.get("error")
    if error is None and chunk.get("object") == "error":
        error = chunk
    if error is None and event is not None and event.event == "error":
        error = chunk
    if error is None:
        return
    if isinstance(error, Mapping):
        message = error.get("message")
        code = error.get("code")
        raise OpenAIStreamError(
            message if isinstance(message, str) and message else _dump(error),
            type=_str_or_none(error.get("type")),
            code=code
            if isinstance(code, str | int) and not isinstance(code, bool)
            else None,
            param=_str_or_none(error.get("param")),
            body=chunk,
        )
    raise OpenAIStreamError(str(error), body=chunk)


# --------------------------------------------------------------------------------------------
# Errors of non-2xx answers (PV-11, OA-19)


def parse_error(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(provider message, request id)`` of a non-2xx answer."""
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
            data = loads(text, "error body")
        except OpenAIProtocolError:  # not JSON, too deep, too long an integer (OA-28)
            data = None
    message = _error_message(data) if isinstance(data, Mapping) else None
    if message is not None:
        message = _repair(message)
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
