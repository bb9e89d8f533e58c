"""AG-14, AG-13, LP-2: one route. A run without agent middleware is the same as a run
whose agent middleware only passes through; checked over random scripts in both
modes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentContext,
    AgentMiddleware,
    ChatMiddleware,
    ChatResponse,
    FunctionMiddleware,
    Message,
    ResponseStream,
    agent_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run


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


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


@tool
def get_weather(location):
    """Get the weather for a location."""
    return f"sunny in {location}"


class ChatLogger(ChatMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, next):
        self.log.append("chat")
        await next(context)


class FunctionLogger(FunctionMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append(f"function {context.function.name}")
        await call_next()


class AgentLogger(AgentMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, next):
        self.log.append("agent")
        await next(context)


def _weather_script():
    return [reply(call("get_weather", {"location": "Paris"})), "It is sunny."]


class OverridingClient(ScriptedChatClient):
    def __init__(self, steps):
        super().__init__(steps)
        self.seen = []

    def get_response(self, messages, *, stream=False, **kwargs):
        self.seen.append(("get_response", stream, sorted(kwargs)))
        return super().get_response(messages, stream=stream, **kwargs)


class ProtocolOnlyClient:
    """A chat client without BaseChatClient: it implements the protocol itself."""

    def __init__(self):
        self.seen = []

    def get_response(self, messages, *, stream=False, options=None, **kwargs):
        self.seen.append(
            ("get_response", stream, sorted(kwargs), [m.text for m in messages])
        )
        response = ChatResponse([Message("assistant", ["from the protocol client"])])
        if stream:
            return (
                ResponseStream.from_response(response)
                if hasattr(ResponseStream, "from_response")
                else (
                    ResponseStream(
                        _updates_of(response), finalizer=ChatResponse.from_updates
                    )
                )
            )

        async def answer():
            return response

        return answer()


async def _updates_of(response):
    for update in response.as_updates():
        yield update


@pytest.mark.parametrize(
    "middleware", [[], ["chat"], ["function"], ["agent"], ["agent", "chat", "function"]]
)
async def test_an_overridden_get_response_sees_the_same_calls_in_both_modes(middleware):
    """AG-13: the agent calls client.get_response in both modes, so an override is
    honoured when streaming too, with the same keyword arguments, with and without
    middleware of each layer."""
    log = []
    made = {
        "agent": AgentLogger(log),
        "chat": ChatLogger(log),
        "function": FunctionLogger(log),
    }
    seen = {}
    for stream in (False, True):
        client = OverridingClient(_weather_script())
        agent = Agent(
            client, tools=[get_weather], middleware=[made[m] for m in middleware]
        )
        response = await run(agent, "weather?", stream=stream)
        assert response.text == "It is sunny."
        seen[stream] = [(name, kw) for name, mode, kw in client.seen]
        assert [mode for _, mode, _ in client.seen] == [stream]
    assert seen[False] == seen[True]
    assert log[: len(log) // 2] == log[len(log) // 2 :]


async def test_a_protocol_only_client_is_called_the_same_way(stream):
    """AG-13: a client that only implements SupportsChatGetResponse gets
    get_response(stream=...) in both modes, and only the keywords that are set."""
    client = ProtocolOnlyClient()
    agent = Agent(client, name="p")
    response = await run(agent, "hello", stream=stream)
    assert response.text == "from the protocol client"
    assert client.seen == [("get_response", stream, [], ["hello"])]


async def test_a_streaming_get_response_must_return_a_response_stream():
    """AG-13: a client whose streaming get_response returns something else is a
    TypeError naming it."""

    class Broken(ProtocolOnlyClient):
        def get_response(self, messages, *, stream=False, options=None, **kwargs):
            return ["not a stream"]

    stream = Agent(Broken()).run("x", stream=True)
    with pytest.raises(TypeError, match="must return a ResponseStream"):
        async for _ in stream:
            pass


async def test_a_coroutine_from_a_streaming_get_response_is_closed_not_leaked(recwarn):
    """AG-13: a protocol client whose streaming get_response returns a coroutine gets a
    TypeError, and the coroutine is closed (no "never awaited" warning)."""

    class CoroutineClient:
        def get_response(self, messages, *, stream=False, options=None, **kwargs):
            async def answer():
                return ChatResponse([Message("assistant", ["x"])])

            return answer()

    stream = Agent(CoroutineClient()).run("x", stream=True)
    with pytest.raises(TypeError, match="got coroutine"):
        async for _ in stream:
            pass
    assert not [w for w in recwarn if "never awaited" in str(w.message)]
