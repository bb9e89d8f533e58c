"""A tool call's arguments: their limits, and their check against a JSON schema
(spec/schema.md SC-25 .. SC-45, SC-47 .. SC-51, SC-55 .. SC-57).

This module owns everything that happens to a call's arguments between the model's text
and the tool's conversion: the text parsed within the limits, the value checked against
the limits and against the tool's schema, and every problem found described as a
`ValidationIssue` with its path. Schema generation from a signature is `_schema`'s;
converting checked JSON into the tool's Python types is `_convert`'s.

Rules
-----
1. Model output is data, never a way to end the run: a value of any size or depth is
   checked in time linear in its size and never by recursion (SC-48 .. SC-50); what
   breaks a limit is an issue, not an exception.
2. The limits are one immutable `ArgumentLimits` value, replaced as a whole: a reader
   never sees half an update (SC-48).
3. A check says where and why: every problem is a `ValidationIssue` (a path such as
   ``$.items[2].qty`` and what was expected and given), rendered in one short line
   (SC-42).
4. This module imports no other module of minagent; the types
   (`Content.parse_arguments`), the tools (`FunctionTool.validate_arguments`), the
   structured output and the MCP server call it.

Theory of operation
-------------------
A call's arguments arrive as JSON text or as a value. `parse_json_arguments` parses the
text within the limits in force (`argument_limits()`, one module-wide value that
`set_argument_limits` replaces). `check_limits` walks a value without recursion: a fast
pass says yes for plain data well within the limits, and only otherwise a detailed pass
names every place that breaks one. `validate(instance, schema)` first checks the limits
(a value that breaks one gets only those issues, SC-50), then checks the schema (what
minagent generates and what hand-written schemas commonly use), each (schema node, path)
once per validation, so the work is polynomial whatever the ``anyOf``/``$ref`` nesting
(SC-56); a tool's validation skips what of its schema it cannot apply and logs it once
(SC-57). `compile_fast_check(schema)` gives a quick yes for the flat schemas most tools
have, so the common call skips the full walk (SC-55).
"""

import dataclasses
import json
import logging
import math
import operator
import re
import reprlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, cast

__all__ = [
    "ArgumentLimits",
    "ValidationIssue",
    "argument_limits",
    "check_limits",
    "compile_fast_check",
    "describe",
    "describe_issues",
    "format_parser",
    "json_type",
    "parse_json_arguments",
    "property_path",
    "render",
    "set_argument_limits",
    "shorten",
    "validate",
]


# ------------------------------------------------------------------------------- issues (SC-42)

_MAX_VALUE_CHARS = 60
_JSON_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (type(None), "null"),
)


class ValidationIssue(NamedTuple):
    """One reason why a value does not match a schema: where (``$.items[2].qty``) and
    what."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def describe_issues(issues: Sequence[ValidationIssue]) -> str:
    """One line per issue, in order, for a model to read (SC-42)."""
    return "\n".join(str(issue) for issue in issues)


def json_type(value: object) -> str:
    """The JSON type name of a value (SC-26), or its Python type name when it is not
    JSON."""
    if isinstance(value, Mapping | list | tuple):
        return "object" if isinstance(value, Mapping) else "array"
    return next(
        (name for t, name in _JSON_NAMES if isinstance(value, t)), type(value).__name__
    )


def render(value: object) -> str:
    """A value as JSON text (Python repr otherwise), on one line, at most 60
    characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = " ".join(repr(value).split())
    return shorten(text, _MAX_VALUE_CHARS)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``...`` when cut
    (LP-29)."""
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def describe(value: object) -> str:
    return "null" if value is None else f"{json_type(value)} {render(value)}"


def property_path(path: str, name: object) -> str:
    if isinstance(name, str) and name.isidentifier():
        return f"{path}.{name}"
    key = json.dumps(name, ensure_ascii=False) if isinstance(name, str) else repr(name)
    return f"{path}[{key}]"


# ---------------------------------------------------------------------- limits (SC-48 .. SC-50)


class _Written:
    """A dataclass's ``__repr__`` and ``__eq__``, written once (PK-16: generating them
    costs an exec at import). `ArgumentLimits` uses it, and so do
    `FunctionInvocationConfiguration` and the responses."""

    def _fields(self) -> tuple[dataclasses.Field[Any], ...]:
        # a subclass is a dataclass; this mixin itself is not one
        return dataclasses.fields(self)  # type: ignore[arg-type]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in self._fields() if f.compare)

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in self._fields() if f.repr
        )
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        return (
            self._values() == other._values()
            if other.__class__ is self.__class__
            else NotImplemented
        )


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class ArgumentLimits(_Written):
    """How large tool arguments may be (SC-48): model output is data, not a way to stop
    the run."""

    max_depth: int = 64
    max_integer_digits: int = 1000
    max_string_chars: int = 1_000_000
    max_array_items: int = 100_000
    max_argument_chars: int = 4_000_000
    max_issues: int = 20

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"ArgumentLimits.{field.name} must be an int >= 1, got {value!r}"
                )
        # SC-48: as JSON
        if (
            0
            < (most := sys.get_int_max_str_digits())
            < (digits := self.max_integer_digits)
        ):
            raise ValueError(
                f"ArgumentLimits.max_integer_digits must be <= {most}, CPython's int limit, got {digits}"
            )

    def __hash__(self) -> int:
        return hash(self._values())


_argument_limits = ArgumentLimits()


def argument_limits() -> ArgumentLimits:
    """The limits in force (SC-48)."""
    return _argument_limits


def set_argument_limits(
    limits: ArgumentLimits | None = None, /, **changes: int
) -> ArgumentLimits:
    """Set the limits for every later parse and validation (SC-48); returns the previous
    ones.

    ``set_argument_limits(max_depth=128)`` changes one field;
    ``set_argument_limits(old)`` restores.
    """
    global _argument_limits
    previous = _argument_limits
    base = previous if limits is None else limits
    if not isinstance(base, ArgumentLimits):
        raise TypeError(
            f"set_argument_limits expects an ArgumentLimits, got {type(base).__name__}"
        )
    unknown = sorted(
        set(changes) - {field.name for field in dataclasses.fields(ArgumentLimits)}
    )
    if unknown:
        raise TypeError(f"ArgumentLimits has no field {unknown[0]!r}")
    _argument_limits = dataclasses.replace(base, **changes)
    return previous


def parse_json_arguments(text: str, limits: ArgumentLimits | None = None) -> Any:
    """JSON text as a value, within the limits (SC-49); ``ValueError`` says what is
    wrong."""
    limits = limits or _argument_limits
    if len(text) > limits.max_argument_chars:
        raise ValueError(
            f"the arguments are {len(text)} characters long; at most {limits.max_argument_chars} are allowed"
        )
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
        ) from None
    except RecursionError:
        raise ValueError(
            f"arguments are nested deeper than {limits.max_depth} levels"
        ) from None
    except ValueError:  # CPython's int-from-string limit (sys.set_int_max_str_digits)
        raise ValueError(
            f"an integer has more than {limits.max_integer_digits} digits"
        ) from None
    issues = check_limits(value, limits)
    if issues:
        raise ValueError(describe_issues(issues))
    return value


def check_limits(
    value: Any, limits: ArgumentLimits | None = None
) -> list[ValidationIssue]:
    """SC-50: the places where a JSON value breaks a limit, or is a NaN or an infinity.

    Iterative and linear in the size of the value; a container that breaks a limit is
    not entered. At most ``limits.max_issues`` issues are returned.
    """
    limits = limits or _argument_limits
    if _within_limits(value, limits):
        return []
    issues: list[ValidationIssue] = []
    bits = math.ceil(limits.max_integer_digits * math.log2(10))
    # value, its path as (parent, key), depth
    stack: list[tuple[Any, Any, int]] = [(value, None, 0)]
    while stack and len(issues) < limits.max_issues:
        item, where, depth = stack.pop()
        problem = None
        if isinstance(item, str):
            if len(item) > limits.max_string_chars:
                problem = f"expected at most {limits.max_string_chars} characters; got {len(item)}"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            size = item.bit_length()
            if size > bits - 4 and (
                size > bits + 4 or _digits(item) > limits.max_integer_digits
            ):
                problem = (
                    f"expected an integer of at most {limits.max_integer_digits} digits"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                problem = f"expected a finite number; got {describe(item)}"
        elif isinstance(item, Mapping | list | tuple):
            if depth >= limits.max_depth:
                problem = (
                    f"expected at most {limits.max_depth} levels of nesting; got more"
                )
            elif isinstance(item, Mapping):
                for key in reversed(list(item)):
                    if isinstance(key, str) and len(key) > limits.max_string_chars:
                        problem = f"a property name is longer than {limits.max_string_chars} characters"
                        break
                    stack.append((item[key], (where, key), depth + 1))
            elif len(item) > limits.max_array_items:
                problem = (
                    f"expected at most {limits.max_array_items} items; got {len(item)}"
                )
            else:
                stack.extend(
                    (item[i], (where, i), depth + 1)
                    for i in range(len(item) - 1, -1, -1)
                )
        if problem is not None:
            issues.append(ValidationIssue(_render_path(where), problem))
    return issues


def _within_limits(value: Any, limits: ArgumentLimits) -> bool:
    """The fast path of `check_limits`: True when plain JSON data breaks no limit for
    sure."""
    max_chars, max_items, max_depth = (
        limits.max_string_chars,
        limits.max_array_items,
        limits.max_depth,
    )
    safe_bits = (limits.max_integer_digits - 1) * _LOG2_10  # below 10 ** (digits - 1)
    if type(value) is not dict and type(value) is not list:
        return False  # a scalar or another type: the full walk decides
    containers: list[tuple[Any, int]] = [(value, 1)]
    while containers:
        item, depth = containers.pop()
        if depth > max_depth:
            return False
        if type(item) is dict:
            try:
                if max(map(len, item), default=0) > max_chars:  # the property names
                    return False
            # a key without a length is not JSON: the full walk decides
            except TypeError:
                return False
            children: Any = item.values()
        else:
            if len(item) > max_items:
                return False
            children = item
        for child in children:
            kind = type(child)
            if kind is str:
                if len(child) > max_chars:
                    return False
            elif kind is int:
                if child.bit_length() > safe_bits:
                    return False
            elif kind is float:
                if child - child != 0:  # NaN or an infinity
                    return False
            elif kind is dict or kind is list:
                containers.append((child, depth + 1))
            elif kind is not bool and child is not None:
                return False
    return True


_LOG2_10 = math.log2(10)


def _digits(number: int) -> int:
    try:
        return len(str(abs(number)))
    except ValueError:  # beyond sys.get_int_max_str_digits(): certainly too many
        return sys.maxsize


def _render_path(where: Any) -> str:
    keys: list[object] = []
    while where is not None:
        where, key = where
        keys.append(key)
    path = "$"
    for key in reversed(keys):
        path = f"{path}[{key}]" if isinstance(key, int) else property_path(path, key)
    return path


# ------------------------------------------------------------------ the schema check (SC-25 ..)


_Schema = Mapping[str, Any] | bool
_MAX_LISTED = 50
# the memo's mark of a (schema node, path) being checked (SC-37, SC-56)
_ACTIVE: Any = object()
# a schema that cannot be applied (SC-57)
_UNUSABLE = (ValueError, TypeError, AttributeError, LookupError)
_reported: set[tuple[str, str]] = set()  # (tool, problem) already logged (SC-57)


def validate(
    instance: Any, schema: Mapping[str, Any], *, lenient_for: str | None = None
) -> list[ValidationIssue]:
    """Every reason why ``instance`` does not match ``schema``; ``[]`` when it does
    (SC-25).

    A value that breaks the argument limits gets only those issues (SC-50). With
    ``lenient_for`` (a tool's name) what of the schema cannot be applied is skipped and
    logged once (SC-57)."""
    issues = check_limits(instance)
    if issues:
        return issues
    validator = _Validator(schema, lenient=lenient_for is not None)
    try:
        issues = validator.check(instance, schema, "$")
    # limits raised far above the defaults, or a schema nested as deep
    except RecursionError:
        if lenient_for is None:
            return [
                ValidationIssue("$", "the value is nested too deeply to be checked")
            ]
        validator.unusable.append("it is nested too deeply to be checked")
        issues = []
    if (
        validator.unusable
        and (key := (str(lenient_for), validator.unusable[0])) not in _reported
    ):
        if len(_reported) >= 1000:
            _reported.clear()
        _reported.add(key)
        logging.getLogger("minagent").warning(
            "tool %r: minagent cannot apply all of its schema (%s); those parts are left to the tool",
            *key,
        )
    return issues


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
# A schema's bounds: keyword -> (the kind of value it applies to,
# violated(measure, bound), what is expected); the measure of a number is the number,
# of a string or an array its length (SC-33, SC-38, SC-39)
_BOUNDS: dict[str, tuple[str, Callable[[Any, Any], bool], str]] = {
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
    # exact: the divisor as written (SC-45)
    if isinstance(number, int) and math.isfinite(divisor):
        from fractions import Fraction

        return Fraction(number) % Fraction(repr(divisor)) != 0
    try:
        quotient = number / divisor
    except OverflowError:
        return True
    return bool(abs(quotient - round(quotient)) > 1e-9 * max(1.0, abs(quotient)))


def _bounds(value: Any, schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
    # the common case: no bound to check, nothing to describe
    if _BOUNDS.keys().isdisjoint(schema):
        return []
    kind = "number" if _is_number(value) else json_type(value)
    measure = len(value) if kind in ("string", "array", "object") else value
    given = describe(value) if kind == "number" else str(measure)
    return [
        ValidationIssue(path, f"expected {expected.format(render(limit))}; got {given}")
        for keyword, (applies_to, violated, expected) in _BOUNDS.items()
        if applies_to == kind
        and _is_number(limit := schema.get(keyword))
        and violated(measure, limit)
    ]


class _Validator:
    """Checks values against one root schema, which `$ref` pointers resolve into."""

    def __init__(self, root: Mapping[str, Any], *, lenient: bool = False) -> None:
        self.root = root
        self.lenient = lenient
        self.unusable: list[str] = []  # what a lenient validation skipped (SC-57)
        # (schema node, path) -> its issues, or _ACTIVE
        self._memo: dict[tuple[int, str], Any] = {}
        # `_accepts` per schema node
        self._kinds: dict[int, list[tuple[str, str | None]]] = {}

    def check(self, value: Any, schema: _Schema, path: str) -> list[ValidationIssue]:
        try:
            issues = self._node(value, schema, path)
        except _UNUSABLE as exc:
            # SC-41: every schema that cannot be applied is a ValueError
            if not self.lenient:
                raise (
                    exc
                    if isinstance(exc, ValueError)
                    else ValueError(f"invalid schema at {path}: {exc}")
                ) from exc
            self.unusable.append(f"at {path}: {exc}")  # SC-57: left to the tool
            return []
        # one issue once (SC-56)
        return list(dict.fromkeys(issues)) if len(issues) > 1 else issues

    def _shared(self, value: Any, schema: _Schema, path: str) -> list[ValidationIssue]:
        """SC-56: a node ``$ref`` or an alternative reaches (only those reach one twice)
        is checked once per path."""
        key = (id(schema), path)
        known = self._memo.get(key)
        # SC-37: back at a node being checked, with nothing of the value consumed
        if known is _ACTIVE:
            raise ValueError(
                f"a $ref cycle: the schema refers to itself at {path} without descending into the value"
            )
        if known is None:
            self._memo[key] = _ACTIVE
            self._memo[key] = known = self.check(value, schema, path)
        return cast(list[ValidationIssue], known)

    def _node(self, value: Any, schema: _Schema, path: str) -> list[ValidationIssue]:
        if isinstance(schema, bool):  # SC-27
            problem = f"no value is allowed here; got {describe(value)}"
            return [] if schema else [ValidationIssue(path, problem)]
        if not isinstance(schema, Mapping):
            raise ValueError(
                f"invalid schema at {path}: {schema!r} is not an object or a boolean"
            )
        issues: list[ValidationIssue] = []
        if "$ref" in schema:  # SC-37
            issues += self._shared(value, self._resolve(schema["$ref"]), path)
        if "type" in schema and not _has_type(value, schema["type"]):  # SC-28
            # enum values if any
            expected = [phrase for phrase, _ in self._accepts(schema)]
            return [*issues, _mismatch(path, expected, value)]
        # SC-29
        if "enum" in schema and not any(_json_equal(value, e) for e in schema["enum"]):
            issues.append(_mismatch(path, [render(e) for e in schema["enum"]], value))
        if "const" in schema and not _json_equal(value, schema["const"]):
            issues.append(_mismatch(path, [render(schema["const"])], value))
        for alternative in schema.get("allOf", []):  # SC-36
            issues += self._shared(value, alternative, path)
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
        return issues + _bounds(value, schema, path)

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

    def _one_or_any(
        self, value: Any, alternatives: list[_Schema], path: str, *, one: bool
    ) -> list[ValidationIssue]:
        """SC-34, SC-35: one useful report when no alternative passes."""
        results = [
            self._shared(value, alternative, path) for alternative in alternatives
        ]
        passing = [str(i) for i, issues in enumerate(results) if not issues]
        if passing and not (one and len(passing) > 1):
            return []
        if passing:
            problem = "expected exactly one alternative to match; alternatives {} match"
            return [ValidationIssue(path, problem.format(", ".join(passing)))]
        pairs = zip(alternatives, results, strict=True)
        accepts = [
            (self._accepts(alternative), issues) for alternative, issues in pairs
        ]
        admitting = [
            issues
            for kinds, issues in accepts
            if any(k is None or _has_type(value, k) for _, k in kinds)
        ]
        # the closest alternative explains best: the fewest issues, the first on a tie
        if admitting:
            return min(admitting, key=len)
        expected = [phrase for kinds, _ in accepts for phrase, _ in kinds]
        return [_mismatch(path, list(dict.fromkeys(expected)), value)]

    def _accepts(self, schema: _Schema) -> list[tuple[str, str | None]]:
        """(Phrase, JSON type or None for any) for what ``schema`` accepts (SC-28,
        SC-30, SC-34); once per schema node, a node met again on its own path accepting
        anything (SC-56)."""
        if isinstance(schema, bool):
            return [("any value", None)] if schema else []
        known = self._kinds.get(id(schema))
        if known is not None:
            return known
        self._kinds[id(schema)] = [("any value", None)]  # a cycle through $ref or anyOf
        kinds: list[tuple[str, str | None]] = [("any value", None)]
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else schema["enum"]
            kinds = [
                (render(v), "number" if _is_number(v) else json_type(v)) for v in values
            ]
        elif "type" in schema:
            kinds = [(name, name) for name in _type_names(schema["type"])]
        elif "$ref" in schema:
            kinds = self._accepts(self._resolve(schema["$ref"]))
        elif branches := [*schema.get("anyOf", []), *schema.get("oneOf", [])]:
            kinds = list(
                dict.fromkeys(
                    pair for branch in branches for pair in self._accepts(branch)
                )
            )
        self._kinds[id(schema)] = kinds
        return kinds

    def _object(
        self, value: Mapping[Any, Any], schema: Mapping[str, Any], path: str
    ) -> list[ValidationIssue]:
        """SC-30, SC-31."""
        properties: Mapping[str, _Schema] = schema.get("properties", {})
        issues: list[ValidationIssue] = []
        for name in schema.get("required", []):
            if name not in value:
                expected = [
                    phrase for phrase, _ in self._accepts(properties.get(name, True))
                ]
                hint = (
                    ""
                    if expected == ["any value"]
                    else f" (expected {_expectation(expected)})"
                )
                problem = f"required property is missing{hint}"
                issues.append(ValidationIssue(property_path(path, name), problem))
        additional: _Schema = schema.get("additionalProperties", True)
        allowed = ", ".join(properties)
        for name, item in value.items():
            where = property_path(path, name)
            if name in properties:
                issues += self.check(item, properties[name], where)
            elif additional is False:
                problem = (
                    f"allowed properties: {allowed}"
                    if allowed
                    else "no properties are allowed"
                )
                issues.append(ValidationIssue(where, f"unexpected property; {problem}"))
            else:
                issues += self.check(item, additional, where)
        return issues

    def _array(
        self, value: Sequence[Any], schema: Mapping[str, Any], path: str
    ) -> list[ValidationIssue]:
        """SC-32, SC-33."""
        items: Any = schema.get("items", True)
        # draft 7: items as a list, additionalItems for the rest
        if isinstance(items, list):
            prefix, rest = items, schema.get("additionalItems", True)
        else:
            prefix, rest = schema.get("prefixItems", []), items
        issues: list[ValidationIssue] = []
        for i, item in enumerate(value):
            issues += self.check(
                item, prefix[i] if i < len(prefix) else rest, f"{path}[{i}]"
            )
        # SC-51: one pass, hashing JSON-canonical forms
        if schema.get("uniqueItems") is True:
            seen: dict[Any, int] = {}
            for j, item in enumerate(value):
                first = seen.setdefault(_canonical(item), j)
                if first != j:
                    problem = (
                        f"expected unique items; items [{first}] and [{j}] are equal"
                    )
                    issues.append(ValidationIssue(path, problem))
        return issues


def _canonical(value: Any) -> Any:
    """A hashable key; two values have equal keys exactly when they are JSON-equal
    (SC-29)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(map(_canonical, value)))
    if isinstance(value, Mapping):
        return ("o", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, int | float | str) or value is None:
        return value  # 1 == 1.0 and both hash alike, as JSON wants
    return ("r", id(value))  # not JSON: equal only to itself


def format_parser(name: object) -> Callable[[str], Any] | None:
    """SC-47: the ISO 8601 parser of a ``format`` name (``date-time``, ``date``,
    ``time``), else None."""
    if name not in ("date-time", "date", "time"):
        return None
    import datetime

    if name == "date-time":
        return datetime.datetime.fromisoformat
    return (
        datetime.date.fromisoformat if name == "date" else datetime.time.fromisoformat
    )


def _format(value: str, schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
    """SC-47: ``date-time``, ``date`` and ``time`` strings must parse as ISO 8601."""
    name = schema.get("format")
    parser = format_parser(name)
    if parser is None:
        return []
    try:
        parser(value)
    except ValueError:
        return [
            ValidationIssue(
                path, f"expected a {name} string (ISO 8601); got {describe(value)}"
            )
        ]
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
        # ECMAScript (?<name>) as Python
        found = re.search(re.sub(r"\(\?<([A-Za-z_]\w*)>", r"(?P<\1>", pattern), value)
    except re.error as exc:
        raise ValueError(f"invalid pattern {pattern!r} in schema: {exc}") from exc
    problem = f"expected a string matching {render(pattern)}; got {describe(value)}"
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
    return ValidationIssue(
        path, f"expected {_expectation(expected)}; got {describe(value)}"
    )


# ------------------------------------------------------------------------ the fast path (SC-55)

_FLAT_KEYWORDS = frozenset({"type", "description", "title", "default", "examples"})
_OBJECT_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "description", "title"}
)


def compile_fast_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """SC-55: for the common schema — an object of scalar properties without constraints
    — a check that says True only when `validate` would find no issue; None for any
    other schema.

    A False answer means "not sure": the caller runs `validate`, which finds and words
    the issues.
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
    if (
        not needed <= kinds.keys()
        or schema.get("additionalProperties", True) is not False
    ):
        return None
    if not all(type(name) is str for name in kinds):
        return None
    # SC-50: a property name is a string too; only names the schema has can pass
    longest = max(map(len, kinds), default=0)
    # the limits last seen, and the integers' bound under them: below 2 ** (3 * (digits
    # - 1)) in size, an integer has fewer digits than the limit
    seen: list[Any] = [None, 0]

    def check(value: Any) -> bool:
        if type(value) is not dict or not needed <= value.keys():
            return False
        # the limits in force now (SC-48)
        limits = _argument_limits
        if longest > limits.max_string_chars:
            return False
        if seen[0] is not limits:
            seen[:] = [limits, 2 ** (3 * (limits.max_integer_digits - 1))]
        bound = seen[1]
        for key, item in value.items():
            kind = kinds.get(key)
            form = type(item)
            if kind == "string":
                if form is not str or len(item) > limits.max_string_chars:
                    return False
            elif kind == "integer":
                if form is not int or not -bound < item < bound:
                    return False
            elif kind == "number":
                if not (form is int and -bound < item < bound) and not (
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
