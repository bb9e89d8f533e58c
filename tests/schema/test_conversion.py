"""Converting validated arguments to the annotated types (spec/schema.md SC-52, SC-53).

End to end too: a tool with a parameter of every kind, whose dates are described as
strings (SC-46) and checked by their format (SC-47), receives the converted values while
middleware sees the JSON the model sent (spec/tools.md TL-10).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest
from hypothesis import strategies as st

from minagent import (
    Agent,
    ArgumentConversionError,
    Content,
    FunctionTool,
    tool,
)
from minagent._convert import ArgumentConverter
from minagent._validate import validate
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run


@dataclasses.dataclass
class PointXY:
    x: int
    y: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must not be negative")


def target(
    when: datetime.date,
    pair: tuple[int, str],
    point: PointXY,
    either: int | str,
    tags: frozenset[str],
    ratio: float,
    flag: bool,
    *rest: Any,
    **extra: Any,
) -> None:
    """A function whose parameters exercise the converters."""


class Callable_:
    def __call__(self, count: int) -> int:
        return count


def test_conversion_of_each_kind_and_its_failures() -> None:
    """SC-52, SC-53: values of every kind convert; a mismatch is an
    ArgumentConversionError naming the parameter and the path, never another
    exception."""
    convert = ArgumentConverter(target).convert
    ok = convert(
        {
            "when": "2026-11-24",
            "pair": [1, "a"],
            "point": {"x": 1, "y": 2},
            "either": "s",
            "tags": ["a", "b"],
            "ratio": 2,
            "flag": True,
        }
    )
    assert ok["when"] == datetime.date(2026, 11, 24)
    assert ok["pair"] == (1, "a")
    assert ok["point"] == PointXY(1, 2)
    assert ok["tags"] == frozenset({"a", "b"})
    assert ok["ratio"] == 2.0
    assert ok["flag"] is True
    bad: list[tuple[str, Any, str]] = [
        ("when", "not a date", "ISO 8601"),
        ("pair", [1, "a", 3], "2 items"),
        ("point", [1, 2], "object"),
        ("point", {"x": -1, "y": 0}, "failed"),
        ("either", 1.5, "union"),
    ]
    for name, value, says in bad:
        with pytest.raises(ArgumentConversionError, match=says) as raised:
            convert({name: value})
        assert name in str(raised.value)
    assert ArgumentConverter(Callable_()).convert({"count": 3.0}) == {"count": 3}


class _Point(TypedDict):
    x: int


def test_a_typeddict_union_member_takes_only_its_own_keys() -> None:
    """SC-52: in a union, a TypedDict member takes an object of its own keys with its
    required keys; an object of other keys goes on to the next member (found by
    hypothesis: `{"": []}` stayed a list under `list[str | TD | Mapping[str,
    set[str]]]`)."""
    seen: list[object] = []

    @tool
    def take(items: list[str | _Point | Mapping[str, set[str]]]) -> str:
        """Take."""
        seen.append(items)
        return "ok"

    asyncio.run(take.invoke({"items": [{"": ["a"]}, {"x": 1}, "s"]}))
    assert seen == [[{"": {"a"}}, {"x": 1}, "s"]]


class OnlyRed(enum.Enum):
    RED = "red"


class PointDict(TypedDict):
    x: int


@dataclasses.dataclass
class PositiveN:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError("n must be positive")


def test_bare_dict_and_tuple_pass_items_through() -> None:
    """SC-52: an un-parameterised dict or tuple converts the container and leaves the
    items as they are."""

    def f(d: dict, t: tuple, m: dict[str, Any]) -> None:  # type: ignore[type-arg]
        pass

    conv = ArgumentConverter(f)
    out = conv.convert({"d": {"a": [1]}, "t": [1, "x"], "m": {"k": 2.0}})
    assert out == {"d": {"a": [1]}, "t": (1, "x"), "m": {"k": 2.0}}
    assert type(out["t"]) is tuple
    with pytest.raises(ArgumentConversionError, match=r"d: expected an object"):
        conv.convert({"d": [1]})


def test_context_by_annotation_is_not_converted() -> None:
    """SC-5: a parameter annotated FunctionInvocationContext is the context, never an
    argument to convert."""

    def f(x: int, ctx: FunctionInvocationContext) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    conv = ArgumentConverter(f)
    assert set(conv.converters) == {"x"}
    assert conv.convert({"x": 3.0}) == {"x": 3}


def test_unhashable_annotated_hint_still_converts() -> None:
    """SC-52: a hint that cannot be hashed (metadata holding a dict) is converted like
    its type."""

    def f(x: Annotated[int, {"unit": "s"}]) -> None:
        pass

    assert ArgumentConverter(f).convert({"x": 4.0}) == {"x": 4}


def test_typed_dict_rejects_a_non_object() -> None:
    """SC-52: a TypedDict argument that is not an object is a conversion error naming
    the path."""

    def f(p: PointDict) -> None:
        pass

    conv = ArgumentConverter(f)
    assert conv.convert({"p": {"x": 2.0}}) == {"p": {"x": 2}}
    with pytest.raises(ArgumentConversionError, match=r"p: expected an object"):
        conv.convert({"p": 5})


def test_union_prefers_exact_number_types() -> None:
    """SC-52: a union tries its members without number conversion first: ints stay ints,
    a float member takes 3 last."""

    def f(a: int | str, b: float | str, c: list[float]) -> None:
        pass

    conv = ArgumentConverter(f)
    out = conv.convert({"a": 3, "b": 3, "c": [2.5]})
    assert out["a"] == 3
    assert type(out["a"]) is int
    assert out["b"] == 3.0
    assert type(out["b"]) is float

    class Measured(float):  # a float subclass (not the exact type) carrying an infinity
        pass

    assert conv.convert({"c": [Measured(1.5)]}) == {"c": [1.5]}
    with pytest.raises(ArgumentConversionError, match="finite"):
        conv.convert({"c": [Measured("inf")]})


def test_dataclass_refusal_in_a_union_names_the_class() -> None:
    """SC-52: a dataclass whose __init__ refuses the value is an ArgumentConversionError
    naming the class."""

    def f(p: PositiveN | OnlyRed) -> None:
        pass

    conv = ArgumentConverter(f)
    assert conv.convert({"p": {"n": 2}}) == {"p": PositiveN(2)}
    assert conv.convert({"p": "red"}) == {"p": OnlyRed.RED}
    with pytest.raises(ArgumentConversionError, match="Positive"):
        conv.convert({"p": {"n": -1}})


async def run_agent(steps: list[Any], tools: list[Any], *, stream: bool) -> Any:
    return await run(Agent(ScriptedChatClient(steps), tools=tools), "go", stream=stream)


def function_results(response: Any) -> list[Content]:
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


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


ISO = {
    datetime.datetime: st.datetimes(timezones=st.none() | st.just(datetime.UTC)).map(
        datetime.datetime.isoformat
    ),
    datetime.date: st.dates().map(datetime.date.isoformat),
    datetime.time: st.times().map(datetime.time.isoformat),
}
