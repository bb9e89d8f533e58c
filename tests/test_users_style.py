"""Issue 12: code written the way the seeds and upstream users write it.

Deliberately in users' style: middleware and tools without annotations where users write
none, upstream's spellings (`function_invocation_kwargs=`, `Role.USER`,
`Message(role=..., text=...)`, `client.as_agent(...)`, `config["max_iterations"] = 5`).
Every test runs in both modes where the rule has two.
"""

import asyncio
import copy
import json
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentMiddleware,
    AgentResponse,
    AgentResponseUpdate,
    BaseAgent,
    BaseChatClient,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    FunctionMiddleware,
    Message,
    MiddlewareException,
    ResponseStream,
    Role,
    UsageDetails,
    agent_middleware,
    categorize_middleware,
    chat_middleware,
    function_middleware,
    merge_options,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run


@tool
def get_weather(location):
    """Get the weather for a location."""
    return f"sunny in {location}"


# ---------------------------------------------------------------------------------------------
# A1: class middleware without annotations (MW-2, MW-3)


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


@pytest.mark.parametrize("where", ["agent", "run", "client", "bound-process"])
async def test_unannotated_class_middleware_runs_wherever_it_is_given(stream, where):
    """MW-2, MW-3: instances of the middleware classes need no annotation, also as bound
    `process` methods, given to Agent(middleware=...), run(middleware=...) or to the
    client inside an Agent."""
    log = []
    instances = [AgentLogger(log), ChatLogger(log), FunctionLogger(log)]
    client_mw = instances[1:] if where == "client" else None
    client = ScriptedChatClient(_weather_script(), middleware=client_mw)
    agent_mw = instances if where == "agent" else [instances[0]]
    agent = Agent(client, tools=[get_weather], middleware=agent_mw)
    run_mw = None
    if where == "run":
        run_mw = instances[1:]
    elif where == "bound-process":
        run_mw = [instances[1].process, instances[2].process]
    response = await run(agent, "weather?", stream=stream, middleware=run_mw)
    assert response.text == "It is sunny."
    assert log == ["agent", "chat", "function get_weather", "chat"]


def test_categorized_middleware_is_taken_as_it_is():
    """MW-3: what categorize_middleware returned can be categorised again,
    unannotated."""
    log = []
    first = categorize_middleware([ChatLogger(log), FunctionLogger(log)])
    again = categorize_middleware(first)
    assert again == first
    forwarded = categorize_middleware([*first.function, *first.chat])
    assert forwarded.chat == first.chat
    assert forwarded.function == first.function


def test_an_unannotated_plain_function_is_still_an_error_naming_it():
    """MW-2: a bare function with neither decorator nor annotation cannot be typed."""

    async def mystery(context, next):
        await next(context)

    with pytest.raises(MiddlewareException, match="mystery"):
        Agent(ScriptedChatClient([]), middleware=[mystery])


# ---------------------------------------------------------------------------------------------
# A3: no invented option keys (AG-5)


async def test_no_instructions_key_without_instructions(stream):
    """AG-5: when nobody gave instructions, the options reaching the client have no
    `instructions` key (not even ""); only keys someone set reach the client."""
    client = ScriptedChatClient(["hi"])
    agent = Agent(client, default_options={"temperature": 0.1})
    await run(agent, "hello", stream=stream)
    assert client.requests[0].options == {"temperature": 0.1}


# ---------------------------------------------------------------------------------------------
# A4: merge_options with non-mappings (OP-8)


@pytest.mark.parametrize("bad", [3, "temperature", ["a"]])
def test_merge_options_names_the_bad_argument(bad):
    """OP-8: a non-mapping is a TypeError naming which argument was wrong."""
    with pytest.raises(TypeError, match="base must be a mapping"):
        merge_options(bad, {})
    with pytest.raises(TypeError, match="override must be a mapping"):
        merge_options({}, bad)


# ---------------------------------------------------------------------------------------------
# A5: never mutate what the run did not create (AG-7)


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


_calls = st.lists(st.sampled_from(["weather", "noted", "text"]), min_size=0, max_size=3)


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
# A6: one route in both modes (AG-13)


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


# ---------------------------------------------------------------------------------------------
# A7: approval resume without a thread (LP-14)


async def test_approval_resumed_with_only_the_request_and_its_answer(stream):
    """LP-14: the upstream sample sends back the query, the request in an assistant
    message and the approval in a user message (no thread, no original call): the
    approved call runs."""
    ran = []

    @tool(approval_mode="always_require")
    def delete_file(path):
        """Delete a file."""
        ran.append(path)
        return "deleted"

    client = ScriptedChatClient(
        [reply(call("delete_file", {"path": "a.txt"}, call_id="d1")), "Done."]
    )
    agent = Agent(client, tools=[delete_file])
    query = "Delete a.txt"
    result = await run(agent, query, stream=stream)
    assert len(result.user_input_requests) == 1
    assert ran == []
    new_inputs = [query]
    for request in result.user_input_requests:
        new_inputs.append(Message("assistant", [request]))
        new_inputs.append(
            Message("user", [request.to_function_approval_response(True)])
        )
    result = await run(agent, new_inputs, stream=stream)
    assert ran == ["a.txt"]
    assert result.text == "Done."
    sent = client.requests[-1].messages
    assert [(m.role, [c.type for c in m.contents]) for m in sent] == [
        ("user", ["text"]),
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
    ]


# ---------------------------------------------------------------------------------------------
# A8: as_tool on any agent (AG-8)


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


# ---------------------------------------------------------------------------------------------
# A9, B16: configuration validated whenever it is set (LP-24)


def test_configuration_is_validated_on_every_assignment():
    """LP-24: attribute, item and client assignment are validated; the old value
    stays."""
    client = ScriptedChatClient([])
    config = client.function_invocation_configuration
    with pytest.raises(ValueError, match="max_iterations"):
        config.max_iterations = 0
    with pytest.raises(ValueError, match="max_iterations"):
        config["max_iterations"] = 0
    assert config.max_iterations == 40
    config["max_iterations"] = 5
    assert config.max_iterations == 5
    assert config["max_iterations"] == 5
    with pytest.raises(KeyError, match="max_iteration'"):
        config["max_iteration"] = 3
    with pytest.raises(ValueError, match="max_function_calls"):
        client.function_invocation_configuration = {"max_function_calls": 0}
    with pytest.raises(KeyError, match="nope"):
        client.function_invocation_configuration = {"nope": 1}
    with pytest.raises(ValueError, match="enabled"):
        config.enabled = 0
    assert client.function_invocation_configuration is config
    client.function_invocation_configuration = {"max_iterations": 2}
    assert client.function_invocation_configuration.max_iterations == 2


async def test_item_assignment_takes_effect(stream):
    """LP-24, LP-7: upstream's
    client.function_invocation_configuration["max_iterations"] = 1 limits the run to one
    tool round and a final call."""
    client = ScriptedChatClient(
        [
            reply(call("get_weather", {"location": "x"})),
            reply(call("get_weather", {})),
            "?",
        ]
    )
    client.function_invocation_configuration["max_iterations"] = 1
    agent = client.as_agent(tools=[get_weather])
    await run(agent, "go", stream=stream)
    assert [r.options.get("tool_choice") for r in client.requests] == ["auto", "none"]


def test_configuration_from_a_dict_at_construction():
    """LP-24: a client accepts a dict of configuration fields, as upstream samples pass
    it."""
    client = ScriptedChatClient(
        [], function_invocation_configuration={"max_iterations": 5}
    )
    assert isinstance(
        client.function_invocation_configuration, FunctionInvocationConfiguration
    )
    assert client.function_invocation_configuration.max_iterations == 5
    with pytest.raises(TypeError, match="function_invocation_configuration"):
        ScriptedChatClient([], function_invocation_configuration=5)


# ---------------------------------------------------------------------------------------------
# A10: keyword arguments (AG-2, LP-25)


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


async def test_additional_function_arguments_option_is_not_sent(stream):
    """LP-25: options["additional_function_arguments"] reach the tools and never the
    model."""
    seen = []

    @tool
    def probe(ctx: FunctionInvocationContext):
        """Probe."""
        seen.append(ctx.kwargs.get("user_id"))
        return "ok"

    client = ScriptedChatClient([reply(call("probe", {})), "done"])
    await run(
        Agent(client, tools=[probe]),
        "go",
        stream=stream,
        options={"additional_function_arguments": {"user_id": 7}},
    )
    assert seen == [7]
    assert all(
        "additional_function_arguments" not in r.options for r in client.requests
    )


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
# A11: Annotated metadata (SC-18, SC-44)


class FieldLike:
    """Duck-typed like pydantic's Field: attributes plus a metadata list of constraint
    objects."""

    def __init__(self, description=None, **constraints):
        self.description = description
        self.metadata = [type("Bound", (), {k: v})() for k, v in constraints.items()]


def test_annotated_field_metadata_reaches_the_schema():
    """SC-44: description and constraints of a Field-like object, read by duck
    typing."""

    @tool
    def book(
        nights: Annotated[int, FieldLike(description="How many nights", ge=1, le=14)],
        guest: Annotated[str, "The guest's name"],
        code: Annotated[str, FieldLike(min_length=3, pattern="^[A-Z]+$")] = "ABC",
    ):
        """Book a room."""
        return "booked"

    props = book.parameters["properties"]
    assert props["nights"] == {
        "type": "integer",
        "description": "How many nights",
        "minimum": 1,
        "maximum": 14,
    }
    assert props["guest"] == {"type": "string", "description": "The guest's name"}
    assert props["code"] == {
        "type": "string",
        "minLength": 3,
        "pattern": "^[A-Z]+$",
        "default": "ABC",
    }
    issues = book.validate_arguments({"nights": 0, "guest": "x", "code": "a"})
    assert {i.path for i in issues} == {"$.nights", "$.code"}


def test_real_pydantic_field_metadata_reaches_the_schema():
    """SC-44: pydantic's own Field (a test-only dependency; the core never imports
    it)."""
    pydantic = pytest.importorskip("pydantic")

    @tool
    def book(
        nights: Annotated[
            int, pydantic.Field(description="How many nights", ge=1, le=14)
        ],
        tags: Annotated[list[str], pydantic.Field(max_length=2, examples=[["quiet"]])],
    ):
        """Book a room."""
        return "booked"

    props = book.parameters["properties"]
    assert props["nights"] == {
        "type": "integer",
        "description": "How many nights",
        "minimum": 1,
        "maximum": 14,
    }
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 2,
        "examples": [["quiet"]],
    }
    assert [
        i.path for i in book.validate_arguments({"nights": 20, "tags": ["a", "b", "c"]})
    ] == ["$.nights", "$.tags"]


def test_multiple_of_and_property_counts_are_validated():
    """SC-45: multipleOf and min/maxProperties are enforced with a clear problem."""
    from minagent._validate import validate

    assert [i.problem for i in validate(7, {"type": "integer", "multipleOf": 5})] == [
        "expected a multiple of 5; got integer 7"
    ]
    assert validate(10, {"type": "integer", "multipleOf": 5}) == []
    assert validate(0.3, {"type": "number", "multipleOf": 0.1}) == []
    assert [
        i.problem for i in validate({}, {"type": "object", "minProperties": 1})
    ] == ["expected at least 1 properties; got 0"]


# ---------------------------------------------------------------------------------------------
# B12, B14, B16: str(), Message spellings, Role, text, to_json (TY-5, TY-6, TY-13)


async def test_print_response_prints_the_text(stream, capsys):
    """TY-6: print(response) and f"{response}" print the answer, as upstream samples
    expect."""
    agent = ScriptedChatClient(["Hello there."]).as_agent(
        name="greeter", instructions="Be nice."
    )
    response = await run(agent, "hi", stream=stream)
    print(response)
    print(f"Agent: {response}")
    assert capsys.readouterr().out == "Hello there.\nAgent: Hello there.\n"
    assert str(response.messages[0]) == "Hello there."
    assert str(ChatResponse([Message("assistant", ["a"])])) == "a"
    assert str(ChatResponseUpdate(["b"], "assistant")) == "b"
    assert str(AgentResponseUpdate(["c"], "assistant")) == "c"


def test_message_spellings_and_role_constants():
    """TY-5: Message("user", text=...), Message(role=..., text=...), Role constants
    equal the strings."""
    assert Message("user", text="hi") == Message("user", ["hi"])
    assert Message(role="user", text="hi") == Message("user", "hi")
    message = Message(Role.USER, ["hi"])
    assert message.role == "user"
    assert type(message.role) is str
    assert Role.ASSISTANT == "assistant"
    assert Role.SYSTEM == "system"
    assert Role.TOOL == "tool"
    with pytest.raises(Exception, match="not both"):
        Message("user", ["a"], text="b")


def test_agent_response_text_has_no_separator():
    """TY-6: AgentResponse.text concatenates the messages' texts (upstream's rule)."""
    response = AgentResponse(
        [Message("assistant", ["Sunny."]), Message("assistant", [" Agent: OK"])]
    )
    assert response.text == "Sunny. Agent: OK"


@pytest.mark.parametrize(
    "value",
    [
        Message("user", ["hi"], author_name="a"),
        Content.from_function_call("c1", "f", '{"a": 1}'),
        ChatResponse([Message("assistant", ["x"])], response_id="r"),
        AgentResponse([Message("assistant", ["x"])], agent_id="g"),
        ChatResponseUpdate(["x"], "assistant"),
        AgentResponseUpdate(["x"], "assistant"),
        UsageDetails(1, 2),
    ],
)
def test_to_json_round_trips(value):
    """TY-13: to_json(**json.dumps kwargs) and from_json round-trip every wire type."""
    text = value.to_json(indent=2)
    assert json.loads(text) == value.to_dict()
    assert "\n  " in text
    assert type(value).from_json(text) == value


def test_from_json_rejects_text_that_is_not_json():
    """TY-13: a SerializationError, not a JSONDecodeError."""
    from minagent import SerializationError

    with pytest.raises(SerializationError, match="not JSON"):
        Message.from_json("{nope")


# ---------------------------------------------------------------------------------------------
# B13: client.as_agent (AG-11)


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


# ---------------------------------------------------------------------------------------------
# B15: upstream spellings are supported or rejected, never swallowed (AG-12, MW-12)


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


async def test_context_terminate_stops_the_pipeline_and_the_loop(stream):
    """MW-12: upstream's ``context.terminate = True``: call_next then runs nothing
    further (the tool is not called, the middleware's result stands), and a function
    pipeline ends the loop; an agent or chat middleware that sets it after call_next
    changes nothing."""
    ran: list[str] = []

    @tool
    def lookup(key: str) -> str:
        """Look up."""
        ran.append(key)
        return "value"

    class Stopper(FunctionMiddleware):
        async def process(self, context, next):
            context.terminate = True
            context.result = "from middleware"
            await next()

    client = ScriptedChatClient([reply(call("lookup", {"key": "k"})), "never"])
    response = await run(
        Agent(client, tools=[lookup], middleware=[Stopper()]), "go", stream=stream
    )
    assert ran == []
    [result] = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert result.result == "from middleware"
    assert len(client.requests) == 1  # the loop stopped after the batch

    @agent_middleware
    async def late(context, next):
        await next()
        context.terminate = True

    @chat_middleware
    async def late_chat(context, next):
        await next()
        context.terminate = True

    answered = await run(
        Agent(ScriptedChatClient(["hello"]), middleware=[late, late_chat]),
        "hi",
        stream=stream,
    )
    assert answered.text == "hello"


# ---------------------------------------------------------------------------------------------
# Further frictions found while porting (closing note of issue 12)


def test_a_middleware_class_instead_of_an_instance_names_the_fix():
    """MW-2: passing the class is an error that says to pass an instance."""
    with pytest.raises(MiddlewareException, match=r"pass an instance: ChatLogger\(\)"):
        Agent(ScriptedChatClient([]), middleware=[ChatLogger])


async def test_max_invocations_limits_a_tool_over_its_lifetime(stream):
    """TL-8: after max_invocations the tool is not called; the model gets an error
    result and the run goes on; the counters are the tool's own."""
    calls = []

    @tool(max_invocations=1)
    def unlock(door):
        """Unlock a door."""
        calls.append(door)
        return "unlocked"

    client = ScriptedChatClient(
        [
            reply(call("unlock", {"door": "a"}, call_id="u1")),
            reply(call("unlock", {"door": "b"}, call_id="u2")),
            "ok",
        ]
    )
    response = await run(Agent(client, tools=[unlock]), "go", stream=stream)
    results = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert calls == ["a"]
    assert results[0].result == "unlocked"
    assert (
        results[1].exception == "tool 'unlock' has reached its maximum of 1 invocations"
    )
    assert unlock.invocation_count == 1
    assert response.text == "ok"


async def test_max_invocation_exceptions_counts_failures():
    """TL-8: invocation_exception_count counts raising invocations; at the limit invoke
    refuses."""

    @tool(max_invocation_exceptions=2)
    def flaky():
        """Always fails."""
        raise RuntimeError("down")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            await flaky.invoke({})
    with pytest.raises(Exception, match="failed 2 times"):
        await flaky.invoke({})
    assert (flaky.invocation_count, flaky.invocation_exception_count) == (2, 2)
    with pytest.raises(Exception, match="max_invocations"):
        tool(max_invocations=0)(get_weather.func)


async def test_threads_can_be_awaited_as_upstream_thread_era_samples_do(stream):
    """TH-6: `await thread.serialize()` gives plain JSON data and `await
    agent.deserialize_thread(...)` gives the thread; the synchronous forms still
    work."""
    client = ScriptedChatClient(["one", "two"])
    agent = Agent(client)
    thread = agent.get_new_thread()
    await run(agent, "first", stream=stream, thread=thread)
    data = await thread.serialize()
    assert type(data) is dict
    assert data == thread.serialize()
    assert json.loads(json.dumps(data)) == data
    resumed = await agent.deserialize_thread(data)
    assert resumed == thread
    await run(agent, "second", stream=stream, thread=resumed)
    assert client.requests[1].texts == ["user: first", "assistant: one", "user: second"]


async def test_updates_list_their_user_input_requests(stream):
    """TY-9: a streaming caller collects approval requests from the updates."""

    @tool(approval_mode="always_require")
    def pay(amount):
        """Pay."""
        return "paid"

    client = ScriptedChatClient([reply(call("pay", {"amount": 3}, call_id="p1"))])
    agent = Agent(client, tools=[pay])
    stream_ = agent.run("pay 3", stream=True)
    requests = [
        r for update in [u async for u in stream_] for r in update.user_input_requests
    ]
    assert [r.function_call.call_id for r in requests] == ["p1"]
    assert (await stream_.get_final_response()).user_input_requests == requests


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


# ---------------------------------------------------------------------------------------------
# Issue 13's behaviours, written the way the seeds and upstream samples write code:
# class middleware without annotations, `next(context)` and `call_next()`, upstream
# names.


class CountingMiddleware(FunctionMiddleware):
    def __init__(self):
        self.seen = []

    async def process(self, context, next):
        self.seen.append(context.function.name)
        await next(context)


async def test_seed_style_run_survives_a_tool_raising_stop_iteration(stream):
    """TL-9, LP-6: a sync tool that raises StopIteration gives an error result; the run
    goes on."""

    @tool
    def first_item(items):
        """The first of the items."""
        return next(iter(items))

    middleware = CountingMiddleware()
    client = ScriptedChatClient(
        [reply(call("first_item", {"items": []}, call_id="f1")), "There are no items."]
    )
    agent = client.as_agent(name="lister", tools=[first_item], middleware=[middleware])
    response = await asyncio.wait_for(
        run(agent, Message(role="user", text="first?"), stream=stream), 10
    )
    assert str(response) == "There are no items."
    assert middleware.seen == ["first_item"]
    result = next(
        c for m in response.messages for c in m.contents if c.type == "function_result"
    )
    assert result.exception.startswith("the tool raised StopIteration")


async def test_seed_style_two_calls_with_one_id_both_run(stream):
    """LP-26: the model reuses a call id; both calls run, each gets its own result."""
    middleware = CountingMiddleware()
    client = ScriptedChatClient(
        [
            reply(
                call("get_weather", {"location": "Oslo"}, call_id="x"),
                call("get_weather", {"location": "Rome"}, call_id="x"),
            ),
            "Done.",
        ]
    )
    agent = Agent(client=client, tools=[get_weather], middleware=[middleware])
    response = await run(agent, "weather?", stream=stream)
    results = {
        c.call_id: c.result
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    }
    assert results == {"x": "sunny in Oslo", "x~2": "sunny in Rome"}
    assert middleware.seen == ["get_weather", "get_weather"]


class Recorder(ChatMiddleware):
    def __init__(self):
        self.calls = 0

    async def process(self, context, call_next):
        self.calls += 1
        await call_next()


async def test_seed_style_final_response_awaited_while_another_task_streams():
    """ST-13: one task prints the stream, another awaits get_final_response(); both see
    the whole answer and the thread is updated once."""
    recorder = Recorder()
    client = ScriptedChatClient(
        [[ChatResponseUpdate([f"part{i} "], "assistant") for i in range(20)]]
    )
    agent = Agent(client=client, middleware=[recorder])
    thread = agent.get_new_thread()
    stream = agent.run("tell me", stream=True, thread=thread)
    printed = []

    async def show():
        async for update in stream:
            printed.append(str(update))
            await asyncio.sleep(0)

    async def final():
        await asyncio.sleep(0)
        return await stream.get_final_response()

    _, response = await asyncio.gather(show(), final())
    assert "".join(printed) == str(response) == "".join(f"part{i} " for i in range(20))
    assert recorder.calls == 1
    assert [m.role for m in thread.messages] == ["user", "assistant"]


class Connection:
    """A tool that holds a connection: an async context manager with a name, parameters
    and invoke."""

    def __init__(self, log):
        self.name = "lookup"
        self.description = "Looks something up."
        self.parameters = {
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
        }
        self.log = log

    async def __aenter__(self):
        self.log.append("open")
        return self

    async def __aexit__(self, *exc_info):
        self.log.append("close")

    async def invoke(self, arguments, *, context=None):
        return f"value of {arguments['key']}"


async def test_seed_style_run_level_connection_is_closed_after_the_run(stream):
    """AG-9: a connection given to one run outside `async with agent` is opened for that
    run and closed when it ends; inside `async with agent` it stays open until the block
    ends."""
    log = []
    client = ScriptedChatClient([reply(call("lookup", {"key": "k"})), "found", "again"])
    agent = Agent(client=client)
    await run(agent, "find k", stream=stream, tools=[Connection(log)])
    assert log == ["open", "close"]
    log.clear()
    async with agent:
        await run(agent, "again", stream=stream, tools=[Connection(log)])
        assert log == ["open"]
    assert log == ["open", "close"]


# ---------------------------------------------------------------------------------------------
# Issue 14, in users' style: the middleware list edited in place between runs (MW-3), a
# chat middleware without annotations that hooks the model's stream (ST-6, ST-9),
# upstream-spelled chunks folded into the final response (TY-14).


async def test_middleware_appended_to_the_agents_list_runs_on_the_next_run(stream):
    """MW-3: `agent.middleware.append(...)`, `.remove(...)` between runs take effect on
    the next run (the categorisation is not stale); the runs do not change the list."""
    log = []
    client = ScriptedChatClient(
        [*_weather_script(), *_weather_script(), *_weather_script()]
    )
    chat, function = ChatLogger(log), FunctionLogger(log)
    agent = Agent(client, tools=[get_weather], middleware=[chat])
    await run(agent, "weather?", stream=stream)
    assert log == ["chat", "chat"]
    log.clear()
    agent.middleware.append(function)
    before = list(agent.middleware)
    await run(agent, "weather?", stream=stream)
    assert log == ["chat", "function get_weather", "chat"]
    assert agent.middleware == before
    assert all(a is b for a, b in zip(agent.middleware, before, strict=True))
    log.clear()
    agent.middleware.remove(chat)
    await run(agent, "weather?", stream=stream)
    assert log == ["function get_weather"]


class StreamWatcher(ChatMiddleware):
    def __init__(self, seen):
        self.seen = seen

    async def process(self, context, next):
        await next(context)
        if context.stream:
            context.result.with_result_hook(
                lambda response: self.seen.append(response.text)
            )
            context.result.with_cleanup_hook(lambda: self.seen.append("cleanup"))
        else:
            self.seen.append(context.result.text)


async def test_an_unannotated_chat_middleware_hooks_the_models_stream(stream):
    """ST-6, ST-9: a chat middleware written without annotations, `next(context)`, that
    adds a result and a cleanup hook to the model's stream sees the whole answer once,
    in both modes."""
    seen = []
    client = ScriptedChatClient(
        [ChatResponse(messages=[Message("assistant", ["Hello there"])])]
    )
    agent = Agent(client, middleware=[StreamWatcher(seen)])
    response = await run(agent, "hi", stream=stream)
    assert response.text == "Hello there"
    assert seen == (["cleanup", "Hello there"] if stream else ["Hello there"])


class ChunkClient(BaseChatClient):
    """A provider written as upstream's samples write one: chunks spelled with
    keywords."""

    def __init__(self, words):
        super().__init__()
        self.words = words

    async def _inner_get_response(self, *, messages, options, **kwargs):
        return ChatResponse(
            messages=[Message(role="assistant", text="".join(self.words))], model="m1"
        )

    async def _inner_get_streaming_response(self, *, messages, options, **kwargs):
        for i, word in enumerate(self.words):
            last = i == len(self.words) - 1
            yield ChatResponseUpdate(
                contents=[Content.from_text(text=word)],
                role=Role.ASSISTANT if i == 0 else None,
                model="m1" if last else None,
                finish_reason="stop" if last else None,
            )


async def test_upstream_spelled_chunks_fold_into_the_final_response(stream):
    """TY-14, TY-11: chunks spelled with keywords (`contents=`, `Role.ASSISTANT`, the
    model and finish reason on the last chunk) give the same final response in both
    modes; the chunks are not changed by the run."""
    words = ["The ", "weather ", "is ", "sunny."]
    client = ChunkClient(words)
    response = await run(Agent(client, name="Helper"), "weather?", stream=stream)
    assert response.text == "The weather is sunny."
    assert [m.author_name for m in response.messages] == ["Helper"]
    chat = response.raw_representation
    assert chat.model == "m1"
    if stream:
        assert chat.finish_reason == "stop"
        kept = ChatResponseUpdate(
            contents=[Content.from_text(text="x")], role="assistant"
        )
        agent_update = AgentResponseUpdate.from_chat_update(
            kept, agent_id="a", author_name="Helper"
        )
        assert agent_update.contents == kept.contents
        assert agent_update.contents is not kept.contents
        assert kept.author_name is None
