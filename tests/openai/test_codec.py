"""The sans-I/O Chat Completions codec (spec/providers.md, PV-1 .. PV-16, OA-1 ..
OA-19).

Request mapping is checked by exact dict equality; streaming against recorded
transcripts in ``transcripts/`` (shaped after the public API reference), whole, byte by
byte and cut at random.
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_openai import (
    ChatCompletionsStreamDecoder,
    OpenAIProtocolError,
    OpenAIStreamError,
    build_request,
    parse_error,
    parse_response,
)

from minagent import ChatResponse, ChatResponseUpdate, Content, Message, UsageDetails

TRANSCRIPTS = Path(__file__).parent / "transcripts"
PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "openai" / "minagent_openai"


@dataclass
class Tool:
    """Stands in for the core's FunctionTool: the codec reads only these three
    attributes."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    func: Any = field(default=None, repr=False)


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"location": {"type": "string"}},
    "required": ["location"],
}
WEATHER = Tool("get_weather", "Current weather for a city.", WEATHER_SCHEMA)
WEATHER_DECL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": WEATHER_SCHEMA,
    },
}


def req(
    messages: list[Message], options: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    kw.setdefault("model", "gpt-4o-mini")
    kw.setdefault("stream", False)
    return build_request(messages, options or {}, **kw)


def user(*contents: Any) -> Message:
    return Message("user", list(contents))


# =============================================================================================
# PV-1: sans-I/O


def test_codec_imports_no_network_library() -> None:
    """PV-1: importing the package and running the codec never loads aiohttp."""
    code = (
        "import sys\n"
        "import minagent_openai as m\n"
        "from minagent import Message\n"
        "m.build_request([Message('user', ['hi'])], {}, model='x', stream=True)\n"
        "d = m.ChatCompletionsStreamDecoder(); d.feed(b'data: [DONE]\\n\\n'); d.close()\n"
        "m.parse_error(500, b'{}', {})\n"
        "print('aiohttp' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path.cwd(),
    )
    assert out.stdout.strip() == "False"


def test_codec_modules_have_no_aiohttp_import() -> None:
    """PV-1: no codec module imports aiohttp, not even lazily inside a function."""
    for name in (
        "__init__.py",
        "_codec.py",
        "_request.py",
        "_response.py",
        "_stream.py",
        "_responses_request.py",
        "_responses_response.py",
        "_responses_stream.py",
    ):
        tree = ast.parse((PLUGIN / name).read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
        assert "aiohttp" not in imported, name


# =============================================================================================
# Request: OA-1 .. OA-10, PV-2 .. PV-7


def test_minimal_request() -> None:
    """OA-1, OA-2: model and messages only; no stream keys when not streaming."""
    assert req([user("hi")]) == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_stream_request_asks_for_usage() -> None:
    """OA-1: stream=True sends stream and stream_options.include_usage."""
    assert req([user("hi")], stream=True) == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_model_option_wins_and_a_model_is_required() -> None:
    """OA-1: options['model'] overrides the argument; no model at all is a
    ValueError."""
    assert req([user("hi")], {"model": "gpt-4.1"})["model"] == "gpt-4.1"
    with pytest.raises(ValueError, match="model"):
        req([user("hi")], model="")


def test_text_roles_and_concatenation() -> None:
    """OA-2: roles are kept; several text contents become one string; author_name is not
    sent."""
    messages = [
        Message("system", ["You are ", "terse."]),
        Message("developer", ["Use metric units."]),
        Message("user", ["Hello ", "there"], author_name="ann"),
        Message("assistant", ["Hi."], author_name="bot"),
    ]
    assert req(messages)["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": "Use metric units."},
        {"role": "user", "content": "Hello there"},
        {"role": "assistant", "content": "Hi."},
    ]


def test_instructions_become_a_leading_system_message() -> None:
    """PV-4: instructions are rendered first, as a system message."""
    body = req([user("hi")], {"instructions": "Be brief."})
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ],
    }


def test_instructions_are_not_duplicated() -> None:
    """PV-4: a leading system message with the same text is not repeated; a different
    one is."""
    same = req(
        [Message("system", ["Be brief."]), user("hi")], {"instructions": "Be brief."}
    )
    assert same["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    other = req(
        [Message("system", ["Other."]), user("hi")], {"instructions": "Be brief."}
    )
    assert [m["content"] for m in other["messages"]] == ["Be brief.", "Other.", "hi"]
    assert req([user("hi")], {"instructions": ""})["messages"] == [
        {"role": "user", "content": "hi"}
    ]


def test_images_from_data_and_uri_contents() -> None:
    """OA-3: data and image uri contents become image_url parts, in content order, with
    detail."""
    png = Content.from_data(b"\x89PNG", "image/png")
    remote = Content.from_uri(
        "https://example.com/cat.jpg",
        "image/jpeg",
        additional_properties={"detail": "low"},
    )
    body = req([user("What is this?", png, remote)])
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,iVBORw=="},
                },
                {
                    "type": "image_url",
                    "image_url": {
                        "url": "https://example.com/cat.jpg",
                        "detail": "low",
                    },
                },
            ],
        }
    ]


def test_image_only_user_message() -> None:
    """OA-3: an image alone is a one-part list; a data: URI given to from_uri is data
    content."""
    image = Content.from_uri("data:image/gif;base64,R0lGOD==")
    assert req([user(image)])["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/gif;base64,R0lGOD=="},
                }
            ],
        }
    ]


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (
            user(Content.from_data(b"%PDF", "application/pdf")),
            r"messages\[0\].*application/pdf",
        ),
        (user(Content.from_uri("https://example.com/x")), r"messages\[0\].*None"),
        (
            Message("assistant", [Content.from_data(b"x", "image/png")]),
            r"messages\[0\].*user messages",
        ),
    ],
)
def test_contents_the_api_cannot_carry_are_errors(message: Message, match: str) -> None:
    """PV-6, OA-3: non-image media and images outside user messages raise, naming the
    message."""
    with pytest.raises(ValueError, match=match):
        req([message])


def test_assistant_tool_calls() -> None:
    """OA-4: calls become tool_calls; dict arguments are JSON-encoded, str kept, None is
    '{}'."""
    message = Message(
        "assistant",
        [
            Content.from_function_call("call_1", "get_weather", {"location": "Paris"}),
            Content.from_function_call("call_2", "get_weather", '{"location":"Oslo"}'),
            Content.from_function_call("call_3", "get_time"),
        ],
    )
    assert req([user("hi"), message])["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "arguments": '{"location": "Paris"}',
                },
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"location":"Oslo"}'},
            },
            {
                "id": "call_3",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{}"},
            },
        ],
    }


def test_assistant_text_and_tool_calls_together() -> None:
    """OA-4: text and calls of one assistant message stay one message."""
    message = Message(
        "assistant", ["Let me check.", Content.from_function_call("c1", "f", "{}")]
    )
    assert req([message])["messages"] == [
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                }
            ],
        }
    ]


def test_function_results_become_tool_messages() -> None:
    """PV-7, OA-5: a tool message per result: str verbatim, JSON otherwise, exception if
    None."""
    results = Message(
        "tool",
        [
            Content.from_function_result("c1", "sunny"),
            Content.from_function_result("c2", {"temp": 21, "unit": "C"}),
            Content.from_function_result("c3", None, exception="boom"),
            Content.from_function_result(
                "c4", "Error: Function failed.", exception="boom"
            ),
            Content.from_function_result("c5"),
            Content.from_function_result("c6", [1, "two", None]),
            Content.from_function_result("c7", 3.5),
        ],
    )
    assert req([results])["messages"] == [
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": '{"temp": 21, "unit": "C"}'},
        {"role": "tool", "tool_call_id": "c3", "content": "boom"},
        {"role": "tool", "tool_call_id": "c4", "content": "Error: Function failed."},
        {"role": "tool", "tool_call_id": "c5", "content": ""},
        {"role": "tool", "tool_call_id": "c6", "content": '[1, "two", null]'},
        {"role": "tool", "tool_call_id": "c7", "content": "3.5"},
    ]


def test_function_result_objects_serialise_through_to_dict_or_str() -> None:
    """PV-7: results that are not JSON use to_dict() when they have one, else str()."""

    class Opaque:
        def __str__(self) -> str:
            return "opaque!"

    content = Content.from_text("inner")
    message = Message(
        "tool", [Content.from_function_result("c1", {"a": content, "b": Opaque()})]
    )
    assert req([message])["messages"] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": json.dumps({"a": content.to_dict(), "b": "opaque!"}),
        }
    ]


def test_results_go_before_other_contents_of_their_message() -> None:
    """OA-5: a message mixing a result and text sends the tool message first."""
    mixed = Message("user", ["and now?", Content.from_function_result("c1", "ok")])
    assert req([mixed])["messages"] == [
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "and now?"},
    ]


def test_bookkeeping_contents_are_not_sent() -> None:
    """PV-6: reasoning, usage, error, approval contents are dropped; an emptied message
    too."""
    call = Content.from_function_call("c9", "delete_all", "{}")
    messages = [
        user("hi"),
        Message(
            "assistant",
            [
                Content.from_text_reasoning("thinking..."),
                "Answer.",
                Content.from_usage(UsageDetails(input_token_count=1)),
                Content.from_error("oops"),
                Content.from_function_approval_request("c9", call),
            ],
        ),
        Message("user", [Content.from_function_approval_response(True, "c9", call)]),
        Message("assistant", [Content.from_text_reasoning("only thoughts")]),
    ]
    assert req(messages)["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Answer."},
    ]


def test_informational_calls_and_their_results_are_not_sent() -> None:
    """PV-6: informational_only calls (hosted tools) and their results are not sent."""
    messages = [
        Message(
            "assistant",
            [
                Content.from_function_call(
                    "h1", "web_search", "{}", informational_only=True
                ),
                "Found it.",
            ],
        ),
        Message("tool", [Content.from_function_result("h1", "results")]),
    ]
    assert req(messages)["messages"] == [{"role": "assistant", "content": "Found it."}]


def test_tools_from_objects_dicts_and_wire_dicts() -> None:
    """OA-6, PV-5: tool objects and name dicts are wrapped; wire dicts pass through
    unchanged."""
    wire = {
        "type": "function",
        "function": {"name": "raw", "parameters": {"type": "object"}},
        "strict": True,
    }
    options = {
        "tools": [
            WEATHER,
            {
                "name": "get_time",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
            },
            Tool("ping"),
            wire,
        ]
    }
    assert req([user("hi")], options)["tools"] == [
        WEATHER_DECL,
        {
            "type": "function",
            "function": {
                "name": "get_time",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "ping",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        wire,
    ]


def test_a_single_tool_is_a_list_of_one() -> None:
    """OA-6: options['tools'] may be one tool."""
    assert req([user("hi")], {"tools": WEATHER})["tools"] == [WEATHER_DECL]


@pytest.mark.parametrize("tool", [object(), "get_weather", {"description": "no name"}])
def test_undeclarable_tools_are_type_errors(tool: Any) -> None:
    """OA-6: anything that is not a tool is a TypeError."""
    with pytest.raises(TypeError, match="tool"):
        req([user("hi")], {"tools": [tool]})


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"mode": "auto"}, "auto"),
        ({"mode": "none"}, "none"),
        ({"mode": "required"}, "required"),
        (
            {"mode": "required", "required_function_name": "get_weather"},
            {"type": "function", "function": {"name": "get_weather"}},
        ),
        (
            {"mode": "auto", "allowed_tools": ["get_weather", "get_time"]},
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "auto",
                    "tools": [
                        {"type": "function", "function": {"name": "get_weather"}},
                        {"type": "function", "function": {"name": "get_time"}},
                    ],
                },
            },
        ),
        (
            {"type": "function", "function": {"name": "x"}},
            {"type": "function", "function": {"name": "x"}},
        ),
    ],
)
def test_tool_choice_mapping(choice: Any, wire: Any) -> None:
    """OA-7: every tool_choice form maps to its wire value."""
    body = req(
        [user("hi")],
        {"tools": [WEATHER], "tool_choice": choice, "parallel_tool_calls": False},
    )
    assert body["tool_choice"] == wire
    assert body["parallel_tool_calls"] is False


@pytest.mark.parametrize(
    "choice",
    [
        "sometimes",
        {"mode": "auto", "required_function_name": "f"},
        {"mode": "maybe"},
        3,
    ],
)
def test_unsupported_tool_choice_is_a_value_error(choice: Any) -> None:
    """OA-7: an unknown tool_choice is rejected, not sent."""
    with pytest.raises(ValueError, match="tool_choice"):
        req([user("hi")], {"tools": [WEATHER], "tool_choice": choice})


@pytest.mark.parametrize("tools", [None, []])
def test_no_tools_means_no_tool_keys(tools: Any) -> None:
    """PV-5: without tools, tools, tool_choice and parallel_tool_calls are all
    omitted."""
    body = req(
        [user("hi")],
        {"tools": tools, "tool_choice": "required", "parallel_tool_calls": True},
    )
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_response_format_bare_schema_named_from_title() -> None:
    """OA-8: a bare schema is wrapped; the name comes from its title, sanitised; strict
    is False."""
    schema = {
        "title": "Weather report!",
        "type": "object",
        "properties": {"t": {"type": "number"}},
    }
    assert req([user("hi")], {"response_format": schema})["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather_report_", "schema": schema, "strict": False},
    }


def test_response_format_default_name_and_long_names() -> None:
    """OA-8: no title gives 'response'; names are cut to 64 characters."""
    schema = {"type": "object", "properties": {}}
    assert (
        req([user("hi")], {"response_format": schema})["response_format"][
            "json_schema"
        ]["name"]
        == "response"
    )
    long = {"schema": schema, "name": "n" * 100}
    assert (
        req([user("hi")], {"response_format": long})["response_format"]["json_schema"][
            "name"
        ]
        == "n" * 64
    )


def test_response_format_wrapper() -> None:
    """OA-8: a {'schema', 'name', 'strict', 'description'} wrapper sets those fields."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    wrapper = {
        "name": "answer",
        "schema": schema,
        "strict": True,
        "description": "The answer.",
    }
    assert req([user("hi")], {"response_format": wrapper})["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "schema": schema,
            "strict": True,
            "description": "The answer.",
        },
    }


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        ("json_object", {"type": "json_object"}),
        ("text", {"type": "text"}),
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {}, "strict": True},
            },
            {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {}, "strict": True},
            },
        ),
    ],
)
def test_response_format_wire_values_pass_through(value: Any, wire: Any) -> None:
    """OA-8: wire-shaped response formats and the two plain strings pass through."""
    assert req([user("hi")], {"response_format": value})["response_format"] == wire


def test_response_format_from_a_model_class() -> None:
    """OA-8, SO-5: a pydantic-style model class gives its name and its schema made
    strict."""

    class Answer:
        @staticmethod
        def model_json_schema() -> dict[str, Any]:
            return {
                "title": "ignored",
                "type": "object",
                "properties": {"x": {"type": "integer"}},
            }

        @staticmethod
        def model_validate_json(text: str) -> Any:
            return text

    strict = {
        **Answer.model_json_schema(),
        "required": ["x"],
        "additionalProperties": False,
    }
    assert req([user("hi")], {"response_format": Answer})["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": strict, "strict": True},
    }


def test_response_format_rejects_other_values() -> None:
    """OA-8: other strings and objects are errors."""
    with pytest.raises(ValueError, match="response_format"):
        req([user("hi")], {"response_format": "yaml"})
    with pytest.raises(TypeError, match="response_format"):
        req([user("hi")], {"response_format": 42})


def test_max_tokens_is_sent_as_max_completion_tokens() -> None:
    """OA-9: max_tokens goes out as max_completion_tokens by default, or under
    max_tokens_key."""
    assert req([user("hi")], {"max_tokens": 50})["max_completion_tokens"] == 50
    assert "max_tokens" not in req([user("hi")], {"max_tokens": 50})
    legacy = req([user("hi")], {"max_tokens": 50}, max_tokens_key="max_tokens")
    assert legacy["max_tokens"] == 50
    assert "max_completion_tokens" not in legacy
    both = req([user("hi")], {"max_tokens": 50, "max_completion_tokens": 70})
    assert both["max_completion_tokens"] == 70


def test_pass_through_options() -> None:
    """OA-10: the listed options are sent under their own names, unchanged."""
    options = {
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["\n\n", "END"],
        "seed": 7,
        "logit_bias": {"50256": -100},
        "user": "u-1",
        "metadata": {"run": "a"},
        "frequency_penalty": 0.5,
        "presence_penalty": -0.5,
        "store": False,
        "reasoning_effort": "low",
        "service_tier": "flex",
        "prompt_cache_key": "k",
        "safety_identifier": "s",
    }
    body = req([user("hi")], options)
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        **options,
    }


def test_internal_options_never_leak() -> None:
    """PV-3: conversation_id, instructions, tool objects and _private keys are not
    sent."""
    options = {
        "conversation_id": "conv-1",
        "instructions": "x",
        "_function_invocation_budget_state": {"n": 1},
        "_anything": 1,
        "additional_function_arguments": {"user_id": 1},
        "temperature": None,
    }
    body = req([user("hi")], options)
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "x"},
            {"role": "user", "content": "hi"},
        ],
    }


def test_extra_body_is_merged_last() -> None:
    """PV-3: extra_body keys are sent as given and win over computed keys."""
    body = req(
        [user("hi")], {"temperature": 1, "extra_body": {"top_k": 40, "temperature": 0}}
    )
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0,
        "top_k": 40,
    }
    with pytest.raises(TypeError, match="extra_body"):
        req([user("hi")], {"extra_body": ["x"]})


def test_request_is_plain_json_and_inputs_are_untouched() -> None:
    """PV-2: the body round-trips through JSON and shares nothing with the unchanged
    inputs."""
    messages = [
        Message("system", ["sys"]),
        user("look", Content.from_data(b"\x00\x01", "image/png")),
        Message(
            "assistant",
            [Content.from_function_call("c1", "get_weather", {"location": "Paris"})],
        ),
        Message("tool", [Content.from_function_result("c1", {"t": 1})]),
    ]
    options: dict[str, Any] = {
        "tools": [WEATHER, dict(WEATHER_DECL)],
        "tool_choice": {"mode": "required", "required_function_name": "get_weather"},
        "metadata": {"a": "b"},
        "stop": ("x", "y"),
        "response_format": {"type": "object", "properties": {}},
        "instructions": "sys",
        "extra_body": {"nested": {"k": [1, 2]}},
    }
    before_messages = [m.to_dict() for m in messages]
    before_options = copy.deepcopy(options)
    body = build_request(messages, options, model="m", stream=True)
    assert json.loads(json.dumps(body)) == body
    assert body == build_request(messages, options, model="m", stream=True)
    body["metadata"]["a"] = "changed"
    body["nested"]["k"].append(3)
    body["tools"][0]["function"]["parameters"]["properties"]["x"] = {}
    assert [m.to_dict() for m in messages] == before_messages
    assert options == before_options
    assert WEATHER.parameters == WEATHER_SCHEMA
    assert body["stop"] == ["x", "y"]


# =============================================================================================
# Response: PV-8, OA-11 .. OA-13


def completion(message: dict[str, Any], **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1715000000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
    }
    body.update(over)
    return body


def test_parse_text_response() -> None:
    """PV-8, OA-11, OA-12: text, ids, model, created_at, finish_reason, usage and raw
    body."""
    body = completion({"role": "assistant", "content": "Hello there.", "refusal": None})
    response = parse_response(body)
    assert response == ChatResponse(
        [Message("assistant", ["Hello there."], message_id="chatcmpl-123")],
        response_id="chatcmpl-123",
        model="gpt-4o-mini-2024-07-18",
        created_at="2024-05-06T12:53:20Z",
        finish_reason="stop",
        usage_details=UsageDetails(
            input_token_count=9, output_token_count=12, total_token_count=21
        ),
    )
    assert response.raw_representation is body


def test_parse_tool_calls_response() -> None:
    """OA-11: tool_calls become function_call contents with the JSON string kept."""
    body = completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": '{"location":"Paris"}',
                    },
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        }
    )
    body["choices"][0]["finish_reason"] = "tool_calls"
    response = parse_response(body)
    assert response.messages[0].contents == [
        Content.from_function_call("call_a", "get_weather", '{"location":"Paris"}'),
        Content.from_function_call("call_b", "get_time", "{}"),
    ]
    assert response.finish_reason == "tool_calls"


def test_tool_calls_without_ids_get_synthetic_ids() -> None:
    """OA-11: a call without an id gets call_<index>_<response id>, or call_<index>."""
    message = {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}] * 2,
    }
    contents = parse_response(completion(message)).messages[0].contents
    assert [c.call_id for c in contents] == [
        "call_0_chatcmpl-123",
        "call_1_chatcmpl-123",
    ]
    assert [
        c.call_id
        for c in parse_response(completion(message, id=None)).messages[0].contents
    ] == [
        "call_0",
        "call_1",
    ]


def test_refusal_and_reasoning_order() -> None:
    """OA-11: reasoning, refusal (text flagged refusal), content, in that order; no
    empty text."""
    message = {
        "role": "assistant",
        "reasoning_content": "hmm",
        "refusal": "I can't help with that.",
        "content": "",
    }
    assert parse_response(completion(message)).messages[0].contents == [
        Content.from_text_reasoning("hmm"),
        Content.from_text(
            "I can't help with that.", additional_properties={"refusal": True}
        ),
    ]
    assert parse_response(completion({"reasoning": "r", "content": "x"})).messages[
        0
    ].contents == [
        Content.from_text_reasoning("r"),
        Content.from_text("x"),
    ]


def test_content_parts_and_unknown_finish_reasons() -> None:
    """OA-11: a list of content parts gives one text per text part; finish_reason is
    unchanged."""
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image"},
            "junk",
            {"type": "text", "text": ""},
        ],
    }
    body = completion(message)
    body["choices"][0]["finish_reason"] = "content_filter"
    response = parse_response(body)
    assert response.messages[0].contents == [Content.from_text("a")]
    assert response.finish_reason == "content_filter"


def test_empty_message_gives_an_empty_assistant_message() -> None:
    """OA-11: content null and nothing else is an assistant message with no contents."""
    response = parse_response(
        completion({"role": "assistant", "content": None}, usage=None)
    )
    assert response.messages == [Message("assistant", [], message_id="chatcmpl-123")]
    assert response.usage_details is None


def test_usage_details_mapping() -> None:
    """OA-12: every usage field, detail counts in additional_counts, nulls stay None."""
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 20,
            "audio_tokens": None,
            "accepted_prediction_tokens": 3,
            "rejected_prediction_tokens": 1,
        },
    }
    assert parse_response(
        completion({"content": "x"}, usage=usage)
    ).usage_details == UsageDetails(
        input_token_count=100,
        output_token_count=50,
        total_token_count=150,
        cache_read_input_token_count=64,
        reasoning_output_token_count=20,
        additional_counts={
            "prompt_tokens_details.audio_tokens": 0,
            "completion_tokens_details.accepted_prediction_tokens": 3,
            "completion_tokens_details.rejected_prediction_tokens": 1,
        },
    )
    assert parse_response(
        completion({"content": "x"}, usage={"prompt_tokens": 3})
    ).usage_details == UsageDetails(input_token_count=3)


def test_empty_metadata_counts_as_absent() -> None:
    """OA-13: an empty id or model and created == 0 are None."""
    response = parse_response(completion({"content": "x"}, id="", model="", created=0))
    assert (response.response_id, response.model, response.created_at) == (
        None,
        None,
        None,
    )
    assert response.messages[0].message_id is None


def test_only_choice_zero_is_read() -> None:
    """OA-11: the choice with index 0 is used whatever its position."""
    body = completion({"content": "zero"})
    body["choices"] = [{"index": 1, "message": {"content": "one"}}, body["choices"][0]]
    assert parse_response(body).text == "zero"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ([1, 2], "not a JSON object"),
        ({"id": "x", "choices": []}, "no choice"),
        ({"id": "x"}, "no choice"),
        ({"choices": [{"index": 0, "message": "hi"}]}, "no message"),
        (
            {"choices": [{"index": 0, "message": {"tool_calls": ["x"]}}]},
            r"tool_calls\[0\]",
        ),
    ],
)
def test_malformed_bodies_are_protocol_errors(body: Any, match: str) -> None:
    """PV-10: a body of the wrong shape is an OpenAIProtocolError (a ValueError), not a
    KeyError."""
    with pytest.raises(OpenAIProtocolError, match=match) as info:
        parse_response(body)
    assert isinstance(info.value, ValueError)


def test_error_object_in_a_body_raises() -> None:
    """PV-14, OA-18: a 2xx body holding an error object raises OpenAIStreamError with
    its fields."""
    body = {
        "error": {
            "message": "Rate limit reached",
            "type": "requests",
            "code": "rate_limit_exceeded",
            "param": None,
        }
    }
    with pytest.raises(OpenAIStreamError) as info:
        parse_response(body)
    err = info.value
    assert (err.message, err.type, err.code, err.param, err.body) == (
        "Rate limit reached",
        "requests",
        "rate_limit_exceeded",
        None,
        body,
    )


# =============================================================================================
# Errors of non-2xx answers: PV-11, OA-19


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        (
            b'{"error": {"message": "Incorrect API key provided.", '
            b'"type": "invalid_request_error", '
            b'"param": null, "code": "invalid_api_key"}}',
            {"X-Request-ID": "req_abc"},
            ("Incorrect API key provided.", "req_abc"),
        ),
        (
            {"error": {"message": "Bad model", "type": "invalid_request_error"}},
            {},
            ("Bad model", None),
        ),
        (
            b'{"error": "model not found"}',
            {"request-id": "r2"},
            ("model not found", "r2"),
        ),
        (
            b'{"object": "error", "message": "context too long", "code": 400}',
            None,
            ("context too long", None),
        ),
        (b"<html>Bad Gateway</html>\n", {}, ("<html>Bad Gateway</html>", None)),
        ("plain text error", {}, ("plain text error", None)),
        (b"", {}, ("HTTP 503 Service Unavailable", None)),
        (None, {}, ("HTTP 503 Service Unavailable", None)),
        (b'{"detail": "nope"}', {}, ('{"detail": "nope"}', None)),
        ({"detail": "nope"}, {}, ('{"detail": "nope"}', None)),
    ],
)
def test_parse_error(body: Any, headers: Any, expected: tuple[str, str | None]) -> None:
    """PV-11, OA-19: provider message, body text or status line; request id from the
    headers."""
    assert parse_error(503, body, headers) == expected


def test_parse_error_truncates_long_bodies_and_handles_odd_statuses() -> None:
    """PV-11: body text is cut to 500 characters; an unknown status has no reason
    phrase."""
    message, _ = parse_error(500, b"x" * 2000, {})
    assert message == "x" * 500
    assert parse_error(599, b"", {}) == ("HTTP 599", None)


# =============================================================================================
# Streaming: PV-9, PV-12 .. PV-16, OA-14 .. OA-18


def feed_all(
    data: bytes, cuts: list[int] | None = None
) -> tuple[list[ChatResponseUpdate], ChatCompletionsStreamDecoder]:
    decoder = ChatCompletionsStreamDecoder()
    updates: list[ChatResponseUpdate] = []
    bounds = [0, *sorted({c for c in (cuts or []) if 0 < c < len(data)}), len(data)]
    for start, end in itertools.pairwise(bounds):
        updates += decoder.feed(data[start:end])
    updates += decoder.close()
    return updates, decoder


def sse(*chunks: Any) -> bytes:
    """An SSE stream: dicts are JSON-encoded data events, str are sent as raw data."""
    out = []
    for chunk in chunks:
        data = chunk if isinstance(chunk, str) else json.dumps(chunk)
        out.append(f"data: {data}\n\n")
    return "".join(out).encode()


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **over: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-S",
        "object": "chat.completion.chunk",
        "created": 1715000000,
        "model": "m",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    body.update(over)
    return body


def tc(
    index: int | None = None,
    id: str | None = None,
    name: str | None = None,
    args: Any = None,
) -> dict[str, Any]:
    call: dict[str, Any] = {"function": {}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    if args is not None:
        call["function"]["arguments"] = args
    return call


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def upd(
    contents: list[Content],
    rid: str,
    model: str,
    created: str,
    finish: str | None = None,
) -> ChatResponseUpdate:
    return ChatResponseUpdate(
        contents,
        "assistant",
        response_id=rid,
        message_id=rid,
        model=model,
        created_at=created,
        finish_reason=finish,
    )


PLAIN_USAGE = UsageDetails(
    input_token_count=12,
    output_token_count=9,
    total_token_count=21,
    cache_read_input_token_count=0,
    reasoning_output_token_count=0,
    additional_counts={
        "prompt_tokens_details.audio_tokens": 0,
        "completion_tokens_details.audio_tokens": 0,
        "completion_tokens_details.accepted_prediction_tokens": 0,
        "completion_tokens_details.rejected_prediction_tokens": 0,
    },
)


def test_plain_text_transcript_updates() -> None:
    """PV-16, OA-14, OA-16, OA-17: one update per chunk; usage chunk gives a usage
    content."""
    updates, decoder = feed_all(transcript("plain_text.sse"))
    meta = ("chatcmpl-AbC1", "gpt-4o-mini-2024-07-18", "2024-05-06T12:53:20Z")
    assert updates == [
        upd([], *meta),
        upd([Content.from_text("Hello")], *meta),
        upd([Content.from_text(", wörld — ünïcode 👋")], *meta),
        upd([Content.from_text("!")], *meta),
        upd([], *meta, finish="stop"),
        upd([Content.from_usage(PLAIN_USAGE)], *meta),
    ]
    assert decoder.done
    assert updates[1].raw_representation["choices"][0]["delta"] == {"content": "Hello"}


def test_plain_text_transcript_final_response() -> None:
    """PV-9, PV-12: from_updates gives the whole text, metadata and usage."""
    updates, _ = feed_all(transcript("plain_text.sse"))
    assert ChatResponse.from_updates(updates) == ChatResponse(
        [
            Message(
                "assistant", ["Hello, wörld — ünïcode 👋!"], message_id="chatcmpl-AbC1"
            )
        ],
        response_id="chatcmpl-AbC1",
        model="gpt-4o-mini-2024-07-18",
        created_at="2024-05-06T12:53:20Z",
        finish_reason="stop",
        usage_details=PLAIN_USAGE,
    )


def test_one_tool_call_transcript_updates() -> None:
    """PV-13, OA-15: every argument fragment carries the call id; the name comes
    once."""
    updates, _ = feed_all(transcript("one_tool_call.sse"))
    meta = ("chatcmpl-T001", "gpt-4o-2024-08-06", "2024-05-06T12:55:00Z")
    fc = Content.from_function_call
    assert updates[:6] == [
        upd([fc("call_weather1", "get_weather", "")], *meta),
        upd([fc("call_weather1", "", '{"')], *meta),
        upd([fc("call_weather1", "", "location")], *meta),
        upd([fc("call_weather1", "", '":"Par')], *meta),
        upd([fc("call_weather1", "", 'is"}')], *meta),
        upd([], *meta, finish="tool_calls"),
    ]
    assert [c.type for c in updates[6].contents] == ["usage"]
    final = ChatResponse.from_updates(updates)
    assert final.messages == [
        Message(
            "assistant",
            [fc("call_weather1", "get_weather", '{"location":"Paris"}')],
            message_id="chatcmpl-T001",
        )
    ]
    assert final.usage_details is not None
    assert final.usage_details.cache_read_input_token_count == 64


PARALLEL_CALLS = [
    Content.from_function_call("call_paris", "get_weather", '{"location": "Paris"}'),
    Content.from_function_call("call_tokyo", "get_weather", '{"location": "東京"}'),
    Content.from_function_call("call_time", "get_time", "{}"),
]


def test_parallel_tool_calls_transcript() -> None:
    """PV-13, OA-15, OA-16: parallel calls reassemble into one content each, in
    order."""
    updates, decoder = feed_all(transcript("parallel_tool_calls.sse"))
    final = ChatResponse.from_updates(updates)
    assert final.messages[0].contents == PARALLEL_CALLS
    assert final.finish_reason == "tool_calls"
    assert final.usage_details == UsageDetails(
        input_token_count=100,
        output_token_count=60,
        total_token_count=160,
        cache_read_input_token_count=0,
        reasoning_output_token_count=0,
    )
    assert decoder.done


def test_parallel_stream_equals_the_non_streaming_body() -> None:
    """PV-9: streamed and whole answers decode to the same response."""
    body = {
        "id": "chatcmpl-P002",
        "object": "chat.completion",
        "created": 1715000200,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": c.call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in PARALLEL_CALLS
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 60,
            "total_tokens": 160,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }
    streamed = ChatResponse.from_updates(
        feed_all(transcript("parallel_tool_calls.sse"))[0]
    )
    assert streamed == parse_response(body)


def test_plain_stream_equals_the_non_streaming_body() -> None:
    """PV-9: the plain-text transcript equals its whole-body counterpart."""
    body = completion(
        {"role": "assistant", "content": "Hello, wörld — ünïcode 👋!"},
        id="chatcmpl-AbC1",
        usage={
            "prompt_tokens": 12,
            "completion_tokens": 9,
            "total_tokens": 21,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
    )
    streamed = ChatResponse.from_updates(feed_all(transcript("plain_text.sse"))[0])
    assert streamed == parse_response(body)


def test_whole_tool_calls_in_one_chunk_at_a_reused_index() -> None:
    """OA-15: complete calls sent whole, each at index 0 with its own id, stay separate
    calls."""
    updates, _ = feed_all(transcript("whole_tool_call.sse"))
    final = ChatResponse.from_updates(updates)
    assert final.messages[0].contents == [
        Content.from_function_call(
            "call_a1b2c3", "get_weather", '{"location":"Paris","unit":"celsius"}'
        ),
        Content.from_function_call(
            "call_d4e5f6", "get_time", '{"zone":"Europe/Paris"}'
        ),
    ]
    assert final.usage_details == UsageDetails(
        input_token_count=150, output_token_count=40, total_token_count=190
    )
    assert final.finish_reason == "tool_calls"


def test_keepalive_crlf_transcript() -> None:
    """PV-12, PV-16, OA-16: comments ignored, CRLF, multi-line data, usage on the finish
    chunk."""
    updates, decoder = feed_all(transcript("keepalive_crlf.sse"))
    meta = ("chatcmpl-K004", "gpt-4o-mini", "2024-05-06T13:00:00Z")
    assert updates == [
        upd([Content.from_text("Line one")], *meta),
        upd([Content.from_text("\nline two ✓")], *meta),
        upd(
            [
                Content.from_usage(
                    UsageDetails(
                        input_token_count=5, output_token_count=4, total_token_count=9
                    )
                )
            ],
            *meta,
            finish="length",
        ),
    ]
    assert decoder.done
    assert ChatResponse.from_updates(updates).text == "Line one\nline two ✓"


TRANSCRIPT_FILES = sorted(p.name for p in TRANSCRIPTS.glob("*.sse"))


@pytest.mark.parametrize("name", TRANSCRIPT_FILES)
def test_transcripts_fed_byte_by_byte(name: str) -> None:
    """PV-12: one byte at a time gives the same updates as feeding the stream whole."""
    data = transcript(name)
    whole, _ = feed_all(data)
    assert feed_all(data, list(range(len(data))))[0] == whole


@pytest.mark.parametrize("name", TRANSCRIPT_FILES)
@pytest.mark.parametrize("eol", [b"\r\n", b"\r", b"\n"])
def test_line_ending_variants_are_equal(name: str, eol: bytes) -> None:
    """PV-12: the CRLF, CR and LF variants of a transcript give equal updates."""
    lf = transcript(name).replace(b"\r\n", b"\n")
    assert feed_all(lf.replace(b"\n", eol))[0] == feed_all(lf)[0]


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(TRANSCRIPT_FILES),
    cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=60),
    crlf=st.booleans(),
)
def test_random_chunking_gives_identical_updates_and_responses(
    name: str, cuts: list[int], crlf: bool
) -> None:
    """PV-12, PV-13: any cut points give identical updates and an identical from_updates
    result."""
    lf = transcript(name).replace(b"\r\n", b"\n")
    data = lf.replace(b"\n", b"\r\n") if crlf else lf
    cuts = [c % (len(data) + 1) for c in cuts]
    whole, _ = feed_all(lf)
    pieces, decoder = feed_all(data, cuts)
    assert pieces == whole
    assert ChatResponse.from_updates(pieces) == ChatResponse.from_updates(whole)
    assert decoder.done


# -- tool-call deltas in detail ---------------------------------------------------------------


def final_calls(*chunks: Any) -> list[Content]:
    updates, _ = feed_all(sse(*chunks, "[DONE]"))
    return ChatResponse.from_updates(updates).messages[0].contents


def test_interleaved_parallel_deltas() -> None:
    """PV-13, OA-15: deltas of two calls alternating, two in one chunk, still merge per
    call."""
    calls = final_calls(
        chunk({"tool_calls": [tc(0, "c0", "f", ""), tc(1, "c1", "g", '{"b"')]}),
        chunk({"tool_calls": [tc(0, args='{"a"')]}),
        chunk({"tool_calls": [tc(1, args=": 2}"), tc(0, args=": 1}")]}),
    )
    assert calls == [
        Content.from_function_call("c0", "f", '{"a": 1}'),
        Content.from_function_call("c1", "g", '{"b": 2}'),
    ]


def test_each_delta_carries_the_call_id_and_the_name_once() -> None:
    """PV-13: later deltas carry the call id and an empty name, even when the server
    repeats it."""
    updates, _ = feed_all(
        sse(
            chunk({"tool_calls": [tc(0, "c0", "f", '{"x":')]}),
            chunk({"tool_calls": [tc(0, "c0", "f", "1}")]}),
        )
    )
    assert [(c.call_id, c.name, c.arguments) for u in updates for c in u.contents] == [
        ("c0", "f", '{"x":'),
        ("c0", "", "1}"),
    ]


def test_deltas_without_index() -> None:
    """OA-15: no index: a new id starts a call, a known id continues it, no id the last
    one."""
    calls = final_calls(
        chunk({"tool_calls": [tc(None, "a", "f", '{"q":'), tc(None, "b", "g", "{}")]}),
        chunk({"tool_calls": [tc(None, "a", args=' "x"')]}),
        chunk({"tool_calls": [tc(None, args="}")]}),
    )
    assert calls == [
        Content.from_function_call("a", "f", '{"q": "x"}'),
        Content.from_function_call("b", "g", "{}"),
    ]


def test_calls_without_ids_get_synthetic_ids_consistently() -> None:
    """OA-15, OA-11: a call whose deltas never carry an id gets call_<index>_<response
    id>."""
    calls = final_calls(
        chunk({"tool_calls": [tc(0, name="f", args="{")]}),
        chunk({"tool_calls": [tc(0, args="}")]}),
        chunk({"tool_calls": [tc(1, name="g")]}),
    )
    assert calls == [
        Content.from_function_call("call_0_chatcmpl-S", "f", "{}"),
        Content.from_function_call("call_1_chatcmpl-S", "g", ""),
    ]


def test_object_arguments_are_json_encoded() -> None:
    """OA-15: arguments sent as a JSON object are passed on as a JSON string."""
    assert final_calls(chunk({"tool_calls": [tc(0, "c", "f", {"a": 1})]})) == [
        Content.from_function_call("c", "f", '{"a": 1}')
    ]


def test_text_and_calls_in_one_stream() -> None:
    """OA-14, PV-13: text before a call stays a separate text content of the same
    message."""
    contents = final_calls(
        chunk({"role": "assistant", "content": "Checking"}),
        chunk({"content": "..."}),
        chunk({"tool_calls": [tc(0, "c", "f", "{}")]}),
    )
    assert contents == [
        Content.from_text("Checking..."),
        Content.from_function_call("c", "f", "{}"),
    ]


def test_reasoning_and_refusal_deltas() -> None:
    """OA-14, OA-11: reasoning deltas merge into one text_reasoning; refusals keep their
    flag."""
    contents = final_calls(
        chunk({"reasoning_content": "Let me "}),
        chunk({"reasoning_content": "think."}),
        chunk({"refusal": "I can't "}),
        chunk({"refusal": "do that."}),
    )
    assert contents == [
        Content.from_text_reasoning("Let me think."),
        Content.from_text("I can't do that.", additional_properties={"refusal": True}),
    ]


def test_other_choices_and_empty_chunks_give_no_update() -> None:
    """OA-14, PV-16, OA-13: other choices are ignored; no choice 0 and no usage, no
    update."""
    azure_first = {
        "id": "",
        "object": "",
        "created": 0,
        "model": "",
        "choices": [],
        "prompt_filter_results": [],
    }
    other = chunk({"content": "from choice one"})
    other["choices"][0]["index"] = 1
    updates, _ = feed_all(sse(azure_first, other, chunk({"content": "zero"}), "[DONE]"))
    assert [u.text for u in updates] == ["zero"]


def test_done_ends_the_stream_and_later_data_is_ignored() -> None:
    """OA-17, PV-15: [DONE] (whitespace ignored) sets done; later events, even bad, are
    ignored."""
    updates, decoder = feed_all(
        sse(chunk({"content": "a"}), "  [DONE] ", chunk({"content": "b"}), "{not json")
    )
    assert [u.text for u in updates] == ["a"]
    assert decoder.done


def test_stream_without_done_is_not_an_error_in_the_codec() -> None:
    """PV-15: close() without [DONE] returns what was decoded; done stays False."""
    updates, decoder = feed_all(sse(chunk({"content": "a"})))
    assert [u.text for u in updates] == ["a"]
    assert not decoder.done


def test_close_flushes_an_event_without_its_blank_line() -> None:
    """PV-15, PV-21: a last event without its blank line is still decoded by close()."""
    decoder = ChatCompletionsStreamDecoder()
    assert (
        decoder.feed(b"data: " + json.dumps(chunk({"content": "tail"})).encode()) == []
    )
    assert [u.text for u in decoder.close()] == ["tail"]


# -- errors in streams ------------------------------------------------------------------------


def test_error_object_in_stream_raises_with_fields_and_prior_updates() -> None:
    """PV-14, OA-18: an error chunk raises OpenAIStreamError carrying the earlier
    updates."""
    error = {
        "error": {
            "message": "The server had an error",
            "type": "server_error",
            "code": None,
            "param": None,
        }
    }
    decoder = ChatCompletionsStreamDecoder()
    with pytest.raises(OpenAIStreamError) as info:
        decoder.feed(sse(chunk({"content": "par"}), chunk({"content": "tial"}), error))
    err = info.value
    assert (err.message, err.type, err.code, err.param, err.body) == (
        "The server had an error",
        "server_error",
        None,
        None,
        error,
    )
    assert [u.text for u in err.updates] == ["par", "tial"]


@settings(max_examples=100, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=30))
def test_error_delivery_is_chunking_invariant(cuts: list[int]) -> None:
    """PV-14, PV-12: returned updates plus the error's updates are the same for any
    chunking."""
    data = sse(
        chunk({"content": "a"}),
        chunk({"content": "b"}),
        {"error": {"message": "boom"}},
        chunk({"content": "c"}),
    )
    decoder = ChatCompletionsStreamDecoder()
    delivered: list[ChatResponseUpdate] = []
    bounds = [0, *sorted({c % len(data) for c in cuts} - {0}), len(data)]

    def run() -> None:
        for start, end in itertools.pairwise(bounds):
            delivered.extend(decoder.feed(data[start:end]))
        decoder.close()

    with pytest.raises(OpenAIStreamError, match="boom") as info:
        run()
    delivered += info.value.updates
    assert [u.text for u in delivered] == ["a", "b"]


@pytest.mark.parametrize(
    ("data", "message", "code"),
    [
        ('{"error": "overloaded"}', "overloaded", None),
        (
            '{"object": "error", "message": "bad request", "type": "BadRequestError", "code": 400}',
            "bad request",
            400,
        ),
    ],
)
def test_other_error_shapes_in_stream(data: str, message: str, code: Any) -> None:
    """OA-18: string errors and vLLM-style error objects raise too."""
    with pytest.raises(OpenAIStreamError) as info:
        feed_all(sse(data))
    assert (info.value.message, info.value.code) == (message, code)


def test_error_event_type_raises_even_with_text_data() -> None:
    """OA-18: an SSE event of type error raises OpenAIStreamError with its data."""
    with pytest.raises(OpenAIStreamError, match="quota exhausted"):
        feed_all(b"event: error\ndata: quota exhausted\n\n")
    with pytest.raises(OpenAIStreamError, match="slow down"):
        feed_all(b'event: error\ndata: {"message": "slow down"}\n\n')


def test_malformed_json_names_the_truncated_line() -> None:
    """PV-10, OA-18: bad JSON is an OpenAIProtocolError quoting the data, cut to 200
    characters."""
    bad = '{"id": "x", "choices": [' + "y" * 500
    with pytest.raises(OpenAIProtocolError) as info:
        feed_all(sse(chunk({"content": "ok"}), bad))
    text = str(info.value)
    assert "not valid JSON" in text
    assert '{"id": "x", "choices": [yyy' in text
    assert "y" * 300 not in text
    assert len(text) < 320
    assert [u.text for u in info.value.updates] == ["ok"]


def test_non_object_chunk_is_a_protocol_error() -> None:
    """PV-10: a JSON chunk that is not an object is an OpenAIProtocolError."""
    with pytest.raises(OpenAIProtocolError, match=r"not a JSON object: '\[1, 2\]'"):
        feed_all(sse("[1, 2]"))
