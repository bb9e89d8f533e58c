"""Content, Message and validator corners (coverage, tests only).

Rules: TY-5, TY-15 (types); SC-33, SC-45, SC-55, SC-57 (schema).
"""

from __future__ import annotations

import logging

import pytest

from minagent import Content, ContentError, Message
from minagent._validate import _reported, compile_fast_check, validate

# -- TY-15 -------------------------------------------------------------------------------------------


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


# -- TY-5 --------------------------------------------------------------------------------------------


def test_message_text_must_be_a_str() -> None:
    """TY-5: Message(role, text=...) takes a str; anything else is a ContentError naming
    the type."""
    with pytest.raises(ContentError, match="must be a str, got int"):
        Message("user", text=5)  # type: ignore[arg-type]


def test_message_keeps_a_tuple_of_contents_as_a_new_list() -> None:
    """TY-5: contents given as a sequence of Content become the message's own list."""
    given = (Content.from_text("a"), Content.from_text("b"))
    message = Message("user", given)
    assert message.text == "ab"
    assert isinstance(message.contents, list)
    assert message.contents == list(given)


# -- schema validation ---------------------------------------------------------------------------


def test_multiple_of_that_is_not_positive_is_not_applied() -> None:
    """SC-45: multipleOf is a positive number; a zero or negative one constrains
    nothing."""
    assert validate(5, {"multipleOf": 0}) == []
    assert validate(5, {"multipleOf": -2}) == []
    assert validate(5, {"multipleOf": 2}) != []


def test_unique_items_compares_non_json_values_by_identity() -> None:
    """SC-33: uniqueItems reports a repeated element naming both indexes; a value that
    is not JSON is equal only to itself."""
    same = object()
    (issue,) = validate([same, same], {"uniqueItems": True})
    assert "[0] and [1]" in issue.problem
    assert validate([object(), object()], {"uniqueItems": True}) == []


def test_fast_check_refuses_what_it_cannot_decide() -> None:
    """SC-55: the fast check exists only for the common schema (properties a mapping),
    and answers 'valid' only where validate finds no issue: a bool is not a number, an
    int is not a boolean."""
    assert compile_fast_check({"type": "object", "properties": []}) is None
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number"}, "b": {"type": "boolean"}},
        "additionalProperties": False,
    }
    check = compile_fast_check(schema)
    assert check is not None
    assert check({"n": 1.5, "b": True}) is True
    assert check({"n": True}) is False
    assert validate({"n": True}, schema) != []
    assert check({"b": 1}) is False
    assert validate({"b": 1}, schema) != []


def test_lenient_warnings_are_remembered_within_a_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """SC-57: a tool's unusable schema is logged once; the memory of what was logged is
    bounded (it is cleared after 1,000 entries, so a long-lived process logs such a tool
    again rather than grow)."""
    schema = {"type": "nosuch"}
    saved = set(_reported)
    _reported.clear()
    with caplog.at_level(logging.WARNING, logger="minagent"):
        assert validate(1, schema, lenient_for="first") == []
        assert validate(1, schema, lenient_for="first") == []
        assert sum("tool 'first'" in r.getMessage() for r in caplog.records) == 1
        for i in range(1000):
            validate(1, schema, lenient_for=f"other{i}")
        assert len(_reported) <= 1000
        caplog.clear()
        validate(1, schema, lenient_for="first")
        assert sum("tool 'first'" in r.getMessage() for r in caplog.records) == 1
    _reported.clear()
    _reported.update(saved)  # the process's memory as it was
