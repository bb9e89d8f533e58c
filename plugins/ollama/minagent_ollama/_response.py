"""Responses of Ollama's native chat API: whole bodies and NDJSON streams (spec/ollama.md OL-11 .. OL-18).

Theory of operation
-------------------
``parse_response`` maps a whole body; ``OllamaStreamDecoder`` keeps the unfinished last line
and a ``_CallIds`` (the number of tool calls seen so far, which numbers the calls for their
generated ids, OL-15) and maps each complete line like a whole body. Both use ``_contents``,
so streaming and non-streaming agree (PV-9).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from minagent import ChatResponse, ChatResponseUpdate, Content, Message, UsageDetails

from ._errors import OllamaProtocolError, OllamaStreamError, _dump, _snippet

__all__ = ["DEFAULT_MAX_LINE_SIZE", "OllamaStreamDecoder", "parse_response"]

DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024  # bytes of one NDJSON line (PV-36)


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
        digest = hashlib.sha256(f"{self.seed}\x1f{index}\x1f{name}\x1f{arguments}".encode()).hexdigest()
        return f"call_{digest[:24]}"


# --------------------------------------------------------------------------------------------
# Response (OL-11 .. OL-15)


def parse_response(body: Mapping[str, Any], *, id_seed: str = "") -> ChatResponse:
    """A non-streaming ``/api/chat`` body as a `ChatResponse` (PV-8, OL-11 .. OL-15)."""
    if not isinstance(body, Mapping):
        raise OllamaProtocolError(f"response body is not a JSON object: {_snippet(_dump(body))}")
    _raise_if_error(body)
    message = body.get("message")
    if not isinstance(message, Mapping):
        if not body.get("done"):
            raise OllamaProtocolError(f"response body has no message object: {_snippet(_dump(body))}")
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


_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$")


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
        raise OllamaProtocolError(f"tool_calls is not a list: {_snippet(_dump(tool_calls))}")
    return out


def _call_content(call: Any, position: int, calls: _CallIds) -> Content:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        raise OllamaProtocolError(f"tool_calls[{position}] has no function object: {_snippet(_dump(call))}")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise OllamaProtocolError(f"tool_calls[{position}] has no function name: {_snippet(_dump(call))}")
    args = function.get("arguments")
    if args is None:
        arguments = "{}"
    elif isinstance(args, str):
        arguments = args
    else:
        arguments = json.dumps(args, ensure_ascii=False)
    assert isinstance(call, Mapping)
    return Content.from_function_call(calls.next(call.get("id"), name, arguments), name, arguments)


_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


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
        total_token_count=prompt + output if prompt is not None and output is not None else None,
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


# --------------------------------------------------------------------------------------------
# Stream (OL-16 .. OL-18, PV-12 .. PV-16)


class OllamaStreamDecoder:
    """Bytes of a streaming ``/api/chat`` answer (NDJSON) in, `ChatResponseUpdate`s out.

    Feed every chunk the transport receives to ``feed()`` and yield what it returns; at end of
    input call ``close()`` and yield that too; then check ``done`` (PV-15). Errors raised by
    ``feed()`` / ``close()`` carry the updates decoded before them in ``.updates`` (PV-14).
    ``id_seed`` seeds the generated tool-call ids (OL-15). A line longer than ``max_line_size``
    bytes is an `OllamaProtocolError` naming the bound (PV-36).
    """

    def __init__(self, id_seed: str = "", *, max_line_size: int = DEFAULT_MAX_LINE_SIZE) -> None:
        if not isinstance(max_line_size, int) or isinstance(max_line_size, bool) or max_line_size < 1:
            raise ValueError(f"max_line_size must be a positive int (bytes), got {max_line_size!r}")
        self._buffer = bytearray()
        self._calls = _CallIds(id_seed)
        self.max_line_size = max_line_size
        self.done = False

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ChatResponseUpdate]:
        if self.done:
            return []
        start = len(self._buffer)  # only the new bytes can hold a new line end: linear in the input
        self._buffer += chunk
        end = self._buffer.rfind(b"\n", start)
        if end < 0:
            lines: list[bytes] = []
        else:
            lines = bytes(self._buffer[:end]).split(b"\n")
            del self._buffer[: end + 1]
        updates = self._decode(lines)
        if len(self._buffer) > self.max_line_size and not self.done:
            self._buffer.clear()
            error = OllamaProtocolError(
                f"ollama: a stream line is longer than max_line_size={self.max_line_size} bytes"
            )
            error.updates = updates
            raise error
        return updates

    def close(self) -> list[ChatResponseUpdate]:
        if self.done or not self._buffer:
            self._buffer.clear()
            return []
        lines = [bytes(self._buffer)]
        self._buffer.clear()
        return self._decode(lines)

    def _decode(self, lines: list[bytes]) -> list[ChatResponseUpdate]:
        updates: list[ChatResponseUpdate] = []
        for raw in lines:
            if self.done:
                self._buffer.clear()
                break
            try:
                update = self._line(raw)
            except (OllamaStreamError, OllamaProtocolError) as exc:
                exc.updates = updates
                raise
            if update is not None:
                updates.append(update)
        return updates

    def _line(self, raw: bytes) -> ChatResponseUpdate | None:
        if len(raw) > self.max_line_size:
            raise OllamaProtocolError(f"ollama: a stream line is longer than max_line_size={self.max_line_size} bytes")
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            return None
        try:
            chunk = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OllamaProtocolError(
                f"stream line is not valid JSON ({exc.msg} at position {exc.pos}): {_snippet(text)}"
            ) from None
        if not isinstance(chunk, Mapping):
            raise OllamaProtocolError(f"stream line is not a JSON object: {_snippet(text)}")
        _raise_if_error(chunk)
        return self._chunk(chunk)

    def _chunk(self, chunk: Mapping[str, Any]) -> ChatResponseUpdate | None:
        message = chunk.get("message")
        if message is not None and not isinstance(message, Mapping):
            raise OllamaProtocolError(f"stream chunk's message is not an object: {_snippet(_dump(chunk))}")
        contents = _contents(message or {}, self._calls)
        done = chunk.get("done") is True
        if done:
            self.done = True
            usage = _usage(chunk)
            if usage is not None:
                contents.append(Content.from_usage(usage))
        elif not contents:
            return None
        return ChatResponseUpdate(
            contents,
            "assistant",
            model=_str_or_none(chunk.get("model")),
            created_at=_created_at(chunk.get("created_at")),
            finish_reason=_str_or_none(chunk.get("done_reason")) if done else None,
            raw_representation=chunk,
        )
