"""Structured output: ``options["response_format"]`` in, ``response.value`` out
(spec/structured.md).

Theory of operation: `ResponseFormat.of(value)` normalises whatever the caller gave (a
dataclass, a TypedDict, a pydantic-style class, a JSON schema dict, ``"json"``,
``"text"``) once, into an immutable object holding the provider-neutral wire form (SO-2)
and what is needed to read the answer back. For a dataclass or TypedDict that is the
strict schema derived with the tools' schema builder (SO-4) and a converter compiled by
`_convert` (SC-52); for a pydantic-style class its own ``model_validate_json`` (SO-14);
for a schema dict the schema itself (SO-13). `BaseChatClient` normalises the run's
option before the first model call and attaches the format to the final response, whose
``value`` calls `ResponseFormat.parse` lazily (SO-9). Nothing here holds state after
construction, apart from per-class memos of resolved type hints.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, Required, Union, cast

from .._convert import ArgumentConversionError, ArgumentConverter, ConversionMismatch
from .._exceptions import MinagentError
from .._schema import MAPPING_TYPES, SEQUENCE_TYPES, SET_TYPES, SchemaBuilder
from .._validate import (
    ValidationIssue,
    describe_issues,
    property_path,
    validate,
)

__all__ = [
    "ResponseFormat",
    "StructuredOutputDecodeError",
    "StructuredOutputError",
    "StructuredOutputValidationError",
    "strict_schema",
]

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_ACCEPTED = (
    "expected a dataclass, a TypedDict, a class with model_json_schema() and model_validate_json() "
    "(a pydantic model), a JSON schema dict, {'type': 'json_schema', 'json_schema': {...}}, 'json' or 'text'"
)
# Keywords whose value is a schema, a list of schemas, or a map of names to schemas
# (SO-4).
_SCHEMA_KEYS = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "contains",
        "if",
        "then",
        "else",
        "propertyNames",
    }
)
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


class StructuredOutputError(MinagentError, ValueError):
    """The answer could not be read as the requested structured output (SO-11 .. SO-14).

    ``text`` is what the model said; ``issues`` what is wrong with it, where (empty when
    the answer is not JSON at all); ``path`` where the first issue is (``"$"``, the
    whole answer, when there is none) (SO-28)."""

    def __init__(
        self, message: str, text: str, issues: Sequence[ValidationIssue] = ()
    ) -> None:
        super().__init__(message)
        self.text: str = text
        self.issues: list[ValidationIssue] = list(issues)
        self.path: str = self.issues[0].path if self.issues else "$"


SHOWN = 80  # characters of an answer that is not JSON shown in the error (SO-11)


class StructuredOutputDecodeError(StructuredOutputError):
    """The answer is not JSON; ``position`` (0-based), ``line``, ``column`` locate it
    (SO-11)."""

    def __init__(
        self,
        message: str,
        text: str,
        position: int | None,
        line: int | None,
        column: int | None,
    ) -> None:
        start = text.strip()
        shown = start[:SHOWN] + ("..." if len(start) > SHOWN else "")
        super().__init__(
            f"{message}; the answer begins {shown!r}"
            if start
            else f"{message}; the answer is empty",
            text,
        )
        self.position = position
        self.line = line
        self.column = column


class StructuredOutputValidationError(StructuredOutputError):
    """The answer is JSON of the wrong shape; ``issues`` say where and why, ``path`` the
    first (SO-12)."""

    def __init__(self, name: str, text: str, issues: list[ValidationIssue]) -> None:
        super().__init__(
            f"the answer does not match {name}:\n{describe_issues(issues)}",
            text,
            issues,
        )


def _name(raw: object) -> str:
    """SO-3: a name the OpenAI and Responses APIs accept."""
    return _NAME_CHARS.sub("_", str(raw))[:64] or "response"


def _plain(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(f"response_format schema is not JSON data: {exc}") from None


def _admits_null(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return schema is True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in (schema.get("enum") or ()) or (
        "const" in schema and schema["const"] is None
    ):
        return True
    return any(
        _admits_null(s) for key in ("anyOf", "oneOf") for s in schema.get(key) or ()
    )


def strict_schema(
    node: Any,
    *,
    nullable: bool,
    root: Any = None,
    expanding: frozenset[str] = frozenset(),
) -> Any:
    """SO-4, SO-5, SO-15: a copy of ``node`` in the strict subset providers accept."""
    if not isinstance(node, Mapping):
        return node
    root = node if root is None else root

    def strict(value: Any) -> Any:
        return strict_schema(value, nullable=nullable, root=root, expanding=expanding)

    out: dict[str, Any] = {}
    for key, value in node.items():
        # SO-4 drops defaults, SO-5 only null ones
        if key == "default" and (nullable or value is None):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: strict(s) for name, s in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [strict(s) for s in value]
        elif key in _SCHEMA_KEYS:
            out[key] = strict(value)
        else:
            out[key] = value
    all_of = out.get("allOf")
    # SO-5: one-item allOf
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        del out["allOf"]
        out.update(all_of[0])
    ref = out.get("$ref")
    # SO-15: written out in place
    if isinstance(ref, str) and len(out) > 1 and ref not in expanding:
        target = _resolve(root, ref)
        if target is not None:
            del out["$ref"]
            kept = out.pop("$defs", None)
            out = {
                **strict_schema(
                    target, nullable=nullable, root=root, expanding=expanding | {ref}
                ),
                **out,
            }
            if kept is not None:
                out["$defs"] = kept
    properties = out.get("properties")
    if isinstance(properties, dict):
        required = set(out.get("required") or ())
        if nullable:
            for name, schema in properties.items():
                if name not in required and not _admits_null(schema):
                    properties[name] = {"anyOf": [schema, {"type": "null"}]}
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def _resolve(root: Any, ref: str) -> Any:
    """A local JSON pointer (``#/$defs/Name``) in ``root``, or None."""
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) in (Annotated, Required, NotRequired):
        tp = typing.get_args(tp)[0]
    return tp


def _accepts_none(tp: Any) -> bool:
    tp = _unwrap(tp)
    if tp is None or tp is type(None) or tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return any(_accepts_none(arg) for arg in typing.get_args(tp))
    return origin is Literal and None in typing.get_args(tp)


def _is_structure(tp: Any) -> bool:
    return isinstance(tp, type) and (
        typing.is_typeddict(tp) or dataclasses.is_dataclass(tp)
    )


def _open(schema: Any) -> Any:
    """SO-29: a copy of a class's strict schema that admits properties it does not
    declare."""
    if isinstance(schema, dict):
        return {
            k: _open(v)
            for k, v in schema.items()
            if not (k == "additionalProperties" and v is False)
        }
    if isinstance(schema, list):
        return [_open(v) for v in schema]
    return schema


class _NullPruner:
    """SO-10: drops the nulls SO-4 allowed for fields whose type has no ``None``
    (defaults apply), and the keys the class does not declare (SO-29)."""

    def __init__(self) -> None:
        self._memo: dict[type, tuple[dict[str, Any], frozenset[str]]] = {}

    def _info(self, cls: type) -> tuple[dict[str, Any], frozenset[str]]:
        info = self._memo.get(cls)
        if info is None:
            hints = typing.get_type_hints(cls, include_extras=True)
            if typing.is_typeddict(cls):
                required = _typed_dict_required(cls, hints)
                optional = frozenset(k for k in hints if k not in required)
            else:
                optional = frozenset(
                    f.name
                    for f in dataclasses.fields(cls)
                    if f.init
                    and (
                        f.default is not dataclasses.MISSING
                        or f.default_factory is not dataclasses.MISSING
                    )
                )
            info = self._memo[cls] = (hints, optional)
        return info

    def prune(self, tp: Any, value: Any) -> Any:
        tp = _unwrap(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if _is_structure(tp):
            if not isinstance(value, dict):
                return value
            hints, optional = self._info(tp)
            return {  # SO-29: a key the class does not declare is dropped
                key: self.prune(hints[key], item)
                for key, item in value.items()
                if key in hints
                and not (
                    item is None and key in optional and not _accepts_none(hints[key])
                )
            }
        if origin is Union or origin is types.UnionType:
            for arg in args:  # the first member of the value's kind
                if self._same_kind(_unwrap(arg), value):
                    return self.prune(arg, value)
            return value
        kind = tp if origin is None else origin
        if isinstance(value, list) and args:
            if kind is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                return [
                    self.prune(a, v) for a, v in zip(args, value, strict=False)
                ] + value[len(args) :]
            if kind is tuple or kind in SEQUENCE_TYPES or kind in SET_TYPES:
                return [self.prune(args[0], v) for v in value]
        if isinstance(value, dict) and kind in MAPPING_TYPES and len(args) == 2:
            return {k: self.prune(args[1], v) for k, v in value.items()}
        return value

    @staticmethod
    def _same_kind(tp: Any, value: Any) -> bool:
        origin = typing.get_origin(tp)
        kind = tp if origin is None else origin
        if isinstance(value, dict):
            return _is_structure(tp) or kind in MAPPING_TYPES
        if isinstance(value, list):
            return kind is tuple or kind in SEQUENCE_TYPES or kind in SET_TYPES
        return False


def _typed_dict_required(cls: type, hints: dict[str, Any]) -> frozenset[str]:
    keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    out = set()
    for key, hint in hints.items():
        explicit = hint
        while typing.get_origin(explicit) is Annotated:
            explicit = typing.get_args(explicit)[0]
        origin = typing.get_origin(explicit)
        if origin is Required or (origin is not NotRequired and key in keys):
            out.add(key)
    return frozenset(out)


def _loc_path(loc: object) -> str:
    path = "$"
    for part in loc if isinstance(loc, list | tuple) else ():
        path = (
            f"{path}[{part}]"
            if isinstance(part, int) and not isinstance(part, bool)
            else property_path(path, part)
        )
    return path


def _decode(text: str) -> Any:
    """SO-11: the JSON value of ``text``, or `StructuredOutputDecodeError` at the first
    bad character."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        pos, line, col = exc.pos, exc.lineno, exc.colno
        # Python >= 3.13 names the comma, earlier
        if exc.msg.startswith("Illegal trailing comma"):
            # versions the character after it: one answer on every version
            pos, col = pos + 1, col + 1
        where = f"position {pos} (line {line}, column {col})"
        message = f"the answer is not valid JSON: {exc.msg} at {where}"
        raise StructuredOutputDecodeError(message, text, pos, line, col) from None
    # an integer beyond the digit limit; absurd nesting
    except (ValueError, RecursionError) as exc:
        raise StructuredOutputDecodeError(
            f"the answer is not valid JSON (not usable): {exc}", text, None, None, None
        ) from None


class ResponseFormat:
    """A normalised ``response_format`` (SO-1, SO-2): the wire form and how to read the
    answer."""

    __slots__ = (
        "_checked",
        "_convert",
        "_pruner",
        "_wire",
        "description",
        "kind",
        "name",
        "schema",
        "strict",
        "target",
    )

    kind: Literal["json_schema", "json", "text"]
    name: str
    schema: dict[str, Any] | None
    strict: bool
    description: str | None
    target: Any

    def __init__(
        self,
        kind: Literal["json_schema", "json", "text"],
        *,
        target: Any = None,
        name: str = "response",
        schema: dict[str, Any] | None = None,
        strict: bool = False,
        description: str | None = None,
        wire: dict[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.target = target
        self.name = name
        self.schema = schema
        self.strict = strict
        self.description = description
        self._wire = wire
        self._pruner: _NullPruner | None = None
        self._convert: Callable[[Any, str, bool], Any] | None = None
        self._checked = schema  # what an answer is checked against
        if _is_structure(target):
            self._pruner = _NullPruner()
            self._convert = _compile(target)
            # SO-29: unknown keys are ignored, as pydantic does
            self._checked = _open(schema)

    def __repr__(self) -> str:
        return (
            f"ResponseFormat({self.kind!r}, name={self.name!r}, strict={self.strict!r})"
        )

    @property
    def wire(self) -> dict[str, Any]:
        """SO-2: the provider-neutral form, a new plain-JSON dict on every read."""
        if self._wire is not None:
            return cast("dict[str, Any]", _plain(self._wire))
        if self.kind != "json_schema":
            return {"type": "json_object" if self.kind == "json" else "text"}
        spec: dict[str, Any] = {
            "name": self.name,
            "schema": _plain(self.schema),
            "strict": self.strict,
        }
        if self.description:
            spec["description"] = self.description
        return {"type": "json_schema", "json_schema": spec}

    # -- construction -----------------------------------------------------------------------------

    @classmethod
    def of(cls, value: Any) -> ResponseFormat:
        """SO-1: normalise any accepted ``response_format`` value."""
        if isinstance(value, ResponseFormat):
            return value
        if isinstance(value, str):
            if value in ("json", "json_object"):
                return cls("json")
            if value == "text":
                return cls("text")
            raise ValueError(f"unsupported response_format {value!r}: {_ACCEPTED}")
        if isinstance(value, Mapping):
            return cls._of_mapping(value)
        if _is_structure(value):
            builder = SchemaBuilder(f"response_format {value.__qualname__}")
            builder.param = "response_format"
            derived = builder.schema(value)
            if "$ref" in derived:  # SO-4: a recursive root is written out at the root
                derived = {**builder.defs[derived["$ref"].rsplit("/", 1)[-1]]}
            if builder.defs:
                derived["$defs"] = builder.defs
            schema = strict_schema(derived, nullable=True)
            return cls(
                "json_schema",
                target=value,
                name=_name(value.__name__),
                schema=schema,
                strict=True,
            )
        if isinstance(value, type) and callable(
            getattr(value, "model_json_schema", None)
        ):
            if not any(
                callable(getattr(value, m, None))
                for m in ("model_validate_json", "model_validate")
            ):
                raise TypeError(
                    f"response_format {value!r} has model_json_schema() but neither model_validate_json() "
                    "nor model_validate(): give it one, or pass its JSON schema dict"
                )
            raw = cast(Any, value).model_json_schema()
            if not isinstance(raw, Mapping):
                raise TypeError(
                    f"{value.__name__}.model_json_schema() returned {type(raw).__name__}, not a dict"
                )
            schema = strict_schema(_plain(dict(raw)), nullable=False)
            return cls(
                "json_schema",
                target=value,
                name=_name(value.__name__),
                schema=schema,
                strict=True,
            )
        raise TypeError(f"unsupported response_format {value!r}: {_ACCEPTED}")

    @classmethod
    def _of_mapping(cls, value: Mapping[str, Any]) -> ResponseFormat:
        kind = value.get("type")
        if kind == "text" and len(value) == 1:
            return cls("text")
        if kind == "json_object" and len(value) == 1:
            return cls("json")
        wire: dict[str, Any] | None = None
        if kind == "json_schema" and isinstance(value.get("json_schema"), Mapping):
            wire = _plain(dict(value))  # SO-2: the OpenAI wire form passes unchanged
            value = value["json_schema"]
        if "schema" in value:
            schema, name, strict = (
                value["schema"],
                value.get("name"),
                value.get("strict", False),
            )
            description = value.get("description")
        else:
            schema, name, strict, description = value, None, False, None
        if not isinstance(schema, Mapping):
            raise TypeError(
                f"response_format schema must be a dict, got {type(schema).__name__}"
            )
        if not name:
            title = schema.get("title")
            name = title if isinstance(title, str) and title else "response"
        if not isinstance(strict, bool):
            raise TypeError(f"response_format 'strict' must be a bool, got {strict!r}")
        plain = _plain(dict(schema))
        return cls(
            "json_schema",
            target=dict(plain),
            name=_name(name),
            schema=plain,
            strict=strict,
            description=description
            if isinstance(description, str) and description
            else None,
            wire=wire,
        )

    # -- reading the answer -------------------------------------------------------------------------

    def parse(self, text: str) -> Any:
        """SO-10 .. SO-14: the answer ``text`` as a value of this format (None for
        ``"text"``)."""
        if self.kind == "text":
            return None
        data = _decode(text)
        if self.kind == "json":
            return data
        target = self.target
        # a pydantic-style class (SO-14)
        if isinstance(target, type) and self._convert is None:
            return self._pydantic(target, text, data)
        assert self._checked is not None
        issues = validate(data, self._checked)
        if issues:
            raise StructuredOutputValidationError(self.name, text, issues)
        if self._convert is None:
            return data
        assert self._pruner is not None
        data = self._pruner.prune(target, data)
        try:
            return self._convert(data, "$", False)
        except (ConversionMismatch, ArgumentConversionError) as exc:
            message = str(exc).removeprefix("argument ")
            path, _, problem = message.partition(": ")
            raise StructuredOutputValidationError(
                self.name, text, [ValidationIssue(path, problem)]
            ) from exc

    def _pydantic(self, target: Any, text: str, data: Any) -> Any:
        try:
            if callable(getattr(target, "model_validate_json", None)):
                return target.model_validate_json(text)
            return target.model_validate(data)
        except Exception as exc:
            issues: list[ValidationIssue] = []
            errors = getattr(exc, "errors", None)
            if callable(errors):
                try:
                    for error in errors():
                        issues.append(
                            ValidationIssue(
                                _loc_path(error.get("loc")), str(error.get("msg"))
                            )
                        )
                # an errors() of another shape: fall back to the message
                except Exception:
                    issues = []
            if not issues:
                issues = [ValidationIssue("$", f"{type(exc).__name__}: {exc}")]
            raise StructuredOutputValidationError(self.name, text, issues) from exc

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """What `try_value` turns into None (SO-9)."""
        return (StructuredOutputError,)


def _compile(cls: type) -> Callable[[Any, str, bool], Any]:
    """The `_convert` converter of one dataclass or TypedDict (SC-52)."""

    def holder(value: Any) -> None:
        """Only its annotation matters."""

    holder.__annotations__ = {"value": cls, "return": None}
    converter = ArgumentConverter(holder)
    return converter.converters.get("value", lambda value, path, strict: value)
