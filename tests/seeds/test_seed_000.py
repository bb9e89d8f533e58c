"""Seed 000, "Tools and Middleware: Request Flow Architecture", example by example.

Seed 001 is the same document after the rename (``ChatAgent -> Agent``, ``ChatMessage ->
Message``, ``ChatClientProtocol -> SupportsChatGetResponse``, ``chat_client= ->
client=``); the examples here use the renamed names, as the seed README asks. What only
the rename changes is in ``test_seed_001.py``.

The middleware, tools and callers below are written the way the seed writes them: no
type annotations where the seed has none, ``call_next(context)`` and ``call_next()`` as
the seed spells them, class-based middleware. Every example runs in both modes where it
can. Where the core does not yet do what the seed says, the test states what the seed
says and is marked ``xfail(strict=True)`` with the fault's number in issue 12.
"""

import asyncio
import inspect

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
    BaseChatClient,
    ChatContext,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Context,
    ContextProvider,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    FunctionMiddleware,
    FunctionTool,
    Message,
    MiddlewareException,
    MiddlewareTermination,
    ResponseStream,
    SupportsAgentRun,
    UnknownToolError,
    agent_middleware,
    categorize_middleware,
    chat_middleware,
    function_middleware,
)
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from tests._support.modes import get_response, run

from ._run import kinds


# A tool as a seed reader would write it: a plain function, no annotations.
def get_weather(location):
    """Get the weather for a location."""
    return f"It's sunny in {location}."


# ---------------------------------------------------------------------------------------------
# "Flow Diagram": Agent.run -> agent middleware -> RawAgent -> client.get_response ->
# chat middleware (per model call) -> function invocation loop -> function middleware
# (per tool call)
# -> FunctionTool.invoke, and back.


class LoggingAgentMiddleware(AgentMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append("agent before")
        await call_next(context)
        self.log.append("agent after")


class LoggingChatMiddleware(ChatMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append("chat before")
        await call_next(context)
        self.log.append("chat after")


class LoggingFunctionMiddleware(FunctionMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append("function before")
        await call_next(context)
        self.log.append("function after")


# The same three, in the spelling before the rename of the parameter ("Renamed next
# middleware parameter to call_next"): `next`, called with the context.
class NextAgentMiddleware(AgentMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, next):
        self.log.append("agent before")
        await next(context)
        self.log.append("agent after")


class NextChatMiddleware(ChatMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, next):
        self.log.append("chat before")
        await next(context)
        self.log.append("chat after")


class NextFunctionMiddleware(FunctionMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, next):
        self.log.append("function before")
        await next(context)
        self.log.append("function after")


def class_style(log):
    return [
        LoggingAgentMiddleware(log),
        LoggingChatMiddleware(log),
        LoggingFunctionMiddleware(log),
    ]


def next_style(log):
    return [
        NextAgentMiddleware(log),
        NextChatMiddleware(log),
        NextFunctionMiddleware(log),
    ]


def decorator_style(log):
    @agent_middleware
    async def logging_agent(context, call_next):
        log.append("agent before")
        await call_next()
        log.append("agent after")

    @chat_middleware
    async def logging_chat(context, call_next):
        log.append("chat before")
        await call_next()
        log.append("chat after")

    @function_middleware
    async def logging_function(context, call_next):
        log.append("function before")
        await call_next()
        log.append("function after")

    return [logging_agent, logging_chat, logging_function]


def annotated_function_style(log):
    async def logging_agent(context: AgentContext, call_next):
        log.append("agent before")
        await call_next(context)
        log.append("agent after")

    async def logging_chat(context: ChatContext, call_next):
        log.append("chat before")
        await call_next(context)
        log.append("chat after")

    async def logging_function(context: FunctionInvocationContext, call_next):
        log.append("function before")
        await call_next(context)
        log.append("function after")

    return [logging_agent, logging_chat, logging_function]


STYLES = [
    pytest.param(class_style, id="class"),
    pytest.param(next_style, id="class-next"),
    pytest.param(decorator_style, id="decorator"),
    pytest.param(annotated_function_style, id="function"),
]


@pytest.mark.parametrize("where", ["agent", "run"])
@pytest.mark.parametrize("style", STYLES)
async def test_flow_diagram_layers_in_order(style, where, stream):
    """Seed 000, "Flow Diagram" and "Overview": agent middleware wraps the run, chat
    middleware wraps every model call inside the function invocation loop, function
    middleware wraps every tool call; middleware of all three kinds given to the agent
    (or to one run) is split by `categorize_middleware()` and the chat/function ones are
    forwarded to the client.

    MW-1, MW-2, MW-3, MW-4, AG-2, LP-3; streaming: MW-9 (agent middleware code after
    `call_next` runs when the stream object is returned, before any model call), AG-3.
    Regression test of issue 12 A1 (the class styles failed on b224877 with "cannot tell
    which layer middleware LoggingChatMiddleware.process belongs to").
    """
    log = []

    def logged_weather(location):
        log.append("tool")
        return get_weather(location)

    client = ScriptedChatClient(
        [[call("logged_weather", {"location": "Paris"})], "It's sunny in Paris."]
    )
    middleware = style(log)
    if where == "agent":
        agent = Agent(client=client, tools=[logged_weather], middleware=middleware)
        response = await run(agent, "What's the weather?", stream=stream)
    else:
        agent = Agent(client=client, tools=[logged_weather])
        response = await run(
            agent, "What's the weather?", stream=stream, middleware=middleware
        )

    model_rounds = [
        "chat before",
        "chat after",
        "function before",
        "tool",
        "function after",
        "chat before",
        "chat after",
    ]
    if stream:
        assert log == ["agent before", "agent after", *model_rounds]
    else:
        assert log == ["agent before", *model_rounds, "agent after"]
    assert response.text == "It's sunny in Paris."
    assert kinds(response) == [
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
        ("assistant", ["text"]),
    ]
    client.assert_consumed()


async def test_flow_diagram_client_middleware_of_a_client_given_to_an_agent(stream):
    """Seed 000, "Flow Diagram": chat and function middleware registered on the chat
    client (`BaseChatClient(middleware=...)`, class-based, no annotations) run when an
    `Agent` uses that client. MW-2, MW-4, LP-3."""
    log = []
    client = ScriptedChatClient(
        [[call("get_weather", {"location": "Paris"})], "It's sunny in Paris."],
        middleware=[LoggingChatMiddleware(log), LoggingFunctionMiddleware(log)],
    )
    agent = Agent(client=client, tools=[get_weather])
    response = await run(agent, "What's the weather?", stream=stream)
    assert log == [
        "chat before",
        "chat after",
        "function before",
        "function after",
        "chat before",
        "chat after",
    ]
    assert response.text == "It's sunny in Paris."


async def test_flow_diagram_client_middleware_and_agent_middleware_together(stream):
    """Seed 000, "Flow Diagram": a client with its own class-based chat middleware, used
    by an agent that also has class-based chat and function middleware: the client's
    middleware is outer (MW-4), and everything runs. MW-2, MW-4. Regression test of
    issue 12 A1."""
    log = []
    client = ScriptedChatClient(
        [[call("get_weather", {"location": "Paris"})], "It's sunny in Paris."],
        middleware=[NextChatMiddleware(log)],
    )
    agent = Agent(
        client=client, tools=[get_weather], middleware=[LoggingChatMiddleware(log)]
    )
    response = await run(agent, "What's the weather?", stream=stream)
    assert log == ["chat before", "chat before", "chat after", "chat after"] * 2
    assert response.text == "It's sunny in Paris."


# ---------------------------------------------------------------------------------------------
# "1. Agent Middleware Layer": the AgentContext table, "Key Operations", "What Can Be
# Modified".


class InspectingAgentMiddleware(AgentMiddleware):
    def __init__(self):
        self.before = None
        self.after = None

    async def process(self, context, call_next):
        self.before = {
            "agent": context.agent,
            "messages": [m.text for m in context.messages],
            "thread": context.thread,
            "options": dict(context.options),
            "stream": context.stream,
            "metadata": context.metadata,
            "result": context.result,
            "kwargs": dict(context.kwargs),
        }
        await call_next(context)
        self.after = context.result


async def test_agent_context_fields(stream):
    """Seed 000, "1. Agent Middleware Layer", the `AgentContext` table: `agent`
    (`SupportsAgentRun`), `messages` (list of `Message`), `thread`, `options` (mapping),
    `stream`, `metadata` (dict), `result` (set after `call_next()`), `kwargs`
    (additional run arguments). MW-11, AG-2, AG-4."""
    inspecting = InspectingAgentMiddleware()
    client = ScriptedChatClient(["Hello!"])
    agent = Agent(client=client, middleware=[inspecting])
    thread = agent.get_new_thread()
    response = await run(
        agent,
        "Hi",
        stream=stream,
        thread=thread,
        options={"temperature": 0.5},
        user_id="u1",
    )

    seen = inspecting.before
    assert seen["agent"] is agent
    assert isinstance(seen["agent"], SupportsAgentRun)
    assert seen["messages"] == ["Hi"]
    assert seen["thread"] is thread
    assert seen["options"] == {"temperature": 0.5}
    assert seen["stream"] is stream
    assert seen["metadata"] == {}
    assert seen["result"] is None
    assert seen["kwargs"] == {"user_id": "u1"}
    if stream:
        assert isinstance(inspecting.after, ResponseStream)
    else:
        assert isinstance(inspecting.after, AgentResponse)
        assert inspecting.after.text == "Hello!"
    assert response.text == "Hello!"


class ModifyingAgentMiddleware(AgentMiddleware):
    def __init__(self, other_thread):
        self.other_thread = other_thread

    async def process(self, context, call_next):
        context.messages.append(Message("user", ["Answer in French."]))
        context.options["temperature"] = 0.2
        context.thread = self.other_thread
        await call_next(context)
        if context.stream:
            context.result.with_result_hook(
                lambda response: AgentResponse(
                    messages=[Message("assistant", ["Bonjour"])]
                )
            )
        else:
            context.result = AgentResponse(messages=[Message("assistant", ["Bonjour"])])


async def test_agent_middleware_can_modify_messages_options_thread_result(stream):
    """Seed 000, "1. Agent Middleware Layer", "What Can Be Modified": `context.messages`
    (add input messages), `context.options` (model parameters), `context.thread`
    (replace the thread), `context.result` (override the final response after
    `call_next()`; in streaming through a result hook, ST-12). MW-11, AG-4, MW-9."""
    client = ScriptedChatClient(["Hello!"])
    agent = Agent(client=client)
    thread, other_thread = agent.get_new_thread(), agent.get_new_thread()
    response = await run(
        agent,
        "Hi",
        stream=stream,
        thread=thread,
        middleware=[ModifyingAgentMiddleware(other_thread)],
    )

    sent = client.requests[0]
    assert [m.text for m in sent.messages] == ["Hi", "Answer in French."]
    assert sent.options["temperature"] == 0.2
    assert thread.messages == []
    assert [m.text for m in other_thread.messages] == [
        "Hi",
        "Answer in French.",
        "Hello!",
    ]
    assert response.text == "Bonjour"


async def test_metadata_shared_between_middleware(stream):
    """Seed 000, the context tables: `metadata | dict | Shared data between middleware`
    — what one agent middleware puts there the next one reads, and likewise for the chat
    middleware of one model call. MW-11."""
    seen = []

    class Stamp(AgentMiddleware):
        async def process(self, context, call_next):
            context.metadata["request_id"] = "r-1"
            await call_next(context)

    class Read(AgentMiddleware):
        async def process(self, context, call_next):
            seen.append(("agent", context.metadata.get("request_id")))
            await call_next(context)

    class StampChat(ChatMiddleware):
        async def process(self, context, call_next):
            context.metadata["attempt"] = 1
            await call_next(context)

    class ReadChat(ChatMiddleware):
        async def process(self, context, call_next):
            seen.append(("chat", context.metadata.get("attempt")))
            await call_next(context)

    agent = Agent(
        client=ScriptedChatClient(["Hello!"]),
        middleware=[Stamp(), Read(), StampChat(), ReadChat()],
    )
    await run(agent, "Hi", stream=stream)
    assert seen == [("agent", "r-1"), ("chat", 1)]


def test_categorize_middleware_splits_by_type():
    """Seed 000, "1. Agent Middleware Layer", "Key Operations" 1:
    `categorize_middleware()` separates middleware by type (agent, chat, function),
    class-based middleware without annotations included. MW-2, MW-3."""
    log = []
    found = categorize_middleware(
        [
            LoggingAgentMiddleware(log),
            LoggingChatMiddleware(log),
            LoggingFunctionMiddleware(log),
        ],
        NextChatMiddleware(log),
    )
    assert (len(found.agent), len(found.chat), len(found.function)) == (1, 2, 1)


def test_categorize_middleware_result_can_be_categorized_again():
    """Seed 000, "1. Agent Middleware Layer", "Key Operations" 1-2: what
    `categorize_middleware()` returns for the chat and function layers is what is
    forwarded to the chat client, which categorizes it again; class-based middleware
    without annotations must survive that. MW-2, MW-3. Regression test of issue 12
    A1."""
    log = []
    found = categorize_middleware(
        [LoggingChatMiddleware(log), LoggingFunctionMiddleware(log)]
    )
    again = categorize_middleware([*found.function, *found.chat])
    assert (len(again.agent), len(again.chat), len(again.function)) == (0, 1, 1)


# ---------------------------------------------------------------------------------------------
# "2. Chat Middleware Layer": the ChatContext table and "What Can Be Modified".


class InspectingChatMiddleware(ChatMiddleware):
    def __init__(self):
        self.seen = []

    async def process(self, context, call_next):
        before = {
            "client": context.client,
            "messages": [m.text for m in context.messages],
            "options": dict(context.options),
            "stream": context.stream,
            "metadata": context.metadata,
            "result": context.result,
            "kwargs": dict(context.kwargs),
        }
        await call_next(context)
        before["after"] = context.result
        self.seen.append(before)


class ModifyingChatMiddleware(ChatMiddleware):
    async def process(self, context, call_next):
        context.messages.insert(0, Message("system", ["You are terse."]))
        context.options["temperature"] = 0.1
        context.options["tool_choice"] = "none"
        await call_next(context)
        if not context.stream:
            context.result = ChatResponse(
                messages=[Message("assistant", [context.result.text.upper()])]
            )
        else:
            context.result.with_result_hook(
                lambda response: ChatResponse(
                    messages=[Message("assistant", [response.text.upper()])]
                )
            )


async def test_chat_context_fields(stream):
    """Seed 001, "2. Chat Middleware Layer", the `ChatContext` table: `client`,
    `messages`, `options`, `stream`, `metadata`, `result` (set after `call_next()`),
    `kwargs`. Entry point:
    `client.get_response(messages, options)`. MW-11, LP-3."""
    inspecting = InspectingChatMiddleware()
    client = ScriptedChatClient(["Hello!"], middleware=[inspecting])
    response = await get_response(
        client, "Hi", stream=stream, options={"temperature": 0.5}, user_id="u1"
    )

    (seen,) = inspecting.seen
    assert seen["client"] is client
    assert seen["messages"] == ["Hi"]
    assert seen["options"] == {"temperature": 0.5}
    assert seen["stream"] is stream
    assert seen["metadata"] == {}
    assert seen["result"] is None
    assert seen["kwargs"] == {"user_id": "u1"}
    assert isinstance(seen["after"], ResponseStream if stream else ChatResponse)
    assert response.text == "Hello!"


@pytest.mark.parametrize(
    "where",
    ["client", "get_response", pytest.param("agent")],
)
async def test_chat_middleware_can_modify_messages_options_result(where, stream):
    """Seed 000, "2. Chat Middleware Layer", "What Can Be Modified": `context.messages`
    (inject system prompts), `context.options` (change temperature, tool_choice),
    `context.result` (override the response after `call_next()`). The middleware is
    class-based without annotations, registered on the client, on one call, or on an
    agent. MW-11, LP-3, MW-2. Regression test of issue 12 A1 (the agent case)."""
    if where == "client":
        client = ScriptedChatClient(["Hello!"], middleware=[ModifyingChatMiddleware()])
        response = await get_response(client, "Hi", stream=stream)
    elif where == "get_response":
        client = ScriptedChatClient(["Hello!"])
        response = await get_response(
            client, "Hi", stream=stream, middleware=[ModifyingChatMiddleware()]
        )
    else:
        client = ScriptedChatClient(["Hello!"])
        agent = Agent(client=client, middleware=[ModifyingChatMiddleware()])
        response = await run(agent, "Hi", stream=stream)

    sent = client.requests[0]
    assert [(m.role, m.text) for m in sent.messages] == [
        ("system", "You are terse."),
        ("user", "Hi"),
    ]
    assert sent.options["temperature"] == 0.1
    assert sent.options["tool_choice"] == "none"
    assert response.text == "HELLO!"


class ShoutingChatMiddleware(ChatMiddleware):
    async def process(self, context, call_next):
        if context.stream:
            context.stream_transform_hooks.append(
                lambda update: ChatResponseUpdate(
                    contents=[update.text.upper()], role=update.role
                )
            )
        await call_next(context)


@pytest.mark.parametrize("where", ["client", "agent"])
async def test_chat_middleware_registers_stream_hooks(where):
    """Seed 000, "2. Chat Middleware Layer", "Key Operations" 3: "Stream hooks can be
    registered for streaming responses" — a chat middleware adds a transform hook to its
    context; the streamed updates pass through it. MW-10, ST-4."""
    if where == "client":
        client = ScriptedChatClient(
            [text_chunks("hel", "lo")], middleware=[ShoutingChatMiddleware()]
        )
        agent = Agent(client=client)
    else:
        client = ScriptedChatClient([text_chunks("hel", "lo")])
        agent = Agent(client=client, middleware=[ShoutingChatMiddleware()])
    stream = agent.run("Hi", stream=True)
    assert [update.text async for update in stream] == ["HEL", "LO"]


async def test_chat_layer_options_are_a_mutable_copy(stream):
    """Seed 000, "Chat Layer -> Function Layer": `"options": {...}, # Mutable copy of
    chat_options`:
    chat middleware may change the options of its model call; neither the caller's
    options nor the agent's defaults nor the next model call of the loop see the change.
    LP-3, OP-7."""

    class OneShotTemperature(ChatMiddleware):
        def __init__(self):
            self.calls = 0

        async def process(self, context, call_next):
            self.calls += 1
            if self.calls == 1:
                context.options["temperature"] = 0.0
                context.options["metadata"]["first"] = True
            await call_next(context)

    client = ScriptedChatClient(
        [[call("get_weather", {"location": "Paris"})], "Sunny."]
    )
    agent = Agent(
        client=client, tools=[get_weather], default_options={"temperature": 0.7}
    )
    options = {"metadata": {"user": "u1"}}
    await run(
        agent,
        "Weather?",
        stream=stream,
        options=options,
        middleware=[OneShotTemperature()],
    )
    assert [r.options["temperature"] for r in client.requests] == [0.0, 0.7]
    assert [r.options["metadata"] for r in client.requests] == [
        {"user": "u1", "first": True},
        {"user": "u1"},
    ]
    assert options == {"metadata": {"user": "u1"}}
    assert agent.default_options["temperature"] == 0.7


# ---------------------------------------------------------------------------------------------
# "3. Function Invocation Layer": configuration table and `tool_choice` behaviour.


class WeatherServiceClient(BaseChatClient):
    """A provider as seed 000's diagram draws it (`BaseChatClient._inner_get_response()`
    -> LLM service), written without annotations; it implements no streaming of its
    own."""

    def __init__(self):
        super().__init__()
        self.seen = []

    async def _inner_get_response(self, *, messages, options, **kwargs):
        self.seen.append([m.role for m in messages])
        if messages[-1].role == "tool":
            return ChatResponse(
                messages=[
                    Message(
                        "assistant",
                        ["The service says: " + messages[-1].contents[0].result],
                    )
                ]
            )
        return ChatResponse(
            messages=[Message("assistant", [call("get_weather", {"location": "Lima"})])]
        )


async def test_function_invocation_loop_over_inner_get_response(stream):
    """Seed 000, "3. Function Invocation Layer": the loop 1. calls
    `BaseChatClient._inner_get_response()` to get the LLM response, 2. extracts the
    function calls,
    3. executes them through the function middleware pipeline, 4. appends the results to
       the
    messages and loops back to step 1. A provider that implements only
    `_inner_get_response` also streams (its response as updates). LP-2, LP-4."""
    client = WeatherServiceClient()
    agent = Agent(client=client, tools=[get_weather])
    response = await run(agent, "Weather in Lima?", stream=stream)
    assert client.seen == [["user"], ["user", "assistant", "tool"]]
    assert response.text == "The service says: It's sunny in Lima."


def test_function_invocation_configuration_defaults():
    """Seed 000, "3. Function Invocation Layer", "Configuration:
    FunctionInvocationConfiguration":
    enabled True, max_iterations 40, max_consecutive_errors_per_request 3,
    terminate_on_unknown_calls False, additional_tools [], include_detailed_errors
    False. LP-1."""
    config = FunctionInvocationConfiguration()
    assert config.enabled is True
    assert config.max_iterations == 40
    assert config.max_consecutive_errors_per_request == 3
    assert config.terminate_on_unknown_calls is False
    assert config.additional_tools == []
    assert config.include_detailed_errors is False


async def test_configuration_enabled_false_returns_calls_unexecuted(stream):
    """Seed 000, configuration table: `enabled` — "Enable auto-invocation"; with False
    the call is not executed and no further model call is made. LP-1."""
    ran = []

    def get_weather(location):
        ran.append(location)
        return "sunny"

    client = ScriptedChatClient(
        [[call("get_weather", {"location": "Paris"})]],
        function_invocation_configuration=FunctionInvocationConfiguration(
            enabled=False
        ),
    )
    response = await get_response(
        client, "What's the weather?", stream=stream, options={"tools": [get_weather]}
    )
    assert ran == []
    assert kinds(response) == [("assistant", ["function_call"])]


async def test_configuration_max_iterations_counts_tool_loops(stream):
    """Seed 000, configuration table: `max_iterations` — "Maximum tool execution loops".
    With
    max_iterations=2 the model may ask for tools twice (two tool rounds run), then one final
    call is made with tool_choice="none" (design decision 8): three model calls. LP-7.
    Regression test of issue 12 A2 (b224877 made two model calls)."""
    client = ScriptedChatClient(
        [
            [call("get_weather", {"location": "Paris"})],
            [call("get_weather", {"location": "Rome"})],
            "Paris and Rome are sunny.",
        ],
        function_invocation_configuration=FunctionInvocationConfiguration(
            max_iterations=2
        ),
    )
    response = await get_response(
        client, "Weather?", stream=stream, options={"tools": [get_weather]}
    )
    assert len(client.requests) == 3
    assert [r.options.get("tool_choice") for r in client.requests] == [
        None,
        None,
        "none",
    ]
    assert [
        c.result
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    ] == [
        "It's sunny in Paris.",
        "It's sunny in Rome.",
    ]
    assert response.text == "Paris and Rome are sunny."


async def test_configuration_max_consecutive_errors_stops(stream):
    """Seed 000, configuration table: `max_consecutive_errors_per_request` (default 3) —
    "Error threshold before stopping": after three tool rounds in a row that failed, the
    loop stops calling tools; the next model call is the last one, with
    tool_choice="none". LP-8."""
    attempts = []

    def flaky(location):
        attempts.append(location)
        raise RuntimeError("service down")

    client = ScriptedChatClient(
        [
            [call("flaky", {"location": "Paris"})],
            [call("flaky", {"location": "Paris"})],
            [call("flaky", {"location": "Paris"})],
            "Sorry, the weather service is down.",
        ]
    )
    response = await get_response(
        client,
        "Weather?",
        stream=stream,
        options={"tools": [flaky], "tool_choice": "auto"},
    )
    assert len(attempts) == 3
    assert client.requests[-1].options["tool_choice"] == "none"
    assert response.text == "Sorry, the weather service is down."
    client.assert_consumed()


async def test_configuration_terminate_on_unknown_calls(stream):
    """Seed 000, configuration table: `terminate_on_unknown_calls` — "Raise error for
    unknown tools" (default False: the model gets an error result and is called again).
    LP-12, LP-6."""
    client = ScriptedChatClient(
        [[call("get_forecast", {"location": "Paris"})], "I cannot get a forecast."],
    )
    response = await get_response(
        client, "Forecast?", stream=stream, options={"tools": [get_weather]}
    )
    results = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert results[0].result.startswith(
        'Error: Requested function "get_forecast" not found.'
    )
    assert response.text == "I cannot get a forecast."

    strict = ScriptedChatClient(
        [[call("get_forecast", {"location": "Paris"})]],
        function_invocation_configuration=FunctionInvocationConfiguration(
            terminate_on_unknown_calls=True
        ),
    )
    with pytest.raises(UnknownToolError):
        await get_response(
            strict, "Forecast?", stream=stream, options={"tools": [get_weather]}
        )


async def test_configuration_include_detailed_errors(stream):
    """Seed 000, configuration table: `include_detailed_errors` — "Include exceptions in
    results" (default False). LP-6."""

    def broken(location):
        raise ValueError("no such place")

    for detailed in (False, True):
        client = ScriptedChatClient(
            [[call("broken", {"location": "Atlantis"})], "Sorry."],
            function_invocation_configuration=FunctionInvocationConfiguration(
                include_detailed_errors=detailed
            ),
        )
        response = await get_response(
            client, "Weather?", stream=stream, options={"tools": [broken]}
        )
        result = response.messages[1].contents[0].result
        assert result.startswith("Error: Function failed.")
        assert ("no such place" in result) is detailed


async def test_configuration_additional_tools_are_not_executed(stream):
    """Seed 000, configuration table: `additional_tools` — "Extra tools to register". As
    upstream does, a call to one of them is never executed: it is returned to the caller
    as a pending request. LP-11."""
    extra = FunctionTool(
        name="lookup",
        description="Look something up",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    client = ScriptedChatClient(
        [[call("lookup", {"q": "x"})]],
        function_invocation_configuration=FunctionInvocationConfiguration(
            additional_tools=[extra]
        ),
    )
    response = await get_response(
        client, "Look up x", stream=stream, options={"tools": [get_weather]}
    )
    assert kinds(response) == [("assistant", ["function_call"])]
    assert [c.name for c in response.user_input_requests] == ["lookup"]


@pytest.mark.parametrize(
    "tool_choice",
    ["required", {"mode": "required", "required_function_name": "get_weather"}],
)
async def test_tool_choice_required_returns_call_and_result_only(tool_choice, stream):
    """Seed 000, "`tool_choice` Behavior", the example:

        # With tool_choice="required", response contains function call + result only
        response = await client.get_response(
            "What's the weather?",
            options={"tool_choice": "required", "tools": [get_weather]}
        )
        # response.messages contains:
        # [0] Assistant message with function_call content
        # [1] Tool message with function_result content
        # (No text response from model)

    and the table row `{"mode": "required", "required_function_name": "fn"}` ("Same
    return behavior as "required""). LP-10."""
    client = ScriptedChatClient([[call("get_weather", {"location": "Seattle"})]])
    if stream:
        response_stream = client.get_response(
            "What's the weather?",
            stream=True,
            options={"tool_choice": tool_choice, "tools": [get_weather]},
        )
        async for _ in response_stream:
            pass
        response = await response_stream.get_final_response()
    else:
        response = await client.get_response(
            "What's the weather?",
            options={"tool_choice": tool_choice, "tools": [get_weather]},
        )

    assert response.messages[0].role == "assistant"
    assert [c.type for c in response.messages[0].contents] == ["function_call"]
    assert response.messages[1].role == "tool"
    assert [c.type for c in response.messages[1].contents] == ["function_result"]
    assert response.messages[1].contents[0].result == "It's sunny in Seattle."
    assert len(response.messages) == 2
    assert response.text == ""
    assert len(client.requests) == 1


async def test_tool_choice_auto_continues_for_text(stream):
    """Seed 000, "`tool_choice` Behavior", the example:

        # To get a text response after tool execution, use tool_choice="auto"
        response = await client.get_response(
            "What's the weather?",
            options={"tool_choice": "auto", "tools": [get_weather]}
        )
        # response.text contains the model's interpretation of the weather data

    LP-10, LP-4."""
    client = ScriptedChatClient(
        [
            [call("get_weather", {"location": "Seattle"})],
            "It is sunny in Seattle today, enjoy!",
        ]
    )
    response = await get_response(
        client,
        "What's the weather?",
        stream=stream,
        options={"tool_choice": "auto", "tools": [get_weather]},
    )
    assert response.text == "It is sunny in Seattle today, enjoy!"
    assert [r.options["tool_choice"] for r in client.requests] == ["auto", "auto"]
    assert (
        client.requests[1].messages[-1].contents[0].result == "It's sunny in Seattle."
    )


async def test_tool_choice_none_only_text(stream):
    """Seed 000, "`tool_choice` Behavior": `"none"` — "Model is prevented from calling
    tools, will only respond with text." The option reaches the model; a call it emits
    anyway is not run. LP-9."""
    ran = []

    def get_weather(location):
        ran.append(location)
        return "sunny"

    client = ScriptedChatClient(
        [
            reply(
                Content.from_text("No tools today."),
                call("get_weather", {"location": "X"}),
            )
        ]
    )
    response = await get_response(
        client,
        "What's the weather?",
        stream=stream,
        options={"tool_choice": "none", "tools": [get_weather]},
    )
    assert client.requests[0].options["tool_choice"] == "none"
    assert ran == []
    assert response.text == "No tools today."
    assert kinds(response) == [("assistant", ["text"])]


# ---------------------------------------------------------------------------------------------
# "4. Function Middleware Layer": the FunctionInvocationContext table, "What Can Be
# Modified", "Special Behavior" and the `TerminatingMiddleware` example.


class InspectingFunctionMiddleware(FunctionMiddleware):
    def __init__(self):
        self.seen = []

    async def process(self, context: FunctionInvocationContext, call_next):
        before = {
            "function": context.function,
            "arguments": dict(context.arguments),
            "metadata": context.metadata,
            "result": context.result,
            "kwargs": dict(context.kwargs),
        }
        context.arguments["location"] = "Berlin"
        await call_next(context)
        before["after"] = context.result
        context.result = context.result + " (checked)"
        self.seen.append(before)


async def test_function_context_fields_and_modifications(stream):
    """Seed 000, "4. Function Middleware Layer": the `FunctionInvocationContext` table
    (`function`, `arguments`, `metadata`, `result` set after `call_next()`, `kwargs`
    runtime kwargs) and "What Can Be Modified": `context.arguments` before execution,
    `context.result` after `call_next()`. MW-11, AG-2."""
    inspecting = InspectingFunctionMiddleware()
    client = ScriptedChatClient([[call("get_weather", {"location": "Paris"})], "Done."])
    agent = Agent(client=client, tools=[get_weather], middleware=[inspecting])
    response = await run(agent, "Weather?", stream=stream, user_id="u1")

    (seen,) = inspecting.seen
    assert isinstance(seen["function"], FunctionTool)
    assert seen["function"].name == "get_weather"
    assert seen["arguments"] == {"location": "Paris"}
    assert seen["metadata"] == {}
    assert seen["result"] is None
    assert seen["kwargs"] == {"user_id": "u1"}
    assert seen["after"] == "It's sunny in Berlin."
    assert response.messages[1].contents[0].result == "It's sunny in Berlin. (checked)"


class TerminatingMiddleware(FunctionMiddleware):
    def __init__(self, names):
        self.names = names

    def should_terminate(self, context):
        return context.function.name in self.names

    async def process(self, context: FunctionInvocationContext, call_next):
        if self.should_terminate(context):
            context.result = "terminated by middleware"
            raise MiddlewareTermination  # Exit function invocation loop
        await call_next(context)


async def test_terminating_middleware_exits_loop_without_another_model_call(stream):
    """Seed 000, "4. Function Middleware Layer", "Special Behavior" and its example
    `TerminatingMiddleware`: "When `MiddlewareTermination` is raised in function
    middleware, it signals that the function invocation loop should exit **without
    making another LLM call**." The tool does not run; its result is what the middleware
    set. MW-8, LP-20, MW-T3."""
    ran = []

    def get_weather(location):
        ran.append(location)
        return "sunny"

    client = ScriptedChatClient([[call("get_weather", {"location": "Paris"})]])
    agent = Agent(
        client=client,
        tools=[get_weather],
        middleware=[TerminatingMiddleware({"get_weather"})],
    )
    response = await run(agent, "Weather?", stream=stream)

    assert ran == []
    assert len(client.requests) == 1
    assert kinds(response) == [
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
    ]
    assert response.messages[1].contents[0].result == "terminated by middleware"


async def test_terminating_middleware_lets_other_calls_through(stream):
    """Seed 000, `TerminatingMiddleware`: when `should_terminate` is false, `await
    call_next(context)` runs the tool and the loop goes on. MW-T1."""
    client = ScriptedChatClient(
        [[call("get_weather", {"location": "Paris"})], "Sunny."]
    )
    agent = Agent(
        client=client,
        tools=[get_weather],
        middleware=[TerminatingMiddleware({"delete_file"})],
    )
    response = await run(agent, "Weather?", stream=stream)
    assert response.messages[1].contents[0].result == "It's sunny in Paris."
    assert response.text == "Sunny."


# ---------------------------------------------------------------------------------------------
# "Arguments Added/Altered at Each Layer".


class NotesProvider(ContextProvider):
    async def invoking(self, messages, **kwargs):
        return Context(messages=[Message("user", ["(notes) likes the sun"])])


async def test_agent_layer_to_chat_layer_arguments(stream):
    """Seed 000, "Arguments Added/Altered at Each Layer", "Agent Layer -> Chat Layer":
    `thread_messages` are the messages from thread + context + input; `agent_name` is
    used for attribution; `chat_options` carry `model_id`, `tools` (normalized),
    `temperature`, `max_tokens` and other options; no option key that nobody set (issue
    12 A3: b224877 sent `instructions: ""`). AG-5, AG-7, TH-1."""
    client = ScriptedChatClient(["Sunny everywhere."])
    agent = Agent(
        client=client,
        name="WeatherAgent",
        tools=[get_weather],
        default_options={"model_id": "gpt-x", "temperature": 0.3, "max_tokens": 100},
        context_providers=[NotesProvider()],
    )
    thread = AgentThread(
        messages=[
            Message("user", ["earlier question"]),
            Message("assistant", ["earlier answer"]),
        ]
    )
    response = await run(agent, "Weather?", stream=stream, thread=thread)

    sent = client.requests[0]
    assert [m.text for m in sent.messages] == [
        "earlier question",
        "earlier answer",
        "(notes) likes the sun",
        "Weather?",
    ]
    assert sent.options["model_id"] == "gpt-x"
    assert sent.options["temperature"] == 0.3
    assert sent.options["max_tokens"] == 100
    assert [t.name for t in sent.options["tools"]] == ["get_weather"]
    assert all(isinstance(t, FunctionTool) for t in sent.options["tools"])
    assert "conversation_id" not in sent.options
    # nobody set instructions: the key is absent
    assert "instructions" not in sent.options
    assert response.messages[0].author_name == "WeatherAgent"


async def test_agent_name_attribution_does_not_change_provider_messages(stream):
    """Seed 000, "Agent Layer -> Chat Layer": `"agent_name": "...", # Agent name for
    attribution`. Two agents with different names get one response object from their
    provider (a cache, a shared script step): each response carries its own agent's
    name, and the provider's message objects are not changed. AG-7."""
    shared = reply(Content.from_text("Hello!"))
    client = ScriptedChatClient([shared, shared])
    first = await run(Agent(client=client, name="First"), "Hi", stream=stream)
    second = await run(Agent(client=client, name="Second"), "Hi", stream=stream)
    assert first.messages[0].author_name == "First"
    assert second.messages[0].author_name == "Second"
    assert shared.messages[0].author_name is None


async def test_agent_layer_conversation_id_from_thread(stream):
    """Seed 000, "Agent Layer -> Chat Layer": `"conversation_id": "..."  # From
    thread.service_thread_id`. TH-1."""
    client = ScriptedChatClient(["Hi again."])
    agent = Agent(client=client)
    thread = AgentThread(service_thread_id="conv_123")
    await run(agent, "Hello", stream=stream, thread=thread)
    assert client.requests[0].options["conversation_id"] == "conv_123"
    assert [m.text for m in client.requests[0].messages] == ["Hello"]


async def test_function_layer_receives_runtime_kwargs_without_conversation_id(stream):
    """Seed 000, "Function Layer -> Tool Invocation": the `FunctionInvocationContext`
    receives `function`, `arguments` validated from `function_call.arguments`, and
    `kwargs`: "Runtime kwargs (filtered, no conversation_id)". AG-2, MW-11."""
    seen = []

    @function_middleware
    async def capture(context, call_next):
        seen.append(
            (context.function.name, dict(context.arguments), dict(context.kwargs))
        )
        await call_next()

    client = ScriptedChatClient(
        [
            reply(call("get_weather", {"location": "Paris"}), conversation_id="conv_1"),
            "Sunny.",
        ]
    )
    agent = Agent(client=client, tools=[get_weather], middleware=[capture])
    await run(
        agent,
        "Weather?",
        stream=stream,
        thread=AgentThread(service_thread_id="conv_0"),
        user_id="u1",
    )
    assert seen == [("get_weather", {"location": "Paris"}, {"user_id": "u1"})]


def test_tool_result_back_up():
    """Seed 000, "Tool Result -> Back Up": `Content.from_function_result()` creates
    `{"type": "function_result", "call_id": ..., "result": ..., "exception": ... |
    None}`. TY-1, TY-8."""
    ok = Content.from_function_result(
        call_id="call_1", result="It's sunny in Paris."
    ).to_dict()
    assert ok["type"] == "function_result"
    assert ok["call_id"] == "call_1"
    assert ok["result"] == "It's sunny in Paris."
    assert ok.get("exception") is None
    failed = Content.from_function_result(
        call_id="call_2", result="Error", exception="ValueError: bad"
    ).to_dict()
    assert failed["exception"] == "ValueError: bad"


# ---------------------------------------------------------------------------------------------
# "Middleware Control Flow": CachingMiddleware, BlockedFunctionMiddleware,
# ValidationMiddleware.


class CachingMiddleware(FunctionMiddleware):
    def __init__(self):
        self.cache = {}

    async def process(self, context: FunctionInvocationContext, call_next):
        # Option A: Return early WITHOUT calling call_next (skip downstream)
        if cached := self.cache.get(context.function.name):
            context.result = cached
            return  # Upstream post-processing still runs

        # Option B: Call call_next, then return normally
        await call_next(context)
        self.cache[context.function.name] = context.result
        return  # Normal completion


async def test_caching_middleware(stream):
    """Seed 000, "Middleware Control Flow", "1. Return Normally (with or without calling
    `call_next`)", the `CachingMiddleware` example: the first call runs the tool and
    caches the result (option B); the second returns the cached result without running
    the tool (option A); the upstream middleware's post-processing runs both times.
    MW-T1, MW-T2."""
    ran, upstream = [], []

    def get_weather(location):
        ran.append(location)
        return f"It's sunny in {location}."

    @function_middleware
    async def upstream_logger(context, call_next):
        await call_next()
        upstream.append(context.result)

    caching = CachingMiddleware()
    client = ScriptedChatClient(
        [
            [call("get_weather", {"location": "Paris"})],
            "Sunny in Paris.",
            [call("get_weather", {"location": "Rome"})],
            "Sunny.",
        ]
    )
    agent = Agent(
        client=client, tools=[get_weather], middleware=[upstream_logger, caching]
    )
    await run(agent, "Weather in Paris?", stream=stream)
    second = await run(agent, "Weather in Rome?", stream=stream)

    assert ran == ["Paris"]
    assert second.messages[1].contents[0].result == "It's sunny in Paris."
    assert upstream == ["It's sunny in Paris.", "It's sunny in Paris."]


class BlockedFunctionMiddleware(FunctionMiddleware):
    def __init__(self, blocked_functions):
        self.blocked_functions = blocked_functions

    async def process(self, context: FunctionInvocationContext, call_next):
        if context.function.name in self.blocked_functions:
            context.result = "Function blocked by policy"
            raise MiddlewareTermination("Blocked")  # Skips ALL post-processing
        await call_next(context)


async def test_blocked_function_middleware(stream):
    """Seed 000, "2. Raise `MiddlewareTermination`", the `BlockedFunctionMiddleware`
    example:
    "Immediately exits the entire middleware chain. Upstream middleware's
    post-processing code is **skipped**." The tool does not run, its result is "Function
    blocked by policy", and the loop makes no further model call ("Special Behavior").
    MW-T3, MW-6, MW-8, LP-20."""
    ran, upstream = [], []

    def delete_file(path):
        ran.append(path)
        return "deleted"

    @function_middleware
    async def upstream_logger(context, call_next):
        upstream.append("before")
        await call_next()
        upstream.append("after")

    client = ScriptedChatClient([[call("delete_file", {"path": "/etc/passwd"})]])
    agent = Agent(
        client=client,
        tools=[delete_file],
        middleware=[upstream_logger, BlockedFunctionMiddleware({"delete_file"})],
    )
    response = await run(agent, "Clean up", stream=stream)

    assert ran == []
    assert upstream == ["before"]
    assert response.messages[-1].contents[0].result == "Function blocked by policy"
    assert len(client.requests) == 1


async def test_blocked_function_in_a_batch(stream):
    """Seed 000, `BlockedFunctionMiddleware` and "Special Behavior": when the model asks
    for an allowed and a blocked function at once, the allowed one runs, the blocked one
    gets "Function blocked by policy", both results are in the response and the thread,
    and no further model call is made. LP-20, LP-23, MW-8."""

    def delete_file(path):
        return "deleted"

    client = ScriptedChatClient(
        [
            [
                call("get_weather", {"location": "Paris"}),
                call("delete_file", {"path": "/tmp/x"}),
            ]
        ]
    )
    agent = Agent(
        client=client,
        tools=[get_weather, delete_file],
        middleware=[BlockedFunctionMiddleware({"delete_file"})],
    )
    thread = agent.get_new_thread()
    response = await run(agent, "Weather, then clean up", stream=stream, thread=thread)
    assert [c.result for c in response.messages[-1].contents] == [
        "It's sunny in Paris.",
        "Function blocked by policy",
    ]
    assert len(client.requests) == 1
    assert [m.role for m in thread.messages] == ["user", "assistant", "tool"]


class ValidationMiddleware(FunctionMiddleware):
    def is_valid(self, arguments):
        return bool(arguments.get("location"))

    async def process(self, context: FunctionInvocationContext, call_next):
        if not self.is_valid(context.arguments):
            raise ValueError("Invalid arguments")  # Bubbles up to user
        await call_next(context)


async def test_validation_middleware_exception_bubbles_up(stream):
    """Seed 000, "3. Raise Any Other Exception", the `ValidationMiddleware` example:
    "Bubbles up to the caller. The middleware chain is aborted and the exception
    propagates." (design decision 12). MW-T5, MW-6, LP-21, TH-3."""
    ran = []

    def get_weather(location):
        ran.append(location)
        return "sunny"

    client = ScriptedChatClient([[call("get_weather", {"location": ""})]])
    agent = Agent(
        client=client, tools=[get_weather], middleware=[ValidationMiddleware()]
    )
    thread = agent.get_new_thread()
    with pytest.raises(ValueError, match="Invalid arguments"):
        await run(agent, "Weather?", stream=stream, thread=thread)
    assert ran == []
    assert thread.messages == []  # a failed run leaves the thread as it was (TH-3)


async def test_validation_middleware_exception_cancels_the_rest_of_the_batch(stream):
    """Seed 000, "3. Raise Any Other Exception" with two calls in one batch: the invalid
    call's `ValueError` reaches the caller, the other (slow) call still running is
    cancelled and awaited first, so nothing is left running (the test harness fails on a
    leaked task). LP-21, LP-22."""
    started, finished = [], []

    async def slow_weather(location):
        started.append(location)
        await asyncio.sleep(10)
        finished.append(location)
        return "sunny"

    class Validation(ValidationMiddleware):
        async def process(self, context: FunctionInvocationContext, call_next):
            if context.function.name == "slow_weather":
                await call_next(context)
                return
            await asyncio.sleep(0.01)  # the slow call is running by now
            await super().process(context, call_next)

    client = ScriptedChatClient(
        [
            [
                call("slow_weather", {"location": "Oslo"}),
                call("get_weather", {"location": ""}),
            ]
        ]
    )
    agent = Agent(
        client=client, tools=[slow_weather, get_weather], middleware=[Validation()]
    )
    with pytest.raises(ValueError, match="Invalid arguments"):
        await run(agent, "Weather?", stream=stream)
    assert started == ["Oslo"]
    assert finished == []


# ---------------------------------------------------------------------------------------------
# "`return` vs `raise MiddlewareTermination`": MiddlewareA and MiddlewareB, with
# print().


class MiddlewareA(AgentMiddleware):
    async def process(self, context, call_next):
        print("A: before")
        await call_next(context)
        print("A: after")  # Does this run?


class MiddlewareB(AgentMiddleware):
    async def process(self, context, call_next):
        print("B: before")
        context.result = "early result"
        # Choose one:
        return  # Option 1
        # raise MiddlewareTermination() # Option 2


class MiddlewareBOption2(AgentMiddleware):
    async def process(self, context, call_next):
        print("B: before")
        context.result = "early result"
        # Choose one:
        # return # Option 1
        raise MiddlewareTermination()  # Option 2


def test_middleware_registered_as_classes_names_the_fix():
    """Seed 000, "`return` vs `raise MiddlewareTermination`": "With middleware
    registered as `[MiddlewareA, MiddlewareB]`" — the seed's prose names the classes.
    Middleware is registered as instances (`MiddlewareA()`); a class given instead is a
    `MiddlewareException` that says so, not a question about which layer it belongs to
    (its base class says that). MW-2. Regression test of a friction found here (issue 12
    B16; failed on 9d09946)."""
    with pytest.raises(MiddlewareException, match=r"MiddlewareA\(\)"):
        Agent(client=ScriptedChatClient([]), middleware=[MiddlewareA, MiddlewareB])


@pytest.mark.parametrize("where", ["agent", "run"])
@pytest.mark.parametrize(
    ("middleware_b", "expected"),
    [
        pytest.param(MiddlewareB, "A: before\nB: before\nA: after\n", id="return"),
        pytest.param(
            MiddlewareBOption2,
            "A: before\nB: before\n",
            id="raise MiddlewareTermination",
        ),
    ],
)
async def test_return_vs_raise_middleware_termination(
    middleware_b, expected, where, stream, capsys
):
    """Seed 000, "`return` vs `raise MiddlewareTermination`": with middleware registered
    as `[MiddlewareA, MiddlewareB]`, `return` prints `A: before → B: before → A: after`;
    `raise MiddlewareTermination` prints `A: before → B: before` (no `A: after`). The
    model is never called; the result is what B set ("Result: Whatever you set in
    `context.result`"). In streaming mode a result that is not a `ResponseStream` is a
    `MiddlewareException` naming the layer (MW-9), after the same output. MW-T2, MW-T3,
    MW-6, MW-9."""
    client = ScriptedChatClient([])
    if where == "agent":
        agent = Agent(client=client, middleware=[MiddlewareA(), middleware_b()])
        kwargs = {}
    else:
        agent = Agent(client=client)
        kwargs = {"middleware": [MiddlewareA(), middleware_b()]}

    if stream:
        with pytest.raises(MiddlewareException, match="agent pipeline is streaming"):
            await run(agent, "Hi", stream=True, **kwargs)
    else:
        assert await agent.run("Hi", **kwargs) == "early result"
    assert capsys.readouterr().out == expected
    assert client.requests == []


# ---------------------------------------------------------------------------------------------
# "Calling `call_next()` or Not" and its summary table.


class SkipDownstream(FunctionMiddleware):
    async def process(self, context, call_next):
        context.result = "replacement result"
        return  # Downstream middleware and actual execution are SKIPPED


class FullExecution(FunctionMiddleware):
    async def process(self, context, call_next):
        # Pre-processing
        await call_next(context)  # Execute downstream + actual operation
        # Post-processing (context.result now contains real result)
        return


@function_middleware
async def skip_downstream(context, call_next):
    context.result = "replacement result"
    return  # Downstream middleware and actual execution are SKIPPED


@function_middleware
async def full_execution(context, call_next):
    # Pre-processing
    await call_next(context)  # Execute downstream + actual operation
    # Post-processing (context.result now contains real result)
    return


def _call_next_or_not_agent(middleware, log):
    def get_weather(location):
        log.append("tool")
        return f"It's sunny in {location}."

    @function_middleware
    async def upstream(context, call_next):
        log.append("upstream before")
        await call_next()
        log.append("upstream after")

    @function_middleware
    async def downstream(context, call_next):
        log.append("downstream")
        await call_next()

    client = ScriptedChatClient([[call("get_weather", {"location": "Paris"})], "Done."])
    return Agent(
        client=client,
        tools=[get_weather],
        middleware=[upstream, middleware, downstream],
    )


@pytest.mark.parametrize(
    "middleware",
    [
        pytest.param(SkipDownstream(), id="class"),
        pytest.param(skip_downstream, id="decorator"),
    ],
)
async def test_without_calling_call_next_skips_downstream(middleware, stream):
    """Seed 000, "Calling `call_next()` or Not", "Without calling `call_next()` - Skip
    downstream":
    downstream middleware NOT executed, actual operation (function invocation) NOT
    executed, upstream middleware post-processing still runs, result: whatever was set
    in `context.result`. MW-T2. Regression test of issue 12 A1 (the class case)."""
    log = []
    agent = _call_next_or_not_agent(middleware, log)
    response = await run(agent, "Weather?", stream=stream)
    assert log == ["upstream before", "upstream after"]
    assert response.messages[1].contents[0].result == "replacement result"


@pytest.mark.parametrize(
    "middleware",
    [
        pytest.param(FullExecution(), id="class"),
        pytest.param(full_execution, id="decorator"),
    ],
)
async def test_with_calling_call_next_full_execution(middleware, stream):
    """Seed 000, "Calling `call_next()` or Not", "With calling `call_next()` - Full
    execution":
    downstream middleware executed, actual operation executed, upstream post-processing
    runs, result: the actual result. MW-T1. Regression test of issue 12 A1 (the class
    case)."""
    log = []
    agent = _call_next_or_not_agent(middleware, log)
    response = await run(agent, "Weather?", stream=stream)
    assert log == ["upstream before", "downstream", "tool", "upstream after"]
    assert response.messages[1].contents[0].result == "It's sunny in Paris."


class SkipModelCall(ChatMiddleware):
    async def process(self, context, call_next):
        context.result = "replacement result"
        return  # Downstream middleware and actual execution are SKIPPED


async def test_without_calling_call_next_in_chat_layer(stream):
    """Seed 000, "Without calling `call_next()` - Skip downstream", the snippet as chat
    middleware ("Actual operation (LLM call, function invocation): NOT executed";
    "Result: Whatever you set in `context.result`"). A chat layer's result is a
    `ChatResponse` (a `ResponseStream` when streaming); a plain string left there either
    becomes the answer or is a `MiddlewareException` naming the layer and the type
    expected — never an error from inside the loop. The model is not called. MW-T2,
    MW-9, MW-13."""
    client = ScriptedChatClient([])
    agent = Agent(client=client, middleware=[SkipModelCall()])
    response, error = None, None
    try:
        response = await run(agent, "Hi", stream=stream)
    except MiddlewareException as raised:
        error = str(raised)
    if error is None:
        assert response.text == "replacement result"
    else:
        assert "chat" in error
        assert ("ResponseStream" if stream else "ChatResponse") in error
    assert client.requests == []


def _row_middleware(exit, calls_next):
    @function_middleware
    async def under_test(context, call_next):
        if calls_next:
            await call_next()
        else:
            context.result = "set by middleware"
        if exit == "terminate":
            raise MiddlewareTermination
        if exit == "raise":
            raise RuntimeError("boom")

    return under_test


SUMMARY_TABLE = [
    # exit, call_next?, downstream + actual op execute?, upstream post-processing?
    pytest.param("return", True, True, True, id="MW-T1 return after call_next"),
    pytest.param("return", False, False, True, id="MW-T2 return without call_next"),
    pytest.param(
        "terminate", False, False, False, id="MW-T3 terminate without call_next"
    ),
    pytest.param("terminate", True, True, False, id="MW-T4 terminate after call_next"),
    pytest.param("raise", False, False, False, id="MW-T5 raise without call_next"),
    pytest.param("raise", True, True, False, id="MW-T6 raise after call_next"),
]


@pytest.mark.parametrize(
    ("exit", "calls_next", "downstream_runs", "upstream_post"), SUMMARY_TABLE
)
async def test_summary_table(exit, calls_next, downstream_runs, upstream_post, stream):
    """Seed 000, "Calling `call_next()` or Not", "Summary Table": per exit method and
    whether `call_next()` was called — do downstream middleware and the actual operation
    execute, and does upstream post-processing run; `raise OtherException` propagates.
    MW-T1, MW-T2, MW-T3, MW-T4, MW-T5, MW-T6, MW-6."""
    log = []
    agent = _call_next_or_not_agent(_row_middleware(exit, calls_next), log)
    if exit == "raise":
        with pytest.raises(RuntimeError, match="boom"):
            await run(agent, "Weather?", stream=stream)
    else:
        await run(agent, "Weather?", stream=stream)
    expected = ["upstream before"]
    if downstream_runs:
        expected += ["downstream", "tool"]
    if upstream_post:
        expected.append("upstream after")
    assert log == expected


# ---------------------------------------------------------------------------------------------
# "Streaming vs Non-Streaming".


async def test_run_return_types(stream):
    """Seed 000, "Streaming vs Non-Streaming": non-streaming `run()` returns
    `Awaitable[AgentResponse]`; streaming returns `ResponseStream[AgentResponseUpdate,
    AgentResponse]` **synchronously**, whose async preparation is deferred until
    iteration (no agent middleware, no context provider, no client call before). AG-2,
    AG-3, ST-2."""
    events = []

    class Provider(ContextProvider):
        async def invoking(self, messages, **kwargs):
            events.append("provider")
            return Context()

    @agent_middleware
    async def watch(context, call_next):
        events.append("agent middleware")
        await call_next()

    client = ScriptedChatClient(["Hello!"])
    agent = Agent(client=client, context_providers=[Provider()], middleware=[watch])
    result = agent.run("Hi", stream=stream)
    assert events == []
    assert client.requests == []
    if stream:
        assert isinstance(result, ResponseStream)
        updates = [update async for update in result]
        assert all(isinstance(u, AgentResponseUpdate) for u in updates)
        assert "".join(u.text for u in updates) == "Hello!"
        final = await result.get_final_response()
    else:
        assert inspect.isawaitable(result)
        final = await result
    assert isinstance(final, AgentResponse)
    assert final.text == "Hello!"
    assert events == ["agent middleware", "provider"]


async def test_streaming_shape_from_awaitable_map_with_result_hook():
    """Seed 000, "Streaming (`stream=True`)", the code:

        async def _get_stream():
            ctx = await self._prepare_run_context(...) # Deferred until iteration
            return self.chat_client.get_response(stream=True, ...)

        return (
            ResponseStream.from_awaitable(_get_stream())
            .map(
                transform=map_chat_to_agent_update, # Transform each update
                finalizer=self._finalize_response_updates, # Build final response
            )
            .with_result_hook(_post_hook) # Post-processing after finalization
        )

    built with our `ResponseStream` around `client.get_response(stream=True)`:
    `from_awaitable` defers the work until the stream is consumed, `.map()` transforms
    `ChatResponseUpdate` -> `AgentResponseUpdate` and provides the finalizer,
    `.with_result_hook()` runs after finalization. ST-2, ST-9, ST-10, ST-11."""
    events = []
    client = ScriptedChatClient([text_chunks("Hel", "lo!")])

    async def _get_stream():
        events.append("prepare")  # Deferred until iteration
        return client.get_response("Hi", stream=True)

    def map_chat_to_agent_update(update):
        return AgentResponseUpdate(contents=update.contents, role=update.role)

    def _finalize_response_updates(updates):
        events.append("finalize")
        return AgentResponse.from_updates(updates)

    def _post_hook(response):
        events.append("post hook")

    stream = (
        ResponseStream.from_awaitable(_get_stream())
        .map(
            transform=map_chat_to_agent_update,  # Transform each update
            finalizer=_finalize_response_updates,  # Build final response
        )
        .with_result_hook(_post_hook)  # Post-processing after finalization
    )
    assert events == []
    updates = [update async for update in stream]
    assert [type(u) for u in updates] == [AgentResponseUpdate, AgentResponseUpdate]
    assert [u.text for u in updates] == ["Hel", "lo!"]
    final = await stream.get_final_response()
    assert isinstance(final, AgentResponse)
    assert final.text == "Hello!"
    assert events == ["prepare", "finalize", "post hook"]


async def test_streaming_result_hook_notifies_thread():
    """Seed 000, "Streaming (`stream=True`)", key points: "`.with_result_hook()` runs
    after finalization (e.g., notify thread of new messages)" — a streaming run that the
    caller only iterates (never calling `get_final_response()`) still updates the thread
    when the stream ends; the diagram's non-streaming twin is
    `_finalize_response_and_update_thread()`. ST-9, TH-3."""
    client = ScriptedChatClient([text_chunks("Hel", "lo!")])
    agent = Agent(client=client)
    thread = agent.get_new_thread()
    async for _ in agent.run("Hi", stream=True, thread=thread):
        pass
    assert [(m.role, m.text) for m in thread.messages] == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
    ]


# ---------------------------------------------------------------------------------------------
# The flow, over any stack of middleware written in any of the seeds' styles.


def _seed_style_middleware(layer, style, label, log):
    """One middleware of `layer` in one of the styles the seeds use; it logs `label`
    before and after `call_next`."""
    base = {
        "agent": AgentMiddleware,
        "chat": ChatMiddleware,
        "function": FunctionMiddleware,
    }[layer]
    if style == "class":

        class Logged(base):
            async def process(self, context, call_next):
                log.append(f"{label} before")
                await call_next(context)
                log.append(f"{label} after")

        return Logged()
    if style == "class-next":

        class LoggedNext(base):
            async def process(self, context, next):
                log.append(f"{label} before")
                await next(context)
                log.append(f"{label} after")

        return LoggedNext()
    decorator = {
        "agent": agent_middleware,
        "chat": chat_middleware,
        "function": function_middleware,
    }[layer]

    @decorator
    async def logged(context, call_next):
        log.append(f"{label} before")
        await call_next()
        log.append(f"{label} after")

    return logged


_entries = st.lists(
    st.tuples(
        st.sampled_from(["agent", "chat", "function"]),
        st.sampled_from(["class", "class-next", "decorator"]),
        st.sampled_from(["client", "agent", "run"]),
    ),
    max_size=6,
)


@settings(max_examples=60)
@given(entries=_entries, stream=st.booleans())
def test_flow_any_stack_of_seed_style_middleware(entries, stream):
    """Seed 000, "Flow Diagram", over any stack of class-based (`call_next(context)` or
    `next(context)`) and decorated (`call_next()`) middleware of the three layers,
    registered on the client, the agent or the run: the agent layer wraps the run once,
    the chat layer every model call, the function layer every tool call; within a layer
    the longer-lived registration is outer (client, then agent, then run) and the first
    registered is outermost. MW-2, MW-3, MW-4, LP-3, MW-9 (streaming: agent middleware
    finishes when the stream object is returned)."""
    entries = [
        (layer, style, where)
        for layer, style, where in entries
        if not (layer == "agent" and where == "client")
    ]
    log = []
    placed = {"client": [], "agent": [], "run": []}
    for index, (layer, style, where) in enumerate(entries):
        placed[where].append(
            _seed_style_middleware(layer, style, f"{layer}{index}", log)
        )

    def ordered(layer):
        return [
            f"{layer}{i}"
            for where in ("client", "agent", "run")
            for i, entry in enumerate(entries)
            if entry[0] == layer and entry[2] == where
        ]

    def around(labels, inner):
        return (
            [f"{x} before" for x in labels]
            + inner
            + [f"{x} after" for x in reversed(labels)]
        )

    def probe(location):
        log.append("tool")
        return location

    async def main():
        client = ScriptedChatClient(
            [[call("probe", {"location": "Paris"})], "done"],
            middleware=placed["client"] or None,
        )
        agent = Agent(client=client, tools=[probe], middleware=placed["agent"] or None)
        return await run(agent, "Go", stream=stream, middleware=placed["run"] or None)

    response = asyncio.run(main())
    chat, function, agent_labels = (
        ordered("chat"),
        ordered("function"),
        ordered("agent"),
    )
    rounds = around(chat, []) + around(function, ["tool"]) + around(chat, [])
    expected = (
        around(agent_labels, []) + rounds if stream else around(agent_labels, rounds)
    )
    assert log == expected
    assert response.text == "done"
