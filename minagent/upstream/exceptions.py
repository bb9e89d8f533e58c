"""Upstream's exception names on minagent's hierarchy (spec/upstream.md UP-8).

Upstream's names for minagent's own errors are the same classes; upstream's classes
minagent has no counterpart of derive from `MinagentError` (PK-6), so ``except
MinagentError`` catches them too. The ones the core raises itself (`AdditionItemMismatch`,
TY-16; `AgentInvalidRequestException`, SE-65) and their base live in the core's
``_exceptions``.
"""

from __future__ import annotations

from minagent import MinagentError, ToolError, UserInputRequiredError
from minagent._exceptions import (
    AdditionItemMismatch,
    AgentException,
    AgentInvalidRequestException,
)

__all__ = [
    "AdditionItemMismatch",
    "AgentException",
    "AgentFrameworkException",
    "AgentInvalidRequestException",
    "AgentInvalidResponseException",
    "ChatClientException",
    "ChatClientInvalidRequestException",
    "ChatClientInvalidResponseException",
    "ToolException",
    "ToolExecutionException",
    "UserInputRequiredException",
]

AgentFrameworkException = MinagentError
ToolException = ToolError
ToolExecutionException = ToolError
UserInputRequiredException = UserInputRequiredError


class AgentInvalidResponseException(AgentException):
    """An agent got a response it cannot use."""


class ChatClientException(MinagentError):
    """A chat client failed."""


class ChatClientInvalidRequestException(ChatClientException, ValueError):
    """A chat client was asked for something it cannot do."""


class ChatClientInvalidResponseException(ChatClientException):
    """A chat client got a response it cannot use."""
