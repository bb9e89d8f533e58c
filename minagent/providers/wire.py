"""Hostile wire data for provider codecs: strict JSON and what an unreadable answer is
(spec/providers.md, PV-49).

Rules
-----
1. A codec reads wire JSON with `loads`: whatever the bytes, it returns a value or
   raises the codec's protocol error naming what was read — never a bare ``ValueError``,
   ``RecursionError`` or ``UnicodeDecodeError``.
2. `WIRE_ERRORS` are what a parser of well-formed but hostile JSON can still hit (a
   number where a string belongs, a timestamp out of range); a codec turns them into its
   protocol error at its entry points (``decode``, each event of a stream,
   ``parse_error``) with `unreadable`.

Theory of operation
-------------------
``loads`` decodes bytes as UTF-8 (invalid bytes become U+FFFD), parses with NaN and
Infinity refused, and maps the parser's failures — bad JSON, an integer beyond the
interpreter's digit limit, nesting beyond its recursion limit — to one message. Escaped
lone surrogates, which JSON can carry but UTF-8 cannot, become U+FFFD, so what a codec
returns can always be encoded again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["WIRE_ERRORS", "loads", "snippet", "unreadable"]

WIRE_ERRORS: tuple[type[Exception], ...] = (
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
    IndexError,
    OverflowError,
    RecursionError,
)
_SNIPPET = 200
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def snippet(data: object, limit: int = _SNIPPET) -> str:
    """The start of ``data`` as quoted text for an error message."""
    text = data if isinstance(data, str) else repr(data)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def unreadable(what: str, exc: BaseException) -> str:
    """The message of a protocol error for an answer a codec could not read (PV-49)."""
    return f"{what} cannot be read ({type(exc).__name__}: {str(exc)[:_SNIPPET]})"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _repair(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _repaired(value: Any) -> Any:
    if isinstance(value, str):
        return _repair(value)
    if isinstance(value, dict):
        return {_repair(k): _repaired(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_repaired(v) for v in value]
    return value


def loads(
    data: bytes | bytearray | str, what: str, error: Callable[[str], Exception]
) -> Any:
    """Strict JSON of wire data (PV-49): the value, or ``error(message)`` naming
    ``what``."""
    text = (
        bytes(data).decode("utf-8", "replace")
        if isinstance(data, bytes | bytearray)
        else data
    )
    try:
        value = json.loads(text, parse_constant=_no_constant)
        # deep too: RecursionError
        return _repaired(value) if _SURROGATE_ESCAPE.search(text) else value
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at position {exc.pos}"
    # json's own limit, or (3.12+, whose C parser goes deeper) the repair's
    except RecursionError:
        problem = "nested too deeply"
    except ValueError as exc:  # NaN/Infinity, or an integer with too many digits
        problem = str(exc)[:_SNIPPET]
    raise error(f"{what} is not valid JSON ({problem}): {snippet(text)}")
