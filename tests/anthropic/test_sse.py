"""The plugin's copy of the server-sent events decoder (PV-17 .. PV-21, PV-36)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minagent_anthropic import SSEDecoder, SSEEvent, SSELimitError


def events(data: bytes, cuts: list[int] | None = None, **kw: int) -> list[SSEEvent]:
    decoder = SSEDecoder(**kw)
    bounds = [0, *sorted(set(cuts or [])), len(data)]
    out: list[SSEEvent] = []
    for start, end in itertools.pairwise(bounds):
        out += decoder.feed(data[start:end])
    return out + decoder.close()


def test_utf8_bom_and_split_characters() -> None:
    """PV-17: one leading BOM is dropped; a character cut across chunks decodes once;
    bad bytes become U+FFFD."""
    data = "\ufeffdata: é🌍\n\n".encode() + b"data: \xff\n\n"
    assert [e.data for e in events(data, list(range(1, len(data))))] == [
        "é🌍",
        "\ufffd",
    ]


def test_line_endings_in_any_mix() -> None:
    """PV-18: CRLF, LF and CR end lines, a CRLF split across chunks is one line
    ending."""
    data = b"data: a\r\ndata: b\rdata: c\n\r\n"
    cut = data.index(b"\n")  # between the first CR and its LF
    assert events(data, [cut]) == [SSEEvent("a\nb\nc")]


def test_fields_comments_id_and_retry() -> None:
    """PV-19: comments are ignored, one space after the colon is removed, a line without
    colon is a field with an empty value, id (without NUL) and retry (digits only) are
    kept."""
    data = b": keep-alive\nevent: ping\nid: 7\nretry: 1500\ndata:x\ndata\n\nid: a\x00b\nretry: 1s\ndata: y\n\n"
    decoder = SSEDecoder()
    got = decoder.feed(data)
    assert got == [SSEEvent("x\n", "ping", "7"), SSEEvent("y", "message", "7")]
    assert decoder.retry == 1500
    assert decoder.last_event_id == "7"


def test_blank_line_dispatch_and_reset() -> None:
    """PV-20: data lines join with LF; an event without data is not dispatched; the type
    resets."""
    data = b"event: a\n\nevent: b\ndata: 1\ndata: 2\n\ndata: 3\n\n"
    assert events(data) == [SSEEvent("1\n2", "b"), SSEEvent("3", "message")]


def test_close_flushes_a_final_event_without_blank_line() -> None:
    """PV-21: close() processes a last line without ending and dispatches the pending
    event."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: tail") == []
    assert decoder.close() == [SSEEvent("tail")]
    assert decoder.closed
    assert decoder.close() == []
    with pytest.raises(ValueError, match="after close"):
        decoder.feed(b"x")


def test_line_and_data_bounds() -> None:
    """PV-36: a line or an event's data longer than max_line_size is an SSELimitError
    carrying the events completed before it."""
    with pytest.raises(SSELimitError, match="a line") as info:
        events(b"data: ok\n\ndata: " + b"x" * 50 + b"\n\n", max_line_size=20)
    assert info.value.events == [SSEEvent("ok")]
    with pytest.raises(SSELimitError, match="data of an event"):
        events(b"data: 0123456789\n" * 3 + b"\n", max_line_size=30)
    with pytest.raises(ValueError, match="max_line_size"):
        SSEDecoder(max_line_size=0)


@given(st.lists(st.text(alphabet="ab\r\né:", max_size=12), max_size=6), st.data())
def test_any_chunking_gives_the_same_events(
    lines: list[str], data: st.DataObject
) -> None:
    """PV-12, PV-18: whatever the cuts, the same events."""
    body = "".join(f"data: {line}\n\n" for line in lines).encode()
    cuts = data.draw(st.lists(st.integers(0, max(len(body), 1)), max_size=10))
    assert events(body, cuts) == events(body)
