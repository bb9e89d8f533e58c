"""Typed errors: every kind of mismatch names its JSON path; text that is not JSON names
the position."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Annotated, Any, Literal

import pydantic
import pytest

from minagent import (
    ResponseFormat,
    StructuredOutputDecodeError,
    StructuredOutputError,
    StructuredOutputValidationError,
)
from minagent.testing import ScriptedChatClient

from ._kinds import SCHEMA, DuckForecast, Forecast, ForecastModel, Sky


class Positive:
    ge = 1


@dataclasses.dataclass
class Item:
    name: str
    qty: Annotated[int, Positive()]
    kind: Literal["tool", "food"] = "tool"


@dataclasses.dataclass
class Order:
    items: list[Item]
    sky: Sky
    when: datetime.datetime
    pair: tuple[int, str]


@dataclasses.dataclass
class Even:
    n: int

    def __post_init__(self) -> None:
        if self.n % 2:
            raise ValueError("n must be even")


GOOD: dict[str, Any] = {
    "items": [{"name": "a", "qty": 1, "kind": "tool"}],
    "sky": "clear",
    "when": "2026-11-24T10:00:00",
    "pair": [1, "x"],
}


def changed(path: list[Any], value: Any, *, delete: bool = False) -> str:
    data = json.loads(json.dumps(GOOD))
    node = data
    for part in path[:-1]:
        node = node[part]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(data)


MISMATCHES = [
    # (what is wrong, answer, path, words in the problem)
    (
        "wrong type",
        changed(["items", 0, "qty"], "two"),
        "$.items[0].qty",
        "expected integer",
    ),
    (
        "missing",
        changed(["items", 0, "name"], None, delete=True),
        "$.items[0].name",
        "required property is missing",
    ),
    ("enum", changed(["sky"], "snow"), "$.sky", '"clear", "rain"'),
    (
        "literal",
        changed(["items", 0, "kind"], "toy"),
        "$.items[0].kind",
        '"tool", "food"',
    ),
    ("constraint", changed(["items", 0, "qty"], 0), "$.items[0].qty", ">= 1"),
    ("date-time", changed(["when"], "yesterday"), "$.when", "date-time"),
    ("array", changed(["items"], {"name": "a"}), "$.items", "expected array"),
    ("tuple length", changed(["pair"], [1]), "$.pair", "at least 2 items"),
    ("tuple item", changed(["pair", 1], 5), "$.pair[1]", "expected string"),
    ("null for required", changed(["sky"], None), "$.sky", "got null"),
    ("root", json.dumps([GOOD]), "$", "expected object"),
]


@pytest.mark.parametrize(
    ("what", "answer", "path", "words"), MISMATCHES, ids=[m[0] for m in MISMATCHES]
)
def test_each_mismatch_names_its_path(
    what: str, answer: str, path: str, words: str
) -> None:
    """SO-12: a StructuredOutputValidationError whose issues and message name the path
    and the problem."""
    fmt = ResponseFormat.of(Order)
    fmt.parse(json.dumps(GOOD))  # the unchanged answer is fine
    with pytest.raises(StructuredOutputValidationError) as info:
        fmt.parse(answer)
    error = info.value
    assert error.path == path
    assert any(
        issue.path == path and words in issue.problem for issue in error.issues
    ), error.issues
    assert str(error).startswith("the answer does not match Order:\n")
    assert f"{path}: " in str(error)
    assert error.text == answer
    assert isinstance(error, StructuredOutputError)
    assert isinstance(error, ValueError)


def test_every_issue_is_reported() -> None:
    """SO-12: all issues, not only the first."""
    answer = changed(["sky"], "snow").replace('"qty": 1', '"qty": "x"')
    with pytest.raises(StructuredOutputValidationError) as info:
        ResponseFormat.of(Order).parse(answer)
    assert {i.path for i in info.value.issues} == {"$.sky", "$.items[0].qty"}


@pytest.mark.parametrize(
    ("text", "position", "line", "column"),
    [
        ("", 0, 1, 1),
        ("sure! {}", 0, 1, 1),
        ('{"a": 1,}', 8, 1, 9),
        ('{\n  "a": tru\n}', 9, 2, 8),
        ("{} {}", 3, 1, 4),
    ],
)
def test_text_that_is_not_json_names_the_first_bad_character(
    text: str, position: int, line: int, column: int
) -> None:
    """SO-11: position (0-based), line and column (1-based) of the first bad character,
    for every kind."""
    for target in (Forecast, ForecastModel, DuckForecast, SCHEMA, "json"):
        with pytest.raises(StructuredOutputDecodeError) as info:
            ResponseFormat.of(target).parse(text)
        error = info.value
        assert (error.position, error.line, error.column) == (position, line, column)
        assert f"at position {position} (line {line}, column {column})" in str(error)
        assert str(error).startswith("the answer is not valid JSON: ")


def test_whitespace_around_the_json_is_allowed() -> None:
    """SO-11: leading and trailing whitespace is not an error."""
    assert ResponseFormat.of("json").parse('\n  {"a": 1}  \n') == {"a": 1}


def test_a_dataclass_that_refuses_the_value() -> None:
    """SO-12: a __post_init__ that raises gives the same error, at the path of the
    refused object."""
    with pytest.raises(StructuredOutputValidationError) as info:
        ResponseFormat.of(Even).parse('{"n": 3}')
    assert info.value.path == "$"
    assert "n must be even" in str(info.value)
    assert isinstance(info.value.__cause__, Exception)


def test_schema_dict_mismatch() -> None:
    """SO-13: a JSON schema dict checks the decoded value with the validator."""
    with pytest.raises(StructuredOutputValidationError) as info:
        ResponseFormat.of(SCHEMA).parse('{"city": "Oslo", "high": "warm"}')
    assert info.value.path == "$.high"
    assert str(info.value).startswith("the answer does not match response:")


def test_json_format_accepts_any_json() -> None:
    """SO-13: "json" decodes and does not check."""
    assert ResponseFormat.of("json").parse('"just a string"') == "just a string"


def test_pydantic_errors_become_paths() -> None:
    """SO-14: pydantic's ValidationError becomes issues with $ paths; the original is
    the cause."""
    with pytest.raises(StructuredOutputValidationError) as info:
        ResponseFormat.of(ForecastModel).parse(
            '{"city": "Oslo", "temperatures": [1, "x"], "sky": "snow"}'
        )
    paths = [issue.path for issue in info.value.issues]
    assert paths == ["$.temperatures[1]", "$.sky"]
    assert isinstance(info.value.__cause__, pydantic.ValidationError)


def test_duck_type_error_without_errors_method() -> None:
    """SO-14: an exception without errors() becomes one issue at $ with its text."""
    with pytest.raises(StructuredOutputValidationError) as info:
        ResponseFormat.of(DuckForecast).parse('{"city": "Oslo", "high": "hot"}')
    assert [(i.path, i.problem) for i in info.value.issues] == [
        ("$", "ValueError: high must be an integer")
    ]


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


async def test_value_raises_and_try_value_returns_none(stream: bool) -> None:
    """SO-9, SO-11, SO-12: value raises the typed error, try_value gives None, in both
    modes."""
    client = ScriptedChatClient(["not json", '{"city": 1}'])
    for text_error in (StructuredOutputDecodeError, StructuredOutputValidationError):
        result: Any = client.get_response(
            "x", options={"response_format": SCHEMA}, stream=stream
        )
        if stream:
            async for _ in result:
                pass
            result = await result.get_final_response()
        else:
            result = await result
        with pytest.raises(text_error):
            _ = result.value
        assert result.try_value is None


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (
            "Sure! Here is the city you asked for: Oslo.",
            "; the answer begins 'Sure! Here is the city you asked for: Oslo.'",
        ),
        ("x" * 200, "; the answer begins '" + "x" * 80 + "...'"),
        ("   ", "; the answer is empty"),
    ],
)
def test_an_answer_that_is_not_json_shows_how_it_begins(
    answer: str, shown: str
) -> None:
    """SO-11: the decode error shows the start of what the model said (80
    characters)."""
    from dataclasses import dataclass

    from minagent.structured.format import ResponseFormat, StructuredOutputDecodeError

    @dataclass
    class City:
        name: str

    with pytest.raises(StructuredOutputDecodeError) as info:
        ResponseFormat.of(City).parse(answer)
    assert str(info.value).startswith("the answer is not valid JSON: ")
    assert str(info.value).endswith(shown)
    assert info.value.text == answer


def test_try_value_does_not_hide_other_errors() -> None:
    """SO-9: only StructuredOutputError becomes None; a bug in a model class still
    raises."""

    class Broken:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            return {"type": "object"}

        @classmethod
        def model_validate_json(cls, text: str) -> Any:
            raise KeyboardInterrupt

    from minagent import ChatResponse, Message

    response = ChatResponse([Message("assistant", ["{}"])])._with_format(
        ResponseFormat.of(Broken)
    )
    with pytest.raises(KeyboardInterrupt):
        _ = response.try_value
