"""The validator under hostile schemas: polynomial work whatever the nesting (SC-56),
and a tool whose schema it cannot fully apply never fails the run (SC-57)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent, FunctionTool
from minagent import _validate as validator_module
from minagent._validate import validate
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run


def count_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every check the validator is asked for (its unit of work), reused ones
    included."""
    counter = [0]
    original = validator_module._Validator.check

    def counted(self: Any, value: Any, schema: Any, path: str) -> Any:
        counter[0] += 1
        return original(self, value, schema, path)

    monkeypatch.setattr(validator_module._Validator, "check", counted)
    return counter


def edges(schema: Any) -> int:
    """Edges of the schema graph: one into every dict or bool of the schema's tree, plus
    one for every $ref (to the node it points at)."""
    if isinstance(schema, dict):
        return 1 + ("$ref" in schema) + sum(edges(v) for v in schema.values())
    if isinstance(schema, list):
        return sum(edges(v) for v in schema)
    return 1 if isinstance(schema, bool) else 0


def nodes(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(nodes(v) for v in value)
    return 1


def chain(depth: int, width: int = 2) -> dict[str, Any]:
    """The issue's hostile schema: each level is anyOf of ``width`` references to the
    level below."""
    defs: dict[str, Any] = {"L0": {"type": "integer"}}
    for i in range(1, depth + 1):
        defs[f"L{i}"] = {"anyOf": [{"$ref": f"#/$defs/L{i - 1}"} for _ in range(width)]}
    return {
        "type": "object",
        "properties": {"n": {"$ref": f"#/$defs/L{depth}"}},
        "$defs": defs,
    }


@pytest.mark.parametrize("depth", [12, 16, 40])
def test_the_hostile_chain_costs_linear_work(
    depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SC-56: anyOf of two $refs per level, 12, 16 or 40 levels, and one wrong-typed
    argument: the checks asked for stay within (schema edges) x (value nodes) + 1 (it
    was 2**depth), with the same one issue."""
    counter = count_checks(monkeypatch)
    schema, value = chain(depth), {"n": "not a number"}
    assert [str(i) for i in validate(value, schema)] == [
        '$.n: expected integer; got string "not a number"'
    ]
    assert counter[0] <= edges(schema) * nodes(value) + 1


@st.composite
def layered(draw: st.DrawFn) -> dict[str, Any]:
    """A schema of up to 10 levels of $defs, each an object, array or composition of
    references to lower levels (shared many times over): the shape that made validation
    exponential."""
    leaves = [
        {"type": "integer"},
        {"type": "string", "minLength": 2},
        {"enum": [1, "a", None]},
        True,
    ]
    defs: dict[str, Any] = {"L0": draw(st.sampled_from(leaves))}
    depth = draw(st.integers(1, 10))
    for i in range(1, depth + 1):
        below = st.sampled_from([f"#/$defs/L{j}" for j in range(i)]).map(
            lambda ref: {"$ref": ref}
        )
        kind = draw(st.sampled_from(["anyOf", "oneOf", "allOf", "object", "array"]))
        if kind == "object":
            names = draw(
                st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True)
            )
            defs[f"L{i}"] = {
                "type": "object",
                "properties": {n: draw(below) for n in names},
            }
        elif kind == "array":
            defs[f"L{i}"] = {"type": "array", "items": draw(below)}
        else:
            defs[f"L{i}"] = {kind: draw(st.lists(below, min_size=1, max_size=3))}
    return {"$ref": f"#/$defs/L{depth}", "$defs": defs}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from(["a", "ab", "xyz"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200)
@given(schema=layered(), value=json_values)
def test_validation_work_is_polynomial_in_schema_and_value(
    schema: dict[str, Any], value: Any
) -> None:
    """SC-56: for any layered anyOf/oneOf/allOf/$ref schema and any value, the checks
    asked for are at most (schema edges) x (value nodes) + 1, and no issue is reported
    twice."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        counter = count_checks(monkeypatch)
        issues = validate(value, schema)
    assert counter[0] <= edges(schema) * nodes(value) + 1
    assert len(issues) == len(set(issues))


def test_the_same_issue_along_two_routes_is_reported_once() -> None:
    """SC-56, SC-36: allOf reaching one schema twice reports its issue once."""
    shared = {"type": "integer"}
    assert [
        str(i)
        for i in validate(
            "x",
            {"allOf": [shared, shared, {"$ref": "#/$defs/i"}], "$defs": {"i": shared}},
        )
    ] == ['$: expected integer; got string "x"']


# -- SC-57 ---------------------------------------------------------------------------------------

UNUSABLE = {
    "js-regex": {"type": "string", "pattern": "^\\p{L}+$"},
    "type-any": {"type": "any"},
    "external-ref": {"$ref": "https://example.com/name.json"},
    "missing-ref": {"$ref": "#/$defs/missing"},
    "ref-cycle": {
        "$ref": "#/$defs/a",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
    },
    "enum-not-a-list": {"enum": 5},
}


def greet_tool(name_schema: dict[str, Any], seen: list[Any]) -> FunctionTool:
    def greet(name: Any, times: int = 1) -> str:
        seen.append(name)
        return f"hi {name}"

    parameters = {
        "type": "object",
        "properties": {"name": name_schema, "times": {"type": "integer"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    return FunctionTool(name="greet", description="", func=greet, parameters=parameters)


@pytest.mark.parametrize("case", sorted(UNUSABLE))
async def test_a_schema_the_validator_cannot_apply_never_fails_the_run(
    case: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """SC-57: a tool whose schema has a part minagent cannot apply runs: that part is
    left to the tool, the rest is still checked (a wrong-typed ``times`` and an unknown
    property get an error result), and the problem is logged once for the tool, however
    many calls."""
    getattr(validator_module, "_reported", set()).clear()
    seen: list[Any] = []
    steps = [
        call("greet", {"name": "Zoë"}, call_id="c1"),
        call("greet", {"name": "Ann", "times": "twice", "extra": 1}, call_id="c2"),
        call("greet", {"name": "Bo"}, call_id="c3"),
        "done",
    ]
    agent = Agent(ScriptedChatClient(steps), tools=[greet_tool(UNUSABLE[case], seen)])
    with caplog.at_level(logging.WARNING, logger="minagent"):
        answer = await run(agent, "go", stream=stream)
    assert answer.text == "done"
    assert seen == ["Zoë", "Bo"]
    results = {
        c.call_id: c.result
        for m in answer.messages
        for c in m.contents
        if c.type == "function_result"
    }
    assert "$.times: expected integer" in results["c2"]
    assert "$.extra: unexpected property" in results["c2"]
    warnings = [
        r.getMessage()
        for r in caplog.records
        if "cannot apply all of its schema" in r.getMessage()
    ]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "tool 'greet': minagent cannot apply all of its schema (at $.name"
    )


def test_ecma_named_groups_are_checked() -> None:
    """SC-57, SC-39: a pattern with an ECMAScript named group is read as Python's and
    applied."""
    schema = {"type": "string", "pattern": "^(?<first>[a-z]+)-(?<second>\\d+)$"}
    assert validate("abc-12", schema) == []
    assert [i.problem for i in validate("ABC", schema)] == [
        'expected a string matching "^(?<first>[a-z]+)-(?<second>\\\\d+)$"; got string "ABC"'
    ]


def test_a_schema_nested_too_deeply_is_left_to_the_tool() -> None:
    """SC-57: a lenient validation of a schema nested deeper than the interpreter can
    follow reports no issue (it is left to the tool); without lenient_for it is SC-50's
    issue."""
    deep = chain(sys.getrecursionlimit())
    assert validate({"n": "x"}, deep, lenient_for="t") == []
    assert [i.problem for i in validate({"n": "x"}, deep)] == [
        "the value is nested too deeply to be checked"
    ]


def test_strict_validation_still_raises() -> None:
    """SC-57, SC-41: without lenient_for, a schema that cannot be applied is a
    ValueError."""
    for schema in UNUSABLE.values():
        with pytest.raises(ValueError, match=r"schema|\$ref|pattern"):
            validate("x", schema)
