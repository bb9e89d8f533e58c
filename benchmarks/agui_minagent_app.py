"""The minagent side of `hosted_agui.py`: the turn of `agui_turn.py` on a minagent
agent, served over AG-UI (``POST /agui/bench``).

    python -m minagent serve agui_minagent_app:agent    # the dev server (with the guard)
    uvicorn agui_minagent_app:app --app-dir benchmarks  # uvicorn, one worker

Both need ``benchmarks/`` importable (`hosted_agui.py` puts it on ``PYTHONPATH``). The
model is `TurnChatClient`, a fake in-process chat client that answers instantly; its
threads live in memory (every turn of the load is a new thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agui_turn import (
    AGENT,
    ARGUMENTS_JSON,
    CALL_ID,
    CHUNKS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    add_numbers,
    chunk,
)

from minagent import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    tool,
)
from minagent.hosting import HostingApp

__all__ = ["TurnChatClient", "agent", "app"]


def _tool_results(messages: Sequence[Message]) -> int:
    return sum(1 for m in messages for c in m.contents if c.type == "function_result")


class TurnChatClient(BaseChatClient):
    """The fake model of `agui_turn.py`: a call of ``add`` first, then the answer in
    `CHUNKS` chunks."""

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        # AG-UI always streams (HS-86); a whole response is never asked for
        raise NotImplementedError("the AG-UI turn streams")

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        # one yield to the loop per model call, standing in for the network
        await asyncio.sleep(0)
        if not _tool_results(messages):
            call = Content.from_function_call(CALL_ID, TOOL_NAME, ARGUMENTS_JSON)
            yield ChatResponseUpdate([call], "assistant")
            return
        for index in range(CHUNKS):
            yield ChatResponseUpdate([Content.from_text(chunk(index))], "assistant")


@tool(name=TOOL_NAME, description=TOOL_DESCRIPTION)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return add_numbers(a, b)


def agent() -> Agent:
    """The served agent, for ``python -m minagent serve agui_minagent_app:agent``."""
    return Agent(TurnChatClient(), name=AGENT, tools=[add])


# what uvicorn serves: the same agent in a plain HostingApp (no guard), as the peer's
# endpoint has none
app = HostingApp([agent()])
