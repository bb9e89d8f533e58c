"""A sans-I/O Server-Sent Events decoder (the WHATWG event-stream rules that MCP uses).

Feed it bytes as they arrive, in chunks of any size; it returns the complete events. Lines end
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
        self._data: list[str] = []
        self._event = ""
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buffer += chunk
        events: list[SSEEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                return events
            end, width = cut
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


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first line ends and how wide its terminator is; a CR at the very end waits for more."""
    lf, cr = buffer.find(b"\n"), buffer.find(b"\r")
    if cr == -1 or (lf != -1 and lf < cr):
        return (lf, 1) if lf != -1 else None
    if cr + 1 == len(buffer):
        return None  # CR LF may be split across chunks
    return cr, 2 if buffer[cr + 1] == 0x0A else 1
