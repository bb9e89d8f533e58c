"""Tool JSON schemas from Python signatures (spec/schema.md SC-1 .. SC-24).

`function_schema(func)` turns a function's signature, type hints (string annotations
too) and Google or Sphinx docstring into the JSON schema of its arguments; it is never
checked here: `minagent._validate` checks a call's arguments against it, and
`minagent._convert` turns them into the hinted types.
"""

import collections.abc as abc
import contextlib
import dataclasses
import enum
import inspect
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import (
    Annotated,
    Any,
    Literal,
    NamedTuple,
    NoReturn,
    NotRequired,
    Required,
    Union,
)

from ._validate import json_type

__all__ = [
    "MAPPING_TYPES",
    "SEQUENCE_TYPES",
    "SET_TYPES",
    "FunctionSchema",
    "SchemaBuilder",
    "TwoContextsError",
    "date_format",
    "function_schema",
    "names_context",
    "secret_parameters",
]

JsonSchema = dict[str, Any]


class FunctionSchema(NamedTuple):
    """A tool's description (SC-20), argument schema (SC-1) and context parameter
    (SC-5)."""

    description: str
    parameters: JsonSchema
    context_parameter: str | None


# --------------------------------------------------------------------------- generation

_SCALARS: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
}
_SCALARS[type(None)] = "null"
SEQUENCE_TYPES = (list, abc.Sequence, abc.MutableSequence)
SET_TYPES = (set, frozenset, abc.Set, abc.MutableSet)
MAPPING_TYPES = (dict, abc.Mapping, abc.MutableMapping)
# SC-46: types sent as ISO 8601 strings; one parser, `_validate.format_parser`,
# validates (SC-47) and converts them (`datetime` is imported only when a hint or a
# schema needs it: importing minagent stays cheap)
_FORMAT_NAMES = {"datetime": "date-time", "date": "date", "time": "time"}


def date_format(tp: object) -> str | None:
    """SC-46: the JSON-schema format of `datetime.datetime`, `date` or `time`, else
    None."""
    if not isinstance(tp, type) or tp.__module__ != "datetime":
        return None
    import datetime

    name = _FORMAT_NAMES.get(tp.__name__)
    return name if name is not None and getattr(datetime, tp.__name__) is tp else None


def function_schema(
    func: Callable[..., Any],
    *,
    context_type_names: frozenset[str] = frozenset({"FunctionInvocationContext"}),
) -> FunctionSchema:
    """Build the JSON schema of ``func``'s arguments from its signature, hints and
    docstring."""
    # on first use: importing minagent stays cheap (PK-16)
    from ._docstrings import parse_docstring

    description, param_docs = parse_docstring(inspect.getdoc(func) or "")
    builder = SchemaBuilder(getattr(func, "__qualname__", None) or repr(func))
    target = inspect.unwrap(func)  # SC-2: where its string annotations are evaluated
    if not inspect.isfunction(target) and not inspect.ismethod(target):
        target = type(target).__call__  # a callable object
    globalns = getattr(target, "__globals__", {})
    properties: dict[str, JsonSchema] = {}
    required: list[str] = []
    context: str | None = None
    for param in SchemaBuilder.parameters_of(func):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):  # SC-4
            continue
        builder.param = param.name
        if param.kind is param.POSITIONAL_ONLY:
            builder.fail(
                "a positional-only parameter cannot receive a tool argument by name"
            )
        if names_context(param.annotation, context_type_names):  # SC-5
            # SC-5: a ValueError, as upstream's (and the TypeError it was)
            if context is not None:
                first = f"a second context parameter {param.name!r} (the first is {context!r})"
                raise TwoContextsError(
                    f"function {builder.func_name!r} has multiple FunctionInvocationContext parameters: {first}"
                )
            context = param.name
            continue
        schema = builder.schema(builder.resolve(param.annotation, globalns))
        if "description" not in schema and param.name in param_docs:  # SC-19
            schema["description"] = param_docs[param.name]
        if param.default is param.empty:  # SC-3
            required.append(param.name)
        else:
            _set_default(schema, param.default)
        properties[param.name] = schema
    parameters = _object_schema(properties, required)
    if builder.defs:
        parameters["$defs"] = builder.defs
    return FunctionSchema(description, parameters, context)


class TwoContextsError(ValueError, TypeError):
    """SC-5: a function with two context parameters."""


def names_context(annotation: object, names: frozenset[str]) -> bool:
    """SC-5: a context class, or a string naming one (it need not be importable), or
    either or None."""
    if isinstance(annotation, str):
        text = (
            annotation.replace("Optional[", "")
            .replace("]", "")
            .replace("'", "")
            .replace('"', "")
        )
        kinds = [
            part.strip().rsplit(".", 1)[-1]
            for part in text.split("|")
            if part.strip() != "None"
        ]
        return len(kinds) == 1 and kinds[0] in names
    if typing.get_origin(annotation) in (Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(kinds) == 1 and names_context(kinds[0], names)
    return isinstance(annotation, type) and annotation.__name__ in names


def _set_default(schema: JsonSchema, default: object) -> None:
    """SC-3: record a default in its JSON form, or not at all."""
    if isinstance(default, enum.Enum):
        default = default.value
    with contextlib.suppress(TypeError, ValueError, RecursionError):
        schema["default"] = json.loads(json.dumps(default, allow_nan=False))


def _object_schema(
    properties: dict[str, JsonSchema], required: list[str]
) -> JsonSchema:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


# SC-44: constraint objects read by duck typing (pydantic's `Field`, annotated-types'
# `Ge`, `MinLen`, ...), so the core imports none of them. Attribute -> JSON-schema
# keyword.
_BOUNDS = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
    "multiple_of": "multipleOf",
}
_LENGTHS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def _apply_metadata(schema: JsonSchema, item: object) -> None:
    """SC-44: description, title, examples, default and constraints of one `Annotated`
    item."""
    nested = getattr(item, "metadata", None)
    holders = [item, *(nested if isinstance(nested, list | tuple) else ())]
    for holder in holders:
        for attr, keyword in _BOUNDS.items():
            value = getattr(holder, attr, None)
            if isinstance(value, int | float) and not isinstance(value, bool):
                schema[keyword] = value
        lengths = _LENGTHS.get(schema.get("type", ""))
        for index, attr in enumerate(("min_length", "max_length")):
            value = getattr(holder, attr, None)
            if lengths and isinstance(value, int) and not isinstance(value, bool):
                schema[lengths[index]] = value
        pattern = getattr(holder, "pattern", None)
        if isinstance(pattern, str):
            schema["pattern"] = pattern
    for attr in ("description", "title"):
        value = getattr(item, attr, None)
        if isinstance(value, str):
            schema[attr] = value
    examples = getattr(item, "examples", None)
    if isinstance(examples, list | tuple):
        with contextlib.suppress(TypeError, ValueError, RecursionError):
            schema["examples"] = json.loads(json.dumps(list(examples), allow_nan=False))
    default = getattr(item, "default", None)
    if (
        default is not None
        and default is not ...
        and type(default).__name__ != "PydanticUndefinedType"
    ):
        _set_default(schema, default)


def _type_name(tp: object) -> str:
    return tp.__qualname__ if isinstance(tp, type) else repr(tp)


class SchemaBuilder:
    """Turns the type hints of one function into schemas, collecting its ``$defs``
    (SC-17)."""

    @staticmethod
    def parameters_of(func: Callable[..., Any]) -> list[inspect.Parameter]:
        """The parameters of ``func`` that arguments fill: a method's leading
        ``self``/``cls`` is not one (TL-15)."""
        params = list(inspect.signature(func).parameters.values())
        if params and params[0].name in ("self", "cls") and not inspect.ismethod(func):
            return params[1:]
        return params

    def __init__(self, func_name: str) -> None:
        self.func_name = func_name
        self.param = ""
        self.defs: dict[str, JsonSchema] = {}
        self._def_names: dict[type, str] = {}
        self._open: list[type] = []  # the structures being built, outermost first
        self._recursive: set[type] = set()

    def fail(self, problem: str, cause: BaseException | None = None) -> NoReturn:
        message = f"function {self.func_name!r}, parameter {self.param!r}: {problem}"
        raise TypeError(message) from cause

    def resolve(self, annotation: object, globalns: dict[str, Any]) -> object:
        """SC-2: one parameter's hint, resolved by `typing.get_type_hints`."""
        if annotation is inspect.Parameter.empty:
            return Any
        holder = types.SimpleNamespace(__annotations__={self.param: annotation})
        try:
            return typing.get_type_hints(holder, globalns, include_extras=True)[
                self.param
            ]
        except Exception as exc:
            self.fail(f"cannot resolve the type hint {annotation!r} ({exc})", exc)

    def schema(self, tp: object) -> JsonSchema:
        """The schema of one type: always a new dict, which the caller may change."""
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Annotated:  # SC-18
            schema = self.schema(args[0])
            description = next(
                (item for item in args[1:] if isinstance(item, str)), None
            )
            if description is not None:
                schema["description"] = description
            for item in args[1:]:
                if not isinstance(item, str):
                    _apply_metadata(schema, item)
            return schema
        if origin is Required or origin is NotRequired:
            return self.schema(args[0])
        if tp is Any:
            return {}
        if tp is None or (isinstance(tp, type) and tp in _SCALARS):
            return {"type": _SCALARS[type(None) if tp is None else tp]}
        if (date_kind := date_format(tp)) is not None:  # SC-46
            return {"type": "string", "format": date_kind}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):  # SC-9
            return self._enum([member.value for member in tp], (str, int, float), tp)
        if origin is Literal:  # SC-8
            values = [v.value if isinstance(v, enum.Enum) else v for v in args]
            return self._enum(values, (str, int), tp)
        if origin is Union or origin is types.UnionType:  # SC-7
            return {"anyOf": [self.schema(arg) for arg in args]}
        if isinstance(tp, type) and (
            typing.is_typeddict(tp) or dataclasses.is_dataclass(tp)
        ):
            return self._structure(tp)
        return self._container(tp, origin, args)

    def _enum(
        self, values: list[object], allowed: tuple[type, ...], tp: object
    ) -> JsonSchema:
        """SC-8, SC-9: ``{"type": ..., "enum": [...]}``."""
        for value in values:
            finite = not isinstance(value, float) or math.isfinite(value)
            if not (value is None or (isinstance(value, allowed) and finite)):
                self.fail(
                    f"{_type_name(tp)} has the value {value!r}, which is not a JSON scalar"
                )
        names = list(dict.fromkeys(json_type(value) for value in values))
        return {"type": names[0] if len(names) == 1 else names, "enum": values}

    def _container(
        self, tp: object, origin: object, args: tuple[Any, ...]
    ) -> JsonSchema:
        """SC-10 .. SC-14, and SC-23 for whatever is left."""
        kind = tp if origin is None else origin
        if kind is tuple:
            if tp is tuple or tp is typing.Tuple:  # noqa: UP006 - the bare alias is its own object
                return {"type": "array"}
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.schema(args[0])}
            if not args:
                return {"type": "array", "maxItems": 0}
            n, prefix = len(args), [self.schema(arg) for arg in args]
            return {
                "type": "array",
                "prefixItems": prefix,
                "minItems": n,
                "maxItems": n,
            }
        if kind in SEQUENCE_TYPES or kind in SET_TYPES:
            schema: JsonSchema = {"type": "array"}
            if args:
                schema["items"] = self.schema(args[0])
            if kind in SET_TYPES:
                schema["uniqueItems"] = True
            return schema
        if kind in MAPPING_TYPES:
            if not args:
                return {"type": "object"}
            if args[0] is not str:
                self.fail(
                    f"unsupported type {_type_name(tp)}: JSON object keys are strings"
                )
            return {"type": "object", "additionalProperties": self.schema(args[1])}
        self.fail(f"unsupported type {_type_name(tp)}")

    def _structure(self, cls: type) -> JsonSchema:
        """SC-15 .. SC-17: a TypedDict or dataclass, inlined unless it contains
        itself."""
        if cls not in self._def_names:
            name, n = cls.__name__, 2
            while name in self._def_names.values():
                name, n = f"{cls.__name__}_{n}", n + 1
            self._def_names[cls] = name
        ref = {"$ref": f"#/$defs/{self._def_names[cls]}"}
        if cls in self._open or cls in self._recursive:
            self._recursive.add(cls)
            return ref
        self._open.append(cls)
        try:
            schema = self._fields(cls)
        finally:
            self._open.pop()
        if cls not in self._recursive:
            return schema
        self.defs[self._def_names[cls]] = schema
        return ref

    def _fields(self, cls: type) -> JsonSchema:
        """SC-15, SC-16: the object schema of a TypedDict's keys or a dataclass's
        fields."""
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:
            self.fail(
                f"cannot resolve the type hints of {cls.__qualname__} ({exc})", exc
            )
        properties: dict[str, JsonSchema] = {}
        required: list[str] = []
        if typing.is_typeddict(cls):
            for key, hint in hints.items():
                properties[key] = self.schema(hint)
                if _required_key(
                    key, hint, getattr(cls, "__required_keys__", frozenset())
                ):
                    required.append(key)
            return _object_schema(properties, required)
        for field in (field for field in dataclasses.fields(cls) if field.init):
            schema = properties[field.name] = self.schema(hints.get(field.name, Any))
            if field.default is not dataclasses.MISSING:
                _set_default(schema, field.default)
            elif field.default_factory is dataclasses.MISSING:
                required.append(field.name)
        return _object_schema(properties, required)


def _required_key(key: str, hint: object, required_keys: frozenset[str]) -> bool:
    """SC-15: an explicit `Required` / `NotRequired` decides, else
    ``__required_keys__``."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return _required_key(key, typing.get_args(hint)[0], required_keys)
    return origin is Required or (origin is not NotRequired and key in required_keys)


def secret_parameters(tool: Any) -> frozenset[str]:
    """OB-16: the parameters the tool's schema marks secret (``"writeOnly": true`` or
    ``"format": "password"``, as pydantic's ``SecretStr`` writes them)."""
    parameters = getattr(tool, "parameters", None)
    properties = (
        parameters.get("properties") if isinstance(parameters, Mapping) else None
    )
    if not isinstance(properties, Mapping):
        return frozenset()
    return frozenset(
        name
        for name, schema in properties.items()
        if isinstance(schema, Mapping)
        and (schema.get("writeOnly") is True or schema.get("format") == "password")
    )
