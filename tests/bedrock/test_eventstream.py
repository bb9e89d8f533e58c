"""The event-stream framing against botocore's reader, and hostile bytes (BR-16 ..
BR-18, PV-49)."""

from __future__ import annotations

import binascii
import contextlib
import datetime
import json
import struct
import uuid
from typing import Any

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_bedrock import (
    BedrockProtocolError,
    BedrockStreamError,
    ConverseStreamDecoder,
    EventMessage,
    EventStreamDecoder,
    EventStreamError,
    encode_message,
)

from minagent.providers import ProviderError

from ._fake_server import event, exception, stream_of, whole_output


def frame(headers: bytes, payload: bytes) -> bytes:
    """A message built by hand, independent of encode_message."""
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", binascii.crc32(body))


def header(name: str, kind: int, value: bytes) -> bytes:
    raw = name.encode()
    return bytes([len(raw)]) + raw + bytes([kind]) + value


EVERY_TYPE = b"".join(
    [
        header("t", 0, b""),
        header("f", 1, b""),
        header("byte", 2, struct.pack(">b", -7)),
        header("short", 3, struct.pack(">h", -300)),
        header("int", 4, struct.pack(">i", 70000)),
        header("long", 5, struct.pack(">q", -(2**40))),
        header("bytes", 6, struct.pack(">H", 3) + b"\x00\xff\x10"),
        header("string", 7, struct.pack(">H", 5) + "héllo".encode()[:5]),
        header("time", 8, struct.pack(">q", 1764644645123)),
        header("uuid", 9, uuid.UUID(int=12345).bytes),
    ]
)


def botocore_messages(data: bytes) -> list[tuple[dict[str, Any], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(m.headers, m.payload) for m in buffer]


def comparable(headers: dict[str, Any]) -> dict[str, Any]:
    """Our typed header values as botocore gives them (raw ms, raw UUID bytes)."""
    out: dict[str, Any] = {}
    for name, value in headers.items():
        if isinstance(value, datetime.datetime):
            value = round(value.timestamp() * 1000)
        elif isinstance(value, uuid.UUID):
            value = value.bytes
        out[name] = value
    return out


def test_every_header_type_as_botocore_reads_it() -> None:
    """BR-17: the ten header types read as botocore reads them; timestamps as aware UTC
    datetimes, UUIDs as uuid.UUID."""
    data = frame(EVERY_TYPE, b'{"x": 1}')
    ours = EventStreamDecoder().feed(data)
    theirs = botocore_messages(data)
    assert [(comparable(m.headers), m.payload) for m in ours] == theirs
    message = ours[0]
    assert message.headers["t"] is True
    assert message.headers["f"] is False
    assert message.headers["time"] == datetime.datetime(
        2025, 12, 2, 3, 4, 5, 123000, tzinfo=datetime.UTC
    )
    assert message.headers["uuid"] == uuid.UUID(int=12345)


def test_a_converse_stream_byte_by_byte_as_botocore_reads_it() -> None:
    """BR-16: a whole ConverseStream answer, fed one byte at a time, gives the messages
    botocore's buffer gives."""
    output = whole_output(
        [
            {"text": "Hi there"},
            {"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}},
        ],
        "tool_use",
        None,
    )
    data = stream_of(output)
    decoder = EventStreamDecoder()
    ours: list[EventMessage] = []
    for i in range(len(data)):
        ours += decoder.feed(data[i : i + 1])
    assert decoder.pending == 0
    assert [(m.headers, m.payload) for m in ours] == botocore_messages(data)
    assert [m.headers[":event-type"] for m in ours] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]


@pytest.mark.parametrize(("offset", "what"), [(9, "prelude CRC"), (20, "message CRC")])
def test_a_corrupted_crc_is_rejected_by_both(offset: int, what: str) -> None:
    """BR-16: one flipped bit in the prelude or in the headers: botocore raises
    ChecksumMismatch, we raise EventStreamError naming the CRC; the decoder stays
    broken."""
    data = bytearray(event("messageStop", {"stopReason": "end_turn"}))
    data[offset] ^= 0x01
    with pytest.raises(ChecksumMismatch):
        botocore_messages(bytes(data))
    decoder = EventStreamDecoder()
    with pytest.raises(EventStreamError, match=what):
        decoder.feed(bytes(data))
    with pytest.raises(EventStreamError, match="already broken"):
        decoder.feed(event("metadata", {}))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (frame(header("n", 42, b""), b""), "unknown value type 42"),
        (frame(header("n", 7, b"\x00\x09ab"), b""), "cut"),
        (frame(header("a", 0, b"") + header("a", 1, b""), b""), "twice"),
        (frame(header("s", 7, b"\x00\x02\xff\xfe"), b""), "malformed"),
    ],
)
def test_bad_headers_are_typed_errors(data: bytes, match: str) -> None:
    """BR-17: an unknown type, a cut value, a repeated name, undecodable text."""
    with pytest.raises(EventStreamError, match=match):
        EventStreamDecoder().feed(data)


def test_lengths_are_checked() -> None:
    """BR-16: a total under 16 bytes, over max_message_size, or headers that do not
    fit."""
    small = struct.pack(">II", 8, 0)
    with pytest.raises(EventStreamError, match="minimum"):
        EventStreamDecoder().feed(small + struct.pack(">I", binascii.crc32(small)))
    data = event("metadata", {"usage": {}})
    with pytest.raises(EventStreamError, match="max_message_size=20"):
        EventStreamDecoder(max_message_size=20).feed(data)
    wide = struct.pack(">II", 20, 10)
    with pytest.raises(EventStreamError, match="does not fit"):
        EventStreamDecoder().feed(wide + struct.pack(">I", binascii.crc32(wide)))


def test_exception_events_are_typed_errors_with_the_updates_before() -> None:
    """BR-18, PV-14: an exception message is a BedrockStreamError naming its type and
    message, carrying the text decoded before it."""
    data = (
        event("messageStart", {"role": "assistant"})
        + event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Par"}})
        + exception("throttlingException", "Too many tokens, please wait")
    )
    with pytest.raises(BedrockStreamError) as info:
        ConverseStreamDecoder().feed(data)
    assert info.value.exception_type == "throttlingException"
    assert "Too many tokens" in str(info.value)
    assert info.value.retryable
    assert "".join(u.text for u in info.value.updates) == "Par"
    error = encode_message(
        {
            ":message-type": "error",
            ":error-code": "InternalFailure",
            ":error-message": "boom",
        },
        b"",
    )
    with pytest.raises(BedrockStreamError, match="InternalFailure: boom"):
        ConverseStreamDecoder().feed(error)


def test_unknown_message_type_and_non_object_payload() -> None:
    """BR-18: an unknown :message-type, or a payload that is not an object, is a
    protocol error; an unknown event type is skipped."""
    odd = encode_message({":message-type": "gossip"}, b"{}")
    with pytest.raises(BedrockProtocolError, match="gossip"):
        ConverseStreamDecoder().feed(odd)
    listed = encode_message(
        {":message-type": "event", ":event-type": "metadata"}, b"[1]"
    )
    with pytest.raises(BedrockProtocolError, match="not a JSON object"):
        ConverseStreamDecoder().feed(listed)
    assert ConverseStreamDecoder().feed(event("somethingNew", {"a": 1})) == []


def test_close_inside_a_message_is_a_cut() -> None:
    """BR-19: bytes of a half message at the end are a protocol error (the client makes
    it a StreamInterruptedError)."""
    decoder = ConverseStreamDecoder()
    decoder.feed(event("messageStart", {"role": "assistant"})[:-3])
    with pytest.raises(BedrockProtocolError, match="inside an event"):
        decoder.close()


def test_stream_decoder_maps_a_tool_call_and_usage() -> None:
    """BR-18: toolUse start and input fragments make one call; messageStop the finish
    reason; metadata the usage and done."""
    output = whole_output(
        [
            {
                "toolUse": {
                    "toolUseId": "t1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                }
            }
        ],
        "tool_use",
        None,
    )
    output["usage"] = {"inputTokens": 5, "outputTokens": 3, "totalTokens": 8}
    decoder = ConverseStreamDecoder()
    updates = decoder.feed(stream_of(output))
    assert decoder.done
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert calls[0].call_id == "t1"
    assert calls[0].name == "get_weather"
    assert json.loads("".join(str(c.arguments) for c in calls)) == {"city": "Oslo"}
    assert [u.finish_reason for u in updates if u.finish_reason] == ["tool_calls"]
    usage = [c.usage_details for u in updates for c in u.contents if c.type == "usage"]
    assert usage[0] is not None
    assert usage[0].total_token_count == 8


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(min_value=1, max_value=64))
def test_hostile_bytes_raise_only_typed_errors(data: bytes, step: int) -> None:
    """PV-49, BR-16: any bytes, in any chunking: updates or a ProviderError, nothing
    else."""
    decoder = ConverseStreamDecoder()
    try:
        for i in range(0, len(data), step):
            decoder.feed(data[i : i + step])
        decoder.close()
    except ProviderError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([":message-type", ":event-type", ":exception-type", "x"]),
        st.one_of(
            st.text(max_size=20),
            st.integers(-(2**31), 2**31 - 1),
            st.booleans(),
            st.binary(max_size=8),
        ),
    ),
    st.one_of(
        st.binary(max_size=60),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "contentBlockIndex",
                            "delta",
                            "start",
                            "text",
                            "toolUse",
                            "usage",
                            "stopReason",
                            "input",
                        ]
                    ),
                    inner,
                    max_size=4,
                )
            ),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
    ),
)
def test_hostile_well_framed_messages_raise_only_typed_errors(
    headers: dict[str, Any], payload: bytes
) -> None:
    """PV-49, BR-18: valid frames with hostile headers and payloads: updates or a
    ProviderError, nothing else."""
    with contextlib.suppress(ProviderError):
        ConverseStreamDecoder().feed(encode_message(headers, payload))
