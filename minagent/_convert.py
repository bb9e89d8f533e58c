"""Validated JSON arguments turned into the values a tool's type hints ask for
(spec/schema.md SC-52).

Theory of operation: `ArgumentConverter(func)` resolves the hints of ``func``'s
parameters once, with the same rules as schema generation (SC-2), and compiles one
converter function per type, memoised per converter object (recursive dataclasses and
TypedDicts reuse their own entry while it is being built). A converter receives a value
that the generated schema accepted and returns the Python value of the hint: an `Enum`
member for its value, ``3`` for ``3.0`` under ``int``, a dataclass instance for an
object, a `datetime` for an ISO string, a tuple or a frozenset for an array. Values that
already have the target type pass through, so a caller that invokes a tool with Python
values directly is not affected. A union tries its members in order, first without any
conversion between numbers (so ``int | float`` keeps ``2.5`` a float and ``3`` an int),
then with it. A failure raises `ArgumentConversionError`, naming the parameter and the
path.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, NotRequired, Required, Union

from ._exceptions import MinagentError
from ._schema import (
    MAPPING_TYPES,
    SEQUENCE_TYPES,
    SET_TYPES,
    SchemaBuilder,
    date_format,
    names_context,
)
from ._validate import format_parser

__all__ = ["ArgumentConversionError", "ArgumentConverter", "ConversionMismatch"]

Converter = Callable[[Any, str, bool], Any]  # (value, path, strict) -> converted value


class ArgumentConversionError(MinagentError, ValueError):
    """A validated argument could not become a value of its parameter's type (SC-52,
    TL-10).

    ``model_visible``: the tool loop shows the text to the model (MCP-12), which can
    then retry.
    """

    model_visible = True


class ConversionMismatch(Exception):
    """A value that is not of the type being tried (internal: unions try the next
    member)."""


def _identity(value: Any, path: str, strict: bool) -> Any:
    return value


class ArgumentConverter:
    """Converts the JSON arguments of one function to its parameters' types (SC-52)."""

    __slots__ = ("_builder", "_cache", "converters", "exact")

    def __init__(
        self, func: Callable[..., Any], context_parameter: str | None = None
    ) -> None:
        self._cache: dict[Any, Converter] = {}
        self._builder = SchemaBuilder(getattr(func, "__qualname__", None) or repr(func))
        target = inspect.unwrap(func)
        if not inspect.isfunction(target) and not inspect.ismethod(target):
            target = type(target).__call__
        globalns = getattr(target, "__globals__", {})
        self.converters: dict[str, Converter] = {}
        # a parameter annotated int, float, bool or str: that type
        self.exact: dict[str, type] = {}
        for param in SchemaBuilder.parameters_of(func):
            if param.name == context_parameter or param.kind in (
                param.VAR_POSITIONAL,
                param.VAR_KEYWORD,
            ):
                continue
            if names_context(
                param.annotation, frozenset({"FunctionInvocationContext"})
            ):
                continue
            self._builder.param = param.name
            resolved = self._builder.resolve(param.annotation, globalns)
            convert = self._compile(resolved)
            # their converters return such a value unchanged
            if resolved in (int, float, bool, str):
                self.exact[param.name] = resolved
            if convert is not _identity:
                self.converters[param.name] = convert

    def convert(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A new dict of converted arguments; the given mapping is not changed."""
        out = dict(arguments)
        for name, convert in self.converters.items():
            if name in out:
                # already the annotated scalar type
                if type(out[name]) is self.exact.get(name):
                    continue
                try:
                    out[name] = convert(out[name], name, False)
                except ConversionMismatch as exc:
                    raise ArgumentConversionError(f"argument {exc}") from None
                except ArgumentConversionError:
                    raise
                except (ValueError, TypeError, OverflowError, RecursionError) as exc:
                    message = f"argument {name!r} could not be converted: {type(exc).__name__}: {exc}"
                    raise ArgumentConversionError(message) from exc
        return out

    # -- compilation -----------------------------------------------------------------------------

    def _compile(self, tp: Any) -> Converter:
        key = tp
        try:
            cached = self._cache.get(key)
        # an unhashable hint (Literal of a list): compile without the cache
        except TypeError:
            return self._build(tp)
        if cached is not None:
            return cached
        if isinstance(tp, type) and (
            typing.is_typeddict(tp) or dataclasses.is_dataclass(tp)
        ):
            slot: list[Converter] = []
            # recursion
            self._cache[key] = lambda value, path, strict: slot[0](value, path, strict)
            slot.append(self._build(tp))
            self._cache[key] = slot[0]
            return slot[0]
        self._cache[key] = built = self._build(tp)
        return built

    def _build(self, tp: Any) -> Converter:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Annotated or origin is Required or origin is NotRequired:
            return self._compile(args[0])
        if tp is Any or tp is inspect.Parameter.empty:
            return _identity
        if tp is None or tp is type(None):
            return _expect(lambda v: v is None, "null")
        if tp is bool:
            return _expect(lambda v: isinstance(v, bool), "boolean")
        if tp is str:
            return _expect(lambda v: isinstance(v, str), "string")
        if tp is int:
            return _to_int
        if tp is float:
            return _to_float
        if (date_kind := date_format(tp)) is not None:
            parser = format_parser(date_kind)
            assert parser is not None
            return _to_format(tp, parser)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _to_enum(tp)
        if origin is Literal:
            return _to_literal(args)
        if origin is Union or origin is types.UnionType:
            return _to_union([self._compile(arg) for arg in args])
        if isinstance(tp, type) and typing.is_typeddict(tp):
            return self._typed_dict(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self._dataclass(tp)
        return self._container(tp, origin, args)

    def _container(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> Converter:
        kind = tp if origin is None else origin
        if kind is tuple:
            if not args or (len(args) == 2 and args[1] is Ellipsis):
                item = self._compile(args[0]) if args else _identity
                return _to_array(item, tuple)
            items = [self._compile(arg) for arg in args]
            return _to_fixed_tuple(items)
        if kind in SEQUENCE_TYPES:
            return _to_array(self._compile(args[0]) if args else _identity, list)
        if kind in SET_TYPES:
            make = frozenset if kind is frozenset else set
            return _to_array(self._compile(args[0]) if args else _identity, make)
        if kind in MAPPING_TYPES:
            item = self._compile(args[1]) if args else _identity
            return _to_mapping(item)
        return _identity  # the schema builder rejected it already (SC-23)

    def _fields(self, cls: type) -> dict[str, Converter]:
        hints = typing.get_type_hints(cls, include_extras=True)
        return {name: self._compile(hint) for name, hint in hints.items()}

    def _typed_dict(self, cls: type) -> Converter:
        fields = self._fields(cls)

        required: frozenset[str] = getattr(cls, "__required_keys__", frozenset())

        def convert(value: Any, path: str, strict: bool) -> Any:
            if not isinstance(value, Mapping):
                raise ConversionMismatch(f"{path}: expected an object")
            if strict and (
                any(k not in fields for k in value)
                or any(k not in value for k in required)
            ):
                # a union member is tried strictly first: an object of other keys is not
                # this TypedDict
                raise ConversionMismatch(
                    f"{path}: not an object of {cls.__name__}'s keys"
                )
            return {
                k: fields[k](v, f"{path}.{k}", strict) if k in fields else v
                for k, v in value.items()
            }

        return convert

    def _dataclass(self, cls: type) -> Converter:
        fields = {
            name: c
            for name, c in self._fields(cls).items()
            if name in _init_fields(cls)
        }

        def convert(value: Any, path: str, strict: bool) -> Any:
            if isinstance(value, cls):
                return value
            if not isinstance(value, Mapping):
                raise ConversionMismatch(
                    f"{path}: expected an object for {cls.__name__}"
                )
            kwargs = {
                k: fields[k](v, f"{path}.{k}", strict) if k in fields else v
                for k, v in value.items()
            }
            try:
                return cls(**kwargs)
            # the dataclass's own __init__ / __post_init__ refused it
            except Exception as exc:
                if strict:
                    raise ConversionMismatch(
                        f"{path}: {cls.__name__} refused it: {type(exc).__name__}: {exc}"
                    ) from exc
                raise ArgumentConversionError(
                    f"argument {path}: {cls.__name__}(...) failed: {type(exc).__name__}: {exc}"
                ) from exc

        return convert


def _init_fields(cls: type) -> set[str]:
    return {field.name for field in dataclasses.fields(cls) if field.init}


def _expect(test: Callable[[Any], bool], kind: str) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        if not test(value):
            raise ConversionMismatch(f"{path}: expected {kind}")
        return value

    return convert


def _to_int(value: Any, path: str, strict: bool) -> Any:
    if type(value) is int:
        return value
    if not strict and isinstance(value, float) and value.is_integer():
        return int(value)  # JSON has one number type: 3.0 is the integer 3
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConversionMismatch(f"{path}: expected an integer")


def _to_float(value: Any, path: str, strict: bool) -> Any:
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConversionMismatch(f"{path}: expected a number")
    if strict and not isinstance(value, float):
        raise ConversionMismatch(f"{path}: expected a number")
    result = float(value)  # an int beyond the float range raises OverflowError
    if not math.isfinite(result):
        raise ConversionMismatch(f"{path}: expected a finite number")
    return result


def _to_format(cls: type, parse: Callable[[str], Any]) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        if type(value) is cls:
            return value
        if not isinstance(value, str):
            raise ConversionMismatch(f"{path}: expected an ISO 8601 string")
        try:
            return parse(value)
        except ValueError:
            raise ConversionMismatch(f"{path}: expected an ISO 8601 string") from None

    return convert


def _to_enum(cls: type[enum.Enum]) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        if isinstance(value, cls):
            return value
        for member in cls:
            if _same_json(member.value, value):
                return member
        raise ConversionMismatch(f"{path}: {value!r} is not a value of {cls.__name__}")

    return convert


def _to_literal(values: tuple[Any, ...]) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        for allowed in values:
            if allowed is value or _same_json(
                allowed.value if isinstance(allowed, enum.Enum) else allowed, value
            ):
                return allowed
        raise ConversionMismatch(f"{path}: {value!r} is not one of the allowed values")

    return convert


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality of scalars: ``True`` is not ``1``, ``1`` is ``1.0`` (SC-29)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return (type(a) is type(b) and a == b) or (_number(a) and _number(b) and a == b)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _to_union(members: list[Converter]) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        for strict_pass in (True, False) if not strict else (True,):
            for member in members:
                try:
                    return member(value, path, strict_pass)
                except ConversionMismatch:
                    continue
        raise ConversionMismatch(f"{path}: matches no member of the union")

    return convert


def _to_array(item: Converter, make: Callable[[Any], Any]) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        if not isinstance(value, list | tuple):
            raise ConversionMismatch(f"{path}: expected an array")
        if item is _identity:
            return make(value)
        return make([item(v, f"{path}[{i}]", strict) for i, v in enumerate(value)])

    return convert


def _to_fixed_tuple(items: list[Converter]) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        if not isinstance(value, list | tuple) or len(value) != len(items):
            raise ConversionMismatch(f"{path}: expected an array of {len(items)} items")
        return tuple(
            c(v, f"{path}[{i}]", strict)
            for i, (c, v) in enumerate(zip(items, value, strict=True))
        )

    return convert


def _to_mapping(item: Converter) -> Converter:
    def convert(value: Any, path: str, strict: bool) -> Any:
        if not isinstance(value, Mapping):
            raise ConversionMismatch(f"{path}: expected an object")
        return {k: item(v, f"{path}.{k}", strict) for k, v in value.items()}

    return convert
