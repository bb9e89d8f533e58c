"""Streams of the OpenAI-compatible Chat Completions API (spec/providers.md PV-12 ..
PV-16, OA-14 .. OA-18).

Theory of operation
-------------------
Sans-I/O (PV-1). ``ChatCompletionsStreamDecoder`` turns the bytes of a streaming answer
into ``ChatResponseUpdate``s: the shared ``SSEDecoder`` gives events, each event's data
is one JSON chunk, each chunk with a choice or usage gives one update (PV-16). Its only
state besides the SSE decoder is the table of tool calls by ``index`` (OA-15), which
lets every argument fragment carry its call's id, so ``ChatResponse.from_updates`` can
merge by call id (PV-13). A chunk's delta is mapped as a whole message is
(``_response._contents``), so both modes agree (PV-9). ``data: [DONE]`` is the
terminator (OA-17).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._minagent import ChatResponseUpdate, Content, SSEDecoder, SSEEvent, SSELimitError
from ._response import (
    _ERROR_TEXT,
    OpenAIProtocolError,
    OpenAIStreamError,
    _CallIds,
    _choice_zero,
    _contents,
    _meta,
    _raise_if_error,
    _snippet,
    _str_or_none,
    _usage,
    loads,
)

__all__ = ["DEFAULT_MAX_LINE_SIZE", "ChatCompletionsStreamDecoder"]

DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024  # characters of one SSE line or event (PV-36)


class ChatCompletionsStreamDecoder:
    """Bytes of a streaming Chat Completions answer in, `ChatResponseUpdate`s out.

    Feed every chunk the transport receives to ``feed()`` and yield what it returns; at
    end of input call ``close()`` and yield that too; then check ``done`` (PV-15).
    Errors raised by ``feed()`` / ``close()`` carry the updates decoded before them in
    ``.updates`` (PV-14).
    """

    def __init__(self, *, max_line_size: int | None = DEFAULT_MAX_LINE_SIZE) -> None:
        self._sse = SSEDecoder(max_line_size=max_line_size)
        self._calls = _CallIds(None)
        self._checked = False
        self.done = False

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ChatResponseUpdate]:
        return self._step(chunk)

    def close(self) -> list[ChatResponseUpdate]:
        updates = self._step(None)
        if not self._checked:
            self._check_names(updates)
        return updates

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
            error = OpenAIProtocolError(str(limit))
            error.updates = updates
            raise error
        return updates

    def _check_names(self, updates: list[ChatResponseUpdate]) -> None:
        """OA-28: by the end of the stream, every tool call has received its function
        name."""
        self._checked = True
        unnamed = self._calls.unnamed()
        if unnamed:
            error = OpenAIProtocolError(
                f"the stream ended with tool calls that have no function name: {unnamed[:5]}"
            )
            error.updates = updates
            raise error

    def _decode(self, events: list[SSEEvent]) -> list[ChatResponseUpdate]:
        updates: list[ChatResponseUpdate] = []
        for event in events:
            if self.done:
                break
            try:
                update = self._event(event)
            except (OpenAIStreamError, OpenAIProtocolError) as exc:
                exc.updates = updates
                raise
            if update is not None:
                updates.append(update)
        return updates

    def _event(self, event: SSEEvent) -> ChatResponseUpdate | None:
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            self._check_names([])
            return None
        try:
            chunk = loads(data, "stream data")
        except OpenAIProtocolError as exc:
            if event.event != "error":
                raise
            # an error event whose data is not JSON: its text is the message
            chunk = exc
        if isinstance(chunk, OpenAIProtocolError):
            raise OpenAIStreamError(
                data[:_ERROR_TEXT] if data else "error event without data", body=data
            )
        if not isinstance(chunk, Mapping):
            raise OpenAIProtocolError(
                f"stream chunk is not a JSON object: {_snippet(event.data)}"
            )
        _raise_if_error(chunk, event)
        return self._chunk(chunk)

    def _chunk(self, chunk: Mapping[str, Any]) -> ChatResponseUpdate | None:
        choices = chunk.get("choices")
        choice = _choice_zero(choices) if isinstance(choices, list) else None
        usage = _usage(chunk.get("usage"))
        if choice is None and usage is None:
            return None
        meta = _meta(chunk)
        if self._calls.response_id is None:
            self._calls.response_id = meta["response_id"]
        # OA-14: the stream's first id holds for all of it
        elif meta["response_id"] is not None:
            meta["response_id"] = self._calls.response_id
        contents: list[Content] = []
        finish_reason = None
        if choice is not None:
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                contents = _contents(delta, self._calls, whole=False)
            finish_reason = _str_or_none(choice.get("finish_reason"))
        if usage is not None:
            contents.append(Content.from_usage(usage))
        return ChatResponseUpdate(
            contents,
            "assistant",
            response_id=meta["response_id"],
            message_id=meta["response_id"],
            model=meta["model"],
            created_at=meta["created_at"],
            finish_reason=finish_reason,
            raw_representation=chunk,
        )
