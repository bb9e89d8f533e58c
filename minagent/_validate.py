"""A validator for tool JSON schemas (spec/schema.md SC-25 ..).

`validate(instance, schema)` checks a value against a JSON schema (what minagent
generates and what hand-written schemas commonly use) and returns every issue with its
path, what was expected and what was given: a failed tool call tells the model where and
why. `compile_fast_check(schema)` gives a quick yes for the flat schemas most tools
have, so the common call skips the full walk (SC-55). Each (schema node, path) is
checked once per validation, so the work is polynomial whatever the ``anyOf``/``$ref``
nesting (SC-56); a tool's validation skips what it cannot apply (SC-57).
"""

from __future__ import annotations

import logging
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from . import _limits as _limit_state
from ._issues import (
    ValidationIssue,
    describe,
    describe_issues,
    json_type,
    property_path,
    render,
)
from ._schema import format_parser

__all__ = ["ValidationIssue", "compile_fast_check", "describe_issues", "validate"]


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
    from ._limits import check_limits

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
# keyword -> (the kind of value it applies to, violated(measure, limit), what is
# expected); the measure of a number is the number, of a string or an array its length
# (SC-33, SC-38, SC-39)
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
    # exact: the divisor as written (SC-45)
    if isinstance(number, int) and math.isfinite(divisor):
        from fractions import Fraction

        return Fraction(number) % Fraction(repr(divisor)) != 0
    try:
        quotient = number / divisor
    except OverflowError:
        return True
    return bool(abs(quotient - round(quotient)) > 1e-9 * max(1.0, abs(quotient)))


def _limits(value: Any, schema: Mapping[str, Any], path: str) -> list[ValidationIssue]:
    # the common case: no bound to check, nothing to describe
    if _LIMITS.keys().isdisjoint(schema):
        return []
    kind = "number" if _is_number(value) else json_type(value)
    measure = len(value) if kind in ("string", "array", "object") else value
    given = describe(value) if kind == "number" else str(measure)
    return [
        ValidationIssue(path, f"expected {expected.format(render(limit))}; got {given}")
        for keyword, (applies_to, violated, expected) in _LIMITS.items()
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
        return issues + _limits(value, schema, path)

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


# ------------------------------------------------------------------------- the fast path (SC-55)

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
                if form is not int or item.bit_length() > 3 * (
                    limits.max_integer_digits - 1
                ):
                    return False
            elif kind == "number":
                if not (
                    form is int
                    and item.bit_length() <= 3 * (limits.max_integer_digits - 1)
                ) and not (form is float and item - item == 0):
                    return False
            elif kind == "boolean":
                if form is not bool:
                    return False
            else:  # a key the schema does not name
                return False
        return True

    return check
