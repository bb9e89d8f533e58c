"""Structured output corners (coverage, tests only): spec/structured.md SO-4, SO-10,
SO-14, SO-15."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from minagent.structured.format import (
    ResponseFormat,
    StructuredOutputValidationError,
    strict_schema,
)


@dataclasses.dataclass
class Inner:
    a: int


@dataclasses.dataclass
class Outer:
    inner: Inner | None = None
    items: list[int | list[int]] = dataclasses.field(default_factory=list)


class Doc(TypedDict):
    x: Annotated[int, "the count"]
    y: NotRequired[int]


def test_null_for_an_optional_structure_and_nested_lists_parse() -> None:
    """SO-10: a null for a field whose type accepts None stays None; list members of a
    union keep their kind (an int, a list of ints)."""
    value = ResponseFormat.of(Outer).parse('{"inner": null, "items": [1, [2, 3]]}')
    assert value == Outer(inner=None, items=[1, [2, 3]])
    assert ResponseFormat.of(Outer).parse('{"inner": {"a": 4}, "items": []}') == Outer(
        Inner(4), []
    )


def test_typed_dict_with_annotated_key_drops_the_null_of_a_not_required_key() -> None:
    """SO-4, SO-10: an Annotated key is required as its type says; a NotRequired key
    made nullable is dropped when the answer gives null for it."""
    assert ResponseFormat.of(Doc).parse('{"x": 1, "y": null}') == {"x": 1}
    with pytest.raises(StructuredOutputValidationError):
        ResponseFormat.of(Doc).parse('{"y": 2}')


def test_strict_schema_makes_optional_properties_nullable_unless_they_accept_null() -> (
    None
):
    """SO-4: every property becomes required; one that does not accept null already
    becomes anyOf [schema, null]; `true`, an enum or const holding null already accept
    it."""
    out = strict_schema(
        {
            "type": "object",
            "properties": {
                "t": True,
                "f": False,
                "e": {"enum": [None, "a"]},
                "c": {"const": None},
                "s": {"type": "string"},
            },
        },
        nullable=True,
    )
    props = out["properties"]
    assert props["t"] is True
    assert props["e"] == {"enum": [None, "a"]}
    assert props["c"] == {"const": None}
    assert props["f"] == {"anyOf": [False, {"type": "null"}]}
    assert props["s"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert out["required"] == ["t", "f", "e", "c", "s"]
    assert out["additionalProperties"] is False


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/Missing", "description": "d", "$defs": {}},
        {"$ref": "other.json#/x", "description": "d"},
        {"$ref": "#/$defs/A/b", "description": "d", "$defs": {"A": 5}},
    ],
    ids=["missing-def", "other-document", "through-a-non-object"],
)
def test_a_ref_that_does_not_resolve_locally_is_kept(schema: dict[str, Any]) -> None:
    """SO-15: only a local reference that resolves is written out in place; any other is
    kept as it is."""
    assert strict_schema(schema, nullable=False) == schema


class ShapeError(Exception):
    def errors(self) -> int:  # not pydantic's list of dicts
        return 5


class OddModel:
    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return {"type": "object", "properties": {"a": {"type": "integer"}}}

    @classmethod
    def model_validate_json(cls, text: str) -> OddModel:
        raise ShapeError("bad shape")


def test_pydantic_style_error_with_odd_errors_falls_back_to_one_issue() -> None:
    """SO-14: when the model's exception has an errors() of another shape, the issue is
    one at `$` naming the exception, and the original is the cause."""
    with pytest.raises(StructuredOutputValidationError) as info:
        ResponseFormat.of(OddModel).parse('{"a": 1}')
    assert [(i.path, i.problem) for i in info.value.issues] == [
        ("$", "ShapeError: bad shape")
    ]
    assert isinstance(info.value.__cause__, ShapeError)
