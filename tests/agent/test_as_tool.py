"""An agent as a tool: name, schema, nested streaming, surfaced approvals
(spec/agent.md, AG-8)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    BaseAgent,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from tests._support import modes
from tests._support.modes import run


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("My Agent!", "My_Agent"),
        ("9 lives", "_9_lives"),
        ("", "agent"),
        (None, "agent"),
        ("!!!", "agent"),
        ("  weather -- bot  ", "weather_bot"),
        ("__private__", "private"),
        ("Ünïcode Agent", "n_code_Agent"),
        ("already_fine_1", "already_fine_1"),
    ],
)
def test_tool_name_is_the_sanitised_agent_name(name: str | None, expected: str) -> None:
    """AG-8: runs outside [A-Za-z0-9_] become one "_", trimmed; a leading digit gets
    "_"; an empty result is "agent"."""
    agent = Agent(ScriptedChatClient(), name=name)
    as_tool = agent.as_tool()
    assert isinstance(as_tool, FunctionTool)
    assert as_tool.name == expected


def test_explicit_name_description_and_argument() -> None:
    """AG-8: name, description, arg_name and arg_description override the defaults; the
    schema has one required string property and no others."""
    agent = Agent(ScriptedChatClient(), name="Researcher", description="Finds things")
    default = agent.as_tool()
    assert default.description == "Finds things"
    assert default.parameters["type"] == "object"
    assert list(default.parameters["properties"]) == ["task"]
    assert default.parameters["properties"]["task"]["type"] == "string"
    assert default.parameters["required"] == ["task"]
    assert default.parameters["additionalProperties"] is False
    assert default.approval_mode == "never_require"

    custom = agent.as_tool(
        name="lookup",
        description="Look something up",
        arg_name="query",
        arg_description="What to look up",
        approval_mode="always_require",
    )
    assert custom.name == "lookup"
    assert custom.description == "Look something up"
    assert custom.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look up"}},
        "required": ["query"],
        "additionalProperties": False,
    }
    assert custom.approval_mode == "always_require"
    assert custom.validate_arguments({"query": "x"}) == []
    assert custom.validate_arguments({"query": "x", "extra": 1})
    assert custom.validate_arguments({})
    assert custom.validate_arguments({"query": 3})


async def test_calling_the_tool_directly_returns_the_final_text() -> None:
    """AG-8: invoking the tool runs the agent once, streaming, and returns the final
    text."""
    client = ScriptedChatClient([text_chunks("forty", "-two")])
    sub = Agent(client, "Answer briefly.", name="Oracle")
    result = await sub.as_tool().invoke({"task": "the answer?"}, skip_parsing=True)
    assert result == "forty-two"
    assert len(client.requests) == 1
    assert client.requests[0].stream is True
    assert client.requests[0].texts == ["user: the answer?"]
    assert client.requests[0].options["instructions"] == "Answer briefly."


def sync_collector(sink: list[Any]) -> Any:
    def callback(update: AgentResponseUpdate) -> None:
        sink.append(("sub", update))

    return callback


def async_collector(sink: list[Any]) -> Any:
    async def callback(update: AgentResponseUpdate) -> None:
        await asyncio.sleep(0)
        sink.append(("sub", update))

    return callback


@pytest.mark.parametrize(
    "collector", [sync_collector, async_collector], ids=["sync", "async"]
)
async def test_nested_streaming_reaches_the_callback_in_order(
    stream: bool, collector: Any
) -> None:
    """AG-8: a parent agent calls the sub-agent tool; the stream_callback (sync or
    async) receives every update of the sub-run in order, as it arrives (before the
    parent's tool result); the parent's final response contains the tool result text."""
    sink: list[Any] = []

    @tool
    def lookup(topic: str) -> str:
        """Look up a topic."""
        return f"facts about {topic}"

    sub_client = ScriptedChatClient(
        [
            [call("lookup", {"topic": "owls"}, call_id="s1")],
            text_chunks("Owls ", "are ", "birds."),
        ]
    )
    sub = Agent(sub_client, name="Researcher", tools=[lookup])
    parent_client = ScriptedChatClient(
        [
            [call("Researcher", {"task": "tell me about owls"}, call_id="p1")],
            lambda messages, options: f"Summary: {messages[-1].contents[0].result}",
        ]
    )
    parent = Agent(
        parent_client, name="Boss", tools=[sub.as_tool(stream_callback=collector(sink))]
    )

    if stream:
        parent_stream = parent.run("owls?", stream=True)
        async for update in parent_stream:
            sink.append(("parent", update))
        response = await parent_stream.get_final_response()
    else:
        response = await parent.run("owls?")

    sub_updates = [u for who, u in sink if who == "sub"]
    assert [u.text for u in sub_updates] == ["", "", "Owls ", "are ", "birds."]
    assert [u.role for u in sub_updates] == [
        "assistant",
        "tool",
        "assistant",
        "assistant",
        "assistant",
    ]
    assert sub_updates[0].contents[0].name == "lookup"
    assert sub_updates[1].contents[0].result == "facts about owls"
    assert {u.agent_id for u in sub_updates} == {sub.id}
    assert AgentResponse.from_updates(sub_updates).text == "Owls are birds."
    if stream:  # the sub-run's updates arrive before the parent's tool message
        order = [(who, u.role) for who, u in sink]
        assert order.index(("parent", "tool")) > max(
            i for i, (who, _) in enumerate(order) if who == "sub"
        )
        assert order.index(("parent", "assistant")) < order.index(("sub", "assistant"))

    tool_message = response.messages[1]
    assert tool_message.role == "tool"
    assert tool_message.contents[0].call_id == "p1"
    assert tool_message.contents[0].result == "Owls are birds."
    assert response.text == "Summary: Owls are birds."
    assert parent_client.requests[0].options["tools"][0].name == "Researcher"
    assert sub_client.requests[0].texts == ["user: tell me about owls"]


async def test_sub_agent_approval_request_surfaces_in_the_parent(stream: bool) -> None:
    """AG-8: a sub-agent whose tool needs approval makes the tool raise
    UserInputRequiredError; the parent returns the call unexecuted, flagged as a
    user-input request, with the sub-agent's approval request in user_input_requests."""
    ran: list[int] = []

    @tool(approval_mode="always_require")
    def transfer(amount: int) -> str:
        """Move money."""
        ran.append(amount)
        return "moved"

    sub = Agent(
        ScriptedChatClient([[call("transfer", {"amount": 5}, call_id="s1")]]),
        name="Banker",
        tools=[transfer],
    )
    parent_client = ScriptedChatClient(
        [
            [
                call("Banker", {"task": "pay 5"}, call_id="p1"),
                call("Banker", {"task": "x"}, call_id="p2"),
            ]
        ]
    )
    parent = Agent(parent_client, tools=[sub.as_tool()])
    sub.client.steps.append([call("transfer", {"amount": 7}, call_id="s2")])  # for p2

    response = await run(parent, "pay", stream=stream)

    assert ran == []
    assert len(parent_client.requests) == 1  # no further model call after the pause
    requests = response.user_input_requests
    kinds = [(c.type, c.call_id or c.id) for c in requests]
    assert ("function_call", "p1") in kinds
    assert ("function_call", "p2") in kinds
    approvals = [c for c in requests if c.type == "function_approval_request"]
    assert sorted(a.function_call.name for a in approvals) == ["transfer", "transfer"]
    assert sorted(a.function_call.parse_arguments()["amount"] for a in approvals) == [
        5,
        7,
    ]
    calls = [c for c in response.messages[0].contents if c.type == "function_call"]
    assert all(c.user_input_request for c in calls)
    assert not any(
        c.type == "function_result" for m in response.messages for c in m.contents
    )


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await modes.run(target, *args, stream=stream, **kwargs)
    return await modes.get_response(target, *args, stream=stream, **kwargs)


async def test_as_tool_propagates_the_session(stream):
    """AG-16: `as_tool(propagate_session=True)`: the sub-agent's run shares the calling
    run's session state; without it the sub-agent sees none of it."""
    seen = []

    @tool
    def remember(ctx: FunctionInvocationContext):
        seen.append(ctx.session.state.get("user") if ctx.session is not None else None)
        return "ok"

    for propagate in (True, False):
        seen.clear()

        inner = Agent(
            ScriptedChatClient([reply(call("remember")), reply("inner done")]),
            name="inner",
            tools=[remember],
        )
        outer = Agent(
            ScriptedChatClient(
                [reply(call("inner", {"task": "go"})), reply("outer done")]
            ),
            tools=[inner.as_tool(propagate_session=propagate)],
        )
        session = AgentSession()
        session.state["user"] = "ada"
        response = await run_or_get_response(
            outer, "start", stream=stream, session=session
        )
        assert response.text == "outer done"
        assert seen == (["ada"] if propagate else [None])


class GeneratorAgent(BaseAgent):
    """A custom agent whose streaming run is a plain async generator (allowed by the
    protocol)."""

    def __init__(self):
        super().__init__(name="echoer", description="Echoes the task.")
        self.received = []

    def run(self, messages=None, *, stream=False, thread=None, **kwargs):
        self.received.append(kwargs)

        async def updates():
            yield AgentResponseUpdate(["echo: "], "assistant")
            yield AgentResponseUpdate([str(messages)], "assistant")

        if stream:
            return updates()

        async def whole():
            return AgentResponse([Message("assistant", [f"echo: {messages}"])])

        return whole()


async def test_as_tool_accepts_a_plain_async_generator(stream):
    """AG-8: a custom agent's run(stream=True) may be a plain async generator; the tool
    returns its text and feeds every update to the callback."""
    inner = GeneratorAgent()
    seen = []
    echo = inner.as_tool(stream_callback=seen.append)
    client = ScriptedChatClient(
        [reply(call("echoer", {"task": "hi"}, call_id="e1")), "ok"]
    )
    response = await run(Agent(client, tools=[echo]), "go", stream=stream)
    result = next(
        c for m in response.messages for c in m.contents if c.type == "function_result"
    )
    assert result.result == "echo: hi"
    assert [u.text for u in seen] == ["echo: ", "hi"]


async def test_as_tool_forwards_function_invocation_kwargs(stream):
    """AG-8, AG-2: the outer call's FunctionInvocationContext.kwargs reach the inner
    agent's run as function_invocation_kwargs, and from there its tools."""
    seen = []

    @tool
    def whoami(ctx: FunctionInvocationContext):
        """Who is asking."""
        seen.append(ctx.kwargs.get("user_id"))
        return "you"

    inner_client = ScriptedChatClient(
        [reply(call("whoami", {}, call_id="i1")), "inner done"]
    )
    inner = Agent(inner_client, name="inner", tools=[whoami])
    outer_client = ScriptedChatClient(
        [reply(call("inner", {"task": "who"}, call_id="o1")), "outer done"]
    )
    outer = Agent(outer_client, tools=[inner.as_tool()])
    response = await run(
        outer, "go", stream=stream, function_invocation_kwargs={"user_id": "u1"}
    )
    assert response.text == "outer done"
    assert seen == ["u1"]
