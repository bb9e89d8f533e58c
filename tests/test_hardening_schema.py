"""Issue 13, items 5, 6, 9 and 14: model output never ends the run; validation is
bounded; validated arguments reach the tool as its annotated types; tool results are
strict JSON.

Rules: spec/schema.md SC-46 .. SC-54, spec/tools.md TL-10, TL-11. Runs go through
`Agent(ScriptedChatClient([...]))` in both modes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import math
import time
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from enum import Enum
from typing import Any, Literal, NotRequired, Optional, TypedDict, Union

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from minagent import Agent, Content, FunctionTool, tool
from minagent._convert import ArgumentConversionError, ArgumentConverter
from minagent._limits import (
    ArgumentLimits,
    argument_limits,
    check_limits,
    parse_json_arguments,
    set_argument_limits,
)
from minagent._schema import function_schema
from minagent._tools import result_value
from minagent._types import ContentError
from minagent._validate import validate
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run
from tests.schema._strategies import TYPES, tool_of, values_for


async def run_agent(steps: list[Any], tools: list[Any], *, stream: bool) -> Any:
    return await run(Agent(ScriptedChatClient(steps), tools=tools), "go", stream=stream)


def function_results(response: Any) -> list[Content]:
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


@pytest.fixture
def limits() -> Iterator[None]:
    """Restore the module-wide limits after a test that changes them."""
    previous = argument_limits()
    yield
    set_argument_limits(previous)


# --------------------------------------------------------------------------- item 5: limits


@tool
def count(n: int) -> int:
    """Echo a count."""
    return n


@tool
def nest(value: Any) -> str:
    """Take anything."""
    return "ok"


class Tree(TypedDict):
    name: str
    children: NotRequired[list[Tree]]


@tool
def tree(root: Tree) -> str:
    """Take a recursive TypedDict."""
    return "ok"


def _deep_tree(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"name": "leaf"}
    for _ in range(depth):
        node = {"name": "n", "children": [node]}
    return node


HOSTILE = [
    pytest.param(count, '{"n": ' + "9" * 5000 + "}", "digits", id="5000-digit-int"),
    pytest.param(
        count, '{"n": ' + "9" * 1001 + "}", "1000 digits", id="1001-digit-int"
    ),
    pytest.param(
        nest,
        '{"value": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nested",
        id="100k-deep",
    ),
    pytest.param(
        nest, '{"value": ' + "[" * 100 + "]" * 100 + "}", "64 levels", id="100-deep"
    ),
    pytest.param(
        tree,
        json.dumps({"root": _deep_tree(300)}),
        "64 levels",
        id="recursive-typeddict-300",
    ),
    pytest.param(nest, '{"value": NaN}', "finite", id="nan-literal"),
    pytest.param(nest, '{"value": 1e400}', "finite", id="overflowing-float"),
    pytest.param(
        nest,
        '{"value": [' + ",".join(["0"] * 100_001) + "]}",
        "100000 items",
        id="long-array",
    ),
]


@pytest.mark.parametrize(("target", "arguments", "phrase"), HOSTILE)
async def test_hostile_arguments_become_error_results(
    target: FunctionTool, arguments: str, phrase: str, stream: bool
) -> None:
    """SC-48, SC-49, SC-50: arguments beyond a limit give the call an error result that
    says which limit, and the run goes on to the model's next answer (issue 13 item
    5)."""
    steps = [[call(target.name, arguments, call_id="c1")], "recovered"]
    response = await run_agent(steps, [target], stream=stream)
    (result,) = function_results(response)
    assert result.exception == "invalid arguments"
    assert result.result.startswith(
        f"Error: Argument parsing failed. Invalid arguments for {target.name}"
    )
    assert phrase in result.result
    assert len(result.result) < 2000
    assert response.text == "recovered"


async def test_hostile_dict_arguments_become_error_results(stream: bool) -> None:
    """SC-49: arguments that arrive as a dict (not text) are held to the same limits."""
    calls = [
        Content.from_function_call("c1", "tree", {"root": _deep_tree(300)}),
        Content.from_function_call("c2", "count", {"n": 10**1500}),
    ]
    response = await run_agent([calls, "recovered"], [tree, count], stream=stream)
    texts = {r.call_id: r.result for r in function_results(response)}
    assert "64 levels" in texts["c1"]
    assert "1000 digits" in texts["c2"]
    assert response.text == "recovered"


async def test_recursive_typeddict_within_the_limit_is_accepted(stream: bool) -> None:
    """SC-48, SC-52: a recursive TypedDict as deep as the limit allows validates and
    converts."""
    depth = argument_limits().max_depth // 2 - 2  # each level is an object and a list
    steps = [[call("tree", {"root": _deep_tree(depth)}, call_id="c1")], "done"]
    response = await run_agent(steps, [tree], stream=stream)
    (result,) = function_results(response)
    assert (result.result, result.exception) == ("ok", None)


def test_parse_json_arguments_raises_only_value_error() -> None:
    """SC-49: every failure of parsing is a ValueError with a clear text."""
    cases = {
        "{": "not valid JSON",
        '{"n": ' + "1" * 5000 + "}": "more than 1000 digits",
        "[" * 50_000: "nested deeper than 64 levels",
        "x" * 10: "not valid JSON",
    }
    for text, phrase in cases.items():
        with pytest.raises(ValueError, match=phrase):
            parse_json_arguments(text)
    with pytest.raises(ValueError, match="at most 10 are allowed"):
        parse_json_arguments('{"a": "long"}', ArgumentLimits(max_argument_chars=10))


def test_parse_arguments_raises_content_error() -> None:
    """SC-49, TY-4: `Content.parse_arguments` reports a limit as ContentError, for text
    and dicts."""
    with pytest.raises(ContentError, match="digits"):
        Content.from_function_call(
            "c", "f", '{"n": ' + "9" * 5000 + "}"
        ).parse_arguments()
    with pytest.raises(ContentError, match=r"\$.n: expected a finite number"):
        Content.from_function_call("c", "f", {"n": math.inf}).parse_arguments()


def test_limits_are_configurable(limits: None) -> None:
    """SC-48: module-wide limits, changed field by field and restored; bad values are
    refused."""
    assert argument_limits() == ArgumentLimits()
    previous = set_argument_limits(max_depth=200, max_integer_digits=3)
    assert previous == ArgumentLimits()
    assert argument_limits().max_depth == 200
    assert check_limits({"n": 1234}) != []
    assert check_limits({"n": 123}) == []
    assert check_limits(_deep_tree(90)) == []
    set_argument_limits(previous)
    assert check_limits(_deep_tree(90)) != []
    with pytest.raises(ValueError, match="max_depth must be an int >= 1"):
        ArgumentLimits(max_depth=0)
    with pytest.raises(TypeError, match="no field 'depth'"):
        set_argument_limits(depth=3)


def test_check_limits_paths_and_issue_cap() -> None:
    """SC-50: issues carry SC-25 paths, a broken container is not entered, at most
    max_issues."""
    issues = check_limits({"a": [1.0, math.nan], "b c": {"d": math.inf}})
    assert [str(i) for i in issues] == [
        "$.a[1]: expected a finite number; got number NaN",
        '$["b c"].d: expected a finite number; got number Infinity',
    ]
    assert len(check_limits([math.nan] * 1000)) == 20
    assert len(check_limits([math.nan] * 1000, ArgumentLimits(max_issues=3))) == 3
    assert [
        i.path
        for i in check_limits({"s": "x" * 11}, ArgumentLimits(max_string_chars=10))
    ] == ["$.s"]


def test_validate_never_raises_recursion_error(limits: None) -> None:
    """SC-50: with limits raised far past the stack, validate reports instead of
    raising."""
    schema = function_schema(tree.func).parameters  # type: ignore[arg-type]
    set_argument_limits(max_depth=100_000)
    issues = validate({"root": _deep_tree(5000)}, schema)
    assert [str(i) for i in issues] == [
        "$: the value is nested too deeply to be checked"
    ]


# --------------------------------------------------------------------------- item 6: uniqueItems


def test_unique_items_is_linear() -> None:
    """SC-51: 20k distinct items check in well under the quadratic time of the old code
    (77 s)."""
    schema = {"type": "array", "uniqueItems": True}
    value = [[i, {"k": str(i)}] for i in range(20_000)]
    start = time.perf_counter()
    assert validate(value, schema) == []
    elapsed = time.perf_counter() - start
    # a generous bound: the old code needed more than a minute
    assert elapsed < 5, elapsed


def test_unique_items_json_equality() -> None:
    """SC-51, SC-29: 1 equals 1.0, key order is irrelevant, true is not 1; the first
    equal is named."""
    schema = {"type": "array", "uniqueItems": True}
    value = [1, True, 1.0, {"a": 1, "b": [2]}, {"b": [2.0], "a": 1}, "1", 1]
    assert [str(i) for i in validate(value, schema)] == [
        "$: expected unique items; items [0] and [2] are equal",
        "$: expected unique items; items [3] and [4] are equal",
        "$: expected unique items; items [0] and [6] are equal",
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(-3, 3)
            | st.sampled_from([1.0, 0.5]),
            lambda i: (
                st.lists(i, max_size=2)
                | st.dictionaries(st.sampled_from("ab"), i, max_size=2)
            ),
            max_leaves=4,
        ),
        max_size=6,
    )
)
def test_unique_items_agrees_with_pairwise_json_equality(value: list[Any]) -> None:
    """SC-51: the hashed check reports exactly the pairs (first equal earlier item) of
    SC-29."""
    from minagent._validate import _json_equal

    expected = []
    for j in range(len(value)):
        first = next((i for i in range(j) if _json_equal(value[i], value[j])), None)
        if first is not None:
            expected.append(
                f"$: expected unique items; items [{first}] and [{j}] are equal"
            )
    assert [
        str(i) for i in validate(value, {"type": "array", "uniqueItems": True})
    ] == expected


# --------------------------------------------------------------------------- item 9: conversion


class Color(Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0


@dataclasses.dataclass
class Node:
    label: str
    next: Node | None = None


class Meeting(TypedDict):
    when: datetime.datetime
    room: Point


SEEN: list[dict[str, Any]] = []


@tool
def everything(
    color: Color,
    n: int,
    point: Point,
    meeting: Meeting,
    day: datetime.date,
    at: datetime.time,
    tags: set[str],
    pair: tuple[int, Color],
    frozen: frozenset[int],
    node: Node,
    maybe: Optional[Color] = None,  # noqa: UP045 - the typing spelling on purpose
    num: int | float = 0,
    choice: Literal["a", 1, Color.GREEN] = "a",
    seq: Sequence[int] = (),
) -> str:
    """Record what the function receives."""
    SEEN.append(dict(locals()))
    return "ok"


EVERYTHING_ARGS: dict[str, Any] = {
    "color": "red",
    "n": 3.0,
    "point": {"x": 2.0},
    "meeting": {"when": "2024-05-06T07:08:09+02:00", "room": {"x": 1, "y": 2}},
    "day": "2024-05-06",
    "at": "07:08",
    "tags": ["a", "b"],
    "pair": [1, "green"],
    "frozen": [1, 2],
    "node": {"label": "a", "next": {"label": "b"}},
    "maybe": "green",
    "num": 2.5,
    "choice": "green",
    "seq": [1.0, 2],
}


def _check_everything(seen: Mapping[str, Any]) -> None:
    assert seen["color"] is Color.RED
    assert seen["n"] == 3
    assert type(seen["n"]) is int
    assert seen["point"] == Point(2, 0.0)
    assert type(seen["point"].x) is int
    assert seen["meeting"]["when"] == datetime.datetime(
        2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
    )
    assert seen["meeting"]["room"] == Point(1, 2.0)
    assert type(seen["meeting"]["room"].y) is float
    assert seen["day"] == datetime.date(2024, 5, 6)
    assert seen["at"] == datetime.time(7, 8)
    assert seen["tags"] == {"a", "b"}
    assert type(seen["tags"]) is set
    assert seen["pair"] == (1, Color.GREEN)
    assert seen["frozen"] == frozenset({1, 2})
    assert type(seen["frozen"]) is frozenset
    assert seen["node"] == Node("a", Node("b"))
    assert seen["maybe"] is Color.GREEN
    assert seen["num"] == 2.5
    assert seen["choice"] is Color.GREEN
    assert seen["seq"] == [1, 2]
    assert all(type(v) is int for v in seen["seq"])


def test_generated_schema_describes_dates_as_strings() -> None:
    """SC-46: date-time, date and time are ISO 8601 strings in the schema."""
    props = everything.parameters["properties"]
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["at"] == {"type": "string", "format": "time"}
    assert props["meeting"]["properties"]["when"] == {
        "type": "string",
        "format": "date-time",
    }


def test_format_is_validated() -> None:
    """SC-47: a string that is not ISO 8601 is an issue at its path; other formats are
    ignored."""
    bad = {
        **EVERYTHING_ARGS,
        "day": "May 6th",
        "meeting": {**EVERYTHING_ARGS["meeting"], "when": "soon"},
    }
    assert [str(i) for i in everything.validate_arguments(bad)] == [
        '$.meeting.when: expected a date-time string (ISO 8601); got string "soon"',
        '$.day: expected a date string (ISO 8601); got string "May 6th"',
    ]
    assert validate("anything", {"type": "string", "format": "email"}) == []


async def test_tool_receives_annotated_types(stream: bool) -> None:
    """SC-52, TL-10: the function gets enums, ints, dataclasses, TypedDicts, dates,
    sets, tuples (issue 13 item 9: an Enum parameter used to receive "red" and an int
    parameter 3.0)."""
    SEEN.clear()
    steps = [[call("everything", EVERYTHING_ARGS, call_id="c1")], "done"]
    response = await run_agent(steps, [everything], stream=stream)
    (result,) = function_results(response)
    assert (result.result, result.exception) == ("ok", None)
    (seen,) = SEEN
    _check_everything(seen)


async def test_middleware_sees_json_and_the_tool_converted_values(stream: bool) -> None:
    """TL-10: function middleware sees JSON arguments; the function receives converted
    values."""
    from minagent import function_middleware

    seen_by_middleware: list[Any] = []

    @function_middleware
    async def spy(context: Any, call_next: Any) -> None:
        seen_by_middleware.append(dict(context.arguments))
        await call_next()

    SEEN.clear()
    agent = Agent(
        ScriptedChatClient(
            [[call("everything", EVERYTHING_ARGS, call_id="c1")], "done"]
        )
    )
    if stream:
        response = agent.run("go", stream=True, tools=[everything], middleware=[spy])
        async for _ in response:
            pass
        await response.get_final_response()
    else:
        await agent.run("go", tools=[everything], middleware=[spy])
    assert seen_by_middleware == [EVERYTHING_ARGS]
    _check_everything(SEEN[0])


@dataclasses.dataclass
class Positive:
    value: int

    def __post_init__(self) -> None:
        if self.value <= 0:
            raise ValueError("value must be positive")


@tool
def positive(p: Positive, big: float = 0.0) -> str:
    """Take a checked dataclass."""
    return "ok"


async def test_conversion_failure_is_an_error_result_naming_the_parameter(
    stream: bool,
) -> None:
    """SC-53, TL-10: a failed conversion reaches the model, names the argument, calls
    nothing."""
    calls = [
        call("positive", {"p": {"value": -1}}, call_id="c1"),
        call("positive", {"p": {"value": 1}, "big": 10**400}, call_id="c2"),
    ]
    before = positive.invocation_count
    response = await run_agent([calls, "done"], [positive], stream=stream)
    texts = {r.call_id: r.result for r in function_results(response)}
    assert "ArgumentConversionError: argument p: Positive(...) failed" in texts["c1"]
    assert "value must be positive" in texts["c1"]
    assert "argument 'big' could not be converted" in texts["c2"]
    assert positive.invocation_count == before  # TL-10: not counted, not called
    assert response.text == "done"


def test_conversion_keeps_python_values_and_unknown_arguments() -> None:
    """SC-52: values already of the target class pass; extra arguments and the input are
    untouched."""
    converter = ArgumentConverter(everything.func)  # type: ignore[arg-type]
    given = {
        "color": Color.GREEN,
        "point": Point(1),
        "day": datetime.date(2024, 1, 1),
        "extra": [1],
    }
    out = converter.convert(given)
    assert out == given
    assert out is not given
    assert given["color"] is Color.GREEN


def test_union_prefers_the_exact_kind() -> None:
    """SC-52: `int | float` keeps 2.5 and 3, `float | int` keeps 3 an int, `float` makes
    3.0."""

    def f(a: int | float, b: float | int, c: float, d: int | str) -> None: ...

    out = ArgumentConverter(f).convert({"a": 3, "b": 3, "c": 3, "d": 4.0})
    assert [(v, type(v)) for v in out.values()] == [
        (3, int),
        (3, int),
        (3.0, float),
        (4, int),
    ]
    assert ArgumentConverter(f).convert({"a": 2.5})["a"] == 2.5


def test_conversion_error_type() -> None:
    """SC-53: ArgumentConversionError is a ValueError and model-visible."""
    with pytest.raises(ArgumentConversionError, match=r"^argument p: ") as info:
        ArgumentConverter(positive.func).convert({"p": {"value": 0}})  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    assert info.value.model_visible is True


def test_hand_written_schema_passes_json_through() -> None:
    """TL-10: with ``parameters=`` the function receives the JSON values as they are."""
    received: list[Any] = []

    def f(color: Color) -> None:
        received.append(color)

    t = FunctionTool(
        name="f",
        func=f,
        parameters={"type": "object", "properties": {"color": {"type": "string"}}},
    )
    asyncio.run(t.invoke({"color": "red"}))
    assert received == ["red"]


# SC-54: hints (the SC-43 strategy, plus date/time types) and conforming JSON values

DATE_TYPES = st.sampled_from([datetime.datetime, datetime.date, datetime.time])
ISO = {
    datetime.datetime: st.datetimes(timezones=st.none() | st.just(datetime.UTC)).map(
        datetime.datetime.isoformat
    ),
    datetime.date: st.dates().map(datetime.date.isoformat),
    datetime.time: st.times().map(datetime.time.isoformat),
}
HINTS = st.one_of(TYPES, DATE_TYPES, TYPES.map(lambda t: list[t] | datetime.date))  # type: ignore[valid-type]


def conforming(tp: Any) -> st.SearchStrategy[Any]:
    """`values_for` of test_schema, with ISO strings for dates and integral floats for
    ints."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in ISO:
        return ISO[tp]
    if tp is int:
        return st.integers() | st.integers(-(2**52), 2**52).map(float)
    if origin in (Union, types.UnionType) and any(a in ISO for a in args):
        return st.one_of([conforming(a) for a in args])
    if origin is list and args and args[0] in ISO:
        return st.lists(conforming(args[0]), max_size=3)
    return values_for(tp)


def _is_instance(value: Any, tp: Any) -> bool:
    """The test's own reading of "a value of the hint"."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Annotated, typing.Required, typing.NotRequired):
        return _is_instance(value, args[0])
    if tp is Any:
        return True
    if tp is None or tp is type(None):
        return value is None
    if tp is float:
        return type(value) is float
    if tp is int:
        return type(value) is int
    if isinstance(tp, type) and origin is None and not typing.is_typeddict(tp):
        return isinstance(value, tp) and not (
            tp is datetime.date and isinstance(value, datetime.datetime)
        )
    if origin is Literal:
        return any(value is a or (type(value) is type(a) and value == a) for a in args)
    if origin in (Union, types.UnionType):
        return any(_is_instance(value, a) for a in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_is_instance(v, args[0]) for v in value)
        return len(value) == len(args) and all(map(_is_instance, value, args))
    if origin in (list, Sequence):
        return isinstance(value, list) and all(_is_instance(v, args[0]) for v in value)
    if origin in (set, frozenset):
        return type(value) is origin and all(_is_instance(v, args[0]) for v in value)
    if origin in (dict, Mapping):
        return isinstance(value, dict) and all(
            _is_instance(v, args[1]) for v in value.values()
        )
    hints = typing.get_type_hints(tp, include_extras=True)
    if typing.is_typeddict(tp):
        return isinstance(value, dict) and all(
            k in hints and _is_instance(v, hints[k]) for k, v in value.items()
        )
    return isinstance(value, tp) and all(
        _is_instance(getattr(value, f.name), hints[f.name])
        for f in dataclasses.fields(tp)
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tp=HINTS, data=st.data())
def test_conforming_json_converts_to_the_hint(tp: Any, data: st.DataObject) -> None:
    """SC-54, SC-52, SC-46: what the generated schema accepts converts to a value of the
    hint."""

    f = tool_of(tp)
    schema = function_schema(f).parameters
    value = data.draw(conforming(tp), label="value")
    assert validate({"x": value}, schema) == []
    try:
        converted = ArgumentConverter(f).convert({"x": value})["x"]
    # SC-54's one exception: set[Any] of unhashable items
    except ArgumentConversionError as exc:
        assume(not (isinstance(exc.__cause__, TypeError) and "unhashable" in str(exc)))
        raise
    assert _is_instance(converted, tp), (tp, value, converted)


# --------------------------------------------------------------------------- any argument text


@tool
def shaped(
    point: Point,
    color: Color,
    when: datetime.date,
    items: set[int],
    maybe: int | None = None,
) -> str:
    """A tool with a structured signature."""
    return "ok"


ARGUMENT_TEXT = st.one_of(
    st.text(max_size=40),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda i: (
            st.lists(i, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    ["point", "color", "when", "items", "maybe", "x", "y", "z"]
                ),
                i,
                max_size=5,
            )
        ),
        max_leaves=12,
    ).map(lambda v: json.dumps(v)),
    st.builds(
        lambda d, c: c * d + "1" + "]" * d,
        st.integers(0, 3000),
        st.sampled_from(["[", '{"a":']),
    ),
    st.integers(0, 6000).map(lambda n: '{"maybe": ' + "7" * n + "}"),
    st.sampled_from(
        [
            '{"maybe": NaN}',
            '{"maybe": -Infinity}',
            '{"when": "2024-13-45"}',
            '{"items": [1, 1.0]}',
        ]
    ),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=ARGUMENT_TEXT, stream=st.booleans())
def test_any_argument_text_yields_a_result(text: str, stream: bool) -> None:
    """SC-49, SC-50, SC-53, TL-10, LP-6: whatever argument text the model sends, the
    call gets a tool result or an error result and the run reaches the model's next
    answer, in both modes."""
    steps = [[call("shaped", text, call_id="c1")], "after"]
    response = asyncio.run(run_agent(steps, [shaped], stream=stream))
    (result,) = function_results(response)
    assert result.result == "ok" or (
        result.exception is not None and result.result.startswith("Error")
    )
    assert response.text == "after"


# --------------------------------------------------------------------------- item 14: strict JSON


def test_non_finite_float_arguments_are_rejected() -> None:
    """SC-50: NaN and the infinities fail validation for float parameters with a clear
    issue."""

    def f(x: float) -> None: ...

    schema = function_schema(f).parameters
    for value, shown in [
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ]:
        assert [str(i) for i in validate({"x": value}, schema)] == [
            f"$.x: expected a finite number; got number {shown}"
        ]


@tool
def weird() -> dict[str, Any]:
    """Return numbers JSON cannot carry."""
    return {
        "nan": math.nan,
        "inf": [math.inf, -math.inf],
        "big": 10**2000,
        "ok": 10**20,
        "f": 1.5,
    }


async def test_tool_results_are_strict_json(stream: bool) -> None:
    """TL-11: NaN/Infinity become strings, an over-long int its digits; the next request
    and the serialised thread are strict JSON (issue 13 item 14)."""
    client = ScriptedChatClient([[call("weird", {}, call_id="c1")], "done"])
    agent = Agent(client, tools=[weird])
    thread = agent.get_new_thread()
    if stream:
        response = agent.run("go", stream=True, thread=thread)
        async for _ in response:
            pass
        await response.get_final_response()
    else:
        await agent.run("go", thread=thread)
    (result,) = [
        c
        for m in client.requests[1].messages
        for c in m.contents
        if c.type == "function_result"
    ]
    assert result.result == {
        "nan": "NaN",
        "inf": ["Infinity", "-Infinity"],
        "big": "1" + "0" * 2000,
        "ok": 10**20,
        "f": 1.5,
    }
    state = await thread.serialize()
    json.dumps(state, allow_nan=False)  # raises ValueError on NaN or infinity
    assert "NaN" not in json.dumps(state).replace('"NaN"', "")


def test_result_value_strict_json_forms() -> None:
    """TL-11: the documented string forms; an int CPython cannot print fails (an error
    result)."""
    assert result_value([math.nan, math.inf, -math.inf, 2.0]) == [
        "NaN",
        "Infinity",
        "-Infinity",
        2.0,
    ]
    assert result_value(10**999) == 10**999  # 1000 digits
    assert result_value(-(10**1000)) == "-1" + "0" * 1000
    with pytest.raises(ValueError, match="integer string conversion"):
        result_value(10**10_000)


def test_result_value_follows_the_configured_digit_limit(limits: None) -> None:
    """TL-11: the digit limit of SC-48 decides, whatever it is set to."""
    set_argument_limits(max_integer_digits=3)
    assert [result_value(v) for v in (999, -999, 1000, 10**30)] == [
        999,
        -999,
        "1000",
        str(10**30),
    ]


_SCALAR_KINDS = ["integer", "number", "string", "boolean"]
_scalar_values = st.one_of(
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    kinds=st.dictionaries(
        st.sampled_from(["a", "b", "c"]), st.sampled_from(_SCALAR_KINDS), max_size=3
    ),
    required=st.sets(st.sampled_from(["a", "b", "c"])),
    value=st.one_of(
        st.dictionaries(
            st.sampled_from(["a", "b", "c", "d"]), _scalar_values, max_size=4
        ),
        _scalar_values,
    ),
)
def test_the_fast_check_never_accepts_what_the_validator_rejects(
    kinds: dict[str, str], required: set[str], value: Any
) -> None:
    """SC-55: the compiled check says valid only where validate() finds no issue, and it
    says valid for the plain valid arguments a model sends."""
    from minagent._validate import compile_fast_check, validate

    schema = {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in kinds.items()},
        "required": sorted(required & kinds.keys()),
        "additionalProperties": False,
    }
    check = compile_fast_check(schema)
    assert check is not None
    if check(value):
        assert validate(value, schema) == []
    plain = {
        name: {"integer": 1, "number": 1.5, "string": "x", "boolean": True}[kind]
        for name, kind in kinds.items()
    }
    assert check(plain)
    assert (
        compile_fast_check(
            {**schema, "properties": {"a": {"type": "integer", "minimum": 1}}}
        )
        is None
    )
