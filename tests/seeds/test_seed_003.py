"""Seed 003 (in Chinese), "核心 Agent 架构分析" — the agent core's architecture — example by
example.

The seed quotes upstream code of an older release (`AgentProtocol`, `ChatAgent`,
`run_stream`, `ChatClientProtocol`, `chat_client`); the examples here are written in our
names (`SupportsAgentRun`, `Agent`, `run(..., stream=True)`, `SupportsChatGetResponse`,
`client`) and otherwise as the seed writes them: no annotations where the seed has none.
Section titles are quoted in the docstrings (with a translation).

Not here, because another issue builds them: MCP tools connected lazily in the agent's
exit stack and `as_mcp_server()` (issue 15) — their tests are written below and skipped.
"""

import gc
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentMiddleware,
    AgentResponse,
    AgentResponseUpdate,
    AgentThread,
    BaseAgent,
    ChatResponse,
    Context,
    ContextProvider,
    FunctionMiddleware,
    FunctionTool,
    Message,
    SupportsAgentRun,
    SupportsChatGetResponse,
    merge_options,
)
from minagent.testing import ScriptedChatClient, call, text_chunks
from tests._support.modes import run

ISSUE_15 = "needs issue 15: MCP tools (MCPStdioTool) and Agent.as_mcp_server()"
MCP_SERVER = Path(__file__).with_name("_mcp_weather_server.py")


def get_weather(location):
    """Get the weather for a location."""
    return f"It's sunny in {location}."


# ---------------------------------------------------------------------------------------------
# "AgentProtocol:协议驱动设计" (protocol-driven design) and "代码示例:自定义 Agent 无需继承"
# (a custom agent without inheritance).


# 来自 _agents.py:167-204 的示例, in our names (AgentProtocol -> SupportsAgentRun)
class CustomAgent:
    def __init__(self):
        self.id = "custom-agent-001"
        self.name = "Custom Agent"
        self.description = "A fully custom agent implementation"

    async def run(self, messages=None, *, thread=None, **kwargs):
        return AgentResponse(messages=[], response_id="custom-response")

    def run_stream(self, messages=None, *, thread=None, **kwargs):
        async def _stream():
            yield AgentResponseUpdate()

        return _stream()

    def get_new_thread(self, **kwargs):
        return {"id": "custom-thread", "messages": []}


async def test_custom_agent_without_inheritance_satisfies_protocol():
    """Seed 003, "代码示例:自定义 Agent 无需继承" (custom agent, no inheritance):

        # 自动满足协议 - 无需继承 AgentProtocol
        instance = CustomAgent()
        assert isinstance(instance, AgentProtocol) # True!

    with `SupportsAgentRun` for `AgentProtocol`; its `run` returns the `AgentResponse`
    it built. AG-1."""
    # 自动满足协议 - 无需继承 AgentProtocol (satisfies the protocol without inheriting)
    instance = CustomAgent()
    assert isinstance(instance, SupportsAgentRun)  # True!
    response = await instance.run("Hi")
    assert response.response_id == "custom-response"
    assert response.messages == []
    assert [u async for u in instance.run_stream("Hi")] == [AgentResponseUpdate()]
    assert not isinstance(object(), SupportsAgentRun)


# ---------------------------------------------------------------------------------------------
# "BaseAgent:基础能力层" (the base layer): identity, context providers, middleware.


def test_base_agent_identity():
    """Seed 003, "BaseAgent", the attribute table: `id` — "唯一标识符,自动生成 UUID" (unique id,
    a UUID generated automatically); `name` — the agent's name, used to attribute
    messages; `description`. AG-1."""
    first, second = BaseAgent(name="Planner", description="Plans trips"), BaseAgent()
    assert uuid.UUID(first.id)
    assert first.id != second.id
    assert (first.name, first.description) == ("Planner", "Plans trips")
    assert BaseAgent(id="fixed").id == "fixed"


class Memory(ContextProvider):
    def __init__(self):
        self.invoked_with = []

    async def invoking(self, messages, **kwargs):
        return Context(instructions="The user likes short answers.")

    async def invoked(self, request_messages, response_messages, **kwargs):
        self.invoked_with.append(
            ([m.text for m in request_messages], [m.text for m in response_messages])
        )


def test_context_provider_singular_keyword_names_plural():
    """Seed 003, "BaseAgent" signature: `context_provider: ContextProvider | None` (one
    provider). minagent's `Agent` takes `context_providers=[...]`; the singular keyword
    is an error that says so, never silently dropped. AG-12."""
    with pytest.raises(TypeError, match="context_providers"):
        Agent(client=ScriptedChatClient([]), context_provider=Memory())


async def test_context_provider_and_middleware_on_agent(stream):
    """Seed 003, "BaseAgent" attribute table: `context_provider` — "上下文提供者,用于动态注入上下文"
    (injects context dynamically), `middleware` — "中间件列表,用于拦截调用" (intercepts calls), and
    `name` — "用于消息归属标识" (attributes messages). AG-6, AG-7, MW-1."""
    seen = []

    class InterceptMiddleware(AgentMiddleware):
        async def process(self, context, call_next):
            seen.append("intercepted")
            await call_next(context)

    memory = Memory()
    client = ScriptedChatClient(["Short answer."])
    agent = Agent(
        client=client,
        name="Helper",
        context_providers=[memory],
        middleware=[InterceptMiddleware()],
    )
    response = await run(agent, "Tell me about Paris", stream=stream)
    assert seen == ["intercepted"]
    assert client.requests[0].options["instructions"] == "The user likes short answers."
    assert memory.invoked_with == [(["Tell me about Paris"], ["Short answer."])]
    assert response.messages[0].author_name == "Helper"


# ---------------------------------------------------------------------------------------------
# "as_tool() 方法:Agent → Tool 转换" (an agent as a tool).


async def test_as_tool_defaults(stream):
    """Seed 003, "as_tool() 方法": `as_tool(*, name=None, description=None,
    arg_name="task",
    arg_description=None, stream_callback=None)` — a tool with one string parameter `task`; the
    wrapper runs the agent with the input text and returns `.text`; "Agent 编排(Agent 调用
    Agent)" (agents calling agents). AG-8."""
    researcher_client = ScriptedChatClient(["Paris has 2.1 million inhabitants."])
    researcher = Agent(
        client=researcher_client, name="Research Agent", description="Finds facts"
    )
    research_tool = researcher.as_tool()
    assert isinstance(research_tool, FunctionTool)
    assert research_tool.name == "Research_Agent"
    assert research_tool.description == "Finds facts"
    assert research_tool.parameters["required"] == ["task"]
    assert research_tool.parameters["properties"]["task"]["type"] == "string"

    writer_client = ScriptedChatClient(
        [
            [call("Research_Agent", {"task": "population of Paris"})],
            "About 2.1 million people live in Paris.",
        ]
    )
    writer = Agent(client=writer_client, tools=[research_tool])
    response = await run(writer, "How many people live in Paris?", stream=stream)
    assert [m.text for m in researcher_client.requests[0].messages] == [
        "population of Paris"
    ]
    assert (
        response.messages[1].contents[0].result == "Paris has 2.1 million inhabitants."
    )
    assert response.text == "About 2.1 million people live in Paris."


@pytest.mark.parametrize("callback_kind", ["sync", "async"])
async def test_as_tool_custom_names_and_stream_callback(callback_kind, stream):
    """Seed 003, "as_tool() 方法": custom `name`, `description`, `arg_name`,
    `arg_description`; `stream_callback` — "支持同步/异步回调" (sync and async callbacks) —
    receives every `AgentResponseUpdate` ("流式与非流式双模式": the parent may run streaming or
    not), from which `AgentResponse.from_updates` (the seed's
    `from_agent_run_response_updates`) rebuilds the text. AG-8, TY-10."""
    received = []
    if callback_kind == "sync":

        def on_update(update):
            received.append(update)

    else:

        async def on_update(update):
            received.append(update)

    inner = Agent(client=ScriptedChatClient([text_chunks("Bon", "jour")]), name="fr")
    translate = inner.as_tool(
        name="translate",
        description="Translate to French",
        arg_name="text",
        arg_description="The text to translate",
        stream_callback=on_update,
    )
    assert translate.name == "translate"
    assert translate.description == "Translate to French"
    assert translate.parameters["properties"] == {
        "text": {"type": "string", "description": "The text to translate"}
    }
    assert translate.parameters["required"] == ["text"]

    outer_client = ScriptedChatClient(
        [[call("translate", {"text": "Hello"})], "Bonjour!"]
    )
    response = await run(
        Agent(client=outer_client, tools=[translate]),
        "Say hello in French",
        stream=stream,
    )
    assert all(isinstance(u, AgentResponseUpdate) for u in received)
    # the seed's wrapper: `return
    # AgentResponse.from_agent_run_response_updates(response_updates).text`
    assert AgentResponse.from_updates(received).text == "Bonjour"
    assert response.messages[1].contents[0].result == "Bonjour"


async def test_as_tool_forwards_runtime_kwargs(stream):
    """Seed 003, "as_tool() 方法", the wrapper: `forwarded_kwargs = {k: v for k, v in
    kwargs.items() if k not in (arg_name, "conversation_id")}` passed to the inner run —
    "运行时上下文转发" (runtime context is forwarded): a runtime keyword of the outer run
    reaches the tools of the inner agent. AG-8, AG-2."""
    seen = []

    def lookup_account():
        """Look up the user's account."""
        return "gold member"

    class CaptureKwargs(FunctionMiddleware):
        async def process(self, context, call_next):
            seen.append(context.kwargs.get("user_id"))
            await call_next(context)

    inner = Agent(
        client=ScriptedChatClient([[call("lookup_account", {})], "Gold."]),
        name="accounts",
        tools=[lookup_account],
        middleware=[CaptureKwargs()],
    )
    outer_client = ScriptedChatClient(
        [[call("accounts", {"task": "status?"})], "You are a gold member."]
    )
    await run(
        Agent(client=outer_client, tools=[inner.as_tool()]),
        "What is my status?",
        stream=stream,
        user_id="u1",
    )
    assert seen == ["u1"]


class EchoAgent(BaseAgent):
    """An agent written like seed 003's `CustomAgent`, but on `BaseAgent`: only `async
    def run`."""

    async def run(self, messages=None, *, thread=None, **kwargs):
        text = messages if isinstance(messages, str) else messages[-1].text
        return AgentResponse(messages=[Message("assistant", [f"echo: {text}"])])


async def test_as_tool_on_custom_base_agent(stream):
    """Seed 003, "6. Agent 即 Tool 哲学": "任何 Agent 都可以通过 as_tool() 转为 Tool" (any agent can
    become a tool through `as_tool()`), including a `BaseAgent` subclass whose `run` is
    a plain `async def` (the seed's non-streaming path: `(await self.run(input_text,
    ...)).text`). AG-8."""
    echo_tool = EchoAgent(name="echo").as_tool()
    client = ScriptedChatClient([[call("echo", {"task": "ping"})], "It said ping."])
    response = await run(
        Agent(client=client, tools=[echo_tool]), "Ping the echo", stream=stream
    )
    assert response.messages[1].contents[0].result == "echo: ping"
    assert response.text == "It said ping."


# ---------------------------------------------------------------------------------------------
# "Thread 管理机制" (thread management).


async def test_thread_notified_of_new_messages(stream):
    """Seed 003, "Thread 管理机制", `_notify_thread_of_new_messages`: the thread receives
    the input messages, then the response messages, then the context provider's
    `invoked(input_messages, response_messages)` runs. `get_new_thread()` returns an
    `AgentThread`. TH-1, AG-6."""
    memory = Memory()
    client = ScriptedChatClient(
        [
            [call("get_weather", {"location": "Paris"})],
            "Sunny.",
            "You asked about Paris.",
        ]
    )
    agent = Agent(client=client, tools=[get_weather], context_providers=[memory])
    thread = agent.get_new_thread()
    assert isinstance(thread, AgentThread)
    await run(agent, "Weather in Paris?", stream=stream, thread=thread)
    assert [(m.role, m.text) for m in thread.messages] == [
        ("user", "Weather in Paris?"),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "Sunny."),
    ]
    assert memory.invoked_with == [(["Weather in Paris?"], ["", "", "Sunny."])]

    await run(agent, "What did I ask?", stream=stream, thread=thread)
    assert [m.text for m in client.requests[-1].messages][-2:] == [
        "Sunny.",
        "What did I ask?",
    ]
    assert len(thread.messages) == 6


async def test_service_managed_and_local_threads(stream):
    """Seed 003, "7. 线程模型的双模支持" (threads in two modes): "服务托管:LLM 服务管理对话历史"
    (service-managed: the service keeps the history) and "本地托管:应用层管理对话历史" (local: the
    application keeps it). A local thread sends its history with every run; once a
    response carries a conversation id, the thread keeps that id and later runs send
    only the new input with `conversation_id`. TH-1."""
    from minagent.testing import reply

    client = ScriptedChatClient(
        ["Local answer.", reply("Service answer.", conversation_id="conv_42"), "Next."]
    )
    agent = Agent(client=client)
    thread = agent.get_new_thread()
    await run(agent, "one", stream=stream, thread=thread)
    await run(agent, "two", stream=stream, thread=thread)
    assert [m.text for m in client.requests[1].messages] == [
        "one",
        "Local answer.",
        "two",
    ]
    assert thread.service_thread_id == "conv_42"

    await run(agent, "three", stream=stream, thread=thread)
    assert [m.text for m in client.requests[2].messages] == ["three"]
    assert client.requests[2].options["conversation_id"] == "conv_42"


async def test_deserialize_thread_awaitable(stream):
    """Seed 003, "Thread 管理机制":

        async def deserialize_thread(self, serialized_thread: Any, **kwargs: Any) ->
        AgentThread:
            thread: AgentThread = self.get_new_thread()
            await thread.update_from_thread_state(serialized_thread, **kwargs)
            return thread

    "支持 Thread 状态的序列化/反序列化" (threads serialise and deserialise): a caller written
    against it awaits the call; the restored thread continues the conversation. TH-2,
    TH-6. Regression test of a friction found here (issue 12 B16; failed on 9d09946)."""
    client = ScriptedChatClient(["First answer.", "Second answer."])
    agent = Agent(client=client)
    thread = agent.get_new_thread()
    await run(agent, "First question", stream=stream, thread=thread)
    serialized = thread.serialize()

    restored = await agent.deserialize_thread(serialized)
    await run(agent, "Second question", stream=stream, thread=restored)
    assert [m.text for m in client.requests[1].messages] == [
        "First question",
        "First answer.",
        "Second question",
    ]


def test_thread_serialize_round_trip():
    """Seed 003, "Thread 管理机制": "支持 Thread 状态的序列化/反序列化" — the thread state serialises
    to plain data and is restored equal. TH-2."""
    agent = Agent(client=ScriptedChatClient([]))
    thread = AgentThread(
        messages=[Message("user", ["Hi"]), Message("assistant", ["Hello!"])]
    )
    restored = agent.deserialize_thread(thread.serialize())
    assert restored == thread


# ---------------------------------------------------------------------------------------------
# "ChatAgent:主要实现层" and "与 ChatClientProtocol 的协作" (the chat agent and its client).


class SeedStyleClient:
    """A client written against seed 003's `ChatClientProtocol.get_response(self,
    messages, *,
    options=None, **kwargs) -> ChatResponse` (an `async def`, no `stream` parameter)."""

    def __init__(self):
        self.additional_properties = {}
        self.calls = []

    async def get_response(self, messages, *, options=None, **kwargs):
        self.calls.append(([m.text for m in messages], options))
        return ChatResponse(
            messages=[Message("assistant", ["Hello from a protocol client."])]
        )


async def test_agent_with_seed_style_protocol_client():
    """Seed 003, "与 ChatClientProtocol 的协作": `ChatAgent → ChatClientProtocol → Concrete
    Client`; an agent talks to its LLM service only through the client's
    `get_response(messages, *,
    options=None, **kwargs)`; a class that has it is a client without inheriting anything.
    AG-1, AG-13."""
    client = SeedStyleClient()
    assert isinstance(client, SupportsChatGetResponse)
    agent = Agent(client=client, instructions="Be brief.")
    response = await agent.run("Hi")
    assert response.text == "Hello from a protocol client."
    assert client.calls == [(["Hi"], {"instructions": "Be brief."})]


async def test_streaming_through_seed_style_protocol_client_is_a_clear_error():
    """Seed 003, "与 ChatClientProtocol 的协作": the seed's protocol streams through a
    separate `get_streaming_response`; our protocol streams through `get_response(...,
    stream=True)`. Streaming an agent whose client has only the seed's `async def
    get_response` is a `TypeError` that says a `ResponseStream` is needed, and leaves
    nothing behind (the coroutine the client returned is closed, not left "never
    awaited"). AG-13. Regression test of a fault found here (issue 12 A6; failed on
    9d09946 with "coroutine ... was never awaited")."""
    agent = Agent(client=SeedStyleClient())
    with pytest.raises(TypeError, match="ResponseStream"):
        await run(agent, "Hi", stream=True)
    gc.collect()  # a coroutine left unawaited warns now, inside this test


# ---------------------------------------------------------------------------------------------
# "Options 合并策略(_merge_options)" (options merging).


def test_merge_options_rules():
    """Seed 003, "Options 合并策略", the table: `tools` — merged, deduplicated by name;
    `logit_bias` and `metadata` — dict merge, run values override; `instructions` —
    joined with a newline; anything else — the override replaces the default; an
    override value of None is skipped (`if value is None: continue`). The inputs are not
    changed. OP-1, OP-3, OP-4, OP-5, OP-6, OP-7."""
    weather = FunctionTool(name="get_weather", func=get_weather)

    def get_time(city):
        """Get the time in a city."""
        return "noon"

    time_tool = FunctionTool(name="get_time", func=get_time)
    base = {
        "tools": [weather],
        "logit_bias": {"1": 1, "2": 2},
        "metadata": {"team": "a", "env": "dev"},
        "instructions": "You are helpful.",
        "temperature": 0.7,
        "max_tokens": 100,
    }
    override = {
        "tools": [weather, time_tool],
        "logit_bias": {"2": -2},
        "metadata": {"env": "prod"},
        "instructions": "Answer in French.",
        "temperature": 0.1,
        "max_tokens": None,
    }
    before = (dict(base), dict(override))
    result = merge_options(base, override)
    assert [t.name for t in result["tools"]] == ["get_weather", "get_time"]
    assert result["logit_bias"] == {"1": 1, "2": -2}
    assert result["metadata"] == {"team": "a", "env": "prod"}
    assert result["instructions"] == "You are helpful.\nAnswer in French."
    assert result["temperature"] == 0.1
    assert result["max_tokens"] == 100
    assert (base, override) == before
    assert base["tools"] == [weather]


# _agents.py:78-108 as seed 003 quotes it: the reference the property test below
# compares with.
def _merge_options(base, override):
    """Merge two options dicts, with override values taking precedence."""
    result = dict(base)
    for key, value in override.items():
        if value is None:
            continue
        if key == "tools" and result.get("tools"):
            # Combine tool lists, avoiding duplicates by name
            existing_names = {getattr(t, "name", None) for t in result["tools"]}
            unique_new = [
                t for t in value if getattr(t, "name", None) not in existing_names
            ]
            result["tools"] = list(result["tools"]) + unique_new
        elif key == "logit_bias" and result.get("logit_bias"):
            # Merge logit_bias dicts
            result["logit_bias"] = {**result["logit_bias"], **value}
        elif key == "metadata" and result.get("metadata"):
            # Merge metadata dicts
            result["metadata"] = {**result["metadata"], **value}
        elif key == "instructions" and result.get("instructions"):
            # Concatenate instructions
            result["instructions"] = f"{result['instructions']}\n{value}"
        else:
            result[key] = value
    return result


_SEED_TOOLS = [FunctionTool(name=name, func=get_weather) for name in ("a", "b", "c")]
_small_dicts = st.dictionaries(
    st.sampled_from(["x", "y", "z"]), st.integers(-3, 3), max_size=3
)
_options = st.fixed_dictionaries(
    {},
    optional={
        "instructions": st.text(min_size=1, max_size=5) | st.none(),
        "metadata": _small_dicts | st.none(),
        "logit_bias": _small_dicts | st.none(),
        "temperature": st.floats(0, 2) | st.none(),
        "model_id": st.sampled_from(["m1", "m2"]) | st.none(),
        "tools": st.lists(st.sampled_from(_SEED_TOOLS), unique=True, max_size=3)
        | st.none(),
    },
)


def _snapshot(options):
    return {
        k: list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v
        for k, v in options.items()
    }


@given(base=_options, override=_options)
def test_merge_options_matches_the_seed(base, override):
    """Seed 003, "Options 合并策略": for any two options dicts (non-empty instructions),
    `merge_options` gives what the seed's `_merge_options` gives (quoted above), except
    where spec/options.md decides otherwise: a None value is never kept, also when it
    comes from the base (OP-2); tools given as the same objects are kept once in
    first-seen order (OP-3; the seed skips only names already in the base). Neither
    input is changed (OP-7). OP-1, OP-4, OP-5, OP-6."""
    before = (_snapshot(base), _snapshot(override))
    expected = {
        k: v for k, v in _merge_options(base, override).items() if v is not None
    }
    result = merge_options(base, override)
    if "tools" in expected:
        expected["tools"] = list(
            dict.fromkeys([*(base.get("tools") or []), *(override.get("tools") or [])])
        )
    assert [t.name for t in result.pop("tools", None) or []] == [
        t.name for t in expected.pop("tools", None) or []
    ]
    assert result == expected
    assert (_snapshot(base), _snapshot(override)) == before


def test_merge_options_same_name_different_tool():
    """Seed 003, "Options 合并策略": tools are deduplicated by name ("避免重复工具"). Where the
    seed's code keeps the first and its table says the run's tool wins, minagent refuses
    to guess: two different tools with one name are a `ValueError` naming it. OP-3."""

    def other_weather(location):
        return "rain"

    with pytest.raises(ValueError, match="get_weather"):
        merge_options(
            {"tools": [FunctionTool(name="get_weather", func=get_weather)]},
            {"tools": [FunctionTool(name="get_weather", func=other_weather)]},
        )


def test_merge_options_refuses_non_mappings():
    """Seed 003, "Options 合并策略": `_merge_options(base: dict[str, Any], override:
    dict[str, Any])` merges two options dicts; anything else given as either argument is
    a `TypeError` that names the argument, not an error from inside. OP-8."""
    for bad in (5, "temperature=0.2", [("temperature", 0.2)]):
        with pytest.raises(TypeError, match="override"):
            merge_options({"temperature": 0.7}, bad)
        with pytest.raises(TypeError, match="base"):
            merge_options(bad, {"temperature": 0.7})


class ToolProvider(ContextProvider):
    async def invoking(self, messages, **kwargs):
        def get_time(city):
            """Get the time in a city."""
            return "noon"

        return Context(instructions="Use the clock.", tools=[get_time])


async def test_merge_layers_defaults_provider_run(stream):
    """Seed 003, "Options 合并策略", "应用场景" (where it applies): the agent's
    `default_options` merged with the run's `options`, and the ContextProvider's context
    merged in — "默认值 → Agent配置 → 运行时参数" (defaults → agent configuration → run
    arguments). AG-5."""

    def get_news(topic):
        """Get the news."""
        return "none"

    client = ScriptedChatClient(["ok"])
    agent = Agent(
        client=client,
        instructions="You are helpful.",
        tools=[get_weather],
        default_options={"temperature": 0.7, "metadata": {"team": "a"}},
        context_providers=[ToolProvider()],
    )
    await run(
        agent,
        "Hi",
        stream=stream,
        tools=[get_news],
        options={
            "temperature": 0.2,
            "metadata": {"env": "prod"},
            "instructions": "Answer in French.",
        },
    )
    options = client.requests[0].options
    assert (
        options["instructions"] == "You are helpful.\nUse the clock.\nAnswer in French."
    )
    assert [t.name for t in options["tools"]] == ["get_weather", "get_time", "get_news"]
    assert options["temperature"] == 0.2
    assert options["metadata"] == {"team": "a", "env": "prod"}


# ---------------------------------------------------------------------------------------------
# "Tools 处理(包括 MCP Tools)" (tools, MCP tools included).


async def test_plain_tools_go_to_default_options(stream):
    """Seed 003, "Tools 处理": "普通工具(FunctionTool、HostedTool 等):直接加入
    default_options["tools"]" — ordinary tools (a `FunctionTool`, a plain function) are
    put into the agent's `default_options["tools"]` and reach every run. TL-2, AG-5."""
    client = ScriptedChatClient([[call("get_weather", {"location": "Oslo"})], "Cold."])
    agent = Agent(client=client, tools=[get_weather])
    assert [type(t) for t in agent.default_options["tools"]] == [FunctionTool]
    assert [t.name for t in agent.default_options["tools"]] == ["get_weather"]
    response = await run(agent, "Weather in Oslo?", stream=stream)
    assert response.messages[1].contents[0].result == "It's sunny in Oslo."


def mcp_weather_server(**kwargs):
    """Seed 003's MCP tool: a local MCP server over stdio (issue 15's
    `MCPStdioTool`)."""
    import minagent

    if not hasattr(minagent, "MCPStdioTool"):
        pytest.skip(ISSUE_15)
    pytest.importorskip("mcp", reason="the official MCP SDK serves the test server")
    return minagent.MCPStdioTool(
        "weather", sys.executable, args=[str(MCP_SERVER)], **kwargs
    )


async def test_mcp_tools_connect_lazily_in_exit_stack(stream):
    """Seed 003, "运行时 MCP 工具展开" and "4. MCP 工具惰性展开": MCP tools are kept apart from the
    ordinary tools, "在 run()/run_stream() 时才连接并展开" (connected and expanded into their
    functions only when a run needs them), inside the agent's `AsyncExitStack`, and
    closed when the agent's context exits ("自动清理所有连接"). AG-9."""
    server = mcp_weather_server()
    client = ScriptedChatClient(
        [[call("get_weather", {"city": "Suzhou"})], "Sunny in Suzhou."]
    )
    agent = Agent(client=client, tools=[server])
    assert not server.is_connected
    response = await run(agent, "Weather in Suzhou?", stream=stream)
    assert server.is_connected  # connected by the run, kept for the next one
    assert [t.name for t in client.requests[0].options["tools"]] == ["get_weather"]
    assert "It's sunny in Suzhou." in str(response.messages[1].contents[0].result)
    await agent.aclose()
    assert not server.is_connected


async def test_mcp_async_with_agent_usage_pattern(stream):
    """Seed 003, "生命周期管理(async context manager)", the usage pattern:

        async with agent:
            # MCP 连接已建立
            response = await agent.run("Hello")
        # 自动清理所有连接

    AG-9."""
    server = mcp_weather_server()
    agent = Agent(client=ScriptedChatClient(["Hello!"]), tools=[server])
    async with agent:
        assert server.is_connected  # MCP 连接已建立 (the MCP connection is up)
        response = await run(agent, "Hello", stream=stream)
    assert not server.is_connected  # 自动清理所有连接 (every connection cleaned up)
    assert response.text == "Hello!"


# ---------------------------------------------------------------------------------------------
# "生命周期管理(async context manager)" (life cycle).


class ClosingClient(ScriptedChatClient):
    def __init__(self, steps, events):
        super().__init__(steps)
        self.events = events

    async def __aenter__(self):
        self.events.append("client entered")
        return self

    async def __aexit__(self, exc_type, exc_val, exc_tb):
        self.events.append("client exited")


async def test_async_with_agent(stream):
    """Seed 003, "生命周期管理", `__aenter__`/`__aexit__`: if the chat client is an async
    context manager it is entered into the agent's exit stack, and closed when the block
    exits; the usage pattern:

        async with agent:
            # MCP 连接已建立
            response = await agent.run("Hello")
        # 自动清理所有连接

    AG-9."""
    events = []
    agent = Agent(client=ClosingClient(["Hi there."], events))
    async with agent:
        assert events == ["client entered"]
        response = await run(agent, "Hello", stream=stream)
    assert response.text == "Hi there."
    assert events == ["client entered", "client exited"]


async def test_async_with_agent_cleans_up_after_error(stream):
    """Seed 003, "5. 完整的生命周期管理": "异常安全清理" (cleanup is exception-safe). AG-9."""
    events = []
    agent = Agent(client=ClosingClient([RuntimeError("service down")], events))
    with pytest.raises(RuntimeError, match="service down"):
        async with agent:
            await run(agent, "Hello", stream=stream)
    assert events == ["client entered", "client exited"]


# ---------------------------------------------------------------------------------------------
# "as_mcp_server() 方法:MCP 服务器创建".


async def test_as_mcp_server_exposes_agent_as_one_tool():
    """Seed 003, "as_mcp_server() 方法": `Agent → as_mcp_server() → MCP Server` — "工具列表:将
    Agent 包装为单个 MCP Tool" (`list_tools`: the agent as one MCP tool, its `as_tool()`
    schema) and "工具调用:转发到 agent_tool.invoke()" (`call_tool` runs the agent). (issue
    15.)"""
    client = ScriptedChatClient(["Bonjour!"])
    agent = Agent(client=client, name="Translator", description="Translates to French")
    if not hasattr(agent, "as_mcp_server"):
        pytest.skip(ISSUE_15)
    server = agent.as_mcp_server(server_name="Agent")
    connection = server.connection()
    init = await connection.handle(
        "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}
    )
    assert init["serverInfo"]["name"] == "Agent"
    (declaration,) = (await connection.handle("tools/list", {}))["tools"]
    assert declaration["name"] == "Translator"
    assert declaration["description"] == "Translates to French"
    assert declaration["inputSchema"]["required"] == ["task"]
    result = await connection.handle(
        "tools/call", {"name": "Translator", "arguments": {"task": "Hello"}}
    )
    assert result == {
        "content": [{"type": "text", "text": "Bonjour!"}],
        "isError": False,
    }
    assert [m.text for m in client.requests[0].messages] == ["Hello"]
