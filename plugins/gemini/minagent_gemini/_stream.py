"""Streams of ``streamGenerateContent?alt=sse`` (spec/gemini.md GM-20, GM-21;
spec/providers.md PV-12 .. PV-16).

Theory of operation
-------------------
Sans-I/O (PV-1). ``GeminiStreamDecoder`` maps the bytes of a streamed answer: the shared
``SSEDecoder`` gives events, and each event's data is one ``GenerateContentResponse``
mapped like a whole body (``_response``), so both modes agree (PV-9). Its state is what
the stream leaves implicit: a ``CallIds`` numbering the function calls seen so far
(ids generated as in a whole answer, GM-14), and the latest ``usageMetadata`` (every
chunk may carry the running counts; usage is reported once, with the finish reason).
Gemini sends no terminator event: the event whose candidate has a ``finishReason`` ends
the answer (PV-15).
"""

from __future__ import annotations

from collections.abc import Mapping
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
    CallIds,
    GeminiProtocolError,
    GeminiSafetyError,
    GeminiStreamError,
    _snippet,
    _str_or_none,
    candidate_contents,
    candidate_properties,
    check_candidate,
    check_prompt,
    finish_reason,
    first_candidate,
    raise_if_error,
    usage_details,
)

__all__ = ["DEFAULT_MAX_LINE_SIZE", "GeminiStreamDecoder"]

# characters of one SSE line or event's data (PV-36)
DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024

_ERRORS = (GeminiStreamError, GeminiProtocolError, GeminiSafetyError)


class GeminiStreamDecoder:
    """Bytes of a ``streamGenerateContent?alt=sse`` answer in, `ChatResponseUpdate`s
    out.

    Feed every chunk the transport receives to ``feed()`` and yield what it returns; at
    end of input call ``close()`` and yield that too; then check ``done`` (PV-15).
    Errors raised by ``feed()`` / ``close()`` carry the updates decoded before them in
    ``.updates`` (PV-14). ``id_seed`` seeds the generated call ids (GM-14);
    ``max_line_size`` bounds one line and one event's data (PV-36): more is a
    `GeminiProtocolError` naming the bound.
    """

    def __init__(
        self, id_seed: str = "", *, max_line_size: int | None = DEFAULT_MAX_LINE_SIZE
    ) -> None:
        self._sse = SSEDecoder(max_line_size=max_line_size)
        self._calls = CallIds(id_seed)
        self._usage: Any = None
        self._has_calls = False
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
            error = GeminiProtocolError(str(limit))
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
            except _ERRORS as exc:
                exc.updates = updates
                raise
            # PV-49: hostile values where the protocol has others
            except WIRE_ERRORS as exc:
                error = GeminiProtocolError(unreadable("a stream event", exc))
                error.updates = updates
                raise error from None
            if update is not None:
                updates.append(update)
        return updates

    def _event(self, event: SSEEvent) -> ChatResponseUpdate | None:
        if not event.data.strip():
            return None
        data = wire_json(event.data, "stream data", GeminiProtocolError)  # PV-49
        if not isinstance(data, Mapping):
            raise GeminiProtocolError(
                f"stream event is not a JSON object: {_snippet(event.data)}"
            )
        raise_if_error(data)
        check_prompt(data)
        if data.get("usageMetadata") is not None:
            self._usage = data.get("usageMetadata")
        candidate = first_candidate(data)
        if candidate is None:
            return None
        check_candidate(candidate)
        contents = candidate_contents(candidate, self._calls)
        self._has_calls = self._has_calls or any(
            c.type == "function_call" for c in contents
        )
        finish = finish_reason(candidate.get("finishReason"), calls=self._has_calls)
        props: dict[str, Any] = {}
        if finish is not None:
            self.done = True
            usage = usage_details(self._usage)
            if usage is not None:
                contents.append(Content.from_usage(usage))
            props = candidate_properties(candidate)
        elif not contents:
            return None
        return ChatResponseUpdate(
            contents,
            "assistant",
            response_id=_str_or_none(data.get("responseId")),
            model=_str_or_none(data.get("modelVersion")),
            finish_reason=finish,
            additional_properties=props,
            raw_representation=data,
        )
