"""Metadata in `Annotated` hints reaches the schema (spec/schema.md SC-44): field-like
objects, pydantic's own `Field`, defaults.

This module does not use `from __future__ import annotations`: its hints name objects
that only the test function can see (pydantic imported inside a test), as users'
code does."""

from typing import Annotated, Any

import pytest

from minagent import (
    tool,
)


class Meta:
    """A metadata item read by duck typing (what pydantic's Field carries), without
    pydantic."""

    def __init__(self, **attributes: Any) -> None:
        self.__dict__.update(attributes)


def test_metadata_default_becomes_the_schema_default_and_the_parameter_stays_required() -> (
    None
):
    """SC-44: a metadata item's `default` becomes "default"; the parameter stays
    required (the function gives no default); its `description` is the property's
    description."""

    @tool
    def count(n: Annotated[int, Meta(default=3, description="how many")]) -> int:
        """Count."""
        return n

    assert count.parameters["properties"]["n"] == {
        "type": "integer",
        "description": "how many",
        "default": 3,
    }
    assert count.parameters["required"] == ["n"]


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


class FieldLike:
    """Duck-typed like pydantic's Field: attributes plus a metadata list of constraint
    objects."""

    def __init__(self, description=None, **constraints):
        self.description = description
        self.metadata = [type("Bound", (), {k: v})() for k, v in constraints.items()]


def test_annotated_field_metadata_reaches_the_schema():
    """SC-44: description and constraints of a Field-like object, read by duck
    typing."""

    @tool
    def book(
        nights: Annotated[int, FieldLike(description="How many nights", ge=1, le=14)],
        guest: Annotated[str, "The guest's name"],
        code: Annotated[str, FieldLike(min_length=3, pattern="^[A-Z]+$")] = "ABC",
    ):
        """Book a room."""
        return "booked"

    props = book.parameters["properties"]
    assert props["nights"] == {
        "type": "integer",
        "description": "How many nights",
        "minimum": 1,
        "maximum": 14,
    }
    assert props["guest"] == {"type": "string", "description": "The guest's name"}
    assert props["code"] == {
        "type": "string",
        "minLength": 3,
        "pattern": "^[A-Z]+$",
        "default": "ABC",
    }
    issues = book.validate_arguments({"nights": 0, "guest": "x", "code": "a"})
    assert {i.path for i in issues} == {"$.nights", "$.code"}


def test_real_pydantic_field_metadata_reaches_the_schema():
    """SC-44: pydantic's own Field (a test-only dependency; the core never imports
    it)."""
    pydantic = pytest.importorskip("pydantic")

    @tool
    def book(
        nights: Annotated[
            int, pydantic.Field(description="How many nights", ge=1, le=14)
        ],
        tags: Annotated[list[str], pydantic.Field(max_length=2, examples=[["quiet"]])],
    ):
        """Book a room."""
        return "booked"

    props = book.parameters["properties"]
    assert props["nights"] == {
        "type": "integer",
        "description": "How many nights",
        "minimum": 1,
        "maximum": 14,
    }
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 2,
        "examples": [["quiet"]],
    }
    assert [
        i.path for i in book.validate_arguments({"nights": 20, "tags": ["a", "b", "c"]})
    ] == ["$.nights", "$.tags"]
