"""Generating a tool's JSON schema from a function (spec/schema.md SC-1 .. SC-24)."""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import (
    Mapping,
    MutableMapping,
    MutableSequence,
    MutableSet,
    Sequence,
)
from dataclasses import dataclass
from enum import Enum
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
from hypothesis import given
from hypothesis import strategies as st

import minagent
from minagent import tool
from minagent._schema import (
    FunctionSchema,
    function_schema,
)
from minagent._validate import validate
from tests.schema import _fixtures as fx
from tests.schema._strategies import (
    FAST,
    JSON,
    TYPES,
    Box,
    Color,
    Level,
    Mixed,
    Movie,
    params,
    paths,
    prop,
)

# --------------------------------------------------------------------------- helpers


class FunctionInvocationContext:
    """A stand-in with the context type's name (SC-5 matches by name)."""


class Options(TypedDict, total=False):
    verbose: bool
    name: Required[str]


class Tagged(TypedDict):
    label: str
    note: NotRequired[str]


@dataclass
class Node:
    """Shares its name with fx.Node (SC-17: $defs names stay unique)."""

    next: Node | None = None


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


def test_two_context_parameters_is_a_value_error() -> None:
    """SC-5: a tool function with two FunctionInvocationContext parameters is refused (a
    ValueError)."""

    def f(a: FunctionInvocationContext, b: FunctionInvocationContext) -> None:
        """Two."""

    with pytest.raises(ValueError, match="multiple FunctionInvocationContext"):
        tool(f)


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


# --------------------------------------------------------------------------- properties (SC-43)


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
