"""A tool's result (spec/tools.md TL-5, TL-11): the value sent back for what a function
returns, as strict JSON.

Like test_tools.py, this module does not use `from __future__ import annotations`."""

import collections
import dataclasses
import json
import math
import types
from collections.abc import Iterator
from typing import (
    Any,
)

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import (
    Agent,
    tool,
)
from minagent._tools import result_value
from minagent._validate import (
    argument_limits,
    set_argument_limits,
)
from minagent.testing import ScriptedChatClient, call


@dataclasses.dataclass
class Reading:
    sensor: str
    values: tuple[float, ...]
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Report:
    title: str
    readings: list[Reading]


class HasToDict:
    def to_dict(self) -> dict[str, Any]:
        return {"kind": "custom", "pair": (1, 2), "nested": {"ok": True}}


class Opaque:
    def __str__(self) -> str:
        return "<opaque thing>"


@pytest.mark.parametrize("value", [None, "text", "", 0, -7, 2**70, 1.5, True, False])
def test_result_value_scalars_unchanged(value: Any) -> None:
    """TL-5: None, str, int, float and bool are returned as they are (type included)."""
    out = result_value(value)
    assert out == value
    assert type(out) is type(value)


def test_result_value_containers() -> None:
    """TL-5: mappings and sequences are converted element by element; tuples and sets
    become lists; mapping keys become strings."""
    assert result_value({"a": (1, 2), "b": [{"c": None}]}) == {
        "a": [1, 2],
        "b": [{"c": None}],
    }
    assert result_value((1, "x", (2.5,))) == [1, "x", [2.5]]
    assert sorted(result_value({3, 1, 2})) == [1, 2, 3]
    assert result_value(frozenset({"only"})) == ["only"]
    assert result_value({1: "one", None: "none"}) == {"1": "one", "None": "none"}
    assert result_value(types.MappingProxyType({"k": (True,)})) == {"k": [True]}
    assert result_value(collections.OrderedDict(a=1)) == {"a": 1}
    assert result_value(collections.deque([1, (2, 3)])) == [1, [2, 3]]
    assert result_value(range(3)) == [0, 1, 2]
    assert type(result_value((1,))) is list
    assert type(result_value(collections.OrderedDict())) is dict


def test_result_value_dataclass() -> None:
    """TL-5: dataclasses go through `dataclasses.asdict`, nested ones included."""
    report = Report("daily", [Reading("t1", (1.0, 2.5), ["hot"]), Reading("t2", ())])
    out = result_value(report)
    assert out == {
        "title": "daily",
        "readings": [
            {"sensor": "t1", "values": [1.0, 2.5], "tags": ["hot"]},
            {"sensor": "t2", "values": [], "tags": []},
        ],
    }
    assert json.loads(json.dumps(out)) == out


def test_result_value_to_dict() -> None:
    """TL-5: an object with `to_dict()` is converted through it (and the result made
    JSON)."""
    assert result_value(HasToDict()) == {
        "kind": "custom",
        "pair": [1, 2],
        "nested": {"ok": True},
    }
    assert result_value([HasToDict()]) == [result_value(HasToDict())]


def test_result_value_anything_else_is_str() -> None:
    """TL-5: anything else becomes `str()`: arbitrary objects, bytes, classes (even with
    a `to_dict` method), nested inside containers too."""
    assert result_value(Opaque()) == "<opaque thing>"
    thing = object()
    assert result_value(thing) == str(thing)
    assert result_value(b"raw") == str(b"raw")
    assert result_value(HasToDict) == str(HasToDict)
    assert result_value(Report) == str(Report)
    assert result_value({"x": [Opaque()]}) == {"x": ["<opaque thing>"]}


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@given(_json_values)
def test_result_value_keeps_json_values(value: Any) -> None:
    """TL-5: any JSON value comes back equal, and the result survives a JSON round
    trip."""
    out = result_value(value)
    assert out == value
    assert json.loads(json.dumps(out)) == out


def test_result_value_prefers_to_dict_over_asdict() -> None:
    """TL-5: a returned Message or Content becomes its wire form, not a field dump."""
    from minagent import Content, Message

    assert result_value(Message("user", ["hi"])) == Message("user", ["hi"]).to_dict()
    assert result_value(Content.from_text("x")) == {"type": "text", "text": "x"}


async def test_unconvertible_result_is_an_error_result_not_a_failed_run() -> None:
    """TL-5, LP-6: a value whose conversion raises gives the call an error result."""
    from minagent.testing import ScriptedChatClient, call, reply

    class Broken:
        def to_dict(self) -> dict[str, Any]:
            raise RuntimeError("cannot serialise")

    @tool
    async def make_broken() -> Any:
        """Return something that cannot be converted."""
        return Broken()

    client = ScriptedChatClient([reply(call("make_broken", {}, call_id="b1")), "done"])
    response = await client.get_response("go", options={"tools": [make_broken]})
    result = response.messages[1].contents[0]
    assert result.exception == "cannot serialise"
    assert (
        "could not be converted to JSON: RuntimeError: cannot serialise"
        in result.result
    )
    assert response.text == "done"


def test_result_value_keeps_str_and_bool_subclasses() -> None:
    """TL-11: a str subclass (a StrEnum member) is already JSON text and is returned as
    it is."""

    class Tag(str):
        pass

    t = Tag("x")
    assert result_value(t) is t


@pytest.fixture
def limits() -> Iterator[None]:
    """Restore the module-wide limits after a test that changes them."""
    previous = argument_limits()
    yield
    set_argument_limits(previous)


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
