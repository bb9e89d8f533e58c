"""minagent.hooks: HookMiddleware compiled onto the three pipelines (spec/hooks.md, HK-1
.. HK-12)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentMiddleware,
    ChatMiddleware,
    ChatResponse,
    Content,
    FunctionMiddleware,
    FunctionTool,
    Message,
    MiddlewareException,
    RawAgent,
    categorize_middleware,
)
from minagent.hooks import (
    HookMiddleware,
    HookState,
    ModelRequest,
    ToolCallRequest,
    after_agent,
    after_model,
    before_agent,
    before_model,
    wrap_model_call,
    wrap_tool_call,
)
from minagent.testing import ScriptedChatClient, call, text_chunks
from tests._support.streamed import ask, run, streamed_text, tool_t

# ---------------------------------------------------------------------------------------------
# The ordering contract, over random stacks of hook and plain middleware (HK-2)

HOOKS = [
    "before_agent",
    "after_agent",
    "before_model",
    "after_model",
    "wrap_model_call",
    "wrap_tool_call",
]


def _hook_class(
    i: int, hooks: frozenset[str], sync: bool, log: list[str]
) -> HookMiddleware:
    body: dict[str, Any] = {}
    for name in ("before_agent", "after_agent", "before_model", "after_model"):
        if name in hooks:
            if sync:
                body[name] = lambda self, state, _n=name: log.append(f"{i}.{_n}")
            else:

                async def hook(self: Any, state: Any, _n: str = name) -> None:
                    log.append(f"{i}.{_n}")

                body[name] = hook
    if "wrap_model_call" in hooks:

        async def wrap_model(self: Any, request: Any, handler: Any) -> Any:
            log.append(f"{i}.wrap_model.before")
            response = await handler(request)
            # HK-7: the finished response, in both modes
            assert isinstance(response, ChatResponse)
            log.append(f"{i}.wrap_model.after")
            return response

        body["wrap_model_call"] = wrap_model
    if "wrap_tool_call" in hooks:

        async def wrap_tool(self: Any, request: Any, handler: Any) -> Any:
            log.append(f"{i}.wrap_tool.before")
            value = await handler(request)
            log.append(f"{i}.wrap_tool.after")
            return value

        body["wrap_tool_call"] = wrap_tool
    return type(f"H{i}", (HookMiddleware,), body)()


def _plain(i: int, layer: str, log: list[str]) -> Any:
    """Plain middleware written stream-aware: its "after" sees the finished response
    (ST-12)."""
    base = {
        "agent": AgentMiddleware,
        "chat": ChatMiddleware,
        "function": FunctionMiddleware,
    }[layer]

    class Plain(base):  # type: ignore[valid-type, misc]
        async def process(self, context: Any, call_next: Any) -> None:
            log.append(f"{i}.{layer}.before")
            await call_next()
            if getattr(context, "stream", False):
                context.result.with_result_hook(
                    lambda _r: log.append(f"{i}.{layer}.after")
                )
            else:
                log.append(f"{i}.{layer}.after")

    return Plain()


def _expected(stack: list[tuple[str, Any]]) -> list[str]:
    """The contract, HK-2: position in the list decides, per pipeline; before_* in list
    order, after_* in reverse; within one hook middleware before_model, wrap_model_call,
    after_model."""

    def layer(name: str) -> tuple[list[str], list[str]]:
        enter: list[str] = []
        leave: list[str] = []
        for i, (kind, what) in enumerate(stack):
            if kind == "plain":
                if what == name:
                    enter.append(f"{i}.{name}.before")
                    leave.insert(0, f"{i}.{name}.after")
                continue
            outs: list[str] = []
            if name == "agent":
                enter += [f"{i}.before_agent"] if "before_agent" in what else []
                outs += [f"{i}.after_agent"] if "after_agent" in what else []
            elif name == "chat":
                enter += [f"{i}.before_model"] if "before_model" in what else []
                enter += [f"{i}.wrap_model.before"] if "wrap_model_call" in what else []
                outs += [f"{i}.wrap_model.after"] if "wrap_model_call" in what else []
                outs += [f"{i}.after_model"] if "after_model" in what else []
            elif "wrap_tool_call" in what:
                enter.append(f"{i}.wrap_tool.before")
                outs.append(f"{i}.wrap_tool.after")
            leave[0:0] = outs
        return enter, leave

    agent_in, agent_out = layer("agent")
    chat_in, chat_out = layer("chat")
    fn_in, fn_out = layer("function")
    model_call = [*chat_in, *chat_out]
    return [*agent_in, *model_call, *fn_in, *fn_out, *model_call, *agent_out]


item = st.one_of(
    st.tuples(st.just("plain"), st.sampled_from(["agent", "chat", "function"])),
    st.tuples(
        st.just("hook"),
        st.frozensets(st.sampled_from(HOOKS), min_size=1),
        st.booleans(),
    ).map(lambda t: ("hook", t[1], t[2])),
)


@settings(max_examples=80)
@given(st.lists(item, max_size=5), st.booleans(), st.integers(0, 5))
def test_random_stacks_follow_the_ordering_contract(
    stack: list[Any], stream: bool, split: int
) -> None:
    """HK-2, HK-1, HK-4, HK-6: any stack of hook middleware (def or async def hooks) and
    plain middleware of any layer, the first `split` given to the agent and the rest to
    run() (agent-level outside run-level, MW-4), logs in the order the contract
    predicts, in both modes."""
    log: list[str] = []
    built = [
        _plain(i, entry[1], log)
        if entry[0] == "plain"
        else _hook_class(i, entry[1], entry[2], log)
        for i, entry in enumerate(stack)
    ]
    client = ScriptedChatClient([[call("tool_t")], "done"])
    agent = Agent(client, tools=[tool_t], middleware=built[:split])
    result = asyncio.run(run(agent, "go", stream=stream, middleware=built[split:]))
    assert result.text == "done"
    contract = [(e[0], e[1]) for e in stack]
    assert log == _expected(contract)


# ---------------------------------------------------------------------------------------------
# Compilation (HK-1, HK-3, HK-12)


def test_only_overridden_hooks_are_compiled():
    """HK-3: a hook not overridden is not compiled in; a layer without hooks gets no
    middleware."""

    class OnlyTools(HookMiddleware):
        def wrap_tool_call(self, request, handler):
            return handler(request)

    found = categorize_middleware([OnlyTools()])
    assert (len(found.agent), len(found.chat), len(found.function)) == (0, 0, 1)
    assert categorize_middleware([HookMiddleware()]) == ((), (), ())
    assert OnlyTools().overridden() == {"wrap_tool_call"}
    assert OnlyTools().name == "OnlyTools"


async def test_hook_middleware_on_a_client(stream):
    """HK-1: a hook middleware with model and tool hooks works as a client's middleware
    too."""
    log = []

    class Logger(HookMiddleware):
        def before_model(self, state):
            log.append(f"model {len(state.messages)}")

        async def wrap_tool_call(self, request, handler):
            log.append(f"tool {request.tool_call.name}")
            return await handler(request)

    client = ScriptedChatClient([[call("tool_t")], "done"], middleware=[Logger()])
    response = await ask(client, "go", stream=stream, options={"tools": [tool_t]})
    assert response.text == "done"
    assert log == ["model 1", "tool tool_t", "model 3"]


def test_agent_hooks_refused_where_no_agent_layer_runs():
    """HK-1: agent hooks and tools need an Agent: a client or a RawAgent refuses them
    with the usual error."""

    class Tools(HookMiddleware):
        tools = (tool_t,)

    with pytest.raises(
        MiddlewareException, match="agent middleware cannot run in a chat client"
    ):
        ScriptedChatClient([], middleware=[Tools()])
    with pytest.raises(MiddlewareException, match="runs no agent middleware"):
        RawAgent(ScriptedChatClient([]), middleware=[Tools()])


def test_async_twins_and_state_schema_are_refused():
    """HK-12: seed 004's a* twins and state_schema are refused at class definition,
    saying what to write."""
    with pytest.raises(
        MiddlewareException, match=r"write `async def wrap_model_call\(\.\.\.\)`"
    ):

        class Twin(HookMiddleware):
            async def awrap_model_call(self, request, handler):
                return await handler(request)

    with pytest.raises(MiddlewareException, match="no graph state"):

        class WithState(HookMiddleware):
            state_schema = dict


async def test_sync_hook_using_the_handler_result_gets_a_clear_error():
    """HK-4: handler(request) is an awaitable; a def hook that uses it as the response
    is told to await."""

    class Sync(HookMiddleware):
        def wrap_model_call(self, request, handler):
            return handler(request).text.upper()

    agent = Agent(ScriptedChatClient(["hi"]), middleware=[Sync()])
    with pytest.raises(
        AttributeError, match=r"write Sync\.wrap_model_call as `async def`"
    ):
        await agent.run("x")


async def test_sync_wrap_hook_may_return_the_handler_awaitable(stream):
    """HK-4: a def wrap hook that returns handler(request) as it is works in both
    modes."""

    @wrap_model_call
    def passthrough(request, handler):
        return handler(request.override(instructions="short"))

    client = ScriptedChatClient(["hi"])
    result = await run(Agent(client, middleware=[passthrough]), "x", stream=stream)
    assert result.text == "hi"
    assert client.requests[0].options["instructions"] == "short"


# ---------------------------------------------------------------------------------------------
# Updates (HK-5, HK-6)


async def test_before_agent_updates_input_and_options(stream):
    """HK-5: before_agent sees the input, thread and kwargs; its messages join the run's
    input (the thread stores them) and its options are merged over the run's."""
    seen = []

    class Prepare(HookMiddleware):
        def before_agent(self, state):
            seen.append(
                (len(state.messages), state.thread is not None, dict(state.kwargs))
            )
            return {
                "messages": [Message("user", ["(be brief)"])],
                "options": {"temperature": 0.1},
            }

    client = ScriptedChatClient(["ok"])
    agent = Agent(client, middleware=[Prepare()])
    thread = agent.get_new_thread()
    await run(agent, "hi", stream=stream, thread=thread, tenant="u1")
    assert seen == [(1, True, {"tenant": "u1"})]
    assert client.requests[0].texts == ["user: hi", "user: (be brief)"]
    assert client.requests[0].options["temperature"] == 0.1
    assert [m.text for m in thread.messages] == ["hi", "(be brief)", "ok"]


async def test_before_model_messages_are_for_this_call_only(stream):
    """HK-5: before_model's messages are appended to this model call's messages only
    (LP-3)."""

    @before_model
    def remind(state):
        return {"messages": [Message("user", [f"reminder {len(state.messages)}"])]}

    client = ScriptedChatClient([[call("tool_t")], "done"])
    await run(Agent(client, tools=[tool_t], middleware=[remind]), "go", stream=stream)
    assert client.requests[0].texts == ["user: go", "user: reminder 1"]
    assert client.requests[1].texts[-1] == "user: reminder 3"
    assert "user: reminder 1" not in client.requests[1].texts


async def test_after_hooks_append_to_the_response(stream):
    """HK-5, HK-6: after_model sees the finished response and its messages join the
    transcript; after_agent appends to the run's response; when streaming, both are
    streamed after the model's updates."""
    seen = []

    class Audit(HookMiddleware):
        async def after_model(self, state):
            seen.append(state.response.text)
            return {"messages": ["(checked)"]}

        def after_agent(self, state):
            seen.append(f"agent {state.response.text}")
            return {"messages": [Message("assistant", ["(end)"])]}

    client = ScriptedChatClient([text_chunks("he", "llo")])
    result = await run(Agent(client, middleware=[Audit()]), "x", stream=stream)
    assert seen == ["hello", "agent hello(checked)"]
    assert [m.text for m in result.messages] == ["hello", "(checked)", "(end)"]
    if stream:
        assert streamed_text(result) == "hello(checked)(end)"


async def test_jump_to_end_before_agent(stream):
    """HK-5: before_agent with jump_to="end" answers without calling the model;
    after_agent still runs."""
    log = []

    class Cache(HookMiddleware):
        def before_agent(self, state):
            return {"jump_to": "end", "response": "cached answer"}

        def after_agent(self, state):
            log.append(state.response.text)

    client = ScriptedChatClient([])
    result = await run(Agent(client, middleware=[Cache()]), "x", stream=stream)
    assert result.text == "cached answer"
    assert log == ["cached answer"]
    assert client.requests == []
    if stream:
        assert streamed_text(result) == "cached answer"


async def test_jump_to_end_and_tools_before_model(stream):
    """HK-5: before_model with jump_to="tools" skips the model and runs the prepared
    calls; with "end" the prepared answer ends the loop."""
    calls = []

    class Planner(HookMiddleware):
        def before_model(self, state):
            calls.append(len(state.messages))
            if len(calls) == 1:
                return {
                    "jump_to": "tools",
                    "response": ChatResponse([Message("assistant", [call("tool_t")])]),
                }
            return {"jump_to": "end", "response": "planned answer"}

    client = ScriptedChatClient([])
    result = await run(
        Agent(client, tools=[tool_t], middleware=[Planner()]), "x", stream=stream
    )
    assert client.requests == []
    assert [m.role for m in result.messages] == ["assistant", "tool", "assistant"]
    assert result.messages[1].contents[0].result == "ok"
    assert result.text == "planned answer"


async def test_jump_to_end_after_model_drops_calls(stream):
    """HK-5: after_model with jump_to="end" removes the response's calls (not run) and
    ends the loop."""

    @after_model
    def stop(state):
        return {"jump_to": "end", "response": "stopped"}

    client = ScriptedChatClient([[call("tool_t")]])
    result = await run(
        Agent(client, tools=[tool_t], middleware=[stop]), "x", stream=stream
    )
    assert [m.role for m in result.messages] == ["assistant"]
    assert result.text == "stopped"


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ("nope", "must return None or a dict"),
        ({"jump": 1}, "unknown update key"),
        ({"jump_to": "model"}, "calls the model again by itself"),
        ({"jump_to": "sideways"}, "allowed: 'end', 'tools'"),
        ({"response": "x"}, "without jump_to"),
        (
            {
                "jump_to": "end",
                "response": ChatResponse([Message("assistant", [call("tool_t")])]),
            },
            "without function calls",
        ),
        ({"jump_to": "tools", "response": "x"}, "needs a response with function calls"),
        ({"options": ["x"]}, "options that are not a dict"),
    ],
)
async def test_bad_updates_are_errors(update, message):
    """HK-5: a malformed update is a MiddlewareException naming the hook."""

    class Bad(HookMiddleware):
        def before_model(self, state):
            return update

    with pytest.raises(MiddlewareException, match=message) as info:
        await Agent(ScriptedChatClient(["x"]), tools=[tool_t], middleware=[Bad()]).run(
            "x"
        )
    assert "Bad.before_model" in str(info.value)


class _Jump(HookMiddleware):
    def __init__(self, hook, update):
        self.hook = hook
        self.update = update

    def before_agent(self, state):
        return self.update if self.hook == "before_agent" else None

    def after_agent(self, state):
        return self.update if self.hook == "after_agent" else None

    def after_model(self, state):
        return self.update if self.hook == "after_model" else None


@pytest.mark.parametrize(
    ("hook", "update", "message"),
    [
        (
            "before_agent",
            {"jump_to": "tools", "response": [Message("assistant", [call("tool_t")])]},
            "is for before_model",
        ),
        ("after_agent", {"jump_to": "end"}, "the run has ended"),
        (
            "after_model",
            {"jump_to": "tools", "response": [Message("assistant", [call("tool_t")])]},
            "is for before_model",
        ),
        ("before_agent", {"messages": [3]}, "must be Message objects or str"),
    ],
)
async def test_misplaced_updates(hook, update, message):
    """HK-5: jump_to where it does not apply, or messages of the wrong type, are errors
    naming the hook."""
    with pytest.raises(MiddlewareException, match=message):
        await Agent(
            ScriptedChatClient(["x"]), tools=[tool_t], middleware=[_Jump(hook, update)]
        ).run("x")


async def test_after_model_end_without_response(stream):
    """HK-5: after_model "end" without a response just removes the calls; text already
    there stays."""

    class Stop(HookMiddleware):
        def after_model(self, state):
            return {"jump_to": "end"}

    client = ScriptedChatClient([[Content.from_text("thinking"), call("tool_t")]])
    result = await run(
        Agent(client, tools=[tool_t], middleware=[Stop()]), "x", stream=stream
    )
    assert [(m.role, m.text) for m in result.messages] == [("assistant", "thinking")]


async def test_after_agent_returning_nothing_keeps_the_response(stream):
    """HK-5: an after_agent hook that returns None leaves the response as it is."""

    @after_agent
    def look(state):
        return None

    result = await run(
        Agent(ScriptedChatClient(["x"]), middleware=[look]), "x", stream=stream
    )
    assert result.text == "x"


# ---------------------------------------------------------------------------------------------
# wrap_model_call (HK-7, HK-8)


async def test_override_applies_to_one_call_only(stream):
    """HK-8: override() changes tools, instructions, tool_choice and model settings for
    the call it is given to; the request is immutable; unknown fields are a
    TypeError."""
    requests: list[ModelRequest] = []

    @wrap_model_call
    async def first_only(request, handler):
        requests.append(request)
        if len(requests) == 1:
            with pytest.raises(dataclasses.FrozenInstanceError):
                request.tools = ()  # type: ignore[misc]
            with pytest.raises(TypeError, match="unknown field"):
                request.override(model="x")
            request = request.override(
                tools=[], system_prompt="No tools.", options={"temperature": 0}
            )
        return await handler(request)

    client = ScriptedChatClient(["one", "two"])
    agent = Agent(
        client,
        instructions="Be helpful.",
        tools=[tool_t],
        default_options={"temperature": 1},
        middleware=[first_only],
    )
    await run(agent, "a", stream=stream)
    await run(agent, "b", stream=stream)
    first, second = client.requests
    assert "tools" not in first.options
    assert "tool_choice" not in first.options
    assert (first.options["instructions"], first.options["temperature"]) == (
        "No tools.",
        0,
    )
    assert [t.name for t in second.options["tools"]] == ["tool_t"]
    assert (second.options["instructions"], second.options["temperature"]) == (
        "Be helpful.",
        1,
    )
    assert requests[0].instructions == "Be helpful."
    assert requests[0].system_prompt == "Be helpful."


async def test_override_client_sends_the_call_elsewhere(stream):
    """HK-8: override(client=other) sends this call to the other client's provider
    call."""
    other = ScriptedChatClient(["from other"])

    @wrap_model_call
    async def route(request, handler):
        return await handler(request.override(client=other))

    main = ScriptedChatClient([])
    result = await run(Agent(main, middleware=[route]), "x", stream=stream)
    assert result.text == "from other"
    assert main.requests == []
    assert len(other.requests) == 1

    @wrap_model_call
    async def bad(request, handler):
        return await handler(request.override(client=object()))

    with pytest.raises(MiddlewareException, match="must be a BaseChatClient"):
        await run(Agent(ScriptedChatClient([]), middleware=[bad]), "x", stream=stream)


async def test_wrap_model_call_without_handler_answers(stream):
    """HK-7: a wrap hook that never calls handler answers the call; when streaming its
    answer is streamed."""

    @wrap_model_call
    async def canned(request, handler):
        return "canned"

    client = ScriptedChatClient([])
    result = await run(Agent(client, middleware=[canned]), "x", stream=stream)
    assert result.text == "canned"
    assert client.requests == []
    if stream:
        assert streamed_text(result) == "canned"


async def test_streaming_wrap_relays_updates_as_they_come():
    """HK-7: while streaming, handler relays each update before the model produces the
    next one and counts them in handler.streamed; the hook's return value is the final
    response."""
    counts = []

    @wrap_model_call
    async def watch(request, handler):
        response = await handler(request)
        counts.append(handler.streamed)
        return ChatResponse([Message("assistant", [response.text.upper()])])

    client = ScriptedChatClient([text_chunks("a", "b", "c")])
    stream = Agent(client, middleware=[watch]).run("x", stream=True)
    texts = [u.text async for u in stream]
    final = await stream.get_final_response()
    assert texts == ["a", "b", "c"]
    assert counts == [3]
    assert final.text == "ABC"


async def test_closing_the_stream_early_cancels_the_wrap_hook():
    """HK-7: closing the stream early cancels the hook's task and awaits it (no task
    left, conftest checks)."""
    cancelled = []

    @wrap_model_call
    async def slow(request, handler):
        try:
            return await handler(request)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    client = ScriptedChatClient([text_chunks("a", "b", "c")])
    stream = Agent(client, middleware=[slow]).run("x", stream=True)
    async for _update in stream:
        break
    await stream.aclose()
    assert cancelled == [True]


async def test_wrap_hook_errors_reach_the_consumer():
    """HK-7: an exception raised by the hook comes out of the stream."""

    @wrap_model_call
    async def boom(request, handler):
        await handler(request)
        raise RuntimeError("boom")

    stream = Agent(ScriptedChatClient([text_chunks("a")]), middleware=[boom]).run(
        "x", stream=True
    )
    with pytest.raises(RuntimeError, match="boom"):
        async for _update in stream:
            pass


async def test_wrap_model_call_must_return_a_response():
    """HK-7: any other return value is a MiddlewareException naming the hook."""

    @wrap_model_call
    async def wrong(request, handler):
        await handler(request)
        return 42

    with pytest.raises(
        MiddlewareException, match=r"wrong\.wrap_model_call must return a ChatResponse"
    ):
        await Agent(ScriptedChatClient(["x"]), middleware=[wrong]).run("x")


async def test_inner_middleware_leaving_no_stream_is_named():
    """HK-7: while streaming, an inner middleware that leaves a ChatResponse is reported
    by the wrap hook."""

    class NotAStream(ChatMiddleware):
        async def process(self, context, call_next):
            context.result = ChatResponse([Message("assistant", ["x"])])

    @wrap_model_call
    async def outer(request, handler):
        return await handler(request)

    stream = Agent(ScriptedChatClient([]), middleware=[outer, NotAStream()]).run(
        "x", stream=True
    )
    with pytest.raises(MiddlewareException, match="did not produce a ResponseStream"):
        await stream.get_final_response()


# ---------------------------------------------------------------------------------------------
# Tools (HK-9, HK-10, HK-11)


async def test_contributed_tools_do_not_touch_the_callers_list(stream):
    """HK-9: the middleware's tools join the run's, after them; the caller's list is
    unchanged."""

    def extra() -> str:
        """Extra."""
        return "extra"

    class Contrib(HookMiddleware):
        tools = (extra,)

    mine = [tool_t]
    client = ScriptedChatClient(["ok"])
    await run(Agent(client, middleware=[Contrib()]), "x", stream=stream, tools=mine)
    assert mine == [tool_t]
    assert [t.name for t in client.requests[0].options["tools"]] == ["tool_t", "extra"]


async def test_wrap_tool_call_request(stream):
    """HK-10: the request holds the call, the tool and the arguments;
    override(arguments=...) changes what the tool receives; a tool's exception comes out
    of handler and becomes the error result."""
    seen: list[ToolCallRequest] = []

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def fail() -> str:
        """Fails."""
        raise ValueError("bad")

    @wrap_tool_call
    async def double(request, handler):
        seen.append(request)
        if request.tool_call.name == "fail":
            with pytest.raises(ValueError, match="bad"):
                await handler(request)
            return await handler(request)
        return await handler(
            request.override(arguments={"a": request.arguments["a"] * 2, "b": 0})
        )

    client = ScriptedChatClient(
        [
            [call("add", {"a": 2, "b": 5}, call_id="c1"), call("fail", call_id="c2")],
            "done",
        ]
    )
    result = await run(
        Agent(client, tools=[add, fail], middleware=[double]), "x", stream=stream
    )
    assert [r.tool_call.call_id for r in seen] == ["c1", "c2"]
    assert isinstance(seen[0].tool, FunctionTool)
    assert seen[0].tool.name == "add"
    results = result.messages[1].contents
    assert results[0].result == 4
    assert results[1].exception is not None


async def test_declaration_only_tool_via_handler_stays_pending(stream):
    """HK-10: for a declaration-only tool request.tool is None; awaiting handler leaves
    the call pending (LP-11)."""
    tools_seen = []

    @wrap_tool_call
    async def look(request, handler):
        tools_seen.append(request.tool)
        return await handler(request)

    declared = {"name": "ask_user", "parameters": {"type": "object", "properties": {}}}
    client = ScriptedChatClient([[call("ask_user")]])
    result = await run(
        Agent(client, tools=[declared], middleware=[look]), "x", stream=stream
    )
    assert tools_seen == [None]
    assert [c.name for c in result.user_input_requests] == ["ask_user"]


async def test_decorators_make_named_hook_middleware(stream):
    """HK-11: each decorator turns one function into a HookMiddleware named after it."""
    log = []

    @before_agent
    async def start(state):
        log.append("start")

    @after_agent
    def finish(state):
        log.append("finish")

    @after_model
    def seen(state):
        log.append("model")

    assert isinstance(start, HookMiddleware)
    assert start.name == "start"
    assert finish.overridden() == {"after_agent"}
    await run(
        Agent(ScriptedChatClient(["x"]), middleware=[start, finish, seen]),
        "x",
        stream=stream,
    )
    assert log == ["start", "model", "finish"]
    with pytest.raises(TypeError, match="decorates a function"):
        before_model(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"tool_choice": "required", "temperature": 0.5},
        {
            "response_format": {"type": "json_object"},
            "metadata": {"a": "b"},
            "tool_choice": "none",
        },
    ],
)
async def test_unchanged_request_sends_what_the_call_would_send(stream, options):
    """HK-8: a wrap hook that passes the request on unchanged changes nothing the
    provider receives."""

    @wrap_model_call
    async def passthrough(request, handler):
        return await handler(request)

    plain, wrapped = ScriptedChatClient(["x"]), ScriptedChatClient(["x"])
    for client, middleware in ((plain, []), (wrapped, [passthrough])):
        agent = Agent(
            client, instructions="hi", default_options=options, middleware=middleware
        )
        await run(agent, "x", stream=stream)
    assert wrapped.requests[0].options == plain.requests[0].options
    assert wrapped.requests[0].texts == plain.requests[0].texts


def test_request_override_errors():
    """HK-8, HK-10: override refuses unknown fields and named options inside options; a
    new tool_call brings its arguments."""
    request = ModelRequest((), None, (), None, None, {}, None, HookState((), {}))
    with pytest.raises(TypeError, match="may not hold"):
        request.override(options={"instructions": "x"})
    assert request.override(messages=[Message("user", ["hi"])]).messages[0].text == "hi"
    tool_request = ToolCallRequest(
        call("f", {"a": 1}), None, {"a": 1}, HookState((), {})
    )
    with pytest.raises(TypeError, match="unknown field"):
        tool_request.override(name="g")
    assert dict(tool_request.override(tool_call=call("g", {"b": 2})).arguments) == {
        "b": 2
    }


def test_compiled_once_and_again_when_changed():
    """HK-3, HK-9: a hook middleware compiles once (the same functions on every run,
    tools wrapped once) and again when its tools change."""

    def extra() -> str:
        """Extra."""
        return "x"

    class Contrib(HookMiddleware):
        def before_model(self, state):
            return None

    mw = Contrib()
    mw.tools = [extra]
    first, second = mw.__minagent_middleware__(), mw.__minagent_middleware__()
    assert first == second
    assert categorize_middleware([mw]) == categorize_middleware([mw])
    mw.tools = []
    assert len(mw.__minagent_middleware__()) == 1  # no agent part without tools


async def test_default_hooks_do_nothing():
    """HK-3: the base class's hooks are no-ops (so a subclass may call super())."""
    mw = HookMiddleware()
    state = HookState((), {})
    assert [
        mw.before_agent(state),
        mw.after_agent(state),
        mw.before_model(state),
        mw.after_model(state),
    ] == [None] * 4
    assert mw.wrap_model_call("r", lambda r: r) == "r"
    assert mw.wrap_tool_call("r", lambda r: r) == "r"
    assert repr(mw) == "<HookMiddleware hook middleware: no hooks>"
