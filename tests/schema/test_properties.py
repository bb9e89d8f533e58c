"""Generation and validation together (spec/schema.md SC-43, SC-54, SC-55): property
tests over random hints and values."""

from __future__ import annotations

import dataclasses
import datetime
import json
import types
import typing
from collections.abc import Mapping, Sequence
from typing import (
    Any,
    Literal,
    Union,
)

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from minagent._convert import ArgumentConversionError, ArgumentConverter
from minagent._schema import function_schema
from minagent._validate import compile_fast_check, describe_issues, validate
from tests.schema._strategies import (
    FAST,
    JSON,
    TYPES,
    describe_value,
    params,
    paths,
    tool_of,
    values_for,
)

# --------------------------------------------------------------------------- properties (SC-43)


WRONG = {
    "null": None,
    "boolean": True,
    "integer": 7,
    "number": 2.5,
    "string": "s",
    "array": [],
    "object": {},
}


def _admitted(schema: Any) -> set[str] | None:
    """The JSON types a sub-schema admits at all (None: any); the test's reading of
    SC-34."""
    if schema is True or schema == {} or (set(schema) <= {"description", "default"}):
        return None
    if "anyOf" in schema:
        kinds = [_admitted(branch) for branch in schema["anyOf"]]
        return None if None in kinds else set().union(*kinds)  # type: ignore[arg-type]
    named = schema["type"]
    admitted = {named} if isinstance(named, str) else set(named)
    return admitted | {"integer"} if "number" in admitted else admitted


def _path(segments: tuple[Any, ...]) -> str:
    out = "$"
    for segment in segments:
        if isinstance(segment, int):
            out += f"[{segment}]"
        elif segment.isidentifier():
            out += f".{segment}"
        else:
            out += f"[{json.dumps(segment, ensure_ascii=False)}]"
    return out


def _locations(value: Any, schema: Any, root: Any, at: tuple[Any, ...] = ()) -> Any:
    """Every (location, sub-schema) of a conforming value, descending where SC-34
    points."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    yield at, schema
    if _admitted(schema) is None:  # nothing below an unconstrained schema can be wrong
        return
    if "anyOf" in schema:
        kind = describe_value(value).split(" ")[0]
        kinds = {"integer", "number"} if kind in ("integer", "number") else {kind}
        matching = [b for b in schema["anyOf"] if (_admitted(b) or kinds) & kinds]
        if len(matching) == 1:  # else the issue is reported at the anyOf itself
            yield from _locations(value, matching[0], root, at)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            sub = schema.get("properties", {}).get(
                key, schema.get("additionalProperties", True)
            )
            yield from _locations(item, sub, root, (*at, key))
    elif isinstance(value, list):
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            yield from _locations(
                item,
                prefix[i] if i < len(prefix) else schema.get("items", True),
                root,
                (*at, i),
            )


def _replace(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[at[0]] = _replace(value[at[0]], at[1:], new)
    return copy


@FAST
@given(tp=TYPES, data=st.data())
def test_conforming_values_validate(tp: Any, data: st.DataObject) -> None:
    """SC-43: a JSON value drawn to conform to a type hint has no issue."""
    schema = params(tool_of(tp))
    value = data.draw(values_for(tp), label="value")
    assert validate({"x": value}, schema) == []


@FAST
@given(tp=TYPES, data=st.data())
def test_wrong_json_type_is_reported_at_its_location(
    tp: Any, data: st.DataObject
) -> None:
    """SC-43, SC-25, SC-28, SC-34: a value of a wrong JSON type somewhere is named by
    its path."""
    schema = params(tool_of(tp))
    value = {"x": data.draw(values_for(tp), label="value")}
    candidates: dict[tuple[Any, ...], set[str]] = {}
    for at, sub in _locations(value, schema, schema):
        admitted = _admitted(sub)
        if at and admitted is not None:
            # the outermost schema at a location decides
            candidates.setdefault(at, admitted)
    assume(candidates)
    at = data.draw(st.sampled_from(sorted(candidates, key=repr)), label="location")
    admitted = candidates[at]
    wrong_kind = data.draw(st.sampled_from(sorted(set(WRONG) - admitted)), label="kind")
    mutated = _replace(value, at, WRONG[wrong_kind])
    issues = validate(mutated, schema)
    assert _path(at) in paths(issues), (mutated, describe_issues(issues))


@FAST
@given(tp=TYPES, data=st.data())
def test_validator_agrees_with_jsonschema(tp: Any, data: st.DataObject) -> None:
    """SC-43, SC-28..SC-37: same verdict as the `jsonschema` package on random
    instances."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = params(tool_of(tp))
    jsonschema.Draft202012Validator.check_schema(schema)
    value = data.draw(values_for(tp) | JSON, label="value")
    instance = data.draw(
        st.sampled_from([{"x": value}, {}, {"x": value, "y": 1}, value])
    )
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance)
    assert (validate(instance, schema) == []) == expected


def test_fast_check_refuses_what_it_cannot_decide() -> None:
    """SC-55: the fast check exists only for the common schema (properties a mapping),
    and answers 'valid' only where validate finds no issue: a bool is not a number, an
    int is not a boolean."""
    assert compile_fast_check({"type": "object", "properties": []}) is None
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number"}, "b": {"type": "boolean"}},
        "additionalProperties": False,
    }
    check = compile_fast_check(schema)
    assert check is not None
    assert check({"n": 1.5, "b": True}) is True
    assert check({"n": True}) is False
    assert validate({"n": True}, schema) != []
    assert check({"b": 1}) is False
    assert validate({"b": 1}, schema) != []


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
