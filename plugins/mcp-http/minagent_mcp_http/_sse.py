"""A sans-I/O Server-Sent Events decoder (the WHATWG event-stream rules that MCP uses).

Feed it bytes as they arrive, in chunks of any size; it returns the complete events (a CR at
the end of a chunk ends its line at once; an LF opening the next chunk is then skipped). Lines end
with CRLF, LF or CR; ``data`` lines are joined with newlines; a comment line (``:``) is ignored;
``id`` sets the last event id (kept across events, as resumption needs), ``retry`` the
reconnection delay. An event with no data is not dispatched.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SSEDecoder", "SSEEvent"]


class SSEEvent(NamedTuple):
    event: str
    data: str
    id: str | None


class SSEDecoder:
    """Incremental event-stream decoder; ``last_event_id`` survives for ``Last-Event-ID``."""

    def __init__(self) -> None:
        self._buffer = b""
        self._skip_lf = False  # the last chunk ended with CR: an LF starting the next one belongs to it
        self._data: list[str] = []
        self._event = ""
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        self._buffer += chunk
        events: list[SSEEvent] = []
        while True:
            lf, cr = self._buffer.find(b"\n"), self._buffer.find(b"\r")
            if lf == -1 and cr == -1:
                return events
            if cr != -1 and (lf == -1 or cr < lf):
                end, width = cr, 1
                if cr + 1 < len(self._buffer):
                    width = 2 if self._buffer[cr + 1] == 0x0A else 1
                else:
                    self._skip_lf = True  # CR ends the chunk: an LF that starts the next one is part of it
            else:
                end, width = lf, 1
            raw, self._buffer = self._buffer[:end], self._buffer[end + width :]
            event = self._line(raw.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent(self._event or "message", "\n".join(self._data), self.last_event_id)
            self._data, self._event = [], ""
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None
