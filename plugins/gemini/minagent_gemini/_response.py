"""Answers of the Gemini API: whole ``GenerateContentResponse`` bodies, their parts,
usage, finish reasons, safety blocks and errors (spec/gemini.md GM-12 .. GM-20).

Theory of operation
-------------------
Sans-I/O: nothing here touches a socket, a task or a clock (PV-1). A streamed event of
``streamGenerateContent?alt=sse`` has the shape of a whole body, so the stream decoder
(``_stream``) maps each event with the same ``_candidate`` and both modes agree (PV-9).
Gemini may send function calls without ids: ``CallIds`` makes deterministic ones from
the request's seed and the call itself (GM-14). A blocked prompt or a candidate stopped
for safety is a `GeminiSafetyError` naming the harm categories (GM-17). The errors of
the plugin live here too.
"""

from __future__ import annotations

import hashlib
import http
import json
import re
from collections.abc import Mapping
from typing import Any

from ._minagent import (
    AuthenticationError,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ProviderError,
    UsageDetails,
    describe,
    error_for_status,
    wire_json,
)

__all__ = [
    "GeminiProtocolError",
    "GeminiSafetyError",
    "GeminiStreamError",
    "finish_reason",
    "parse_error",
    "parse_response",
    "status_error",
    "usage_details",
]

PROVIDER = "gemini"
_SNIPPET = 200  # characters of offending data quoted in an error (PV-10)
_ERROR_TEXT = 500  # characters of a plain-text error body kept (PV-11)


# --------------------------------------------------------------------------------------------
# Errors


class GeminiProtocolError(ProviderError, ValueError):
    """Gemini's answer is not what the protocol allows (PV-10): bad JSON, wrong
    shape."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider=PROVIDER)
        self.updates: list[ChatResponseUpdate] = []


class GeminiStreamError(ProviderError):
    """Gemini reported an error object inside a stream or as a 2xx body (GM-19).

    ``error_status`` is the error's ``status`` text (``RESOURCE_EXHAUSTED``, ...) when it has
    one; ``updates`` holds the updates decoded before it (PV-14).
    """

    def __init__(self, message: str, *, status: str | None = None) -> None:
        super().__init__(message, provider=PROVIDER)
        self.error_status = status
        self.updates: list[ChatResponseUpdate] = []


class GeminiSafetyError(ProviderError):
    """Gemini blocked the prompt or stopped the answer for safety (GM-17).

    ``reason`` is the wire's ``blockReason`` (prompt) or ``finishReason`` (answer), for
    example ``SAFETY`` or ``PROHIBITED_CONTENT``; ``categories`` the harm categories
    that were blocked or rated ``MEDIUM`` / ``HIGH`` (``HARM_CATEGORY_...``), most
    severe first; ``prompt`` is True when the prompt itself was blocked. ``updates``
    holds what a stream decoded before the block (PV-14). Never retried.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        categories: tuple[str, ...],
        prompt: bool,
    ) -> None:
        super().__init__(message, provider=PROVIDER, retryable=False)
        self.reason = reason
        self.categories = categories
        self.prompt = prompt
        self.updates: list[ChatResponseUpdate] = []


def _snippet(data: object, limit: int = _SNIPPET) -> str:
    text = data if isinstance(data, str) else repr(data)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --------------------------------------------------------------------------------------------
# Errors of non-2xx answers (GM-18)


def parse_error(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(provider message, request id)`` of a non-2xx answer (PV-11, GM-18).

    Google's error body is ``{"error": {"code", "message", "status", "details"}}``; the
    message is ``message``, followed by ``(STATUS)``, then, when a ``details`` entry of
    type ``ErrorInfo`` has one, its ``reason`` in brackets (``[API_KEY_INVALID]``), and
    the ``retryDelay`` of a ``RetryInfo`` entry (``[retry in 37s]``).
    """
    request_id = None
    if headers:
        lowered = {str(k).lower(): v for k, v in headers.items()}
        request_id = lowered.get("x-request-id") or None
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
            data = wire_json(text, "error body", GeminiProtocolError)
        except GeminiProtocolError:
            data = None
    # a list of one error object is what some Google front ends send
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
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
    if isinstance(error, str) and error:
        return error
    if not isinstance(error, Mapping):
        return None
    message = _str_or_none(error.get("message"))
    if message is None:
        return None
    status = _str_or_none(error.get("status"))
    if status:
        message = f"{message} ({status})"
    details = error.get("details")
    if not isinstance(details, list):
        return message
    for detail in details:
        if (
            isinstance(detail, Mapping)
            and str(detail.get("@type", "")).endswith("ErrorInfo")
            and (reason := _str_or_none(detail.get("reason")))
        ):
            message = f"{message} [{reason}]"
            break
    for detail in details:
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith(
            "RetryInfo"
        ):
            delay = _duration(detail.get("retryDelay"))
            if delay is not None:
                message = f"{message} [retry in {delay:g}s]"
            break
    return message


# A google.protobuf.Duration in JSON: seconds with up to nine decimals and an "s".
_DURATION = re.compile(r"^(\d{1,9})(?:\.(\d{1,9}))?s$")
# what parse_error appends for a RetryInfo, read back by status_error
_RETRY_IN = re.compile(r" \[retry in (\d+(?:\.\d+)?)s\]")


def _duration(value: Any) -> float | None:
    """A JSON ``Duration`` (``"37s"``, ``"0.25s"``) in seconds, or None."""
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    return float(f"{match.group(1)}.{match.group(2) or 0}")


# An invalid key is HTTP 400 INVALID_ARGUMENT on the Gemini API, with this reason.
_KEY_REASONS = ("[API_KEY_INVALID]", "[API_KEY_SERVICE_BLOCKED]")


def status_error(
    status: int,
    message: str,
    request_id: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The typed error of a non-2xx answer: PV-23's class, except that a 400 whose
    reason says the key is invalid is an `AuthenticationError` (GM-18). The body's
    ``RetryInfo`` delay (in the message as ``[retry in Ns]``) is the error's
    ``retry-after-ms`` when no header names a delay."""
    # the RetryInfo delay of the body, when no header names one (PV-27 reads it)
    retry = _RETRY_IN.search(message)
    if retry is not None and not any(
        str(name).lower() in ("retry-after", "retry-after-ms") for name in headers or {}
    ):
        millis = round(float(retry.group(1)) * 1000)
        headers = {**(headers or {}), "retry-after-ms": str(millis)}
    if status == 400 and any(reason in message for reason in _KEY_REASONS):
        return AuthenticationError(
            describe(status, message, request_id, provider=PROVIDER),
            status=status,
            provider_message=message,
            request_id=request_id,
            retryable=False,
            provider=PROVIDER,
            headers=headers,
        )
    return error_for_status(
        status, message, request_id, provider=PROVIDER, headers=headers
    )


def raise_if_error(body: Mapping[str, Any]) -> None:
    """GM-19: a 2xx body or stream event that is ``{"error": {...}}``."""
    error = body.get("error")
    if error is None:
        return
    if isinstance(error, Mapping):
        message = _str_or_none(error.get("message")) or _dump(error)
        status = _str_or_none(error.get("status"))
    else:
        message, status = str(error), None
    shown = f"{message} ({status})" if status else message
    raise GeminiStreamError(
        describe(None, shown or "error object without a message", provider=PROVIDER),
        status=status,
    )


# --------------------------------------------------------------------------------------------
# Function-call ids (GM-14)


class CallIds:
    """Numbers the function calls of one answer and gives each its id (GM-14)."""

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


# --------------------------------------------------------------------------------------------
# Finish reasons, usage, safety (GM-15 .. GM-17)

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "RECITATION": "content_filter",
    "LANGUAGE": "content_filter",
}
# finish reasons that are a safety block (GM-17)
SAFETY_FINISH = frozenset(
    {
        "SAFETY",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
    }
)


def finish_reason(value: Any, *, calls: bool = False) -> str | None:
    """minagent's finish reason for a Gemini ``finishReason`` (GM-15): ``STOP`` is
    ``"tool_calls"`` when the answer has function calls, otherwise ``"stop"``;
    ``MAX_TOKENS`` is ``"length"``; ``RECITATION`` and ``LANGUAGE`` are
    ``"content_filter"``; any other value passes through lowercased."""
    reason = _str_or_none(value)
    if reason is None or reason == "FINISH_REASON_UNSPECIFIED":
        return None
    if reason == "STOP" and calls:
        return "tool_calls"
    return _FINISH.get(reason, reason.lower())


def usage_details(usage: Any) -> UsageDetails | None:
    """GM-16: ``usageMetadata`` as `UsageDetails`. Output counts the candidates' and
    the thoughts' tokens (both are billed as output)."""
    if not isinstance(usage, Mapping):
        return None
    prompt = _count(usage.get("promptTokenCount"))
    candidates = _count(usage.get("candidatesTokenCount"))
    thoughts = _count(usage.get("thoughtsTokenCount"))
    cached = _count(usage.get("cachedContentTokenCount"))
    tool_prompt = _count(usage.get("toolUsePromptTokenCount"))
    total = _count(usage.get("totalTokenCount"))
    if prompt is None and candidates is None and thoughts is None and total is None:
        return None
    output = (
        None
        if candidates is None and thoughts is None
        else (candidates or 0) + (thoughts or 0)
    )
    counts: dict[str, Any] = {
        "input_token_count": prompt,
        "output_token_count": output,
        "total_token_count": total,
    }
    if thoughts is not None:
        counts["reasoning_output_token_count"] = thoughts
    if cached is not None:
        counts["cache_read_input_token_count"] = cached
    extra: dict[str, int] = {}
    if tool_prompt is not None:
        extra["tool_use_prompt_token_count"] = tool_prompt
    return UsageDetails(**counts, additional_counts=extra)


def _flagged(ratings: Any) -> tuple[str, ...]:
    """The harm categories of ``safetyRatings`` that were blocked, else rated HIGH,
    else MEDIUM (GM-17)."""
    if not isinstance(ratings, list):
        return ()
    ranked: list[tuple[int, str]] = []
    for rating in ratings:
        if not isinstance(rating, Mapping):
            continue
        category = _str_or_none(rating.get("category"))
        if category is None:
            continue
        probability = rating.get("probability")
        if rating.get("blocked") is True:
            ranked.append((0, category))
        elif probability == "HIGH":
            ranked.append((1, category))
        elif probability == "MEDIUM":
            ranked.append((2, category))
    return tuple(category for _, category in sorted(ranked, key=lambda r: r[0]))


def safety_error(
    reason: str, ratings: Any, *, prompt: bool, message: Any = None
) -> GeminiSafetyError:
    """GM-17: the error of a blocked prompt or a candidate stopped for safety."""
    categories = _flagged(ratings)
    what = "the prompt was blocked" if prompt else "the answer was stopped"
    named = ", ".join(categories) if categories else "no category named"
    text = f"{what} for safety: {reason} ({named})"
    if (detail := _str_or_none(message)) is not None:
        text = f"{text}: {detail}"
    return GeminiSafetyError(
        describe(None, text, provider=PROVIDER),
        reason=reason,
        categories=categories,
        prompt=prompt,
    )


def check_prompt(body: Mapping[str, Any]) -> None:
    """GM-17: ``promptFeedback.blockReason`` means the prompt was blocked."""
    feedback = body.get("promptFeedback")
    if not isinstance(feedback, Mapping):
        return
    reason = _str_or_none(feedback.get("blockReason"))
    if reason is not None and reason != "BLOCKED_REASON_UNSPECIFIED":
        raise safety_error(
            reason,
            feedback.get("safetyRatings"),
            prompt=True,
            message=feedback.get("blockReasonMessage"),
        )


# --------------------------------------------------------------------------------------------
# Parts (GM-12 .. GM-14)


def first_candidate(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first candidate (the only one a request asks for, GM-10), or None."""
    candidates = body.get("candidates")
    if candidates is None:
        return None
    if not isinstance(candidates, list):
        raise GeminiProtocolError(
            f"candidates is not a list: {_snippet(_dump(candidates))}"
        )
    if not candidates:
        return None
    candidate = candidates[0]
    if not isinstance(candidate, Mapping):
        raise GeminiProtocolError(
            f"candidates[0] is not an object: {_snippet(_dump(candidate))}"
        )
    return candidate


def candidate_contents(candidate: Mapping[str, Any], calls: CallIds) -> list[Content]:
    """GM-12: the parts of a candidate's content, in order."""
    content = candidate.get("content")
    if content is None:
        return []
    if not isinstance(content, Mapping):
        raise GeminiProtocolError(
            f"candidate content is not an object: {_snippet(_dump(content))}"
        )
    parts = content.get("parts")
    if parts is None:
        return []
    if not isinstance(parts, list):
        raise GeminiProtocolError(f"parts is not a list: {_snippet(_dump(parts))}")
    out: list[Content] = []
    for position, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise GeminiProtocolError(
                f"parts[{position}] is not an object: {_snippet(_dump(part))}"
            )
        mapped = _part(part, position, calls)
        if mapped is not None:
            out.append(mapped)
    return out


def _signature(part: Mapping[str, Any]) -> dict[str, Any]:
    signature = _str_or_none(part.get("thoughtSignature"))
    return {"thought_signature": signature} if signature else {}


def _part(part: Mapping[str, Any], position: int, calls: CallIds) -> Content | None:
    """One part as one content (GM-12, GM-13); a part of a kind this plugin does not
    map (``executableCode``, ``codeExecutionResult``, ...) gives none and stays in the
    raw representation."""
    props = _signature(part)
    call = part.get("functionCall")
    if call is not None:
        return _call(call, position, calls, props)
    if "text" in part:
        text = part.get("text")
        if not isinstance(text, str):
            raise GeminiProtocolError(
                f"parts[{position}].text is not a string: {_snippet(_dump(part))}"
            )
        if part.get("thought") is True:
            return Content.from_text_reasoning(
                text, protected_data=props.get("thought_signature")
            )
        if not text and not props:
            return None
        return (
            Content.from_text(text, additional_properties=props)
            if props
            else (Content.from_text(text))
        )
    inline = part.get("inlineData")
    if isinstance(inline, Mapping):
        mime = _str_or_none(inline.get("mimeType")) or "application/octet-stream"
        data = inline.get("data")
        if not isinstance(data, str):
            raise GeminiProtocolError(
                f"parts[{position}].inlineData has no data: {_snippet(_dump(part))}"
            )
        return Content.from_uri(f"data:{mime};base64,{data}", mime)
    file_data = part.get("fileData")
    if isinstance(file_data, Mapping):
        uri = _str_or_none(file_data.get("fileUri"))
        if uri is None:
            raise GeminiProtocolError(
                f"parts[{position}].fileData has no fileUri: {_snippet(_dump(part))}"
            )
        return Content.from_uri(uri, _str_or_none(file_data.get("mimeType")))
    return None


def _call(call: Any, position: int, calls: CallIds, props: dict[str, Any]) -> Content:
    """GM-13, GM-14: a ``functionCall`` part; ``args`` as a JSON string."""
    if not isinstance(call, Mapping):
        raise GeminiProtocolError(
            f"parts[{position}].functionCall is not an object: {_snippet(_dump(call))}"
        )
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise GeminiProtocolError(
            f"parts[{position}].functionCall has no name: {_snippet(_dump(call))}"
        )
    args = call.get("args")
    if args is None:
        arguments = "{}"
    elif isinstance(args, Mapping):
        arguments = json.dumps(args, ensure_ascii=False)
    else:
        raise GeminiProtocolError(
            f"parts[{position}].functionCall.args is not an object: {_snippet(_dump(call))}"
        )
    call_id = calls.next(call.get("id"), name, arguments)
    if props:
        return Content.from_function_call(
            call_id, name, arguments, additional_properties=props
        )
    return Content.from_function_call(call_id, name, arguments)


def check_candidate(candidate: Mapping[str, Any]) -> None:
    """GM-17: a candidate whose ``finishReason`` is a safety block."""
    reason = _str_or_none(candidate.get("finishReason"))
    if reason in SAFETY_FINISH:
        assert reason is not None
        raise safety_error(
            reason,
            candidate.get("safetyRatings"),
            prompt=False,
            message=candidate.get("finishMessage"),
        )


def candidate_properties(candidate: Mapping[str, Any]) -> dict[str, Any]:
    """The candidate's wire finish reason and message, kept for the caller (GM-15)."""
    props: dict[str, Any] = {}
    if (reason := _str_or_none(candidate.get("finishReason"))) is not None:
        props["finish_reason"] = reason
    if (message := _str_or_none(candidate.get("finishMessage"))) is not None:
        props["finish_message"] = message
    return props


# --------------------------------------------------------------------------------------------
# Whole answers (GM-12)


def parse_response(body: Any, *, id_seed: str = "") -> ChatResponse:
    """A ``generateContent`` body as a `ChatResponse` (PV-8, GM-12 .. GM-17)."""
    if not isinstance(body, Mapping):
        raise GeminiProtocolError(
            f"response body is not a JSON object: {_snippet(_dump(body))}"
        )
    raise_if_error(body)
    check_prompt(body)
    candidate = first_candidate(body)
    if candidate is None:
        raise GeminiProtocolError(
            f"response body has no candidate: {_snippet(_dump(body))}"
        )
    check_candidate(candidate)
    contents = candidate_contents(candidate, CallIds(id_seed))
    has_calls = any(c.type == "function_call" for c in contents)
    return ChatResponse(
        [Message("assistant", contents)],
        response_id=_str_or_none(body.get("responseId")),
        model=_str_or_none(body.get("modelVersion")),
        finish_reason=finish_reason(candidate.get("finishReason"), calls=has_calls),
        usage_details=usage_details(body.get("usageMetadata")),
        additional_properties=candidate_properties(candidate),
        raw_representation=body,
    )
