"""`HumanApproval`: a review policy per tool (spec/middleware-library.md, ML-8).

Rules
-----
1. A call whose policy is not ``"never"`` runs only when a decider approved it
   (`Approve`, `Edit`) or the caller approved its pause; otherwise it pauses the run
   (LP-13) or is answered with the `Reject` message.
2. The caller's answers are read from the run's messages in ``before_agent`` and kept
   per run (`per_run.py`), never on the instance.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._exceptions import UserInputRequiredError
from .._types import Content
from ..hooks import Handler, HookState, ToolCallRequest
from .per_run import _PerRun

__all__ = ["Approve", "Edit", "HumanApproval", "Reject"]


@dataclass(frozen=True)
class Approve:
    """Run the call as the model asked."""


@dataclass(frozen=True)
class Edit:
    """Run the call with these arguments instead."""

    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Reject:
    """Do not run the call; the model receives ``message`` as its result."""

    message: str = "Error: Tool call invocation was rejected by user."


Decision = Approve | Edit | Reject
Decider = Callable[[ToolCallRequest], "Decision | Awaitable[Decision | None] | None"]


class HumanApproval(_PerRun):
    """A review policy per tool: a decider in process, or a pause for the caller's
    answer (ML-8).

    ``policy`` maps a tool name to ``"always"`` (pause for the caller), ``"never"``, or
    a decider ``(request) -> Approve() | Edit(arguments) | Reject(message) | None``
    (``def`` or ``async def``; None pauses for the caller). Tools not named follow
    ``default``.
    """

    def __init__(self, policy: Mapping[str, Any], *, default: Any = "never") -> None:
        for name, rule in {**policy, "<default>": default}.items():
            if rule not in ("always", "never") and not callable(rule):
                raise ValueError(
                    f"HumanApproval policy for {name!r} must be 'always', 'never' or a decider, got {rule!r}"
                )
        self.policy = dict(policy)
        self.default = default

    def before_agent(self, state: HookState) -> Any:
        answers = self._counts().approvals
        for message in state.messages:
            for c in message.contents:
                if (
                    c.type == "function_approval_response"
                    and c.function_call is not None
                ):
                    answers[c.function_call.call_id or c.id or ""] = c
        return None

    async def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        name = request.tool_call.name or ""
        rule = self.policy.get(name, self.default)
        if rule == "never":
            return await handler(request)
        answer = self._counts().approvals.get(request.tool_call.call_id or "")
        decision: Any = None
        # the caller answered a pause (LP-14 lets approved calls through)
        if answer is not None:
            edited = (
                answer.function_call.parse_arguments()
                if answer.function_call is not None
                else None
            )
            decision = (
                Edit(edited)
                if edited is not None and edited != dict(request.arguments)
                else Approve()
            )
        elif callable(rule):
            decision = rule(request)
            while inspect.isawaitable(decision):
                decision = await decision
        # pause: the call comes back with an approval request (LP-13's contents)
        if decision is None:
            raise UserInputRequiredError(
                [
                    Content.from_function_approval_request(
                        request.tool_call.call_id or "", request.tool_call
                    )
                ]
            )
        if isinstance(decision, Approve):
            return await handler(request)
        if isinstance(decision, Edit):
            return await handler(request.override(arguments=dict(decision.arguments)))
        if isinstance(decision, Reject):
            return decision.message
        raise TypeError(
            f"a HumanApproval decider must return Approve(), Edit(...), Reject(...) or None, got {decision!r}"
        )
