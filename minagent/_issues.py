"""Describing JSON values and where they break a rule (spec/schema.md SC-42).

`ValidationIssue` is one problem at one path (``$.items[2].qty``); the helpers render a
value in one short line and build paths. Shared by the validator (`_schema`), the
argument limits (`_limits`) and argument parsing (`_types`), so it sits on the lowest
floor and imports nothing.
"""

import json
from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "ValidationIssue",
    "describe",
    "describe_issues",
    "json_type",
    "property_path",
    "render",
    "shorten",
]

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
