"""Limits: model output is data, never a way to end the run (spec/schema.md SC-48 ..
SC-51, SC-56, SC-57): hostile arguments, bounded validation work, schemas the validator
cannot apply."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import logging
import math
import sys
import time
from collections.abc import Iterator
from enum import Enum
from typing import Any, NotRequired, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    ArgumentLimits,
    Content,
    ContentError,
    FunctionTool,
    set_argument_limits,
    tool,
)
from minagent import _validate as validator_module
from minagent._schema import function_schema
from minagent._validate import (
    _reported,
    argument_limits,
    check_limits,
    parse_json_arguments,
    validate,
)
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run


def test_limits_reject_long_names_strange_keys_and_huge_ints() -> None:
    """SC-48, SC-50: a property name over the string limit, non-JSON keys and values, an
    integer beyond the digit limit; set_argument_limits takes only ArgumentLimits."""
    small = ArgumentLimits(max_string_chars=4, max_integer_digits=5)
    assert [i.problem for i in check_limits({"abcdefgh": 1}, small)] == [
        "a property name is longer than 4 characters"
    ]
    # a non-str key: the full walk decides (nothing breaks a limit)
    assert check_limits({1: "x"}, small) == []
    assert check_limits({"a": object()}, small) == []  # not JSON, but no limit broken
    huge = (
        10 ** (sys.get_int_max_str_digits() + 10)
        if sys.get_int_max_str_digits()
        else 10**6000
    )
    assert (
        check_limits({"n": huge}, small)[0].problem
        == "expected an integer of at most 5 digits"
    )
    with pytest.raises(TypeError, match="ArgumentLimits"):
        set_argument_limits({"max_depth": 3})  # type: ignore[arg-type]
    previous = set_argument_limits(max_depth=7)
    try:
        assert argument_limits().max_depth == 7
    finally:
        set_argument_limits(previous)
    assert argument_limits() == previous


def test_the_digit_limit_cannot_exceed_what_can_be_written_back() -> None:
    """SC-48: a digit limit above CPython's int-from-string limit is a ValueError naming
    both, so every accepted integer can be written back as JSON text; with that limit
    off (0) it is accepted."""
    saved = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(4300)
        assert ArgumentLimits(max_integer_digits=4300).max_integer_digits == 4300
        with pytest.raises(
            ValueError,
            match=r"max_integer_digits must be <= 4300, CPython's int limit, got 5000",
        ):
            ArgumentLimits(max_integer_digits=5000)
        sys.set_int_max_str_digits(0)
        assert ArgumentLimits(max_integer_digits=5000).max_integer_digits == 5000
    finally:
        sys.set_int_max_str_digits(saved)


def test_an_integer_python_cannot_write_as_text_is_refused_at_the_limit() -> None:
    """SC-48: limits made while CPython's int-to-text limit was off (0) and used after
    it is back at 4300: an integer at the digit limit whose digits Python will not count
    as text is treated as over the limit (never accepted without being counted); made
    with the limit on, they are refused."""
    saved = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)
        limits = ArgumentLimits(max_integer_digits=4400)
        sys.set_int_max_str_digits(4300)
        # 4400 digits: at the limit, beyond what str() writes
        (issue,) = check_limits(10**4399, limits)
        assert "at most 4400 digits" in issue.problem
        # counted, within
        assert check_limits(10**4000, ArgumentLimits(max_integer_digits=4001)) == []
        with pytest.raises(ValueError, match="max_integer_digits must be <= 4300"):
            ArgumentLimits(max_integer_digits=4400)
    finally:
        sys.set_int_max_str_digits(saved)


def test_an_integer_too_long_to_print_is_over_the_digit_limit() -> None:
    """SC-48: an integer beyond Python's own int-to-text limit is over the argument
    digit limit."""
    (issue,) = validate(10**5000, {})
    assert "digits" in issue.problem


def test_lenient_warnings_are_remembered_within_a_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """SC-57: a tool's unusable schema is logged once; the memory of what was logged is
    bounded (it is cleared after 1,000 entries, so a long-lived process logs such a tool
    again rather than grow)."""
    schema = {"type": "nosuch"}
    saved = set(_reported)
    _reported.clear()
    with caplog.at_level(logging.WARNING, logger="minagent"):
        assert validate(1, schema, lenient_for="first") == []
        assert validate(1, schema, lenient_for="first") == []
        assert sum("tool 'first'" in r.getMessage() for r in caplog.records) == 1
        for i in range(1000):
            validate(1, schema, lenient_for=f"other{i}")
        assert len(_reported) <= 1000
        caplog.clear()
        validate(1, schema, lenient_for="first")
        assert sum("tool 'first'" in r.getMessage() for r in caplog.records) == 1
    _reported.clear()
    _reported.update(saved)  # the process's memory as it was


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


class Color(Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0


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
