"""Issue 26: upstream's users' code through minagent's run, in upstream's dialect, both
modes.

Un-annotated middleware and tools, upstream's names (`client_kwargs={"middleware":
...}`, `_inner_get_response(*, messages, stream, options)`, `FunctionInvocationLayer`,
...). Every test that involves a run runs it streaming and non-streaming.
"""

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    Message,
    ResponseStream,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from minagent.upstream import (
    ChatMiddlewareLayer,
    ChatTelemetryLayer,
    FunctionInvocationLayer,
)
from tests._support.modes import get_response, run


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await run(target, *args, stream=stream, **kwargs)
    return await get_response(target, *args, stream=stream, **kwargs)


calls_made = []


@tool
def get_weather(location):
    """Get the weather for a location."""
    calls_made.append(location)
    return f"Sunny in {location}."


def results(response):
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


# -- streamed calls as upstream's providers stream them (TY-10, LP-26) --------------------------


def upstream_chunks(call_id, name, arguments, cuts):
    """A call streamed as upstream's tests build it: call_id and name repeated on every
    chunk."""
    points = sorted({0, *cuts, len(arguments)})
    return [
        ChatResponseUpdate(
            [Content.from_function_call(call_id, name, arguments[a:b])], "assistant"
        )
        for a, b in itertools.pairwise(points)
    ]


ARGUMENTS = json.dumps({"location": 'Paris, "the city" {of} [light] \\ ok'})


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=len(ARGUMENTS) - 1), max_size=12)
)
def test_repeated_id_and_name_chunks_fold_into_one_call(cuts):
    """TY-10: chunks that repeat call_id and name, the arguments split anywhere, fold
    into one call."""
    folded = ChatResponse.from_updates(
        upstream_chunks("call_1", "get_weather", ARGUMENTS, cuts)
    )
    found = [c for c in folded.messages[0].contents if c.type == "function_call"]
    assert len(found) == 1
    assert found[0].call_id == "call_1"
    assert found[0].name == "get_weather"
    assert found[0].parse_arguments() == {
        "location": 'Paris, "the city" {of} [light] \\ ok'
    }


async def test_upstream_style_streamed_call_runs(stream):
    """TY-10, LP-26: a call streamed with repeated id and name runs once, in both
    modes."""
    calls_made.clear()
    chunks = upstream_chunks(
        "call_1", "get_weather", json.dumps({"location": "Paris"}), [1, 5, 9, 14]
    )
    client = ScriptedChatClient([chunks, reply("It is sunny.")])
    response = await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather?", stream=stream
    )
    assert calls_made == ["Paris"]
    assert [r.result for r in results(response)] == ["Sunny in Paris."]
    assert response.text == "It is sunny."


async def test_two_separate_calls_sharing_an_id_stay_two(stream):
    """TY-10, LP-26: two complete calls with one id are two calls; the second is renamed
    and runs too."""
    calls_made.clear()
    first = upstream_chunks(
        "call_1", "get_weather", json.dumps({"location": "Paris"}), [3]
    )
    second = upstream_chunks(
        "call_1", "get_weather", json.dumps({"location": "Rome"}), [4]
    )
    client = ScriptedChatClient([first + second, reply("Both sunny.")])
    response = await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather?", stream=stream
    )
    assert sorted(calls_made) == ["Paris", "Rome"]
    assert sorted(r.call_id for r in results(response)) == ["call_1", "call_1~2"]


# -- a provider written for upstream (UP-1, UP-2) ---------------------------------------------


def upstream_provider(*bases):
    class UpstreamStyleClient(*bases):
        """A provider as upstream's users write one: one hook, `stream` a keyword."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seen = []

        def _inner_get_response(self, *, messages, stream, options, **kwargs):
            self.seen.append((stream, [m.text for m in messages]))
            asked = any(
                c.type == "function_result" for m in messages for c in m.contents
            )
            contents = (
                [Content.from_text("Sunny, says the tool.")]
                if asked
                else [
                    Content.from_function_call(
                        "c1", "get_weather", '{"location": "Oslo"}'
                    )
                ]
            )
            if stream:

                async def updates():
                    for content in contents:
                        yield ChatResponseUpdate(contents=[content], role="assistant")

                return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

            async def whole():
                return ChatResponse(messages=[Message("assistant", contents)])

            return whole()

    return UpstreamStyleClient


BASES = [
    (BaseChatClient,),
    (FunctionInvocationLayer, BaseChatClient),
    (ChatMiddlewareLayer, FunctionInvocationLayer, ChatTelemetryLayer, BaseChatClient),
]


@pytest.mark.parametrize(
    "bases", BASES, ids=["BaseChatClient", "tool layer", "all layers"]
)
async def test_a_single_hook_provider_runs_under_agent_run(stream, bases):
    """UP-1, UP-2: a provider with upstream's single hook, on upstream's class bases,
    drives `Agent.run` in both modes: the tool loop runs and the hook is called with
    `stream` set."""
    calls_made.clear()
    client = upstream_provider(*bases)()
    response = await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather in Oslo?", stream=stream
    )
    assert response.text == "Sunny, says the tool."
    assert calls_made == ["Oslo"]
    assert [s for s, _ in client.seen] == [stream, stream]


async def test_layer_middleware_attributes(stream):
    """UP-3: a layered client's `middleware=` splits into its `chat_middleware` and
    `function_middleware` attributes, and both run."""
    seen = []

    @chat_middleware
    async def chat_mw(context, call_next):
        seen.append("chat")
        await call_next()

    @function_middleware
    async def func_mw(context, call_next):
        seen.append("function")
        await call_next()

    client = upstream_provider(
        FunctionInvocationLayer, ChatMiddlewareLayer, BaseChatClient
    )(middleware=[chat_mw, func_mw])
    assert client.chat_middleware == [chat_mw]
    assert client.function_middleware == [func_mw]
    await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather?", stream=stream
    )
    assert seen == ["chat", "function", "chat"]


# -- middleware given where upstream's users give it (MW-14) ----------------------------------


async def test_middleware_in_client_kwargs_runs(stream):
    """MW-14: `client_kwargs={"middleware": [...]}` runs as the run's middleware and
    never reaches the provider as a keyword; a session given there is the run's
    session."""
    seen = []

    class Counting(ChatMiddleware):
        async def process(self, context, call_next):
            seen.append(context.session)
            await call_next()

    session = AgentSession()
    client = ScriptedChatClient([reply("hi")])
    response = await run_or_get_response(
        client,
        "hello",
        stream=stream,
        client_kwargs={"middleware": [Counting()], "session": session, "x": 1},
    )
    assert response.text == "hi"
    assert seen == [session]
    assert client.requests[0].kwargs == {"x": 1}


# -- the loop's stops (LP-8, LP-9, LP-11) ----------------------------------------------------


async def test_error_limit_gives_no_conversation_id(stream):
    """LP-8: a loop stopped by `max_consecutive_errors_per_request` returns no
    conversation_id."""

    @tool
    def broken(x):
        raise RuntimeError("no")

    script = [reply(call("broken", {"x": 1}), conversation_id="conv") for _ in range(2)]
    client = ScriptedChatClient(
        [*script, reply("gave up", conversation_id="conv")],
        function_invocation_configuration={"max_consecutive_errors_per_request": 2},
    )
    response = await run_or_get_response(
        client, "go", stream=stream, options={"tools": [broken]}
    )
    assert response.conversation_id is None
    assert response.text == "gave up"


async def test_after_a_limit_no_approval_request_for_a_call_that_never_runs(stream):
    """LP-9: the last call (tool_choice none) drops calls, and approval requests for
    them, but keeps updates that carry only metadata."""

    @tool(approval_mode="always_require")
    def delete(path):
        return "deleted"

    last = reply(
        "done",
        Content.from_function_approval_request(
            "c9", Content.from_function_call("c9", "delete", '{"path": "/"}')
        ),
        finish_reason="stop",
    )
    client = ScriptedChatClient(
        [reply(call("get_weather", {"location": "A"})), last],
        function_invocation_configuration={"max_iterations": 1},
    )
    response = await run_or_get_response(
        Agent(client, tools=[get_weather, delete]), "go", stream=stream
    )
    kinds = [c.type for m in response.messages for c in m.contents]
    assert "function_approval_request" not in kinds
    assert response.user_input_requests == []
    assert response.text == "done"
    assert response.finish_reason == "stop"


async def test_user_input_required_without_contents_answers_the_call(stream):
    """LP-11: a tool raising `UserInputRequiredError` with no contents gets an error
    result and the loop goes on."""
    from minagent import UserInputRequiredError

    @tool
    def ask(question):
        raise UserInputRequiredError(contents=[])

    client = ScriptedChatClient(
        [reply(call("ask", {"question": "?"})), reply("carried on")]
    )
    response = await run_or_get_response(
        Agent(client, tools=[ask]), "go", stream=stream
    )
    assert response.text == "carried on"
    assert results(response)[0].exception is not None


async def test_hosted_approval_passes_through(stream):
    """LP-31: an approval response for a call the service runs (its call names a
    `server_label`) is passed to the provider as it is; nothing local runs or is
    rejected."""
    hosted_call = Content.from_function_call(
        "mcp_1", "search", "{}", additional_properties={"server_label": "docs"}
    )
    answer = Content.from_function_approval_response(True, "mcp_1", hosted_call)
    client = ScriptedChatClient([reply("searched")])
    response = await run_or_get_response(
        client, [Message("user", [answer])], stream=stream
    )
    sent = [c for m in client.requests[0].messages for c in m.contents]
    assert [c.type for c in sent] == ["function_approval_response"]
    assert sent[0].approved is True
    assert results(response) == []
    assert response.text == "searched"


# -- what a tool sees of its run (LP-32, LP-33, AG-16) ---------------------------------------


async def test_a_tool_adds_and_removes_tools(stream):
    """LP-33: `context.tools` is the run's tool list; `add_tools` / `remove_tools`
    change what the next model call is given and what the next batch can run."""

    @tool
    def unlock(ctx: FunctionInvocationContext):
        ctx.add_tools([get_weather])
        ctx.remove_tools("unlock")
        return "unlocked"

    calls_made.clear()
    client = ScriptedChatClient(
        [
            reply(call("unlock")),
            reply(call("get_weather", {"location": "Bern"})),
            reply("done"),
        ]
    )
    response = await run_or_get_response(
        Agent(client, tools=[unlock]), "go", stream=stream
    )
    names = [[t.name for t in r.options["tools"]] for r in client.requests]
    assert names == [["unlock"], ["get_weather"], ["get_weather"]]
    assert calls_made == ["Bern"]
    assert response.text == "done"


async def test_queued_messages_reach_the_next_model_call(stream):
    """LP-32: `enqueue_messages(session, ...)` queues messages in the session's state;
    the session's next run gives them to the model, once; `MessageInjectionMiddleware`
    requires a session."""
    from minagent import (
        MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY,
        MessageInjectionMiddleware,
        enqueue_messages,
    )

    session = AgentSession()
    enqueue_messages(session, "also: be brief")
    assert len(session.state[MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY]) == 1
    client = ScriptedChatClient([reply("ok"), reply("again")])
    agent = Agent(client, middleware=[MessageInjectionMiddleware()])
    await run_or_get_response(agent, "hello", stream=stream, session=session)
    await run_or_get_response(agent, "and now", stream=stream, session=session)
    first, second = (r.texts for r in client.requests)
    assert first == ["user: hello", "user: also: be brief"]
    assert second[-1] == "user: and now"
    assert second.count("user: also: be brief") == 1  # the history's, not queued again
    assert not session.state[MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY]
    with pytest.raises(Exception, match="requires an AgentSession"):
        await run_or_get_response(
            ScriptedChatClient([reply("x")]),
            "hi",
            stream=stream,
            middleware=[MessageInjectionMiddleware()],
        )


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


async def test_an_optional_context_parameter_is_injected(stream):
    """TL-4, TL-14: `ctx: FunctionInvocationContext | None = None` (upstream's optional
    context) is not in the schema and receives the context in a run."""
    seen = []

    @tool
    def lookup(city: str, ctx: FunctionInvocationContext | None = None) -> str:
        seen.append(ctx.arguments if ctx is not None else None)
        return city.upper()

    assert list(lookup.parameters["properties"]) == ["city"]
    client = ScriptedChatClient(
        [reply(call("lookup", {"city": "oslo"})), reply("OSLO it is.")]
    )
    response = await run_or_get_response(
        Agent(client, tools=[lookup]), "city?", stream=stream
    )
    assert seen == [{"city": "oslo"}]
    assert [r.result for r in results(response)] == ["OSLO"]
