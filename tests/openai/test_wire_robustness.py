"""Hostile wire data and strict requests (spec/providers.md, OA-13, OA-26 .. OA-28,
PV-3, PV-36).

Decoding: valid bodies and streams are mutated (hypothesis) — values replaced by other
JSON, by 5000-digit integers, 5000-deep nesting, ``NaN``/``Infinity`` literals,
``created = 1e20``; keys deleted; bytes flipped — and only `OpenAIProtocolError` /
`OpenAIStreamError` may come out. What decodes must be usable: every tool call has a
name.

Encoding: every option either reaches the wire or is an error naming it; NaN never
leaves.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_openai import (
    ChatCompletionsStreamDecoder,
    OpenAIProtocolError,
    OpenAIStreamError,
    SSEDecoder,
    build_request,
    decode_response,
    encode_request,
    parse_error,
    parse_response,
)

from minagent import ChatResponse, Content, Message
from minagent.providers import SSELimitError

TYPED = (OpenAIProtocolError, OpenAIStreamError)

VALID_BODY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1715000000,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Checking.",
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"a": 1}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 5,
        "completion_tokens": 7,
        "total_tokens": 12,
        "prompt_tokens_details": {"cached_tokens": 1},
        "completion_tokens_details": {"reasoning_tokens": 2},
    },
}

VALID_CHUNKS: list[dict[str, Any]] = [
    {
        "id": "c1",
        "created": 1715000000,
        "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant"}}],
    },
    {
        "id": "c1",
        "created": 1715000000,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "Hi"}}],
    },
    {
        "id": "c1",
        "created": 1715000000,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "f", "arguments": ""},
                        }
                    ]
                },
            }
        ],
    },
    {
        "id": "c1",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]
                },
            }
        ],
    },
    {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {
        "id": "c1",
        "choices": [],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    },
]

# Placeholders rendered as text no json.dumps can produce (OA-28's hostile values).
HOSTILE = {
    "__HUGE__": "9" * 5000,
    "__DEEP__": "[" * 5000 + "]" * 5000,
    "__DEEPOBJ__": '{"a":' * 3000 + "1" + "}" * 3000,
    "__NAN__": "NaN",
    "__INF__": "-Infinity",
    "__BIGFLOAT__": "1e20",
    "__BADUTF8__": '"\\udc80"',
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
replacement = (
    st.sampled_from(sorted(HOSTILE))
    | json_values
    | st.just(42)
    | st.just("")
    | st.just({})
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(value: Any, path: tuple[Any, ...], new: Any, delete: bool) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = new
    return copy


def _render(value: Any) -> str:
    text = json.dumps(value)
    for placeholder, hostile in HOSTILE.items():
        text = text.replace(json.dumps(placeholder), hostile)
    return text


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> str:
    value = base
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        value = _mutate(value, path, draw(replacement), draw(st.booleans()))
    text = _render(value)
    if draw(st.booleans()):  # and sometimes break the bytes themselves
        position = draw(st.integers(0, max(0, len(text) - 1)))
        text = (
            text[:position]
            + draw(st.sampled_from(["", "}", "\x00", '"', "\\", "\ud800"]))
            + text[position + 1 :]
        )
    return text


def _usable(response: ChatResponse) -> None:
    for message in response.messages:
        for content in message.contents:
            if content.type == "function_call":
                assert content.name, content


@settings(max_examples=400)
@given(mutated(VALID_BODY))
def test_decode_response_raises_only_typed_errors(text: str) -> None:
    """OA-28, PV-10: whatever the body, a ChatResponse or a typed protocol/stream
    error."""
    try:
        response = decode_response(text.encode("utf-8", "surrogatepass"))
    except TYPED:
        return
    _usable(response)


@st.composite
def mutated_stream(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    chunks = [json.dumps(c) for c in VALID_CHUNKS]
    index = draw(st.integers(0, len(chunks) - 1))
    chunks[index] = draw(mutated(VALID_CHUNKS[index]))
    data = "".join(f"data: {c}\n\n" for c in chunks) + "data: [DONE]\n\n"
    raw = data.encode("utf-8", "surrogatepass")
    cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    return raw, cuts


@settings(max_examples=300)
@given(mutated_stream())
def test_stream_decoder_raises_only_typed_errors(case: tuple[bytes, list[int]]) -> None:
    """OA-28, PV-12: a mutated stream, cut anywhere, gives updates or a typed error."""
    data, cuts = case
    decoder = ChatCompletionsStreamDecoder()
    updates = []
    try:
        for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
            updates += decoder.feed(data[start:end])
        updates += decoder.close()
    except TYPED:
        return
    _usable(ChatResponse.from_updates(updates))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"id": "x", "created": 1e20, "choices": []}', "no choice"),
        (
            '{"choices": [{"message": {"content": "a"}}], "created": Infinity}',
            "not valid JSON",
        ),
        ('{"choices": [{"message": {"content": "a"}}], "n": NaN}', "not valid JSON"),
        ("[" * 100_000, "not valid JSON"),
        (
            '{"choices": [{"message": {"content": "a"}}], "usage": {"prompt_tokens": '
            + "9" * 5000
            + "}}",
            "JSON",
        ),
        ('{"choices": [{"message": {"content": 42}}]}', "content must be"),
        ('{"choices": [{"message": {"tool_calls": {"id": 1}}}]}', "tool_calls must be"),
        (
            '{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]}',
            "no function",
        ),
        (
            '{"choices": [{"message": {"tool_calls": [{"id": "c"}]}}]}',
            "no function name",
        ),
        (b"\xff\xfe{}", "not valid JSON"),
    ],
)
def test_hostile_bodies_give_the_protocol_error(text: str | bytes, match: str) -> None:
    """OA-28 (issue 13 item 7): each case was a bare
    ValueError/RecursionError/OverflowError."""
    with pytest.raises(OpenAIProtocolError, match=match):
        decode_response(text.encode() if isinstance(text, str) else text)


@pytest.mark.parametrize("created", [1e20, 10**30, -5, 253402300800])
def test_created_out_of_range_counts_as_absent(created: float) -> None:
    """OA-13: a created that is no representable time is absent, not
    OverflowError/OSError."""
    body = {"id": "x", "created": created, "choices": [{"message": {"content": "a"}}]}
    assert parse_response(body).created_at is None


def test_the_largest_created_that_is_a_date() -> None:
    """OA-13: the bound is exclusive of year 10000, inclusive of 9999-12-31T23:59:59."""
    body = {
        "id": "x",
        "created": 253402300799,
        "choices": [{"message": {"content": "a"}}],
    }
    assert parse_response(body).created_at == "9999-12-31T23:59:59Z"


@pytest.mark.parametrize(
    ("chunk", "match"),
    [
        (
            '{"choices": [{"delta": {"content": "a"}}], "created": Infinity}',
            "not valid JSON",
        ),
        ('{"x": ' + "[" * 50_000 + "]" * 50_000 + "}", "not valid JSON"),
        ('{"choices": [{"delta": {"content": 42}}]}', "content must be"),
        ('{"u": ' + "7" * 5000 + "}", "JSON"),
    ],
)
def test_hostile_stream_chunks_give_the_protocol_error(chunk: str, match: str) -> None:
    """OA-28: the same in a stream chunk."""
    decoder = ChatCompletionsStreamDecoder()
    with pytest.raises(OpenAIProtocolError, match=match):
        decoder.feed(f"data: {chunk}\n\n".encode())


def test_a_streamed_call_that_never_gets_a_name_is_a_protocol_error() -> None:
    """OA-28: by [DONE] (or the end of the bytes) every call has its function name."""
    chunk = {
        "id": "c",
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "id": "k", "function": {}}]},
            }
        ],
    }
    data = f"data: {json.dumps(chunk)}\n\n".encode()
    decoder = ChatCompletionsStreamDecoder()
    first = decoder.feed(data)
    with pytest.raises(OpenAIProtocolError, match="no function name") as info:
        decoder.feed(b"data: [DONE]\n\n")
    assert info.value.updates == []
    assert len(first) == 1
    decoder = ChatCompletionsStreamDecoder()
    decoder.feed(data)
    with pytest.raises(OpenAIProtocolError, match="no function name"):
        decoder.close()
    # the name may come in a later delta
    later = {
        "id": "c",
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "function": {"name": "f"}}]},
            }
        ],
    }
    decoder = ChatCompletionsStreamDecoder()
    updates = decoder.feed(
        data + f"data: {json.dumps(later)}\n\ndata: [DONE]\n\n".encode()
    )
    assert ChatResponse.from_updates(updates).messages[0].contents[0].name == "f"


@pytest.mark.parametrize(
    "body", ["[" * 100_000, '{"error": {"message": ' + "1" * 5000 + "}}", "NaN"]
)
def test_hostile_error_bodies_give_their_text(body: str) -> None:
    """OA-28, PV-11: a non-2xx body that is not usable JSON gives its text as the
    message."""
    message, request_id = parse_error(500, body.encode(), {})
    assert message == body.strip()[:500]
    assert request_id is None


def test_sse_line_and_event_limits() -> None:
    """PV-36: a line, or one event's data, past max_line_size is SSELimitError with
    prior events."""
    decoder = SSEDecoder(max_line_size=10)
    with pytest.raises(SSELimitError) as info:
        decoder.feed(b"data: a\n\n" + b"data: " + b"x" * 20)
    assert [e.data for e in info.value.events] == ["a"]
    decoder = SSEDecoder(max_line_size=12)
    with pytest.raises(SSELimitError, match="data of an event"):
        decoder.feed(b"data: 12345\ndata: 12345\ndata: 1\n")
    decoder = SSEDecoder(max_line_size=10)
    # within the bound
    assert [e.data for e in decoder.feed(b"data: 12\ndata: 34\n\n")] == ["12\n34"]
    with pytest.raises(ValueError, match="max_line_size"):
        SSEDecoder(max_line_size=0)
    stream = ChatCompletionsStreamDecoder(max_line_size=90)
    ok = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}}]})
    with pytest.raises(OpenAIProtocolError, match="max_line_size=90") as error:
        stream.feed(f"data: {ok}\n\n".encode() + b"data: " + b"y" * 100)
    assert [u.text for u in error.value.updates] == ["a"]


# =============================================================================================
# Requests: no silent drops (OA-10, OA-26), valid JSON only (OA-27), extra_body None
# (PV-3)


def _req(options: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return build_request(
        [Message("user", ["hi"])],
        options,
        model="gpt-4o-mini",
        stream=kw.pop("stream", False),
    )


STANDARD = {
    "logprobs": True,
    "top_logprobs": 3,
    "modalities": ["text"],
    "prediction": {"type": "content", "content": "x"},
    "service_tier": "flex",
    "reasoning_effort": "low",
    "verbosity": "low",
    "audio": {"voice": "alloy", "format": "mp3"},
    "web_search_options": {},
    "prompt_cache_retention": "24h",
    "n": 1,
}


@pytest.mark.parametrize(("key", "value"), list(STANDARD.items()))
def test_standard_fields_reach_the_wire(key: str, value: Any) -> None:
    """OA-10 (issue 20 item 5): each standard request field set through options is
    sent."""
    assert _req({key: value})[key] == value


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda k: not k.startswith("_")),
        st.integers(),
        min_size=1,
        max_size=4,
    )
)
def test_every_option_key_is_sent_internal_or_an_error(options: dict[str, int]) -> None:
    """OA-26: for any option dict, each key is on the wire, internal, or a ValueError
    naming it."""
    internal = {"conversation_id", "instructions", "additional_function_arguments"}
    failure: Exception | None = None
    try:
        body = _req(options)
    except (ValueError, TypeError) as exc:
        failure = exc
    if failure is not None:
        assert any(repr(k) in str(failure) for k in options), failure
        return
    for key in options:
        assert (
            key in internal
            or key in body
            or (key == "max_tokens" and "max_completion_tokens" in body)
        ), key


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("top_k", "extra_body"),
        ("stream", "stream=True"),
        ("stream_options", "extra_body"),
        ("extra_headers", "default_headers="),
        ("extra_query", "default_query="),
        ("functions", "tools"),
    ],
)
def test_unknown_options_are_errors_that_say_what_to_write(key: str, hint: str) -> None:
    """OA-26: an unknown key is a ValueError naming it and saying what to write
    instead."""
    with pytest.raises(ValueError, match=f"'{key}'") as info:
        _req({key: 1})
    assert hint in str(info.value)


def test_n_other_than_one_is_an_error() -> None:
    """OA-10: n > 1 is refused (only choice 0 is decoded)."""
    with pytest.raises(ValueError, match="'n'"):
        _req({"n": 2})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_never_reach_the_wire(bad: float) -> None:
    """OA-27: a non-finite float in an option, in call arguments, or anywhere:
    ValueError."""
    with pytest.raises(ValueError, match="'temperature'"):
        _req({"temperature": bad})
    with pytest.raises(ValueError, match="extra_body"):
        _req({"extra_body": {"x": [bad]}})
    with pytest.raises(ValueError, match="'metadata'"):
        _req({"metadata": {"score": bad}})
    call = Message("assistant", [Content.from_function_call("c1", "f", {"x": bad})])
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        build_request([call], {}, model="m", stream=False)
    with pytest.raises(ValueError, match="not valid JSON"):
        encode_request({"model": "m", "x": bad})


def test_a_non_finite_tool_result_is_sent_as_strings() -> None:
    """OA-27: a tool's result with NaN/Infinity is still valid JSON on the wire."""
    messages = [
        Message("assistant", [Content.from_function_call("c1", "f", "{}")]),
        Message(
            "tool",
            [
                Content.from_function_result(
                    "c1", {"a": math.nan, "b": [math.inf, -math.inf, 1.5]}
                )
            ],
        ),
    ]
    body = build_request(messages, {}, model="m", stream=False)
    payload = body["messages"][1]["content"]
    assert json.loads(payload) == {"a": "NaN", "b": ["Infinity", "-Infinity", 1.5]}
    encode_request(body)  # valid JSON


def test_extra_body_none_removes_a_field(stream: bool) -> None:
    """PV-3 (issue 20 item 5): extra_body={"stream_options": None} drops the field,
    never null."""
    body = _req(
        {"temperature": 1, "extra_body": {"stream_options": None, "temperature": None}},
        stream=stream,
    )
    assert "stream_options" not in body
    assert "temperature" not in body
    assert None not in body.values()
    assert body.get("stream") is (True if stream else None)


def test_one_response_id_per_stream() -> None:
    """OA-14: a server that sends a new id on a later chunk still gives one message, one
    id."""
    chunks = [
        {"id": "first", "choices": [{"index": 0, "delta": {"content": "a", "tool_calls": [
            {"index": 0, "id": "k", "function": {"name": "f", "arguments": ""}}]}}]},
        {"id": "second", "choices": [{"index": 0, "delta": {"content": "b", "tool_calls": [
            {"index": 0, "function": {"arguments": "{}"}}]}}]},
        {"id": "third", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    data = (
        "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode()
        + b"data: [DONE]\n\n"
    )
    decoder = ChatCompletionsStreamDecoder()
    updates = decoder.feed(data)
    assert {u.response_id for u in updates} == {"first"}
    assert {u.message_id for u in updates} == {"first"}
    response = ChatResponse.from_updates(updates)
    assert len(response.messages) == 1
    assert response.text == "ab"
    [call] = [c for c in response.messages[0].contents if c.type == "function_call"]
    assert (call.call_id, call.name, call.arguments) == ("k", "f", "{}")


def test_unpaired_surrogates_are_repaired_where_text_enters(stream: bool) -> None:
    """OA-34 (issue 13 item 4): lone surrogates become U+FFFD; pairs stay; the next
    request encodes."""
    escaped = '"a\\ud800b \\ud83d\\ude00 \\udfff"'
    if stream:
        head = (
            '{"id": "c", "choices": [{"index": 0, "delta": {"content": '
            + escaped
            + "}}]}"
        )
        tail = '{"id": "c", "choices": [{"index": 0, "delta": {"content": "\\udc00!"}, "finish_reason": "stop"}]}'
        decoder = ChatCompletionsStreamDecoder()
        response = ChatResponse.from_updates(
            decoder.feed(f"data: {head}\n\ndata: {tail}\n\n".encode())
        )
        assert response.text == "a\ufffdb \U0001f600 \ufffd\ufffd!"
    else:
        body = '{"id": "c", "choices": [{"message": {"content": ' + escaped + "}}]}"
        response = decode_response(body.encode())
        assert response.text == "a\ufffdb \U0001f600 \ufffd"
    replay = build_request(
        [*response.messages, Message("user", ["next"])], {}, model="m", stream=False
    )
    encode_request(replay)  # would raise UnicodeEncodeError with a lone surrogate
    message, _ = parse_error(400, b'{"error": {"message": "bad \\ud800"}}')
    assert message == "bad \ufffd"


def test_invalid_utf8_in_a_body_is_replaced() -> None:
    """OA-34, PV-17: like a stream, a whole body's invalid bytes become U+FFFD."""
    body = b'{"id": "c", "choices": [{"message": {"content": "caf\xe9"}}]}'
    assert decode_response(body).text == "caf\ufffd"
