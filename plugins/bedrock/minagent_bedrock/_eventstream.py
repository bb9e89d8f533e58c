"""The ``application/vnd.amazon.eventstream`` framing, sans-I/O (spec/bedrock.md BR-16 ..
BR-18).

Theory of operation
-------------------
A message is a 12-byte prelude (total length, headers length, the CRC32 of those 8
bytes), the headers, the payload and the CRC32 of everything before it. `EventStreamDecoder`
buffers what ``feed`` is given and returns every complete `EventMessage`; it checks both
CRCs and every length (BR-16), reads the ten header value types and refuses a header named twice (BR-17) and refuses a
message larger than ``max_message_size``. What it refuses is an `EventStreamError`, never
another exception; it does not interpret messages (``_stream`` does, BR-18).
"""

from __future__ import annotations

import binascii
import datetime
import struct
import uuid
from dataclasses import dataclass
from typing import Any, NoReturn

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "EventMessage",
    "EventStreamDecoder",
    "EventStreamError",
    "HeaderValue",
    "encode_message",
]

_PRELUDE = 12
_MIN_MESSAGE = 16  # a prelude and a message CRC
_MAX_HEADERS = 128 * 1024  # the framing's own bound on the headers' length
DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024 + _MAX_HEADERS + _MIN_MESSAGE

HeaderValue = bool | int | bytes | str | datetime.datetime | uuid.UUID


class EventStreamError(ValueError):
    """Bytes that are not a valid event stream (BR-16): a CRC, a length or a header
    that the framing does not allow."""


@dataclass(frozen=True)
class EventMessage:
    """One message: its headers by name, and its payload bytes."""

    headers: dict[str, HeaderValue]
    payload: bytes


def _crc(data: bytes | bytearray | memoryview, start: int = 0) -> int:
    return binascii.crc32(data, start) & 0xFFFFFFFF


class EventStreamDecoder:
    """Bytes in, `EventMessage`s out; `EventStreamError` for anything else (BR-16).

    ``pending`` is the number of bytes of an incomplete message held; a stream that ends
    with some is cut (BR-19).
    """

    def __init__(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self._buffer = bytearray()
        self._max = max_message_size
        self._broken: str | None = None

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[EventMessage]:
        if self._broken is not None:
            raise EventStreamError(f"the stream is already broken: {self._broken}")
        self._buffer += chunk
        messages: list[EventMessage] = []
        while len(self._buffer) >= _PRELUDE:
            total, headers_length, prelude_crc = struct.unpack_from(
                ">III", self._buffer
            )
            if _crc(self._buffer[:8]) != prelude_crc:
                self._fail("the prelude CRC does not match")
            if total < _MIN_MESSAGE:
                self._fail(f"message length {total} is below the minimum of 16 bytes")
            if total > self._max:
                self._fail(
                    f"message length {total} exceeds max_message_size={self._max}"
                )
            if headers_length > min(_MAX_HEADERS, total - _MIN_MESSAGE):
                self._fail(
                    f"headers length {headers_length} does not fit a message of "
                    f"{total} bytes"
                )
            if len(self._buffer) < total:
                break
            frame = bytes(self._buffer[:total])
            del self._buffer[:total]
            (message_crc,) = struct.unpack_from(">I", frame, total - 4)
            if _crc(frame[: total - 4]) != message_crc:
                self._fail("the message CRC does not match")
            headers = _headers(frame[_PRELUDE : _PRELUDE + headers_length], self)
            messages.append(
                EventMessage(headers, frame[_PRELUDE + headers_length : -4])
            )
        return messages

    def _fail(self, why: str) -> NoReturn:
        self._broken = why
        self._buffer.clear()
        raise EventStreamError(why)


_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


def _headers(data: bytes, decoder: EventStreamDecoder) -> dict[str, HeaderValue]:
    """BR-17: the ten header value types."""
    out: dict[str, HeaderValue] = {}
    at = 0
    try:
        while at < len(data):
            name_length = data[at]
            name = data[at + 1 : at + 1 + name_length].decode("utf-8")
            if len(name) == 0 or at + 1 + name_length > len(data):
                decoder._fail("a header name is empty or cut")
            at += 1 + name_length
            kind = data[at]
            at += 1
            value: HeaderValue
            if kind in (0, 1):
                value = kind == 0
            elif kind in _FIXED:
                fmt = _FIXED[kind]
                size = struct.calcsize(fmt)
                (number,) = struct.unpack_from(fmt, data, at)
                at += size
                value = (
                    datetime.datetime.fromtimestamp(number / 1000, datetime.UTC)
                    if kind == 8
                    else int(number)
                )
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", data, at)
                at += 2
                raw = data[at : at + length]
                if len(raw) != length:
                    decoder._fail(f"header {name!r} is cut")
                at += length
                value = raw.decode("utf-8") if kind == 7 else bytes(raw)
            elif kind == 9:
                raw = data[at : at + 16]
                if len(raw) != 16:
                    decoder._fail(f"header {name!r} is cut")
                at += 16
                value = uuid.UUID(bytes=bytes(raw))
            else:
                decoder._fail(f"header {name!r} has unknown value type {kind}")
            if name in out:
                decoder._fail(f"header {name!r} appears twice")
            out[name] = value
    except EventStreamError:
        raise
    except (IndexError, struct.error, UnicodeDecodeError, ValueError, OverflowError):
        decoder._fail("a header is malformed")
    return out


def _header_bytes(name: str, value: Any) -> bytes:
    encoded = name.encode("utf-8")
    head = bytes([len(encoded)]) + encoded
    if isinstance(value, bool):
        return head + bytes([0 if value else 1])
    if isinstance(value, int):
        return head + b"\x04" + struct.pack(">i", value)
    if isinstance(value, bytes):
        return head + b"\x06" + struct.pack(">H", len(value)) + value
    if isinstance(value, uuid.UUID):
        return head + b"\x09" + value.bytes
    if isinstance(value, datetime.datetime):
        return head + b"\x08" + struct.pack(">q", int(value.timestamp() * 1000))
    text = str(value).encode("utf-8")
    return head + b"\x07" + struct.pack(">H", len(text)) + text


def encode_message(headers: dict[str, Any], payload: bytes) -> bytes:
    """One message in the framing (for fake servers and tests; BR-16)."""
    head = b"".join(_header_bytes(k, v) for k, v in headers.items())
    total = _MIN_MESSAGE + len(head) + len(payload)
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", _crc(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", _crc(body))
