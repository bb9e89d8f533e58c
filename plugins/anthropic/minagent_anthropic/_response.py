"""Response half of the sans-I/O Messages API codec (spec/anthropic.md, AN-13 .. AN-18).

Theory of operation
-------------------
``parse_response(body)`` maps a whole message (AN-13 .. AN-15). ``MessagesStreamDecoder`` maps
the bytes of a streamed answer: ``SSEDecoder`` gives events, each event's data is one JSON
event dispatched on its ``type`` (AN-16). Its state is what the Messages stream leaves
implicit in later events:

* the message id and model from ``message_start`` (every later update carries them, PV-16);
* the content blocks by ``index``: their kind, their call id (``input_json_delta`` fragments
  carry only the index) and whether a tool call got any argument fragment;
* the usage of ``message_start``, which ``message_delta`` overwrites field by field (its
  counts are cumulative), so the stream reports usage once, at ``message_delta``.

One function per block kind (``_block``) maps whole blocks and the start of streamed blocks,
so both modes give equal responses (PV-9). Nothing here opens a socket or imports aiohttp.
"""

from __future__ import annotations

import http
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minagent import ChatResponse, ChatResponseUpdate, Content, Message, ProviderError, UsageDetails

from ._sse import SSEDecoder, SSEEvent, SSELimitError

__all__ = [
    "DEFAULT_MAX_LINE_SIZE",
    "AnthropicProtocolError",
    "AnthropicStreamError",
    "MessagesStreamDecoder",
    "finish_reason",
    "parse_error",
    "parse_response",
    "usage_details",
]

_SNIPPET = 200  # characters of offending data quoted in an error (PV-10)
_ERROR_TEXT = 500  # characters of a plain-text error body kept (PV-11)
PROVIDER = "anthropic"
DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024  # characters of one SSE line or event's data (PV-36)


# --------------------------------------------------------------------------------------------
# Errors


class AnthropicStreamError(ProviderError):
    """The server reported an error (an ``error`` event, or an error body with a 2xx) (AN-17).

    A `ProviderError` with ``status`` None (AN-20). ``type`` is the provider's error type (for
    example ``overloaded_error``); ``updates`` holds the updates decoded by the same ``feed()`` /
    ``close()`` call before the error, which a transport yields before raising (PV-14).
    """

    def __init__(self, message: str, *, type: str | None = None, body: Any = None) -> None:
        super().__init__(message, provider=PROVIDER)
        self.type = type
        self.body = body
        self.updates: list[ChatResponseUpdate] = []


class AnthropicProtocolError(ProviderError, ValueError):
    """The server's answer is not what the protocol allows (PV-10): bad JSON, wrong shape."""

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
        raise AnthropicStreamError(message, type=_str_or_none(error.get("type")), body=data)
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


def _block(block: Any, index: int, tool_ids: Mapping[str, str], *, whole: bool) -> Content | None:
    """One content block as a content: a whole block, or the start of a streamed one (AN-13)."""
    if not isinstance(block, Mapping):
        raise AnthropicProtocolError(f"content block {index} is not an object: {_snippet(block)}")
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return Content.from_text(text) if isinstance(text, str) and text else None
    if kind == "tool_use":
        name = block.get("name")
        raw = block.get("input")
        arguments = _dump(raw if raw is not None else {}) if whole or raw else ""
        return Content.from_function_call(
            _call_id(block, tool_ids), name if isinstance(name, str) else "", arguments, raw_representation=block
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
        raise AnthropicProtocolError(f"content block {index} has no type: {_snippet(block)}")
    return Content(kind, additional_properties={"anthropic_block": dict(block)}, raw_representation=block)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> int | None:
    return value if _is_count(value) else None


def usage_details(usage: Any) -> UsageDetails | None:
    """AN-15: Anthropic usage as `UsageDetails` (input counts all input, cached included)."""
    if not isinstance(usage, Mapping):
        return None
    uncached = _count(usage.get("input_tokens"))
    created = _count(usage.get("cache_creation_input_tokens"))
    read = _count(usage.get("cache_read_input_tokens"))
    output = _count(usage.get("output_tokens"))
    total_input = None if uncached is None else uncached + (created or 0) + (read or 0)
    total = None if total_input is None and output is None else (total_input or 0) + (output or 0)
    details = usage.get("output_tokens_details")
    thinking = _count(details.get("thinking_tokens")) if isinstance(details, Mapping) else None
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


def parse_response(body: Any, *, tool_ids: Mapping[str, str] | None = None) -> ChatResponse:
    """A non-streaming Messages body as a `ChatResponse` (PV-8, AN-13 .. AN-15)."""
    if not isinstance(body, Mapping):
        raise AnthropicProtocolError(f"response body is not a JSON object: {_snippet(body)}")
    if body.get("type") == "error":
        _raise_error(body)
    blocks = body.get("content")
    if not isinstance(blocks, list):
        raise AnthropicProtocolError(f"response body has no content list: {_snippet(body)}")
    ids = tool_ids or {}
    contents: list[Content] = []
    for i, block in enumerate(blocks):
        content = _block(block, i, ids, whole=True)
        if content is None:
            continue
        if content.type == "text" and contents and contents[-1].type == "text":
            contents[-1] = Content.from_text((contents[-1].text or "") + (content.text or ""))  # as a stream merges
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
# Streams (AN-16, AN-17)


@dataclass
class _Block:
    kind: str
    call_id: str | None = None
    fragments: int = 0
    has_input: bool = False
    held: dict[str, Any] | None = None  # an unmodelled block, sent whole at its stop (AN-16)
    partial: str = ""  # its input_json_delta fragments


class MessagesStreamDecoder:
    """Bytes of a streaming Messages answer in, `ChatResponseUpdate`s out.

    Feed every chunk the transport receives to ``feed()`` and yield what it returns; at end of
    input call ``close()`` and yield that too; then check ``done`` (PV-15). Errors raised by
    ``feed()`` / ``close()`` carry the updates decoded before them in ``.updates`` (PV-14).
    ``tool_ids`` maps wire ids back to the caller's ids (AN-8); ``max_line_size`` bounds one
    line and one event's data (PV-36): more is an `AnthropicProtocolError` naming the bound.
    """

    def __init__(
        self, *, tool_ids: Mapping[str, str] | None = None, max_line_size: int | None = DEFAULT_MAX_LINE_SIZE
    ) -> None:
        self._sse = SSEDecoder(max_line_size=max_line_size)
        self._tool_ids = dict(tool_ids or {})
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] = {}
        self._id: str | None = None
        self._model: str | None = None
        self.done = False

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ChatResponseUpdate]:
        return self._step(chunk)

    def close(self) -> list[ChatResponseUpdate]:
        return self._step(None)

    def _step(self, chunk: bytes | bytearray | memoryview | None) -> list[ChatResponseUpdate]:
        limit: SSELimitError | None = None
        try:
            events = self._sse.feed(chunk) if chunk is not None else self._sse.close()
        except SSELimitError as exc:
            events, limit = exc.events, exc
        updates = self._decode(events)
        if limit is not None:
            error = AnthropicProtocolError(f"{limit} (PV-36)")
            error.updates = updates
            raise error
        return updates

    def _decode(self, events: list[SSEEvent]) -> list[ChatResponseUpdate]:
        updates: list[ChatResponseUpdate] = []
        for event in events:
            if self.done:
                break
            try:
                update = self._event(event)
            except (AnthropicStreamError, AnthropicProtocolError) as exc:
                exc.updates = updates
                raise
            if update is not None:
                updates.append(update)
        return updates

    def _event(self, event: SSEEvent) -> ChatResponseUpdate | None:
        try:
            data = json.loads(event.data)
        except json.JSONDecodeError as exc:
            if event.event == "error":
                raise AnthropicStreamError(event.data.strip() or "error event without data", body=event.data) from None
            raise AnthropicProtocolError(
                f"stream data is not valid JSON ({exc.msg} at position {exc.pos}): {_snippet(event.data)}"
            ) from None
        if not isinstance(data, Mapping):
            raise AnthropicProtocolError(f"stream event is not a JSON object: {_snippet(event.data)}")
        kind = data.get("type") or event.event
        if kind == "error" or (event.event == "error" and "error" in data):
            _raise_error(data)
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        return handler(self, data) if handler is not None else None  # ping, unknown events: nothing

    def _update(self, contents: list[Content], **kw: Any) -> ChatResponseUpdate:
        return ChatResponseUpdate(
            contents, "assistant", response_id=self._id, message_id=self._id, model=self._model, **kw
        )

    def _message_start(self, data: Mapping[str, Any]) -> ChatResponseUpdate:
        message = data.get("message")
        if not isinstance(message, Mapping):
            raise AnthropicProtocolError(f"message_start without a message object: {_snippet(data)}")
        self._id = _str_or_none(message.get("id"))
        self._model = _str_or_none(message.get("model"))
        usage = message.get("usage")
        self._usage = dict(usage) if isinstance(usage, Mapping) else {}
        contents: list[Content] = []
        for index, block in enumerate(message.get("content") or []):
            content = self._start(index, block)
            if content is not None:
                contents.append(content)
        return self._update(contents, raw_representation=data)

    def _start(self, index: int, block: Any) -> Content | None:
        content = _block(block, index, self._tool_ids, whole=False)
        kind = block.get("type") if isinstance(block, Mapping) else None
        state = _Block(kind if isinstance(kind, str) else "")
        if content is not None and content.type == "function_call":
            state.call_id = content.call_id
            state.has_input = bool(content.arguments)
        self._blocks[index] = state
        if content is not None and "anthropic_block" in content.additional_properties:
            state.held = dict(content.additional_properties["anthropic_block"])
            return None  # complete only at content_block_stop (server tool input arrives in fragments)
        return content

    def _content_block_start(self, data: Mapping[str, Any]) -> ChatResponseUpdate | None:
        index = self._index(data)
        content = self._start(index, data.get("content_block"))
        return None if content is None else self._update([content], raw_representation=data)

    def _content_block_delta(self, data: Mapping[str, Any]) -> ChatResponseUpdate | None:
        index = self._index(data)
        block = self._blocks.get(index)
        if block is None:
            raise AnthropicProtocolError(f"content_block_delta for block {index}, which was never started")
        delta = data.get("delta")
        if not isinstance(delta, Mapping):
            raise AnthropicProtocolError(f"content_block_delta without a delta object: {_snippet(data)}")
        kind = delta.get("type")
        content: Content | None = None
        if kind == "text_delta":
            text = delta.get("text")
            content = Content.from_text(text) if isinstance(text, str) and text else None
        elif kind == "input_json_delta":
            partial = delta.get("partial_json")
            if isinstance(partial, str) and partial and block.held is not None:
                block.partial += partial
            elif isinstance(partial, str) and partial and block.call_id is not None:
                block.fragments += 1
                content = Content.from_function_call(block.call_id, "", partial)
        elif kind == "thinking_delta":
            text = delta.get("thinking")
            if isinstance(text, str) and text:
                content = Content.from_text_reasoning(text, id=f"thinking_{index}")
        elif kind == "signature_delta":
            signature = delta.get("signature")
            if isinstance(signature, str) and signature:
                content = Content.from_text_reasoning(id=f"thinking_{index}", protected_data=signature)
        return None if content is None else self._update([content], raw_representation=data)

    def _content_block_stop(self, data: Mapping[str, Any]) -> ChatResponseUpdate | None:
        block = self._blocks.get(self._index(data))
        if block is not None and block.held is not None:
            held, block.held = block.held, None
            if block.partial:
                try:
                    held["input"] = json.loads(block.partial)
                except json.JSONDecodeError:
                    raise AnthropicProtocolError(
                        f"the input of a {block.kind} block is not valid JSON: {_snippet(block.partial)}"
                    ) from None
            content = Content(block.kind, additional_properties={"anthropic_block": held}, raw_representation=held)
            return self._update([content], raw_representation=data)
        if block is None or block.call_id is None or block.fragments or block.has_input:
            return None
        block.has_input = True  # a tool call without arguments: "{}" in both modes (PV-9)
        return self._update([Content.from_function_call(block.call_id, "", "{}")], raw_representation=data)

    def _message_delta(self, data: Mapping[str, Any]) -> ChatResponseUpdate:
        delta = data.get("delta")
        delta = delta if isinstance(delta, Mapping) else {}
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            self._usage.update({k: v for k, v in usage.items() if v is not None})
        contents: list[Content] = []
        details = usage_details(self._usage) if self._usage else None
        if details is not None:
            contents.append(Content.from_usage(details))
        return self._update(
            contents,
            finish_reason=finish_reason(delta.get("stop_reason")),
            additional_properties=_stop_properties(delta),
            raw_representation=data,
        )

    def _message_stop(self, data: Mapping[str, Any]) -> None:
        self.done = True

    def _index(self, data: Mapping[str, Any]) -> int:
        index = data.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise AnthropicProtocolError(f"{data.get('type')} event without an integer index: {_snippet(data)}")
        return index


_HANDLERS: dict[str, Any] = {
    "message_start": MessagesStreamDecoder._message_start,
    "content_block_start": MessagesStreamDecoder._content_block_start,
    "content_block_delta": MessagesStreamDecoder._content_block_delta,
    "content_block_stop": MessagesStreamDecoder._content_block_stop,
    "message_delta": MessagesStreamDecoder._message_delta,
    "message_stop": MessagesStreamDecoder._message_stop,
}


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
            data = json.loads(text)
        except json.JSONDecodeError:
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
