"""Helpers for the hook and library tests: run an agent or a client in either mode."""

from __future__ import annotations

from typing import Any

import pytest

BOTH_MODES = pytest.mark.parametrize(
    "stream", [False, True], ids=["stream=False", "stream=True"]
)


async def run(agent: Any, messages: Any = None, *, stream: bool, **kwargs: Any) -> Any:
    """``agent.run`` in the given mode; when streaming, the updates are consumed, then
    the final response."""
    if not stream:
        return await agent.run(messages, **kwargs)
    response_stream = agent.run(messages, stream=True, **kwargs)
    updates = [u async for u in response_stream]
    final = await response_stream.get_final_response()
    # for tests that look at what was streamed
    final.additional_properties["_updates"] = updates
    return final


async def ask(client: Any, messages: Any, *, stream: bool, **kwargs: Any) -> Any:
    """``client.get_response`` in the given mode."""
    if not stream:
        return await client.get_response(messages, **kwargs)
    response_stream = client.get_response(messages, stream=True, **kwargs)
    updates = [u async for u in response_stream]
    final = await response_stream.get_final_response()
    final.additional_properties["_updates"] = updates
    return final


def streamed_text(response: Any) -> str:
    return "".join(u.text for u in response.additional_properties.get("_updates", []))


def tool_t() -> str:
    """A tool."""
    return "ok"
