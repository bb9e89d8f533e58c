"""The retry policy: when a failed call is tried again, and after how long
(spec/providers.md).

Rules
-----
1. Only a `ProviderError` is ever retried, never a `StreamInterruptedError` and never a
   cancellation (PV-25); the policy decides from the error alone (``should_retry``).
2. The wait before a retry is the server's delay when it names one, capped, else
   full-jitter backoff (PV-26, PV-27); the clock (``sleep``) and the randomness
   (``rng``) are parameters, so tests never wait.

Theory of operation
-------------------
``retry_call(attempt, policy=..., sleep=..., rng=...)`` runs ``attempt()`` until it
returns or the policy gives up, and raises the last error. Each retry is logged at INFO
with the error's text, which a client has already redacted. `RetryPolicy` is a frozen
value: ``max_retries``, the backoff bounds, the server-delay cap and the retryable
statuses.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from .errors import RETRY_STATUSES, ProviderError, StreamInterruptedError, server_delay

__all__ = ["RetryPolicy", "SupportsRandom", "retry_call"]

T = TypeVar("T")


class SupportsRandom(Protocol):
    """A source of floats in [0, 1): `random.Random`, or a test's fake."""

    def random(self) -> float: ...


_RNG = random.Random()


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed call is tried again, and after how long (PV-25 .. PV-27).

    ``max_retries`` attempts after the first; delays are ``rng.random() * min(max_delay,
    base_delay * 2 ** (attempt - 1))`` (exponential backoff with full jitter), or the
    server's delay from the headers, used as given but never longer than
    ``max_server_delay``.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_server_delay: float = 60.0
    retry_statuses: frozenset[int] = field(default=RETRY_STATUSES)
    retry_server_errors: bool = True

    def __post_init__(self) -> None:
        for name in ("max_retries", "base_delay", "max_delay", "max_server_delay"):
            value = getattr(self, name)
            if not (
                isinstance(value, int | float) and value >= 0 and math.isfinite(value)
            ):
                raise ValueError(
                    f"RetryPolicy.{name} must be a finite number >= 0, got {value!r}"
                )

    def retries_status(self, status: int) -> bool:
        """Whether an answer with this HTTP status is retried (PV-25)."""
        return status in self.retry_statuses or (
            self.retry_server_errors and 500 <= status <= 599
        )

    def should_retry(self, error: BaseException, retries_done: int) -> bool:
        """Whether to try again after ``error`` when ``retries_done`` retries were made
        (PV-25).

        Only a `ProviderError` is retried, never a `StreamInterruptedError`; a response
        header ``x-should-retry: true`` / ``false`` overrides the status rule.
        """
        if retries_done >= self.max_retries or not isinstance(error, ProviderError):
            return False
        if isinstance(error, StreamInterruptedError):
            return False
        hint = error.headers.get("x-should-retry", "").strip().lower()
        if hint in ("true", "false"):
            return hint == "true"
        if error.status is not None:
            return self.retries_status(error.status)
        return error.retryable

    def delay(
        self,
        attempt: int,
        headers: Mapping[str, str] | None = None,
        rng: SupportsRandom | None = None,
        *,
        status: int | None = None,
        now: float | None = None,
    ) -> float:
        """Seconds to wait before retry number ``attempt`` (1 for the first retry).

        The server's delay (``server_delay``) capped at ``max_server_delay`` when it
        names one (PV-27), else full-jitter backoff (PV-26).
        """
        if attempt < 1:
            raise ValueError(f"attempt counts retries from 1, got {attempt}")
        asked = server_delay(headers, status=status, now=now)
        if asked is not None:
            return min(asked, self.max_server_delay)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(attempt - 1, 64))
        return (rng or _RNG).random() * ceiling


async def retry_call(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rng: SupportsRandom | None = None,
    logger: logging.Logger | None = None,
) -> T:
    """Run ``attempt()`` until it succeeds or the policy gives up; raise the last error
    (PV-25).

    Each retry waits ``policy.delay(n, error.headers, rng, status=error.status)``
    through ``sleep``; cancellation during the wait or an attempt propagates at once.
    """
    retries = 0
    while True:
        try:
            return await attempt()
        except ProviderError as error:
            if not policy.should_retry(error, retries):
                raise
            retries += 1
            wait = policy.delay(retries, error.headers, rng, status=error.status)
            if logger is not None:
                logger.info(
                    "retry %d of %d in %.3f s after: %s",
                    retries,
                    policy.max_retries,
                    wait,
                    error,
                )
        await sleep(wait)
