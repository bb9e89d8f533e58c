"""Options merging (spec/options.md, OP-1 .. OP-7)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    merge_options,
)
from minagent.testing import ScriptedChatClient


class NamedTool:
    """A small tool object: compared by identity, named by its `name` attribute."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"NamedTool({self.name!r})@{id(self):x}"


@dataclass
class EqualTool:
    """A tool object that compares equal by value (like a dataclass-based tool)."""

    name: str


class Nameless:
    def __repr__(self) -> str:
        return f"Nameless@{id(self):x}"


def same_objects(actual: list[Any], expected: list[Any]) -> bool:
    return len(actual) == len(expected) and all(
        a is b for a, b in zip(actual, expected, strict=True)
    )


# --------------------------------------------------------------------------------------------
# One rule at a time


def test_none_in_override_keeps_the_base_value() -> None:
    """OP-1: an override value of None never replaces the base value, for every kind of
    key."""
    tool = NamedTool("t")
    base = {
        "tools": [tool],
        "instructions": "be brief",
        "metadata": {"a": 1},
        "temperature": 0.3,
    }
    override = {
        "tools": None,
        "instructions": None,
        "metadata": None,
        "temperature": None,
    }
    assert merge_options(base, override) == base
    assert same_objects(merge_options(base, override)["tools"], [tool])


def test_no_value_in_the_result_is_none() -> None:
    """OP-2: None values of the base are dropped too; the result holds no None."""
    result = merge_options(
        {"model": None, "seed": 3, "tools": None}, {"stop": None, "top_p": None}
    )
    assert result == {"seed": 3}
    assert merge_options({"instructions": None}, None) == {}


def test_falsy_values_that_are_not_none_are_kept() -> None:
    """OP-1, OP-6: 0, False, "" and [] are real values: they override and are kept."""
    assert merge_options(
        {"temperature": 0.7, "store": True}, {"temperature": 0, "store": False}
    ) == {
        "temperature": 0,
        "store": False,
    }
    assert merge_options({"stop": ["x"]}, {"stop": []}) == {"stop": []}


def test_tools_are_base_then_override_once_by_name() -> None:
    """OP-3: tools are concatenated base first; the same object is kept once at its
    first position."""
    a, b, c = NamedTool("a"), NamedTool("b"), NamedTool("c")
    result = merge_options({"tools": [a, b]}, {"tools": [c, a, b]})
    assert same_objects(result["tools"], [a, b, c])
    result = merge_options({"tools": [a]}, {"tools": [b, b]})
    assert same_objects(result["tools"], [a, b])


def test_equal_declaration_dicts_are_kept_once() -> None:
    """OP-3: an equal declaration dict (named by "name" or "function": {"name"}) is kept
    once."""
    flat = {"name": "search", "parameters": {}}
    nested = {"type": "function", "function": {"name": "lookup"}}
    result = merge_options(
        {"tools": [flat, nested]},
        {"tools": [copy.deepcopy(nested), copy.deepcopy(flat)]},
    )
    assert same_objects(result["tools"], [flat, nested])


def test_a_different_tool_with_a_taken_name_is_a_value_error() -> None:
    """OP-3: a different object with a name already present is a ValueError naming the
    tool."""
    with pytest.raises(ValueError, match="search"):
        merge_options(
            {"tools": [NamedTool("search")]}, {"tools": [NamedTool("search")]}
        )
    with pytest.raises(ValueError, match="lookup"):
        merge_options(
            {"tools": [NamedTool("lookup")]},
            {"tools": {"function": {"name": "lookup"}}},
        )
    with pytest.raises(ValueError, match="calc"):
        merge_options(
            {"tools": [{"name": "calc", "v": 1}]}, {"tools": [{"name": "calc", "v": 2}]}
        )
    with pytest.raises(ValueError, match="dup"):  # within one layer too
        merge_options({"tools": [NamedTool("dup"), NamedTool("dup")]}, None)


def test_equal_but_distinct_tool_objects_clash() -> None:
    """OP-3: only the same object (or an equal declaration dict) counts as the same
    tool; a different object that merely compares equal is a ValueError."""
    with pytest.raises(ValueError, match="search"):
        merge_options(
            {"tools": [EqualTool("search")]}, {"tools": [EqualTool("search")]}
        )
    tool = EqualTool("search")
    assert same_objects(
        merge_options({"tools": [tool]}, {"tools": [tool]})["tools"], [tool]
    )


def test_nameless_tools_are_always_appended() -> None:
    """OP-3: entries without a name are appended every time, even the same object
    twice."""
    x, y = Nameless(), Nameless()
    named = NamedTool("n")
    untitled = {"type": "code_interpreter"}
    result = merge_options(
        {"tools": [x, named, untitled]}, {"tools": [x, y, dict(untitled), named]}
    )
    assert same_objects(result["tools"], [x, named, untitled, x, y, result["tools"][5]])
    assert result["tools"][5] == untitled


def test_a_single_tool_is_a_list_of_one() -> None:
    """OP-3: a single tool, in the base or the override, is taken as a list of one."""
    a, b = NamedTool("a"), NamedTool("b")
    assert same_objects(merge_options({"tools": a}, {"tools": b})["tools"], [a, b])
    decl = {"name": "d"}
    assert same_objects(merge_options({"tools": decl}, None)["tools"], [decl])
    assert same_objects(merge_options(None, {"tools": (a, b)})["tools"], [a, b])
    assert isinstance(merge_options({"tools": (a,)}, None)["tools"], list)


@pytest.mark.parametrize(
    ("base", "override", "expected"),
    [
        ("Be brief.", "Answer in French.", "Be brief.\nAnswer in French."),
        ("Be brief.", "", "Be brief."),
        ("", "Answer in French.", "Answer in French."),
        (None, "Only override.", "Only override."),
        ("Only base.", None, "Only base."),
        ("line1\n", "line2", "line1\n\nline2"),
    ],
)
def test_instructions_are_joined_with_newline(
    base: Any, override: Any, expected: str
) -> None:
    """OP-4: the non-empty instructions of base and override joined with "\\n", base
    first."""
    assert merge_options({"instructions": base}, {"instructions": override}) == {
        "instructions": expected
    }


@pytest.mark.parametrize("key", ["metadata", "logit_bias"])
def test_dict_keys_are_merged(key: str) -> None:
    """OP-5: metadata and logit_bias dicts are merged, the override winning per key."""
    base = {key: {"a": 1, "b": 2}}
    override = {key: {"b": 3, "c": 4}}
    assert merge_options(base, override) == {key: {"a": 1, "b": 3, "c": 4}}
    assert merge_options(base, {key: {}}) == {key: {"a": 1, "b": 2}}


@pytest.mark.parametrize("key", ["metadata", "logit_bias"])
def test_dict_keys_with_a_non_dict_side_take_the_override(key: str) -> None:
    """OP-5: when either side is not a dict the override wins."""
    assert merge_options({key: "legacy"}, {key: {"a": 1}}) == {key: {"a": 1}}
    assert merge_options({key: {"a": 1}}, {key: "replace"}) == {key: "replace"}
    assert merge_options({key: {"a": 1}}, {}) == {key: {"a": 1}}


def test_every_other_key_is_won_by_the_override() -> None:
    """OP-6: every other key: the override wins (including dict and list values, not
    merged)."""
    base = {
        "model": "a",
        "tool_choice": {"mode": "auto"},
        "stop": ["x"],
        "custom": {"p": 1},
    }
    override = {
        "model": "b",
        "tool_choice": "none",
        "stop": ["y"],
        "custom": {"q": 2},
        "seed": 1,
    }
    assert merge_options(base, override) == {
        "model": "b",
        "tool_choice": "none",
        "stop": ["y"],
        "custom": {"q": 2},
        "seed": 1,
    }


def test_inputs_are_not_mutated_and_may_be_none() -> None:
    """OP-7: base and override (and nested dicts and lists) are never mutated; either
    may be None."""
    a, b = NamedTool("a"), NamedTool("b")
    base = {"tools": [a], "metadata": {"x": 1}, "instructions": "i", "stop": ["s"]}
    override = {
        "tools": [b, a],
        "metadata": {"y": 2},
        "instructions": "j",
        "stop": None,
    }
    base_copy, override_copy = copy.copy(base), copy.copy(override)
    result = merge_options(base, override)
    assert base == base_copy
    assert override == override_copy
    assert same_objects(base["tools"], [a])
    assert same_objects(override["tools"], [b, a])
    assert base["metadata"] == {"x": 1}
    assert override["metadata"] == {"y": 2}
    assert result["tools"] is not base["tools"]
    assert result is not base
    assert merge_options(None, None) == {}
    assert merge_options(base, None) == base
    assert merge_options(None, override) == {
        "tools": [b, a],
        "metadata": {"y": 2},
        "instructions": "j",
    }


# --------------------------------------------------------------------------------------------
# The whole table against random inputs


class Clash(Exception):
    pass


def _name_of(tool: Any) -> str | None:
    if isinstance(tool, Mapping):
        if isinstance(tool.get("name"), str):
            return tool["name"]
        function = tool.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return function["name"]
        return None
    name = getattr(tool, "name", None)
    return name if isinstance(name, str) else None


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def expected_tools(base: Any, override: Any) -> list[Any]:
    out: list[Any] = []
    first: dict[str, Any] = {}
    for tool in _as_list(base) + _as_list(override):
        name = _name_of(tool)
        if name is None:
            out.append(tool)
        elif name not in first:
            first[name] = tool
            out.append(tool)
        elif first[name] is tool or (
            isinstance(tool, dict)
            and isinstance(first[name], dict)
            and first[name] == tool
        ):
            continue
        else:
            raise Clash(name)
    return out


def expected_merge(
    base: dict[str, Any] | None, override: dict[str, Any] | None
) -> dict[str, Any]:
    """The OP table, row by row, computed independently of merge_options."""
    base, override = base or {}, override or {}
    out: dict[str, Any] = {}
    for key in [*base, *(k for k in override if k not in base)]:
        b, o = base.get(key), override.get(key)
        if b is None and o is None:
            continue  # OP-1 / OP-2
        if key == "tools":
            out[key] = expected_tools(b, o)  # OP-3
        elif key == "instructions":
            out[key] = "\n".join(part for part in (b, o) if part)  # OP-4
        elif (
            key in ("metadata", "logit_bias")
            and isinstance(b, dict)
            and isinstance(o, dict)
        ):
            out[key] = {**b, **o}  # OP-5
        else:
            out[key] = b if o is None else o  # OP-5 (a side not a dict), OP-6
    return out


POOL_OBJECTS = [
    NamedTool("search"),
    NamedTool("search"),
    NamedTool("calc"),
    NamedTool("lookup"),
    Nameless(),
]
EQUAL_OBJECTS = [EqualTool("calc"), EqualTool("calc"), EqualTool("search")]
DECLARATIONS = [
    {"name": "search"},
    {"name": "weather", "parameters": {"type": "object"}},
    {"name": "weather", "parameters": {}},
    {"type": "function", "function": {"name": "lookup"}},
    {"type": "function", "function": {"name": "weather"}},
    {"type": "web_search"},
]
tools = st.one_of(
    st.sampled_from(POOL_OBJECTS),  # the same object may be drawn again
    st.sampled_from(EQUAL_OBJECTS),  # distinct objects that compare equal
    st.sampled_from(DECLARATIONS),  # the same dict object again
    st.sampled_from(DECLARATIONS).map(copy.deepcopy),  # an equal but distinct dict
)
tool_values = st.one_of(
    st.none(),
    tools,
    st.lists(tools, max_size=5),
    st.lists(tools, min_size=2, max_size=5),
    st.lists(tools, max_size=3).map(tuple),
)
scalar_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(0, 2), st.text(max_size=3)
)
values_by_key = {
    "tools": tool_values,
    "instructions": st.none() | st.text(max_size=4),
    "metadata": st.none()
    | st.dictionaries(st.sampled_from("abc"), scalar_values, max_size=3)
    | st.just("not a dict"),
    "logit_bias": st.none()
    | st.dictionaries(st.sampled_from(["1", "2", "3"]), st.floats(-5, 5), max_size=3)
    | st.integers(0, 2),
    "temperature": st.none() | st.floats(0, 2),
    "model": st.none() | st.sampled_from(["m1", "m2", ""]),
    "tool_choice": st.none()
    | st.sampled_from(["auto", "none", "required"])
    | st.just({"mode": "x"}),
    "stop": st.none() | st.lists(st.text(max_size=2), max_size=2),
    "seed": scalar_values,
    "store": st.none() | st.booleans(),
}


@st.composite
def option_dicts(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    keys = draw(
        st.lists(st.sampled_from(sorted(values_by_key)), unique=True, max_size=6)
    )
    # tools hold the most rules: draw them often
    if "tools" not in keys and draw(st.booleans()):
        keys.append("tools")
    return {key: draw(values_by_key[key]) for key in keys}


def snapshot(value: Any) -> Any:
    """A structural picture of `value` that records tool objects by identity (for
    OP-7)."""
    if isinstance(value, dict):
        return ("dict", id(value), {k: snapshot(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return (type(value).__name__, id(value), [snapshot(v) for v in value])
    if isinstance(value, str | int | float | bool | type(None)):
        return value
    return ("object", id(value), getattr(value, "name", None))


@settings(max_examples=500, deadline=None)
@given(base=option_dicts(), override=option_dicts())
def test_merge_options_obeys_every_row_of_the_table(
    base: dict[str, Any] | None, override: dict[str, Any] | None
) -> None:
    """OP-1, OP-2, OP-3, OP-4, OP-5, OP-6, OP-7: for random options, merge_options
    equals the expectation derived per key, raises ValueError exactly on a clash of
    different tools with one name, and leaves both inputs as they were."""
    before = (snapshot(base), snapshot(override))
    try:
        expected = expected_merge(base, override)
    except Clash as clash:
        with pytest.raises(ValueError, match=str(clash.args[0])):
            merge_options(base, override)
    else:
        result = merge_options(base, override)
        assert result == expected
        assert None not in result.values()
        if "tools" in expected:
            assert same_objects(result["tools"], expected["tools"])
    assert (snapshot(base), snapshot(override)) == before


@pytest.mark.parametrize(
    ("key", "value"),
    [("instructions", "be brief"), ("temperature", 0.2), ("model", "m")],
)
async def test_chat_options_as_get_response_keywords_are_refused(
    stream: bool, key: str, value: Any
) -> None:
    """OP-60: never silently sent along; the error says to write ``options={...}``; the
    same option in ``options`` is honoured."""
    client = ScriptedChatClient(["hi", "hi"])
    with pytest.raises(
        TypeError,
        match=rf"got {key}=: chat options go in options=\{{'{key}': \.\.\.\}}",
    ):
        client.get_response("x", stream=stream, **{key: value})
    response = client.get_response("x", stream=stream, options={key: value})
    final = await (response.get_final_response() if stream else response)
    assert final.text == "hi"
    assert client.requests[-1].options[key] == value
    assert key not in client.requests[-1].kwargs


async def test_other_get_response_keywords_still_reach_the_provider() -> None:
    """OP-60: a keyword that is not a chat option is the provider's (LP-25)."""
    client = ScriptedChatClient(["hi"])
    await client.get_response("x", trace_id="t-1")
    assert client.requests[-1].kwargs["trace_id"] == "t-1"


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


@pytest.mark.parametrize("bad", [3, "temperature", ["a"]])
def test_merge_options_names_the_bad_argument(bad):
    """OP-8: a non-mapping is a TypeError naming which argument was wrong."""
    with pytest.raises(TypeError, match="base must be a mapping"):
        merge_options(bad, {})
    with pytest.raises(TypeError, match="override must be a mapping"):
        merge_options({}, bad)
