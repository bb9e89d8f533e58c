"""The sans-I/O codec of the Ollama plugin (spec/ollama.md OL-1 .. OL-20, PV-1 ..
PV-16).

Bodies and streams follow Ollama's API reference (docs/api.md, "Generate a chat
completion"); the recorded streams are in ``transcripts/``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minagent_ollama import (
    OllamaModelNotFoundError,
    OllamaProtocolError,
    OllamaStreamDecoder,
    OllamaStreamError,
    build_request,
    call_id_seed,
    parse_error,
    parse_host,
    parse_response,
)
from minagent_ollama._codec import error_for_answer

from minagent import (
    ChatResponse,
    Content,
    Message,
    NotFoundError,
    ResponseFormat,
    ServerError,
    tool,
)

from ._fake_server import merge_chunks, transcript

TRANSCRIPTS = [
    "plain_text.ndjson",
    "tool_call.ndjson",
    "parallel_tool_calls.ndjson",
    "thinking.ndjson",
    "length.ndjson",
    "crlf_blank.ndjson",
    "tool_call_with_id.ndjson",
]
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


def body(
    messages: list[Message], options: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    kw.setdefault("model", "llama3.2")
    kw.setdefault("stream", False)
    return build_request(messages, options, **kw)


def decode(data: bytes, seed: str = "") -> list[Any]:
    decoder = OllamaStreamDecoder(seed)
    return decoder.feed(data) + decoder.close()


# =============================================================================================
# Request


def test_model_messages_and_stream_flag() -> None:
    """OL-1: model (option wins), messages, and stream always sent as a bool."""
    assert body([Message("user", ["hi"])]) == {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
    }
    streamed = build_request(
        [Message("user", ["hi"])], {"model": "qwen3"}, model="llama3.2", stream=True
    )
    assert streamed["model"] == "qwen3"
    assert streamed["stream"] is True
    with pytest.raises(ValueError, match="model"):
        build_request([Message("user", ["hi"])], {}, model="", stream=False)


def test_roles_texts_and_instructions() -> None:
    """OL-2, PV-4: texts joined, roles kept, empty content left out, instructions
    once."""
    messages = [
        Message("system", ["Be brief."]),
        Message("user", ["a", "b"], author_name="Ann"),
        Message("assistant", [""]),
        Message("developer", ["dev"]),
    ]
    sent = body(messages, {"instructions": "Be brief."})["messages"]
    assert sent == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "ab"},
        {"role": "developer", "content": "dev"},
    ]
    sent = body([Message("user", ["hi"])], {"instructions": "Answer in French."})[
        "messages"
    ]
    assert sent[0] == {"role": "system", "content": "Answer in French."}


def test_images_as_base64() -> None:
    """OL-3: data images become base64 strings in ``images``, in content order."""
    image = Content.from_data(PNG, "image/png")
    # not base64 in the URI
    second = Content.from_uri("data:image/gif,GIF89a%01", "image/gif")
    sent = body([Message("user", ["What is this?", image, second])])["messages"][0]
    assert sent == {
        "role": "user",
        "content": "What is this?",
        "images": [
            base64.b64encode(PNG).decode(),
            base64.b64encode(b"GIF89a\x01").decode(),
        ],
    }


@pytest.mark.parametrize(
    ("content", "role", "match"),
    [
        (
            Content.from_uri("https://example.com/cat.png", "image/png"),
            "user",
            r"messages\[0\].*base64",
        ),
        (
            Content.from_data(b"%PDF", "application/pdf"),
            "user",
            r"messages\[0\].*only images",
        ),
        (
            Content.from_data(PNG, "image/png"),
            "assistant",
            r"messages\[0\].*user messages",
        ),
    ],
)
def test_images_that_cannot_be_sent(content: Content, role: str, match: str) -> None:
    """OL-3, PV-6: URL images, non-images and images outside user messages are
    ValueErrors."""
    with pytest.raises(ValueError, match=match):
        body([Message(role, [content])])


def conversation() -> list[Message]:
    return [
        Message("user", ["Weather in Paris?"]),
        Message(
            "assistant",
            [
                Content.from_text_reasoning("I should call the tool."),
                Content.from_function_call(
                    "call_1", "get_weather", '{"city": "Paris"}'
                ),
                Content.from_function_call("call_2", "get_time", None),
                Content.from_function_call("call_3", "get_weather", {"city": "Oslo"}),
            ],
        ),
        Message(
            "tool",
            [
                Content.from_function_result("call_1", "Sunny"),
                Content.from_function_result("call_2", {"h": 12}),
                Content.from_function_result("call_3", None, exception="boom"),
            ],
        ),
    ]


def test_tool_calls_and_results() -> None:
    """OL-4, OL-5, PV-6, PV-7: calls with object arguments and their ids; results with
    the call's tool_name and id; reasoning not sent."""
    sent = body(conversation())["messages"]
    assert sent == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                },
                {"id": "call_2", "function": {"name": "get_time", "arguments": {}}},
                {
                    "id": "call_3",
                    "function": {"name": "get_weather", "arguments": {"city": "Oslo"}},
                },
            ],
        },
        {
            "role": "tool",
            "content": "Sunny",
            "tool_name": "get_weather",
            "tool_call_id": "call_1",
        },
        {
            "role": "tool",
            "content": '{"h": 12}',
            "tool_name": "get_time",
            "tool_call_id": "call_2",
        },
        {
            "role": "tool",
            "content": "boom",
            "tool_name": "get_weather",
            "tool_call_id": "call_3",
        },
    ]


def test_result_without_its_call_and_informational_calls() -> None:
    """OL-5, PV-6: a result whose call is not in the messages has no tool_name;
    informational calls and their results are not sent."""
    messages = [
        Message("user", ["x"]),
        Message("tool", [Content.from_function_result("call_gone", "late")]),
        Message(
            "assistant",
            [Content.from_function_call("c9", "hosted", "{}", informational_only=True)],
        ),
        Message("tool", [Content.from_function_result("c9", "done elsewhere")]),
    ]
    assert body(messages)["messages"] == [
        {"role": "user", "content": "x"},
        {"role": "tool", "content": "late", "tool_call_id": "call_gone"},
    ]


@pytest.mark.parametrize("arguments", ['{"unclosed": ', "[1, 2]", '"text"'])
def test_arguments_that_are_not_an_object(arguments: str) -> None:
    """OL-4: arguments Ollama cannot take are a ValueError naming the message and the
    call."""
    messages = [
        Message("assistant", [Content.from_function_call("call_x", "f", arguments)])
    ]
    with pytest.raises(ValueError, match=r"messages\[0\].*call_x.*JSON object"):
        body(messages)


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return city


def test_tool_declarations() -> None:
    """OL-6, PV-5: FunctionTool, name dicts and wire dicts; nothing declared without
    tools."""
    wire = {
        "type": "function",
        "function": {"name": "raw", "parameters": {"type": "object"}},
    }
    sent = body(
        [Message("user", ["x"])], {"tools": [get_weather, {"name": "bare"}, wire]}
    )["tools"]
    assert sent[0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": get_weather.parameters,
        },
    }
    assert sent[1] == {
        "type": "function",
        "function": {
            "name": "bare",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    assert sent[2] == wire
    assert "tools" not in body(
        [Message("user", ["x"])], {"tools": [], "tool_choice": "required"}
    )
    with pytest.raises(TypeError, match="cannot declare tool"):
        body([Message("user", ["x"])], {"tools": [42]})


@pytest.mark.parametrize("choice", ["auto", {"mode": "auto"}])
def test_tool_choice_auto_sends_nothing_extra(choice: Any) -> None:
    """OL-7: 'auto' is Ollama's behaviour: tools declared, no tool_choice key."""
    sent = body(
        [Message("user", ["x"])],
        {"tools": [get_weather], "tool_choice": choice, "parallel_tool_calls": True},
    )
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]
    assert "tool_choice" not in sent
    assert "parallel_tool_calls" not in sent


@pytest.mark.parametrize("choice", ["none", {"mode": "none"}])
def test_tool_choice_none_leaves_tools_undeclared(choice: Any) -> None:
    """OL-7: 'none' is honoured by not declaring the tools."""
    sent = body(
        [Message("user", ["x"])], {"tools": [get_weather], "tool_choice": choice}
    )
    assert "tools" not in sent
    assert "tool_choice" not in sent


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"tool_choice": "required"}, "required.*'auto' or 'none'"),
        (
            {
                "tool_choice": {
                    "mode": "required",
                    "required_function_name": "get_weather",
                }
            },
            "cannot be honoured",
        ),
        (
            {"tool_choice": {"mode": "auto", "allowed_tools": ["get_weather"]}},
            "cannot be honoured",
        ),
        (
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            "no tool_choice",
        ),
        ({"tool_choice": "sometimes"}, "unsupported tool_choice"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls=False"),
    ],
)
def test_tool_choice_that_cannot_be_honoured(
    options: dict[str, Any], match: str
) -> None:
    """OL-7: what Ollama cannot do is a ValueError saying what to write instead, never
    dropped."""
    with pytest.raises(ValueError, match=match):
        body([Message("user", ["x"])], {"tools": [get_weather], **options})


def test_sampling_options_nest_under_options() -> None:
    """OL-8, PV-3: sampling options in ``options``, max_tokens as num_predict, internals
    never sent."""
    sent = body(
        [Message("user", ["x"])],
        {
            "temperature": 0.2,
            "top_p": 0.9,
            "top_k": 40,
            "seed": 7,
            "stop": "END",
            "num_ctx": 8192,
            "max_tokens": 100,
            "frequency_penalty": 0.5,
            "conversation_id": "t1",
            "_private": 1,
            "user": None,
            "top_logprobs": None,
        },
    )
    assert sent["options"] == {
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "seed": 7,
        "stop": ["END"],
        "num_ctx": 8192,
        "num_predict": 100,
        "frequency_penalty": 0.5,
    }
    assert set(sent) == {"model", "messages", "options", "stream"}
    explicit = body([Message("user", ["x"])], {"max_tokens": 100, "num_predict": 5})
    assert explicit["options"] == {"num_predict": 5}
    assert "options" not in body([Message("user", ["x"])], {"temperature": None})


class Answer:
    """A stand-in for a pydantic model class (only ``model_json_schema`` is used)."""

    @staticmethod
    def model_json_schema() -> dict[str, Any]:
        return {
            "title": "Answer",
            "type": "object",
            "properties": {"age": {"type": "integer"}},
        }

    @staticmethod
    def model_validate(data: Any) -> Any:
        return data


SCHEMA = {
    "type": "object",
    "properties": {"age": {"type": "integer"}},
    "required": ["age"],
}


@dataclasses.dataclass
class Person:
    name: str
    age: int = 0


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        ("json_object", "json"),
        ("json", "json"),
        ({"type": "json_object"}, "json"),
        (SCHEMA, SCHEMA),
        ({"schema": SCHEMA, "name": "person", "strict": True}, SCHEMA),
        (
            {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}},
            SCHEMA,
        ),
        (
            Answer,
            {
                **Answer.model_json_schema(),
                "required": ["age"],
                "additionalProperties": False,
            },
        ),
        (Person, ResponseFormat.of(Person).schema),
    ],
)
def test_response_format_becomes_format(response_format: Any, expected: Any) -> None:
    """OL-9, SO-4, SO-5: JSON mode and JSON schemas (strict ones derived from classes)
    become ``format``."""
    assert (
        body([Message("user", ["x"])], {"response_format": response_format})["format"]
        == expected
    )


def test_format_option_and_text() -> None:
    """OL-9: 'text' sends no format; an explicit format wins; a bad one is a
    ValueError."""
    assert "format" not in body([Message("user", ["x"])], {"response_format": "text"})
    sent = body(
        [Message("user", ["x"])], {"format": SCHEMA, "response_format": "json_object"}
    )
    assert sent["format"] == SCHEMA
    with pytest.raises(ValueError, match="format"):
        body([Message("user", ["x"])], {"format": "yaml"})


def test_keep_alive_think_and_extra_body() -> None:
    """OL-10, PV-3: keep_alive and think pass through; extra_body merges, options key by
    key; a None in extra_body removes the computed key."""
    sent = body(
        [Message("user", ["x"])],
        {
            "keep_alive": "10m",
            "think": "high",
            "temperature": 0.1,
            "seed": 1,
            "extra_body": {
                "options": {"seed": 2, "num_gpu": 1},
                "logprobs": True,
                "keep_alive": 0,
            },
        },
    )
    assert sent["think"] == "high"
    assert sent["keep_alive"] == 0
    assert sent["logprobs"] is True
    assert sent["options"] == {"temperature": 0.1, "seed": 2, "num_gpu": 1}
    assert body([Message("user", ["x"])], {"think": False})["think"] is False
    removed = body(
        [Message("user", ["x"])],
        {
            "keep_alive": "1m",
            "seed": 1,
            "top_k": 2,
            "extra_body": {"keep_alive": None, "options": {"seed": None}},
        },
    )
    assert "keep_alive" not in removed
    assert removed["options"] == {"top_k": 2}
    with pytest.raises(TypeError, match="extra_body"):
        body([Message("user", ["x"])], {"extra_body": [1]})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
option_names = st.sampled_from(
    [
        "temperature",
        "top_k",
        "seed",
        "stop",
        "num_ctx",
        "max_tokens",
        "keep_alive",
        "think",
        "format",
        "_y",
    ]
)


@given(options=st.dictionaries(option_names, json_values, max_size=6))
def test_request_is_plain_json_and_inputs_untouched(options: dict[str, Any]) -> None:
    """PV-2: the body is plain JSON, deterministic, and never mutates the options or
    messages."""
    messages = conversation()
    before = json.dumps(options, sort_keys=True, default=repr)
    snapshot = [m.to_dict() for m in messages]
    try:
        first = body(messages, options)
    except (ValueError, TypeError):
        # e.g. a format that is neither "json" nor a dict: typed errors are fine here
        return
    assert json.loads(json.dumps(first)) == first
    assert body(messages, options) == first
    assert json.dumps(options, sort_keys=True, default=repr) == before
    assert [m.to_dict() for m in messages] == snapshot
    assert "_y" not in first


# =============================================================================================
# Response


WHOLE = {
    "model": "llama3.2",
    "created_at": "2024-07-22T20:33:28.123648Z",
    "message": {
        "role": "assistant",
        "content": "",
        "thinking": "Paris, so call the tool.",
        "tool_calls": [
            {
                "function": {
                    "name": "get_current_weather",
                    "arguments": {"format": "celsius", "location": "Paris, FR"},
                }
            }
        ],
    },
    "done_reason": "stop",
    "done": True,
    "total_duration": 885095291,
    "load_duration": 3753500,
    "prompt_eval_count": 122,
    "prompt_eval_duration": 328493000,
    "eval_count": 33,
    "eval_duration": 552222000,
}


def test_parse_whole_body() -> None:
    """OL-11, OL-12, OL-13, PV-8: thinking, text, calls; done_reason; counts; UTC
    created_at."""
    response = parse_response(WHOLE, id_seed="seed")
    assert response.model == "llama3.2"
    assert response.created_at == "2024-07-22T20:33:28Z"
    assert response.finish_reason == "stop"
    assert response.response_id is None
    assert response.messages[0].message_id is None
    assert response.raw_representation is WHOLE
    (message,) = response.messages
    assert message.role == "assistant"
    assert [c.type for c in message.contents] == ["text_reasoning", "function_call"]
    call = message.contents[1]
    assert call.name == "get_current_weather"
    assert call.arguments == '{"format": "celsius", "location": "Paris, FR"}'
    assert re.fullmatch(r"call_[0-9a-f]{24}", call.call_id or "")
    usage = response.usage_details
    assert usage is not None
    assert (
        usage.input_token_count,
        usage.output_token_count,
        usage.total_token_count,
    ) == (122, 33, 155)
    assert usage.additional_counts == {
        "total_duration": 885095291,
        "load_duration": 3753500,
        "prompt_eval_duration": 328493000,
        "eval_duration": 552222000,
    }
    text = parse_response(
        {"model": "m", "message": {"role": "assistant", "content": "Hi"}, "done": True}
    )
    assert text.text == "Hi"
    assert text.usage_details is None
    assert text.finish_reason is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-08-04T08:52:19.385406455-07:00", "2023-08-04T15:52:19Z"),
        ("2024-12-06T00:46:58.265747+0200", "2024-12-05T22:46:58Z"),
        ("2023-12-12T14:13:43Z", "2023-12-12T14:13:43Z"),
        ("0001-01-01T00:00:00Z", None),
        ("yesterday", None),
        (1715000000, None),
    ],
)
def test_created_at_to_utc(value: Any, expected: str | None) -> None:
    """OL-13, PV-8: RFC 3339 with nanoseconds and offsets becomes UTC ``...Z``; zero
    time is absent."""
    assert (
        parse_response({"message": {"content": "x"}, "created_at": value}).created_at
        == expected
    )


def test_generated_call_ids() -> None:
    """OL-15: deterministic ids from the seed, the position, the name and the
    arguments."""
    first = parse_response(WHOLE, id_seed="a").messages[0].contents[1].call_id
    assert parse_response(WHOLE, id_seed="a").messages[0].contents[1].call_id == first
    assert parse_response(WHOLE, id_seed="b").messages[0].contents[1].call_id != first
    two = {"message": {"tool_calls": [WHOLE["message"]["tool_calls"][0]] * 2}}
    ids = [c.call_id for c in parse_response(two, id_seed="a").messages[0].contents]
    assert len(set(ids)) == 2
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i or "") for i in ids)
    with_id = {
        "message": {
            "tool_calls": [
                {"id": "call_b9wt4z1h", "function": {"name": "f", "arguments": {}}}
            ]
        }
    }
    assert parse_response(with_id).messages[0].contents[0].call_id == "call_b9wt4z1h"


def test_call_id_seed_depends_on_model_and_messages_only() -> None:
    """OL-15: the seed ignores the stream flag and options, and changes with the
    conversation."""
    messages = [Message("user", ["hi"])]
    plain = body(messages, {"temperature": 1})
    streamed = body(messages, stream=True)
    assert call_id_seed(plain) == call_id_seed(streamed)
    assert call_id_seed(
        body([*messages, Message("assistant", ["yo"])])
    ) != call_id_seed(plain)
    assert call_id_seed(body(messages, model="qwen3")) != call_id_seed(plain)


@pytest.mark.parametrize(
    ("payload", "error", "match"),
    [
        ([1, 2], OllamaProtocolError, "not a JSON object"),
        ({"model": "m", "done": False}, OllamaProtocolError, "no message"),
        (
            {"message": {"tool_calls": "f"}},
            OllamaProtocolError,
            "tool_calls is not a list",
        ),
        (
            {"message": {"tool_calls": [{"function": {"arguments": {}}}]}},
            OllamaProtocolError,
            "no function name",
        ),
        ({"message": {"tool_calls": [7]}}, OllamaProtocolError, "no function object"),
        (
            {"error": "model runner has unexpectedly stopped"},
            OllamaStreamError,
            "unexpectedly stopped",
        ),
    ],
)
def test_malformed_bodies(payload: Any, error: type[Exception], match: str) -> None:
    """OL-14, PV-10, PV-14: malformed bodies are typed errors quoting the data."""
    with pytest.raises(error, match=match):
        parse_response(payload)
    assert issubclass(OllamaProtocolError, ValueError)


# =============================================================================================
# Stream


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_stream_equals_whole_body(name: str) -> None:
    """PV-9, OL-17: each transcript decodes to the same response as its merged whole
    body."""
    data = transcript(name)
    streamed = ChatResponse.from_updates(decode(data, "seed"))
    whole = parse_response(merge_chunks(data), id_seed="seed")
    assert streamed == whole


def test_text_stream_updates() -> None:
    """OL-17, PV-16: one assistant update per chunk with content; the done chunk
    finishes."""
    updates = decode(transcript("plain_text.ndjson"))
    assert [u.text for u in updates] == [
        "The",
        " sky is",
        " blue — ",
        "Rayleigh scattering ☀️.",
        "",
    ]
    assert all(u.role == "assistant" and u.model == "llama3.2" for u in updates)
    assert updates[0].created_at == "2023-08-04T15:52:19Z"
    assert [u.finish_reason for u in updates] == [None] * 4 + ["stop"]
    assert updates[-1].contents[0].type == "usage"
    assert isinstance(updates[0].raw_representation, dict)
    final = ChatResponse.from_updates(updates)
    assert final.usage_details is not None
    assert final.usage_details.total_token_count == 26 + 282


def test_tool_calls_arrive_whole_in_a_stream() -> None:
    """OL-17, PV-13: each streamed call is one content with its name and whole
    arguments."""
    updates = decode(transcript("parallel_tool_calls.ndjson"), "s")
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", '{"city": "Paris"}'),
        ("get_weather", '{"city": "東京"}'),
        ("get_time", "{}"),
    ]
    assert len({c.call_id for c in calls}) == 3
    final = ChatResponse.from_updates(updates)
    assert [
        c.call_id for c in final.messages[0].contents if c.type == "function_call"
    ] == [c.call_id for c in calls]


def test_thinking_stream() -> None:
    """OL-11, OL-17: ``thinking`` arrives as reasoning content, before the text."""
    final = ChatResponse.from_updates(decode(transcript("thinking.ndjson")))
    contents = final.messages[0].contents
    assert [c.type for c in contents] == ["text_reasoning", "text"]
    assert contents[0].text == "The user asks for 17 × 23."
    assert contents[1].text == "17 × 23 = 391"


def test_done_is_the_terminator() -> None:
    """OL-17, PV-15: done sets .done and later data is ignored; without it .done stays
    False."""
    data = transcript("length.ndjson")
    decoder = OllamaStreamDecoder()
    updates = decoder.feed(data + b'{"not": "json\n{"error": "late"}\n')
    assert decoder.done
    assert updates[-1].finish_reason == "length"
    assert decoder.close() == []
    cut = OllamaStreamDecoder()
    partial = cut.feed(data[: data.index(b"\n") + 1]) + cut.close()
    assert [u.text for u in partial] == ["Once upon"]
    assert not cut.done


def test_empty_chunks_give_no_update() -> None:
    """PV-16, OL-17: a non-final chunk with nothing in it gives no update; blank lines
    are skipped."""
    data = b'{"model":"m","message":{"role":"assistant","content":""},"done":false}\n\n\r\n'
    assert decode(data) == []


def test_last_line_without_newline_is_decoded_at_close() -> None:
    """OL-16, PV-12: close() decodes a final line that has no line ending."""
    data = transcript("plain_text.ndjson").rstrip(b"\n")
    decoder = OllamaStreamDecoder()
    updates = decoder.feed(data)
    assert not decoder.done
    updates += decoder.close()
    assert decoder.done
    assert updates[-1].finish_reason == "stop"


def test_error_line_keeps_earlier_updates() -> None:
    """OL-18, PV-14: an error line raises with the updates decoded before it in the same
    feed."""
    data = transcript("plain_text.ndjson").split(b"\n")
    feed = (
        data[0]
        + b"\n"
        + data[1]
        + b'\n{"error":"an error was encountered while running the model"}\n'
    )
    decoder = OllamaStreamDecoder()
    with pytest.raises(OllamaStreamError, match="while running the model") as caught:
        decoder.feed(feed)
    assert [u.text for u in caught.value.updates] == ["The", " sky is"]
    assert caught.value.body == {
        "error": "an error was encountered while running the model"
    }


@pytest.mark.parametrize(
    ("line", "match"),
    [(b"data: {}\n", "not valid JSON"), (b"[1]\n", "not a JSON object")],
)
def test_malformed_lines(line: bytes, match: str) -> None:
    """OL-18, PV-10: a line that is not a JSON object is a protocol error quoting it."""
    with pytest.raises(OllamaProtocolError, match=match):
        OllamaStreamDecoder().feed(line)


@given(data=st.data())
def test_any_chunking_gives_the_same_updates(data: st.DataObject) -> None:
    """PV-12, OL-16: every transcript cut at random byte offsets decodes to the same
    updates."""
    name = data.draw(st.sampled_from(TRANSCRIPTS), label="transcript")
    raw = transcript(name)
    cuts = sorted(
        set(
            data.draw(st.lists(st.integers(1, len(raw) - 1), max_size=30), label="cuts")
        )
    )
    decoder = OllamaStreamDecoder("seed")
    updates = []
    for start, end in zip([0, *cuts], [*cuts, len(raw)], strict=True):
        updates += decoder.feed(raw[start:end])
    updates += decoder.close()
    assert [u.to_dict() for u in updates] == [u.to_dict() for u in decode(raw, "seed")]


def test_byte_by_byte() -> None:
    """PV-12: one byte at a time, multi-byte characters and CRLF pairs split, same
    result."""
    for name in TRANSCRIPTS:
        raw = transcript(name)
        decoder = OllamaStreamDecoder()
        updates = [
            u for i in range(len(raw)) for u in decoder.feed(raw[i : i + 1])
        ] + decoder.close()
        assert [u.to_dict() for u in updates] == [u.to_dict() for u in decode(raw)], (
            name
        )


# =============================================================================================
# Errors and hosts


def test_parse_error() -> None:
    """OL-19, PV-11: Ollama's ``error`` string, the body text, or the status line;
    request id header."""
    assert parse_error(400, b'{"error":"invalid options"}', {"X-Request-Id": "r1"}) == (
        "invalid options",
        "r1",
    )
    assert parse_error(500, b'{"error":{"message":"nested"}}') == ("nested", None)
    assert parse_error(502, b"  Bad gateway from proxy  ") == (
        "Bad gateway from proxy",
        None,
    )
    assert parse_error(503, b"") == ("HTTP 503 Service Unavailable", None)


@pytest.mark.parametrize(
    "message",
    [
        'model "llama3:70b" not found, try pulling it first',
        "model 'llama3:70b' not found, try pulling it first",
        "model 'llama3:70b' not found",
    ],
)
def test_model_not_pulled(message: str) -> None:
    """OL-20: a 404 naming a missing model is OllamaModelNotFoundError with the pull
    hint."""
    error = error_for_answer(404, message, None)
    assert isinstance(error, OllamaModelNotFoundError)
    assert isinstance(error, NotFoundError)
    assert error.model == "llama3:70b"
    assert error.provider_message == message
    assert (
        str(error)
        == f"ollama: HTTP 404 Not Found: {message} (run: ollama pull llama3:70b)"
    )
    assert error.status == 404
    assert not error.retryable
    assert type(error_for_answer(404, "404 page not found")) is NotFoundError
    assert isinstance(error_for_answer(500, 'model "x" not found'), ServerError)


def test_parse_host_matches_the_official_sdk() -> None:
    """OL-21: parse_host reads OLLAMA_HOST exactly as the official SDK does."""
    from ollama._client import _parse_host

    hosts = [
        None, "", "1.2.3.4", ":56789", "1.2.3.4:56789", "http://1.2.3.4", "https://1.2.3.4",
        "https://example.com:56789/path/", "example.com/", "example.com:56789/path",
        "[0001:002:003:0004::1]", "[0001:002:003:0004::1]:56789", "https://[0001:002:003:0004::1]/path",
        "0.0.0.0", "localhost:11434", "http://ollama.internal:8080/",
    ]  # fmt: skip
    for host in hosts:
        assert parse_host(host) == _parse_host(host), host
    with pytest.raises(ValueError, match="invalid port"):
        parse_host("example.com:99999999")


def test_codec_does_not_import_aiohttp() -> None:
    """PV-1, OL-23: importing the package and using the codec loads no network
    library."""
    code = (
        "import sys, minagent_ollama as m\n"
        "from minagent import Message\n"
        "b = m.build_request([Message('user', ['hi'])], {}, model='x', stream=True)\n"
        'm.OllamaStreamDecoder().feed(b\'{"message":{"content":"a"},"done":true}\\n\')\n'
        "print('aiohttp' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


class _Point:
    def to_dict(self) -> dict[str, int]:
        return {"x": 1}


@pytest.mark.parametrize(
    ("messages", "options", "error", "match"),
    [
        (
            [Message("user", [Content("hosted_file", uri="file_1")])],
            {},
            ValueError,
            r"messages\[0\].*hosted_file",
        ),
        (
            [Message("assistant", [Content.from_function_call("c", "", "{}")])],
            {},
            ValueError,
            "needs a name",
        ),
        (
            [Message("tool", [Content.from_function_result("", "x")])],
            {},
            ValueError,
            "needs a call_id",
        ),
        (
            [Message("user", [Content.from_function_call("c", "f", "{}")])],
            {},
            ValueError,
            "assistant message",
        ),
        (
            [Message("user", ["x"])],
            {"tools": [{"description": "no name"}]},
            TypeError,
            "has no name",
        ),
        (
            [Message("user", ["x"])],
            {"response_format": "yaml"},
            ValueError,
            "unsupported response_format",
        ),
        (
            [Message("user", ["x"])],
            {"response_format": 42},
            TypeError,
            "unsupported response_format",
        ),
        (
            [Message("user", ["x"])],
            {"response_format": {"schema": [1]}},
            TypeError,
            "must be a dict",
        ),
        (
            [Message("user", ["x"])],
            {"temperature": object()},
            TypeError,
            "'temperature' is not JSON",
        ),
    ],
)
def test_requests_that_cannot_be_built(
    messages: list[Message], options: dict[str, Any], error: type, match: str
) -> None:
    """PV-6, OL-4, OL-5, OL-6, OL-9, PV-2: what cannot be sent is a typed error naming
    it."""
    with pytest.raises(error, match=match):
        body(messages, options)


def test_single_tool_object_results_and_extra_options_object() -> None:
    """OL-6, PV-7, OL-10: one tool (not a list), objects serialised through to_dict,
    extra options."""
    messages = [
        Message("assistant", [Content.from_function_call("c1", "f", {"a": 1})]),
        Message("tool", [Content.from_function_result("c1", _Point())]),
    ]
    sent = body(
        messages, {"tools": {"name": "f"}, "extra_body": {"options": {"seed": 3}}}
    )
    assert [t["function"]["name"] for t in sent["tools"]] == ["f"]
    assert sent["messages"][1] == {
        "role": "tool",
        "content": '{"x": 1}',
        "tool_name": "f",
        "tool_call_id": "c1",
    }
    assert sent["options"] == {"seed": 3}
    assert (
        body([Message("user", ["x"])], {"response_format": {"type": "text"}}).get(
            "format"
        )
        is None
    )


def test_response_edge_cases() -> None:
    """OL-11, OL-14, OL-17: a done body without message, string and null arguments, odd
    chunks."""
    empty = parse_response({"model": "m", "done": True, "done_reason": "load"})
    assert empty.messages[0].contents == []
    assert empty.finish_reason == "load"
    calls = (
        parse_response(
            {
                "message": {
                    "tool_calls": [
                        {"function": {"name": "f", "arguments": '{"a": 1}'}},
                        {"function": {"name": "g"}},
                    ]
                }
            }
        )
        .messages[0]
        .contents
    )
    assert [c.arguments for c in calls] == ['{"a": 1}', "{}"]
    with pytest.raises(OllamaProtocolError, match="message is not an object"):
        OllamaStreamDecoder().feed(b'{"message": "hi", "done": false}\n')
    with pytest.raises(OllamaStreamError, match="quota"):
        parse_response({"error": {"message": "quota"}})
    assert parse_error(500, "plain text") == ("plain text", None)
    assert parse_error(500, {"error": "from a dict"}) == ("from a dict", None)
    assert parse_error(599, None) == ("HTTP 599", None)
    assert parse_error(400, b'{"message": "top level"}') == ("top level", None)


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("reasoning_effort", r"options\['think'\]"),
        ("max_completion_tokens", r"options\['max_tokens'\]"),
        ("options", "extra_body"),
        ("stream", r"stream=True"),
        ("timeout", "timeout= to the client"),
        ("user", r"extra_body'\] = \{'user'"),
        ("metadata", r"extra_body'\] = \{'metadata'"),
        ("logit_bias", "no such field"),
    ],
)
def test_unknown_options_are_refused_with_a_hint(key: str, hint: str) -> None:
    """OL-24, PV-3: an option Ollama cannot take is a ValueError naming it and what to
    write instead."""
    with pytest.raises(
        ValueError, match=rf"option '{key}' cannot be sent to Ollama: .*{hint}"
    ):
        body([Message("user", ["x"])], {key: {"a": 1}})
    assert "logprobs" in body(
        [Message("user", ["x"])], {"logprobs": True, "top_logprobs": 3}
    )


hosts = st.builds(
    lambda scheme, name, port, path: f"{scheme}{name}{port}{path}",
    st.sampled_from(["", "http://", "https://"]),
    st.sampled_from(
        [
            "",
            "localhost",
            "127.0.0.1",
            "0.0.0.0",
            "ollama.internal",
            "[::1]",
            "[fd00:1:2::3]",
        ]
    ),
    st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
    st.sampled_from(["", "/", "/proxy", "/proxy/", "/a/b/"]),
)


@given(host=hosts)
def test_parse_host_agrees_with_the_sdk_on_any_host(host: str) -> None:
    """OL-21: for any OLLAMA_HOST of the documented forms, parse_host gives the SDK's
    base URL."""
    from ollama._client import _parse_host

    assert parse_host(host) == _parse_host(host)
