"""The Responses stream decoder (spec/openai-responses.md, OR-16 .. OR-19; PV-9, PV-12
.. PV-15)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minagent_openai import (
    OpenAIProtocolError,
    OpenAIStreamError,
    ResponsesStreamDecoder,
    parse_responses_response,
)
from minagent_openai._responses_stream import IGNORED_EVENTS

from minagent import ChatResponse, ChatResponseUpdate, Content

from ._fake_server import events, final_body, response_body, sse, transcript

COMPLETE = [
    "plain_text.sse",
    "one_tool_call.sse",
    "parallel_tool_calls.sse",
    "reasoning_tool_call.sse",
    "hosted_web_search.sse",
    "incomplete.sse",
    "keepalive_crlf.sse",
    "no_deltas.sse",
]


def decode(
    data: bytes, cuts: list[int] | None = None, **kw: Any
) -> tuple[list[ChatResponseUpdate], ResponsesStreamDecoder]:
    decoder = ResponsesStreamDecoder(**kw)
    updates: list[ChatResponseUpdate] = []
    bounds = [0, *sorted({c for c in cuts or [] if 0 < c < len(data)}), len(data)]
    for start, end in itertools.pairwise(bounds):
        updates += decoder.feed(data[start:end])
    updates += decoder.close()
    return updates, decoder


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


@pytest.mark.parametrize("name", COMPLETE)
def test_stream_equals_body(name: str) -> None:
    """PV-9, OR-17, OR-18: a merged transcript equals the parsed final response; done is
    set."""
    data = transcript(name)
    updates, decoder = decode(data)
    assert decoder.done
    streamed = ChatResponse.from_updates(updates)
    parsed = parse_responses_response(final_body(data))
    assert streamed == parsed
    assert streamed.finish_reason is not None
    assert all(u.role == "assistant" for u in updates)


@pytest.mark.parametrize("name", [*COMPLETE, "failed.sse"])
@given(data=st.data())
def test_chunking_invariance(name: str, data: st.DataObject) -> None:
    """PV-12, OR-16: any cuts of a transcript give the same updates as the whole of
    it."""
    raw = transcript(name)
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=40))

    def outcome(cut: list[int] | None) -> tuple[list[dict[str, Any]], str | None]:
        decoder = ResponsesStreamDecoder()
        updates: list[ChatResponseUpdate] = []
        bounds = [0, *sorted({c for c in cut or [] if 0 < c < len(raw)}), len(raw)]
        try:
            for start, end in itertools.pairwise(bounds):
                updates += decoder.feed(raw[start:end])
            updates += decoder.close()
        # PV-14: what the failing call decoded comes with it
        except OpenAIStreamError as exc:
            return [u.to_dict() for u in updates + exc.updates], str(exc)
        return [u.to_dict() for u in updates], None

    whole = outcome(None)
    assert outcome(cuts) == whole


def test_byte_by_byte() -> None:
    """PV-12: a transcript fed byte by byte (inside multi-byte characters and CRLF) is
    the same."""
    for name in ("plain_text.sse", "keepalive_crlf.sse", "parallel_tool_calls.sse"):
        raw = transcript(name)
        assert [u.to_dict() for u in decode(raw, list(range(len(raw))))[0]] == [
            u.to_dict() for u in decode(raw)[0]
        ]


def test_text_updates_and_metadata() -> None:
    """OR-16, OR-17: text deltas with the response's ids, model, created_at and thread
    id."""
    updates, _ = decode(transcript("plain_text.sse"))
    texts = [u for u in updates if u.text]
    assert "".join(u.text for u in texts) == "Bonjour — ça va? Voilà: 👋 naïve café."
    assert len(texts) > 3
    for u in updates:
        assert (u.response_id, u.message_id, u.conversation_id) == (
            "resp_T001",
            "resp_T001",
            "resp_T001",
        )
        assert u.model == "gpt-5-mini-2025-08-07"
        assert u.created_at == "2024-05-06T12:53:20Z"
        assert isinstance(u.raw_representation, dict)
    final = ChatResponse.from_updates(updates)
    assert final.usage_details is not None
    assert final.usage_details.cache_read_input_token_count == 8
    assert final.finish_reason == "stop"


def test_store_false_gives_no_thread_id() -> None:
    """OR-15, OR-16: with store=False no update carries a conversation_id."""
    updates, _ = decode(transcript("plain_text.sse"), store=False)
    assert all(u.conversation_id is None for u in updates)


def test_tool_call_deltas() -> None:
    """OR-17, PV-13: the call's name comes first, then argument fragments with its
    call_id."""
    updates, _ = decode(transcript("parallel_tool_calls.sse"))
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert [(c.call_id, c.name) for c in calls] == [
        ("call_p1", "get_weather"),
        ("call_p1", ""),
        ("call_p1", ""),
        ("call_t2", "get_weather"),
        ("call_t2", ""),
        ("call_t2", ""),
    ]
    final = ChatResponse.from_updates(updates)
    merged = [c for c in final.messages[0].contents if c.type == "function_call"]
    assert [(c.call_id, c.id, c.parse_arguments()) for c in merged] == [
        ("call_p1", "fc_T003_0", {"location": "Paris"}),
        ("call_t2", "fc_T003_1", {"location": "東京", "unit": "kelvin"}),
    ]
    assert final.finish_reason == "tool_calls"


def test_reasoning_arrives_whole() -> None:
    """OR-17, OR-14: a reasoning item is one content at output_item.done, encrypted
    content kept."""
    updates, _ = decode(transcript("reasoning_tool_call.sse"))
    reasoning = [c for u in updates for c in u.contents if c.type == "text_reasoning"]
    assert reasoning == [
        Content.from_text_reasoning(
            "**Checking the weather**\n\nThe user wants Paris.\n\nI will call the tool.",
            id="rs_T004",
            protected_data="gAAAAABo-ENCRYPTED-REASONING==",
            additional_properties={
                "summary": [
                    "**Checking the weather**\n\nThe user wants Paris.",
                    "I will call the tool.",
                ]
            },
        )
    ]
    usage = ChatResponse.from_updates(updates).usage_details
    assert usage is not None
    assert usage.reasoning_output_token_count == 128


def test_hosted_items_and_incomplete() -> None:
    """OR-17, OR-18, OR-19: hosted items arrive whole; their progress events give
    nothing; incomplete ends."""
    updates, _ = decode(transcript("hosted_web_search.sse"))
    kinds = [c.type for u in updates for c in u.contents]
    assert kinds[0] == "web_search_call"
    assert set(kinds) == {"web_search_call", "text", "usage"}
    updates, decoder = decode(transcript("incomplete.sse"))
    assert decoder.done
    assert ChatResponse.from_updates(updates).finish_reason == "length"


def test_no_deltas_server() -> None:
    """OR-17: a server that sends whole items only loses nothing."""
    updates, _ = decode(transcript("no_deltas.sse"))
    final = ChatResponse.from_updates(updates)
    assert final.text == "Whole text at once."
    [call] = [c for c in final.messages[0].contents if c.type == "function_call"]
    assert (call.call_id, call.name, call.arguments) == (
        "call_w1",
        "get_weather",
        '{"location":"Rome"}',
    )


def test_failed_stream() -> None:
    """OR-18, PV-14: response.failed raises with the error's fields and the updates
    before it."""
    decoder = ResponsesStreamDecoder()
    with pytest.raises(OpenAIStreamError, match="failed to generate") as info:
        decoder.feed(transcript("failed.sse"))
    assert info.value.code == "server_error"
    assert [u.text for u in info.value.updates] == ["Partial "]


def test_error_event() -> None:
    """OR-18: an error event raises OpenAIStreamError with message, code and param."""
    data = sse(
        [event("error", code="rate_limit_exceeded", message="Slow down.", param=None)]
    )
    with pytest.raises(OpenAIStreamError, match="Slow down") as info:
        decode(data)
    assert info.value.code == "rate_limit_exceeded"
    with pytest.raises(OpenAIStreamError, match="overloaded"):
        decode(b"event: error\ndata: overloaded\n\n")
    nested = sse([event("error", error={"type": "server_error", "message": "Nested."})])
    with pytest.raises(OpenAIStreamError, match="Nested") as info:
        decode(nested)
    assert info.value.type == "server_error"


def test_done_marker_and_data_after_the_end() -> None:
    """OR-18, PV-15: [DONE] ends the stream; events after the end are ignored."""
    body = response_body("resp_1", "m", text="hi")
    completed = sse([event("response.completed", response=body)])
    updates, decoder = decode(
        completed
        + sse([event("response.output_text.delta", item_id="x", delta="late")])
    )
    assert decoder.done
    assert "late" not in "".join(u.text for u in updates)
    _, decoder = decode(b"data: [DONE]\n\n")
    assert decoder.done


def test_truncated_stream_is_not_done() -> None:
    """PV-15, OR-18: a stream without its terminal event decodes what it has; done stays
    False."""
    raw = transcript("plain_text.sse")
    cut = raw.rindex(b"event: response.completed")
    updates, decoder = decode(raw[:cut])
    assert not decoder.done
    assert "".join(u.text for u in updates).startswith("Bonjour")


def test_ignored_and_unknown_events_give_nothing() -> None:
    """OR-19: the listed events, lifecycle events and unknown types give no update."""
    start = response_body("resp_1", "m")
    lifecycle = [
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.future_thing",
    ]
    kinds = [*sorted(IGNORED_EVENTS), *lifecycle]
    data = sse(
        [
            event(k, response=start, item_id="x", delta="d", output_index=0)
            for k in kinds
        ]
    )
    updates, decoder = decode(data)
    assert updates == []
    assert not decoder.done
    assert "response.reasoning_summary_text.delta" in IGNORED_EVENTS


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"data: {not json}\n\n", "not valid JSON"),
        (b"data: [1, 2]\n\n", "not a JSON object"),
        (
            sse(
                [
                    event(
                        "response.function_call_arguments.delta",
                        item_id="fc_x",
                        delta="{",
                    )
                ]
            ),
            "unknown item 'fc_x'",
        ),
        (sse([event("response.output_item.added")]), "without an item object"),
        (sse([event("response.completed")]), "without a response object"),
    ],
)
def test_protocol_errors(data: bytes, match: str) -> None:
    """OR-16, OR-17, PV-10: malformed events are OpenAIProtocolError saying what was
    wrong."""
    with pytest.raises(OpenAIProtocolError, match=match):
        decode(data)


def test_done_item_contradicting_its_deltas() -> None:
    """OR-17: a whole item that contradicts its deltas is an OpenAIProtocolError."""
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Goodbye"}],
    }
    data = sse(
        [
            event("response.output_text.delta", item_id="msg_1", delta="Hello"),
            event("response.output_item.done", item=item),
        ]
    )
    with pytest.raises(OpenAIProtocolError, match="differs from its deltas") as info:
        decode(data)
    assert [u.text for u in info.value.updates] == ["Hello"]


def test_refusal_deltas() -> None:
    """OR-17: refusal deltas are texts marked as refusals."""
    updates, _ = decode(
        sse([event("response.refusal.delta", item_id="msg_1", delta="I can't.")])
    )
    assert [c.additional_properties for u in updates for c in u.contents] == [
        {"refusal": True}
    ]


def test_event_type_from_sse_name() -> None:
    """OR-16: an event without a type field takes the SSE event name."""
    payload = json.dumps({"item_id": "m", "delta": "hi"})
    updates, _ = decode(
        f"event: response.output_text.delta\ndata: {payload}\n\n".encode()
    )
    assert [u.text for u in updates] == ["hi"]


def test_line_limit() -> None:
    """OR-16, PV-36: an event longer than max_line_size is a protocol error after what
    came before."""
    head = sse([event("response.output_text.delta", item_id="m", delta="ok")])
    long = sse([event("response.output_text.delta", item_id="m", delta="x" * 500)])
    decoder = ResponsesStreamDecoder(max_line_size=200)
    with pytest.raises(OpenAIProtocolError, match="max_line_size=200") as info:
        decoder.feed(head + long)
    assert [u.text for u in info.value.updates] == ["ok"]


def test_not_a_number_is_not_json() -> None:
    """OR-16, PV-10: NaN in event data is not JSON."""
    with pytest.raises(OpenAIProtocolError, match="not valid JSON"):
        decode(b'data: {"type": "response.output_text.delta", "delta": NaN}\n\n')


_texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_args = st.dictionaries(
    st.text(max_size=5), st.integers() | st.text(max_size=6), max_size=3
).map(json.dumps)


@st.composite
def whole_responses(draw: st.DrawFn) -> dict[str, Any]:
    calls = draw(
        st.lists(
            st.tuples(
                st.uuids().map(lambda u: f"call_{u.hex[:8]}"),
                st.sampled_from(["f", "g"]),
                _args,
            ),
            max_size=3,
            unique_by=lambda c: c[0],
        )
    )
    summaries = draw(st.lists(_texts.filter(bool), max_size=2))
    reasoning = (
        [
            {
                "id": "rs_1",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": t} for t in summaries],
                "encrypted_content": draw(st.none() | st.just("ENC")),
            }
        ]
        if draw(st.booleans())
        else []
    )
    hosted = (
        [{"id": "ws_1", "type": "web_search_call", "status": "completed"}]
        if draw(st.booleans())
        else []
    )
    usage = draw(
        st.none()
        | st.builds(
            lambda i, o, c, r: {
                "input_tokens": i,
                "input_tokens_details": {"cached_tokens": c},
                "output_tokens": o,
                "output_tokens_details": {"reasoning_tokens": r},
                "total_tokens": i + o,
            },
            st.integers(0, 99),
            st.integers(0, 99),
            st.integers(0, 9),
            st.integers(0, 9),
        )
    )
    return response_body(
        "resp_h",
        "m",
        text=draw(_texts),
        calls=calls,
        reasoning=reasoning,
        extra_items=hosted,
        usage=usage,
    )


@given(body=whole_responses(), data=st.data())
def test_any_stream_equals_its_body(body: dict[str, Any], data: st.DataObject) -> None:
    """PV-9, PV-12, OR-13 .. OR-18: for any response, its event stream cut anywhere
    merges to the parsed body."""
    raw = sse(events(body))
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=20))
    updates, decoder = decode(raw, cuts)
    assert decoder.done
    assert ChatResponse.from_updates(updates) == parse_responses_response(body)
