"""What the library's middleware share: the argument checks of every constructor, and
what counts as a retryable failure (spec/middleware-library.md, ML-1, ML-3, ML-13,
ML-14).

Rules
-----
1. Every constructor checks its arguments: a value out of range is a `ValueError` naming
   the parameter, never a silent default.
2. Which failures a retry or a fallback may act on is decided here, once, for both:
   ``retry_on`` (`retry_predicate`) and the default (`default_retryable`). `retry.py`
   and `fallback.py` import these names from here and nothing private from each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["check_choice", "check_positive", "default_retryable", "retry_predicate"]


def check_positive(
    name: str, value: int | None, *, allow_none: bool = True, minimum: int = 1
) -> None:
    """ML-13: ``value`` is an int of at least ``minimum`` (or None when allowed), else
    a `ValueError` naming ``name``."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    """ML-13: ``value`` is one of ``allowed``, else a `ValueError` naming ``name``."""
    if value not in allowed:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
        )


def default_retryable(exc: BaseException) -> bool:
    """ML-1: provider errors say whether a retry can help (``retryable``); connection
    and timeout errors can."""
    flag = getattr(exc, "retryable", None)
    if isinstance(flag, bool):
        return flag
    return isinstance(exc, ConnectionError | TimeoutError)


def retry_predicate(retry_on: Any) -> Callable[[BaseException], bool]:
    """ML-1, ML-3: ``retry_on`` as a predicate: None is `default_retryable`, an
    exception class or a tuple of them an isinstance check, a callable itself; anything
    else is a `TypeError`."""
    if retry_on is None:
        return default_retryable
    if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
        retry_on = (retry_on,)
    if isinstance(retry_on, tuple):
        kinds = retry_on
        return lambda exc: isinstance(exc, kinds)
    if callable(retry_on):
        return retry_on  # type: ignore[no-any-return]
    raise TypeError(
        f"retry_on must be an exception class, a tuple of them or a predicate, got {retry_on!r}"
    )
