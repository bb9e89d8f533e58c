"""An agent as a tool (spec/agent.md AG-8, AG-16).

`agent_tool` is `BaseAgent.as_tool`: a `FunctionTool` with one required string parameter
that runs the agent once, streaming, passes every update to the caller's callback, and
answers with the final text; the sub-agent's user-input requests become the calling
run's (`UserInputRequiredError`).
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable
from typing import Any

from minagent import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    FunctionTool,
    UserInputRequiredError,
)

__all__ = ["agent_tool", "sanitize_tool_name"]


def agent_tool(
    agent: Any,
    *,
    name: str | None,
    description: str | None,
    arg_name: str,
    arg_description: str | None,
    stream_callback: Callable[[AgentResponseUpdate], Any] | None,
    approval_mode: Any,
    propagate_session: bool,
) -> FunctionTool:
    """AG-8: ``agent`` as a tool; with ``propagate_session`` its run shares the calling
    run's session state, under a session of its own (AG-16)."""
    tool_name = name or sanitize_tool_name(agent.name)
    parameters = {
        "type": "object",
        "properties": {
            arg_name: {
                "type": "string",
                "description": arg_description or f"Task for {tool_name}",
            }
        },
        "required": [arg_name],
        "additionalProperties": False,
    }

    async def run_agent(ctx: FunctionInvocationContext, **arguments: Any) -> str:
        outer = dict(ctx.kwargs) if ctx is not None else {}
        # AG-8
        kwargs: dict[str, Any] = {"function_invocation_kwargs": outer} if outer else {}
        if propagate_session and ctx is not None and ctx.session is not None:
            # AG-16
            kwargs["session"] = child = AgentSession(session_id=ctx.session.session_id)
            child.state = ctx.session.state
            child._claim_key = f"{child.session_id}#{tool_name}#{os.urandom(4).hex()}"
        final = await _consume(
            agent.run(arguments[arg_name], stream=True, **kwargs), stream_callback
        )
        if final.user_input_requests:
            raise UserInputRequiredError(final.user_input_requests)
        return final.text

    return FunctionTool(
        name=tool_name,
        description=description or agent.description or "",
        func=run_agent,
        parameters=parameters,
        approval_mode=approval_mode,
    )


def sanitize_tool_name(name: str | None) -> str:
    """Runs of characters other than letters and digits become one "_", trimmed; a
    leading digit gets "_"."""
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", name or "").strip("_")
    if cleaned and cleaned[0].isdigit():
        cleaned = f"_{cleaned}"
    return cleaned[:128] or "agent"


async def _consume(result: Any, callback: Callable[[Any], Any] | None) -> AgentResponse:
    """Any agent's streaming result as a final `AgentResponse` (AG-8): a
    `ResponseStream`, any async iterable of updates, an awaitable of either, or an
    awaitable of a response."""
    if inspect.isawaitable(result) and not hasattr(result, "__aiter__"):
        result = await result
    if not hasattr(result, "__aiter__"):
        if isinstance(result, AgentResponse):
            return result
        if isinstance(result, ChatResponse):
            return AgentResponse.from_chat_response(result)
        raise TypeError(
            f"run(stream=True) of an agent used as a tool must give an async iterable of updates or a "
            f"response, got {type(result).__name__}"
        )
    updates: list[Any] = []
    iterator = aiter(result)
    try:
        async for update in iterator:
            updates.append(update)
            if callback is not None:
                outcome = callback(update)
                if inspect.isawaitable(outcome):
                    await outcome
    finally:
        if (close := getattr(iterator, "aclose", None)) is not None:
            await close()
    final = getattr(result, "get_final_response", None)
    if final is not None:
        response = await final()
        return (
            response
            if isinstance(response, AgentResponse)
            else AgentResponse.from_chat_response(response)
        )
    texts = [
        u
        if isinstance(u, AgentResponseUpdate | ChatResponseUpdate)
        else AgentResponseUpdate([Content.from_text(str(u))])
        for u in updates
    ]
    return AgentResponse.from_updates(texts)
