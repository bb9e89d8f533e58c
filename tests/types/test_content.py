"""Contents: the factories, equality, data and URIs, call arguments (spec/types.md TY-1 ..
TY-4); upstream's other content kinds, adding chunks and copies (TY-15 .. TY-17, TY-60)."""

from __future__ import annotations

import base64
import copy
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import (
    ChatResponse,
    Content,
    ContentError,
    Message,
    UsageDetails,
)
from minagent.upstream import (
    AdditionItemMismatch,
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


def test_function_result_items_is_upstreams_view_of_the_result() -> None:
    """TY-15: a function result's `items` is its result as one text content (JSON for
    data)."""
    assert [c.text for c in Content.from_function_result("c", {"a": 1}).items] == [
        '{"a": 1}'
    ]
    assert [c.text for c in Content.from_function_result("c", "plain").items] == [
        "plain"
    ]


def test_nested_contents_in_extra_round_trip() -> None:
    """TY-15: contents nested in another kind's fields round-trip through to_dict /
    from_dict; items that are not contents are kept as they are."""
    original = Content(
        "mcp_server_tool_call", extra={"outputs": [Content.from_text("hi"), 5]}
    )
    data = original.to_dict()
    assert data["outputs"] == [{"type": "text", "text": "hi"}, 5]
    back = Content.from_dict(data)
    assert back.extra["outputs"][0] == Content.from_text("hi")
    assert back.extra["outputs"][1] == 5
    assert back.to_dict() == data


def test_only_an_approval_request_can_be_answered() -> None:
    """TY-15 (upstream's approval API): to_function_approval_response on another kind is
    a ContentError."""
    with pytest.raises(ContentError, match="only a function_approval_request"):
        Content.from_text("hi").to_function_approval_response(True)


def test_upstream_content_kinds_and_helpers():
    """TY-15: upstream's other kinds have factories whose fields read as attributes;
    `str()` of an error is upstream's; `has_top_level_media_type`, `to_dict(exclude=,
    exclude_none=)`, a parsed result's `items`, `annotations`, and `from_dict` of data
    bytes."""
    hosted = Content.from_hosted_file("file_1")
    assert (hosted.type, hosted.file_id) == ("hosted_file", "file_1")
    assert Content.from_dict(hosted.to_dict()) == hosted
    assert str(Content.from_error("Oops", error_code="E1")) == "Error E1: Oops"
    assert str(Content.from_error()) == "Unknown error"
    assert str(Content.from_text("hi")) == "hi"
    assert Content.from_uri(
        "https://x/a.png", media_type="image/png"
    ).has_top_level_media_type("IMAGE")
    with pytest.raises(ValueError, match="no media_type found"):
        Content.from_text("x").has_top_level_media_type("image")
    text = Content.from_text(
        "hi", annotations=[{"type": "citation", "url": "https://x"}]
    )
    assert text.to_dict(exclude={"type"}) == {
        "text": "hi",
        "annotations": [{"type": "citation", "url": "https://x"}],
    }
    assert text.to_dict(exclude_none=False)["call_id"] is None
    result = Content.from_function_result(
        "c", [Content.from_text("x"), Content.from_text("y")]
    )
    assert result.result == "x\ny"
    assert [c.text for c in result.items] == ["x", "y"]
    png = b"\x89PNG\r\n\x1a\n0000"
    data = Content.from_dict({"type": "data", "data": png, "media_type": "image/png"})
    assert data.uri == "data:image/png;base64," + base64.b64encode(png).decode()


def test_contents_add_as_upstream_chunks():
    """TY-16: `a + b` merges two chunks of one content: texts join, call arguments join,
    usages sum; two kinds are a `TypeError`, reasoning of two ids an
    `AdditionItemMismatch`."""
    assert (Content.from_text("a") + Content.from_text("b")).text == "ab"
    joined = Content.from_function_call("c", "f", '{"a"') + Content.from_function_call(
        "c", "", ": 1}"
    )
    assert joined.parse_arguments() == {"a": 1}
    usage = Content.from_usage({"input_token_count": 1}) + Content.from_usage(
        {"input_token_count": 2}
    )
    assert usage.usage_details.input_token_count == 3
    with pytest.raises(TypeError, match="Cannot add Content of type 'text'"):
        Content.from_text("a") + Content.from_function_call("x", "f", "{}")
    with pytest.raises(AdditionItemMismatch):
        Content.from_text_reasoning(id="r1", text="a") + Content.from_text_reasoning(
            id="r2", text="b"
        )


def test_deepcopy_keeps_raw_representation():
    """TY-17: a deep copy of a content, message or response copies everything but
    `raw_representation`, which it keeps by reference."""
    raw = object()
    content = Content.from_text("a", raw_representation=raw)
    response = ChatResponse(
        messages=[Message("assistant", [content])], raw_representation=raw
    )
    copied = copy.deepcopy(response)
    assert copied == response
    assert copied.raw_representation is raw
    assert copied.messages[0].contents[0] is not content
    assert copied.messages[0].contents[0].raw_representation is raw


def test_from_dict_without_type():
    """TY-15: upstream's dicts without `type` read where the place says what they
    are."""
    message = Message.from_dict(
        {"role": "user", "contents": [{"type": "text", "text": "x"}]}
    )
    assert message.text == "x"
    assert ChatResponse.from_dict({"messages": [message.to_dict()]}).text == "x"


def test_an_mcp_server_call_can_be_approved():
    """TY-15: an approval request may hold an `mcp_server_tool_call`, which is
    informational."""
    mcp_call = Content.from_mcp_server_tool_call(
        call_id="m1", tool_name="search", server_name="docs"
    )
    assert mcp_call.informational_only is True
    assert Content.from_dict(mcp_call.to_dict()).informational_only is True
    request = Content.from_function_approval_request("m1", mcp_call)
    assert request.function_call.tool_name == "search"
    assert Content.from_dict(request.to_dict()) == request
    with pytest.raises(ValueError, match="expected a function_call Content"):
        Content.from_function_approval_request("t", Content.from_text("x"))


def test_an_unknown_factory_is_an_attribute_error() -> None:
    """TY-15: ``Content.from_<kind>`` exists for upstream's kinds only; another name is
    an `AttributeError` naming it."""
    with pytest.raises(AttributeError, match="has no attribute 'from_nothing_known'"):
        Content.from_nothing_known  # noqa: B018
    assert not hasattr(Content, "from_nothing_known")


def test_a_factorys_unknown_keyword_is_a_type_error() -> None:
    """TY-15: a keyword the kind does not have is a `TypeError` naming the factory and
    the keyword."""
    with pytest.raises(
        TypeError,
        match=r"Content.from_hosted_file\(\) got an unexpected keyword argument 'colour'",
    ):
        Content.from_hosted_file("file-1", colour="red")


def test_error_details_are_the_contents_details() -> None:
    """TY-15: upstream's ``error_details`` keyword is the content's ``details``, and it
    round-trips."""
    content = Content.from_mcp_server_tool_result("c1", "out", error_details="boom")
    assert (content.type, content.call_id, content.output, content.details) == (
        "mcp_server_tool_result",
        "c1",
        "out",
        "boom",
    )
    assert Content.from_dict(content.to_dict()) == content


def test_adding_a_non_content_is_a_type_error() -> None:
    """TY-16: a content adds only a content; anything else is a `TypeError` naming its
    type."""
    with pytest.raises(TypeError, match="cannot add Content and str"):
        Content.from_text("a") + "b"  # type: ignore[operator]


def test_function_call_chunks_join() -> None:
    """TY-16: a call's chunks join: string arguments concatenate, dict arguments merge,
    an empty side is the other, the first name and id stay; two call ids are a
    `ContentError`."""
    first = Content.from_function_call("c1", "lookup", arguments='{"city": ')
    merged = first + Content.from_function_call("c1", "", arguments='"Oslo"}')
    assert (merged.name, merged.call_id, merged.arguments) == (
        "lookup",
        "c1",
        '{"city": "Oslo"}',
    )
    as_dicts = Content.from_function_call(
        "c1", "lookup", arguments={"a": 1}
    ) + Content.from_function_call("c1", "", arguments={"b": 2})
    assert as_dicts.arguments == {"a": 1, "b": 2}
    empty = Content.from_function_call(
        "c1", "lookup", arguments=""
    ) + Content.from_function_call("", "", arguments="{}")
    assert empty.arguments == "{}"
    with pytest.raises(ContentError, match="different call_ids"):
        first + Content.from_function_call("c2", "lookup", arguments="{}")


def test_arguments_of_two_forms_do_not_join() -> None:
    """TY-16: a call's arguments as a str and as a dict cannot be joined: a `TypeError`
    naming both."""
    with pytest.raises(TypeError, match="Incompatible argument types: str and dict"):
        Content.from_function_call(
            "c1", "f", arguments='{"a"'
        ) + Content.from_function_call("c1", "f", arguments={"b": 1})


@given(
    st.dictionaries(
        st.sampled_from(["input_token_count", "output_token_count"]),
        st.integers(0, 10**6),
    ),
    st.dictionaries(
        st.sampled_from(["input_token_count", "output_token_count"]),
        st.integers(0, 10**6),
    ),
)
def test_usages_sum_a_plain_dict_too(a: dict[str, int], b: dict[str, int]) -> None:
    """TY-16, UP-6: usage contents sum key by key, a plain dict of counts on either side
    too, into a `UsageDetails`."""
    total = Content("usage", usage_details=dict(a)) + Content.from_usage(
        UsageDetails(**b)
    )
    assert isinstance(total.usage_details, UsageDetails)
    assert dict(total.usage_details) == {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}


def test_raw_representations_are_kept_side_by_side() -> None:
    """TY-16: the merged chunk keeps both chunks' raw representations, in order, as one
    list."""
    merged = Content.from_text("a", raw_representation="r1") + Content.from_text(
        "b", raw_representation=["r2", "r3"]
    )
    assert merged.text == "ab"
    assert merged.raw_representation == ["r1", "r2", "r3"]
    only = Content.from_text("a") + Content.from_text("b", raw_representation="r2")
    assert only.raw_representation == "r2"


def test_kinds_without_an_addition_are_a_content_error() -> None:
    """TY-16: two chunks of a kind upstream does not add (here two errors) are a
    `ContentError`."""
    with pytest.raises(
        ContentError, match="Addition not supported for content type: error"
    ):
        Content.from_error(message="a") + Content.from_error(message="b")


def test_deepcopy_of_content_message_and_response_keeps_raw_by_reference() -> None:
    """TY-60: a content (whose class has class variables), a message and a response
    deep-copy; ``raw_representation`` is shared, everything else copied."""
    lock = threading.Lock()  # cannot be deep-copied
    content = Content.from_text(
        "hi", raw_representation=lock, additional_properties={"k": [1]}
    )
    clone = copy.deepcopy(content)
    assert clone == content
    assert clone.raw_representation is lock
    assert clone.additional_properties is not content.additional_properties
    response = ChatResponse(
        messages=[Message("assistant", [content], raw_representation=lock)]
    )
    copied = copy.deepcopy(response)
    assert copied.messages[0].raw_representation is lock
    assert copied.messages[0].contents[0].raw_representation is lock
    assert copied.messages[0] is not response.messages[0]
