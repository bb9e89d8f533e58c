"""Contents, messages, responses, updates and their JSON format (spec/types.md,
TY-*)."""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import json
from dataclasses import replace
from itertools import pairwise
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
    ContentError,
    Message,
    SerializationError,
    UsageDetails,
    normalize_messages,
)

COUNT_FIELDS = (
    "input_token_count",
    "output_token_count",
    "total_token_count",
    "cache_read_input_token_count",
    "cache_creation_input_token_count",
    "reasoning_output_token_count",
)

# Every field of Content that a factory may set; the rest must stay at their defaults.
CONTENT_DEFAULTS: dict[str, Any] = {
    "text": None,
    "id": None,
    "call_id": None,
    "name": None,
    "arguments": None,
    "result": None,
    "exception": None,
    "uri": None,
    "media_type": None,
    "message": None,
    "error_code": None,
    "details": None,
    "usage_details": None,
    "approved": None,
    "function_call": None,
    "protected_data": None,
    "informational_only": False,
    "user_input_request": False,
    "additional_properties": {},
    "extra": {},
    "raw_representation": None,
}


def assert_fields(content: Content, type_: str, **expected: Any) -> None:
    """`content` has the given type and fields, and every other field at its default."""
    assert content.type == type_
    for name, default in CONTENT_DEFAULTS.items():
        want = expected.get(name, default)
        assert getattr(content, name) == want, name


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
# TY-1 .. TY-4: Content


def test_from_text_sets_text_only() -> None:
    """TY-1: from_text builds a `text` content holding only `text`."""
    assert_fields(Content.from_text("hello"), "text", text="hello")
    with pytest.raises(ContentError):
        Content.from_text(3)  # type: ignore[arg-type]


def test_from_text_reasoning_sets_text_id_and_protected_data() -> None:
    """TY-1: from_text_reasoning uses `text`, `id` and `protected_data`."""
    c = Content.from_text_reasoning("thinking", id="r1", protected_data="opaque")
    assert_fields(
        c, "text_reasoning", text="thinking", id="r1", protected_data="opaque"
    )
    assert_fields(Content.from_text_reasoning(), "text_reasoning")


def test_from_data_builds_a_base64_data_uri() -> None:
    """TY-1, TY-3: from_data encodes the bytes in a base64 `data:` URI and keeps the
    media type."""
    c = Content.from_data(b"\x00\x01hi", "application/octet-stream")
    encoded = base64.b64encode(b"\x00\x01hi").decode()
    assert_fields(
        c,
        "data",
        uri=f"data:application/octet-stream;base64,{encoded}",
        media_type="application/octet-stream",
    )
    assert c.data == b"\x00\x01hi"
    assert Content.from_data(bytearray(b"ab"), "x/y").data == b"ab"


def test_from_uri_builds_a_uri_content() -> None:
    """TY-1, TY-3: from_uri with a non-data scheme gives a `uri` content; `.data` is
    None."""
    c = Content.from_uri("https://example.com/a.png", "image/png")
    assert_fields(c, "uri", uri="https://example.com/a.png", media_type="image/png")
    assert c.data is None
    assert_fields(Content.from_uri("s3://bucket/key"), "uri", uri="s3://bucket/key")


def test_from_error_sets_message_code_and_details() -> None:
    """TY-1: from_error uses `message`, `error_code` and `details`."""
    c = Content.from_error("boom", error_code="E42", details="stack")
    assert_fields(c, "error", message="boom", error_code="E42", details="stack")
    assert_fields(Content.from_error("only"), "error", message="only")


def test_from_usage_holds_the_usage_details() -> None:
    """TY-1: from_usage wraps a UsageDetails in `usage_details`."""
    usage = UsageDetails(input_token_count=3, output_token_count=4)
    assert_fields(Content.from_usage(usage), "usage", usage_details=usage)


def test_from_function_call_fields() -> None:
    """TY-1: from_function_call uses call_id, name, arguments (str or dict), exception,
    informational_only."""
    assert_fields(
        Content.from_function_call("c1", "f"), "function_call", call_id="c1", name="f"
    )
    c = Content.from_function_call(
        "c1", "f", '{"a": 1}', exception="bad", informational_only=True
    )
    assert_fields(
        c,
        "function_call",
        call_id="c1",
        name="f",
        arguments='{"a": 1}',
        exception="bad",
        informational_only=True,
    )
    given_args = {"a": [1, 2]}
    c = Content.from_function_call("c2", "g", given_args)
    assert_fields(c, "function_call", call_id="c2", name="g", arguments={"a": [1, 2]})


def test_from_function_result_fields() -> None:
    """TY-1: from_function_result uses call_id, result (a JSON value) and exception
    (str)."""
    c = Content.from_function_result("c1", {"temp": 20})
    assert_fields(c, "function_result", call_id="c1", result={"temp": 20})
    c = Content.from_function_result("c1", exception="ValueError: no")
    assert_fields(c, "function_result", call_id="c1", exception="ValueError: no")


def test_from_function_approval_request_flags_user_input() -> None:
    """TY-1: an approval request has id, function_call and user_input_request=True."""
    call = Content.from_function_call("c1", "delete", {"path": "/"})
    c = Content.from_function_approval_request("req1", call)
    assert_fields(
        c,
        "function_approval_request",
        id="req1",
        function_call=call,
        user_input_request=True,
    )
    with pytest.raises(ContentError):
        Content.from_function_approval_request("req1", Content.from_text("not a call"))


def test_from_function_approval_response_fields() -> None:
    """TY-1: an approval response has approved, id and function_call (not a user input
    request)."""
    call = Content.from_function_call("c1", "delete")
    c = Content.from_function_approval_response(False, "req1", call)
    assert_fields(
        c, "function_approval_response", approved=False, id="req1", function_call=call
    )
    answer = Content.from_function_approval_request(
        "req1", call
    ).to_function_approval_response(True)
    assert_fields(
        answer,
        "function_approval_response",
        approved=True,
        id="req1",
        function_call=call,
    )
    with pytest.raises(ContentError):
        Content.from_function_approval_response(True, "req1", "call")  # type: ignore[arg-type]


def test_every_content_has_metadata_extra_and_raw_representation() -> None:
    """TY-1: every content has additional_properties, extra and raw_representation."""
    c = Content.from_text(
        "x", additional_properties={"k": 1}, raw_representation=object()
    )
    assert c.additional_properties == {"k": 1}
    assert c.extra == {}
    assert c.raw_representation is not None
    assert "raw_representation" not in c.to_dict()


def test_contents_compare_equal_ignoring_raw_representation() -> None:
    """TY-2: equality ignores raw_representation and looks at every other field."""
    a = Content.from_text("x", raw_representation={"provider": 1})
    b = Content.from_text("x", raw_representation=object())
    assert a == b
    assert Content.from_text("x") != Content.from_text("y")
    assert Content.from_text("x") != Content.from_text(
        "x", additional_properties={"k": 1}
    )
    assert Content.from_text("x") != Content("text", text="x", extra={"new": 1})
    assert Content.from_text("x") != Content("text_reasoning", text="x")
    call = Content.from_function_call("c", "f", "{}")
    assert call == Content.from_function_call("c", "f", "{}", raw_representation="raw")
    assert call != Content.from_function_call("c", "f", "{}", informational_only=True)


@pytest.mark.parametrize("uri", ["no-scheme", ":empty", "", "a b:c", 42, None])
def test_from_uri_needs_a_scheme(uri: Any) -> None:
    """TY-3: from_uri without a URI scheme is a ContentError."""
    with pytest.raises(ContentError):
        Content.from_uri(uri)


def test_from_uri_with_a_data_uri_gives_data_content() -> None:
    """TY-3: a `data:` URI gives a data content, media type from the URI unless given;
    .data decodes."""
    uri = "data:text/plain;base64," + base64.b64encode(b"hi there").decode()
    c = Content.from_uri(uri)
    assert_fields(c, "data", uri=uri, media_type="text/plain")
    assert c.data == b"hi there"
    assert Content.from_uri(uri, "text/markdown").media_type == "text/markdown"
    assert Content.from_uri("data:text/plain,hello").data == b"hello"


@pytest.mark.parametrize("value", ["text", 3, None, [1, 2], memoryview(b"x")])
def test_from_data_needs_bytes(value: Any) -> None:
    """TY-3: from_data with anything but bytes is a ContentError."""
    with pytest.raises(ContentError, match="bytes"):
        Content.from_data(value, "application/octet-stream")


def test_data_with_invalid_base64_is_a_content_error() -> None:
    """TY-3: decoding a data URI whose payload is not base64 is a ContentError."""
    with pytest.raises(ContentError, match="base64"):
        _ = Content.from_uri("data:text/plain;base64,@@@").data


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (None, None),
        ("", {}),
        ('{"a": 1, "b": [true, null]}', {"a": 1, "b": [True, None]}),
        ({"x": "y"}, {"x": "y"}),
        ("{}", {}),
    ],
)
def test_parse_arguments(arguments: Any, expected: Any) -> None:
    """TY-4: None stays None, "" is {}, a dict as is, a JSON object string decoded."""
    call = Content.from_function_call("c", "f", arguments)
    assert call.parse_arguments() == expected


def test_parse_arguments_returns_a_dict_as_is() -> None:
    """TY-4: dict arguments are returned as they are."""
    call = Content("function_call", call_id="c", name="f", arguments={"k": 1})
    assert call.parse_arguments() is call.arguments


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ('{"a": ', "not valid JSON"),
        ("nope", "not valid JSON"),
        ("[1, 2]", "JSON object, got list"),
        ('"text"', "JSON object, got str"),
        ("3", "JSON object, got int"),
        ("null", "JSON object, got NoneType"),
    ],
)
def test_parse_arguments_errors_say_which(arguments: str, says: str) -> None:
    """TY-4: invalid JSON and JSON that is not an object are ContentErrors that say
    which."""
    with pytest.raises(ContentError, match=says):
        Content.from_function_call("c", "f", arguments).parse_arguments()


# --------------------------------------------------------------------------------------------
# TY-5 .. TY-7: Message, .text, normalize_messages


def test_message_accepts_content_str_and_dict_singly_or_in_a_sequence() -> None:
    """TY-5: contents may be Content, str or a content dict, singly or in a sequence;
    None dropped."""
    hi = Content.from_text("hi")
    as_dict = {"type": "text", "text": "hi"}
    for contents in (
        hi,
        "hi",
        as_dict,
        [hi],
        ["hi"],
        [as_dict],
        ("hi",),
        [None, "hi", None],
    ):
        m = Message("user", contents)
        assert m.contents == [hi], contents
    m = Message(
        "assistant",
        ["a", Content.from_function_call("c", "f"), {"type": "error", "message": "m"}],
    )
    assert [c.type for c in m.contents] == ["text", "function_call", "error"]
    assert Message("user").contents == []
    assert Message("user", None).contents == []
    assert Message("user", []).contents == []


def test_message_keyword_fields() -> None:
    """TY-5: author_name, message_id and additional_properties are keyword-only
    fields."""
    m = Message(
        "assistant",
        "x",
        author_name="bot",
        message_id="m1",
        additional_properties={"k": 1},
    )
    assert (m.role, m.author_name, m.message_id, m.additional_properties) == (
        "assistant",
        "bot",
        "m1",
        {"k": 1},
    )
    with pytest.raises(TypeError):
        Message("assistant", "x", "bot")  # type: ignore[misc]


@pytest.mark.parametrize("role", ["", None, 3, b"user"])
def test_message_role_must_be_a_non_empty_str(role: Any) -> None:
    """TY-5: a role that is not a non-empty str is a ContentError."""
    with pytest.raises(ContentError, match="role"):
        Message(role, "x")


@pytest.mark.parametrize(
    ("contents", "index"),
    [
        (["ok", 3], "contents[1]"),
        ([None, "ok", object()], "contents[2]"),
        ([["nested"]], "contents[0]"),
    ],
)
def test_message_rejects_other_items_naming_the_index(
    contents: Any, index: str
) -> None:
    """TY-5: a content item that is not Content, str or dict is a ContentError naming
    its index."""
    with pytest.raises(ContentError) as info:
        Message("user", contents)
    assert index in str(info.value)


@pytest.mark.parametrize("contents", [3, 2.5, object()])
def test_message_rejects_a_single_value_of_another_kind(contents: Any) -> None:
    """TY-5: a single contents value that is not Content, str, dict or a sequence is a
    ContentError."""
    with pytest.raises(ContentError, match="contents"):
        Message("user", contents)


def test_message_with_a_malformed_content_dict_is_an_error() -> None:
    """TY-5: a content dict goes through Content.from_dict, so a malformed one is
    rejected."""
    with pytest.raises(SerializationError, match=r"contents\[0\]\.text"):
        Message("user", [{"type": "text", "text": 5}])


def test_text_of_message_and_updates_concatenates_without_separator() -> None:
    """TY-6: Message.text, ChatResponseUpdate.text, AgentResponseUpdate.text join text
    contents with no separator."""
    parts = [
        Content.from_text("Hel"),
        Content.from_function_call("c", "f"),
        Content.from_text("lo "),
        Content.from_text_reasoning("ignored"),
        Content.from_text(" world\n"),
    ]
    assert Message("assistant", parts).text == "Hello  world\n"
    assert ChatResponseUpdate(parts).text == "Hello  world\n"
    assert AgentResponseUpdate(parts).text == "Hello  world\n"
    no_text = [Content.from_function_call("c", "f")]
    assert Message("assistant", no_text).text == ""
    assert ChatResponseUpdate(no_text).text == ""
    assert AgentResponseUpdate([]).text == ""


def test_text_of_responses_joins_messages_with_newline() -> None:
    """TY-6: ChatResponse.text joins the .text of messages that have text with "\\n";
    AgentResponse.text concatenates them with no separator (upstream's rule)."""
    messages = [
        Message("assistant", [" first ", "part"]),
        Message("assistant", [Content.from_function_call("c", "f")]),
        Message("tool", [Content.from_function_result("c", 1)]),
        Message("assistant", ["second  "]),
    ]
    assert ChatResponse(messages).text == " first part\nsecond  "
    # no separator, as upstream
    assert AgentResponse(messages).text == " first partsecond  "
    assert ChatResponse([]).text == ""
    assert AgentResponse([Message("assistant", [])]).text == ""


def test_text_of_a_streamed_message_reads_the_same_as_merged() -> None:
    """TY-6: the updates' texts concatenated equal the merged message's text."""
    updates = [
        ChatResponseUpdate([t], "assistant") for t in ["Hel", "lo", " ", "there"]
    ]
    assert (
        "".join(u.text for u in updates)
        == ChatResponse.from_updates(updates).text
        == "Hello there"
    )


def test_normalize_messages_none_str_content_message() -> None:
    """TY-7: None -> [], a str or Content -> one user message, a Message -> itself."""
    assert normalize_messages(None) == []
    assert normalize_messages("hi") == [Message("user", ["hi"])]
    c = Content.from_data(b"x", "image/png")
    assert normalize_messages(c) == [Message("user", [c])]
    m = Message("system", "be brief")
    out = normalize_messages(m)
    assert out == [m]
    assert out[0] is m


def test_normalize_messages_sequence_keeps_order() -> None:
    """TY-7: each item of a sequence is normalised in order; a str or Content becomes
    its own user message."""
    m = Message("assistant", "a")
    c = Content.from_text("c")
    out = normalize_messages(["one", m, c, "two"])
    assert out == [
        Message("user", "one"),
        m,
        Message("user", [c]),
        Message("user", "two"),
    ]
    assert out[1] is m
    assert normalize_messages([]) == []
    assert normalize_messages(("x",)) == [Message("user", "x")]


@pytest.mark.parametrize(
    ("value", "says"), [(3, "int"), ({"role": "user"}, "dict"), (b"raw", "bytes")]
)
def test_normalize_messages_rejects_other_types(value: Any, says: str) -> None:
    """TY-7: anything else is a ContentError naming the type."""
    with pytest.raises(ContentError, match=says):
        normalize_messages(value)


def test_normalize_messages_names_the_bad_index() -> None:
    """TY-7: an item of the wrong type is a ContentError naming the type and index."""
    with pytest.raises(ContentError, match=r"messages\[2\].*dict"):
        normalize_messages(["a", Message("user", "b"), {"role": "user"}])
    with pytest.raises(ContentError, match=r"messages\[0\].*NoneType"):
        normalize_messages([None])


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

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=3)
# Unknown keys: prefixed so they never collide with a known field name.
extras = st.dictionaries(
    st.text(max_size=6).map(lambda s: "x_" + s), json_values, max_size=2
)
opt_text = st.none() | st.text(max_size=8)
opt_count = st.none() | st.integers(min_value=0, max_value=10**9)

usage_details = st.builds(
    UsageDetails,
    input_token_count=opt_count,
    output_token_count=opt_count,
    total_token_count=opt_count,
    cache_read_input_token_count=opt_count,
    cache_creation_input_token_count=opt_count,
    reasoning_output_token_count=opt_count,
    additional_counts=st.dictionaries(
        st.text(max_size=5), st.integers(0, 1000), max_size=2
    ),
    extra=extras,
)
function_calls = st.builds(
    Content.from_function_call,
    st.text(max_size=6),
    st.text(max_size=6),
    st.none() | st.text(max_size=12) | json_objects,
    exception=opt_text,
    informational_only=st.booleans(),
)
media_types = st.sampled_from(["image/png", "text/plain", "application/octet-stream"])
known_contents = st.one_of(
    st.builds(Content.from_text, st.text(max_size=10)),
    st.builds(
        Content.from_text_reasoning, opt_text, id=opt_text, protected_data=opt_text
    ),
    st.builds(Content.from_data, st.binary(max_size=12), media_types),
    st.builds(
        Content.from_uri,
        st.sampled_from(["https://a.test/x", "s3://b/k", "file:///tmp/f"]),
        st.none() | media_types,
    ),
    st.builds(
        Content.from_error, st.text(max_size=8), error_code=opt_text, details=opt_text
    ),
    st.builds(Content.from_usage, usage_details),
    function_calls,
    st.builds(Content.from_function_result, st.text(max_size=6), json_values, opt_text),
    st.builds(
        Content.from_function_approval_request, st.text(max_size=6), function_calls
    ),
    st.builds(
        Content.from_function_approval_response,
        st.booleans(),
        st.text(max_size=6),
        function_calls,
    ),
)
unknown_contents = st.builds(
    lambda kind, text, uri: Content(kind, text=text, uri=uri),
    st.sampled_from(["hologram", "video_v2", "x-future"]),
    opt_text,
    st.none() | st.just("holo://x"),
)
contents = st.builds(
    lambda c, props, extra: replace(c, additional_properties=props, extra=extra),
    known_contents | unknown_contents,
    json_objects,
    extras,
)
roles = st.sampled_from(["user", "assistant", "system", "tool"]) | st.text(
    min_size=1, max_size=5
)
messages = st.builds(
    lambda role, cs, author, mid, props, extra: Message(
        role,
        cs,
        author_name=author,
        message_id=mid,
        additional_properties=props,
        extra=extra,
    ),
    roles,
    st.lists(contents, max_size=3),
    opt_text,
    opt_text,
    json_objects,
    extras,
)
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
common_update = {
    "author_name": opt_text,
    "response_id": opt_text,
    "message_id": opt_text,
    "created_at": opt_text,
    "finish_reason": opt_text,
    "additional_properties": json_objects,
    "extra": extras,
}
chat_updates = st.builds(
    ChatResponseUpdate,
    st.lists(contents, max_size=3),
    st.none() | roles,
    conversation_id=opt_text,
    model=opt_text,
    **common_update,
)
agent_updates = st.builds(
    AgentResponseUpdate,
    st.lists(contents, max_size=3),
    st.none() | roles,
    agent_id=opt_text,
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


# --------------------------------------------------------------------------------------------
# TY-9: responses and updates


def test_chat_response_constructor_fields() -> None:
    """TY-9: ChatResponse(messages=[...]) with keyword-only response fields."""
    usage = UsageDetails(total_token_count=3)
    r = ChatResponse(
        messages=[Message("assistant", "x")],
        response_id="r",
        conversation_id="c",
        model="m",
        created_at="t",
        finish_reason="stop",
        usage_details=usage,
        additional_properties={"k": 1},
    )
    assert r.messages == [Message("assistant", "x")]
    assert (
        r.response_id,
        r.conversation_id,
        r.model,
        r.created_at,
        r.finish_reason,
    ) == (
        "r",
        "c",
        "m",
        "t",
        "stop",
    )
    assert r.usage_details is usage
    assert r.additional_properties == {"k": 1}
    assert ChatResponse().messages == []
    assert ChatResponse(Message("assistant", "x")).messages == [
        Message("assistant", "x")
    ]
    with pytest.raises(TypeError):
        ChatResponse([], "r")  # type: ignore[misc]
    with pytest.raises(ContentError):
        ChatResponse(["not a message"])  # type: ignore[list-item]


def test_agent_response_has_agent_id_instead_of_conversation_and_model() -> None:
    """TY-9: AgentResponse has agent_id and no conversation_id or model."""
    r = AgentResponse(
        messages=[Message("assistant", "x")], agent_id="a", response_id="r"
    )
    assert (r.agent_id, r.response_id) == ("a", "r")
    for name in ("conversation_id", "model"):
        with pytest.raises(TypeError):
            AgentResponse(**{name: "x"})


def test_update_constructors() -> None:
    """TY-9: ChatResponseUpdate(contents, role, *, ...) and AgentResponseUpdate with
    agent_id."""
    u = ChatResponseUpdate(
        contents=[Content.from_text("x")],
        role="assistant",
        author_name="bot",
        response_id="r",
        message_id="m",
        conversation_id="c",
        model="gpt",
        created_at="t",
        finish_reason="stop",
        additional_properties={"k": 1},
    )
    assert (u.contents, u.role, u.author_name, u.message_id, u.model) == (
        [Content.from_text("x")],
        "assistant",
        "bot",
        "m",
        "gpt",
    )
    assert (u.response_id, u.conversation_id, u.created_at, u.finish_reason) == (
        "r",
        "c",
        "t",
        "stop",
    )
    a = AgentResponseUpdate(["x"], "assistant", agent_id="ag", message_id="m")
    assert (a.contents, a.role, a.agent_id, a.message_id) == (
        [Content.from_text("x")],
        "assistant",
        "ag",
        "m",
    )
    assert ChatResponseUpdate().contents == []
    assert ChatResponseUpdate().role is None
    with pytest.raises(TypeError):
        ChatResponseUpdate([], "assistant", "bot")  # type: ignore[misc]
    with pytest.raises(TypeError):
        AgentResponseUpdate(model="m")  # type: ignore[call-arg]


def test_user_input_requests_lists_flagged_contents_in_order() -> None:
    """TY-9: user_input_requests is every content flagged user_input_request, in
    order."""
    c1 = Content.from_function_call("c1", "a")
    c2 = Content.from_function_call("c2", "b")
    r1 = Content.from_function_approval_request("r1", c1)
    r2 = Content.from_function_approval_request("r2", c2)
    custom = Content("hologram", user_input_request=True)
    messages = [
        Message("assistant", ["x", r1, c1]),
        Message("assistant", [Content.from_function_approval_response(True, "r0", c2)]),
        Message("assistant", [custom, r2]),
    ]
    assert ChatResponse(messages).user_input_requests == [r1, custom, r2]
    assert AgentResponse(messages).user_input_requests == [r1, custom, r2]
    assert ChatResponse([Message("assistant", "x")]).user_input_requests == []


# --------------------------------------------------------------------------------------------
# TY-10 .. TY-11: from_updates


def test_from_updates_message_boundaries() -> None:
    """TY-10: a new message starts on the first update, a role change, or differing
    message ids."""
    updates = [
        ChatResponseUpdate(["a"]),  # no message yet: assistant
        ChatResponseUpdate(["b"], "assistant"),  # same role: continues
        # sets the id on the current message
        ChatResponseUpdate(["c"], message_id="m1"),
        ChatResponseUpdate(["d"], message_id="m1"),
        ChatResponseUpdate(["e"], message_id="m2"),  # differing ids: new message
        ChatResponseUpdate(["f"]),  # no role, no id: continues
        # role change
        ChatResponseUpdate([Content.from_function_result("c", 1)], "tool"),
        ChatResponseUpdate(["g"], "tool", author_name="fn"),
        ChatResponseUpdate(["h"], "assistant", author_name="bot", message_id="m3"),
    ]
    r = ChatResponse.from_updates(updates)
    assert r.messages == [
        Message("assistant", ["abcd"], message_id="m1"),
        Message("assistant", ["ef"], message_id="m2"),
        Message("tool", [Content.from_function_result("c", 1), "g"], author_name="fn"),
        Message("assistant", ["h"], author_name="bot", message_id="m3"),
    ]
    assert AgentResponse.from_updates(updates).messages == r.messages
    assert ChatResponse.from_updates([]) == ChatResponse()


def test_from_updates_merges_reasoning_by_id() -> None:
    """TY-10: adjacent text_reasoning with equal or missing ids concatenate; other
    adjacent kinds do not."""
    updates = [
        ChatResponseUpdate([Content.from_text_reasoning("a", id="r1")], "assistant"),
        ChatResponseUpdate([Content.from_text_reasoning("b")]),
        ChatResponseUpdate(
            [Content.from_text_reasoning("c", id="r1", protected_data="p")]
        ),
        ChatResponseUpdate([Content.from_text_reasoning("d", id="r2")]),
        ChatResponseUpdate(["x"]),
        ChatResponseUpdate([Content.from_text_reasoning("e", id="r2")]),
        ChatResponseUpdate(["y"]),
    ]
    assert ChatResponse.from_updates(updates).messages[0].contents == [
        Content.from_text_reasoning("abc", id="r1", protected_data="p"),
        Content.from_text_reasoning("d", id="r2"),
        Content.from_text("x"),
        Content.from_text_reasoning("e", id="r2"),
        Content.from_text("y"),
    ]


def test_from_updates_merges_calls() -> None:
    """TY-10: a call delta merges into the latest call with its call_id; no call_id
    continues the latest call; string arguments concatenate, dict arguments merge; first
    non-empty call_id, name, exception."""
    updates = [
        ChatResponseUpdate([Content.from_function_call("a", "f", '{"x"')], "assistant"),
        ChatResponseUpdate([Content.from_function_call("b", "g", {"k": 1})]),
        ChatResponseUpdate(
            [Content("function_call", call_id="a", arguments=": 1}", exception="late")]
        ),
        ChatResponseUpdate(
            [Content("function_call", arguments={"j": 2}, name="ignored")]
        ),
        ChatResponseUpdate(
            [Content.from_function_call("b", "", {"k": 3}, exception="first")]
        ),
        ChatResponseUpdate([Content("function_call", call_id="b", exception="second")]),
    ]
    merged = ChatResponse.from_updates(updates).messages[0].contents
    assert merged == [
        Content.from_function_call("a", "f", '{"x": 1}', exception="late"),
        Content.from_function_call("b", "g", {"k": 3, "j": 2}, exception="first"),
    ]


@st.composite
def splits(draw: st.DrawFn, whole: str) -> list[str]:
    """`whole` cut at random points (repeated cuts give empty chunks)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(whole)), max_size=6)))
    bounds = [0, *cuts, len(whole)]
    return [whole[a:b] for a, b in pairwise(bounds)]


@st.composite
def groups(draw: st.DrawFn, items: list[Any]) -> list[list[Any]]:
    """`items` in order, grouped into consecutive non-empty runs (the contents of one
    update each)."""
    out: list[list[Any]] = []
    for item in items:
        if not out or draw(st.booleans()):
            out.append([])
        out[-1].append(item)
    return out


PAIRS = st.sampled_from(
    [(ChatResponseUpdate, ChatResponse), (AgentResponseUpdate, AgentResponse)]
)


@settings(max_examples=100, deadline=None)
@given(
    data=st.data(), text=st.text(max_size=30), role_on_every=st.booleans(), pair=PAIRS
)
def test_any_split_of_a_text_merges_to_the_unsplit_response(
    data: st.DataObject, text: str, role_on_every: bool, pair: Any
) -> None:
    """TY-10, TY-6: any split of a text into updates merges to the same response as the
    unsplit text."""
    update_cls, response_cls = pair
    chunks = data.draw(splits(text))
    updates = [
        update_cls(
            [Content.from_text(c) for c in group],
            "assistant" if i == 0 or role_on_every else None,
        )
        for i, group in enumerate(data.draw(groups(chunks)))
    ]
    whole = response_cls.from_updates(
        [update_cls([Content.from_text(text)], "assistant")]
    )
    merged = response_cls.from_updates(updates)
    assert merged == whole
    assert merged.messages == [Message("assistant", [text])]
    assert merged.text == text


json_args = st.dictionaries(st.text(max_size=5), json_values, max_size=4)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), args=json_args, call_id_on_every=st.booleans(), pair=PAIRS)
def test_any_split_of_call_arguments_merges_to_the_whole_call(
    data: st.DataObject, args: dict[str, Any], call_id_on_every: bool, pair: Any
) -> None:
    """TY-10: a JSON arguments string split into deltas (call_id and name only on the
    first, or call_id on every delta) merges to the same response as the unsplit
    call."""
    update_cls, response_cls = pair
    whole_args = json.dumps(args)
    first, *rest = data.draw(splits(whole_args))
    deltas = [Content.from_function_call("call_1", "get_weather", first)] + [
        Content(
            "function_call",
            call_id="call_1" if call_id_on_every else None,
            arguments=chunk,
        )
        for chunk in rest
    ]
    updates = [
        update_cls(group, "assistant" if i == 0 else None)
        for i, group in enumerate(data.draw(groups(deltas)))
    ]
    whole_call = Content.from_function_call("call_1", "get_weather", whole_args)
    merged = response_cls.from_updates(updates)
    assert merged == response_cls.from_updates([update_cls([whole_call], "assistant")])
    assert merged.messages == [Message("assistant", [whole_call])]
    assert merged.messages[0].contents[0].parse_arguments() == args


@settings(max_examples=100, deadline=None)
@given(data=st.data(), args_a=json_args, args_b=json_args)
def test_interleaved_deltas_of_parallel_calls_merge_to_both_calls(
    data: st.DataObject, args_a: dict[str, Any], args_b: dict[str, Any]
) -> None:
    """TY-10: interleaved deltas of two calls, each carrying its call_id, merge to the
    two full calls."""

    def deltas(call_id: str, name: str, whole: str) -> list[Content]:
        first, *rest = data.draw(splits(whole))
        return [Content.from_function_call(call_id, name, first)] + [
            Content("function_call", call_id=call_id, arguments=chunk) for chunk in rest
        ]

    a, b = json.dumps(args_a), json.dumps(args_b)
    queues = {"a": deltas("call_a", "f", a), "b": deltas("call_b", "g", b)}
    order = data.draw(
        st.permutations(["a"] * len(queues["a"]) + ["b"] * len(queues["b"]))
    )
    stream = [queues[key].pop(0) for key in order]
    updates = [
        ChatResponseUpdate(group, "assistant") for group in data.draw(groups(stream))
    ]
    full = {
        "a": Content.from_function_call("call_a", "f", a),
        "b": Content.from_function_call("call_b", "g", b),
    }
    merged = ChatResponse.from_updates(updates)
    assert merged.messages == [
        Message("assistant", [full[order[0]], full["b" if order[0] == "a" else "a"]])
    ]


def _expected_usage(usages: list[UsageDetails]) -> UsageDetails | None:
    """The field-by-field sum, computed without UsageDetails.__add__."""
    if not usages:
        return None
    counts = {}
    for name in COUNT_FIELDS:
        present = [getattr(u, name) for u in usages if getattr(u, name) is not None]
        counts[name] = sum(present) if present else None
    extra_counts: dict[str, int] = {}
    for u in usages:
        for key, value in u.additional_counts.items():
            extra_counts[key] = extra_counts.get(key, 0) + value
    return UsageDetails(**counts, additional_counts=extra_counts)


plain_usage = st.builds(
    UsageDetails,
    input_token_count=opt_count,
    output_token_count=opt_count,
    total_token_count=opt_count,
    reasoning_output_token_count=opt_count,
    additional_counts=st.dictionaries(
        st.sampled_from(["a", "b"]), st.integers(0, 100), max_size=2
    ),
)


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(
        st.lists(
            st.text(max_size=4).map(Content.from_text)
            | plain_usage.map(Content.from_usage),
            max_size=3,
        ),
        max_size=6,
    ),
    pair=PAIRS,
)
def test_usage_contents_are_summed_and_removed(
    parts: list[list[Content]], pair: Any
) -> None:
    """TY-11, TY-12: usage contents leave the messages and their sum becomes
    usage_details."""
    update_cls, response_cls = pair
    updates = [update_cls(group) for group in parts]
    merged = response_cls.from_updates(updates)
    usages = [c.usage_details for group in parts for c in group if c.type == "usage"]
    assert merged.usage_details == _expected_usage(usages)
    assert all(c.type != "usage" for m in merged.messages for c in m.contents)
    assert merged.text == "".join(
        c.text for group in parts for c in group if c.type == "text"
    )


def test_response_level_fields_take_the_last_non_none_value() -> None:
    """TY-11: response_id, conversation_id, model, created_at, finish_reason, agent_id:
    last non-None wins; additional_properties are dict-updated in order."""
    updates = [
        ChatResponseUpdate(
            ["a"],
            "assistant",
            response_id="r1",
            model="m1",
            additional_properties={"x": 1, "y": 1},
        ),
        ChatResponseUpdate(
            ["b"], conversation_id="c1", created_at="t1", additional_properties={"y": 2}
        ),
        ChatResponseUpdate(["c"], response_id="r2", finish_reason="length"),
        ChatResponseUpdate(
            ["d"], model=None, finish_reason="stop", additional_properties={"z": 3}
        ),
    ]
    r = ChatResponse.from_updates(updates)
    assert (
        r.response_id,
        r.conversation_id,
        r.model,
        r.created_at,
        r.finish_reason,
    ) == (
        "r2",
        "c1",
        "m1",
        "t1",
        "stop",
    )
    assert r.additional_properties == {"x": 1, "y": 2, "z": 3}
    agent_updates = [
        AgentResponseUpdate(["a"], agent_id="ag1", response_id="r1"),
        AgentResponseUpdate(["b"], agent_id="ag2"),
        AgentResponseUpdate(["c"], agent_id=None, created_at="t"),
    ]
    a = AgentResponse.from_updates(agent_updates)
    assert (a.agent_id, a.response_id, a.created_at, a.text) == (
        "ag2",
        "r1",
        "t",
        "abc",
    )


call_ids = st.none() | st.sampled_from(["c1", "c2"])
mergeable_contents = st.one_of(
    st.text(max_size=4).map(Content.from_text),
    st.builds(
        Content.from_text_reasoning,
        opt_text,
        id=st.none() | st.sampled_from(["r1", "r2"]),
    ),
    st.builds(
        lambda call_id, name, args, props: Content(
            "function_call",
            call_id=call_id,
            name=name,
            arguments=args,
            additional_properties=props,
        ),
        call_ids,
        st.none() | st.sampled_from(["f", "g"]),
        st.none() | st.text(max_size=4),
        st.dictionaries(st.sampled_from(["p", "q"]), st.integers(), max_size=1),
    ),
    st.builds(
        lambda call_id, args: Content("function_call", call_id=call_id, arguments=args),
        call_ids,
        st.dictionaries(st.sampled_from(["k", "j"]), st.integers(), max_size=2),
    ),
    plain_usage.map(Content.from_usage),
    st.builds(Content.from_function_result, st.sampled_from(["c1", "c2"]), json_values),
)
mergeable_updates = st.builds(
    lambda cls, cs, role, mid, props: cls(
        cs, role, message_id=mid, additional_properties=props
    ),
    st.sampled_from([ChatResponseUpdate, AgentResponseUpdate]),
    st.lists(mergeable_contents, max_size=4),
    st.none() | st.sampled_from(["assistant", "tool"]),
    st.none() | st.sampled_from(["m1", "m2"]),
    st.dictionaries(st.sampled_from(["a", "b"]), json_values, max_size=1),
)


@settings(max_examples=150, deadline=None)
@given(updates=st.lists(mergeable_updates, max_size=6))
def test_from_updates_does_not_mutate_the_updates(updates: list[Any]) -> None:
    """TY-11: from_updates never mutates the updates or their contents (deep
    comparison)."""
    before = copy.deepcopy(updates)
    dicts_before = [u.to_dict() for u in updates]
    for response_cls in (ChatResponse, AgentResponse):
        # str and dict arguments of one call cannot merge; the updates must stay intact
        # anyway
        with contextlib.suppress(ContentError):
            response_cls.from_updates(updates)
    assert updates == before
    assert [u.to_dict() for u in updates] == dicts_before


# --------------------------------------------------------------------------------------------
# TY-12: UsageDetails


def test_usage_details_fields_and_defaults() -> None:
    """TY-12: six optional counts and additional_counts; the empty usage is falsy."""
    u = UsageDetails()
    assert all(getattr(u, name) is None for name in COUNT_FIELDS)
    assert u.additional_counts == {}
    assert not u
    assert UsageDetails(input_token_count=0)
    assert UsageDetails(reasoning_output_token_count=1)
    assert UsageDetails(additional_counts={"images": 1})


def test_usage_details_addition() -> None:
    """TY-12: a + b sums field by field (None + n is n, None + None is None); additional
    counts by key."""
    a = UsageDetails(1, None, 3, None, 5, None, additional_counts={"x": 1, "y": 2})
    b = UsageDetails(10, 20, None, None, 50, 60, additional_counts={"y": 3, "z": 4})
    total = a + b
    assert total == UsageDetails(
        11, 20, 3, None, 55, 60, additional_counts={"x": 1, "y": 5, "z": 4}
    )
    # the operands are unchanged
    assert a == UsageDetails(
        1, None, 3, None, 5, None, additional_counts={"x": 1, "y": 2}
    )
    assert b.additional_counts == {"y": 3, "z": 4}
    assert a + None == a
    assert None + a == a
    assert (a + None) is not a
    assert UsageDetails() + UsageDetails() == UsageDetails()
    assert not (UsageDetails() + UsageDetails())


@settings(max_examples=100, deadline=None)
@given(usages=st.lists(plain_usage, min_size=1, max_size=4))
def test_usage_sum_matches_field_by_field_arithmetic(
    usages: list[UsageDetails],
) -> None:
    """TY-12: summing with + equals the independently computed field-by-field sum."""
    total = usages[0]
    for u in usages[1:]:
        total = total + u
    assert total == _expected_usage(usages)
    assert bool(total) == any(bool(u) for u in usages)


def test_with_contents_copies_the_metadata() -> None:
    """TY-5: with_contents gives a new message with the same role and metadata; the
    original stays."""
    original = Message(
        "assistant",
        ["a"],
        author_name="bot",
        message_id="m1",
        additional_properties={"k": 1},
    )
    copy = original.with_contents([Content.from_text("b")])
    assert (
        copy.role,
        copy.author_name,
        copy.message_id,
        copy.additional_properties,
    ) == (
        "assistant",
        "bot",
        "m1",
        {"k": 1},
    )
    assert copy.text == "b"
    assert original.text == "a"
    assert copy.additional_properties is not original.additional_properties


def test_as_updates_round_trips_through_from_updates() -> None:
    """TY-9, TY-10: as_updates is what a stream of the response carries; merging it
    gives the response back."""
    from minagent import ChatResponse, UsageDetails

    response = ChatResponse(
        [
            Message(
                "assistant",
                [
                    Content.from_text("hi"),
                    Content.from_function_call("c1", "f", '{"a": 1}'),
                ],
            ),
            Message("tool", [Content.from_function_result("c1", 2)]),
            Message("assistant", ["done"], author_name="bot"),
        ],
        response_id="r1",
        conversation_id="conv",
        model="m",
        created_at="2026-01-01T00:00:00Z",
        finish_reason="stop",
        usage_details=UsageDetails(input_token_count=3, output_token_count=4),
        additional_properties={"k": "v"},
    )
    updates = response.as_updates()
    assert [u.role for u in updates] == ["assistant", "tool", "assistant", None]
    assert [u.finish_reason for u in updates] == [None, None, "stop", None]
    assert updates[-1].contents == [
        Content.from_usage(UsageDetails(input_token_count=3, output_token_count=4))
    ]
    assert ChatResponse.from_updates(updates) == response


def test_from_chat_update_equals_the_constructed_update() -> None:
    """TY-9: AgentResponseUpdate.from_chat_update fills every field as the constructor
    would."""
    from dataclasses import fields

    from minagent import AgentResponseUpdate, ChatResponseUpdate

    chat = ChatResponseUpdate(
        [Content.from_text("x")],
        "assistant",
        response_id="r",
        message_id="m",
        conversation_id="c",
        model="gpt",
        created_at="t",
        finish_reason="stop",
        additional_properties={"k": 1},
        extra={"future": True},
    )
    fast = AgentResponseUpdate.from_chat_update(chat, agent_id="a", author_name="bot")
    slow = AgentResponseUpdate(
        [Content.from_text("x")],
        "assistant",
        author_name="bot",
        response_id="r",
        message_id="m",
        agent_id="a",
        created_at="t",
        finish_reason="stop",
        additional_properties={"k": 1},
        extra={"future": True},
    )
    assert fast == slow
    assert set(vars(fast)) == {f.name for f in fields(AgentResponseUpdate)}
    assert fast.raw_representation is chat


@given(
    counts=st.dictionaries(
        st.sampled_from(
            [
                "input_token_count",
                "output_token_count",
                "total_token_count",
                "tool_calls",
            ]
        ),
        st.integers(0, 10**6),
    )
)
def test_usage_details_from_one_mapping_or_pairs_as_dict_takes_them(
    counts: dict[str, int],
) -> None:
    """TY-12: one mapping or iterable of pairs alone builds the usage dict() would
    (upstream's TypedDict form): the same counts as by name, never the mapping taken as
    the first count; so `dataclasses.asdict` of a usage content keeps its counts."""
    by_name = UsageDetails(**counts)
    assert UsageDetails(counts) == by_name
    assert UsageDetails(list(counts.items())) == by_name
    assert UsageDetails(counts).input_token_count == counts.get("input_token_count")
    usage = Content.from_usage(by_name)
    assert dataclasses.asdict(usage)["usage_details"] == dict(by_name)
