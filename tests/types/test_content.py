"""Contents: the factories, equality, data and URIs, call arguments (spec/types.md TY-1 ..
TY-4); upstream's other content kinds, adding chunks and copies (TY-15 .. TY-17, TY-60)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from minagent import (
    Content,
    ContentError,
    UsageDetails,
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
