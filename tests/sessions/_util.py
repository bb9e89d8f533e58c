"""Shared helpers of the session tests."""

from __future__ import annotations

from typing import Any

import pytest

from minagent import AgentResponse

MODES = pytest.mark.parametrize(
    "stream", [False, True], ids=["non-streaming", "streaming"]
)


async def run(
    agent: Any, messages: Any, *, stream: bool, **kwargs: Any
) -> AgentResponse:
    """One run in either mode, the stream consumed to its end."""
    if not stream:
        return await agent.run(messages, **kwargs)
    response_stream = agent.run(messages, stream=True, **kwargs)
    async for _ in response_stream:
        pass
    return await response_stream.get_final_response()


def texts(messages: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]
