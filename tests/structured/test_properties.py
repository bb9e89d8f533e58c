"""Property: for generated dataclass shapes and instances, `value` of the instance's
JSON is the instance."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import keyword
import typing
from typing import Any, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minagent import ResponseFormat
from minagent._validate import validate


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"
    COUNT = 3


# (type, strategy of Python values of it)
LEAVES: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (int, st.integers(-(10**12), 10**12)),
    (float, st.floats(allow_nan=False, allow_infinity=False)),
    (str, st.text(max_size=10)),
    (bool, st.booleans()),
    (Mood, st.sampled_from(list(Mood))),
    (Literal["a", "b", 1], st.sampled_from(["a", "b", 1])),
    (datetime.date, st.dates()),
    (datetime.datetime, st.datetimes()),
]

Shape = tuple[Any, st.SearchStrategy[Any]]


def wrap(shape: Shape, how: str) -> Shape:
    tp, values = shape
    if how == "list":
        return list[tp], st.lists(values, max_size=3)  # type: ignore[valid-type]
    if how == "optional":
        return tp | None, st.none() | values
    if how == "tuple":
        return tuple[tp, ...], st.lists(values, max_size=3).map(tuple)  # type: ignore[valid-type]
    if how == "dict":
        return dict[str, tp], st.dictionaries(st.text(max_size=4), values, max_size=3)  # type: ignore[valid-type]
    return shape


names = st.from_regex(r"[a-z][a-z_]{0,7}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)


@st.composite
def shapes(draw: st.DrawFn, depth: int = 0) -> Shape:
    """A dataclass type and a strategy for its instances (fields with and without
    defaults)."""
    field_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    fields: list[tuple[str, Any, Any]] = []
    strategies: dict[str, st.SearchStrategy[Any]] = {}
    defaults_started = False
    for name in field_names:
        nested = depth < 2 and draw(st.integers(0, 4)) == 0
        shape = draw(shapes(depth + 1)) if nested else draw(st.sampled_from(LEAVES))
        shape = wrap(
            shape, draw(st.sampled_from(["plain", "list", "optional", "tuple", "dict"]))
        )
        tp, values = shape
        defaults_started = defaults_started or draw(st.booleans())
        # a default the model may leave out with null (SO-4, SO-10)
        if defaults_started:
            default = draw(values)
            if isinstance(default, list | dict) or dataclasses.is_dataclass(default):
                fields.append(
                    (name, tp, dataclasses.field(default_factory=lambda d=default: d))
                )
            else:
                fields.append((name, tp, dataclasses.field(default=default)))
        else:
            fields.append((name, tp, dataclasses.field()))
        strategies[name] = values
    cls = dataclasses.make_dataclass(f"Shape{depth}_{'_'.join(field_names)}", fields)
    return cls, st.builds(cls, **strategies)


def to_json(value: Any) -> Any:
    """The JSON a model would send for a Python value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


@st.composite
def instances(draw: st.DrawFn) -> tuple[type, Any]:
    cls, values = draw(shapes())
    return cls, draw(values)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_value_of_an_instances_json_is_the_instance(case: tuple[type, Any]) -> None:
    """SO-4, SO-10: the strict schema validates the instance's JSON, and parsing it
    gives the instance."""
    cls, instance = case
    fmt = ResponseFormat.of(cls)
    data = to_json(instance)
    assert fmt.schema is not None
    assert validate(data, fmt.schema) == []
    assert fmt.parse(json.dumps(data)) == instance


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_null_for_a_defaulted_field_gives_its_default(case: tuple[type, Any]) -> None:
    """SO-4, SO-10: a null for a field with a default (whose type has no None) gives the
    default."""
    cls, instance = case
    fmt = ResponseFormat.of(cls)
    data = to_json(instance)
    expected = dict(vars(instance))
    for f in dataclasses.fields(cls):
        has_default = (
            f.default is not dataclasses.MISSING
            or f.default_factory is not dataclasses.MISSING
        )
        if has_default:
            data[f.name] = None
            if type(None) not in typing.get_args(f.type):
                expected[f.name] = (
                    f.default
                    if f.default is not dataclasses.MISSING
                    else f.default_factory()
                )  # type: ignore[misc]
            else:
                expected[f.name] = None
    assert fmt.schema is not None
    assert validate(data, fmt.schema) == []
    assert fmt.parse(json.dumps(data)) == cls(**expected)


@dataclasses.dataclass
class Inner:
    a: int


@dataclasses.dataclass
class Outer:
    inner: Inner | None = None
    items: list[int | list[int]] = dataclasses.field(default_factory=list)


def test_null_for_an_optional_structure_and_nested_lists_parse() -> None:
    """SO-10: a null for a field whose type accepts None stays None; list members of a
    union keep their kind (an int, a list of ints)."""
    value = ResponseFormat.of(Outer).parse('{"inner": null, "items": [1, [2, 3]]}')
    assert value == Outer(inner=None, items=[1, [2, 3]])
    assert ResponseFormat.of(Outer).parse('{"inner": {"a": 4}, "items": []}') == Outer(
        Inner(4), []
    )
