"""Agents for ``python -m minagent mcp-serve tests.mcp.served_agent:...`` (scripted
model, no network).

The model answers ``answer: <task>``; a task starting with ``slow`` makes it call the
tool ``wait`` first, which sleeps and, when cancelled, writes ``cancelled`` to
``$MCP_TEST_MARKER``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from minagent import Agent, Message, tool
from minagent.testing import ScriptedChatClient, call


@tool
async def wait(seconds: float) -> str:
    """Wait for a while."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        marker = os.environ.get("MCP_TEST_MARKER")
        if marker:
            with open(marker, "w") as f:  # noqa: ASYNC230 - a test marker, written once
                f.write("cancelled")
        raise
    return "waited"


def model(messages: list[Message], options: dict[str, Any]) -> Any:
    task = next(m.text for m in reversed(messages) if m.role == "user")
    done = any(c.type == "function_result" for m in messages for c in m.contents)
    if task.startswith("slow") and not done:
        return call("wait", {"seconds": 60})
    if task == "print":
        print("a stray print must not reach the protocol stream")
    return f"answer: {task}"


def make_agent() -> Agent:
    """A zero-argument factory, as `mcp-serve module:factory` accepts."""
    return Agent(
        ScriptedChatClient([model] * 1000),
        "You answer tasks.",
        name="Task Runner",
        description="Runs a task and answers.",
        tools=[wait],
    )


agent = make_agent()


async def make_agent_async() -> Agent:
    return make_agent()


not_an_agent = 42
