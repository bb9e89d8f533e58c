"""Helpers shared by the seed tests: run an agent or a client in either mode.

The seed examples themselves are written as the seeds write them (no annotations where
the seed has none); these helpers are ours.
"""

from __future__ import annotations

from typing import Any

import pytest

BOTH_MODES = pytest.mark.parametrize(
    "stream", [False, True], ids=["stream=False", "stream=True"]
)


async def run(agent: Any, messages: Any = None, *, stream: bool, **kwargs: Any) -> Any:
    """``agent.run`` in the given mode; the streaming final response (updates consumed
    first)."""
    if not stream:
        return await agent.run(messages, **kwargs)
    response_stream = agent.run(messages, stream=True, **kwargs)
    async for _ in response_stream:
        pass
    return await response_stream.get_final_response()


async def get_response(
    client: Any, messages: Any, *, stream: bool, **kwargs: Any
) -> Any:
    """``client.get_response`` in the given mode; the streaming final response."""
    if not stream:
        return await client.get_response(messages, **kwargs)
    response_stream = client.get_response(messages, stream=True, **kwargs)
    async for _ in response_stream:
        pass
    return await response_stream.get_final_response()


def kinds(response: Any) -> list[tuple[str, list[str]]]:
    """Each message as (role, [content types])."""
    return [(m.role, [c.type for c in m.contents]) for m in response.messages]
