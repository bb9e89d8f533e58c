"""The server-sent events decoder of the OpenAI plugin (spec/providers.md, PV-17 ..
PV-21)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_openai import SSEDecoder, SSEEvent

TRANSCRIPTS = Path(__file__).parent / "transcripts"


def decode(
    data: bytes, cuts: list[int] | None = None
) -> tuple[list[SSEEvent], SSEDecoder]:
    """Feed ``data`` cut at ``cuts`` (byte offsets), then close; all events in order."""
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    bounds = [0, *sorted(set(cuts or [])), len(data)]
    for start, end in itertools.pairwise(bounds):
        events += decoder.feed(data[start:end])
    events += decoder.close()
    return events, decoder


def events_of(data: bytes) -> list[SSEEvent]:
    return decode(data)[0]


# -- fields and dispatch ----------------------------------------------------------------------


def test_single_data_event() -> None:
    """PV-19, PV-20: one data line and a blank line give one message event."""
    assert events_of(b"data: hello\n\n") == [SSEEvent("hello", "message", None)]


def test_multi_line_data_joins_with_lf() -> None:
    """PV-20: several data lines join with a LF; no trailing LF."""
    assert events_of(b"data: a\ndata: b\ndata:\ndata: c\n\n") == [SSEEvent("a\nb\n\nc")]


def test_one_leading_space_is_removed_only() -> None:
    """PV-19: exactly one space after the colon is dropped; no colon means an empty
    value."""
    assert events_of(b"data:x\n\ndata:  two\n\ndata\n\n") == [
        SSEEvent("x"),
        SSEEvent(" two"),
        SSEEvent(""),
    ]


def test_comments_and_keep_alives_are_ignored() -> None:
    """PV-19: lines starting with a colon are comments; a comment-only block dispatches
    nothing."""
    data = b": keep-alive\n\n:\n\ndata: a\n: in between\ndata: b\n\n: trailing\n\n"
    assert events_of(data) == [SSEEvent("a\nb")]


def test_event_type_id_and_retry() -> None:
    """PV-19, PV-20: event sets the type for one event; id persists; retry needs
    digits."""
    data = b"retry: 1500\nevent: error\nid: 7\ndata: x\n\ndata: y\n\nretry: soon\nid: a\0b\ndata: z\n\n"
    events, decoder = decode(data)
    assert events == [
        SSEEvent("x", "error", "7"),
        SSEEvent("y", "message", "7"),
        SSEEvent("z", "message", "7"),
    ]
    assert decoder.retry == 1500
    assert decoder.last_event_id == "7"


def test_unknown_fields_are_ignored() -> None:
    """PV-19: field names are exact; unknown fields and 'data ' with a space are
    ignored."""
    assert events_of(b"foo: bar\ndata : no\nDATA: no\ndata: yes\n\n") == [
        SSEEvent("yes")
    ]


def test_event_without_data_is_not_dispatched() -> None:
    """PV-20: a block with no data line dispatches nothing, and its event type does not
    leak."""
    assert events_of(b"event: ping\n\ndata: a\n\n") == [SSEEvent("a", "message")]


# -- text and lines ---------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(eol: bytes) -> None:
    """PV-18: LF, CRLF and CR all end lines."""
    data = eol.join([b"data: a", b"data: b", b"", b": c", b"data: d", b"", b""])
    assert events_of(data) == [SSEEvent("a\nb"), SSEEvent("d")]


def test_mixed_line_endings() -> None:
    """PV-18: endings may be mixed within one stream; CR CR is two line endings."""
    assert events_of(b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r") == [
        SSEEvent("a\nb\nc"),
        SSEEvent("d"),
    ]


def test_crlf_split_across_chunks_is_one_line_ending() -> None:
    """PV-18: CR at the end of a chunk and LF at the start of the next are one
    ending."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"data: b\r") == []
    assert decoder.feed(b"\n\r") == [SSEEvent("a\nb")]
    assert decoder.feed(b"\n") == []
    assert decoder.close() == []


def test_cr_at_chunk_end_ends_the_line_at_once() -> None:
    """PV-18: an event ended by CR CR is dispatched without waiting for the next
    chunk."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [SSEEvent("a")]


def test_multibyte_character_split_across_chunks() -> None:
    """PV-17: a character cut between chunks is decoded once, whole."""
    data = "data: ü👋東\n\n".encode()
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for i in range(len(data)):
        events += decoder.feed(data[i : i + 1])
    assert events == [SSEEvent("ü👋東")]


def test_invalid_bytes_become_replacement_characters() -> None:
    """PV-17: invalid byte sequences decode to U+FFFD instead of failing."""
    assert events_of(b"data: a\xffb\n\n") == [SSEEvent("a\ufffdb")]


def test_leading_byte_order_mark_is_dropped() -> None:
    """PV-17: one leading BOM is removed, even when split across chunks."""
    data = b"\xef\xbb\xbfdata: x\n\n"
    assert events_of(data) == [SSEEvent("x")]
    assert decode(data, [1, 2])[0] == [SSEEvent("x")]


# -- end of stream ----------------------------------------------------------------------------


def test_close_flushes_unterminated_event() -> None:
    """PV-21: close() dispatches the pending event and processes an unterminated last
    line."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\ndata: b") == []
    assert decoder.close() == [SSEEvent("a\nb")]
    assert decoder.closed


def test_close_flushes_an_incomplete_character_as_replacement() -> None:
    """PV-17, PV-21: bytes of an unfinished character at end of stream become U+FFFD."""
    decoder = SSEDecoder()
    assert decoder.feed("data: ü".encode()[:-1]) == []
    assert decoder.close() == [SSEEvent("\ufffd")]


def test_close_twice_and_feed_after_close() -> None:
    """PV-21: close() is idempotent; feeding a closed decoder is an error."""
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\n")
    assert decoder.close() == []
    assert decoder.close() == []
    with pytest.raises(ValueError, match="after close"):
        decoder.feed(b"data: b\n\n")


# -- chunking invariance over recorded transcripts --------------------------------------------

TRANSCRIPT_FILES = sorted(p.name for p in TRANSCRIPTS.glob("*.sse"))


@pytest.mark.parametrize("name", TRANSCRIPT_FILES)
def test_transcripts_byte_by_byte(name: str) -> None:
    """PV-12, PV-18: feeding a recorded stream one byte at a time gives the same
    events."""
    data = (TRANSCRIPTS / name).read_bytes()
    whole = events_of(data)
    assert whole
    assert decode(data, list(range(1, len(data))))[0] == whole


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(TRANSCRIPT_FILES),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
    eol=st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_transcripts_random_chunks_and_line_endings(
    name: str, cuts: list[int], eol: bytes
) -> None:
    """PV-12, PV-17, PV-18: any cut points and any line-ending style give identical
    events."""
    lf = (TRANSCRIPTS / name).read_bytes().replace(b"\r\n", b"\n")
    data = lf.replace(b"\n", eol)
    cuts = [c % (len(data) + 1) for c in cuts]
    assert decode(data, cuts)[0] == events_of(lf)


def test_keepalive_transcript_events() -> None:
    """PV-19, PV-20: the CRLF transcript's comments vanish, its split data line joins
    with a LF."""
    data = (TRANSCRIPTS / "keepalive_crlf.sse").read_bytes()
    assert b"\r\n" in data  # the file must keep its CRLF line endings (.gitattributes)
    events, decoder = decode(data)
    assert [e.data for e in events][-1] == "[DONE]"
    assert len(events) == 4
    assert events[0].data.count("\n") == 1
    assert events[0].id == "evt-1"
    assert all(e.event == "message" for e in events)
    assert decoder.retry == 3000
