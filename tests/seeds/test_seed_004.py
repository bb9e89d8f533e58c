"""Seed 004 (in Chinese), LangChain v1 agent middleware — its examples in our names.

Seed 004 describes LangChain's `AgentMiddleware`
(`before_agent`/`before_model`/`after_model`/ `after_agent` hooks,
`wrap_model_call`/`wrap_tool_call` wrappers, `ModelRequest.override`, tools contributed
by middleware) and two programs: `FooMiddleware`/`BarMiddleware` (the hook order) and
`WeatherMiddleware` (a tool given only as a JSON schema dict, answered by middleware).

What the core does today is tested here in our three pipelines (agent middleware for
`*_agent`, chat middleware for `*_model`, function middleware for tool calls). The hook
API itself (`minagent.hooks`) is issue 16; those tests are written in its names, as the
issue describes them, and skipped until it lands.

Not concerning the core: `create_agent(model=ChatOpenAI(...))`,
`agent.get_graph(xray=True) .draw_mermaid_png()` with PIL, and the printed LangGraph
channels (`agent.channels`, `trigger_to_nodes`) are LangGraph's graph internals; the
trailing blog links are noise.
"""

import pytest

from minagent import (
    Agent,
    AgentMiddleware,
    ChatMiddleware,
    FunctionMiddleware,
    function_middleware,
)
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run

from ._run import kinds

ISSUE_16 = "needs issue 16: minagent.hooks (HookMiddleware, wrap_tool_call, ModelRequest.override)"

# The tool of seed 004's second program: a JSON schema, no function.
tool = {
    "name": "get_weather",
    "description": "Get weather information for given city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def weather_script():
    return [
        [
            call(
                "get_weather",
                {"city": "Suzhou"},
                call_id="call_LjastyaYNrovwMhSmvoJMcNz",
            )
        ],
        "The weather in **Suzhou** is **sunny**. ☀️",
    ]


def assert_seed_history(thread):
    """The message history seed 004 prints: Human, AI (tool call get_weather, city:
    Suzhou), Tool ("It's sunny in Suzhou."), AI ("The weather in **Suzhou** is
    **sunny**. ☀️")."""
    history = thread.messages
    assert [(m.role, [c.type for c in m.contents]) for m in history] == [
        ("user", ["text"]),
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
        ("assistant", ["text"]),
    ]
    assert history[0].text == "What is the weather like in Suzhou?"
    function_call = history[1].contents[0]
    assert (function_call.name, function_call.parse_arguments()) == (
        "get_weather",
        {"city": "Suzhou"},
    )
    assert function_call.call_id == "call_LjastyaYNrovwMhSmvoJMcNz"
    assert history[2].contents[0].call_id == "call_LjastyaYNrovwMhSmvoJMcNz"
    assert history[2].contents[0].result == "It's sunny in Suzhou."
    assert history[3].text == "The weather in **Suzhou** is **sunny**. ☀️"


# ---------------------------------------------------------------------------------------------
# "3.2 针对工具调用的包装" (wrapping tool calls): a dict tool answered by middleware.


class WeatherMiddleware(FunctionMiddleware):
    async def process(self, context, call_next):
        if context.function.name == "get_weather":
            city = context.arguments["city"]
            context.result = f"It's sunny in {city}."
        else:
            await call_next(context)


@function_middleware
async def weather_middleware(context, call_next):
    if context.function.name == "get_weather":
        city = context.arguments["city"]
        context.result = f"It's sunny in {city}."
    else:
        await call_next(context)


@pytest.mark.parametrize(
    "middleware", [WeatherMiddleware(), weather_middleware], ids=["class", "decorator"]
)
async def test_dict_tool_answered_by_function_middleware(middleware, stream):
    """Seed 004, "3.2 针对工具调用的包装": a tool registered as a JSON schema dict has no
    function ("默认是无法被调用的", cannot be called by default); middleware answers its call
    (`WeatherMiddleware`, in our function middleware: set `context.result` without
    `call_next`), and the agent goes on to the final answer. The history is the one the
    seed prints. Design decision 13. LP-11, TL-2, MW-T2."""
    client = ScriptedChatClient(weather_script())
    agent = Agent(client=client, tools=[tool], middleware=[middleware])
    thread = agent.get_new_thread()
    result = await run(
        agent, "What is the weather like in Suzhou?", stream=stream, thread=thread
    )
    assert result.text == "The weather in **Suzhou** is **sunny**. ☀️"
    assert_seed_history(thread)
    assert client.requests[0].options["tools"] == [tool]


async def test_dict_tool_without_middleware_is_returned_to_caller(stream):
    """Seed 004, "3.2":
    "以这种方式注册的工具并没有绑定一个具体的可执行对象,所以默认是无法被调用的"
    (a tool registered this way is bound to nothing executable, so by default it cannot be called): without
    middleware the call comes back to the caller unexecuted, as a pending request.
    LP-11."""
    client = ScriptedChatClient(weather_script()[:1])
    agent = Agent(client=client, tools=[tool])
    result = await run(agent, "What is the weather like in Suzhou?", stream=stream)
    assert kinds(result) == [("assistant", ["function_call"])]
    assert [c.name for c in result.user_input_requests] == ["get_weather"]


# ---------------------------------------------------------------------------------------------
# "2. 生命周期拦截器" (lifecycle interceptors): the order of FooMiddleware's and
# BarMiddleware's hooks, today with the agent and chat pipelines.


def test_tool():
    """A test tool"""
    return "tested"


test_tool.__test__ = False  # the seed's tool, not a pytest test


class FooAgentMiddleware(AgentMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append("FooMiddleware.before_agent")
        await call_next(context)
        self.log.append("FooMiddleware.after_agent")


class FooModelMiddleware(ChatMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append("FooMiddleware.before_model")
        await call_next(context)
        self.log.append("FooMiddleware.after_model")


class BarAgentMiddleware(AgentMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append("BarMiddleware.before_agent")
        await call_next(context)
        self.log.append("BarMiddleware.after_agent")


class BarModelMiddleware(ChatMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append("BarMiddleware.before_model")
        await call_next(context)
        self.log.append("BarMiddleware.after_model")


async def test_lifecycle_order_with_three_pipelines():
    """Seed 004, "2. 生命周期拦截器": the hooks run as `FooMiddleware.before_agent ->
    FooMiddleware.before_model -> FooMiddleware.after_model ->
    FooMiddleware.after_agent`, and after the "tools" node runs, `before_model`
    intercepts again. With `[FooMiddleware(), BarMiddleware()]` the first registered is
    outermost. In our pipelines (agent middleware around the run, chat middleware around
    every model call). MW-4, LP-3."""
    log = []
    client = ScriptedChatClient([[call("test_tool")], "done"])
    agent = Agent(
        client=client,
        tools=[test_tool],
        middleware=[
            FooAgentMiddleware(log),
            BarAgentMiddleware(log),
            FooModelMiddleware(log),
            BarModelMiddleware(log),
        ],
    )
    await agent.run("Run the test tool")
    model_call = [
        "FooMiddleware.before_model",
        "BarMiddleware.before_model",
        "BarMiddleware.after_model",
        "FooMiddleware.after_model",
    ]
    assert log == [
        "FooMiddleware.before_agent",
        "BarMiddleware.before_agent",
        *model_call,  # the model asks for test_tool; the "tools" node runs it
        *model_call,  # before_model intercepts again after the tools
        "BarMiddleware.after_agent",
        "FooMiddleware.after_agent",
    ]


# ---------------------------------------------------------------------------------------------
# The hook API itself (issue 16), in our names.


async def test_hooks_foo_bar_order(stream):
    """Seed 004, "2. 生命周期拦截器", `FooMiddleware` and `BarMiddleware` overriding
    `before_agent`, `before_model`, `after_model`, `after_agent`: before_* in list
    order, after_* in reverse list order; `before_model` runs again after the tools.
    (issue 16: `HookMiddleware`.)"""
    from minagent.hooks import HookMiddleware

    log = []

    class FooMiddleware(HookMiddleware):
        def before_agent(self, state):
            log.append("FooMiddleware.before_agent")

        def before_model(self, state):
            log.append("FooMiddleware.before_model")

        def after_model(self, state):
            log.append("FooMiddleware.after_model")

        def after_agent(self, state):
            log.append("FooMiddleware.after_agent")

    class BarMiddleware(HookMiddleware):
        def before_agent(self, state):
            log.append("BarMiddleware.before_agent")

        def before_model(self, state):
            log.append("BarMiddleware.before_model")

        def after_model(self, state):
            log.append("BarMiddleware.after_model")

        def after_agent(self, state):
            log.append("BarMiddleware.after_agent")

    client = ScriptedChatClient([[call("test_tool")], "done"])
    agent = Agent(
        client=client, tools=[test_tool], middleware=[FooMiddleware(), BarMiddleware()]
    )
    await run(agent, "Run the test tool", stream=stream)
    model_call = [
        "FooMiddleware.before_model",
        "BarMiddleware.before_model",
        "BarMiddleware.after_model",
        "FooMiddleware.after_model",
    ]
    assert log == [
        "FooMiddleware.before_agent",
        "BarMiddleware.before_agent",
        *model_call,
        *model_call,
        "BarMiddleware.after_agent",
        "FooMiddleware.after_agent",
    ]
    assert FooMiddleware().name == "FooMiddleware"


async def test_hooks_wrap_tool_call_answers_dict_tool(stream):
    """Seed 004, "3.2 针对工具调用的包装", `WeatherMiddleware.wrap_tool_call(request, handler)`:
    `request.tool_call["name"] == "get_weather"` is answered with "It's sunny in
    {city}.", anything else goes to `handler(request)`. (issue 16: `wrap_tool_call`,
    `ToolCallRequest`.)"""
    from minagent.hooks import HookMiddleware

    class WeatherMiddleware(HookMiddleware):
        def wrap_tool_call(self, request, handler):
            tool_call = request.tool_call
            if tool_call.name == "get_weather":
                city = tool_call.parse_arguments()["city"]
                return f"It's sunny in {city}."
            else:
                return handler(request)

    client = ScriptedChatClient(weather_script())
    agent = Agent(client=client, tools=[tool], middleware=[WeatherMiddleware()])
    thread = agent.get_new_thread()
    result = await run(
        agent, "What is the weather like in Suzhou?", stream=stream, thread=thread
    )
    assert result.text == "The weather in **Suzhou** is **sunny**. ☀️"
    assert_seed_history(thread)


async def test_hooks_middleware_contributes_tools(stream):
    """Seed 004, "1. AgentMiddleware": "工具也可以利用 tools 字段封装到中间件中。中间件被注册时,其封装的
    工具也会一并予以注册" (middleware may carry tools in its `tools` field; registering the
    middleware registers them too). (issue 16: `HookMiddleware.tools`.)"""
    from minagent.hooks import HookMiddleware

    class ToolingMiddleware(HookMiddleware):
        def __init__(self):
            self.tools = [test_tool]

    client = ScriptedChatClient([[call("test_tool")], "done"])
    agent = Agent(client=client, middleware=[ToolingMiddleware()])
    result = await run(agent, "Run the test tool", stream=stream)
    assert [t.name for t in client.requests[0].options["tools"]] == ["test_tool"]
    assert result.messages[1].contents[0].result == "tested"


async def test_hooks_model_request_override(stream):
    """Seed 004, "3.1 针对模型调用的包装": `ModelRequest.override(**overrides)` returns a changed
    request (tools, system message / instructions, tool_choice, model settings) for this
    call only; `wrap_model_call(request, handler)` passes it on. (issue 16:
    `ModelRequest.override`.)"""
    from minagent.hooks import HookMiddleware

    class OneCallOnly(HookMiddleware):
        def __init__(self):
            self.calls = 0

        async def wrap_model_call(self, request, handler):
            self.calls += 1
            if self.calls == 1:
                request = request.override(
                    tools=[], instructions="Answer without tools."
                )
            return await handler(request)

    client = ScriptedChatClient(["first", "second"])
    agent = Agent(
        client=client,
        instructions="Be helpful.",
        tools=[test_tool],
        middleware=[OneCallOnly()],
    )
    await run(agent, "one", stream=stream)
    await run(agent, "two", stream=stream)
    first, second = client.requests
    assert first.options.get("tools") in (None, [])
    assert first.options["instructions"] == "Answer without tools."
    assert [t.name for t in second.options["tools"]] == ["test_tool"]
    assert second.options["instructions"] == "Be helpful."
