"""Tool JSON schemas from Python signatures, and a validator for them (spec/schema.md).

`function_schema(func)` turns a function's signature, type hints (string annotations too) and
Google or Sphinx docstring into the JSON schema of its arguments (SC-1 .. SC-24).
`validate(instance, schema)` checks a value against a JSON schema (what minagent generates
and what hand-written schemas commonly use) and returns every issue with its path, what was
expected and what was given: a failed tool call tells the model where and why (SC-25 ..).
"""

from __future__ import annotations

import collections.abc as abc
import contextlib
import dataclasses
import enum
import inspect
import json
import math
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple, NoReturn, NotRequired, Required, Union

from . import _limits as _limit_state
from ._docstrings import parse_docstring
from ._issues import ValidationIssue, describe_issues
from ._issues import describe as _describe
from ._issues import json_type as _json_type
from ._issues import property_path as _property_path
from ._issues import render as _render

__all__ = [
    "MAPPING_TYPES",
    "SEQUENCE_TYPES",
    "SET_TYPES",
    "FunctionSchema",
    "SchemaBuilder",
    "ValidationIssue",
    "date_format",
    "describe_issues",
    "format_parser",
    "function_schema",
    "names_context",
    "secret_parameters",
    "validate",
]

JsonSchema = dict[str, Any]


class FunctionSchema(NamedTuple):
    """A tool's description (SC-20), argument schema (SC-1) and context parameter (SC-5)."""

    description: str
    parameters: JsonSchema
    context_parameter: str | None


# --------------------------------------------------------------------------- generation

_SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
_SCALARS[type(None)] = "null"
SEQUENCE_TYPES = (list, abc.Sequence, abc.MutableSequence)
SET_TYPES = (set, frozenset, abc.Set, abc.MutableSet)
MAPPING_TYPES = (dict, abc.Mapping, abc.MutableMapping)
# SC-46: types sent as ISO 8601 strings; the same parser validates (SC-47) and converts them
# (`datetime` is imported only when a hint or a schema needs it: importing minagent stays cheap)
_FORMAT_NAMES = {"datetime": "date-time", "date": "date", "time": "time"}


def date_format(tp: object) -> str | None:
    """SC-46: the JSON-schema format of `datetime.datetime`, `date` or `time`, else None."""
    if not isinstance(tp, type) or tp.__module__ != "datetime":
        return None
    import datetime

    name = _FORMAT_NAMES.get(tp.__name__)
    return name if name is not None and getattr(datetime, tp.__name__) is tp else None


def format_parser(name: object) -> Callable[[str], Any] | None:
    """SC-47: the ISO 8601 parser of a ``format`` name (``date-time``, ``date``, ``time``), else None."""
    if name not in ("date-time", "date", "time"):
        return None
    import datetime

    if name == "date-time":
        return datetime.datetime.fromisoformat
    return datetime.date.fromisoformat if name == "date" else datetime.time.fromisoformat


def function_schema(
    func: Callable[..., Any],
    *,
    context_type_names: frozenset[str] = frozenset({"FunctionInvocationContext"}),
) -> FunctionSchema:
    """Build the JSON schema of ``func``'s arguments from its signature, hints and docstring."""
    description, param_docs = parse_docstring(inspect.getdoc(func) or "")
    builder = SchemaBuilder(getattr(func, "__qualname__", None) or repr(func))
    target = inspect.unwrap(func)  # SC-2: where its string annotations are evaluated
    if not inspect.isfunction(target) and not inspect.ismethod(target):
        target = type(target).__call__  # a callable object
    globalns = getattr(target, "__globals__", {})
    properties: dict[str, JsonSchema] = {}
    required: list[str] = []
    context: str | None = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):  # SC-4
            continue
        builder.param = param.name
        if param.kind is param.POSITIONAL_ONLY:
            builder.fail("a positional-only parameter cannot receive a tool argument by name")
        if names_context(param.annotation, context_type_names):  # SC-5
            if context is not None:
                builder.fail(f"a second context parameter (the first is {context!r})")
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


def names_context(annotation: object, names: frozenset[str]) -> bool:
    """SC-5: a context class, or a string naming one (it need not be importable)."""
    if isinstance(annotation, str):
        return annotation.strip().strip("'\"").rsplit(".", 1)[-1] in names
    return isinstance(annotation, type) and annotation.__name__ in names


def _set_default(schema: JsonSchema, default: object) -> None:
    """SC-3: record a default in its JSON form, or not at all."""
    if isinstance(default, enum.Enum):
        default = default.value
    with contextlib.suppress(TypeError, ValueError, RecursionError):
        schema["default"] = json.loads(json.dumps(default, allow_nan=False))


def _object_schema(properties: dict[str, JsonSchema], required: list[str]) -> JsonSchema:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


# SC-44: constraint objects read by duck typing (pydantic's `Field`, annotated-types' `Ge`,
# `MinLen`, ...), so the core imports none of them. Attribute -> JSON-schema keyword.
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
    """SC-44: description, title, examples, default and constraints of one `Annotated` item."""
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
    if default is not None and default is not ... and type(default).__name__ != "PydanticUndefinedType":
        _set_default(schema, default)


def _type_name(tp: object) -> str:
    return tp.__qualname__ if isinstance(tp, type) else repr(tp)


class SchemaBuilder:
    """Turns the type hints of one function into schemas, collecting its ``$defs`` (SC-17)."""

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
            return typing.get_type_hints(holder, globalns, include_extras=True)[self.param]
        except Exception as exc:
            self.fail(f"cannot resolve the type hint {annotation!r} ({exc})", exc)

    def schema(self, tp: object) -> JsonSchema:
        """The schema of one type: always a new dict, which the caller may change."""
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Annotated:  # SC-18
            schema = self.schema(args[0])
            description = next((item for item in args[1:] if isinstance(item, str)), None)
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
        if isinstance(tp, type) and (typing.is_typeddict(tp) or dataclasses.is_dataclass(tp)):
            return self._structure(tp)
        return self._container(tp, origin, args)

    def _enum(self, values: list[object], allowed: tuple[type, ...], tp: object) -> JsonSchema:
        """SC-8, SC-9: ``{"type": ..., "enum": [...]}``."""
        for value in values:
            finite = not isinstance(value, float) or math.isfinite(value)
            if not (value is None or (isinstance(value, allowed) and finite)):
                self.fail(f"{_type_name(tp)} has the value {value!r}, which is not a JSON scalar")
        names = list(dict.fromkeys(_json_type(value) for value in values))
        return {"type": names[0] if len(names) == 1 else names, "enum": values}

    def _container(self, tp: object, origin: object, args: tuple[Any, ...]) -> JsonSchema:
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
            return {"type": "array", "prefixItems": prefix, "minItems": n, "maxItems": n}
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
                self.fail(f"unsupported type {_type_name(tp)}: JSON object keys are strings")
            return {"type": "object", "additionalProperties": self.schema(args[1])}
        self.fail(f"unsupported type {_type_name(tp)}")

    def _structure(self, cls: type) -> JsonSchema:
        """SC-15 .. SC-17: a TypedDict or dataclass, inlined unless it contains itself."""
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
        """SC-15, SC-16: the object schema of a TypedDict's keys or a dataclass's fields."""
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:
            self.fail(f"cannot resolve the type hints of {cls.__qualname__} ({exc})", exc)
        properties: dict[str, JsonSchema] = {}
        required: list[str] = []
        if typing.is_typeddict(cls):
            for key, hint in hints.items():
                properties[key] = self.schema(hint)
                if _required_key(key, hint, getattr(cls, "__required_keys__", frozenset())):
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
    """SC-15: an explicit `Required` / `NotRequired` decides, else ``__required_keys__``."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return _required_key(key, typing.get_args(hint)[0], required_keys)
    return origin is Required or (origin is not NotRequired and key in required_keys)


# --------------------------------------------------------------------------- validation

_Schema = Mapping[str, Any] | bool
_MAX_DEPTH = 16  # how far `_accepts` follows $ref and nested anyOf
_MAX_LISTED = 50


def validate(instance: Any, schema: Mapping[str, Any]) -> list[ValidationIssue]:
    """Every reason why ``instance`` does not match ``schema``; ``[]`` when it does (SC-25).

    A value that breaks the argument limits gets only those issues (SC-50).
    """
    from ._limits import check_limits

    issues = check_limits(instance)
    if issues:
        return issues
    try:
        return _Validator(schema).check(instance, schema, "$")
    except RecursionError:  # only with limits raised far above the defaults
        return [ValidationIssue("$", "the value is nested too deeply to be checked")]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {  # SC-28
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: _is_number(v) and (isinstance(v, int) or v.is_integer()),
    "number": _is_number,
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
}
# keyword -> (the kind of value it applies to, violated(measure, limit), what is expected);
# the measure of a number is the number, of a string or an array its length (SC-33, SC-38, SC-39)
_LIMITS: dict[str, tuple[str, Callable[[Any, Any], bool], str]] = {
    "minimum": ("number", operator.lt, "a number >= {}"),
    "maximum": ("number", operator.gt, "a number <= {}"),
    "exclusiveMinimum": ("number", operator.le, "a number > {}"),
    "exclusiveMaximum": ("number", operator.ge, "a number < {}"),
    "minLength": ("string", operator.lt, "at least {} characters"),
    "maxLength": ("string", operator.gt, "at most {} characters"),
    "minItems": ("array", operator.lt, "at least {} items"),
    "maxItems": ("array", operator.gt, "at most {} items"),
    "minProperties": ("object", operator.lt, "at least {} properties"),
    "maxProperties": ("object", operator.gt, "at most {} properties"),
    "multipleOf": ("number", lambda n, m: _not_multiple(n, m), "a multiple of {}"),
}


def _not_multiple(number: Any, divisor: Any) -> bool:
    if divisor <= 0:
        return False
    if isinstance(number, int) and isinstance(divisor, int):
        return number % divisor != 0
    try:
        quotient = number / divisor
    except OverflowError:
        return True
    return bool(abs(quotient - round(quotient)) > 1e-9 * max(1.0, abs(quotient)))


def _limits(value: Any, schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
    if _LIMITS.keys().isdisjoint(schema):  # the common case: no bound to check, nothing to describe
        return []
    kind = "number" if _is_number(value) else _json_type(value)
    measure = len(value) if kind in ("string", "array", "object") else value
    given = _describe(value) if kind == "number" else str(measure)
    return [
        ValidationIssue(path, f"expected {expected.format(_render(limit))}; got {given}")
        for keyword, (applies_to, violated, expected) in _LIMITS.items()
        if applies_to == kind and _is_number(limit := schema.get(keyword)) and violated(measure, limit)
    ]


class _Validator:
    """Checks values against one root schema, which `$ref` pointers resolve into."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self._refs_in_progress: set[tuple[str, str]] = set()

    def check(self, value: Any, schema: _Schema, path: str) -> list[ValidationIssue]:
        if isinstance(schema, bool):  # SC-27
            problem = f"no value is allowed here; got {_describe(value)}"
            return [] if schema else [ValidationIssue(path, problem)]
        if not isinstance(schema, Mapping):
            raise ValueError(f"invalid schema at {path}: {schema!r} is not an object or a boolean")
        issues: list[ValidationIssue] = []
        if "$ref" in schema:
            issues += self._ref(value, schema["$ref"], path)
        if "type" in schema and not _has_type(value, schema["type"]):  # SC-28
            expected = [phrase for phrase, _ in self._accepts(schema)]  # enum values if any
            return [*issues, _mismatch(path, expected, value)]
        if "enum" in schema and not any(_json_equal(value, e) for e in schema["enum"]):  # SC-29
            issues.append(_mismatch(path, [_render(e) for e in schema["enum"]], value))
        if "const" in schema and not _json_equal(value, schema["const"]):
            issues.append(_mismatch(path, [_render(schema["const"])], value))
        for alternative in schema.get("allOf", []):  # SC-36
            issues += self.check(value, alternative, path)
        if "anyOf" in schema:
            issues += self._one_or_any(value, schema["anyOf"], path, one=False)
        if "oneOf" in schema:
            issues += self._one_or_any(value, schema["oneOf"], path, one=True)
        if isinstance(value, Mapping):
            issues += self._object(value, schema, path)
        elif isinstance(value, list | tuple):
            issues += self._array(value, schema, path)
        elif isinstance(value, str):
            issues += _pattern(value, schema, path)
        return issues + _limits(value, schema, path)

    def _ref(self, value: Any, ref: str, path: str) -> list[ValidationIssue]:
        """SC-37: a reference at a location it is already being checked at is a cycle."""
        key = (ref, path)
        if key in self._refs_in_progress:
            raise ValueError(f"$ref {ref!r} refers to itself without descending into the value")
        self._refs_in_progress.add(key)
        try:
            return self.check(value, self._resolve(ref), path)
        finally:
            self._refs_in_progress.discard(key)

    def _resolve(self, ref: object) -> _Schema:
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            raise ValueError(f"unsupported $ref {ref!r}: only #/... pointers resolve")
        node: Any = self.root
        for part in ref.split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            node = node.get(key) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping | bool):
            raise ValueError(f"$ref {ref!r} does not resolve to a schema")
        return node

    def _one_or_any(self, value: Any, alternatives: list[_Schema], path: str, *, one: bool) -> list[ValidationIssue]:
        """SC-34, SC-35: one useful report when no alternative passes."""
        results = [self.check(value, alternative, path) for alternative in alternatives]
        passing = [str(i) for i, issues in enumerate(results) if not issues]
        if passing and not (one and len(passing) > 1):
            return []
        if passing:
            problem = "expected exactly one alternative to match; alternatives {} match"
            return [ValidationIssue(path, problem.format(", ".join(passing)))]
        pairs = zip(alternatives, results, strict=True)
        accepts = [(self._accepts(alternative), issues) for alternative, issues in pairs]
        admitting = [issues for kinds, issues in accepts if any(k is None or _has_type(value, k) for _, k in kinds)]
        if admitting:  # the closest alternative explains best: the fewest issues, the first on a tie
            return min(admitting, key=len)
        expected = [phrase for kinds, _ in accepts for phrase, _ in kinds]
        return [_mismatch(path, list(dict.fromkeys(expected)), value)]

    def _accepts(self, schema: _Schema, depth: int = 0) -> list[tuple[str, str | None]]:
        """(Phrase, JSON type or None for any) for what ``schema`` accepts (SC-28, SC-30, SC-34)."""
        if isinstance(schema, bool):
            return [("any value", None)] if schema else []
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else schema["enum"]
            return [(_render(v), "number" if _is_number(v) else _json_type(v)) for v in values]
        if "type" in schema:
            return [(name, name) for name in _type_names(schema["type"])]
        if depth < _MAX_DEPTH and "$ref" in schema:
            return self._accepts(self._resolve(schema["$ref"]), depth + 1)
        branches = [*schema.get("anyOf", []), *schema.get("oneOf", [])]
        if depth < _MAX_DEPTH and branches:
            return [pair for branch in branches for pair in self._accepts(branch, depth + 1)]
        return [("any value", None)]

    def _object(self, value: Mapping[Any, Any], schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
        """SC-30, SC-31."""
        properties: Mapping[str, _Schema] = schema.get("properties", {})
        issues: list[ValidationIssue] = []
        for name in schema.get("required", []):
            if name not in value:
                expected = [phrase for phrase, _ in self._accepts(properties.get(name, True))]
                hint = "" if expected == ["any value"] else f" (expected {_expectation(expected)})"
                problem = f"required property is missing{hint}"
                issues.append(ValidationIssue(_property_path(path, name), problem))
        additional: _Schema = schema.get("additionalProperties", True)
        allowed = ", ".join(properties)
        for name, item in value.items():
            where = _property_path(path, name)
            if name in properties:
                issues += self.check(item, properties[name], where)
            elif additional is False:
                problem = f"allowed properties: {allowed}" if allowed else "no properties are allowed"
                issues.append(ValidationIssue(where, f"unexpected property; {problem}"))
            else:
                issues += self.check(item, additional, where)
        return issues

    def _array(self, value: Sequence[Any], schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
        """SC-32, SC-33."""
        items: Any = schema.get("items", True)
        if isinstance(items, list):  # draft 7: items as a list, additionalItems for the rest
            prefix, rest = items, schema.get("additionalItems", True)
        else:
            prefix, rest = schema.get("prefixItems", []), items
        issues: list[ValidationIssue] = []
        for i, item in enumerate(value):
            issues += self.check(item, prefix[i] if i < len(prefix) else rest, f"{path}[{i}]")
        if schema.get("uniqueItems") is True:  # SC-51: one pass, hashing JSON-canonical forms
            seen: dict[Any, int] = {}
            for j, item in enumerate(value):
                first = seen.setdefault(_canonical(item), j)
                if first != j:
                    problem = f"expected unique items; items [{first}] and [{j}] are equal"
                    issues.append(ValidationIssue(path, problem))
        return issues


def _canonical(value: Any) -> Any:
    """A hashable key; two values have equal keys exactly when they are JSON-equal (SC-29)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(map(_canonical, value)))
    if isinstance(value, Mapping):
        return ("o", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, int | float | str) or value is None:
        return value  # 1 == 1.0 and both hash alike, as JSON wants
    return ("r", id(value))  # not JSON: equal only to itself


def _format(value: str, schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
    """SC-47: ``date-time``, ``date`` and ``time`` strings must parse as ISO 8601."""
    name = schema.get("format")
    parser = format_parser(name)
    if parser is None:
        return []
    try:
        parser(value)
    except ValueError:
        return [ValidationIssue(path, f"expected a {name} string (ISO 8601); got {_describe(value)}")]
    return []


def _pattern(value: str, schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
    """SC-39, SC-41."""
    if "format" in schema:
        issues = _format(value, schema, path)
        if issues:
            return issues
    pattern = schema.get("pattern")
    if not isinstance(pattern, str):
        return []
    try:
        found = re.search(pattern, value)
    except re.error as exc:
        raise ValueError(f"invalid pattern {pattern!r} in schema: {exc}") from exc
    problem = f"expected a string matching {_render(pattern)}; got {_describe(value)}"
    return [] if found else [ValidationIssue(path, problem)]


def _has_type(value: Any, type_: object) -> bool:
    names = _type_names(type_)
    unknown = [name for name in names if name not in _TYPE_CHECKS]
    if unknown:
        raise ValueError(f"unknown JSON type {unknown[0]!r} in schema")  # SC-41
    return any(_TYPE_CHECKS[name](value) for name in names)


def _type_names(type_: object) -> list[str]:
    return list(type_) if isinstance(type_, list) else [str(type_)]


def _json_equal(a: Any, b: Any) -> bool:
    """SC-29: equality as JSON sees it."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[key], b[key]) for key in a)
    return bool(a == b)


def _expectation(alternatives: list[str]) -> str:
    if len(alternatives) == 1:
        return alternatives[0]
    listed = ", ".join(alternatives[:_MAX_LISTED])
    more = len(alternatives) - _MAX_LISTED
    return f"one of: {listed}" + (f", ... ({more} more)" if more > 0 else "")


def _mismatch(path: str, expected: list[str], value: object) -> ValidationIssue:
    return ValidationIssue(path, f"expected {_expectation(expected)}; got {_describe(value)}")


# ------------------------------------------------------------------------- the fast path (SC-55)

_FLAT_KEYWORDS = frozenset({"type", "description", "title", "default", "examples"})
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "description", "title"})


def compile_fast_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """SC-55: for the common schema — an object of scalar properties without constraints — a check
    that says True only when `validate` would find no issue; None for any other schema.

    A False answer means "not sure": the caller runs `validate`, which finds and words the issues.
    """
    if schema.get("type") != "object" or not _OBJECT_KEYWORDS.issuperset(schema):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    kinds: dict[str, str] = {}
    for name, sub in properties.items():
        if not isinstance(sub, Mapping) or not _FLAT_KEYWORDS.issuperset(sub):
            return None
        kind = sub.get("type")
        if kind not in ("integer", "number", "string", "boolean"):
            return None
        kinds[name] = kind
    needed = frozenset(required)
    if not needed <= kinds.keys() or schema.get("additionalProperties", True) is not False:
        return None

    def check(value: Any) -> bool:
        if type(value) is not dict or not needed <= value.keys():
            return False
        limits = _limit_state._argument_limits  # the limits in force now (SC-48)
        for key, item in value.items():
            kind = kinds.get(key)
            form = type(item)
            if kind == "string":
                if form is not str or len(item) > limits.max_string_chars:
                    return False
            elif kind == "integer":
                if form is not int or item.bit_length() > 3 * (limits.max_integer_digits - 1):
                    return False
            elif kind == "number":
                if not (form is int and item.bit_length() <= 3 * (limits.max_integer_digits - 1)) and not (
                    form is float and item - item == 0
                ):
                    return False
            elif kind == "boolean":
                if form is not bool:
                    return False
            else:  # a key the schema does not name
                return False
        return True

    return check


def secret_parameters(tool: Any) -> frozenset[str]:
    """OB-16: the parameters the tool's schema marks secret (``"writeOnly": true`` or
    ``"format": "password"``, as pydantic's ``SecretStr`` writes them)."""
    parameters = getattr(tool, "parameters", None)
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return frozenset()
    return frozenset(
        name
        for name, schema in properties.items()
        if isinstance(schema, Mapping) and (schema.get("writeOnly") is True or schema.get("format") == "password")
    )
