"""Retries: `ModelRetry` and `ToolRetry`, with backoff (spec/middleware-library.md,
ML-1, ML-2, ML-7).

Rules
-----
1. How long to wait before the next attempt is decided here (`_Backoff`); what may be
   retried is ``retry_on`` as `checks.retry_predicate` makes it, which `fallback.py`
   uses too. A fallback's exhaustion is judged by the failures it holds (ML-14).
2. A model call whose updates already reached a streaming consumer is never retried
   (ML-2).
3. Control flow is not failure: `MiddlewareTermination` and `UserInputRequiredError`
   pass through `ToolRetry` untouched.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._exceptions import MiddlewareTermination, UserInputRequiredError
from .._responses import ChatResponse
from .._types import Message
from ..hooks import Handler, HookMiddleware, ModelRequest, ToolCallRequest
from .checks import check_choice, check_positive, retry_predicate
from .fallback import FallbackExhaustedError

__all__ = ["ModelRetry", "ToolRetry"]

Sleep = Callable[[float], Awaitable[Any]]
logger = logging.getLogger("minagent.middleware")


def _exhausted_aware(
    should_retry: Callable[[BaseException], bool],
) -> Callable[[BaseException], bool]:
    """ML-14: a fallback chain that failed is retried when one of its failures would
    be."""

    def check(exc: BaseException) -> bool:
        if isinstance(exc, FallbackExhaustedError):
            return any(should_retry(error) for error in exc.errors)
        return should_retry(exc)

    return check


@dataclass
class _Backoff:
    initial_delay: float = 1.0
    backoff_factor: float = 2.0
    max_delay: float = 60.0
    jitter: bool = True

    def __post_init__(self) -> None:
        for name in ("initial_delay", "backoff_factor", "max_delay"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or value < 0
            ):
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")

    def delay(self, retry: int, exc: BaseException | None = None) -> float:
        """Seconds before retry number ``retry`` (1 first): the error's ``retry_after``
        hint when it has one, else exponential backoff with equal jitter; both capped at
        ``max_delay`` (ML-1)."""
        hint = getattr(exc, "retry_after", None)
        if isinstance(hint, int | float) and not isinstance(hint, bool) and hint >= 0:
            return float(min(hint, self.max_delay))
        base = min(
            self.initial_delay * self.backoff_factor ** (retry - 1), self.max_delay
        )
        return base / 2 + random.uniform(0, base / 2) if self.jitter else base


class ModelRetry(HookMiddleware):
    """Retry a failed model call with exponential backoff and jitter (ML-1, ML-2)."""

    def __init__(
        self,
        max_retries: int = 2,
        *,
        retry_on: Any = None,
        initial_delay: float = 1.0,
        backoff_factor: float = 2.0,
        max_delay: float = 60.0,
        jitter: bool = True,
        on_failure: Literal["raise", "answer"] = "raise",
        give_up_after: float | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        check_positive("max_retries", max_retries, allow_none=False, minimum=0)
        check_choice("on_failure", on_failure, ("raise", "answer"))
        if give_up_after is not None and (
            isinstance(give_up_after, bool)
            or not isinstance(give_up_after, int | float)
            or give_up_after < 0
        ):
            raise ValueError(
                f"give_up_after must be a number >= 0 or None, got {give_up_after!r}"
            )
        self.max_retries = max_retries
        self.should_retry = _exhausted_aware(retry_predicate(retry_on))
        self.backoff = _Backoff(initial_delay, backoff_factor, max_delay, jitter)
        self.on_failure = on_failure
        self.give_up_after = give_up_after
        self.sleep = sleep

    def _hint_too_long(self, exc: BaseException) -> bool:
        """The server asks to wait longer than ``give_up_after``: fail fast, e.g. for a
        fallback (ML-1)."""
        hint = getattr(exc, "retry_after", None)
        return (
            self.give_up_after is not None
            and isinstance(hint, int | float)
            and not isinstance(hint, bool)
            and hint > self.give_up_after
        )

    async def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        retry = 0
        while True:
            try:
                return await handler(request)
            except Exception as exc:
                stop = (
                    retry >= self.max_retries
                    or not self.should_retry(exc)
                    or self._hint_too_long(exc)
                )
                if handler.streamed or stop:
                    if self.on_failure == "answer" and not handler.streamed:
                        text = f"The model call failed after {retry + 1} attempt(s): {type(exc).__name__}: {exc}"
                        return ChatResponse(
                            [Message("assistant", [text])], finish_reason="error"
                        )
                    raise
                retry += 1
                wait = self.backoff.delay(retry, exc)
                logger.debug(
                    "ModelRetry: %s; retry %d in %.2fs", type(exc).__name__, retry, wait
                )
                await self.sleep(wait)


class ToolRetry(HookMiddleware):
    """Retry a failing tool (ML-7)."""

    def __init__(
        self,
        max_retries: int = 2,
        *,
        tool_names: Sequence[str] | None = None,
        retry_on: Any = Exception,
        initial_delay: float = 0.5,
        backoff_factor: float = 2.0,
        max_delay: float = 30.0,
        jitter: bool = True,
        on_failure: Literal["error", "message"] = "error",
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        check_positive("max_retries", max_retries, allow_none=False, minimum=0)
        check_choice("on_failure", on_failure, ("error", "message"))
        self.max_retries = max_retries
        self.tool_names = None if tool_names is None else frozenset(tool_names)
        self.should_retry = retry_predicate(retry_on)
        self.backoff = _Backoff(initial_delay, backoff_factor, max_delay, jitter)
        self.on_failure = on_failure
        self.sleep = sleep

    async def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        name = request.tool_call.name or ""
        if request.tool is None or (
            self.tool_names is not None and name not in self.tool_names
        ):
            return await handler(request)
        retry = 0
        while True:
            try:
                return await handler(request)
            except (MiddlewareTermination, UserInputRequiredError):
                raise  # control flow, not failures
            except Exception as exc:
                if retry >= self.max_retries or not self.should_retry(exc):
                    if self.on_failure == "message":
                        return f"Error: {name} failed after {retry + 1} attempt(s): {type(exc).__name__}: {exc}"
                    raise
                retry += 1
                await self.sleep(self.backoff.delay(retry))
