"""Upstream's other content kinds and content algebra (spec/types.md TY-15, TY-16): the
factories' bad names and keywords, ``error_details``, and ``a + b`` for calls, usages,
raw representations and what cannot be added."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import Content, ContentError, UsageDetails


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
