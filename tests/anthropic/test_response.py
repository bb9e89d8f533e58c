"""The response half of the Anthropic codec: whole messages, event streams and error
bodies.

Transcripts (tests/anthropic/transcripts/*.sse) follow the Messages API reference's
streaming examples: plain text with a ping, a tool call whose input arrives as
input_json_delta fragments, parallel calls, extended thinking with a signature and
redacted thinking, prompt caching usage (CRLF line endings), and an error event
mid-stream.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minagent_anthropic import (
    AnthropicProtocolError,
    AnthropicStreamError,
    MessagesStreamDecoder,
    parse_error,
    parse_response,
)

from minagent import ChatResponse, ChatResponseUpdate, UsageDetails

from ._fake_server import TRANSCRIPT_NAMES, merge_events, transcript

COMPLETE = [n for n in TRANSCRIPT_NAMES if n != "error_midstream.sse"]


def decode(
    data: bytes, cuts: list[int] | None = None, **kw: Any
) -> tuple[list[ChatResponseUpdate], bool]:
    decoder = MessagesStreamDecoder(**kw)
    bounds = [0, *sorted(set(cuts or [])), len(data)]
    updates: list[ChatResponseUpdate] = []
    for start, end in itertools.pairwise(bounds):
        updates += decoder.feed(data[start:end])
    updates += decoder.close()
    return updates, decoder.done


def streamed(name: str, **kw: Any) -> ChatResponse:
    return ChatResponse.from_updates(decode(transcript(name), **kw)[0])


def comparable(response: ChatResponse) -> dict[str, Any]:
    return response.to_dict()


# -- AN-13 .. AN-15, PV-8 ------------------------------------------------------------------------


def test_whole_message_maps_text_tool_use_and_metadata() -> None:
    """AN-13, PV-8: ids, model, blocks in order, created_at None, raw body kept."""
    body = merge_events(transcript("tool_use.sse"))
    response = parse_response(body)
    assert response.response_id == "msg_014p7gG3wDgGV9EUtLvnow3U"
    assert response.model == "claude-sonnet-4-5"
    assert response.created_at is None
    assert response.raw_representation is body
    [message] = response.messages
    assert message.role == "assistant"
    assert message.message_id == response.response_id
    text, call = message.contents
    assert text.text == "Okay, let's check the weather for San Francisco, CA:"
    assert (call.type, call.call_id, call.name) == (
        "function_call",
        "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        "get_weather",
    )
    assert call.arguments == '{"location": "San Francisco, CA", "unit": "fahrenheit"}'


def test_thinking_and_redacted_thinking_become_reasoning_with_signature() -> None:
    """AN-13: thinking keeps text and signature; redacted thinking keeps its data; ids
    differ."""
    [message] = parse_response(merge_events(transcript("thinking.sse"))).messages
    thinking, redacted, text = message.contents
    assert thinking.type == "text_reasoning"
    assert thinking.text.startswith("I need to find the GCD")
    assert (
        thinking.protected_data
        == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    )
    assert thinking.additional_properties == {"anthropic_type": "thinking"}
    assert redacted.type == "text_reasoning"
    assert redacted.text is None
    assert redacted.protected_data.startswith("EmwKAhgBEgy3va3pzix")
    assert redacted.additional_properties == {"anthropic_type": "redacted_thinking"}
    assert thinking.id != redacted.id
    assert text.text == "The greatest common divisor of 1071 and 462 is **21**."


def test_unknown_blocks_are_kept_for_replay() -> None:
    """AN-13: a block type the codec does not model is kept whole in anthropic_block."""
    block = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [],
    }
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [block],
        "stop_reason": "end_turn",
    }
    [content] = parse_response(body).messages[0].contents
    assert content.type == "web_search_tool_result"
    assert content.additional_properties["anthropic_block"] == block


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reason_is_mapped_and_kept(stop_reason: str, finish: str) -> None:
    """AN-14: stop_reason maps to a finish reason; the provider's value stays
    available."""
    body = {
        "id": "m",
        "type": "message",
        "content": [],
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }
    response = parse_response(body)
    assert response.finish_reason == finish
    assert response.additional_properties == {"stop_reason": stop_reason}


def test_usage_counts_all_input_and_details() -> None:
    """AN-15: input counts cached tokens too; cache and server tool counts are kept."""
    body = merge_events(transcript("cache_usage.sse"))
    response = parse_response(body)
    assert response.usage_details == UsageDetails(
        input_token_count=21 + 188086,
        output_token_count=393,
        total_token_count=21 + 188086 + 393,
        cache_read_input_token_count=0,
        cache_creation_input_token_count=188086,
        additional_counts={
            "input_tokens": 21,
            "cache_creation.ephemeral_5m_input_tokens": 188086,
            "cache_creation.ephemeral_1h_input_tokens": 0,
            "server_tool_use.web_search_requests": 2,
        },
    )
    assert response.additional_properties == {
        "stop_reason": "stop_sequence",
        "stop_sequence": "\n\nHuman:",
    }
    thinking = parse_response(merge_events(transcript("thinking.sse"))).usage_details
    assert thinking is not None
    assert thinking.reasoning_output_token_count == 120


def test_tool_ids_are_mapped_back() -> None:
    """AN-8: a tool_use carrying a normalised id comes back with the caller's original
    id."""
    body = merge_events(transcript("tool_use.sse"))
    mapping = {"toolu_01T1x1fJ34qAmk2tNTrN7Up6": "functions.get_weather:0"}
    call = parse_response(body, tool_ids=mapping).messages[0].contents[1]
    assert call.call_id == "functions.get_weather:0"
    streamed_call = streamed("tool_use.sse", tool_ids=mapping).messages[0].contents[1]
    assert streamed_call.call_id == "functions.get_weather:0"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ([1, 2], "not a JSON object"),
        ({"id": "x", "type": "message"}, "no content list"),
        (
            {
                "type": "message",
                "content": [{"type": "tool_use", "name": "f", "input": {}}],
            },
            "without an id",
        ),
        ({"type": "message", "content": ["text"]}, "not an object"),
    ],
)
def test_malformed_bodies_are_protocol_errors(body: Any, match: str) -> None:
    """PV-10, AN-13: malformed bodies are AnthropicProtocolError (a ValueError) quoting
    the data."""
    with pytest.raises(AnthropicProtocolError, match=match) as info:
        parse_response(body)
    assert isinstance(info.value, ValueError)


def test_error_body_with_2xx_raises_stream_error() -> None:
    """AN-13, AN-17: an error object as a body raises AnthropicStreamError with its
    type."""
    with pytest.raises(AnthropicStreamError, match="Overloaded") as info:
        parse_response(
            {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
        )
    assert info.value.type == "overloaded_error"
    assert info.value.status is None


# -- AN-16, PV-9, PV-12 .. PV-16 ----------------------------------------------------------------


@pytest.mark.parametrize("name", COMPLETE)
def test_stream_equals_whole_message(name: str) -> None:
    """PV-9, AN-16: a streamed transcript and its merged whole message decode equal."""
    whole = parse_response(merge_events(transcript(name)))
    assert comparable(streamed(name)) == comparable(whole)


@pytest.mark.parametrize("name", COMPLETE)
def test_every_complete_transcript_ends_done(name: str) -> None:
    """PV-15, AN-16: message_stop sets done; every update is an assistant update with
    ids."""
    updates, done = decode(transcript(name))
    assert done
    message_id = merge_events(transcript(name))["id"]
    assert all(
        u.role == "assistant" and u.response_id == message_id == u.message_id
        for u in updates
    )
    assert all(u.model for u in updates)


@given(data=st.data())
def test_random_chunking_gives_the_same_updates(data: st.DataObject) -> None:
    """PV-12: every transcript cut at random byte offsets (inside multi-byte UTF 8
    characters and CRLF pairs included) decodes to exactly the updates of the whole
    body."""
    name = data.draw(st.sampled_from(COMPLETE))
    body = transcript(name)
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=40))
    whole, _ = decode(body)
    pieces, done = decode(body, cuts)
    assert done
    assert [u.to_dict() for u in pieces] == [u.to_dict() for u in whole]


def test_byte_by_byte_equals_whole_for_every_transcript() -> None:
    """PV-12: one byte at a time gives the same updates as the whole body."""
    for name in TRANSCRIPT_NAMES:
        body = transcript(name)
        try:
            whole = [u.to_dict() for u in decode(body)[0]]
        except AnthropicStreamError as exc:
            whole = [u.to_dict() for u in exc.updates]
        decoder = MessagesStreamDecoder()
        got: list[dict[str, Any]] = []
        try:
            for i in range(len(body)):
                got += [u.to_dict() for u in decoder.feed(body[i : i + 1])]
            got += [u.to_dict() for u in decoder.close()]
        except AnthropicStreamError as exc:
            got += [u.to_dict() for u in exc.updates]
        assert got == whole, name


def test_tool_call_fragments_carry_the_call_id_and_name_once() -> None:
    """PV-13, AN-16: every fragment carries the call id; only the first carries the
    name."""
    updates, _ = decode(transcript("tool_use.sse"))
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert {c.call_id for c in calls} == {"toolu_01T1x1fJ34qAmk2tNTrN7Up6"}
    assert [c.name for c in calls] == ["get_weather"] + [""] * (len(calls) - 1)
    # empty partial_json gives no fragment
    assert all(c.arguments != "" for c in calls[1:])


def test_parallel_calls_and_a_call_without_arguments() -> None:
    """PV-13, AN-16: parallel calls reassemble; a call that received no fragment gets
    "{}"."""
    [message] = streamed("parallel_tool_use.sse").messages
    assert [(c.call_id, c.name, c.arguments) for c in message.contents] == [
        ("toolu_01A", "get_weather", '{"location": "Paris"}'),
        ("toolu_01B", "get_time", "{}"),
    ]


def test_thinking_stream_merges_text_and_signature() -> None:
    """AN-16: thinking deltas and the signature delta merge into one reasoning
    content."""
    [message] = streamed("thinking.sse").messages
    thinking = message.contents[0]
    assert thinking.text.endswith("So the GCD is 21.")
    assert (
        thinking.protected_data
        == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    )
    assert thinking.additional_properties == {"anthropic_type": "thinking"}


def test_usage_is_reported_once_with_cumulative_counts() -> None:
    """AN-16, PV-16: one usage content, at message_delta, message_start's counts
    overwritten."""
    updates, _ = decode(transcript("cache_usage.sse"))
    usages = [c.usage_details for u in updates for c in u.contents if c.type == "usage"]
    assert len(usages) == 1
    assert usages[0] is not None
    assert usages[0].output_token_count == 393
    finishing = [u for u in updates if u.finish_reason]
    assert [u.finish_reason for u in finishing] == ["stop"]


def test_ping_and_unknown_events_give_nothing_and_data_after_stop_is_ignored() -> None:
    """PV-15, PV-16, AN-16: ping and unknown events give no update; data after
    message_stop is ignored."""
    body = transcript("text.sse")
    extra = b'event: future_event\ndata: {"type": "future_event", "x": 1}\n\n'
    updates, _ = decode(body)
    with_unknown, _ = decode(
        body.replace(b"event: ping", extra + b"event: ping", 1) + b"data: not json\n\n"
    )
    assert [u.to_dict() for u in with_unknown] == [u.to_dict() for u in updates]


def test_missing_terminator_is_not_a_codec_error() -> None:
    """PV-15: bytes that end without message_stop close cleanly with done False."""
    body = transcript("text.sse")
    cut = body.index(b"event: message_stop")
    updates, done = decode(body[:cut])
    assert not done
    assert updates[-1].finish_reason == "stop"


def test_error_event_raises_with_the_updates_before_it() -> None:
    """AN-17, PV-14: an error event raises AnthropicStreamError carrying the earlier
    updates."""
    decoder = MessagesStreamDecoder()
    with pytest.raises(AnthropicStreamError, match="Overloaded") as info:
        decoder.feed(transcript("error_midstream.sse"))
    assert info.value.type == "overloaded_error"
    assert info.value.body["error"]["type"] == "overloaded_error"
    assert "".join(u.text for u in info.value.updates) == "Partial answer"


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"data: {not json\n\n", "not valid JSON"),
        (b"data: [1]\n\n", "not a JSON object"),
        (
            b'data: {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}\n\n',
            "never started",
        ),
        (
            b'data: {"type": "content_block_start", "content_block": {"type": "text", "text": ""}}\n\n',
            "index",
        ),
    ],
)
def test_malformed_events_are_protocol_errors(data: bytes, match: str) -> None:
    """PV-10, AN-16: bad JSON, non-objects and deltas of unknown blocks are protocol
    errors."""
    with pytest.raises(AnthropicProtocolError, match=match):
        MessagesStreamDecoder().feed(data)


def test_truncated_final_event_fails_loudly_at_close() -> None:
    """PV-21, PV-10: an event cut inside its JSON raises at close(), it does not
    vanish."""
    body = transcript("text.sse")
    decoder = MessagesStreamDecoder()
    decoder.feed(body[: body.index(b"message_delta") + 40])
    with pytest.raises(AnthropicProtocolError):
        decoder.close()


# -- AN-18, PV-11 -------------------------------------------------------------------------------


def test_parse_error_reads_the_message_and_request_id() -> None:
    """AN-18, PV-11: error.message and the request-id header, else the body's
    request_id."""
    body = json.dumps(
        {
            "type": "error",
            "error": {"type": "rate_limit_error", "message": "Slow down"},
            "request_id": "req_b",
        }
    )
    assert parse_error(429, body.encode(), {"Request-Id": "req_h"}) == (
        "Slow down",
        "req_h",
    )
    assert parse_error(429, body, {}) == ("Slow down", "req_b")
    assert parse_error(502, b"<html>Bad gateway</html>", None) == (
        "<html>Bad gateway</html>",
        None,
    )
    assert parse_error(529, b"", None) == ("HTTP 529", None)
    assert parse_error(500, b"x" * 2000, None)[0] == "x" * 500
    assert parse_error(400, {"message": "top-level"}, {"x-request-id": "r"}) == (
        "top-level",
        "r",
    )


def test_adjacent_text_blocks_join_as_in_a_stream() -> None:
    """AN-13, PV-9: adjacent text blocks (the API splits text around citations) give one
    text, as the streamed updates merge them."""
    blocks = [{"type": "text", "text": "Paris "}, {"type": "text", "text": "is sunny."}]
    body = {"id": "m", "type": "message", "content": blocks, "stop_reason": "end_turn"}
    assert [c.text for c in parse_response(body).messages[0].contents] == [
        "Paris is sunny."
    ]


def test_empty_text_blocks_give_no_content() -> None:
    """AN-13: text content is only made for non-empty texts."""
    body = {
        "id": "m",
        "type": "message",
        "content": [{"type": "text", "text": ""}],
        "stop_reason": "end_turn",
    }
    assert parse_response(body).messages[0].contents == []


def test_server_tool_blocks_are_held_whole_and_replayed() -> None:
    """AN-16, AN-13, AN-9: server tool blocks stream in fragments, come out whole (as in
    a whole message) and go back unchanged in the next request."""
    from minagent_anthropic import build_request

    from minagent import Message

    [message] = streamed("server_tool.sse").messages
    assert [c.type for c in message.contents] == [
        "text",
        "server_tool_use",
        "web_search_tool_result",
        "text",
    ]
    use = message.contents[1].additional_properties["anthropic_block"]
    assert use["input"] == {"query": "weather NYC today"}
    body = build_request(
        [Message("user", ["Weather NYC?"]), message], {}, model="m", stream=False
    )
    assert (
        body["messages"][1]["content"]
        == merge_events(transcript("server_tool.sse"))["content"]
    )


def test_server_tool_input_that_is_not_json_is_a_protocol_error() -> None:
    """AN-16: held fragments that do not form JSON are an AnthropicProtocolError at the
    block's stop."""
    data = transcript("server_tool.sse").replace(
        b'\\": \\"weather NYC today\\"}', b"oops", 1
    )
    with pytest.raises(AnthropicProtocolError, match="server_tool_use"):
        decode(data)
