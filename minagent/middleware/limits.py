"""Call limits: `ModelCallLimit` and `ToolCallLimit` (spec/middleware-library.md, ML-5,
ML-6).

Rules
-----
1. A model call is counted in ``before_model``, before it is made; a tool call in
   ``wrap_tool_call``, before it runs. A call over the limit is not made.
2. The counts are per run (`per_run.py`) and per thread (``thread.state``), never per
   instance.
"""

from __future__ import annotations

from typing import Any, Literal

from .._exceptions import MiddlewareTermination, MinagentError
from .._types import Message
from ..hooks import Handler, HookState, ToolCallRequest
from .checks import check_choice, check_positive
from .per_run import _PerRun

__all__ = ["CallLimitExceededError", "ModelCallLimit", "ToolCallLimit"]


class CallLimitExceededError(MinagentError):
    """A `ModelCallLimit` or `ToolCallLimit` with ``exit_behavior="error"`` was reached
    (ML-5, ML-6)."""

    def __init__(self, message: str, *, kind: str, count: int, limit: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.count = count
        self.limit = limit


class ModelCallLimit(_PerRun):
    """At most ``run_limit`` model calls per run and ``thread_limit`` per thread
    (ML-5)."""

    TEXT = "Model call limit reached; the run ended before a final answer."

    def __init__(
        self,
        *,
        run_limit: int | None = None,
        thread_limit: int | None = None,
        exit_behavior: Literal["end", "final_answer", "error"] = "end",
    ) -> None:
        check_positive("run_limit", run_limit)
        check_positive("thread_limit", thread_limit)
        if run_limit is None and thread_limit is None:
            raise ValueError("ModelCallLimit needs run_limit or thread_limit")
        check_choice("exit_behavior", exit_behavior, ("end", "final_answer", "error"))
        self.run_limit = run_limit
        self.thread_limit = thread_limit
        self.exit_behavior = exit_behavior

    def before_model(self, state: HookState) -> Any:
        counts = self._counts()
        thread = counts.thread
        used = [
            (counts.model, self.run_limit, "run"),
            (self._thread_count(thread), self.thread_limit, "thread"),
        ]
        over = [
            (n, limit, scope)
            for n, limit, scope in used
            if limit is not None and n >= limit
        ]
        if over:
            n, limit, scope = over[0]
            if self.exit_behavior == "error":
                raise CallLimitExceededError(
                    f"model call limit of {limit} per {scope} reached",
                    kind="model",
                    count=n,
                    limit=limit,
                )
            return {"jump_to": "end", "response": self.TEXT}
        counts.model += 1
        self._bump_thread(thread)
        last = any(limit is not None and n + 1 >= limit for n, limit, _ in used)
        if last and self.exit_behavior == "final_answer":
            # the last call allowed: no tools (as LP-7)
            return {"options": {"tool_choice": "none"}}
        return None


class ToolCallLimit(_PerRun):
    """At most ``run_limit`` tool calls per run and ``thread_limit`` per thread, counted
    before a call runs (ML-6)."""

    TEXT = "Error: tool call limit reached; this call was not executed."
    END_TEXT = "Tool call limit reached; the run ended."

    def __init__(
        self,
        *,
        tool_name: str | None = None,
        run_limit: int | None = None,
        thread_limit: int | None = None,
        exit_behavior: Literal["continue", "end", "error"] = "continue",
    ) -> None:
        check_positive("run_limit", run_limit)
        check_positive("thread_limit", thread_limit)
        if run_limit is None and thread_limit is None:
            raise ValueError("ToolCallLimit needs run_limit or thread_limit")
        check_choice("exit_behavior", exit_behavior, ("continue", "end", "error"))
        self.tool_name = tool_name
        self.run_limit = run_limit
        self.thread_limit = thread_limit
        self.exit_behavior = exit_behavior

    async def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        if self.tool_name is not None and request.tool_call.name != self.tool_name:
            return await handler(request)
        counts = self._counts()
        thread = counts.thread
        used = [
            (counts.tools, self.run_limit, "run"),
            (self._thread_count(thread), self.thread_limit, "thread"),
        ]
        over = [
            (n, limit, scope)
            for n, limit, scope in used
            if limit is not None and n >= limit
        ]
        if not over:
            counts.tools += 1
            self._bump_thread(thread)
            return await handler(request)
        n, limit, scope = over[0]
        if self.exit_behavior == "error":
            raise CallLimitExceededError(
                f"tool call limit of {limit} per {scope} reached",
                kind="tool",
                count=n,
                limit=limit,
            )
        if self.exit_behavior == "end":
            counts.ended = True
            raise MiddlewareTermination(result=self.TEXT)
        return self.TEXT

    def after_agent(self, state: HookState) -> Any:
        return (
            {"messages": [Message("assistant", [self.END_TEXT])]}
            if self._counts().ended
            else None
        )
