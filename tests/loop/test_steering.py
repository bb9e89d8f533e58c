"""The live transcript and the steering inbox (spec/loop.md LP-15 .. LP-17), and seed
002's scenario end to end: a user message sent while a slow tool runs reaches the next
model call.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from minagent import (
    ChatContext,
    ContentError,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    Inbox,
    Message,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent.testing import call, reply
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
