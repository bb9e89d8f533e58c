"""The cheap `Content`: only the fields given are stored, and nobody can tell (spec/types.md, TY-50).

Each property builds a content from a random subset of its fields ("cheap") and the same content
with every other field spelled out at its default ("full", what a content stored before TY-50),
and checks that nothing a user can do tells them apart.
"""

from __future__ import annotations

import copy
import pickle
from dataclasses import MISSING, fields, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Content, Message, UsageDetails

FIELDS = {f.name: f for f in fields(Content)}


def default(name: str) -> Any:
    f = FIELDS[name]
    return f.default_factory() if f.default_factory is not MISSING else f.default


short = st.text(max_size=4)
json_scalar = st.none() | st.booleans() | st.integers(-5, 5) | short
VALUES: dict[str, st.SearchStrategy[Any]] = {
    **{n: st.none() | short for n in Content._STR_FIELDS if n != "text"},
    "arguments": st.none() | short | st.dictionaries(short, json_scalar, max_size=2),
    "result": json_scalar | st.lists(json_scalar, max_size=2),
    "usage_details": st.none() | st.builds(UsageDetails, input_token_count=st.integers(0, 9)),
    "approved": st.none() | st.booleans(),
    "function_call": st.none() | st.builds(Content.from_function_call, short, short, short),
    "informational_only": st.booleans(),
    "user_input_request": st.booleans(),
    "annotations": st.none() | st.lists(st.dictionaries(short, json_scalar, max_size=2), min_size=1, max_size=2),
    "additional_properties": st.dictionaries(short, json_scalar, max_size=2),
    "extra": st.dictionaries(st.sampled_from(["file_id", "status", "x_new"]), json_scalar, max_size=2),
    "raw_representation": st.none() | short,
}
KINDS = st.sampled_from(["text", "function_call", "function_result", "error", "usage", "uri", "a_newer_kind"])


@st.composite
def given_fields(draw: st.DrawFn) -> tuple[str, str | None, dict[str, Any]]:
    """A kind, a text and a random subset of the other fields (a field left out is at its default)."""
    names = draw(st.lists(st.sampled_from(sorted(VALUES)), unique=True))
    return draw(KINDS), draw(st.none() | short), {n: draw(VALUES[n]) for n in names}


def pair(kind: str, text: str | None, kw: dict[str, Any]) -> tuple[Content, Content]:
    full = {n: default(n) for n in FIELDS if n not in ("type", "text")} | copy.deepcopy(kw)
    return Content(kind, text=text, **kw), Content(kind, text=text, **full)


@settings(max_examples=150, deadline=None)
@given(given_fields())
def test_a_field_left_out_is_indistinguishable_from_one_given_its_default(
    drawn: tuple[str, str | None, dict[str, Any]],
) -> None:
    """TY-50: equality, every field's value, repr, str, to_dict (both spellings) and the JSON round
    trip of a content built from some fields are those of the content with all of them."""
    cheap, full = pair(*drawn)
    assert cheap == full
    assert full == cheap
    assert (cheap != full) is False
    for name in FIELDS:
        assert getattr(cheap, name) == getattr(full, name), name
    assert repr(cheap) == repr(full)
    assert str(cheap) == str(full)
    assert cheap.to_dict() == full.to_dict()
    assert cheap.to_dict(exclude_none=False) == full.to_dict(exclude_none=False)
    assert Content.from_dict(cheap.to_dict()) == Content.from_dict(full.to_dict()) == cheap
    assert Content.from_json(cheap.to_json()) == cheap


@settings(max_examples=100, deadline=None)
@given(given_fields())
def test_copy_deepcopy_pickle_and_replace_keep_the_content(drawn: tuple[str, str | None, dict[str, Any]]) -> None:
    """TY-50 (with TY-17, TY-60): a copy, a deep copy, a pickled copy and `dataclasses.replace` of a
    content built from some fields equal the content; a deep copy keeps `raw_representation` by
    reference and owns its dicts; a content stays unhashable, as a mutable dataclass is."""
    cheap, full = pair(*drawn)
    raw = object()
    with_raw = replace(cheap, raw_representation=raw)
    for made in (copy.copy(cheap), copy.deepcopy(cheap), pickle.loads(pickle.dumps(cheap)), replace(cheap)):
        assert made == cheap == full
        assert made.to_dict() == full.to_dict()
    deep = copy.deepcopy(with_raw)
    assert deep == cheap
    assert deep.raw_representation is raw
    assert deep.additional_properties is not with_raw.additional_properties
    assert deep.extra is not with_raw.extra
    assert replace(cheap, text="other").text == "other"
    with pytest.raises(TypeError):
        hash(cheap)


@settings(max_examples=50, deadline=None)
@given(short, st.dictionaries(short, short, max_size=2))
def test_every_upstream_spelling_builds_the_same_content(text: str, props: dict[str, Any]) -> None:
    """TY-50: the constructor's spellings (type positional or by keyword, text positional or by
    keyword), the factory, a message's str and a replace all build the same content."""
    expected = Content("text", text=text, additional_properties=dict(props))
    spellings = [
        Content(type="text", text=text, additional_properties=dict(props)),
        Content("text", text, additional_properties=dict(props)),
        Content.from_text(text, additional_properties=dict(props)),
        replace(Content.from_text("before"), text=text, additional_properties=dict(props)),
    ]
    for built in spellings:
        assert built == expected
        assert repr(built) == repr(expected)
    assert Message("user", text).contents == [Content.from_text(text)] == [Content(type="text", text=text)]


def test_an_unknown_keyword_is_a_type_error_naming_it() -> None:
    """TY-50: as the dataclass constructor did, a keyword that is no field is a `TypeError` naming
    it, and a content needs its type."""
    with pytest.raises(TypeError, match="'colour'"):
        Content("text", text="x", colour="red")
    with pytest.raises(TypeError):
        Content()  # type: ignore[call-arg]


def test_a_fresh_content_shares_no_mutable_object_and_writes_stay_its_own() -> None:
    """TY-50: two fresh contents never share a dict; what is written to one content's
    ``additional_properties`` or ``extra`` (first access or later) shows in no other content."""
    a, b = Content.from_text("a"), Content("text", text="b")
    assert a.additional_properties is not b.additional_properties
    assert a.extra is not b.extra
    a.additional_properties["k"] = 1
    a.extra["file_id"] = "f1"
    assert a.file_id == "f1"
    assert a.to_dict()["file_id"] == "f1"
    assert a.to_dict()["additional_properties"] == {"k": 1}
    c = Content.from_text("c")
    for other in (b, c, Content("error", message="m")):
        assert other.additional_properties == {}
        assert other.extra == {}
        assert other.file_id is None
    copied = copy.copy(a)  # a shallow copy shares the dicts, as a dataclass copy always did
    assert copied.extra is a.extra
    assert copied.additional_properties is a.additional_properties


def test_a_streamed_text_chunk_stores_its_type_text_and_one_dict() -> None:
    """TY-50: a text chunk holds its type, its text and its ``additional_properties`` (every fold
    reads them) and nothing else until another field is written."""
    chunk = Content.from_text("hi")
    assert vars(chunk) == {"type": "text", "text": "hi", "additional_properties": {}}
    assert chunk.call_id is None
    assert chunk.informational_only is False
    assert chunk.annotations is None
    chunk.call_id = "c1"
    assert vars(chunk)["call_id"] == "c1"
    assert chunk.to_dict() == {"type": "text", "text": "hi", "call_id": "c1"}
