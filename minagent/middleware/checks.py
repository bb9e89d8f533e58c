"""The argument checks every constructor of the library makes
(spec/middleware-library.md, ML-13).

Rules
-----
1. Every constructor checks its arguments: a value out of range is a `ValueError` naming
   the parameter, never a silent default.
"""

from __future__ import annotations

from collections.abc import Sequence


def _positive(
    name: str, value: int | None, *, allow_none: bool = True, minimum: int = 1
) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
        )
