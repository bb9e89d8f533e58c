"""Limits on tool arguments: model output is data, never a way to end the run
(spec/schema.md SC-48 .. SC-50).

Rules
-----
1. The limits are one immutable value, replaced as a whole: a reader never sees half an
   update.
2. Checking never recurses: a value of any depth is checked in time linear in its size
   (SC-50).

Theory of operation: one module-wide `ArgumentLimits` value (`argument_limits()`),
replaced as a whole by `set_argument_limits` (an assignment of one immutable object, so
a reader never sees half an update). `parse_json_arguments` parses text within the
limits; `check_limits` walks a value without recursion (a fast pass for plain data
within the limits, then a detailed pass that names every place that breaks one).
`validate` (SC-50) and `Content.parse_arguments` (SC-49) call it.
"""

import dataclasses
import json
import math
import reprlib
import sys
from collections.abc import Mapping
from typing import Any

from ._issues import ValidationIssue, describe, describe_issues, property_path

__all__ = [
    "ArgumentLimits",
    "argument_limits",
    "check_limits",
    "parse_json_arguments",
    "set_argument_limits",
]


class _Written:
    """A dataclass's ``__repr__`` and ``__eq__``, written once (PK-16: generating them
    costs an exec at import)."""

    def _values(self) -> tuple[Any, ...]:
        # mypy cannot see that only dataclasses inherit this mixin
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return tuple(getattr(self, f.name) for f in fields if f.compare)

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in fields if f.repr
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
