"""Runs that keep what was streamed, for the hook and middleware-library tests.

`run` and `ask` are tests/_support/modes.py's `run` and `get_response` that also keep
the updates streamed, on the final response (``additional_properties["_updates"]``),
where `streamed_text` reads them.
"""

from __future__ import annotations

from typing import Any

from tests._support.modes import get_response_with_updates, run_with_updates


async def run(agent: Any, messages: Any = None, *, stream: bool, **kwargs: Any) -> Any:
    """``agent.run`` in the given mode; when streaming, the updates are consumed, then
    the final response."""
    final, updates = await run_with_updates(agent, messages, stream=stream, **kwargs)
    if stream:
        # for tests that look at what was streamed
        final.additional_properties["_updates"] = updates
    return final


async def ask(client: Any, messages: Any, *, stream: bool, **kwargs: Any) -> Any:
    """``client.get_response`` in the given mode."""
    final, updates = await get_response_with_updates(
        client, messages, stream=stream, **kwargs
    )
    if stream:
        final.additional_properties["_updates"] = updates
    return final


def streamed_text(response: Any) -> str:
    return "".join(u.text for u in response.additional_properties.get("_updates", []))


def tool_t() -> str:
    """A tool."""
    return "ok"
