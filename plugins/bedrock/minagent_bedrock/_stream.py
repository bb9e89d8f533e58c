"""ConverseStream's events as updates (spec/bedrock.md BR-18, BR-19).

Theory of operation
-------------------
`ConverseStreamDecoder` feeds bytes to the sans-I/O `EventStreamDecoder` and maps each
message by its ``:message-type`` header (BR-18): an ``event`` by its ``:event-type``
(``messageStart``, ``contentBlockStart``, ``contentBlockDelta``, ``contentBlockStop``,
``messageStop``, ``metadata``; unknown event types are skipped), an ``exception`` or an
``error`` as a `BedrockStreamError`. The stream is complete (``done``) with its
``metadata`` event, which ends every ConverseStream; an end after ``messageStop``
without it still has its finish reason (PV-15).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._eventstream import (
    DEFAULT_MAX_MESSAGE_SIZE,
    EventMessage,
    EventStreamDecoder,
    EventStreamError,
)
from ._minagent import (
    WIRE_ERRORS,
    ChatResponseUpdate,
    Content,
    unreadable,
    wire_json,
)
from ._response import (
    BedrockProtocolError,
    BedrockStreamError,
    finish_reason,
    snippet,
    usage_details,
)

__all__ = ["ConverseStreamDecoder"]


@dataclass
class _Block:
    call_id: str | None = None
    fragments: int = 0


class ConverseStreamDecoder:
    """Bytes of a ConverseStream answer in, `ChatResponseUpdate`s out (BR-18).

    Errors raised by ``feed()`` / ``close()`` carry the updates decoded before them in
    ``.updates`` (PV-14). ``max_line_size`` bounds one message of the event stream
    (PV-36).
    """

    def __init__(self, *, max_line_size: int | None = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self._frames = EventStreamDecoder(
            max_message_size=max_line_size or DEFAULT_MAX_MESSAGE_SIZE
        )
        self._blocks: dict[int, _Block] = {}
        self.done = False

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ChatResponseUpdate]:
        try:
            messages = self._frames.feed(chunk)
        except EventStreamError as exc:
            text = str(exc).replace("max_message_size", "max_line_size")
            raise BedrockProtocolError(f"invalid event stream: {text}") from None
        updates: list[ChatResponseUpdate] = []
        for message in messages:
            if self.done:
                break
            try:
                update = self._message(message)
            except (BedrockStreamError, BedrockProtocolError) as exc:
                exc.updates = updates
                raise
            except WIRE_ERRORS as exc:  # PV-49
                error = BedrockProtocolError(unreadable("a stream event", exc))
                error.updates = updates
                raise error from None
            if update is not None:
                updates.append(update)
        return updates

    def close(self) -> list[ChatResponseUpdate]:
        """The end of the bytes: a message left half-read is a cut stream (BR-19)."""
        if self._frames.pending and not self.done:
            raise BedrockProtocolError(
                f"the stream ended inside an event ({self._frames.pending} bytes)"
            )
        return []

    def _message(self, message: EventMessage) -> ChatResponseUpdate | None:
        kind = message.headers.get(":message-type")
        if kind == "error":
            code = _text(message.headers.get(":error-code"))
            text = _text(message.headers.get(":error-message"))
            raise BedrockStreamError(
                f"{code}: {text}" if code and text else text or code or "error",
                exception_type=code,
            )
        data = wire_json(
            message.payload or b"{}", "event payload", BedrockProtocolError
        )
        if not isinstance(data, Mapping):
            raise BedrockProtocolError(
                f"event payload is not a JSON object: {snippet(data)}"
            )
        if kind == "exception":
            name = message.headers.get(":exception-type")
            name = name if isinstance(name, str) else None
            text = data.get("message") or data.get("Message")
            detail = text if isinstance(text, str) and text else snippet(data)
            raise BedrockStreamError(
                f"{name}: {detail}" if name else detail,
                exception_type=name,
                body=dict(data),
            )
        if kind != "event":
            raise BedrockProtocolError(f"unknown :message-type {kind!r}")
        event = message.headers.get(":event-type")
        handler = _HANDLERS.get(event) if isinstance(event, str) else None
        return handler(self, data) if handler is not None else None

    def _update(self, contents: list[Content], **kw: Any) -> ChatResponseUpdate:
        return ChatResponseUpdate(contents, "assistant", **kw)

    def _index(self, data: Mapping[str, Any]) -> int:
        index = data.get("contentBlockIndex")
        if not isinstance(index, int) or isinstance(index, bool):
            raise BedrockProtocolError(
                f"event without an integer contentBlockIndex: {snippet(data)}"
            )
        return index

    def _message_start(self, data: Mapping[str, Any]) -> ChatResponseUpdate:
        return self._update([], raw_representation=dict(data))

    def _block_start(self, data: Mapping[str, Any]) -> ChatResponseUpdate | None:
        index = self._index(data)
        start = data.get("start")
        use = start.get("toolUse") if isinstance(start, Mapping) else None
        block = self._blocks.setdefault(index, _Block())
        if not isinstance(use, Mapping):
            return None
        call_id = use.get("toolUseId")
        if not isinstance(call_id, str) or not call_id:
            raise BedrockProtocolError(
                f"toolUse start without a toolUseId: {snippet(data)}"
            )
        block.call_id = call_id
        name = use.get("name")
        content = Content.from_function_call(
            call_id, name if isinstance(name, str) else "", ""
        )
        return self._update([content], raw_representation=dict(data))

    def _block_delta(self, data: Mapping[str, Any]) -> ChatResponseUpdate | None:
        index = self._index(data)
        block = self._blocks.setdefault(index, _Block())
        delta = data.get("delta")
        if not isinstance(delta, Mapping):
            raise BedrockProtocolError(
                f"contentBlockDelta without a delta: {snippet(data)}"
            )
        content: Content | None = None
        if "text" in delta:
            text = delta["text"]
            if not isinstance(text, str):
                raise BedrockProtocolError(
                    f"text delta is not a string: {snippet(data)}"
                )
            content = Content.from_text(text) if text else None
        elif "toolUse" in delta:
            use = delta["toolUse"]
            piece = use.get("input") if isinstance(use, Mapping) else None
            if block.call_id is None:
                raise BedrockProtocolError(
                    f"toolUse delta for block {index}, which started no tool use"
                )
            if isinstance(piece, str) and piece:
                block.fragments += 1
                content = Content.from_function_call(block.call_id, "", piece)
        return (
            None
            if content is None
            else self._update([content], raw_representation=dict(data))
        )

    def _block_stop(self, data: Mapping[str, Any]) -> ChatResponseUpdate | None:
        block = self._blocks.get(self._index(data))
        if block is None or block.call_id is None or block.fragments:
            return None
        block.fragments = 1
        # a tool call without arguments: "{}" in both modes (PV-9)
        return self._update(
            [Content.from_function_call(block.call_id, "", "{}")],
            raw_representation=dict(data),
        )

    def _message_stop(self, data: Mapping[str, Any]) -> ChatResponseUpdate:
        reason = data.get("stopReason")
        props = {"stop_reason": reason} if isinstance(reason, str) and reason else {}
        return self._update(
            [],
            finish_reason=finish_reason(reason),
            additional_properties=props,
            raw_representation=dict(data),
        )

    def _metadata(self, data: Mapping[str, Any]) -> ChatResponseUpdate:
        self.done = True
        details = usage_details(data.get("usage"))
        contents = [Content.from_usage(details)] if details is not None else []
        return self._update(contents, raw_representation=dict(data))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


_HANDLERS: dict[str, Any] = {
    "messageStart": ConverseStreamDecoder._message_start,
    "contentBlockStart": ConverseStreamDecoder._block_start,
    "contentBlockDelta": ConverseStreamDecoder._block_delta,
    "contentBlockStop": ConverseStreamDecoder._block_stop,
    "messageStop": ConverseStreamDecoder._message_stop,
    "metadata": ConverseStreamDecoder._metadata,
}
