"""Upstream's helper functions (spec/upstream.md UP-7), the cases upstream's users hit
at the edges:
no instructions, a missing usage, counts that are not ints, tool modes in dict form,
media types from data URIs and RIFF containers."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import (
    AgentResponseUpdate,
    ChatResponseUpdate,
    Content,
    ContentError,
    Message,
    UsageDetails,
)
from minagent.upstream import (
    add_usage_details,
    detect_media_type_from_base64,
    map_chat_to_agent_update,
    normalize_function_invocation_configuration,
    prepend_instructions_to_messages,
    validate_tool_mode,
)

_counts = st.dictionaries(
    st.sampled_from(["input_token_count", "output_token_count", "x"]),
    st.integers(0, 10**6),
)


def test_no_instructions_is_the_messages_unchanged() -> None:
    """UP-7: ``prepend_instructions_to_messages(messages, None)`` is ``messages``
    itself."""
    messages = [Message("user", ["hi"])]
    assert prepend_instructions_to_messages(messages, None) is messages


def test_instructions_already_in_place_are_not_added_again() -> None:
    """UP-7: an instruction that is already the message at its place is not added; the
    others are."""
    messages = [Message("system", ["be brief"]), Message("user", ["hi"])]
    assert prepend_instructions_to_messages(messages, "be brief") is messages
    out = prepend_instructions_to_messages(messages, ["be kind"], role="developer")
    assert [(m.role, m.text) for m in out] == [
        ("developer", "be kind"),
        ("system", "be brief"),
        ("user", "hi"),
    ]


@given(_counts)
def test_a_missing_usage_is_the_other(counts: dict[str, int]) -> None:
    """UP-7: None on either side of ``add_usage_details`` is the other usage; both None
    is empty."""
    for result in (add_usage_details(None, counts), add_usage_details(counts, None)):
        assert isinstance(result, UsageDetails)
        assert dict(result) == counts
    assert dict(add_usage_details(None, None)) == {}


@given(_counts, _counts)
def test_usages_sum_key_by_key(a: dict[str, int], b: dict[str, int]) -> None:
    """UP-7: the sum of two usages is key by key, a key on one side only kept as it
    is."""
    assert dict(add_usage_details(a, b)) == {
        k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}
    }


def test_a_count_that_is_not_an_int_is_dropped() -> None:
    """UP-7: a key whose value is not an int (a str, a float, a bool) on either side is
    dropped."""
    first = {"input_token_count": 3, "model": "gpt", "ratio": 0.5, "cached": True}
    second = {"input_token_count": 4, "ratio": 1}
    assert dict(add_usage_details(first, second)) == {"input_token_count": 7}


def test_a_count_that_is_none_on_both_sides_is_absent() -> None:
    """UP-7: a count given as None is an absent count; absent on both sides, it is not
    in the sum."""
    assert dict(
        add_usage_details({"output_token_count": None, "input_token_count": 1}, {})
    ) == {"input_token_count": 1}


def test_tool_mode_forms() -> None:
    """UP-7: `validate_tool_mode` gives a `ToolMode` dict: None stays None, a str is its
    mode, a dict is checked and copied, ``allowed_tools`` as a list."""
    assert validate_tool_mode(None) is None
    assert validate_tool_mode("auto") == {"mode": "auto"}
    given_choice = {
        "mode": "required",
        "required_function_name": "f",
        "allowed_tools": ("f", "g"),
    }
    out = validate_tool_mode(given_choice)
    assert out == {
        "mode": "required",
        "required_function_name": "f",
        "allowed_tools": ["f", "g"],
    }
    # the caller's dict is not changed
    assert given_choice["allowed_tools"] == ("f", "g")
    assert validate_tool_mode({"mode": "auto", "allowed_tools": []}) == {
        "mode": "auto",
        "allowed_tools": [],
    }


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("sometimes", "Invalid tool choice: sometimes"),
        ({"required_function_name": "f"}, "must contain 'mode' key"),
        (
            {"mode": "auto", "required_function_name": "f"},
            "other than 'required' cannot have",
        ),
        (
            {"mode": "none", "allowed_tools": ["f"]},
            "only valid when mode is 'auto' or 'required'",
        ),
        ({"mode": "auto", "allowed_tools": "f"}, "non-string sequence of strings"),
        ({"mode": "auto", "allowed_tools": 3}, "non-string sequence of strings"),
        (
            {"mode": "required", "allowed_tools": ["f", 2]},
            "non-string sequence of strings",
        ),
    ],
)
def test_a_bad_tool_mode_is_a_value_error(choice: object, message: str) -> None:
    """UP-7: a mode other than auto, required and none, or keys upstream does not allow
    together, is a `ContentError` (a `ValueError`) saying what was wrong."""
    with pytest.raises(ContentError, match=message) as caught:
        validate_tool_mode(choice)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError)


_PNG = b"\x89PNG\r\n\x1a\n" + bytes(8)


def test_media_type_from_a_data_uri() -> None:
    """UP-7: a base64 data URI is read as its data's first bytes."""
    encoded = base64.b64encode(_PNG).decode()
    assert (
        detect_media_type_from_base64(
            data_uri=f"data:application/octet-stream;base64,{encoded}"
        )
        == "image/png"
    )
    assert detect_media_type_from_base64(data_str=encoded) == "image/png"
    assert detect_media_type_from_base64(data_bytes=b"plain text") is None


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("http://example.com/a.png", "Invalid data URI format"),
        ("data:image/png;base64", "Invalid data URI format"),
        ("data:image/png,iVBORw0K", "must use base64 encoding"),
        ("data:image/png;base64,***", "Invalid base64 data"),
    ],
)
def test_a_bad_data_uri_is_a_value_error(uri: str, message: str) -> None:
    """UP-7: a data URI that is not a base64 ``data:`` URI, or whose data is not base64,
    is a `ValueError` saying which."""
    with pytest.raises(ValueError, match=message):
        detect_media_type_from_base64(data_uri=uri)


def test_bad_base64_is_a_value_error() -> None:
    """UP-7: ``data_str`` that is not base64 is a `ValueError`."""
    with pytest.raises(ValueError, match="Invalid base64 data provided"):
        detect_media_type_from_base64(data_str="not base64!")


@pytest.mark.parametrize(
    ("form", "media"),
    [(b"WEBP", "image/webp"), (b"WAVE", "audio/wav"), (b"AVI ", None)],
)
@given(size=st.integers(0, 2**32 - 1), tail=st.binary(max_size=16))
def test_riff_containers_by_their_form(
    form: bytes, media: str | None, size: int, tail: bytes
) -> None:
    """UP-7: a RIFF container is a WebP image or a WAV sound by its form type; another
    form is unknown."""
    data = b"RIFF" + size.to_bytes(4, "little") + form + tail
    assert detect_media_type_from_base64(data_bytes=data) == media
    assert (
        detect_media_type_from_base64(data_str=base64.b64encode(data).decode()) == media
    )


def test_a_short_riff_header_is_read_by_the_other_signatures() -> None:
    """UP-7: data that starts with RIFF but is too short to hold a form type is not a
    RIFF media."""
    assert detect_media_type_from_base64(data_bytes=b"RIFF1234WEB") is None


def test_upstream_helpers():
    """UP-7: upstream's helper functions on minagent's types."""
    messages = prepend_instructions_to_messages([Message("user", ["hi"])], "be nice")
    assert [(m.role, m.text) for m in messages] == [
        ("system", "be nice"),
        ("user", "hi"),
    ]
    assert add_usage_details(
        {"input_token_count": 1}, {"input_token_count": 2, "x": 1}
    ) == {
        "input_token_count": 3,
        "x": 1,
    }
    assert validate_tool_mode("auto") == {"mode": "auto"}
    assert (
        validate_tool_mode({"mode": "required", "required_function_name": "f"})[
            "required_function_name"
        ]
        == "f"
    )
    with pytest.raises(ValueError, match="Invalid tool choice: bogus"):
        validate_tool_mode("bogus")
    assert (
        detect_media_type_from_base64(data_bytes=b"\x89PNG\r\n\x1a\n...") == "image/png"
    )
    assert (
        detect_media_type_from_base64(data_str=base64.b64encode(b"%PDF-1.4").decode())
        == "application/pdf"
    )
    with pytest.raises(ValueError, match="Provide exactly one of"):
        detect_media_type_from_base64()
    assert (
        normalize_function_invocation_configuration(
            {"max_iterations": 3}
        ).max_iterations
        == 3
    )
    update = map_chat_to_agent_update(
        ChatResponseUpdate([Content.from_text("x")], "assistant"), "bot"
    )
    assert isinstance(update, AgentResponseUpdate)
    assert update.author_name == "bot"
