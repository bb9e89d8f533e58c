"""The peer's side of `hosted_agui.py`: the turn of `agui_turn.py` on agent-framework
(agent-framework-core 1.23.0), served by its AG-UI endpoint (agent-framework-ag-ui 1.7.0,
a FastAPI application) at ``POST /agui/bench``.

    /work/venv-afagui/bin/python -m uvicorn agui_af_app:app --app-dir benchmarks

It imports agent_framework, so it runs only in the peer's environment
(requirements-hosted-peers.txt, see README.md); the tests never import it, and mypy does
not check ``benchmarks/`` (tools/check.py's TYPED). ``benchmarks/`` must be importable for
`agui_turn` (`hosted_agui.py` puts it on ``PYTHONPATH``).

The fake client is composed like agent-framework's shipped clients and ../shared/bench's
``bench_af.py`` (``FunctionInvocationLayer -> ChatMiddlewareLayer -> ChatTelemetryLayer ->
BaseChatClient``, OpenTelemetry not configured) and implements only
``_inner_get_response``; it streams exactly what minagent's `TurnChatClient` streams. The
endpoint is registered with its defaults (SSE keep-alive comments every 15 s, no
snapshot store, runs not detached) and ``single_user=True``, the one authorization mode
that needs no resolver.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    tool,
)
from agent_framework.observability import ChatTelemetryLayer
from agent_framework_ag_ui import add_agent_framework_fastapi_endpoint
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
from fastapi import FastAPI

logging.getLogger("agent_framework").setLevel(logging.ERROR)


class TurnChatClient(
    FunctionInvocationLayer,
    ChatMiddlewareLayer,
    ChatTelemetryLayer,
    BaseChatClient,
):
    """The fake model of `agui_turn.py`: a call of ``add`` first, then the answer in
    `CHUNKS` chunks."""

    OTEL_PROVIDER_NAME = "fake"

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        if not stream:
            raise NotImplementedError("the AG-UI turn streams")
        return self._build_response_stream(self._stream(messages, options))

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        await self._validate_options(options)
        # one yield to the loop per model call, standing in for the network
        await asyncio.sleep(0)
        if not any(m.role == "tool" for m in messages):
            call = Content.from_function_call(
                CALL_ID, TOOL_NAME, arguments=ARGUMENTS_JSON
            )
            yield ChatResponseUpdate(role="assistant", contents=[call])
            return
        for index in range(CHUNKS):
            yield ChatResponseUpdate(
                role="assistant", contents=[Content.from_text(chunk(index))]
            )


@tool(name=TOOL_NAME, description=TOOL_DESCRIPTION)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return add_numbers(a, b)


app = FastAPI()
add_agent_framework_fastapi_endpoint(
    app,
    Agent(client=TurnChatClient(), name=AGENT, tools=[add]),
    path=f"/agui/{AGENT}",
    single_user=True,
)
