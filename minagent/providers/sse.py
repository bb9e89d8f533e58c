"""An incremental, sans-I/O server-sent events decoder (spec/providers.md, PV-17 ..
PV-21).

Theory of operation
-------------------
Bytes go in through ``feed()``, complete events come out. Three stages, each
incremental:

1. **Text.** An incremental UTF 8 decoder turns bytes into text; a character cut across
   two chunks is held back until it is whole; a leading byte order mark is dropped
   (PV-17).
2. **Lines.** Text is split at CRLF, LF or CR. A chunk that ends in CR ends the line at
   once, and the decoder remembers to swallow one LF at the start of the next chunk, so
   a CRLF cut in two is one line ending (PV-18). An unfinished line waits in
   ``_partial``.
3. **Fields.** Each line is one step of the WHATWG "event stream interpretation"
   algorithm (PV-19, PV-20): comments are skipped, ``data`` accumulates, a blank line
   dispatches.

``close()`` ends the stream: the unfinished line is processed as a line and a pending
event is dispatched (PV-21, the one deliberate departure from WHATWG, which discards
it).

Nothing here knows about JSON or any provider; provider decoders sit on top of it.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent", "SSELimitError"]

_EOL = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: ``data`` (its data lines joined with LF), type and last
    event id."""

    data: str
    event: str = "message"
    id: str | None = None


class SSELimitError(ValueError):
    """A line or an event's data grew past ``max_line_size`` characters (PV-36).

    ``events`` holds the events the same ``feed()`` / ``close()`` call completed before
    it.
    """

    def __init__(self, message: str, events: list[SSEEvent]) -> None:
        super().__init__(message)
        self.events = events


class SSEDecoder:
    """``feed(bytes) -> list[SSEEvent]``; ``close() -> list[SSEEvent]``.

    ``last_event_id`` and ``retry`` (milliseconds, from a ``retry`` field) are kept for
    a transport that reconnects; Chat Completions transports never need them.
    ``max_line_size`` (characters, None for no limit) bounds one line and the data of
    one event; more is an `SSELimitError` (PV-36), so a hostile stream cannot grow
    memory unbounded.
    """

    def __init__(self, *, max_line_size: int | None = None) -> None:
        if max_line_size is not None and max_line_size < 1:
            raise ValueError(
                f"max_line_size must be >= 1 or None, got {max_line_size!r}"
            )
        self.max_line_size = max_line_size
        self._partial_size = 0
        self._data_size = 0
        self._text = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._partial: list[str] = []  # pieces of the current, unfinished line
        # the previous chunk ended with CR: a leading LF is its partner
        self._skip_lf = False
        self._data: list[str] = []
        self._event = ""
        self._closed = False
        self.last_event_id: str | None = None
        self.retry: int | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Decode a chunk of the byte stream; return the events it completed, in
        order."""
        if self._closed:
            raise ValueError("SSEDecoder.feed() after close()")
        text = self._text.decode(bytes(chunk))
        return self._lines(text)

    def close(self) -> list[SSEEvent]:
        """End of stream: flush the text decoder, the last line and a pending event
        (PV-21)."""
        if self._closed:
            return []
        events = self._lines(self._text.decode(b"", final=True))
        self._closed = True
        if self._partial:
            line = "".join(self._partial)
            self._partial = []
            self._line(line, events)
        self._dispatch(events)
        return events

    # -- stages 2 and 3 -----------------------------------------------------------------------

    def _lines(self, text: str) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if not text:
            return events
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        pos = 0
        limit = self.max_line_size
        for match in _EOL.finditer(text):
            piece = text[pos : match.start()]
            if limit is not None and self._partial_size + len(piece) > limit:
                self._too_long("a line", events)
            self._partial.append(piece)
            line = "".join(self._partial)
            self._partial = []
            self._partial_size = 0
            self._line(line, events)
            pos = match.end()
        if pos < len(text):
            piece = text[pos:]
            self._partial_size += len(piece)
            if limit is not None and self._partial_size > limit:
                self._too_long("a line", events)
            self._partial.append(piece)
        elif text.endswith("\r"):
            self._skip_lf = True
        return events

    def _too_long(self, what: str, events: list[SSEEvent]) -> None:
        self._partial, self._partial_size, self._data, self._data_size = [], 0, [], 0
        self._closed = True  # the stream cannot be decoded further
        raise SSELimitError(
            f"{what} of the event stream is longer than max_line_size={self.max_line_size}",
            events,
        )

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data_size += len(value) + 1
            if self.max_line_size is not None and self._data_size > self.max_line_size:
                self._too_long("the data of an event", events)
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry = int(value)

    def _dispatch(self, events: list[SSEEvent]) -> None:
        data, event = self._data, self._event
        self._data, self._event, self._data_size = [], "", 0
        if data:
            events.append(
                SSEEvent("\n".join(data), event or "message", self.last_event_id)
            )
