"""NDJSON streams of Ollama's native chat API (spec/ollama.md OL-16 .. OL-18, PV-12 ..
PV-16).

Theory of operation
-------------------
Sans-I/O (PV-1). ``OllamaStreamDecoder`` keeps the unfinished last line and a
``_CallIds`` (the number of tool calls seen so far, which numbers the calls for their
generated ids, OL-15) and maps each complete line like a whole body
(``_response._contents``), so streaming and non-streaming agree (PV-9). The chunk with
``"done": true`` is the terminator (PV-15).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._minagent import WIRE_ERRORS, ChatResponseUpdate, Content, unreadable, wire_json
from ._response import (
    OllamaProtocolError,
    OllamaStreamError,
    _CallIds,
    _contents,
    _created_at,
    _dump,
    _raise_if_error,
    _snippet,
    _str_or_none,
    _usage,
)

__all__ = ["DEFAULT_MAX_LINE_SIZE", "OllamaStreamDecoder"]

DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024  # bytes of one NDJSON line (PV-36)


class OllamaStreamDecoder:
    """Bytes of a streaming ``/api/chat`` answer (NDJSON) in, `ChatResponseUpdate`s out.

    Feed every chunk the transport receives to ``feed()`` and yield what it returns; at
    end of input call ``close()`` and yield that too; then check ``done`` (PV-15).
    Errors raised by ``feed()`` / ``close()`` carry the updates decoded before them in
    ``.updates`` (PV-14). ``id_seed`` seeds the generated tool-call ids (OL-15). A line
    longer than ``max_line_size`` bytes (None: no bound) is an `OllamaProtocolError`
    naming the bound (PV-36).
    """

    def __init__(
        self, id_seed: str = "", *, max_line_size: int | None = DEFAULT_MAX_LINE_SIZE
    ) -> None:
        if max_line_size is not None and (
            not isinstance(max_line_size, int)
            or isinstance(max_line_size, bool)
            or max_line_size < 1
        ):
            raise ValueError(
                f"max_line_size must be a positive int (bytes) or None, got {max_line_size!r}"
            )
        self._buffer = bytearray()
        self._calls = _CallIds(id_seed)
        self.max_line_size = max_line_size
        self.done = False

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ChatResponseUpdate]:
        if self.done:
            return []
        # only the new bytes can hold a new line end: linear in the input
        start = len(self._buffer)
        self._buffer += chunk
        end = self._buffer.rfind(b"\n", start)
        if end < 0:
            lines: list[bytes] = []
        else:
            lines = bytes(self._buffer[:end]).split(b"\n")
            del self._buffer[: end + 1]
        updates = self._decode(lines)
        if (
            self.max_line_size is not None
            and len(self._buffer) > self.max_line_size
            and not self.done
        ):
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
            # PV-49: hostile values where the protocol has others
            except WIRE_ERRORS as exc:
                error = OllamaProtocolError(unreadable("a stream line", exc))
                error.updates = updates
                raise error from None
            if update is not None:
                updates.append(update)
        return updates

    def _line(self, raw: bytes) -> ChatResponseUpdate | None:
        if self.max_line_size is not None and len(raw) > self.max_line_size:
            raise OllamaProtocolError(
                f"ollama: a stream line is longer than max_line_size={self.max_line_size} bytes"
            )
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            return None
        chunk = wire_json(text, "stream line", OllamaProtocolError)  # PV-49
        if not isinstance(chunk, Mapping):
            raise OllamaProtocolError(
                f"stream line is not a JSON object: {_snippet(text)}"
            )
        _raise_if_error(chunk)
        return self._chunk(chunk)

    def _chunk(self, chunk: Mapping[str, Any]) -> ChatResponseUpdate | None:
        message = chunk.get("message")
        if message is not None and not isinstance(message, Mapping):
            raise OllamaProtocolError(
                f"stream chunk's message is not an object: {_snippet(_dump(chunk))}"
            )
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
