"""Middleware written under `from __future__ import annotations` (every annotation is a
string)."""

from __future__ import annotations

from typing import Any

from minagent._middleware import AgentContext, ChatContext, FunctionInvocationContext


async def agent_mw(context: AgentContext, call_next: Any) -> None:
    await call_next()


async def chat_mw(context: ChatContext, call_next: Any) -> None:
    await call_next()


async def function_mw(context: FunctionInvocationContext, call_next: Any) -> None:
    await call_next()


async def unresolvable(context: ChatContext, call_next: NotImported) -> None:  # type: ignore[name-defined]  # noqa: F821
    """The second annotation cannot be resolved; the context annotation still
    decides."""
    await call_next()
