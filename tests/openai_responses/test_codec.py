"""The Responses request and response codec (spec/openai-responses.md, OR-1 ..
OR-15)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minagent_openai import (
    OpenAIProtocolError,
    OpenAIStreamError,
    build_responses_request,
    parse_responses_response,
)

from minagent import ChatResponse, Content, Message, UsageDetails, tool

from ._fake_server import CREATED, response_body


def build(
    messages: list[Message] | None = None, stream: bool = False, **options: Any
) -> dict[str, Any]:
    return build_responses_request(
        messages or [Message("user", ["Hi"])],
        options,
        model="gpt-5-mini",
        stream=stream,
    )


@tool
def get_weather(location: str, unit: str = "celsius") -> str:
    """Current weather for a city."""
    return location


# =============================================================================================
# Request


def test_model_input_and_stream_flag() -> None:
    """OR-1: model (option wins), input, stream only when streaming; no model is a
    ValueError."""
    body = build()
    assert body == {
        "model": "gpt-5-mini",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Hi"}],
            }
        ],
    }
    assert build(model="gpt-5")["model"] == "gpt-5"
    streamed = build(stream=True, stream_options={"include_obfuscation": False})
    assert streamed["stream"] is True
    assert streamed["stream_options"] == {"include_obfuscation": False}
    assert "stream_options" not in build(stream_options={"include_obfuscation": False})
    with pytest.raises(ValueError, match="needs a model"):
        build_responses_request([Message("user", ["Hi"])], {}, model="", stream=False)


def test_message_items_texts_and_images() -> None:
    """OR-2: texts and images share one message item per run of contents; assistant
    output_text."""
    image = Content.from_data(
        b"\x89PNG", "image/png", additional_properties={"detail": "low"}
    )
    link = Content.from_uri("https://example.com/cat.jpg", "image/jpeg")
    messages = [
        Message("system", ["Be brief."]),
        Message("developer", ["Use metric units."]),
        Message("user", ["Look:", image, link, ""]),
        Message("assistant", ["A cat."]),
    ]
    items = build(messages)["input"]
    assert items == [
        {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": "Be brief."}],
        },
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Use metric units."}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": image.uri, "detail": "low"},
                {
                    "type": "input_image",
                    "image_url": "https://example.com/cat.jpg",
                    "detail": "auto",
                },
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "A cat.", "annotations": []}],
        },
    ]


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (
            Message("user", [Content.from_data(b"%PDF", "application/pdf")]),
            r"messages\[0\].*application/pdf",
        ),
        (
            Message(
                "assistant", [Content.from_uri("https://x.test/a.png", "image/png")]
            ),
            r"messages\[0\].*assistant",
        ),
        (Message("critic", ["text"]), r"messages\[0\]: role 'critic'"),
        (
            Message("user", [Content("hologram")]),
            r"messages\[0\]: content type 'hologram'",
        ),
        (
            Message("user", [Content.from_function_call("c1", "f", "{}")]),
            r"belong in an assistant message",
        ),
        (
            Message("assistant", [Content.from_function_call("", "f", "{}")]),
            r"needs a call_id and a name",
        ),
        (Message("tool", [Content.from_function_result("")]), r"needs a call_id"),
    ],
)
def test_contents_that_cannot_be_sent_are_errors(message: Message, match: str) -> None:
    """OR-2, OR-3, OR-6: what the API cannot carry is a ValueError naming the message
    index."""
    with pytest.raises(ValueError, match=match):
        build([message])


def test_function_calls_and_outputs() -> None:
    """OR-3, OR-4: call items (with the service's item id when known) and call outputs
    (PV-7)."""

    class Report:
        def to_dict(self) -> dict[str, Any]:
            return {"sunny": True}

    messages = [
        Message("user", ["Weather?"]),
        Message(
            "assistant",
            [
                Content.from_function_call(
                    "c1", "get_weather", '{"location":"Paris"}', id="fc_1"
                ),
                Content.from_function_call("c2", "get_weather", {"location": "Rome"}),
                Content.from_function_call("c3", "noop"),
            ],
        ),
        Message(
            "tool",
            [
                Content.from_function_result("c1", "Sunny"),
                Content.from_function_result("c2", {"temp": 21, "report": Report()}),
                Content.from_function_result("c3", None, exception="boom"),
            ],
        ),
        Message("user", [Content.from_function_result("c4", None), "and now?"]),
    ]
    items = build(messages)["input"][1:]
    assert items == [
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "get_weather",
            "arguments": '{"location":"Paris"}',
            "id": "fc_1",
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "get_weather",
            "arguments": '{"location": "Rome"}',
        },
        {"type": "function_call", "call_id": "c3", "name": "noop", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Sunny"},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": '{"temp": 21, "report": {"sunny": true}}',
        },
        {"type": "function_call_output", "call_id": "c3", "output": "boom"},
        {"type": "function_call_output", "call_id": "c4", "output": ""},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "and now?"}],
        },
    ]


def _reasoning(**kw: Any) -> Content:
    return Content.from_text_reasoning(kw.pop("text", "Thinking."), **kw)


def test_reasoning_items_are_replayed() -> None:
    """OR-5: reasoning with an id is replayed (summary, reasoning text, encrypted
    content)."""
    contents = [
        _reasoning(
            id="rs_1",
            protected_data="ENC",
            additional_properties={"summary": ["a", "b"]},
        ),
        _reasoning(id="rs_2", text="plain"),
        _reasoning(
            id="rs_3",
            text="raw",
            additional_properties={"reasoning_text": ["step 1", "step 2"]},
        ),
        _reasoning(text="from chat completions"),  # no id: not sent
        Content.from_text("Done."),
    ]
    items = build([Message("assistant", contents)])["input"]
    assert items == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "a"},
                {"type": "summary_text", "text": "b"},
            ],
            "encrypted_content": "ENC",
        },
        {
            "type": "reasoning",
            "id": "rs_2",
            "summary": [{"type": "summary_text", "text": "plain"}],
        },
        {
            "type": "reasoning",
            "id": "rs_3",
            "summary": [],
            "content": [
                {"type": "reasoning_text", "text": "step 1"},
                {"type": "reasoning_text", "text": "step 2"},
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
    ]


def test_reasoning_without_encrypted_content_is_not_sent_when_not_stored() -> None:
    """OR-5: with store=False only reasoning the service can decrypt is replayed."""
    contents = [
        _reasoning(id="rs_1"),
        _reasoning(id="rs_2", protected_data="ENC"),
        Content.from_text("ok"),
    ]
    items = build([Message("assistant", contents)], store=False)["input"]
    assert [i.get("id") for i in items if i["type"] == "reasoning"] == ["rs_2"]


def test_kept_items_bookkeeping_and_informational_calls() -> None:
    """OR-6: kept output items go back whole; usage, errors, approvals, informational
    calls do not."""
    item = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    }
    call = Content.from_function_call("c9", "hosted", "{}", informational_only=True)
    messages = [
        Message("user", ["Search."]),
        Message(
            "assistant",
            [
                Content(
                    "web_search_call",
                    id="ws_1",
                    additional_properties={"openai_item": item},
                ),
                Content.from_usage(UsageDetails(input_token_count=1)),
                Content.from_error("oops"),
                call,
                Content.from_function_approval_request(
                    "a1", Content.from_function_call("c8", "f", "{}")
                ),
                "Found it.",
            ],
        ),
        Message("tool", [Content.from_function_result("c9", "x")]),
    ]
    items = build(messages)["input"]
    assert items[1] == item
    assert items[1] is not item
    assert [i["type"] for i in items] == ["message", "web_search_call", "message"]


def test_instructions_field() -> None:
    """OR-7: instructions go in the body's instructions field, never as a system
    message."""
    body = build(instructions="You are terse.")
    assert body["instructions"] == "You are terse."
    assert [i["role"] for i in body["input"]] == ["user"]
    assert "instructions" not in build(instructions="")
    with pytest.raises(TypeError, match="instructions"):
        build(instructions=["a", "b"])


def test_tools_declarations() -> None:
    """OR-8: function tools flattened with strict false, Chat form flattened, hosted
    passed through."""
    hosted = {"type": "web_search", "search_context_size": "low"}
    chat_form = {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look up.",
            "parameters": {"type": "object"},
        },
    }
    body = build(
        tools=[
            get_weather,
            {"name": "bare"},
            {"name": "strict_one", "strict": True, "parameters": {"type": "object"}},
            chat_form,
            hosted,
        ]
    )
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": get_weather.parameters,
            "strict": False,
        },
        {
            "type": "function",
            "name": "bare",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        },
        {
            "type": "function",
            "name": "strict_one",
            "parameters": {"type": "object"},
            "strict": True,
        },
        {
            "type": "function",
            "name": "lookup",
            "description": "Look up.",
            "parameters": {"type": "object"},
            "strict": False,
        },
        hosted,
    ]
    assert body["tools"][4] is not hosted
    with pytest.raises(TypeError, match="cannot declare tool 42"):
        build(tools=[42])
    with pytest.raises(TypeError, match="has no name"):
        build(tools=[{"description": "nameless"}])


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"mode": "auto"}, "auto"),
        (
            {"mode": "required", "required_function_name": "get_weather"},
            {"type": "function", "name": "get_weather"},
        ),
        (
            {"mode": "required", "allowed_tools": ["get_weather"]},
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "get_weather"}],
            },
        ),
        ({"type": "web_search"}, {"type": "web_search"}),
    ],
)
def test_tool_choice(choice: Any, wire: Any) -> None:
    """OR-8: tool_choice in the Responses shapes; parallel_tool_calls as a bool."""
    body = build(tools=[get_weather], tool_choice=choice, parallel_tool_calls=0)
    assert body["tool_choice"] == wire
    assert body["parallel_tool_calls"] is False


def test_allow_multiple_tool_calls() -> None:
    """OR-8: the upstream name allow_multiple_tool_calls is sent as
    parallel_tool_calls."""
    assert (
        build(tools=[get_weather], allow_multiple_tool_calls=False)[
            "parallel_tool_calls"
        ]
        is False
    )
    both = build(
        tools=[get_weather], allow_multiple_tool_calls=False, parallel_tool_calls=True
    )
    assert both["parallel_tool_calls"] is True
    assert "parallel_tool_calls" not in build(allow_multiple_tool_calls=True)


def test_no_tools_no_tool_choice() -> None:
    """OR-8, PV-5: without tools neither tool_choice nor parallel_tool_calls is sent."""
    body = build(tools=[], tool_choice="required", parallel_tool_calls=True)
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & body.keys()
    with pytest.raises(ValueError, match="unsupported tool_choice"):
        build(tools=[get_weather], tool_choice="sometimes")


class _Model:
    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return {
            "title": "Model",
            "type": "object",
            "properties": {"x": {"type": "integer"}},
        }

    @classmethod
    def model_validate_json(cls, text: str) -> Any:
        return text


_STRICT = {
    **_Model.model_json_schema(),
    "required": ["x"],
    "additionalProperties": False,
}


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "title": "City answer!",
}


@pytest.mark.parametrize(
    ("value", "fmt"),
    [
        ("text", {"type": "text"}),
        ("json_object", {"type": "json_object"}),
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            SCHEMA,
            {
                "type": "json_schema",
                "name": "City_answer_",
                "schema": SCHEMA,
                "strict": False,
            },
        ),
        (
            {
                "schema": SCHEMA,
                "name": "city",
                "strict": True,
                "description": "A city.",
            },
            {
                "type": "json_schema",
                "name": "city",
                "schema": SCHEMA,
                "strict": True,
                "description": "A city.",
            },
        ),
        (
            {
                "type": "json_schema",
                "json_schema": {"name": "c", "schema": SCHEMA, "strict": True},
            },
            {"type": "json_schema", "name": "c", "schema": SCHEMA, "strict": True},
        ),
        (
            {"type": "json_schema", "name": "c", "schema": SCHEMA},
            {"type": "json_schema", "name": "c", "schema": SCHEMA},
        ),
        (
            _Model,
            {
                "type": "json_schema",
                "name": "_Model",
                "schema": _STRICT,
                "strict": True,
            },
        ),
    ],
)
def test_response_format_becomes_text_format(value: Any, fmt: dict[str, Any]) -> None:
    """OR-9: response_format mapped as the Chat Completions codec does (OA-8),
    flattened."""
    assert build(response_format=value)["text"] == {"format": fmt}


def test_text_options_merge() -> None:
    """OR-9: text dict, response_format as its format, verbosity; disagreeing formats
    are an error."""
    body = build(
        text={"verbosity": "high"}, response_format="json_object", verbosity="low"
    )
    assert body["text"] == {"verbosity": "high", "format": {"type": "json_object"}}
    assert build(verbosity="low")["text"] == {"verbosity": "low"}
    with pytest.raises(ValueError, match="disagree"):
        build(text={"format": {"type": "text"}}, response_format="json_object")
    with pytest.raises(ValueError, match="unsupported response_format"):
        build(response_format="yaml")


def test_renamed_and_passed_options() -> None:
    """OR-10: max_tokens, reasoning_effort, conversation_id renamed; the listed fields
    pass through."""
    passed = {
        "temperature": 0.2,
        "top_p": 0.9,
        "user": "u1",
        "metadata": {"k": "v"},
        "store": False,
        "service_tier": "flex",
        "prompt_cache_key": "pk",
        "prompt_cache_retention": "24h",
        "prompt_cache_options": {"mode": "explicit"},
        "safety_identifier": "s1",
        "include": ["reasoning.encrypted_content"],
        "truncation": "auto",
        "max_tool_calls": 3,
        "top_logprobs": 2,
        "background": False,
        "prompt": {"id": "pmpt_1"},
    }
    body = build(
        **passed,
        max_tokens=50,
        reasoning_effort="low",
        reasoning={"summary": "auto"},
        conversation_id="resp_9",
    )
    for key, value in passed.items():
        assert body[key] == value, key
    assert body["max_output_tokens"] == 50
    assert body["reasoning"] == {"summary": "auto", "effort": "low"}
    assert body["previous_response_id"] == "resp_9"
    assert "conversation_id" not in body
    assert build(max_tokens=50, max_output_tokens=70)["max_output_tokens"] == 70
    assert build(reasoning={"effort": "high"}, reasoning_effort="low")["reasoning"] == {
        "effort": "high"
    }
    conv = build(conversation_id="conv_1")
    assert conv["conversation"] == "conv_1"
    assert "previous_response_id" not in conv
    assert build(previous_response_id="resp_1")["previous_response_id"] == "resp_1"
    assert (
        build(previous_response_id="resp_1", conversation_id="resp_2")[
            "previous_response_id"
        ]
        == "resp_2"
    )
    with pytest.raises(TypeError, match="conversation_id"):
        build(conversation_id=7)


@pytest.mark.parametrize(
    "key",
    [
        "stop",
        "seed",
        "logit_bias",
        "frequency_penalty",
        "presence_penalty",
        "n",
        "logprobs",
        "max_completion_tokens",
        "modalities",
        "audio",
        "prediction",
        "web_search_options",
        "functions",
        "function_call",
        "stream",
        "input",
        "messages",
        "extra_headers",
        "extra_query",
        "timeout",
        "continuation_token",
    ],
)
def test_unsupported_options_are_errors(key: str) -> None:
    """OR-11: a Chat Completions option without a Responses field is a ValueError naming
    it."""
    with pytest.raises(
        ValueError, match=rf"option '{key}' cannot be sent to the Responses API"
    ):
        build_responses_request(
            [Message("user", ["Hi"])], {key: 1}, model="m", stream=False
        )


def test_unknown_and_internal_options() -> None:
    """OR-11: unknown keys are errors pointing to extra_body; _keys and None values are
    absent."""
    with pytest.raises(ValueError, match=r"unknown option 'temprature'.*extra_body"):
        build(temprature=0.5)
    assert (
        build(_trace="x", temperature=None, additional_function_arguments={"a": 1})
        == build()
    )
    with pytest.raises(TypeError, match="option keys must be str"):
        build_responses_request(
            [Message("user", ["Hi"])], {1: "x"}, model="m", stream=False
        )
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match="not JSON data"):
            build(temperature=bad)
    with pytest.raises(ValueError, match="not JSON data"):
        build(metadata={"when": object()})


def test_extra_body() -> None:
    """OR-12: extra_body is merged last, wins, and None removes a computed key."""
    body = build(
        stream=True,
        temperature=0.1,
        extra_body={"temperature": 0.9, "stream": None, "new_field": [1]},
    )
    assert body["temperature"] == 0.9
    assert "stream" not in body
    assert body["new_field"] == [1]
    with pytest.raises(TypeError, match="extra_body"):
        build(extra_body=[1])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    options=st.fixed_dictionaries(
        {},
        optional={
            "temperature": st.floats(0, 2),
            "metadata": st.dictionaries(
                st.text(max_size=4), st.text(max_size=4), max_size=3
            ),
            "store": st.booleans(),
            "include": st.lists(
                st.sampled_from(
                    ["reasoning.encrypted_content", "message.output_text.logprobs"]
                )
            ),
            "max_tokens": st.integers(1, 10_000),
            "reasoning": st.fixed_dictionaries(
                {}, optional={"effort": st.sampled_from(["low", "high"])}
            ),
            "text": st.fixed_dictionaries(
                {}, optional={"verbosity": st.sampled_from(["low", "high"])}
            ),
            "conversation_id": st.sampled_from(["resp_1", "conv_1"]),
            "tools": st.just([get_weather]),
            "tool_choice": st.sampled_from(["auto", "none", "required"]),
            "extra_body": st.dictionaries(
                st.sampled_from(["a", "temperature", "input"]), json_values, max_size=2
            ),
            "_private": json_values,
        },
    ),
    stream=st.booleans(),
)
def test_request_is_plain_json_and_inputs_untouched(
    options: dict[str, Any], stream: bool
) -> None:
    """PV-2, OR-1, OR-11: any option dict gives plain JSON, the same every time, inputs
    unmutated."""
    messages = [
        Message("user", ["Hi"]),
        Message(
            "assistant",
            [
                _reasoning(id="rs_1", protected_data="E"),
                Content.from_function_call("c1", "get_weather", {"location": "Oslo"}),
            ],
        ),
        Message("tool", [Content.from_function_result("c1", {"t": 1})]),
    ]
    before_messages = copy.deepcopy([m.to_dict() for m in messages])
    before_options = repr(options)
    body = build_responses_request(messages, options, model="m", stream=stream)
    assert json.loads(json.dumps(body)) == body
    assert build_responses_request(messages, options, model="m", stream=stream) == body
    assert [m.to_dict() for m in messages] == before_messages
    assert repr(options) == before_options


# =============================================================================================
# Response


USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {
        "cached_tokens": 60,
        "cache_write_tokens": 10,
        "audio_tokens": 2,
    },
    "output_tokens": 40,
    "output_tokens_details": {"reasoning_tokens": 30},
    "total_tokens": 140,
}
REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [
        {"type": "summary_text", "text": "First."},
        {"type": "summary_text", "text": "Second."},
    ],
    "encrypted_content": "ENC",
}


def test_parse_output_items_in_order() -> None:
    """OR-13, OR-14: reasoning, hosted items, text, refusal and calls in output
    order."""
    body = response_body(
        "resp_1",
        "gpt-5",
        reasoning=[REASONING],
        extra_items=[{"id": "ws_1", "type": "web_search_call", "status": "completed"}],
        text="Hello",
        calls=[("call_1", "get_weather", '{"location":"Paris"}')],
        usage=USAGE,
    )
    body["output"][2]["content"].append({"type": "refusal", "refusal": "But not that."})
    response = parse_responses_response(body)
    [message] = response.messages
    assert message.role == "assistant"
    assert message.message_id == "resp_1"
    assert message.contents == [
        Content.from_text_reasoning(
            "First.\n\nSecond.",
            id="rs_1",
            protected_data="ENC",
            additional_properties={"summary": ["First.", "Second."]},
        ),
        Content(
            "web_search_call",
            id="ws_1",
            additional_properties={
                "openai_item": {
                    "id": "ws_1",
                    "type": "web_search_call",
                    "status": "completed",
                }
            },
        ),
        Content.from_text(
            "HelloBut not that.", additional_properties={"refusal": True}
        ),
        Content.from_function_call(
            "call_1", "get_weather", '{"location":"Paris"}', id="fc_1_0"
        ),
    ]
    assert response.raw_representation is body


def test_parse_reasoning_text_items() -> None:
    """OR-14: reasoning text without a summary is the text; the lists are kept for
    replay."""
    item = {
        "id": "rs_2",
        "type": "reasoning",
        "summary": [],
        "content": [
            {"type": "reasoning_text", "text": "a"},
            {"type": "reasoning_text", "text": "b"},
        ],
    }
    [content] = (
        parse_responses_response(response_body("resp_2", "gpt-oss", reasoning=[item]))
        .messages[0]
        .contents
    )
    assert content == Content.from_text_reasoning(
        "a\n\nb", id="rs_2", additional_properties={"reasoning_text": ["a", "b"]}
    )
    replay = build([Message("assistant", [content])])["input"]
    assert replay == [
        {
            "type": "reasoning",
            "id": "rs_2",
            "summary": [],
            "content": [
                {"type": "reasoning_text", "text": "a"},
                {"type": "reasoning_text", "text": "b"},
            ],
        }
    ]


def test_parse_metadata_usage_and_thread() -> None:
    """OR-15: ids, model, created_at, usage with cached and reasoning tokens,
    conversation_id."""
    response = parse_responses_response(
        response_body("resp_1", "gpt-5", text="x", usage=USAGE)
    )
    assert response.response_id == "resp_1"
    assert response.conversation_id == "resp_1"
    assert response.model == "gpt-5"
    assert response.created_at == "2024-05-06T12:53:20Z"
    assert CREATED == 1715000000
    assert response.finish_reason == "stop"
    assert response.usage_details == UsageDetails(
        input_token_count=100,
        output_token_count=40,
        total_token_count=140,
        cache_read_input_token_count=60,
        cache_creation_input_token_count=10,
        reasoning_output_token_count=30,
        additional_counts={"input_tokens_details.audio_tokens": 2},
    )


def test_conversation_id_rules() -> None:
    """OR-15: the conversation object's id, else the response id, unless store is
    False."""
    body = response_body("resp_1", "gpt-5", text="x")
    assert parse_responses_response(body, store=False).conversation_id is None
    assert parse_responses_response(body, store=True).conversation_id == "resp_1"
    assert parse_responses_response({**body, "store": False}).conversation_id is None
    assert (
        parse_responses_response(
            {**body, "conversation": {"id": "conv_7"}}
        ).conversation_id
        == "conv_7"
    )


@pytest.mark.parametrize(
    ("status", "reason", "calls", "finish"),
    [
        ("completed", None, [], "stop"),
        ("completed", None, [("c", "f", "{}")], "tool_calls"),
        ("incomplete", "max_output_tokens", [], "length"),
        ("incomplete", "content_filter", [], "content_filter"),
        ("incomplete", None, [], "incomplete"),
        ("in_progress", None, [], None),
        ("queued", None, [], None),
    ],
)
def test_finish_reason(
    status: str,
    reason: str | None,
    calls: list[tuple[str, str, str]],
    finish: str | None,
) -> None:
    """OR-15: finish_reason from status, incomplete reason and function calls."""
    body = response_body(
        "resp_1", "m", text="x", calls=calls, status=status, incomplete_reason=reason
    )
    assert parse_responses_response(body).finish_reason == finish


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ([], "not a JSON object"),
        ({"id": "resp_1"}, "no output list"),
        ({"id": "resp_1", "output": [1]}, r"output\[0\] is not an object"),
        ({"id": "resp_1", "output": [{"id": "x"}]}, "output item without a type"),
        (
            {"id": "resp_1", "output": [{"type": "function_call", "name": "f"}]},
            "without call_id",
        ),
    ],
)
def test_malformed_bodies(body: Any, match: str) -> None:
    """OR-13, PV-10: malformed bodies are OpenAIProtocolError (a ValueError) saying what
    is wrong."""
    with pytest.raises(OpenAIProtocolError, match=match) as info:
        parse_responses_response(body)
    assert isinstance(info.value, ValueError)


def test_failed_body_raises() -> None:
    """OR-13: a failed response raises OpenAIStreamError with the error's fields."""
    body = {
        **response_body("resp_1", "m"),
        "status": "failed",
        "error": {"code": "server_error", "message": "It broke."},
    }
    with pytest.raises(OpenAIStreamError, match=r"It broke\.") as info:
        parse_responses_response(body)
    assert info.value.code == "server_error"
    assert info.value.body == body
    with pytest.raises(OpenAIStreamError, match="failed"):
        parse_responses_response({**response_body("resp_1", "m"), "status": "failed"})


def test_parsed_response_is_a_chat_response() -> None:
    """OR-13: an empty output gives one assistant message without contents."""
    response = parse_responses_response(response_body("resp_1", "m"))
    assert isinstance(response, ChatResponse)
    assert [(m.role, m.contents) for m in response.messages] == [("assistant", [])]
