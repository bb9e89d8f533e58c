"""The live transcript and the steering inbox (spec/loop.md LP-15 .. LP-17, LP-32),
progressive tools (LP-33), and seed 002's scenario end to end: a user message sent while
a slow tool runs reaches the next model call.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from minagent import (
    MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY,
    Agent,
    AgentSession,
    ChatContext,
    ContentError,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    FunctionTool,
    Inbox,
    Message,
    MessageInjectionMiddleware,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent._calls import _CallView
from minagent.testing import ScriptedChatClient, call, reply
from tests._support import modes
from tests._support.modes import run
from tests.loop._script import Script, add, assert_paired, describe, run_both

# ---------------------------------------------------------------------------------------------
# LP-15 FunctionInvocationContext.messages is the live transcript


async def test_message_appended_by_a_tool_joins_the_transcript() -> None:
    """LP-15: a message a tool appends to context.messages is placed after the batch's
    tool message, seen by every later model call, and part of the response."""

    @tool
    async def research(topic: str, context: FunctionInvocationContext) -> str:
        assert context.messages is not None
        await asyncio.sleep(0.01)  # let the sibling call finish first
        context.messages.append(Message("user", [f"also look at {topic} tests"]))
        return f"notes on {topic}"

    script = Script(
        reply(
            call("research", {"topic": "compositor"}, call_id="r1"),
            call("add", {"a": 1, "b": 1}, call_id="a1"),
        ),
        reply(call("add", {"a": 2, "b": 2}, call_id="a2")),
        "Summary.",
    )
    ns, streamed, updates = await run_both(
        script, "analyse", options={"tools": [research, add]}
    )
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call r1 research, call a1 add",
        "tool: result r1=notes on compositor, result a1=2",
        "user: also look at compositor tests",
        "assistant: call a2 add",
        "tool: result a2=4",
        "assistant: Summary.",
    ]
    second, third = script.requests[1:]
    assert describe(second.messages)[-1] == "user: also look at compositor tests"
    assert "user: also look at compositor tests" in describe(third.messages)
    assert describe(third.messages) == ["user: analyse", *describe(ns.messages)[:-1]]
    assert [u.role for u in updates] == [
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    for request in script.requests:
        assert_paired(request.messages)


async def test_context_messages_is_the_transcript_the_next_call_receives() -> None:
    """LP-15: function middleware sees the transcript so far in context.messages and can
    append to it; what it appends comes after the tool message."""
    script: Script

    @function_middleware
    async def steer(context: FunctionInvocationContext, call_next: Any) -> None:
        assert context.messages is not None
        script.log.append(describe(context.messages))
        await call_next()
        context.messages.append(Message("user", ["focus on the compositor code"]))

    script = Script(
        reply(call("add", {"a": 1, "b": 2}, call_id="c1")), "ok", middleware=[steer]
    )
    ns, streamed, _ = await run_both(script, "analyse", options={"tools": [add]})
    assert streamed == ns
    assert script.logs == [[["user: analyse", "assistant: call c1 add"]]] * 2
    assert describe(script.requests[1].messages) == [
        "user: analyse",
        "assistant: call c1 add",
        "tool: result c1=3",
        "user: focus on the compositor code",
    ]
    assert describe(ns.messages)[2] == "user: focus on the compositor code"


def test_a_calls_view_inserts_into_the_transcript_or_its_own_part() -> None:
    """LP-15: a tool call's messages view reads the transcript then what the call added;
    an insert before the end of the transcript goes into it, a later one (negative
    indexes counted from the end) stays with the call."""
    base = [Message("user", "0"), Message("assistant", "1")]
    view = _CallView(base)
    view.append(Message("tool", "2"))
    assert [m.text for m in view] == ["0", "1", "2"]
    # the append stays with the call
    assert base == [Message("user", "0"), Message("assistant", "1")]
    # before the call's own message: still the call's part
    view.insert(-1, Message("tool", "x"))
    assert [m.text for m in view.added] == ["x", "2"]
    # clamped to the start: into the transcript
    view.insert(-10, Message("system", "s"))
    assert [m.text for m in base] == ["s", "0", "1"]
    view.insert(1, Message("user", "y"))
    assert [m.text for m in view] == ["s", "y", "0", "1", "x", "2"]


async def test_the_transcript_view_behaves_as_a_list(stream: bool) -> None:
    """LP-15: a tool's `ctx.messages` reads, indexes, slices, replaces, deletes and
    inserts like the transcript list; its own additions join after the batch; slice
    assignment is refused."""
    seen: dict[str, Any] = {}

    @tool
    def edit(ctx: FunctionInvocationContext) -> str:
        """Edits the transcript."""
        view = ctx.messages
        assert view is not None
        seen["first"] = view[0].text
        seen["last_before"] = view[-1].role
        ctx.messages.append(Message("user", ["added"]))
        seen["slice"] = [m.text for m in view[-2:]]
        view[-1] = Message("user", ["replaced"])
        view.insert(len(view), Message("user", ["inserted"]))
        del view[-1]
        with pytest.raises(IndexError):
            _ = view[len(view)]
        with pytest.raises(TypeError):
            view[0:1] = []
        with pytest.raises(TypeError):
            del view[0:1]
        seen["repr"] = repr(view)
        return "edited"

    client = ScriptedChatClient([reply(call("edit", {}, call_id="e1")), "done"])
    response = await run(Agent(client, tools=[edit]), "start", stream=stream)
    assert seen["first"] == "start"
    assert seen["last_before"] == "assistant"
    assert seen["slice"] == ["", "added"]
    assert "replaced" in seen["repr"]
    assert [m.text for m in response.messages if m.role == "user"] == ["replaced"]


async def test_messages_appended_during_a_parallel_batch_follow_call_order(
    stream: bool,
) -> None:
    """LP-15: messages that concurrent tools append land in call order, whatever order
    the tools finish in, in both modes (Python 3.13 scheduling exposed completion order
    before)."""

    @tool
    async def slow_note(ctx: FunctionInvocationContext) -> str:
        """Slow."""
        await asyncio.sleep(0.05)
        ctx.messages.append(Message("user", ["from slow"]))
        return "slow"

    @tool
    async def fast_note(ctx: FunctionInvocationContext) -> str:
        """Fast."""
        ctx.messages.append(Message("user", ["from fast"]))
        assert ctx.messages[-1].text == "from fast"  # the call sees its own message
        return "fast"

    client = ScriptedChatClient(
        [
            reply(
                call("slow_note", {}, call_id="s"), call("fast_note", {}, call_id="f")
            ),
            "done",
        ]
    )
    response = await run(
        Agent(client, tools=[slow_note, fast_note]), "go", stream=stream
    )
    assert [m.text for m in response.messages if m.role == "user"] == [
        "from slow",
        "from fast",
    ]
    assert [m.role for m in response.messages] == [
        "assistant",
        "tool",
        "user",
        "user",
        "assistant",
    ]


# ---------------------------------------------------------------------------------------------
# LP-16 / LP-17 the inbox


def test_inbox_put_accepts_messages_and_strings() -> None:
    """LP-16: put takes a Message, or a str taken as a user message; anything else is
    refused."""
    inbox = Inbox()
    inbox.put("hello")
    inbox.put(Message("system", ["be brief"]))
    assert len(inbox) == 2
    first, second = inbox.drain()
    assert (first.role, first.text) == ("user", "hello")
    assert (second.role, second.text) == ("system", "be brief")
    assert len(inbox) == 0
    with pytest.raises(ContentError):
        inbox.put(42)  # type: ignore[arg-type]


async def test_inbox_is_drained_before_every_model_call_in_arrival_order() -> None:
    """LP-16: messages in the inbox before the run, and put during a batch, are appended
    before the next model call in arrival order, after the tool results."""
    inbox = Inbox()
    script: Script

    @tool
    def work(context: FunctionInvocationContext) -> str:
        inbox.put("second")
        inbox.put(Message("user", ["third"]))
        return "worked"

    def make() -> Any:
        inbox.put("first")
        return script()

    script = Script(reply(call("work", {}, call_id="w1")), "done")
    ns, streamed, updates = await run_both(
        make, "start", options={"tools": [work]}, inbox=inbox
    )
    assert streamed == ns
    first_call, second_call = script.requests
    assert describe(first_call.messages) == ["user: start", "user: first"]
    assert describe(second_call.messages) == [
        "user: start",
        "user: first",
        "assistant: call w1 work",
        "tool: result w1=worked",
        "user: second",
        "user: third",
    ]
    assert describe(ns.messages) == [
        *describe(second_call.messages)[1:],
        "assistant: done",
    ]
    assert [u.role for u in updates] == [
        "user",
        "assistant",
        "tool",
        "user",
        "user",
        "assistant",
    ]
    assert len(inbox) == 0


async def test_message_arriving_during_the_final_answer_gets_one_more_call() -> None:
    """LP-17: a message that arrives while the model produces what would be the final
    answer makes the loop call the model once more."""
    inbox = Inbox()
    calls = 0

    def answer(messages: list[Message], options: dict[str, Any]) -> str:
        nonlocal calls
        calls += 1
        inbox.put("wait, one more thing")
        return "First answer."

    script = Script(answer, "Second answer.")
    ns, streamed, _ = await run_both(script, "question", inbox=inbox)
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: First answer.",
        "user: wait, one more thing",
        "assistant: Second answer.",
    ]
    assert describe(script.requests[1].messages) == [
        "user: question",
        "assistant: First answer.",
        "user: wait, one more thing",
    ]
    assert calls == 2
    script.assert_consumed()


async def test_late_message_respects_max_iterations_and_stays_in_the_inbox() -> None:
    """LP-17, LP-16, LP-7: no extra call after the final call that max_iterations
    allows; a message still in the inbox when the run ends stays there."""
    inbox = Inbox()

    @chat_middleware
    async def late(context: ChatContext, call_next: Any) -> None:
        await call_next()
        if context.options.get("tool_choice") == "none":  # the final call LP-7 allows
            inbox.put("too late")

    script = Script(
        reply(call("add", {"a": 1, "b": 2}, call_id="c1")),
        "Only answer.",
        middleware=[late],
        config=FunctionInvocationConfiguration(max_iterations=1),
    )
    left: list[list[str]] = []

    # each run starts with an empty inbox; keep what the last run left
    def make() -> Any:
        left.append([m.text for m in inbox.drain()])
        return script()

    ns, streamed, _ = await run_both(
        make, "question", inbox=inbox, options={"tools": [add]}
    )
    left.append([m.text for m in inbox.drain()])
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call c1 add",
        "tool: result c1=3",
        "assistant: Only answer.",
    ]
    assert left == [[], ["too late"], ["too late"]]
    assert len(script.requests) == 2


async def test_message_left_after_a_required_batch_stays_in_the_inbox() -> None:
    """LP-16: a run that returns after a batch (tool_choice "required") leaves messages
    that arrived during the batch in the inbox."""
    inbox = Inbox()

    @tool
    def work() -> str:
        inbox.put("for later")
        return "done"

    script = Script(reply(call("work", {}, call_id="w1")))
    left: list[list[str]] = []

    # each run starts with an empty inbox; keep what the last run left
    def make() -> Any:
        left.append([m.text for m in inbox.drain()])
        return script()

    ns, streamed, _ = await run_both(
        make, "go", options={"tools": [work], "tool_choice": "required"}, inbox=inbox
    )
    left.append([m.text for m in inbox.drain()])
    assert streamed == ns
    assert describe(ns.messages) == ["assistant: call w1 work", "tool: result w1=done"]
    assert left == [[], ["for later"], ["for later"]]


# ---------------------------------------------------------------------------------------------
# Seed 002 end to end: a user message sent while a slow tool runs


@pytest.mark.parametrize("sender", ["task", "thread"])
async def test_seed_002_message_sent_during_a_slow_tool_reaches_the_model(
    sender: str,
) -> None:
    """LP-16, LP-2: a user message put into the inbox from another task (or an OS
    thread) while a slow tool runs reaches the next model call, stays in every later
    call, and is in the response in order, in both modes."""
    inbox = Inbox()
    tool_started = asyncio.Event()
    release = asyncio.Event()

    @tool
    async def scan_codebase() -> str:
        tool_started.set()
        await release.wait()
        return "42 files"

    async def user() -> None:
        """The user types a follow-up while the tool runs."""
        while True:
            await tool_started.wait()
            tool_started.clear()
            if sender == "task":
                inbox.put("focus on the compositor code")
            else:
                thread = threading.Thread(
                    target=inbox.put, args=("focus on the compositor code",)
                )
                thread.start()
                await asyncio.to_thread(thread.join)
            release.set()

    script = Script(
        reply(call("scan_codebase", {}, call_id="s1")),
        reply(call("add", {"a": 1, "b": 1}, call_id="a1")),
        "The compositor looks fine.",
    )

    def make() -> Any:
        release.clear()
        return script()

    typist = asyncio.create_task(user())
    try:
        ns, streamed, updates = await run_both(
            make,
            "Analyze this codebase",
            options={"tools": [scan_codebase, add]},
            inbox=inbox,
        )
    finally:
        typist.cancel()
        await asyncio.gather(typist, return_exceptions=True)
    assert streamed == ns
    expected = [
        "assistant: call s1 scan_codebase",
        "tool: result s1=42 files",
        "user: focus on the compositor code",
        "assistant: call a1 add",
        "tool: result a1=2",
        "assistant: The compositor looks fine.",
    ]
    assert describe(ns.messages) == expected
    first, second, third = script.requests
    assert describe(first.messages) == ["user: Analyze this codebase"]
    assert describe(second.messages) == ["user: Analyze this codebase", *expected[:3]]
    assert describe(third.messages) == ["user: Analyze this codebase", *expected[:5]]
    assert [u.role for u in updates] == [
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert updates[2].text == "focus on the compositor code"
    assert len(inbox) == 0
    script.assert_consumed()


async def test_the_middleware_queues_for_the_next_model_call_and_shows_what_waits(
    stream,
):
    """LP-32: `middleware.enqueue_messages(session, messages)` queues anything a run
    takes in the session's state; `get_pending_messages(session)` is what waits, as a
    new list (changing it changes nothing); the session's next run gives the messages to
    the model once, and then nothing waits."""
    middleware = MessageInjectionMiddleware()
    session = AgentSession()
    assert middleware.get_pending_messages(session) == []
    middleware.enqueue_messages(session, ["be brief", Message("user", ["and polite"])])
    pending = middleware.get_pending_messages(session)
    assert [m.text for m in pending] == ["be brief", "and polite"]
    assert pending is not session.state[MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY]
    pending.clear()
    assert len(middleware.get_pending_messages(session)) == 2
    client = ScriptedChatClient([reply("ok"), reply("again")])
    agent = Agent(client, middleware=[middleware])
    await run(agent, "hello", stream=stream, session=session)
    assert client.requests[0].texts == [
        "user: hello",
        "user: be brief",
        "user: and polite",
    ]
    assert middleware.get_pending_messages(session) == []
    await run(agent, "more", stream=stream, session=session)
    assert client.requests[1].texts.count("user: be brief") == 1


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"found {city}"


@tool
def clock() -> str:
    """The time."""
    return "noon"


@tool(name="add")
def add_with_default(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


def test_adding_tools_is_all_or_nothing() -> None:
    """LP-33: the same tool again is nothing new; a different tool with a name already
    there is an error naming it, and then none of the tools given is added."""
    context = FunctionInvocationContext(lookup, {"city": "Oslo"}, tools=[lookup])
    context.add_tools([lookup, clock])
    assert context.tools == [lookup, clock]
    context.add_tools(clock)
    assert context.tools == [lookup, clock]

    other = FunctionTool(
        name="lookup",
        func=lambda city: city,
        parameters={"type": "object", "properties": {}},
    )
    with pytest.raises(
        ValueError,
        match="a different tool named 'lookup' is already among the run's tools",
    ):
        context.add_tools([add_with_default, other])
    # `add`, before the clash, was not added either
    assert context.tools == [lookup, clock]


@pytest.mark.parametrize("verb", ["add", "remove"])
def test_a_context_outside_a_run_cannot_change_tools(verb: str) -> None:
    """LP-33: only a context the loop made has the run's live tool list; changing the
    tools of another is a `RuntimeError` saying so."""
    context = FunctionInvocationContext(lookup, {"city": "Oslo"})
    with pytest.raises(
        RuntimeError,
        match=f"Cannot {verb} tools: this FunctionInvocationContext is not bound",
    ):
        getattr(context, f"{verb}_tools")([clock])


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await modes.run(target, *args, stream=stream, **kwargs)
    return await modes.get_response(target, *args, stream=stream, **kwargs)


calls_made = []


@tool(name="get_weather")
def get_location_weather(location):
    """Get the weather for a location."""
    calls_made.append(location)
    return f"Sunny in {location}."


async def test_a_tool_adds_and_removes_tools(stream):
    """LP-33: `context.tools` is the run's tool list; `add_tools` / `remove_tools`
    change what the next model call is given and what the next batch can run."""

    @tool
    def unlock(ctx: FunctionInvocationContext):
        ctx.add_tools([get_location_weather])
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
