"""Agents: the protocol, laziness, both modes, options assembly, context providers and
author names (spec/agent.md). `as_tool` is in test_as_tool.py, one route for every
client in test_route.py, the life cycle in test_life_cycle.py."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any, Generic, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentContext,
    AgentMiddleware,
    AgentResponse,
    AgentResponseUpdate,
    AgentThread,
    BaseAgent,
    BaseChatClient,
    ChatContext,
    ChatOptions,
    ChatResponse,
    Content,
    Context,
    ContextProvider,
    FunctionInvocationContext,
    FunctionTool,
    Inbox,
    Message,
    MiddlewareException,
    RawAgent,
    ResponseStream,
    Role,
    SupportsAgentRun,
    UsageDetails,
    agent_middleware,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from tests._support.modes import run


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def echo(text: str) -> str:
    """Echo a text."""
    return text


# ---------------------------------------------------------------------------------------------
# AG-1: the protocol and the classes


class CustomAgent:
    """Seed 003's example: an agent that inherits nothing."""

    def __init__(self) -> None:
        self.id = "custom-agent-001"
        self.name = "Custom Agent"
        self.description = "A fully custom agent implementation"

    async def run(
        self, messages: Any = None, *, thread: Any = None, **kwargs: Any
    ) -> Any:
        return AgentResponse(messages=[], response_id="custom-response")

    def run_stream(
        self, messages: Any = None, *, thread: Any = None, **kwargs: Any
    ) -> Any:
        async def _stream() -> Any:
            yield AgentResponseUpdate()

        return _stream()

    def get_new_thread(self, **kwargs: Any) -> Any:
        return {"id": "custom-thread", "messages": []}


class NotAnAgent:
    """Everything of CustomAgent except get_new_thread."""

    def __init__(self) -> None:
        self.id = "x"
        self.name = None
        self.description = None

    async def run(
        self, messages: Any = None, *, thread: Any = None, **kwargs: Any
    ) -> Any:
        return AgentResponse()


async def test_seed_003_custom_agent_satisfies_the_protocol() -> None:
    """AG-1: seed 003's CustomAgent is a SupportsAgentRun without inheriting
    anything."""
    instance = CustomAgent()
    assert isinstance(instance, SupportsAgentRun)
    assert not isinstance(instance, BaseAgent)
    response = await instance.run("hi")
    assert response.response_id == "custom-response"


def test_object_without_get_new_thread_is_not_an_agent() -> None:
    """AG-1: an object missing get_new_thread is not an agent; one missing `id`
    neither."""
    assert not isinstance(NotAnAgent(), SupportsAgentRun)
    partial = CustomAgent()
    del partial.id
    assert not isinstance(partial, SupportsAgentRun)


def test_agents_are_agents_and_have_identity() -> None:
    """AG-1: RawAgent and Agent satisfy the protocol; `id` defaults to a fresh uuid."""
    a = Agent(ScriptedChatClient(), name="A", description="d")
    b = RawAgent(ScriptedChatClient())
    assert isinstance(a, SupportsAgentRun)
    assert isinstance(b, SupportsAgentRun)
    assert (a.name, a.description) == ("A", "d")
    assert len(a.id) == 32
    assert a.id != b.id
    assert Agent(ScriptedChatClient(), id="fixed").id == "fixed"
    assert isinstance(a.get_new_thread(), AgentThread)


@agent_middleware
async def passthrough_agent_mw(context: AgentContext, call_next: Any) -> None:
    await call_next()


async def test_raw_agent_rejects_agent_middleware() -> None:
    """AG-1: agent middleware given to a RawAgent, at construction or per run, is a
    MiddlewareException; chat middleware is accepted."""
    with pytest.raises(MiddlewareException, match="Agent"):
        RawAgent(ScriptedChatClient(), middleware=[passthrough_agent_mw])
    client = ScriptedChatClient(["ok"])
    raw = RawAgent(client)
    with pytest.raises(MiddlewareException):
        raw.run("hi", middleware=[passthrough_agent_mw])
    with pytest.raises(MiddlewareException):
        raw.run("hi", stream=True, middleware=[passthrough_agent_mw])
    assert client.requests == []

    seen: list[str] = []

    @chat_middleware
    async def chat(context: ChatContext, call_next: Any) -> None:
        seen.append("chat")
        await call_next()

    response = await RawAgent(client, middleware=[chat]).run("hi")
    assert response.text == "ok"
    assert seen == ["chat"]


@pytest.mark.parametrize("client", [object(), "client", None, lambda messages: None])
def test_a_non_client_is_a_type_error(client: Any) -> None:
    """AG-1: the client must satisfy SupportsChatGetResponse."""
    with pytest.raises(TypeError, match="SupportsChatGetResponse"):
        Agent(client)


async def test_agent_edges() -> None:
    """AG-1, AG-12, AG-8, AG-7: BaseAgent.run must be implemented; run_stream names
    run(stream=True); options must be a mapping; an agent-as-tool whose run returns a
    ChatResponse or something else; a client that returns no ChatResponse."""
    from minagent import BaseAgent

    with pytest.raises(NotImplementedError, match="must implement run"):
        BaseAgent(name="b").run("x")
    agent = Agent(ScriptedChatClient([]))
    with pytest.raises(TypeError, match=r"run\(\.\.\., stream=True\)"):
        agent.run_stream("x")
    with pytest.raises(TypeError, match="options must be a dict"):
        agent.run("x", options=["bad"])  # type: ignore[arg-type]

    class ChatAnswering(BaseAgent):
        def __init__(self, answer: Any) -> None:
            super().__init__(name="inner")
            self.answer = answer

        def run(
            self,
            messages: Any = None,
            *,
            stream: bool = False,
            thread: Any = None,
            **kwargs: Any,
        ) -> Any:
            async def whole() -> Any:
                return self.answer

            return whole()

    as_chat = ChatAnswering(
        ChatResponse([Message("assistant", ["from chat"])])
    ).as_tool()
    assert await as_chat.invoke({"task": "t"}, skip_parsing=True) == "from chat"
    with pytest.raises(TypeError, match="async iterable of updates or a response"):
        await ChatAnswering(42).as_tool().invoke({"task": "t"})

    class NotAChatResponse(ScriptedChatClient):
        def get_response(
            self, messages: Any, *, stream: bool = False, **kwargs: Any
        ) -> Any:
            async def answer() -> str:
                return "text"

            return answer()

    with pytest.raises(TypeError, match="not a ChatResponse"):
        await Agent(NotAChatResponse([])).run("x")


# ---------------------------------------------------------------------------------------------
# AG-2: the run call


async def test_run_returns_awaitable_or_stream_synchronously() -> None:
    """AG-2: messages are normalised; non-streaming returns an awaitable of
    AgentResponse;
    stream=True returns a ResponseStream at once."""
    client = ScriptedChatClient(["one", text_chunks("tw", "o")])
    agent = Agent(client)
    pending = agent.run(["a", Message("user", ["b"])])
    assert not isinstance(pending, ResponseStream)
    response = await pending
    assert isinstance(response, AgentResponse)
    assert response.text == "one"
    assert client.requests[0].texts == ["user: a", "user: b"]

    stream = agent.run("c", stream=True)
    assert isinstance(stream, ResponseStream)
    texts = [update.text async for update in stream]
    assert texts == ["tw", "o"]
    final = await stream.get_final_response()
    assert isinstance(final, AgentResponse)
    assert final.text == "two"


async def test_run_level_middleware_inbox_and_kwargs(stream: bool) -> None:
    """AG-2: run-level agent middleware runs inside the agent's own; run-level chat and
    function middleware run after the client's and the agent's; the inbox reaches the
    loop; kwargs reach the tools' FunctionInvocationContext.kwargs and never the model
    call."""
    log: list[str] = []

    def agent_mw(tag: str) -> Any:
        @agent_middleware
        async def mw(context: AgentContext, call_next: Any) -> None:
            log.append(f"{tag}>")
            await call_next()
            log.append(f"{tag}<")

        return mw

    def chat_mw(tag: str) -> Any:
        @chat_middleware
        async def mw(context: ChatContext, call_next: Any) -> None:
            log.append(tag)
            await call_next()

        return mw

    def function_mw(tag: str) -> Any:
        @function_middleware
        async def mw(context: FunctionInvocationContext, call_next: Any) -> None:
            log.append(f"{tag}:{context.kwargs.get('user_token')}")
            await call_next()

        return mw

    seen_kwargs: list[dict[str, Any]] = []

    @tool
    def probe(ctx: FunctionInvocationContext) -> str:
        """Report the run's kwargs."""
        seen_kwargs.append(dict(ctx.kwargs))
        return "probed"

    client = ScriptedChatClient(
        [[call("probe", {}, call_id="p1")], "done"], middleware=[chat_mw("client-chat")]
    )
    agent = Agent(
        client,
        tools=[probe],
        middleware=[agent_mw("agent"), chat_mw("agent-chat"), function_mw("agent-fn")],
    )
    inbox = Inbox()
    inbox.put("steer")
    response = await run(
        agent,
        "go",
        stream=stream,
        middleware=[agent_mw("run"), chat_mw("run-chat"), function_mw("run-fn")],
        inbox=inbox,
        user_token="secret",
    )
    assert (response.messages[0].role, response.messages[0].text) == ("user", "steer")
    assert response.messages[-1].text == "done"
    agent_log = [entry for entry in log if entry.endswith((">", "<"))]
    assert agent_log == ["agent>", "run>", "run<", "agent<"]
    chat_log = [entry for entry in log if entry.endswith("chat")]
    assert chat_log == ["client-chat", "agent-chat", "run-chat"] * 2
    assert [e for e in log if "-fn:" in e] == ["agent-fn:secret", "run-fn:secret"]
    assert seen_kwargs == [{"user_token": "secret"}]
    # AG-2: run kwargs never reach the model call
    assert client.requests[0].kwargs == {}
    assert client.requests[0].texts == ["user: go", "user: steer"]


@tool
def get_weather(location):
    """Get the weather for a location."""
    return f"sunny in {location}"


_calls = st.lists(st.sampled_from(["weather", "noted", "text"]), min_size=0, max_size=3)


async def test_function_invocation_kwargs_reach_tools_not_the_model(stream):
    """AG-2, LP-25: function_invocation_kwargs reach ctx.kwargs of a tool that declares
    a FunctionInvocationContext parameter (not in its schema); plain run kwargs too;
    client_kwargs reach the model call only."""
    seen = []

    @tool
    def get_user_weather(location, ctx: FunctionInvocationContext):
        """Weather for the calling user."""
        seen.append(dict(ctx.kwargs))
        return f"weather for {ctx.kwargs['user_id']}"

    assert "ctx" not in get_user_weather.parameters["properties"]
    client = ScriptedChatClient(
        [reply(call("get_user_weather", {"location": "x"})), "done"]
    )
    agent = Agent(client, tools=[get_user_weather])
    await run(
        agent,
        "go",
        stream=stream,
        function_invocation_kwargs={"user_id": "u1"},
        client_kwargs={"trace": "t"},
        tenant="acme",
    )
    assert seen == [{"tenant": "acme", "user_id": "u1"}]
    assert [r.kwargs for r in client.requests] == [{"trace": "t"}, {"trace": "t"}]


async def test_agent_middleware_sees_and_changes_the_three_kinds_of_kwargs():
    """AG-2, MW-11: AgentContext carries kwargs, function_invocation_kwargs and
    client_kwargs."""
    seen = []

    class Stamp(AgentMiddleware):
        async def process(self, context, next):
            seen.append(
                (
                    dict(context.kwargs),
                    dict(context.function_invocation_kwargs),
                    dict(context.client_kwargs),
                )
            )
            context.function_invocation_kwargs["user_id"] = "changed"
            await next(context)

    @tool
    def probe(ctx: FunctionInvocationContext):
        """Probe."""
        seen.append(ctx.kwargs["user_id"])
        return "ok"

    client = ScriptedChatClient([reply(call("probe", {})), "done"])
    agent = Agent(client, tools=[probe], middleware=[Stamp()])
    await agent.run(
        "go", a=1, function_invocation_kwargs={"user_id": "u"}, client_kwargs={"c": 2}
    )
    assert seen == [({"a": 1}, {"user_id": "u"}, {"c": 2}), "changed"]


# ---------------------------------------------------------------------------------------------
# AG-3: streaming is lazy


class LoggingProvider(ContextProvider):
    def __init__(self, log: list[str], tag: str = "provider", **context: Any) -> None:
        self.log = log
        self.tag = tag
        self.context = context
        self.calls: list[dict[str, Any]] = []

    async def invoking(self, messages: Any, **kwargs: Any) -> Context:
        self.log.append(f"{self.tag}.invoking")
        self.calls.append({"invoking": list(messages), **kwargs})
        return Context(**self.context)

    async def invoked(
        self, request_messages: Any, response_messages: Any, **kwargs: Any
    ) -> None:
        self.log.append(f"{self.tag}.invoked")
        self.calls.append(
            {
                "request": list(request_messages),
                "response": list(response_messages),
                **kwargs,
            }
        )


def lazy_setup() -> tuple[Agent, ScriptedChatClient, list[str]]:
    log: list[str] = []

    @agent_middleware
    async def mw(context: AgentContext, call_next: Any) -> None:
        log.append("agent middleware")
        await call_next()

    client = ScriptedChatClient([text_chunks("lazy ", "answer")])
    agent = Agent(
        client,
        "be lazy",
        middleware=[mw],
        context_providers=[LoggingProvider(log, instructions="p")],
    )
    return agent, client, log


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


class TestStreamingIsLazy:
    """AG-3: run(stream=True) runs no agent middleware, no context provider and no
    client call until the stream is iterated, awaited or finalised."""

    async def test_iterated(self) -> None:
        agent, client, log = lazy_setup()
        stream = agent.run("hi", stream=True)
        await _settle()
        assert log == []
        assert client.requests == []
        first = await anext(aiter(stream))
        assert first.text == "lazy "
        assert log == ["agent middleware", "provider.invoking"]
        assert len(client.requests) == 1
        rest = [u.text async for u in stream]
        assert rest == ["answer"]
        assert log[-1] == "provider.invoked"

    async def test_awaited(self) -> None:
        agent, client, log = lazy_setup()
        stream = agent.run("hi", stream=True)
        await _settle()
        assert (log, client.requests) == ([], [])
        assert await stream is stream
        assert log[0] == "agent middleware"
        final = await stream.get_final_response()
        assert final.text == "lazy answer"
        assert log == ["agent middleware", "provider.invoking", "provider.invoked"]
        assert len(client.requests) == 1

    async def test_finalised(self) -> None:
        agent, client, log = lazy_setup()
        stream = agent.run("hi", stream=True)
        await _settle()
        assert (log, client.requests) == ([], [])
        final = await stream.get_final_response()
        assert final.text == "lazy answer"
        assert log == ["agent middleware", "provider.invoking", "provider.invoked"]
        assert client.requests[0].options["instructions"] == "be lazy\np"

    async def test_never_used_stream_does_nothing(self) -> None:
        agent, client, log = lazy_setup()
        stream = agent.run("hi", stream=True)
        await stream.aclose()
        await _settle()
        assert (log, client.requests) == ([], [])
        assert client.unconsumed  # the script step is still there

    async def test_raw_agent_stream_is_lazy_too(self) -> None:
        log: list[str] = []
        client = ScriptedChatClient(["x"])
        raw = RawAgent(client, context_providers=LoggingProvider(log))
        stream = raw.run("hi", stream=True)
        await _settle()
        assert (log, client.requests) == ([], [])
        assert (await stream.get_final_response()).text == "x"
        assert log == ["provider.invoking", "provider.invoked"]


# ---------------------------------------------------------------------------------------------
# AG-4: both modes, update identity, agent middleware edits


def tool_script() -> list[Any]:
    usage = UsageDetails(input_token_count=3, output_token_count=4, total_token_count=7)
    return [
        reply(
            "Let me add. ",
            call("add", {"a": 1, "b": 2}, call_id="c1"),
            call("echo", {"text": "hi"}, call_id="c2"),
            usage=usage,
        ),
        text_chunks("The sum ", "is ", "3.", usage=usage),
    ]


def counting_middleware(counts: dict[str, int]) -> list[Any]:
    @agent_middleware
    async def a(context: AgentContext, call_next: Any) -> None:
        counts["agent"] = counts.get("agent", 0) + 1
        await call_next()

    @chat_middleware
    async def c(context: ChatContext, call_next: Any) -> None:
        counts["chat"] = counts.get("chat", 0) + 1
        await call_next()

    @function_middleware
    async def f(context: FunctionInvocationContext, call_next: Any) -> None:
        counts["function"] = counts.get("function", 0) + 1
        await call_next()

    return [a, c, f]


async def test_streaming_and_non_streaming_final_responses_are_equal() -> None:
    """AG-4: for the same script, with tools and middleware of every layer, the
    streaming final response equals the non-streaming response, and the same middleware
    ran as often."""
    responses: list[AgentResponse] = []
    counts: list[dict[str, int]] = []
    for stream in (False, True):
        count: dict[str, int] = {}
        agent = Agent(
            ScriptedChatClient(tool_script()),
            "instr",
            id="agent-1",
            name="Adder",
            tools=[add, echo],
            middleware=counting_middleware(count),
        )
        responses.append(await run(agent, "what is 1+2?", stream=stream))
        counts.append(count)
    plain, streamed = responses
    assert streamed == plain
    # TY-6: an agent response's texts, no separator
    assert plain.text == "Let me add. The sum is 3."
    assert [m.role for m in plain.messages] == ["assistant", "tool", "assistant"]
    assert [c.result for c in plain.messages[1].contents] == [3, "hi"]
    assert plain.usage_details == UsageDetails(
        input_token_count=6, output_token_count=8, total_token_count=14
    )
    assert plain.agent_id == "agent-1"
    assert counts[0] == counts[1] == {"agent": 1, "chat": 2, "function": 2}


async def test_streamed_updates_carry_agent_id_and_author_name() -> None:
    """AG-4: every update carries the agent's id; assistant updates carry its name."""
    agent = Agent(ScriptedChatClient(tool_script()), name="Adder", tools=[add, echo])
    stream = agent.run("what is 1+2?", stream=True)
    updates = [u async for u in stream]
    assert updates
    assert {u.agent_id for u in updates} == {agent.id}
    assistant = [u for u in updates if u.role == "assistant"]
    assert len(assistant) >= 4
    assert {u.author_name for u in assistant} == {"Adder"}
    tool_updates = [u for u in updates if u.role == "tool"]
    assert len(tool_updates) == 1
    assert tool_updates[0].author_name is None
    assert "".join(u.text for u in updates) == "Let me add. The sum is 3."


async def test_agent_middleware_edits_reach_the_client(stream: bool) -> None:
    """AG-4: agent middleware may change messages, thread, options, tools and kwargs
    before call_next, and the client receives the changed values."""
    other_thread = AgentThread()

    @agent_middleware
    async def edit(context: AgentContext, call_next: Any) -> None:
        context.messages.append(Message("user", ["added by middleware"]))
        context.options["temperature"] = 0.25
        context.options["instructions"] = "from middleware"
        context.tools = [echo]
        context.kwargs["trace"] = "t-1"
        context.thread = other_thread
        await call_next()

    client = ScriptedChatClient(["edited"])
    agent = Agent(client, "agent", tools=[add], middleware=[edit])
    original = agent.get_new_thread()
    response = await run(agent, "original", stream=stream, thread=original)
    assert response.text == "edited"
    request = client.requests[0]
    assert request.texts == ["user: original", "user: added by middleware"]
    assert request.options["temperature"] == 0.25
    assert request.options["instructions"] == "agent\nfrom middleware"
    assert [t.name for t in request.options["tools"]] == ["add", "echo"]
    # AG-2: run kwargs go to the tools, not to the model call
    assert request.kwargs == {}
    assert original.messages == []
    assert [m.text for m in other_thread.messages] == [
        "original",
        "added by middleware",
        "edited",
    ]


# ---------------------------------------------------------------------------------------------
# AG-5: options assembly


def named_tool(name: str) -> FunctionTool:
    return FunctionTool(name=name, func=lambda: name, parameters={"type": "object"})


async def test_options_assembly_table(stream: bool) -> None:
    """AG-5: default_options (with the constructor's instructions= and tools= replacing
    theirs), then the providers' output, then the run's options and tools=: instructions
    joined in that order, tools once each in that order, metadata merged, tool_choice
    "auto" by default."""
    t_default, t_ctor, t_provider, t_run_option, t_run = (
        named_tool(n)
        for n in ("t_default", "t_ctor", "t_provider", "t_run_option", "t_run")
    )
    client = ScriptedChatClient(["ok"])
    provider = LoggingProvider([], instructions="provider", tools=[t_provider, t_ctor])
    agent = Agent(
        client,
        "agent",
        tools=[t_ctor],
        default_options={
            "instructions": "replaced by instructions=",
            "tools": [t_default],
            "temperature": 0.1,
            "model": "m-default",
            "metadata": {"team": "a", "shared": "default"},
        },
        context_providers=[provider],
    )
    await run(
        agent,
        "hi",
        stream=stream,
        options={
            "instructions": "run",
            "tools": [t_run_option, t_ctor],
            "model": "m-run",
            "metadata": {"shared": "run", "request": "r"},
        },
        tools=[t_run, t_provider],
    )
    options = client.requests[0].options
    assert options["instructions"] == "agent\nprovider\nrun"
    assert options["tools"] == [t_ctor, t_provider, t_run_option, t_run]
    assert options["tool_choice"] == "auto"
    assert options["temperature"] == 0.1
    assert options["model"] == "m-run"
    assert options["metadata"] == {"team": "a", "shared": "run", "request": "r"}
    # the agent's own defaults are not changed by a run
    assert agent.default_options["instructions"] == "agent"
    assert agent.default_options["tools"] == [t_ctor]
    assert agent.default_options["metadata"] == {"team": "a", "shared": "default"}


@pytest.mark.parametrize("where", ["default", "run"])
async def test_explicit_tool_choice_is_kept(where: str) -> None:
    """AG-5: tool_choice defaults to "auto" only when unset; an explicit one is kept."""
    client = ScriptedChatClient(["ok"])
    defaults = {"tool_choice": "none"} if where == "default" else {}
    agent = Agent(client, tools=[add], default_options=defaults)
    await agent.run("hi", options={"tool_choice": "none"} if where == "run" else None)
    assert client.requests[0].options["tool_choice"] == "none"


async def test_no_tools_no_tool_choice() -> None:
    """AG-5: without tools, no tool_choice is added."""
    client = ScriptedChatClient(["ok"])
    await Agent(client, "x").run("hi")
    assert "tool_choice" not in client.requests[0].options
    assert "tools" not in client.requests[0].options


async def test_same_function_at_several_levels_is_one_tool() -> None:
    """AG-5: one plain function given to the agent, a provider and the run is one
    tool."""
    client = ScriptedChatClient([[call("add", {"a": 2, "b": 2}, call_id="c1")], "4"])
    provider = LoggingProvider([], tools=[add])
    agent = Agent(client, tools=[add, add], context_providers=[provider])
    response = await agent.run("2+2", tools=[add], options={"tools": [add]})
    assert response.text == "4"
    tools = client.requests[0].options["tools"]
    assert [t.name for t in tools] == ["add"]
    assert tools[0] is agent.default_options["tools"][0]
    assert response.messages[1].contents[0].result == 4


@pytest.mark.parametrize("where", ["run tools", "run options", "provider"])
async def test_duplicate_tool_name_with_a_different_object_is_an_error(
    where: str,
) -> None:
    """AG-5: a different tool object under a name already present is a ValueError naming
    it."""
    impostor = named_tool("add")
    client = ScriptedChatClient(["never"])
    providers = [LoggingProvider([], tools=[impostor])] if where == "provider" else []
    agent = Agent(client, tools=[add], context_providers=providers)
    kwargs: dict[str, Any] = {}
    if where == "run tools":
        kwargs["tools"] = [impostor]
    elif where == "run options":
        kwargs["options"] = {"tools": [impostor]}
    with pytest.raises(ValueError, match="'add'"):
        await agent.run("hi", **kwargs)
    assert client.requests == []
    with pytest.raises(ValueError, match="'add'"):
        Agent(client, tools=[add, impostor])


async def test_messages_sent_are_history_then_provider_messages_then_input() -> None:
    """AG-5: the messages sent are the thread's history, the providers' messages in
    provider order, then the run's input; provider messages are not stored in the
    thread."""
    client = ScriptedChatClient(["first", "second"])
    agent = Agent(
        client,
        context_providers=[
            LoggingProvider([], "p1", messages=[Message("system", ["memory 1"])]),
            LoggingProvider([], "p2", messages=[Message("user", ["memory 2"])]),
        ],
    )
    thread = agent.get_new_thread()
    await agent.run("one", thread=thread)
    await agent.run(
        [Message("user", ["two"]), Message("user", ["two b"])], thread=thread
    )
    assert client.requests[1].texts == [
        "user: one",
        "assistant: first",
        "system: memory 1",
        "user: memory 2",
        "user: two",
        "user: two b",
    ]
    assert [m.text for m in thread.messages] == [
        "one",
        "first",
        "two",
        "two b",
        "second",
    ]


async def test_no_instructions_key_without_instructions(stream):
    """AG-5: when nobody gave instructions, the options reaching the client have no
    `instructions` key (not even ""); only keys someone set reach the client."""
    client = ScriptedChatClient(["hi"])
    agent = Agent(client, default_options={"temperature": 0.1})
    await run(agent, "hello", stream=stream)
    assert client.requests[0].options == {"temperature": 0.1}


# ---------------------------------------------------------------------------------------------
# AG-6: context providers


async def test_providers_run_in_order_and_are_told_in_reverse(stream: bool) -> None:
    """AG-6: invoking runs per provider in registration order before the client call;
    invoked runs in reverse order after it, with the run's input and the response
    messages; both get
    thread= and agent=."""
    log: list[str] = []
    first, second = LoggingProvider(log, "first"), LoggingProvider(log, "second")

    @chat_middleware
    async def model_call(context: ChatContext, call_next: Any) -> None:
        log.append("model")
        await call_next()

    client = ScriptedChatClient([[call("add", {"a": 1, "b": 1}, call_id="c1")], "two"])
    agent = Agent(
        client, tools=[add], context_providers=[first, second], middleware=[model_call]
    )
    thread = agent.get_new_thread()
    response = await run(agent, "1+1", stream=stream, thread=thread)
    assert log == [
        "first.invoking",
        "second.invoking",
        "model",
        "model",
        "second.invoked",
        "first.invoked",
    ]
    for provider in (first, second):
        invoking, invoked = provider.calls
        assert [m.text for m in invoking["invoking"]] == ["1+1"]
        assert invoking["thread"] is thread
        assert invoking["agent"] is agent
        assert [m.text for m in invoked["request"]] == ["1+1"]
        assert invoked["response"] == response.messages
        assert [m.role for m in invoked["response"]] == [
            "assistant",
            "tool",
            "assistant",
        ]
        assert invoked["thread"] is thread
        assert invoked["agent"] is agent


class FailingProvider(ContextProvider):
    def __init__(self, when: str) -> None:
        self.when = when

    async def invoking(self, messages: Any, **kwargs: Any) -> Context:
        if self.when == "invoking":
            raise RuntimeError("provider failed in invoking")
        return Context()

    async def invoked(
        self, request_messages: Any, response_messages: Any, **kwargs: Any
    ) -> None:
        if self.when == "invoked":
            raise RuntimeError("provider failed in invoked")


@pytest.mark.parametrize("when", ["invoking", "invoked"])
async def test_a_failing_provider_fails_the_run_and_leaves_the_thread(
    stream: bool, when: str
) -> None:
    """AG-6, TH-3: a provider that raises fails the run, and the thread is unchanged."""
    client = ScriptedChatClient(["first", "second"])
    agent = Agent(client)
    thread = agent.get_new_thread()
    await agent.run("before", thread=thread)
    before = thread.serialize()
    agent.context_providers.append(FailingProvider(when))
    with pytest.raises(RuntimeError, match=f"provider failed in {when}"):
        await run(agent, "during", stream=stream, thread=thread)
    assert thread.serialize() == before
    assert len(client.requests) == (1 if when == "invoking" else 2)


# ---------------------------------------------------------------------------------------------
# AG-7: author names


async def test_assistant_messages_get_the_agent_name(stream: bool) -> None:
    """AG-7: assistant messages without author_name get the agent's name; others are
    kept."""
    script = [
        [call("add", {"a": 1, "b": 1}, call_id="c1")],
        ChatResponse([Message("assistant", ["two"], author_name="Specialist")]),
    ]
    named = Agent(ScriptedChatClient(script), name="Bot", tools=[add])
    response = await run(named, "1+1", stream=stream)
    assert [(m.role, m.author_name) for m in response.messages] == [
        ("assistant", "Bot"),
        ("tool", None),
        ("assistant", "Specialist"),
    ]
    anonymous = Agent(ScriptedChatClient(["plain"]))
    response = await run(anonymous, "hi", stream=stream)
    assert [m.author_name for m in response.messages] == [None]


async def test_input_messages_keep_their_author() -> None:
    """AG-7: only the response's assistant messages are named; the input is not
    touched."""
    agent = Agent(ScriptedChatClient(["hello"]), name="Bot")
    thread = agent.get_new_thread()
    user = Message("user", ["hi"])
    await agent.run(user, thread=thread)
    assert user.author_name is None
    assert [m.author_name for m in thread.messages] == [None, "Bot"]


async def test_a_shared_provider_message_is_not_renamed(stream):
    """AG-7: the agent's name goes on a copy; a response shared by two agents keeps its
    message."""
    shared = ChatResponse([Message("assistant", ["hello"])])
    first = Agent(ScriptedChatClient([shared]), name="first")
    second = Agent(ScriptedChatClient([shared]), name="second")
    one = await run(first, "hi", stream=stream)
    two = await run(second, "hi", stream=stream)
    assert shared.messages[0].author_name is None
    assert one.messages[-1].author_name == "first"
    assert two.messages[-1].author_name == "second"


@settings(max_examples=30, deadline=None)
@given(
    turns=st.lists(_calls, min_size=1, max_size=3),
    stream=st.booleans(),
    with_thread=st.booleans(),
)
def test_a_run_mutates_none_of_its_inputs(turns, stream, with_thread):
    """AG-7, OP-7, SO-7: a run with tools, middleware of every layer, a thread and a
    structured output format, in either mode, leaves unchanged the caller's messages and
    options (the schema dict included), the provider's responses and the tools' return
    values (compared by value)."""
    returned = {"kind": "note", "tags": ["a", "b"]}

    @tool
    def noted(text):
        """Take a note."""
        return returned

    steps = []
    for i, turn in enumerate(turns):
        contents = []
        for j, kind in enumerate(turn):
            if kind == "weather":
                contents.append(
                    call("get_weather", {"location": f"city{i}"}, call_id=f"w{i}{j}")
                )
            elif kind == "noted":
                contents.append(call("noted", {"text": "x"}, call_id=f"n{i}{j}"))
            else:
                contents.append(Content.from_text(f"text {i}{j}"))
        steps.append(
            ChatResponse(
                [Message("assistant", contents or ["..."])],
                usage_details=UsageDetails(1, 1),
            )
        )
    steps.append(ChatResponse([Message("assistant", ["done"])]))
    provider_before = [copy.deepcopy(s.to_dict()) for s in steps]

    @chat_middleware
    async def edit_chat(context, call_next):
        context.options["temperature"] = 0.5
        context.messages.append(Message("user", ["extra"]))
        await call_next()

    @function_middleware
    async def edit_function(context, call_next):
        context.kwargs["seen"] = True
        await call_next()

    messages = [Message("user", ["question"]), Message(Role.USER, text="more")]
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    options = {
        "metadata": {"k": "v"},
        "tools": [noted],
        "temperature": 0.1,
        "response_format": schema,
    }
    before = (
        [m.to_dict() for m in messages],
        json.dumps(options["metadata"]),
        list(options["tools"]),
    )
    schema_before = json.dumps(schema, sort_keys=True)
    client = ScriptedChatClient(
        steps, function_invocation_configuration={"max_iterations": 10}
    )
    agent = Agent(
        client, name="bot", tools=[get_weather], middleware=[edit_chat, edit_function]
    )
    thread = agent.get_new_thread() if with_thread else None

    async def go():
        return await run(
            agent, messages, stream=stream, options=options, thread=thread, tenant="u"
        )

    response = asyncio.run(go())
    assert response.text
    assert [m.to_dict() for m in messages] == before[0]
    assert json.dumps(options["metadata"]) == before[1]
    assert options["tools"] == before[2]
    assert options["temperature"] == 0.1
    assert set(options) == {"metadata", "tools", "temperature", "response_format"}
    assert json.dumps(schema, sort_keys=True) == schema_before
    assert [s.to_dict() for s in steps] == provider_before
    assert returned == {"kind": "note", "tags": ["a", "b"]}


# ---------------------------------------------------------------------------------------------
# AG-12, AG-60: what upstream's code passes and writes


async def test_get_response_rejects_options_that_are_not_a_mapping() -> None:
    """AG-12, LP-25: options must be a mapping, also for a client called directly."""
    with pytest.raises(TypeError, match="options must be a dict"):
        await ScriptedChatClient(["x"]).get_response("hi", options=["temperature"])  # type: ignore[arg-type]


OptionsT = TypeVar("OptionsT")


def test_agent_generics_are_subscriptable() -> None:
    """AG-60: ``Agent[OptionsT]`` and friends are the classes themselves; subclasses
    written for upstream (generic in their options) work."""
    assert Agent[ChatOptions] is Agent
    assert RawAgent[dict[str, Any]] is RawAgent
    assert BaseAgent[Any] is BaseAgent

    class MyAgent(Agent[OptionsT], Generic[OptionsT]):
        pass

    agent: MyAgent[ChatOptions] = MyAgent(ScriptedChatClient(["hi"]), name="mine")
    assert isinstance(agent, Agent)
    assert agent.name == "mine"


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def test_client_as_agent_builds_an_agent():
    """AG-11: client.as_agent(**kwargs) is Agent(client, **kwargs)."""
    client = ScriptedChatClient(["ok"])
    agent = client.as_agent(name="helper", instructions="Help.", tools=[get_weather])
    assert isinstance(agent, Agent)
    assert agent.client is client
    assert agent.name == "helper"
    await agent.run("hi")
    assert client.requests[0].options["instructions"] == "Help."
    assert isinstance(client, BaseChatClient)


@pytest.mark.parametrize(
    ("keyword", "hint"),
    [
        ("context_provider", "context_providers"),
        ("context_providers", "context_providers"),
        ("chat_options", "options="),
        ("additional_function_arguments", "function_invocation_kwargs"),
        ("temperature", "options="),
        ("tool_choice", "options="),
    ],
)
def test_upstream_run_spellings_are_rejected_with_the_minagent_spelling(keyword, hint):
    """AG-12: a keyword that upstream code passes and minagent does not take there is a
    TypeError naming it and what to write instead."""
    agent = Agent(ScriptedChatClient([]))
    with pytest.raises(TypeError, match=keyword) as raised:
        agent.run("hi", **{keyword: object()})
    assert hint in str(raised.value)


@pytest.mark.parametrize(
    ("keyword", "hint"),
    [("chat_client", "client"), ("context_provider", "context_providers")],
)
def test_upstream_constructor_spellings_are_rejected(keyword, hint):
    """AG-12: Agent(chat_client=...) and friends say what to write instead."""
    with pytest.raises(TypeError, match=hint):
        Agent(ScriptedChatClient([]), **{keyword: object()})
    with pytest.raises(TypeError, match="unexpected keyword argument 'nonsense'"):
        Agent(ScriptedChatClient([]), nonsense=1)
