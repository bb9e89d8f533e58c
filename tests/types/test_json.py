"""The JSON format of every wire type: `to_dict` / `from_dict`, unknown fields and
content kinds, `to_json` / `from_json` (spec/types.md TY-8, TY-13)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    FORMAT_VERSION,
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    SerializationError,
    UsageDetails,
)
from tests.types._strategies import (
    agent_updates,
    common_update,
    contents,
    extras,
    json_objects,
    messages,
    opt_text,
    roles,
    usage_details,
)


def is_plain_json(value: Any) -> bool:
    """True when `value` is made only of dict (str keys), list, str, int, float, bool
    and None."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(is_plain_json(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and is_plain_json(v) for k, v in value.items())
    return False


# --------------------------------------------------------------------------------------------
# TY-8: the JSON format


def test_to_dict_writes_type_version_and_omits_defaults() -> None:
    """TY-8: a type discriminator everywhere, a version on messages/responses/updates,
    defaults omitted."""
    assert Content.from_text("x").to_dict() == {"type": "text", "text": "x"}
    assert UsageDetails(input_token_count=0).to_dict() == {
        "type": "usage_details",
        "input_token_count": 0,
    }
    assert Message("user", "x").to_dict() == {
        "type": "message",
        "version": FORMAT_VERSION,
        "role": "user",
        "contents": [{"type": "text", "text": "x"}],
    }
    assert FORMAT_VERSION == 1
    assert ChatResponse().to_dict() == {
        "type": "chat_response",
        "version": 1,
        "messages": [],
    }
    assert AgentResponse().to_dict() == {
        "type": "agent_response",
        "version": 1,
        "messages": [],
    }
    assert ChatResponseUpdate().to_dict() == {
        "type": "chat_response_update",
        "version": 1,
        "contents": [],
    }
    assert AgentResponseUpdate(["x"], "assistant", agent_id="a").to_dict() == {
        "type": "agent_response_update",
        "version": 1,
        "contents": [{"type": "text", "text": "x"}],
        "role": "assistant",
        "agent_id": "a",
    }
    call = Content.from_function_call("c", "f", informational_only=False).to_dict()
    assert call == {"type": "function_call", "call_id": "c", "name": "f"}


def test_a_full_response_round_trips_through_json() -> None:
    """TY-8: from_dict(to_dict(x)) == x for a response using every content kind; the
    dict is plain JSON."""
    call = Content.from_function_call("c1", "get", {"q": "x"})
    response = ChatResponse(
        [
            Message("user", ["hi", Content.from_data(b"\x89PNG", "image/png")]),
            Message(
                "assistant",
                [
                    Content.from_text_reasoning("hmm", id="r", protected_data="p"),
                    call,
                    Content.from_function_approval_request("a1", call),
                    Content.from_usage(
                        UsageDetails(1, 2, 3, additional_counts={"x": 4})
                    ),
                ],
                author_name="bot",
                message_id="m2",
            ),
            Message(
                "tool",
                [
                    Content.from_function_result("c1", [1, {"a": None}]),
                    Content.from_function_approval_response(True, "a1", call),
                    Content.from_error("e", error_code="E", details="d"),
                    Content.from_uri("https://x.test/a"),
                ],
            ),
        ],
        response_id="r1",
        conversation_id="conv",
        model="m",
        created_at="2024-01-01T00:00:00Z",
        finish_reason="stop",
        usage_details=UsageDetails(input_token_count=5),
        additional_properties={"k": [1, 2]},
    )
    data = response.to_dict()
    assert is_plain_json(data)
    assert json.loads(json.dumps(data)) == data
    assert ChatResponse.from_dict(json.loads(json.dumps(data))) == response


def test_unknown_fields_survive_a_round_trip() -> None:
    """TY-8: unknown keys land in `extra` and are written back unchanged, at every
    level."""
    data = {
        "type": "chat_response",
        "version": 1,
        "messages": [
            {
                "type": "message",
                "version": 1,
                "role": "assistant",
                "contents": [
                    {"type": "text", "text": "hi", "footnotes": [{"url": "u"}]},
                    {
                        "type": "usage",
                        "usage_details": {
                            "type": "usage_details",
                            "output_token_count": 2,
                            "tier": "x",
                        },
                    },
                ],
                "priority": 3,
            }
        ],
        "usage_details": {"type": "usage_details", "future_count": {"a": 1}},
        "service_tier": "flex",
        "extra": {"a key": "named extra"},
        "raw_representation": "from the wire",
    }
    response = ChatResponse.from_dict(data)
    assert response.extra == {
        "service_tier": "flex",
        "extra": {"a key": "named extra"},
        "raw_representation": "from the wire",
    }
    assert response.raw_representation is None
    message = response.messages[0]
    assert message.extra == {"priority": 3}
    assert message.contents[0].extra == {"footnotes": [{"url": "u"}]}
    assert message.contents[1].usage_details == UsageDetails(
        output_token_count=2, extra={"tier": "x"}
    )
    assert response.usage_details == UsageDetails(extra={"future_count": {"a": 1}})
    assert response.to_dict() == data


def test_unknown_content_types_survive_a_round_trip() -> None:
    """TY-8: a content dict of an unknown type is kept (its unknown keys in `extra`) and
    written back."""
    data = {
        "type": "hologram",
        "uri": "holo://x",
        "frames": [1, 2],
        "meta": {"fps": 30},
    }
    c = Content.from_dict(data)
    assert c.type == "hologram"
    assert c.uri == "holo://x"
    assert c.extra == {"frames": [1, 2], "meta": {"fps": 30}}
    assert c.to_dict() == data
    m = Message.from_dict({"type": "message", "role": "user", "contents": [data]})
    assert m.to_dict()["contents"] == [data]
    update = AgentResponseUpdate.from_dict(
        {"type": "agent_response_update", "contents": [data]}
    )
    assert update.to_dict()["contents"] == [data]


def _good_message(**override: Any) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "contents": [], **override}


@pytest.mark.parametrize(
    ("cls", "data", "prefix"),
    [
        (
            ChatResponse,
            ["not", "a", "dict"],
            "chat_response: expected a JSON object, got list",
        ),
        (
            ChatResponse,
            {"type": "message"},
            "chat_response.type: expected 'chat_response', got 'message'",
        ),
        (
            ChatResponse,
            {"type": None, "messages": []},
            "chat_response.type: expected 'chat_response', got None",
        ),
        (
            ChatResponse,
            {"type": "chat_response", "version": "1"},
            "chat_response.version: expected int, got str",
        ),
        (
            ChatResponse,
            {
                "type": "chat_response",
                "messages": [
                    _good_message(),
                    _good_message(
                        contents=[{"type": "function_call", "call_id": 7, "name": "f"}]
                    ),
                ],
            },
            "chat_response.messages[1].contents[0].call_id: expected str, got int",
        ),
        (
            ChatResponse,
            {"type": "chat_response", "messages": {}},
            "chat_response.messages: expected list, got dict",
        ),
        (
            ChatResponse,
            {"type": "chat_response", "messages": ["m"]},
            "chat_response.messages[0]: expected a JSON object, got str",
        ),
        (
            ChatResponse,
            {"type": "chat_response", "model": 4},
            "chat_response.model: expected str, got int",
        ),
        (
            ChatResponse,
            {"type": "chat_response", "usage_details": {"input_token_count": "3"}},
            "chat_response.usage_details.input_token_count: expected int, got str",
        ),
        (
            ChatResponse,
            {"type": "chat_response", "usage_details": 3},
            "chat_response.usage_details: expected dict, got int",
        ),
        (
            AgentResponse,
            {"type": "agent_response", "messages": [_good_message(role="")]},
            "agent_response.messages[0].role: expected a non-empty str",
        ),
        (
            AgentResponse,
            {"type": "agent_response", "agent_id": True},
            "agent_response.agent_id: expected str, got bool",
        ),
        (
            AgentResponse,
            {"type": "agent_response", "additional_properties": [1]},
            "agent_response.additional_properties: expected dict, got list",
        ),
        (
            ChatResponseUpdate,
            {"type": "chat_response_update", "contents": [{"type": "text", "text": 1}]},
            "chat_response_update.contents[0].text: expected str, got int",
        ),
        (
            ChatResponseUpdate,
            {"type": "chat_response_update", "contents": "x"},
            "chat_response_update.contents: expected list, got str",
        ),
        (
            AgentResponseUpdate,
            {"type": "agent_response_update", "role": 1},
            "agent_response_update.role: expected str, got int",
        ),
        (
            AgentResponseUpdate,
            {"type": "agent_response_update", "contents": [3]},
            "agent_response_update.contents[0]: expected a JSON object, got int",
        ),
        (
            Message,
            {"type": "message", "contents": []},
            "message.role: expected a non-empty str, got None",
        ),
        (
            Message,
            _good_message(contents=[{"text": "no type"}]),
            "message.contents[0].type: expected a content type name",
        ),
        (
            Message,
            _good_message(author_name=["x"]),
            "message.author_name: expected str, got list",
        ),
        (
            Message,
            _good_message(additional_properties="x"),
            "message.additional_properties: expected dict, got str",
        ),
        (Content, {"type": ""}, "content.type: expected a content type name"),
        (
            Content,
            {"type": "function_call", "arguments": 5},
            "content.arguments: expected str or dict, got int",
        ),
        (
            Content,
            {"type": "function_approval_response", "approved": 1},
            "content.approved: expected bool, got int",
        ),
        (
            Content,
            {
                "type": "function_approval_request",
                "function_call": {"type": "function_call", "name": 3},
            },
            "content.function_call.name: expected str, got int",
        ),
        (
            Content,
            {"type": "function_approval_request", "function_call": "c"},
            "content.function_call: expected dict, got str",
        ),
        (
            Content,
            {"type": "usage", "usage_details": {"output_token_count": True}},
            "content.usage_details.output_token_count: expected int, got bool",
        ),
        (
            Content,
            {"type": "function_call", "informational_only": "yes"},
            "content.informational_only: expected bool, got str",
        ),
        (
            UsageDetails,
            {"additional_counts": {"k": "1"}},
            "usage_details.additional_counts.k: expected int",
        ),
        (
            UsageDetails,
            {"additional_counts": [1]},
            "usage_details.additional_counts: expected dict, got list",
        ),
        (
            UsageDetails,
            {"total_token_count": 1.5},
            "usage_details.total_token_count: expected int, got float",
        ),
    ],
)
def test_from_dict_errors_start_with_the_path(cls: Any, data: Any, prefix: str) -> None:
    """TY-8: wrong-shape data is a SerializationError whose message starts with the
    field's path."""
    with pytest.raises(SerializationError) as info:
        cls.from_dict(data)
    assert str(info.value).startswith(prefix), str(info.value)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(info.value.path + ": ")


# --------------------------------------------------------------------------------------------
# Hypothesis strategies for every wire type.


common_response = {
    "response_id": opt_text,
    "created_at": opt_text,
    "finish_reason": opt_text,
    "usage_details": st.none() | usage_details,
    "additional_properties": json_objects,
    "extra": extras,
}
chat_responses = st.builds(
    ChatResponse,
    st.lists(messages, max_size=3),
    conversation_id=opt_text,
    model=opt_text,
    **common_response,
)
agent_responses = st.builds(
    AgentResponse, st.lists(messages, max_size=3), agent_id=opt_text, **common_response
)
chat_updates = st.builds(
    ChatResponseUpdate,
    st.lists(contents, max_size=3),
    st.none() | roles,
    conversation_id=opt_text,
    model=opt_text,
    **common_update,
)
wire_objects = st.one_of(
    contents,
    usage_details,
    messages,
    chat_responses,
    agent_responses,
    chat_updates,
    agent_updates,
)


@settings(max_examples=150, deadline=None)
@given(obj=wire_objects)
def test_every_type_round_trips_through_plain_json(obj: Any) -> None:
    """TY-8: from_dict(to_dict(x)) == x for every type, including nested calls, usage,
    unknown fields and unknown content types; to_dict() is plain JSON data with a type
    discriminator."""
    data = obj.to_dict()
    assert is_plain_json(data)
    assert json.loads(json.dumps(data)) == data
    assert isinstance(data["type"], str)
    if not isinstance(obj, Content | UsageDetails):
        assert data["version"] == FORMAT_VERSION
    back = type(obj).from_dict(json.loads(json.dumps(data)))
    assert back == obj
    assert back.to_dict() == data


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


@pytest.mark.parametrize(
    "value",
    [
        Message("user", ["hi"], author_name="a"),
        Content.from_function_call("c1", "f", '{"a": 1}'),
        ChatResponse([Message("assistant", ["x"])], response_id="r"),
        AgentResponse([Message("assistant", ["x"])], agent_id="g"),
        ChatResponseUpdate(["x"], "assistant"),
        AgentResponseUpdate(["x"], "assistant"),
        UsageDetails(1, 2),
    ],
)
def test_to_json_round_trips(value):
    """TY-13: to_json(**json.dumps kwargs) and from_json round-trip every wire type."""
    text = value.to_json(indent=2)
    assert json.loads(text) == value.to_dict()
    assert "\n  " in text
    assert type(value).from_json(text) == value


def test_from_json_rejects_text_that_is_not_json():
    """TY-13: a SerializationError, not a JSONDecodeError."""
    from minagent import SerializationError

    with pytest.raises(SerializationError, match="not JSON"):
        Message.from_json("{nope")
