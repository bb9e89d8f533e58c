"""`ModelFallback`: a failed model call goes to the next client
(spec/middleware-library.md, ML-3, ML-4).

Rules
-----
1. A call is sent on only while nothing of it was streamed (ML-2); when every client
   failed, the failures come out together as `FallbackExhaustedError`, which is
   retryable when one of them is (ML-14), so a `ModelRetry` outside walks the chain
   again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, TypeGuard

from .._exceptions import MinagentError
from ..hooks import Handler, HookMiddleware, ModelRequest
from .checks import default_retryable, retry_predicate

__all__ = ["FallbackExhaustedError", "ModelFallback"]

logger = logging.getLogger("minagent.middleware")


class FallbackExhaustedError(MinagentError):
    """Every client of a `ModelFallback` failed; ``errors`` holds each failure in order
    (ML-4).

    ``retryable`` is true when one of the failures is (ML-14); ``retry_after`` is the
    shortest wait any of them asks for, or None."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        super().__init__(
            f"all {len(errors)} model clients failed; last: {type(errors[-1]).__name__}: {errors[-1]}"
        )
        self.errors = list(errors)
        self.retryable = any(default_retryable(e) for e in self.errors)
        hints = [
            float(h)
            for e in self.errors
            if _is_delay(h := getattr(e, "retry_after", None))
        ]
        self.retry_after: float | None = min(hints) if hints else None


def _is_delay(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


class ModelFallback(HookMiddleware):
    """On failure, send the call to the next client in turn (ML-3, ML-4)."""

    def __init__(self, *clients: Any, retry_on: Any = None) -> None:
        if not clients:
            raise ValueError("ModelFallback needs at least one fallback client")
        for client in clients:
            if not callable(getattr(client, "_inner_get_response", None)):
                raise TypeError(
                    f"ModelFallback clients must be BaseChatClient instances, got {type(client).__name__}"
                )
        self.clients = list(clients)
        self.should_fall_back = (
            retry_predicate(retry_on) if retry_on is not None else (lambda exc: True)
        )

    async def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        errors: list[BaseException] = []
        for client in [None, *self.clients]:
            try:
                return await handler(
                    request if client is None else request.override(client=client)
                )
            except Exception as exc:
                errors.append(exc)
                if handler.streamed or not self.should_fall_back(exc):
                    raise
                logger.debug(
                    "ModelFallback: %s; trying the next client", type(exc).__name__
                )
        raise FallbackExhaustedError(errors) from errors[-1]
