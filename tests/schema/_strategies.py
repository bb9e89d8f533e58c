"""What several schema tests build on: one-parameter tools, the generated schema of a
hint, and hypothesis strategies of type hints and of the JSON values that conform to
them."""

from __future__ import annotations

import dataclasses
import itertools
import json
import types
import typing
from collections.abc import (
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from fractions import Fraction
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Optional,
    Required,
    TypedDict,
    Union,
)

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from minagent._schema import function_schema
from minagent._validate import ValidationIssue


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(Enum):
    ONE = 1
    HALF = 0.5
    NAME = "n"
    NOTHING = None


class Movie(TypedDict):
    title: str
    year: int


@dataclass
class Box:
    width: float
    label: Annotated[str, "what is inside"] = "box"
    items: list[int] = field(default_factory=list)
    secret: int = field(default=0, init=False)


def tool_of(tp: Any) -> Any:
    """A one-parameter tool ``x: tp``."""

    def tool(x):  # type: ignore[no-untyped-def]
        return x

    tool.__annotations__ = {"x": tp}
    return tool


def prop(tp: Any) -> dict[str, Any]:
    """The property schema generated for a parameter annotated with ``tp``."""
    schema: dict[str, Any] = function_schema(tool_of(tp)).parameters["properties"]["x"]
    return schema


def params(func: Any) -> dict[str, Any]:
    schema: dict[str, Any] = function_schema(func).parameters
    return schema


def paths(issues: list[ValidationIssue]) -> list[str]:
    return [issue.path for issue in issues]


_names = itertools.count()


FIELD_NAMES = ["a", "b", "c", "d", "e"]


SCALAR_TYPES = st.sampled_from([str, int, float, bool, type(None), Any])


LITERALS = st.lists(
    st.one_of(st.text(max_size=4), st.integers(-5, 5), st.booleans(), st.none()),
    min_size=1,
    max_size=4,
).map(lambda values: Literal[tuple(values)])


ENUMS = st.sampled_from([Color, Level, Mixed])


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def typed_dicts(draw: st.DrawFn, inner: st.SearchStrategy[Any]) -> Any:
    names = draw(st.lists(st.sampled_from(FIELD_NAMES), unique=True, max_size=3))
    fields: dict[str, Any] = {}
    for name in names:
        tp = draw(inner)
        wrapper = draw(st.sampled_from([None, Required, NotRequired]))
        fields[name] = tp if wrapper is None else wrapper[tp]
    return TypedDict(f"TD{next(_names)}", fields, total=draw(st.booleans()))  # type: ignore[operator]


@st.composite
def dataclasses_(draw: st.DrawFn, inner: st.SearchStrategy[Any]) -> Any:
    names = draw(st.lists(st.sampled_from(FIELD_NAMES), unique=True, max_size=3))
    optional = draw(st.integers(0, len(names)))
    spec: list[Any] = [(name, draw(inner)) for name in names[optional:]]
    spec += [
        (name, draw(inner) | None, field(default=None)) for name in names[:optional]
    ]
    return dataclasses.make_dataclass(f"DC{next(_names)}", spec)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    hashable = st.one_of(SCALAR_TYPES, LITERALS, ENUMS)
    return st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: Sequence[t]),  # type: ignore[valid-type]
        inner.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
        st.lists(inner, min_size=1, max_size=3).map(lambda ts: tuple[tuple(ts)]),  # type: ignore[misc]
        hashable.map(lambda t: set[t]),  # type: ignore[valid-type]
        hashable.map(lambda t: frozenset[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: Mapping[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: Optional[t]),  # type: ignore[valid-type]  # noqa: UP045
        st.lists(inner, min_size=2, max_size=3).map(lambda ts: Union[tuple(ts)]),  # noqa: UP007
        inner.map(lambda t: Annotated[t, "described"]),
        typed_dicts(inner),
        dataclasses_(inner),
    )


TYPES = st.recursive(
    st.one_of(SCALAR_TYPES, LITERALS, ENUMS), _containers, max_leaves=6
)


def _canonical(value: Any) -> Any:
    """A hashable key under which JSON-equal values are equal (for uniqueItems)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", Fraction(value))
    if isinstance(value, list):
        return ("array", tuple(map(_canonical, value)))
    return ("object", frozenset((k, _canonical(v)) for k, v in value.items()))


def values_for(tp: Any) -> st.SearchStrategy[Any]:
    """JSON values that conform to the type hint ``tp`` (the test's own reading of
    SC-6..SC-18)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Annotated, Required, NotRequired):
        return values_for(args[0])
    if tp is Any:
        return JSON
    simple = {
        type(None): st.none(),
        bool: st.booleans(),
        int: st.integers(),
        float: st.floats(allow_nan=False, allow_infinity=False) | st.integers(),
        str: st.text(max_size=6),
    }
    if tp in simple:
        return simple[tp]
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.sampled_from([member.value for member in tp])
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (Union, types.UnionType):
        return st.one_of([values_for(arg) for arg in args])
    if origin is tuple and args[-1] is not Ellipsis:
        return st.tuples(*map(values_for, args)).map(list)
    if origin in (list, Sequence, tuple):
        return st.lists(values_for(args[0]), max_size=3)
    if origin in (set, frozenset):
        return st.lists(values_for(args[0]), max_size=3, unique_by=_canonical)
    if origin in (dict, Mapping):
        return st.dictionaries(st.text(max_size=4), values_for(args[1]), max_size=3)
    hints = typing.get_type_hints(tp, include_extras=True)
    if typing.is_typeddict(tp):
        required = {k for k, h in hints.items() if typing.get_origin(h) is Required} | {
            k
            for k in tp.__required_keys__
            if typing.get_origin(hints[k]) is not NotRequired
        }
    else:
        required = {
            f.name for f in dataclasses.fields(tp) if f.default is dataclasses.MISSING
        }
    return st.fixed_dictionaries(
        {k: values_for(h) for k, h in hints.items() if k in required},
        optional={k: values_for(h) for k, h in hints.items() if k not in required},
    )


FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def describe_value(value: Any) -> str:
    """The test's own rendering of SC-26, for JSON values."""
    if value is None:
        return "null"
    kind = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        type(value)
    )
    kind = kind or ("array" if isinstance(value, list) else "object")
    return f"{kind} {json.dumps(value)}"
