"""`ResponseFormat.of`: what it accepts, the wire form, names, and the strict schemas it
derives."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from minagent import (
    ResponseFormat,
)
from minagent._validate import validate
from minagent.structured.format import StructuredOutputValidationError, strict_schema

from ._kinds import SCHEMA, DuckForecast, Forecast, ForecastDict, ForecastModel


@dataclasses.dataclass
class Point:
    x: Annotated[int, "across"]
    y: int = 0
    label: str | None = None


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node]


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


def test_accepted_kinds() -> None:
    """SO-1: each accepted kind normalises to its kind of format."""
    kinds = {
        Point: "json_schema",
        Movie: "json_schema",
        ForecastModel: "json_schema",
        DuckForecast: "json_schema",
        "json": "json",
        "json_object": "json",
        "text": "text",
    }
    for value, kind in kinds.items():
        assert ResponseFormat.of(value).kind == kind
    assert ResponseFormat.of({"type": "json_object"}).kind == "json"
    assert ResponseFormat.of({"type": "text"}).kind == "text"
    assert ResponseFormat.of(SCHEMA).kind == "json_schema"
    fmt = ResponseFormat.of(Point)
    assert ResponseFormat.of(fmt) is fmt
    assert fmt.target is Point


@pytest.mark.parametrize(
    "value", [42, int, list[int], object(), lambda: None, ["json"]]
)
def test_other_values_are_a_type_error_saying_what_to_write(value: Any) -> None:
    """SO-1: a TypeError that lists the accepted kinds."""
    with pytest.raises(
        TypeError,
        match=r"unsupported response_format .*expected a dataclass, a TypedDict",
    ):
        ResponseFormat.of(value)


def test_other_strings_are_a_value_error() -> None:
    """SO-1: an unknown string is a ValueError listing the accepted kinds."""
    with pytest.raises(
        ValueError, match=r"unsupported response_format 'yaml': expected a dataclass"
    ):
        ResponseFormat.of("yaml")


def test_a_class_the_builder_cannot_describe_fails_at_once() -> None:
    """SO-1: the schema builder's TypeError (SC-23) when the format is normalised."""

    @dataclasses.dataclass
    class Blob:
        data: bytes

    with pytest.raises(TypeError, match="unsupported type bytes"):
        ResponseFormat.of(Blob)


def test_a_model_class_without_model_validate_json() -> None:
    """SO-1: model_json_schema() alone is not enough."""

    class Half:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            return {"type": "object"}

    with pytest.raises(TypeError, match="model_validate_json"):
        ResponseFormat.of(Half)


def test_structured_output_edges() -> None:
    """SO-1, SO-11, SO-12: a format's repr; a pydantic-style class whose
    model_json_schema() is not a dict is a TypeError naming it; an answer with a
    5000-digit integer is a decode error, not a crash; a trailing comma gives one
    position on every Python version."""
    from minagent import (
        ChatResponse,
        Message,
        ResponseFormat,
        StructuredOutputDecodeError,
    )

    fmt = ResponseFormat.of(
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    )
    assert repr(fmt).startswith("ResponseFormat(")

    class Odd:
        @classmethod
        def model_json_schema(cls) -> Any:
            return ["not", "a", "dict"]

        @classmethod
        def model_validate_json(cls, text: str) -> Any:
            return text

    with pytest.raises(TypeError, match="model_json_schema"):
        ResponseFormat.of(Odd)
    response = ChatResponse([Message("assistant", ['{"a": ' + "9" * 5000 + "}"])])
    response._format = fmt  # what get_response attaches (SO-9)
    with pytest.raises(StructuredOutputDecodeError, match="not valid JSON"):
        _ = response.value
    trailing = ChatResponse([Message("assistant", ['{"a": 1,}'])])
    trailing._format = fmt
    with pytest.raises(StructuredOutputDecodeError) as raised:
        _ = trailing.value
    assert raised.value.position == 8


@pytest.mark.parametrize(
    "value",
    [
        Point,
        Node,
        Movie,
        Forecast,
        ForecastDict,
        ForecastModel,
        DuckForecast,
        SCHEMA,
        {
            "schema": SCHEMA,
            "name": "weather report!",
            "strict": True,
            "description": "d",
        },
        {
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": SCHEMA, "strict": False, "extra": 1},
        },
        "json",
        "text",
    ],
)
def test_wire_form_is_plain_json_and_idempotent(value: Any) -> None:
    """SO-2: the wire form is plain JSON, new on every read, and normalising it again
    changes nothing."""
    fmt = ResponseFormat.of(value)
    wire = fmt.wire
    assert json.loads(json.dumps(wire)) == wire
    assert fmt.wire is not wire
    assert ResponseFormat.of(wire).wire == wire
    assert wire["type"] in ("json_schema", "json_object", "text")
    if wire["type"] == "json_schema":
        assert set(wire["json_schema"]) >= {"name", "schema", "strict"}


def test_the_openai_wire_form_passes_unchanged() -> None:
    """SO-2: the OpenAI wrapper is kept as given (copied)."""
    given = {
        "type": "json_schema",
        "json_schema": {"name": "x", "schema": SCHEMA, "strict": True, "extra": 1},
    }
    wire = ResponseFormat.of(given).wire
    assert wire == given
    assert wire["json_schema"]["schema"] is not SCHEMA


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (Point, "Point"),
        (ForecastModel, "ForecastModel"),
        ({**SCHEMA, "title": "Weather Report"}, "Weather_Report"),
        (SCHEMA, "response"),
        ({"schema": SCHEMA, "name": "a.b/c"}, "a_b_c"),
        ({"schema": SCHEMA, "name": "n" * 80}, "n" * 64),
    ],
)
def test_names(value: Any, name: str) -> None:
    """SO-3: class name, wrapper name, title or "response"; [A-Za-z0-9_-] only, at most
    64 characters."""
    assert ResponseFormat.of(value).name == name


def test_strict_schema_of_a_dataclass() -> None:
    """SO-4: all properties required, no extra properties, defaulted fields nullable, no
    defaults."""
    fmt = ResponseFormat.of(Point)
    assert fmt.strict is True
    assert fmt.schema == {
        "type": "object",
        "properties": {
            "x": {"type": "integer", "description": "across"},
            "y": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["x", "y", "label"],
        "additionalProperties": False,
    }
    assert fmt.parse('{"x": 1, "y": null, "label": null}') == Point(1, 0, None)


def test_strict_schema_of_a_typeddict() -> None:
    """SO-4: a NotRequired key becomes a required, nullable property; a null drops the
    key."""
    fmt = ResponseFormat.of(Movie)
    assert fmt.schema is not None
    assert fmt.schema["required"] == ["title", "year"]
    assert fmt.schema["properties"]["year"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}]
    }
    assert fmt.parse('{"title": "Heat", "year": null}') == {"title": "Heat"}
    assert fmt.parse('{"title": "Heat", "year": 1995}') == {
        "title": "Heat",
        "year": 1995,
    }


def test_strict_schema_of_a_recursive_dataclass() -> None:
    """SO-4: a recursive root is written out at the root and kept under $defs for its
    references."""
    fmt = ResponseFormat.of(Node)
    schema = fmt.schema
    assert schema is not None
    assert schema["type"] == "object"
    assert schema["properties"]["children"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Node"},
    }
    assert schema["$defs"]["Node"]["additionalProperties"] is False
    value = fmt.parse('{"value": 1, "children": [{"value": 2, "children": []}]}')
    assert value == Node(1, [Node(2, [])])


def test_strict_schema_of_a_model_class() -> None:
    """SO-5: model_json_schema() made strict; non-required properties are not made
    nullable."""
    schema = ResponseFormat.of(DuckForecast).schema
    assert schema == {
        "title": "DuckForecast",
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "high": {"type": "integer", "default": 0},
        },
        "required": ["city", "high"],
        "additionalProperties": False,
    }
    assert ResponseFormat.of(DuckForecast).strict is True


@dataclasses.dataclass
class Folder:
    name: str
    children: list[Annotated[Folder, "a child folder"]]


def test_refs_with_siblings_are_written_out() -> None:
    """SO-15: a $ref with a sibling description is replaced by the strict schema it
    points to; recursion ends."""
    schema = ResponseFormat.of(Folder).schema
    assert schema is not None
    items = schema["properties"]["children"]["items"]
    assert items["description"] == "a child folder"
    assert items["additionalProperties"] is False
    assert items["required"] == ["name", "children"]
    assert items["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Folder",
        "description": "a child folder",
    }
    assert "$ref" not in schema
    assert ResponseFormat.of(Folder).parse(
        '{"name": "a", "children": [{"name": "b", "children": []}]}'
    ) == Folder("a", [Folder("b", [])])
    pydantic_like = {
        "schema": {
            "allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}]
        }
    }
    # a schema dict is sent as given
    assert ResponseFormat.of(pydantic_like).schema == pydantic_like["schema"]


def test_schema_dicts_keep_their_strictness() -> None:
    """SO-6: a schema dict is sent as given; strict only when the wrapper says so."""
    assert ResponseFormat.of(SCHEMA).schema == SCHEMA
    assert ResponseFormat.of(SCHEMA).strict is False
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert ResponseFormat.of(loose).schema == loose  # not made strict
    assert ResponseFormat.of({"schema": loose, "strict": True}).strict is True
    with pytest.raises(TypeError, match="strict"):
        ResponseFormat.of({"schema": loose, "strict": "yes"})
    with pytest.raises(TypeError, match="not JSON data"):
        ResponseFormat.of({"type": "object", "default": float("nan")})


def test_derived_schemas_validate_their_own_examples() -> None:
    """SO-4: the strict schema of the sample forecast accepts its answer, and the
    validator agrees."""
    from ._kinds import FORECAST_JSON

    schema = ResponseFormat.of(Forecast).schema
    assert schema is not None
    assert validate(FORECAST_JSON, schema) == []


class Doc(TypedDict):
    x: Annotated[int, "the count"]
    y: NotRequired[int]


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


def test_one_item_all_of_is_merged() -> None:
    """SO-15: a one-item allOf in a model class's schema is merged into its schema."""

    class Wrapped:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            inner = {
                "type": "object",
                "properties": {"a": {"type": "integer", "default": None}},
            }
            return {
                "type": "object",
                "properties": {"w": {"allOf": [inner], "description": "d"}},
            }

        @classmethod
        def model_validate(cls, data: Any) -> Any:
            return data

    schema = ResponseFormat.of(Wrapped).schema
    assert schema is not None
    assert schema["properties"]["w"] == {
        "type": "object",
        "description": "d",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert ResponseFormat.of(Wrapped).parse('{"w": {"a": 1}}') == {"w": {"a": 1}}


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
