"""The sans-I/O Converse codec: requests, whole answers, error bodies, hostile bodies
(BR-1 .. BR-11, BR-20, PV-2, PV-3, PV-10, PV-49)."""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_bedrock import (
    BedrockProtocolError,
    ConverseCodec,
    build_request,
    finish_reason,
    parse_error,
    parse_response,
)

from minagent import Content, Message, tool
from minagent.providers import ProviderError


def body(
    messages: list[Message], options: dict[str, Any] | None = None
) -> dict[str, Any]:
    return build_request(messages, options or {}, model="m")


def test_minimal_body_has_no_model() -> None:
    """BR-1: the body is messages only; the model is the URL's."""
    assert body([Message("user", ["Hi"])]) == {
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}]
    }


def test_another_model_in_options_is_refused() -> None:
    """BR-1: options['model'] other than the client's model is a ValueError; the same
    model is fine."""
    with pytest.raises(ValueError, match="names the model in the URL"):
        body([Message("user", ["Hi"])], {"model": "other"})
    assert "model" not in body([Message("user", ["Hi"])], {"model": "m"})


def test_system_texts_and_instructions() -> None:
    """BR-2: instructions then system/developer texts, in order, as system blocks;
    instructions equal to a leading system message are not sent twice."""
    messages = [
        Message("system", ["Rule one."]),
        Message("user", ["Hi"]),
        Message("developer", ["Rule two."]),
    ]
    sent = body(messages, {"instructions": "Be kind."})
    assert sent["system"] == [
        {"text": "Be kind."},
        {"text": "Rule one."},
        {"text": "Rule two."},
    ]
    again = body(messages, {"instructions": "Rule one."})
    assert again["system"] == [{"text": "Rule one."}, {"text": "Rule two."}]
    with pytest.raises(ValueError, match="can only hold text"):
        body(
            [
                Message(
                    "system",
                    [Content.from_uri("https://x/y.png", media_type="image/png")],
                )
            ]
        )


def test_roles_merge_and_tool_results_come_first() -> None:
    """BR-3: tool results go first in a merged user turn; a result with an exception
    has status error; a dict result is json; other values JSON text."""
    messages = [
        Message("user", ["Go"]),
        Message("assistant", [Content.from_function_call("c1", "f", {"x": 1})]),
        Message("user", ["also this"]),
        Message(
            "tool",
            [
                Content.from_function_result("c1", None, exception="boom"),
                Content.from_function_result("c2", {"ok": True}),
                Content.from_function_result("c3", [1, 2]),
            ],
        ),
    ]
    sent = body(messages)
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    last = sent["messages"][2]["content"]
    assert last == [
        {
            "toolResult": {
                "toolUseId": "c1",
                "content": [{"text": "boom"}],
                "status": "error",
            }
        },
        {"toolResult": {"toolUseId": "c2", "content": [{"json": {"ok": True}}]}},
        {"toolResult": {"toolUseId": "c3", "content": [{"text": "[1, 2]"}]}},
        {"text": "also this"},
    ]
    with pytest.raises(ValueError, match="role 'critic'"):
        body([Message("critic", ["x"])])


def test_tool_use_arguments_and_skipped_contents() -> None:
    """BR-4: arguments as an object ({} when cut or not an object); empty texts,
    informational calls and reasoning are not sent."""
    messages = [
        Message(
            "assistant",
            [
                Content.from_text(""),
                Content.from_text_reasoning("thinking"),
                Content.from_function_call("a", "f", '{"k": "v"}'),
                Content.from_function_call("b", "f", '{"cut'),
                Content.from_function_call("c", "f", "[1]"),
                Content.from_function_call("d", "f", "", informational_only=True),
            ],
        )
    ]
    uses = [b["toolUse"] for b in body(messages)["messages"][0]["content"]]
    assert [(u["toolUseId"], u["input"]) for u in uses] == [
        ("a", {"k": "v"}),
        ("b", {}),
        ("c", {}),
    ]
    with pytest.raises(ValueError, match="belong in an assistant message"):
        body([Message("user", [Content.from_function_call("a", "f", "{}")])])


def test_inference_config_and_pass_through() -> None:
    """BR-5: maxTokens, temperature, topP, stopSequences; pass-through fields; extra_body
    last, None removing a key (PV-3); the options are not changed (PV-2)."""
    options: dict[str, Any] = {
        "max_tokens": 100,
        "temperature": 0.2,
        "top_p": 0.5,
        "stop": "END",
        "additionalModelRequestFields": {"top_k": 5},
        "guardrailConfig": {"guardrailIdentifier": "g", "guardrailVersion": "1"},
        "extra_body": {"serviceTier": {"type": "priority"}, "inferenceConfig": None},
    }
    before = copy.deepcopy(options)
    sent = body([Message("user", ["Hi"])], options)
    assert "inferenceConfig" not in sent
    assert sent["additionalModelRequestFields"] == {"top_k": 5}
    assert sent["serviceTier"] == {"type": "priority"}
    assert sent["guardrailConfig"]["guardrailIdentifier"] == "g"
    assert options == before
    del options["extra_body"]
    assert body([Message("user", ["Hi"])], options)["inferenceConfig"] == {
        "maxTokens": 100,
        "temperature": 0.2,
        "topP": 0.5,
        "stopSequences": ["END"],
    }
    with pytest.raises(ValueError, match="positive int"):
        body([Message("user", ["Hi"])], {"max_tokens": 0})


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return term


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"auto": {}}),
        ("required", {"any": {}}),
        (
            {"mode": "required", "required_function_name": "lookup"},
            {"tool": {"name": "lookup"}},
        ),
        ({"tool": {"name": "lookup"}}, {"tool": {"name": "lookup"}}),
    ],
)
def test_tool_config_and_choice(choice: Any, wire: dict[str, Any]) -> None:
    """BR-6: a toolSpec per tool with inputSchema.json; the tool choices."""
    sent = body([Message("user", ["Hi"])], {"tools": [lookup], "tool_choice": choice})
    spec = sent["toolConfig"]["tools"][0]["toolSpec"]
    assert spec["name"] == "lookup"
    assert spec["description"] == "Look a term up."
    assert spec["inputSchema"]["json"]["required"] == ["term"]
    assert sent["toolConfig"]["toolChoice"] == wire


def test_tool_choice_none_and_no_tools() -> None:
    """BR-6: 'none' sends no toolConfig, unless the messages hold tool blocks: then
    the tools without a toolChoice; an unknown choice is a ValueError; no tools, no
    toolConfig."""
    none = {"tools": [lookup], "tool_choice": "none"}
    assert "toolConfig" not in body([Message("user", ["Hi"])], none)
    history = [
        Message("user", ["Hi"]),
        Message(
            "assistant", [Content.from_function_call("c1", "lookup", {"term": "x"})]
        ),
        Message("tool", [Content.from_function_result("c1", "x")]),
    ]
    config = body(history, none)["toolConfig"]
    assert [t["toolSpec"]["name"] for t in config["tools"]] == ["lookup"]
    assert "toolChoice" not in config
    assert (
        "toolChoice"
        not in body(history, {**none, "tool_choice": {"mode": "none"}})["toolConfig"]
    )
    with pytest.raises(ValueError, match="unsupported tool_choice"):
        body([Message("user", ["Hi"])], {"tools": [lookup], "tool_choice": "sometimes"})
    assert "toolConfig" not in body([Message("user", ["Hi"])], {"tool_choice": "auto"})


def test_response_format() -> None:
    """BR-7: a schema is outputConfig.textFormat with the schema as JSON text; 'json' is
    refused."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    sent = body(
        [Message("user", ["Hi"])],
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "A", "schema": schema},
            }
        },
    )
    definition = sent["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert sent["outputConfig"]["textFormat"]["type"] == "json_schema"
    assert json.loads(definition["schema"]) == schema
    assert definition["name"] == "A"
    with pytest.raises(ValueError, match="no free-form JSON mode"):
        body([Message("user", ["Hi"])], {"response_format": "json"})


@pytest.mark.parametrize(
    "option", ["top_k", "seed", "frequency_penalty", "presence_penalty", "logit_bias"]
)
def test_unmapped_options_are_refused(option: str) -> None:
    """BR-8: options Converse has no place for are a ValueError naming them."""
    with pytest.raises(ValueError, match=option):
        body([Message("user", ["Hi"])], {option: 1})


def test_unmapped_contents_are_refused() -> None:
    """BR-8: media contents are not mapped yet: a ValueError naming the type."""
    image = Content.from_data(b"\x89PNG", media_type="image/png")
    with pytest.raises(
        ValueError, match="cannot be sent to Converse by minagent-bedrock yet"
    ):
        body([Message("user", [image])])


# --------------------------------------------------------------------------------------------
# Answers


def test_parse_response_text_tool_use_stop_and_usage() -> None:
    """BR-9 .. BR-11: texts merged, toolUse as a call, other blocks kept whole, the stop
    reason, usage with cache counts."""
    answer = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Hello "},
                    {"text": "there."},
                    {"reasoningContent": {"reasoningText": {"text": "hm"}}},
                    {"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {
            "inputTokens": 3,
            "outputTokens": 4,
            "totalTokens": 7,
            "cacheReadInputTokens": 2,
            "cacheWriteInputTokens": 1,
        },
    }
    response = parse_response(answer)
    contents = response.messages[0].contents
    assert [c.type for c in contents] == ["text", "bedrock_block", "function_call"]
    assert contents[0].text == "Hello there."
    assert (
        contents[1].additional_properties["bedrock_block"]
        == answer["output"]["message"]["content"][2]
    )
    assert (
        contents[2].call_id,
        contents[2].name,
        json.loads(str(contents[2].arguments)),
    ) == ("t1", "f", {"a": 1})
    assert response.finish_reason == "tool_calls"
    assert response.additional_properties["stop_reason"] == "tool_use"
    usage = response.usage_details
    assert usage is not None
    assert (
        usage.input_token_count,
        usage.output_token_count,
        usage.total_token_count,
    ) == (3, 4, 7)
    assert (
        usage.cache_read_input_token_count,
        usage.cache_creation_input_token_count,
    ) == (2, 1)


@pytest.mark.parametrize(
    ("stop", "ours"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("malformed_tool_use", "malformed_tool_use"),
        (None, None),
    ],
)
def test_finish_reasons(stop: str | None, ours: str | None) -> None:
    """BR-10: the stop reason table; unknown values as they are."""
    assert finish_reason(stop) == ours


@pytest.mark.parametrize(
    "answer",
    [
        [],
        {"output": {}},
        {"output": {"message": {"content": "x"}}},
        {"output": {"message": {"content": [5]}}},
    ],
)
def test_malformed_answers_are_protocol_errors(answer: Any) -> None:
    """BR-9, PV-10: a body without output.message.content (or with a non-object
    block) is a BedrockProtocolError."""
    with pytest.raises(BedrockProtocolError):
        ConverseCodec().decode(json.dumps(answer).encode(), None)


def test_parse_error_sources() -> None:
    """BR-20: the type from x-amzn-ErrorType or __type, the message, the request id;
    else the text; else the status phrase."""
    headers = {
        "x-amzn-ErrorType": "ThrottlingException:http://x/",
        "x-amzn-RequestId": "r1",
    }
    assert parse_error(429, b'{"message": "slow"}', headers) == (
        "ThrottlingException: slow",
        "r1",
    )
    assert parse_error(
        400, b'{"__type": "a.b#ValidationException", "Message": "m"}'
    ) == (
        "ValidationException: m",
        None,
    )
    assert parse_error(502, b"gateway sad") == ("gateway sad", None)
    assert parse_error(503, b"") == ("HTTP 503 Service Unavailable", None)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats()
            | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "output",
                            "message",
                            "content",
                            "text",
                            "toolUse",
                            "toolUseId",
                            "input",
                            "name",
                            "stopReason",
                            "usage",
                            "inputTokens",
                            "role",
                        ]
                    ),
                    inner,
                    max_size=5,
                )
            ),
            max_leaves=20,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_hostile_bodies_raise_only_typed_errors(data: bytes) -> None:
    """PV-49: any whole body decodes or raises a ProviderError; an error body never
    raises."""
    with contextlib.suppress(ProviderError):
        ConverseCodec().decode(data, None)
    message, _ = parse_error(400, data, {})
    assert isinstance(message, str)
    assert message
