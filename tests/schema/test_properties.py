"""Generation and validation together (spec/schema.md SC-43, SC-54, SC-55): property
tests over random hints and values."""

from __future__ import annotations

import json
from typing import (
    Any,
)

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from minagent._schema import (
    describe_issues,
)
from minagent._validate import validate
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

# --------------------------------------------------------------------------- validation


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
