"""AG-14, AG-13, LP-2: one route. A run without agent middleware is the same as a run
whose agent middleware only passes through; checked over random scripts in both
modes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent, AgentContext, agent_middleware, tool
from minagent.testing import ScriptedChatClient, call, reply


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@agent_middleware
async def passthrough(context: AgentContext, call_next: Any) -> None:
    await call_next()


def _script(turns: list[str]) -> list[Any]:
    steps: list[Any] = []
    for i, kind in enumerate(turns):
        steps.append(
            reply(call("add", {"a": i, "b": 1}, call_id=f"c{i}"))
            if kind == "call"
            else f"text {i}"
        )
    return [*steps, "final"]


async def _run(
    turns: list[str], stream: bool, middleware: list[Any]
) -> tuple[Any, Any, Any]:
    client = ScriptedChatClient(_script(turns))
    agent = Agent(
        client, "be brief", name="a", id="fixed", tools=[add], middleware=middleware
    )
    thread = agent.get_new_thread(thread_id="t")
    if stream:
        result = agent.run("go", stream=True, thread=thread, tenant="x")
        async for _ in result:
            pass
        response = await result.get_final_response()
    else:
        response = await agent.run("go", thread=thread, tenant="x")
    calls = [
        (
            r.texts,
            {k: v for k, v in r.options.items() if k != "tools"},
            r.kwargs,
            r.stream,
        )
        for r in client.requests
    ]
    return calls, response.to_dict(), thread.serialize()


@settings(max_examples=25, deadline=None)
@given(
    turns=st.lists(st.sampled_from(["call", "text"]), max_size=4), stream=st.booleans()
)
def test_no_agent_middleware_is_the_same_route_as_a_passthrough(
    turns: list[str], stream: bool
) -> None:
    """AG-14: same client calls, same response, same thread, with or without a
    pass-through agent middleware, streaming or not."""
    bare = asyncio.run(_run(turns, stream, []))
    wrapped = asyncio.run(_run(turns, stream, [passthrough]))
    assert bare == wrapped


@pytest.mark.parametrize(
    "with_middleware", [False, True], ids=["bare", "with chat middleware"]
)
async def test_a_model_call_with_no_result_is_an_empty_response(
    with_middleware: bool,
) -> None:
    """MW-7, MW-4: a provider call that gives no result (None) is an empty
    `ChatResponse`, whether the chat pipeline is the bare provider call (no chat
    middleware) or runs middleware."""
    from minagent import BaseChatClient, ChatMiddleware

    class Silent(BaseChatClient):
        async def _inner_get_response(self, *, messages, options, **kwargs):  # type: ignore[no-untyped-def]
            return None

    class Passes(ChatMiddleware):
        async def process(self, context, call_next):  # type: ignore[no-untyped-def]
            await call_next()

    client = Silent(middleware=[Passes()] if with_middleware else None)
    response = await client.get_response("hi")
    assert response.messages == []
    assert (await Agent(client).run("hi")).text == ""
