"""Streams of the Messages API (spec/anthropic.md, AN-16, AN-17; spec/providers.md PV-12
.. PV-16).

Theory of operation
-------------------
Sans-I/O (PV-1). ``MessagesStreamDecoder`` maps the bytes of a streamed answer: the
shared ``SSEDecoder`` gives events, each event's data is one JSON event dispatched on
its ``type`` (AN-16). Its state is what the Messages stream leaves implicit in later
events:

* the message id and model from ``message_start`` (every later update carries them,
  PV-16);
* the content blocks by ``index``: their kind, their call id (``input_json_delta``
  fragments carry only the index) and whether a tool call got any argument fragment;
* the usage of ``message_start``, which ``message_delta`` overwrites field by field (its
  counts are cumulative), so the stream reports usage once, at ``message_delta``.

Blocks are mapped by ``_response._block``, as in a whole message, so both modes agree
(PV-9). ``message_stop`` is the terminator (PV-15).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._minagent import (
    WIRE_ERRORS,
    ChatResponseUpdate,
    Content,
    SSEDecoder,
    SSEEvent,
    SSELimitError,
    unreadable,
    wire_json,
)
from ._response import (
    AnthropicProtocolError,
    AnthropicStreamError,
    _block,
    _raise_error,
    _snippet,
    _stop_properties,
    _str_or_none,
    finish_reason,
    usage_details,
)

__all__ = ["DEFAULT_MAX_LINE_SIZE", "MessagesStreamDecoder"]

# characters of one SSE line or event's data (PV-36)
DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024


# --------------------------------------------------------------------------------------------
# Streams (AN-16, AN-17)


@dataclass
class _Block:
    kind: str
    call_id: str | None = None
    fragments: int = 0
    has_input: bool = False
    # an unmodelled block, sent whole at its stop (AN-16)
    held: dict[str, Any] | None = None
    partial: str = ""  # its input_json_delta fragments


class MessagesStreamDecoder:
    """Bytes of a streaming Messages answer in, `ChatResponseUpdate`s out.

    Feed every chunk the transport receives to ``feed()`` and yield what it returns; at
    end of input call ``close()`` and yield that too; then check ``done`` (PV-15).
    Errors raised by ``feed()`` / ``close()`` carry the updates decoded before them in
    ``.updates`` (PV-14). ``tool_ids`` maps wire ids back to the caller's ids (AN-8);
    ``max_line_size`` bounds one line and one event's data (PV-36): more is an
    `AnthropicProtocolError` naming the bound.
    """

    def __init__(
        self,
        *,
        tool_ids: Mapping[str, str] | None = None,
        max_line_size: int | None = DEFAULT_MAX_LINE_SIZE,
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

    def _step(
        self, chunk: bytes | bytearray | memoryview | None
    ) -> list[ChatResponseUpdate]:
        limit: SSELimitError | None = None
        try:
            events = self._sse.feed(chunk) if chunk is not None else self._sse.close()
        except SSELimitError as exc:
            events, limit = exc.events, exc
        updates = self._decode(events)
        if limit is not None:
            error = AnthropicProtocolError(str(limit))
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
            # PV-49: hostile values where the protocol has others
            except WIRE_ERRORS as exc:
                error = AnthropicProtocolError(
                    unreadable(f"a {event.event} event", exc)
                )
                error.updates = updates
                raise error from None
            if update is not None:
                updates.append(update)
        return updates

    def _event(self, event: SSEEvent) -> ChatResponseUpdate | None:
        try:
            data = wire_json(event.data, "stream data", AnthropicProtocolError)  # PV-49
        except AnthropicProtocolError:
            if event.event == "error":
                raise AnthropicStreamError(
                    event.data.strip() or "error event without data", body=event.data
                ) from None
            raise
        if not isinstance(data, Mapping):
            raise AnthropicProtocolError(
                f"stream event is not a JSON object: {_snippet(event.data)}"
            )
        kind = data.get("type") or event.event
        if kind == "error" or (event.event == "error" and "error" in data):
            _raise_error(data)
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        # ping, unknown events: nothing
        return handler(self, data) if handler is not None else None

    def _update(self, contents: list[Content], **kw: Any) -> ChatResponseUpdate:
        return ChatResponseUpdate(
            contents,
            "assistant",
            response_id=self._id,
            message_id=self._id,
            model=self._model,
            **kw,
        )

    def _message_start(self, data: Mapping[str, Any]) -> ChatResponseUpdate:
        message = data.get("message")
        if not isinstance(message, Mapping):
            raise AnthropicProtocolError(
                f"message_start without a message object: {_snippet(data)}"
            )
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
            # complete only at content_block_stop (server tool input arrives in
            # fragments)
            return None
        return content

    def _content_block_start(
        self, data: Mapping[str, Any]
    ) -> ChatResponseUpdate | None:
        index = self._index(data)
        content = self._start(index, data.get("content_block"))
        return (
            None
            if content is None
            else self._update([content], raw_representation=data)
        )

    def _content_block_delta(
        self, data: Mapping[str, Any]
    ) -> ChatResponseUpdate | None:
        index = self._index(data)
        block = self._blocks.get(index)
        if block is None:
            raise AnthropicProtocolError(
                f"content_block_delta for block {index}, which was never started"
            )
        delta = data.get("delta")
        if not isinstance(delta, Mapping):
            raise AnthropicProtocolError(
                f"content_block_delta without a delta object: {_snippet(data)}"
            )
        kind = delta.get("type")
        content: Content | None = None
        if kind == "text_delta":
            text = delta.get("text")
            content = (
                Content.from_text(text) if isinstance(text, str) and text else None
            )
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
                content = Content.from_text_reasoning(
                    id=f"thinking_{index}", protected_data=signature
                )
        return (
            None
            if content is None
            else self._update([content], raw_representation=data)
        )

    def _content_block_stop(self, data: Mapping[str, Any]) -> ChatResponseUpdate | None:
        block = self._blocks.get(self._index(data))
        if block is not None and block.held is not None:
            held, block.held = block.held, None
            if block.partial:
                held["input"] = wire_json(
                    block.partial,
                    f"the input of a {block.kind} block",
                    AnthropicProtocolError,
                )
            content = Content(
                block.kind,
                additional_properties={"anthropic_block": held},
                raw_representation=held,
            )
            return self._update([content], raw_representation=data)
        if block is None or block.call_id is None or block.fragments or block.has_input:
            return None
        # a tool call without arguments: "{}" in both modes (PV-9)
        block.has_input = True
        return self._update(
            [Content.from_function_call(block.call_id, "", "{}")],
            raw_representation=data,
        )

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
            raise AnthropicProtocolError(
                f"{data.get('type')} event without an integer index: {_snippet(data)}"
            )
        return index


_HANDLERS: dict[str, Any] = {
    "message_start": MessagesStreamDecoder._message_start,
    "content_block_start": MessagesStreamDecoder._content_block_start,
    "content_block_delta": MessagesStreamDecoder._content_block_delta,
    "content_block_stop": MessagesStreamDecoder._content_block_stop,
    "message_delta": MessagesStreamDecoder._message_delta,
    "message_stop": MessagesStreamDecoder._message_stop,
}
