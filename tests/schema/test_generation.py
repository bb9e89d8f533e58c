"""Tool JSON-schema generation and argument validation (spec/schema.md)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import json
import types
import typing
from collections.abc import (
    Mapping,
    MutableMapping,
    MutableSequence,
    MutableSet,
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

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import minagent
from minagent._schema import (
    FunctionSchema,
    ValidationIssue,
    describe_issues,
    function_schema,
)
from minagent._validate import validate
from tests.schema import _fixtures as fx

# --------------------------------------------------------------------------- helpers


class FunctionInvocationContext:
    """A stand-in with the context type's name (SC-5 matches by name)."""


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


class Options(TypedDict, total=False):
    verbose: bool
    name: Required[str]


class Tagged(TypedDict):
    label: str
    note: NotRequired[str]


@dataclass
class Box:
    width: float
    label: Annotated[str, "what is inside"] = "box"
    items: list[int] = field(default_factory=list)
    secret: int = field(default=0, init=False)


@dataclass
class Node:
    """Shares its name with fx.Node (SC-17: $defs names stay unique)."""

    next: Node | None = None


def _tool(tp: Any) -> Any:
    """A one-parameter tool ``x: tp``."""

    def tool(x):  # type: ignore[no-untyped-def]
        return x

    tool.__annotations__ = {"x": tp}
    return tool


def prop(tp: Any) -> dict[str, Any]:
    """The property schema generated for a parameter annotated with ``tp``."""
    schema: dict[str, Any] = function_schema(_tool(tp)).parameters["properties"]["x"]
    return schema


def params(func: Any) -> dict[str, Any]:
    schema: dict[str, Any] = function_schema(func).parameters
    return schema


def paths(issues: list[ValidationIssue]) -> list[str]:
    return [issue.path for issue in issues]


def problems(instance: Any, schema: dict[str, Any]) -> list[str]:
    return [str(issue) for issue in validate(instance, schema)]


# --------------------------------------------------------------------------- generation


def test_parameters_is_an_object_schema_in_signature_order() -> None:
    """SC-1: properties and required follow the signature; required is always
    present."""

    def search(query: str, limit: int, exact: bool = False) -> None:
        """Search."""

    assert function_schema(search) == FunctionSchema(
        description="Search.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "exact": {"type": "boolean", "default": False},
            },
            "required": ["query", "limit"],
            "additionalProperties": False,
        },
        context_parameter=None,
    )
    assert list(params(search)["properties"]) == ["query", "limit", "exact"]

    def nothing() -> None: ...

    assert params(nothing) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_string_annotations_resolve_in_the_function_module() -> None:
    """SC-2: `from __future__ import annotations`, TypedDicts and dataclasses of that
    module."""
    assert params(fx.send_letter)["properties"]["to"] == {
        "type": "object",
        "properties": {
            "street": {"type": "string"},
            "zip_code": {"type": "string", "description": "postal code"},
        },
        "required": ["street", "zip_code"],
        "additionalProperties": False,
    }
    assert params(fx.move)["properties"]["to"]["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
    }


def test_string_annotations_here_and_unreadable_return_annotation() -> None:
    """SC-2: this module's (string) annotations resolve; the return annotation is never
    read."""

    def f(x: list[int], y: Movie) -> NoSuchType:  # type: ignore[name-defined]  # noqa: F821
        return None

    assert params(f)["properties"]["x"] == {
        "type": "array",
        "items": {"type": "integer"},
    }
    assert params(f)["properties"]["y"]["required"] == ["title", "year"]


def test_decorated_function_resolves_in_the_wrapped_function_module() -> None:
    """SC-2: `functools.wraps` wrappers are followed to the original's annotations."""

    @functools.wraps(fx.send_letter)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        return fx.send_letter(*args, **kwargs)

    assert function_schema(wrapper) == function_schema(fx.send_letter)


def test_unresolvable_hint_raises_type_error_naming_function_and_parameter() -> None:
    """SC-2: the TypeError names the function and the parameter."""
    with pytest.raises(TypeError, match=r"'broken'.*parameter 'bad'.*DoesNotExist"):
        function_schema(fx.broken)


def test_unresolvable_structure_hint_raises_type_error() -> None:
    """SC-2: a TypedDict whose own hints cannot be resolved names the parameter and the
    class."""
    with pytest.raises(
        TypeError, match=r"'unreadable'.*parameter 'nested'.*Unreadable"
    ):
        function_schema(fx.unreadable)


class Calculator:
    """Adds numbers."""

    def __call__(self, a: int, movie: Movie) -> int:
        return a

    def scale(self, factor: float, unit: Literal["m", "cm"] = "m") -> float:
        """Scale by a factor."""
        return factor


def test_callable_objects_and_bound_methods() -> None:
    """SC-2, SC-20: string annotations of __call__ and of a method resolve; self is not
    listed."""
    call = function_schema(Calculator())
    assert call.description == "Adds numbers."
    assert list(call.parameters["properties"]) == ["a", "movie"]
    assert call.parameters["properties"]["movie"] == prop(Movie)
    method = function_schema(Calculator().scale)
    assert method.description == "Scale by a factor."
    assert method.parameters["properties"] == {
        "factor": {"type": "number"},
        "unit": {"type": "string", "enum": ["m", "cm"], "default": "m"},
    }


def test_defaults_make_parameters_optional_and_are_written_as_json() -> None:
    """SC-3: JSON forms of defaults; unserialisable defaults are left out but still
    optional."""

    def f(
        a: int,
        b: int = 3,
        c: tuple[int, ...] = (1, 2),
        d: Color = Color.GREEN,
        e: Any = None,
        g: Any = object(),  # noqa: B008
        h: float = float("nan"),
        i: dict[str, int] = {"k": 1},  # noqa: B006
    ) -> None: ...

    schema = params(f)
    assert schema["required"] == ["a"]
    props = schema["properties"]
    assert "default" not in props["a"]
    assert props["b"]["default"] == 3
    assert props["c"]["default"] == [1, 2]
    assert props["d"]["default"] == "green"
    assert props["e"] == {"default": None}
    assert props["g"] == {}
    assert props["h"] == {"type": "number"}
    assert props["i"]["default"] == {"k": 1}


def test_var_args_are_excluded_and_positional_only_is_rejected() -> None:
    """SC-4: *args / **kwargs are not arguments; positional-only parameters raise
    TypeError."""

    def f(a: int, *args: int, b: str, **kwargs: Any) -> None: ...

    assert list(params(f)["properties"]) == ["a", "b"]
    assert params(f)["required"] == ["a", "b"]

    def g(a: int, /, b: int) -> None: ...

    with pytest.raises(TypeError, match=r"'.*g'.*parameter 'a'.*positional-only"):
        function_schema(g)


def test_context_parameter_is_excluded() -> None:
    """SC-5: by class name, by (unimportable) string, and dotted; recorded in
    context_parameter."""

    def by_class(city: str, ctx: FunctionInvocationContext) -> None: ...

    def by_string(ctx: "FunctionInvocationContext", city: str) -> None:  # noqa: UP037
        ...

    def unimportable(city: str, ctx: minagent.FunctionInvocationContext) -> None:  # type: ignore[name-defined]
        ...

    for func in (by_class, by_string, unimportable, fx.get_weather):
        schema = function_schema(func)
        assert "ctx" not in schema.parameters["properties"]
        assert "context" not in schema.parameters["properties"]
        assert "city" in schema.parameters["properties"]
        assert schema.parameters["required"] == ["city"]
    assert function_schema(by_class).context_parameter == "ctx"
    assert function_schema(unimportable).context_parameter == "ctx"
    assert function_schema(fx.get_weather).context_parameter == "context"
    assert function_schema(lambda city: None).context_parameter is None


def test_context_type_names_are_configurable_and_unique() -> None:
    """SC-5: custom names; a second context parameter is an error that is both a
    ValueError (as upstream's) and a TypeError; an optional context parameter (``ctx:
    Context | None = None``, in any spelling) is the context parameter."""

    def f(run: Movie, x: int) -> None: ...

    schema = function_schema(f, context_type_names=frozenset({"Movie"}))
    assert schema.context_parameter == "run"
    assert list(schema.parameters["properties"]) == ["x"]

    def two(a: FunctionInvocationContext, b: FunctionInvocationContext) -> None: ...

    with pytest.raises(TypeError, match="second context parameter"):
        function_schema(two)
    with pytest.raises(ValueError, match="second context parameter"):
        function_schema(two)

    def optional(q: str, a: FunctionInvocationContext | None = None) -> None: ...

    def optional_text(
        q: str,
        a: typing.Optional[FunctionInvocationContext] = None,  # noqa: UP045
    ) -> None: ...

    def union_text(
        q: str, a: minagent.FunctionInvocationContext | None = None
    ) -> None: ...

    for func in (optional, optional_text, union_text):
        schema = function_schema(func)
        assert schema.context_parameter == "a"
        assert list(schema.parameters["properties"]) == ["q"]


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
    ],
)
def test_scalars_and_any(tp: Any, expected: dict[str, Any]) -> None:
    """SC-6: scalar type hints and Any."""
    assert prop(tp) == expected


def test_missing_annotation_is_unconstrained() -> None:
    """SC-6: no annotation gives {}."""

    def f(x, y=2):  # type: ignore[no-untyped-def]
        return x

    assert params(f)["properties"] == {"x": {}, "y": {"default": 2}}


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (None | str, {"anyOf": [{"type": "null"}, {"type": "string"}]}),
        (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007
        (
            int | list[str] | None,
            {
                "anyOf": [
                    {"type": "integer"},
                    {"type": "array", "items": {"type": "string"}},
                    {"type": "null"},
                ]
            },
        ),
    ],
)
def test_unions_are_any_of_in_written_order(tp: Any, expected: dict[str, Any]) -> None:
    """SC-7: Optional[X] / X | None / other unions."""
    assert prop(tp) == expected


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
        (Literal[True], {"type": "boolean", "enum": [True]}),
        (
            Literal[1, "a", None, True],
            {
                "type": ["integer", "string", "null", "boolean"],
                "enum": [1, "a", None, True],
            },
        ),
        (Literal[Color.RED, "blue"], {"type": "string", "enum": ["red", "blue"]}),
    ],
)
def test_literal_is_an_enum_with_its_json_type(
    tp: Any, expected: dict[str, Any]
) -> None:
    """SC-8: Literal values in order, with the JSON type name or list of names."""
    assert prop(tp) == expected


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (
            Mixed,
            {
                "type": ["integer", "number", "string", "null"],
                "enum": [1, 0.5, "n", None],
            },
        ),
    ],
)
def test_enum_subclass_is_an_enum_of_values(tp: Any, expected: dict[str, Any]) -> None:
    """SC-9: Enum members' values in definition order."""
    assert prop(tp) == expected


def test_literal_and_enum_values_must_be_json_scalars() -> None:
    """SC-8, SC-9: a float Literal or an Enum with a tuple value raises TypeError."""

    class Planet(Enum):
        EARTH = (1.0, 2.0)

    class Weird(Enum):
        INF = float("inf")

    for tp in (Literal[1.5], Planet, Weird):
        with pytest.raises(TypeError, match=r"parameter 'x'.*not a JSON scalar"):
            prop(tp)


@pytest.mark.parametrize(
    "tp",
    [
        list[int],
        typing.List[int],  # noqa: UP006
        Sequence[int],
        typing.Sequence[int],
        MutableSequence[int],
        tuple[int, ...],
    ],
)
def test_sequences_are_arrays_with_items(tp: Any) -> None:
    """SC-10: list / Sequence / MutableSequence / tuple[T, ...]."""
    assert prop(tp) == {"type": "array", "items": {"type": "integer"}}


def test_fixed_tuples_use_prefix_items() -> None:
    """SC-11: fixed tuples, and the empty tuple."""
    assert prop(tuple[int, str]) == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert prop(tuple[()]) == {"type": "array", "maxItems": 0}


@pytest.mark.parametrize(
    "tp",
    [
        set[str],
        frozenset[str],
        typing.AbstractSet[str],
        MutableSet[str],
        typing.Set[str],  # noqa: UP006
    ],
)
def test_sets_are_arrays_of_unique_items(tp: Any) -> None:
    """SC-12: set / frozenset / AbstractSet / MutableSet."""
    assert prop(tp) == {
        "type": "array",
        "items": {"type": "string"},
        "uniqueItems": True,
    }


@pytest.mark.parametrize(
    "tp",
    [
        dict[str, float],
        Mapping[str, float],
        MutableMapping[str, float],
        typing.Dict[str, float],  # noqa: UP006
    ],
)
def test_mappings_are_objects_with_additional_properties(tp: Any) -> None:
    """SC-13: dict / Mapping / MutableMapping with str keys."""
    assert prop(tp) == {"type": "object", "additionalProperties": {"type": "number"}}


def test_mapping_keys_must_be_strings() -> None:
    """SC-13: another key type raises TypeError naming the type."""
    with pytest.raises(
        TypeError, match=r"parameter 'x'.*dict\[int, str\].*keys are strings"
    ):
        prop(dict[int, str])


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (list, {"type": "array"}),
        (typing.List, {"type": "array"}),  # noqa: UP006
        (Sequence, {"type": "array"}),
        (tuple, {"type": "array"}),
        (typing.Tuple, {"type": "array"}),  # noqa: UP006
        (set, {"type": "array", "uniqueItems": True}),
        (frozenset, {"type": "array", "uniqueItems": True}),
        (dict, {"type": "object"}),
        (Mapping, {"type": "object"}),
        (list[Any], {"type": "array", "items": {}}),
    ],
)
def test_bare_containers_are_unconstrained(tp: Any, expected: dict[str, Any]) -> None:
    """SC-14: bare container types."""
    assert prop(tp) == expected


def test_typed_dict_is_a_closed_object() -> None:
    """SC-15: keys in order, required from __required_keys__ and
    Required/NotRequired."""
    assert prop(Movie) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title", "year"],
        "additionalProperties": False,
    }
    assert prop(Options)["required"] == ["name"]
    assert list(prop(Options)["properties"]) == ["verbose", "name"]
    assert prop(Tagged)["required"] == ["label"]
    assert prop(Tagged)["properties"]["note"] == {"type": "string"}


def test_typed_dict_qualifiers_under_future_annotations() -> None:
    """SC-15: NotRequired / Required written as strings still decide (3.11 misses
    them)."""
    schema = params(fx.add_contact)["properties"]
    assert schema["contact"]["required"] == ["name"]
    assert schema["draft"]["required"] == ["title"]


def test_dataclass_is_an_object_of_its_init_fields() -> None:
    """SC-16: init fields in order; defaults and default factories make fields
    optional."""
    assert prop(Box) == {
        "type": "object",
        "properties": {
            "width": {"type": "number"},
            "label": {
                "type": "string",
                "description": "what is inside",
                "default": "box",
            },
            "items": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["width"],
        "additionalProperties": False,
    }
    assert params(fx.move)["properties"]["to"]["required"] == ["x"]
    assert params(fx.move)["properties"]["to"]["properties"]["y"]["default"] == 0.0


def test_recursive_structures_go_to_defs() -> None:
    """SC-17: self-recursive TypedDict and dataclass; every occurrence is a $ref."""
    schema = params(fx.plant)
    assert schema["properties"] == {
        "tree": {"$ref": "#/$defs/Tree"},
        "root": {"$ref": "#/$defs/Node"},
    }
    assert schema["$defs"]["Node"] == {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
        "required": ["value", "children"],
        "additionalProperties": False,
    }
    assert schema["$defs"]["Tree"]["properties"]["left"] == {
        "anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}],
        "default": None,
    }
    assert "$defs" not in params(fx.send_letter)


def test_mutually_recursive_structures_terminate() -> None:
    """SC-17: Ping -> Pong -> Ping: the one that closes the cycle is in $defs."""
    schema = params(fx.bounce)
    assert schema["properties"]["ping"] == {"$ref": "#/$defs/Ping"}
    assert list(schema["$defs"]) == ["Ping"]
    pong = schema["$defs"]["Ping"]["properties"]["pong"]["anyOf"][0]
    assert pong["properties"]["ping"] == {"$ref": "#/$defs/Ping"}


def test_def_names_are_unique() -> None:
    """SC-17: two recursive classes named Node get Node and Node_2."""

    def link(a: fx.Node, b: Node) -> None: ...

    schema = params(link)
    assert schema["properties"] == {
        "a": {"$ref": "#/$defs/Node"},
        "b": {"$ref": "#/$defs/Node_2"},
    }
    assert schema["$defs"]["Node_2"]["properties"]["next"] == {
        "anyOf": [{"$ref": "#/$defs/Node_2"}, {"type": "null"}],
        "default": None,
    }


def test_recursive_schema_validates_nested_values() -> None:
    """SC-17, SC-37: the $defs schema validates arbitrarily deep values."""
    schema = params(fx.plant)
    good = {"value": 1, "children": [{"value": 2, "children": []}]}
    tree = {"value": 1, "left": {"value": 2, "right": None}}
    assert validate({"tree": tree, "root": good}, schema) == []
    bad = {
        "value": 1,
        "children": [{"value": 2, "children": [{"value": "3", "children": []}]}],
    }
    assert paths(validate({"tree": tree, "root": bad}, schema)) == [
        "$.root.children[0].children[0].value"
    ]


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (Annotated[int, "a count"], {"type": "integer", "description": "a count"}),
        (
            Annotated[int, 3, "first str", "second"],
            {"type": "integer", "description": "first str"},
        ),
        (Annotated[int, 3], {"type": "integer"}),
        (Annotated[Any, "anything"], {"description": "anything"}),
        (
            list[Annotated[str, "a name"]],
            {"type": "array", "items": {"type": "string", "description": "a name"}},
        ),
        (
            Annotated[int, "n"] | None,
            {"anyOf": [{"type": "integer", "description": "n"}, {"type": "null"}]},
        ),
    ],
)
def test_annotated_str_metadata_is_a_description(
    tp: Any, expected: dict[str, Any]
) -> None:
    """SC-18: the first str metadata item, at any depth."""
    assert prop(tp) == expected


def test_annotated_description_wins_over_docstring() -> None:
    """SC-19: Annotated first, then the docstring, else no description."""

    def f(a: Annotated[int, "from Annotated"], b: int, c: int) -> None:
        """Do it.

        Args:
            a: from the docstring
            b: from the docstring
        """

    props = params(f)["properties"]
    assert props["a"]["description"] == "from Annotated"
    assert props["b"]["description"] == "from the docstring"
    assert "description" not in props["c"]


def test_description_is_the_text_before_the_first_section() -> None:
    """SC-20: multi-paragraph text before Args:/Returns:/:param, stripped; "" without
    docstring."""

    def google(x: int) -> int:
        """Add one to a number.

        Works for negative numbers too.

        Returns:
            The number plus one.
        """
        return x + 1

    def sphinx(x: int) -> int:
        """Double it.

        :param x: the number
        :returns: twice the number
        """
        return 2 * x

    def bare(x: int) -> None:
        """
        Only a summary, after a blank first line.
        """

    def none(x: int) -> None: ...

    def only_args(x: int) -> None:
        """Args:
        x: the number
        """

    assert function_schema(google).description == (
        "Add one to a number.\n\nWorks for negative numbers too."
    )
    assert function_schema(sphinx).description == "Double it."
    assert (
        function_schema(bare).description == "Only a summary, after a blank first line."
    )
    assert function_schema(none).description == ""
    assert function_schema(only_args).description == ""
    assert "description" not in params(google)["properties"]["x"]


def test_google_args_section() -> None:
    """SC-21: typed and untyped entries, continuation lines, *args ignored, other
    sections."""

    def f(city: str, units: str, days: int, *args: int, **kwargs: int) -> None:
        """Get a forecast.

        Args:
            city (str): The city to look up.
                Use the English name.
            units: Either
                metric or imperial.

            days (int, optional): How many days.
            *args: ignored
            **kwargs: ignored too

        Returns:
            days: not a parameter description
        """

    schema = function_schema(f)
    assert schema.description == "Get a forecast."
    props = schema.parameters["properties"]
    assert props["city"]["description"] == "The city to look up. Use the English name."
    assert props["units"]["description"] == "Either metric or imperial."
    assert props["days"]["description"] == "How many days."
    assert list(props) == ["city", "units", "days"]


def test_google_alternative_headers() -> None:
    """SC-21: Parameters: and Keyword Args: open an argument section too."""

    def f(a: int, b: int) -> None:
        """Sum.

        Parameters:
            a: first
        Keyword Args:
            b: second
        """

    props = params(f)["properties"]
    assert props["a"]["description"] == "first"
    assert props["b"]["description"] == "second"


def test_sphinx_params() -> None:
    """SC-22: :param name:, :param type name:, continuation lines, other fields
    ignored."""

    def f(path: str, mode: str, size: int) -> None:
        """Open a file.

        :param path: Where the file is.
            Relative to the working directory.
        :param str mode: How to open it.
        :type mode: str
        :arg size: The buffer size.
        :returns: nothing
        """

    schema = function_schema(f)
    assert schema.description == "Open a file."
    props = schema.parameters["properties"]
    assert (
        props["path"]["description"]
        == "Where the file is. Relative to the working directory."
    )
    assert props["mode"]["description"] == "How to open it."
    assert props["size"]["description"] == "The buffer size."


class Opaque:
    pass


@dataclass
class Blob:
    data: bytes


@pytest.mark.parametrize(
    ("tp", "name"),
    [
        (bytes, "bytes"),
        (complex, "complex"),
        (Opaque, "Opaque"),
        (typing.Callable[[int], int], "Callable"),
        (list[bytes], "bytes"),
        (dict[str, set[complex]], "complex"),
        (typing.TypeVar("T"), "T"),
    ],
)
def test_unsupported_types_raise_type_error(tp: Any, name: str) -> None:
    """SC-23: the message names the function, the parameter and the type."""

    def tool(x: int) -> None: ...

    tool.__annotations__ = {"x": tp}
    with pytest.raises(TypeError) as caught:
        function_schema(tool)
    message = str(caught.value)
    assert "tool" in message
    assert "parameter 'x'" in message
    assert "unsupported type" in message
    assert name in message


def test_unsupported_nested_structure_field_raises() -> None:
    """SC-23: an unsupported type inside a dataclass names the parameter too."""

    def upload(blob: Blob) -> None: ...

    with pytest.raises(
        TypeError, match=r"'.*upload'.*parameter 'blob'.*unsupported type bytes"
    ):
        function_schema(upload)


def test_parameters_are_plain_json() -> None:
    """SC-24: a rich signature gives a schema that survives a JSON round trip."""

    def f(
        a: tuple[int, str],
        b: Color = Color.RED,
        c: Mixed | None = None,
        d: Box | None = None,
        e: frozenset[str] = frozenset(),
        f: Literal["x", 1] = "x",
    ) -> None: ...

    schema = params(f)
    assert json.loads(json.dumps(schema)) == schema


# --------------------------------------------------------------------------- validation

WEATHER = params(fx.get_weather)


def test_all_issues_are_reported_with_paths() -> None:
    """SC-25: every issue, not only the first; [] when valid; str is "path: problem"."""
    assert validate({"city": "Oslo"}, WEATHER) == []
    issues = validate({"units": "kelvin", "days": 3}, WEATHER)
    assert [str(issue) for issue in issues] == [
        "$.city: required property is missing (expected string)",
        '$.units: expected one of: "metric", "imperial"; got string "kelvin"',
        "$.days: unexpected property; allowed properties: city, units",
    ]
    assert issues[0] == ValidationIssue(
        "$.city", "required property is missing (expected string)"
    )


def test_paths_name_properties_and_indexes() -> None:
    """SC-25: `.name`, `["odd name"]` and `[i]` segments from the root `$`."""
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"qty": {"type": "integer"}}},
            },
            "odd name": {"type": "string"},
        },
    }
    instance = {"items": [{"qty": 1}, {"qty": 2}, {"qty": "3"}], "odd name": 4}
    assert paths(validate(instance, schema)) == ["$.items[2].qty", '$["odd name"]']
    assert paths(validate("x", {"type": "integer"})) == ["$"]


@pytest.mark.parametrize(
    ("value", "described"),
    [
        (None, "null"),
        (True, "boolean true"),
        (3, "integer 3"),
        (2.5, "number 2.5"),
        ("hi", 'string "hi"'),
        ([1, 2], "array [1, 2]"),
        ({"a": 1}, 'object {"a": 1}'),
        (b"x", "bytes b'x'"),
        ("é\n", 'string "é\\n"'),
    ],
)
def test_given_values_are_described_as_json(value: Any, described: str) -> None:
    """SC-26: the JSON type and the JSON text of the given value (repr when not
    JSON)."""
    assert problems(value, {"enum": ["Q"]}) == [f'$: expected "Q"; got {described}']


def test_long_values_are_cut_to_sixty_characters() -> None:
    """SC-26: the rendered value is cut and ends in "..."; the problem is one line."""
    (issue,) = validate("a" * 100 + "\nb", {"type": "integer"})
    rendered = issue.problem.split("got string ", 1)[1]
    assert len(rendered) == 60
    assert rendered == '"' + "a" * 56 + "..."
    assert "\n" not in issue.problem


def test_boolean_schemas() -> None:
    """SC-27: true and {} accept everything; false accepts nothing."""
    for value in (None, 1, "x", [1], {"a": 1}):
        assert validate(value, {}) == []
        assert validate({"v": value}, {"properties": {"v": True}}) == []
    assert problems({"v": 1}, {"properties": {"v": False}}) == [
        "$.v: no value is allowed here; got integer 1"
    ]


@pytest.mark.parametrize(
    ("type_", "accepted", "rejected"),
    [
        ("integer", [0, -3, 2**70, 3.0], [True, 2.5, "1", None, [1]]),
        ("number", [0, 2.5, -1e300], [False, "1.0", None]),
        ("boolean", [True, False], [0, 1, "true", None]),
        ("null", [None], [0, "", False, []]),
        ("string", ["", "x"], [1, None, ["x"]]),
        ("array", [[], [1], (1, 2)], [{}, "ab", None]),
        ("object", [{}, {"a": 1}], [[], "x", None]),
    ],
)
def test_type_keyword(type_: str, accepted: list[Any], rejected: list[Any]) -> None:
    """SC-28: integer and number never accept bool; integer accepts integral floats."""
    for value in accepted:
        assert validate(value, {"type": type_}) == [], value
    for value in rejected:
        assert problems(value, {"type": type_}) == [
            f"$: expected {type_}; got {_describe(value)}"
        ], value


def _describe(value: Any) -> str:
    """The test's own rendering of SC-26, for JSON values."""
    if value is None:
        return "null"
    kind = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        type(value)
    )
    kind = kind or ("array" if isinstance(value, list) else "object")
    return f"{kind} {json.dumps(value)}"


def test_type_list_and_single_issue_on_type_mismatch() -> None:
    """SC-28: a list of types; a wrong type gives one issue (naming enum values when
    present)."""
    schema = {"type": ["string", "null"], "minLength": 2, "enum": ["ab", None]}
    assert validate(None, schema) == []
    assert problems(5, {"type": ["string", "null"]}) == [
        "$: expected one of: string, null; got integer 5"
    ]
    assert problems(5, schema) == ['$: expected one of: "ab", null; got integer 5']
    assert problems("a", schema) == [
        '$: expected one of: "ab", null; got string "a"',
        "$: expected at least 2 characters; got 1",
    ]


def test_enum_and_const_use_json_equality() -> None:
    """SC-29: true is not 1, 1 equals 1.0, containers compare element-wise."""
    assert validate(1.0, {"enum": [1, 2]}) == []
    assert problems(True, {"enum": [1, 2]}) == [
        "$: expected one of: 1, 2; got boolean true"
    ]
    assert problems(1, {"enum": [True]}) == ["$: expected true; got integer 1"]
    assert validate([1, {"a": None}], {"enum": [[1.0, {"a": None}]]}) == []
    assert problems([1, 2], {"enum": [[2, 1]]}) == [
        "$: expected [2, 1]; got array [1, 2]"
    ]
    assert validate({"a": 1, "b": 2}, {"const": {"b": 2, "a": 1}}) == []
    assert problems({"a": 1}, {"const": {"a": 1, "b": 2}}) == [
        '$: expected {"a": 1, "b": 2}; got object {"a": 1}'
    ]
    assert problems(6, {"const": 5}) == ["$: expected 5; got integer 6"]
    assert problems(0, {"const": False}) == ["$: expected false; got integer 0"]


def test_long_enums_are_listed_up_to_fifty_values() -> None:
    """SC-29: at most 50 allowed values, then the number left out."""
    (issue,) = validate(-1, {"enum": list(range(60))})
    assert issue.problem.startswith("expected one of: 0, 1, 2,")
    assert ", 49, ... (10 more); got integer -1" in issue.problem


def test_required_and_properties() -> None:
    """SC-30: each missing required property is named, with what it expects when
    known."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {},
            "c": {"anyOf": [{"type": "string"}]},
        },
        "required": ["a", "b", "c", "d"],
    }
    assert problems({}, schema) == [
        "$.a: required property is missing (expected integer)",
        "$.b: required property is missing",
        "$.c: required property is missing (expected string)",
        "$.d: required property is missing",
    ]
    assert problems({"a": "1", "b": 1, "c": "", "d": 0}, schema) == [
        '$.a: expected integer; got string "1"'
    ]


def test_additional_properties() -> None:
    """SC-31: false names the property and lists the allowed ones; a schema checks
    extras."""
    closed = {"properties": {"a": {}, "b": {}}, "additionalProperties": False}
    assert problems({"a": 1, "z": 2, "y": 3}, closed) == [
        "$.z: unexpected property; allowed properties: a, b",
        "$.y: unexpected property; allowed properties: a, b",
    ]
    assert problems({"x": 1}, {"additionalProperties": False}) == [
        "$.x: unexpected property; no properties are allowed"
    ]
    typed = {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}
    assert problems({"a": "ok", "n": 1, "m": "no"}, typed) == [
        '$.m: expected integer; got string "no"'
    ]
    assert validate({"anything": [1]}, {"properties": {"a": {"type": "integer"}}}) == []


def test_items_and_prefix_items() -> None:
    """SC-32: prefixItems first, items for the rest; the draft-7 list form too."""
    schema = {
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": {"type": "null"},
    }
    assert validate(["a", 1, None, None], schema) == []
    assert paths(validate([1, "a", 0], schema)) == ["$[0]", "$[1]", "$[2]"]
    assert paths(validate(["a", 1, 2], {"prefixItems": [{"type": "string"}]})) == []
    closed = {"prefixItems": [{"type": "string"}], "items": False}
    assert problems(["a", 1], closed) == [
        "$[1]: no value is allowed here; got integer 1"
    ]
    draft7 = {"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}
    assert validate(["a", 1, 2], draft7) == []
    assert paths(validate([1, "b"], draft7)) == ["$[0]", "$[1]"]


def test_min_max_and_unique_items() -> None:
    """SC-33: counts and duplicates (JSON equality) at the array's path."""
    schema = {"minItems": 2, "maxItems": 3, "uniqueItems": True}
    assert validate([1, 2], schema) == []
    assert problems([1], schema) == ["$: expected at least 2 items; got 1"]
    assert problems([1, 2, 3, 4], schema) == ["$: expected at most 3 items; got 4"]
    assert problems(
        [1, True, 1.0, {"a": [1]}, {"a": [1.0]}], {"uniqueItems": True}
    ) == [
        "$: expected unique items; items [0] and [2] are equal",
        "$: expected unique items; items [3] and [4] are equal",
    ]
    assert validate([1, 1], {"uniqueItems": False}) == []


def test_any_of_reports_one_useful_issue() -> None:
    """SC-34: the closest alternative of the right JSON type explains, else a summary of
    all."""
    optional_int = prop(int | None)
    assert validate(None, optional_int) == []
    assert problems("x", optional_int) == [
        '$: expected one of: integer, null; got string "x"'
    ]
    point = {
        "type": "object",
        "properties": {"x": {"type": "number"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert problems({"y": 1}, {"anyOf": [point, {"type": "null"}]}) == [
        "$.x: required property is missing (expected number)",
        "$.y: unexpected property; allowed properties: x",
    ]
    choice = prop(Literal["a", "b"] | int)
    assert problems("c", choice) == ['$: expected one of: "a", "b"; got string "c"']
    assert problems(2.5, choice) == [
        '$: expected one of: "a", "b", integer; got number 2.5'
    ]
    referenced = {
        "$defs": {"n": {"type": "integer"}},
        "anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}],
    }
    assert problems("x", referenced) == [
        '$: expected one of: integer, null; got string "x"'
    ]
    two_arrays = prop(list[int] | list[str])
    assert problems([1, "a"], two_arrays) == ['$[1]: expected integer; got string "a"']
    assert problems(["a", 2, 3], two_arrays) == [
        '$[0]: expected integer; got string "a"'
    ]
    assert problems(["a", "b", 3], two_arrays) == [
        "$[2]: expected string; got integer 3"
    ]
    shapes = prop(Movie | Box)
    assert problems({"title": "Up", "year": "2009"}, shapes) == [
        '$.year: expected integer; got string "2009"'
    ]


def test_one_of() -> None:
    """SC-35: exactly one alternative must pass."""
    schema = {"oneOf": [{"type": "integer"}, {"type": "number"}, {"type": "string"}]}
    assert validate(2.5, schema) == []
    assert validate("s", schema) == []
    assert problems(3, schema) == [
        "$: expected exactly one alternative to match; alternatives 0, 1 match"
    ]
    assert problems(None, schema) == [
        "$: expected one of: integer, number, string; got null"
    ]


def test_all_of() -> None:
    """SC-36: the issues of every alternative."""
    schema = {"allOf": [{"type": "integer"}, {"minimum": 10}, {"maximum": 5}]}
    assert problems(7, schema) == [
        "$: expected a number >= 10; got integer 7",
        "$: expected a number <= 5; got integer 7",
    ]


def test_ref_resolves_defs_definitions_and_root() -> None:
    """SC-37: #/$defs, #/definitions, # and escaped pointers; siblings of $ref apply."""
    schema = {
        "$defs": {"pos": {"type": "integer", "minimum": 1}, "a/b": {"type": "string"}},
        "definitions": {"name": {"type": "string"}},
        "properties": {
            "n": {"$ref": "#/$defs/pos", "maximum": 3},
            "s": {"$ref": "#/definitions/name"},
            "e": {"$ref": "#/$defs/a~1b"},
            "self": {"$ref": "#"},
        },
    }
    assert validate({"n": 2, "s": "x", "e": "y", "self": {"n": 3}}, schema) == []
    assert problems({"n": 0, "s": 1, "e": 2, "self": {"n": 4}}, schema) == [
        "$.n: expected a number >= 1; got integer 0",
        "$.s: expected string; got integer 1",
        "$.e: expected string; got integer 2",
        "$.self.n: expected a number <= 3; got integer 4",
    ]


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/missing"},
        {"$ref": "other.json#/x"},
        {
            "$ref": "#/$defs/a",
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
        {"$defs": {"a": 5}, "$ref": "#/$defs/a"},
    ],
)
def test_bad_refs_raise_value_error(schema: dict[str, Any]) -> None:
    """SC-37, SC-41: unresolvable references and reference cycles are schema errors."""
    with pytest.raises(ValueError, match=r"\$ref"):
        validate(1, schema)


@pytest.mark.parametrize(
    ("keyword", "limit", "passing", "failing", "symbol"),
    [
        ("minimum", 1, [1, 2.5], [0, 0.5], ">="),
        ("maximum", 1, [1, -3], [2, 1.5], "<="),
        ("exclusiveMinimum", 1, [1.5, 2], [1, 0], ">"),
        ("exclusiveMaximum", 1, [0.5, 0], [1, 2], "<"),
    ],
)
def test_numeric_bounds(
    keyword: str, limit: int, passing: list[float], failing: list[float], symbol: str
) -> None:
    """SC-38: minimum, maximum, exclusiveMinimum, exclusiveMaximum."""
    for value in passing:
        assert validate(value, {keyword: limit}) == []
    for value in failing:
        assert problems(value, {keyword: limit}) == [
            f"$: expected a number {symbol} 1; got {_describe(value)}"
        ]


def test_string_length_and_pattern() -> None:
    """SC-39: code-point lengths; pattern uses re.search."""
    assert validate("日本", {"minLength": 2, "maxLength": 2}) == []
    assert problems("a", {"minLength": 2}) == [
        "$: expected at least 2 characters; got 1"
    ]
    assert problems("abc", {"maxLength": 2}) == [
        "$: expected at most 2 characters; got 3"
    ]
    assert validate("xx-12-yy", {"pattern": r"\d+"}) == []
    assert problems("A1", {"pattern": "^[a-z]+$"}) == [
        '$: expected a string matching "^[a-z]+$"; got string "A1"'
    ]


def test_keywords_apply_only_to_their_kind_of_value() -> None:
    """SC-40: each value breaks the keywords of its own kind only; unknown keywords are
    ignored."""
    by_kind = {
        "number": {"minimum": 5, "exclusiveMaximum": 0},
        "string": {"minLength": 5, "pattern": "^z"},
        "array": {"minItems": 5, "items": False, "uniqueItems": True},
        "object": {
            "required": ["a"],
            "properties": {"b": False},
            "additionalProperties": False,
        },
    }
    samples = {"number": 1, "string": "a", "array": [1, 1], "object": {"b": 1}}
    for kind, value in samples.items():
        assert validate(value, by_kind[kind]) != []
        for other, keywords in by_kind.items():
            if other != kind:
                assert validate(value, keywords) == [], (value, keywords)
    for value in (None, True):
        for keywords in by_kind.values():
            assert validate(value, keywords) == []
    unknown = {
        "format": "email",
        "x-vendor": {"type": "string"},
        "title": "T",
        "examples": [1],
    }
    for value in (None, 1, "x", [1], {"a": 1}):
        assert validate(value, unknown) == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "text"},
        {"type": ["string", "float"]},
        {"pattern": "("},
        {"properties": {"a": 1}},
    ],
)
def test_invalid_schemas_raise_value_error(schema: dict[str, Any]) -> None:
    """SC-41: an unknown type name, a bad pattern or a non-schema is a ValueError."""
    with pytest.raises(ValueError, match=r"schema|type|pattern"):
        validate({"a": "x"} if "properties" in schema else "x", schema)


def test_describe_issues_is_one_line_per_issue() -> None:
    """SC-42: str(issue) per line, in order; "" for no issues."""
    issues = validate({"units": "kelvin"}, WEATHER)
    text = describe_issues(issues)
    assert text.splitlines() == [str(issue) for issue in issues]
    assert text == (
        "$.city: required property is missing (expected string)\n"
        '$.units: expected one of: "metric", "imperial"; got string "kelvin"'
    )
    assert describe_issues([]) == ""


# --------------------------------------------------------------------------- properties (SC-43)

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
        kind = _describe(value).split(" ")[0]
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


FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@FAST
@given(tp=TYPES, data=st.data())
def test_conforming_values_validate(tp: Any, data: st.DataObject) -> None:
    """SC-43: a JSON value drawn to conform to a type hint has no issue."""
    schema = params(_tool(tp))
    value = data.draw(values_for(tp), label="value")
    assert validate({"x": value}, schema) == []


@FAST
@given(tp=TYPES, data=st.data())
def test_wrong_json_type_is_reported_at_its_location(
    tp: Any, data: st.DataObject
) -> None:
    """SC-43, SC-25, SC-28, SC-34: a value of a wrong JSON type somewhere is named by
    its path."""
    schema = params(_tool(tp))
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
@given(
    hints=st.lists(TYPES, min_size=1, max_size=3),
    defaults=st.lists(
        JSON | st.sampled_from([Color.RED, (1, "a"), object(), float("nan")])
    ),
)
def test_generated_schema_is_json(hints: list[Any], defaults: list[Any]) -> None:
    """SC-24, SC-43: the schema of any generated function survives json.dumps /
    json.loads."""

    def tool(**kwargs: Any) -> None: ...

    names = [f"p{i}" for i in range(len(hints))]
    defaults = defaults[: len(hints)]
    first_default = len(hints) - len(defaults)  # defaults go to the last parameters
    kind, empty = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                name,
                kind,
                annotation=tp,
                default=defaults[i - first_default] if i >= first_default else empty,
            )
            for i, (name, tp) in enumerate(zip(names, hints, strict=True))
        ]
    )
    schema = params(tool)
    assert json.loads(json.dumps(schema)) == schema


@FAST
@given(tp=TYPES, data=st.data())
def test_validator_agrees_with_jsonschema(tp: Any, data: st.DataObject) -> None:
    """SC-43, SC-28..SC-37: same verdict as the `jsonschema` package on random
    instances."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = params(_tool(tp))
    jsonschema.Draft202012Validator.check_schema(schema)
    value = data.draw(values_for(tp) | JSON, label="value")
    instance = data.draw(
        st.sampled_from([{"x": value}, {}, {"x": value, "y": 1}, value])
    )
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance)
    assert (validate(instance, schema) == []) == expected
