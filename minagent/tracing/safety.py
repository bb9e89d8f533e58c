"""What keeps tracing from breaking the run or leaking a secret (spec/observability.md
OB-16, OB-21, OB-22).

Rules
-----
1. A tracer never breaks the observed: every call into it (``start_span``, ``activate``,
   and a span's ``set_attributes``, ``record_error``, ``add_event``, ``end``) goes
   through a `Guard`, which logs its first failure with the traceback at WARNING, later
   ones at DEBUG, and goes on; a span the tracer failed to start is a `NoSpan` (OB-22).
2. What a span records of a tool call never holds the value of a parameter the tool's
   schema marks secret, at any depth of the arguments (OB-16, OB-21).

Theory of operation
-------------------
`secret_names(tool)` walks the tool's schema — properties, array items, map values,
``$ref`` into ``$defs``/``definitions``, ``anyOf``/``oneOf``/``allOf`` — and returns the
names of the properties whose value is secret (``writeOnly: true`` or ``format:
password``, or an array or map of such). `hide` replaces the values under those names,
at any depth, with ``[secret]``; `secret_values` collects those values, and `scrub`
takes them out of a text (a tool's exception message, its error result). A name marked
secret anywhere counts everywhere: a value is hidden too often rather than once too few.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

__all__ = [
    "SECRET_TEXT",
    "Guard",
    "NoSpan",
    "hide",
    "real_span",
    "scrub",
    "secret_names",
    "secret_values",
]

logger = logging.getLogger("minagent.tracing")

SECRET_TEXT = "[secret]"
# how deep a schema or an argument value is walked; deeper values are hidden whole
_MAX_DEPTH = 64


class NoSpan:
    """Stands for a span the tracer failed to start (OB-22): it records nothing."""

    def __init__(self, parent: Any) -> None:
        self.parent = parent

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Records nothing."""

    def record_error(self, error: BaseException) -> None:
        """Records nothing."""

    def end(self) -> None:
        """Records nothing."""


def real_span(span: Any) -> Any:
    """The nearest span the tracer started: ``span`` itself, or the parent of a
    `NoSpan`."""
    while isinstance(span, NoSpan):
        span = span.parent
    return span


class Guard:
    """Calls into one tracer; a failure is logged (the first at WARNING) and swallowed
    (OB-22)."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.failures = 0

    def failed(self, what: str) -> None:
        self.failures += 1
        if self.failures == 1:
            logger.warning(
                "tracing: %s of %s raised; the run goes on",
                what,
                type(self.tracer).__name__,
                exc_info=True,
            )
        else:
            logger.debug(
                "tracing: %s of %s raised again",
                what,
                type(self.tracer).__name__,
                exc_info=True,
            )

    def start(self, name: str, attributes: Mapping[str, Any], parent: Any) -> Any:
        try:
            return self.tracer.start_span(name, attributes, real_span(parent))
        except Exception:
            self.failed("start_span")
            return NoSpan(parent)

    def set(self, span: Any, attributes: Mapping[str, Any]) -> None:
        try:
            span.set_attributes(attributes)
        except Exception:
            self.failed("set_attributes")

    def record(self, span: Any, error: BaseException) -> None:
        try:
            span.record_error(error)
        except Exception:
            self.failed("record_error")

    def event(self, span: Any, name: str, attributes: Mapping[str, Any]) -> None:
        add_event = getattr(span, "add_event", None)
        if add_event is not None:
            try:
                add_event(name, attributes)
            except Exception:
                self.failed("add_event")

    def end(self, span: Any) -> None:
        try:
            span.end()
        except Exception:
            self.failed("end")

    def activate(self, span: Any) -> AbstractContextManager[None]:
        return _Activation(self, span)


class _Activation(AbstractContextManager[None]):
    """``tracer.activate(span)`` around a tool's execution, guarded; it never swallows
    what the tool raised (OB-4, OB-22)."""

    def __init__(self, guard: Guard, span: Any) -> None:
        self.guard = guard
        self.span = span
        self.manager: AbstractContextManager[Any] | None = None

    def __enter__(self) -> None:
        if isinstance(self.span, NoSpan):
            return
        try:
            manager = self.guard.tracer.activate(self.span)
            manager.__enter__()
            self.manager = manager
        except Exception:
            self.guard.failed("activate")

    def __exit__(self, *exc_info: Any) -> None:
        manager, self.manager = self.manager, None
        if manager is not None:
            try:
                manager.__exit__(*exc_info)
            except Exception:
                self.guard.failed("activate")


# -- secrets ---------------------------------------------------------------------------------


def _is_secret(schema: Mapping[str, Any]) -> bool:
    return schema.get("writeOnly") is True or schema.get("format") == "password"


def secret_names(tool: Any) -> frozenset[str]:
    """OB-16, OB-21: the names of every property the tool's schema marks secret, at any
    depth."""
    root = getattr(tool, "parameters", None)
    if not isinstance(root, Mapping):
        return frozenset()
    names: set[str] = set()
    seen: set[int] = set()
    memo: dict[int, bool] = {}
    pending: list[tuple[Any, int]] = [(root, 0)]
    while pending:
        schema, depth = pending.pop()
        if not isinstance(schema, Mapping) or id(schema) in seen or depth > _MAX_DEPTH:
            continue
        seen.add(id(schema))
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            pending.append((_resolve(root, ref), depth + 1))
        properties = schema.get("properties")
        for name, sub in properties.items() if isinstance(properties, Mapping) else ():
            if isinstance(sub, Mapping) and _holds_secret(root, sub, memo):
                names.add(str(name))
            pending.append((sub, depth + 1))
        for key in ("items", "additionalProperties"):
            pending.append((schema.get(key), depth + 1))
        for key in ("$defs", "definitions"):
            defs = schema.get(key)
            pending.extend(
                (d, depth + 1)
                for d in (defs.values() if isinstance(defs, Mapping) else ())
            )
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            branches = schema.get(key)
            if isinstance(branches, list):
                pending.extend((b, depth + 1) for b in branches)
    return frozenset(names)


def _holds_secret(
    root: Mapping[str, Any], schema: Mapping[str, Any], memo: dict[int, bool]
) -> bool:
    """The value is secret: marked so, or an array or map of secrets, or so through a
    ``$ref`` or an alternative. Each schema node is judged once (``memo``; a node met
    again on its own path counts as not secret), so shared and recursive definitions
    cost linear time."""
    known = memo.get(id(schema))
    if known is not None:
        return known
    memo[id(schema)] = False  # on the path: a cycle adds nothing
    ref = schema.get("$ref")
    candidates: list[Any] = (
        [_resolve(root, ref)] if isinstance(ref, str) and ref.startswith("#/") else []
    )
    candidates += [schema.get("items"), schema.get("additionalProperties")]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        candidates += branches if isinstance(branches, list) else []
    result = _is_secret(schema) or any(
        isinstance(c, Mapping) and _holds_secret(root, c, memo) for c in candidates
    )
    memo[id(schema)] = result
    return result


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def hide(value: Any, names: frozenset[str], depth: int = 0) -> Any:
    """A copy of ``value`` with the value under every key in ``names`` replaced by
    ``[secret]``."""
    if depth > _MAX_DEPTH:
        return SECRET_TEXT
    if isinstance(value, Mapping):
        return {
            k: SECRET_TEXT if k in names else hide(v, names, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [hide(v, names, depth + 1) for v in value]
    return value


def secret_values(value: Any, names: frozenset[str]) -> list[str]:
    """The texts of the values under the keys in ``names``, at any depth, longest
    first."""
    found: list[str] = []
    pending: list[tuple[Any, bool, int]] = [(value, False, 0)]
    while pending:
        item, secret, depth = pending.pop()
        if depth > _MAX_DEPTH:
            continue
        if isinstance(item, Mapping):
            pending.extend(
                (v, secret or k in names, depth + 1) for k, v in item.items()
            )
        elif isinstance(item, list | tuple):
            pending.extend((v, secret, depth + 1) for v in item)
        elif secret and item is not None and not isinstance(item, bool):
            text = str(item)
            if len(text) >= 4:  # a shorter value would blank out ordinary text
                found.append(text)
    return sorted(set(found), key=len, reverse=True)


def scrub(text: str, values: list[str]) -> str:
    """``text`` with every one of ``values`` replaced by ``[secret]``."""
    for value in values:
        text = text.replace(value, SECRET_TEXT)
    return text
