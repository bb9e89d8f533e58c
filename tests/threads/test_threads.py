"""Threads: history, service mode, serialisation, restore elsewhere, atomic updates,
approvals through a thread, concurrency (spec/threads.md)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from minagent import (
    Agent,
    AgentContext,
    AgentThread,
    ChatContext,
    Content,
    FunctionInvocationContext,
    Inbox,
    Message,
    SerializationError,
    StreamError,
    agent_middleware,
    chat_middleware,
    repair_history,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from tests._support.modes import run
from tests._support.strategies import threads

ROOT = Path(__file__).resolve().parents[2]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# ---------------------------------------------------------------------------------------------
# TH-1: local history and service mode


async def test_history_is_sent_and_appended(stream: bool) -> None:
    """TH-1: a run sends the thread's history before its input, then appends its input
    and every response message (tool calls and results included)."""
    client = ScriptedChatClient(
        [[call("add", {"a": 2, "b": 3}, call_id="c1")], "five", "ten"]
    )
    agent = Agent(client, tools=[add])
    thread = agent.get_new_thread()
    await run(agent, "2+3?", stream=stream, thread=thread)
    assert [m.role for m in thread.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert thread.messages[1].contents[0].call_id == "c1"
    assert thread.messages[2].contents[0].result == 5
    await run(
        agent,
        [Message("user", ["double"]), Message("user", ["it"])],
        stream=stream,
        thread=thread,
    )
    assert client.requests[2].texts == [
        "user: 2+3?",
        "assistant: ",
        "tool: ",
        "assistant: five",
        "user: double",
        "user: it",
    ]
    assert [m.text for m in thread.messages][-3:] == ["double", "it", "ten"]
    assert len(thread.messages) == 7
    assert thread.service_thread_id is None


async def test_injected_messages_are_stored_once_in_order(stream: bool) -> None:
    """TH-1: messages injected through the inbox and through
    FunctionInvocationContext.messages are part of the stored history, once each, where
    the model saw them."""

    @tool
    def note(ctx: FunctionInvocationContext) -> str:
        """Add a note to the conversation."""
        ctx.messages.append(Message("user", ["note from tool"]))
        return "noted"

    client = ScriptedChatClient([[call("note", {}, call_id="n1")], "done"])
    agent = Agent(client, tools=[note])
    thread = agent.get_new_thread()
    inbox = Inbox()
    inbox.put("from inbox")
    await run(agent, "start", stream=stream, thread=thread, inbox=inbox)
    stored = [(m.role, m.text) for m in thread.messages]
    assert stored == [
        ("user", "start"),
        ("user", "from inbox"),
        ("assistant", ""),
        ("tool", ""),
        ("user", "note from tool"),
        ("assistant", "done"),
    ]
    assert [(m.role, m.text) for m in client.requests[1].messages] == stored[:-1]


async def test_runs_without_a_thread_share_nothing() -> None:
    """TH-1: without a thread, each run sends only its input."""
    client = ScriptedChatClient(["a", "b"])
    agent = Agent(client)
    await agent.run("one")
    await agent.run("two")
    assert client.requests[1].texts == ["user: two"]


async def test_conversation_id_switches_the_thread_to_service_mode(
    stream: bool,
) -> None:
    """TH-1: a response with a conversation_id makes it the thread's service_thread_id;
    from then on runs send only new messages with options["conversation_id"], and the
    local history is not extended."""
    client = ScriptedChatClient(
        [
            reply("stored remotely", conversation_id="conv-1"),
            reply("second", conversation_id="conv-1"),
            reply("third", conversation_id="conv-2"),
            "fourth",
        ]
    )
    agent = Agent(client)
    thread = agent.get_new_thread()
    await run(agent, "one", stream=stream, thread=thread)
    assert thread.service_thread_id == "conv-1"
    assert thread.messages == []
    assert "conversation_id" not in client.requests[0].options

    await run(agent, "two", stream=stream, thread=thread)
    assert client.requests[1].texts == ["user: two"]
    assert client.requests[1].options["conversation_id"] == "conv-1"
    assert thread.messages == []

    await run(agent, "three", stream=stream, thread=thread)
    assert thread.service_thread_id == "conv-2"  # the service may move the conversation
    await run(agent, "four", stream=stream, thread=thread)
    assert client.requests[3].texts == ["user: four"]
    assert client.requests[3].options["conversation_id"] == "conv-2"
    assert thread.messages == []
    assert thread.serialize()["service_thread_id"] == "conv-2"


async def test_explicit_conversation_id_in_options_wins_over_the_thread() -> None:
    """TH-1: the thread's id is a default for options["conversation_id"]."""
    client = ScriptedChatClient(["x"])
    agent = Agent(client)
    thread = AgentThread(service_thread_id="conv-thread")
    await agent.run("hi", thread=thread, options={"conversation_id": "conv-explicit"})
    assert client.requests[0].options["conversation_id"] == "conv-explicit"


# ---------------------------------------------------------------------------------------------
# TH-2: serialisation


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(thread=threads())
def test_serialised_threads_round_trip(thread: AgentThread) -> None:
    """TH-2: serialize() is plain JSON data; deserialize_thread restores an equal thread
    (messages with text, calls, results, approval requests and responses, unknown
    content kinds and unknown fields included), also after a trip through json.dumps /
    json.loads."""
    agent = Agent(ScriptedChatClient())
    data = thread.serialize()
    assert data["type"] == "agent_thread"
    assert isinstance(data["version"], int)
    assert data["thread_id"] == thread.thread_id
    text = json.dumps(data, allow_nan=False)
    loaded = json.loads(text)
    assert loaded == data
    for source in (data, loaded):
        restored = agent.deserialize_thread(source)
        assert isinstance(restored, AgentThread)
        assert restored == thread
        assert restored.messages == thread.messages
        assert restored.service_thread_id == thread.service_thread_id
        assert restored.state == thread.state
        assert json.dumps(restored.serialize(), allow_nan=False) == text

    async def still_usable() -> None:  # a restored local thread keeps working in a run
        kinds = {c.type for m in thread.messages for c in m.contents}
        if thread.service_thread_id or kinds & {
            "function_approval_request",
            "function_approval_response",
        }:
            # service mode sends no history; approvals are resumed by the loop (TH-4)
            return
        client = ScriptedChatClient(["ok"])
        restored = agent.deserialize_thread(loaded)
        await Agent(client).run("next", thread=restored)
        # what is sent is the history made valid (HI-1): dangling calls get a result,
        # orphans go
        assert client.requests[0].messages[:-1] == repair_history(thread.messages)

    asyncio.run(still_usable())


def test_serialised_form_fields() -> None:
    """TH-2: the serialised form holds type, version, thread_id, service_thread_id,
    messages and state; AgentThread.deserialize and agent.deserialize_thread agree."""
    thread = AgentThread(
        messages=[Message("user", ["hi"])],
        service_thread_id="conv",
        thread_id="t1",
        state={"k": [1]},
    )
    data = thread.serialize()
    assert set(data) == {
        "type",
        "version",
        "thread_id",
        "service_thread_id",
        "messages",
        "state",
    }
    assert data["messages"] == [Message("user", ["hi"]).to_dict()]
    assert AgentThread.deserialize(data) == Agent(
        ScriptedChatClient()
    ).deserialize_thread(data)
    assert AgentThread.deserialize(data) != AgentThread()


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"type": "message", "version": 1}, "agent_thread.type"),
        (
            {"type": "agent_thread", "version": 1, "messages": "x"},
            "agent_thread.messages",
        ),
        (
            {"type": "agent_thread", "version": 1, "messages": [{"type": "message"}]},
            "agent_thread.messages[0].role",
        ),
        (
            {"type": "agent_thread", "version": 1, "service_thread_id": 3},
            "agent_thread.service_thread_id",
        ),
    ],
)
def test_bad_serialised_threads_name_the_field(data: dict[str, Any], path: str) -> None:
    """TH-2: data that does not describe a thread is a SerializationError naming the
    path."""
    with pytest.raises(SerializationError) as info:
        AgentThread.deserialize(data)
    assert info.value.path == path


_CONTINUE = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from minagent import Agent
from minagent.testing import ScriptedChatClient

async def main():
    client = ScriptedChatClient(["second answer"])
    agent = Agent(client, "Be helpful.")
    thread = agent.deserialize_thread(json.loads(sys.stdin.read()))
    response = await agent.run("second question", thread=thread)
    print(json.dumps({
        "request": [m.to_dict() for m in client.requests[0].messages],
        "answer": response.text,
        "thread": thread.serialize(),
    }))

asyncio.run(main())
"""


async def test_a_thread_restored_in_a_new_process_continues() -> None:
    """TH-2: a thread serialised after one run (with a tool call) and restored in
    another process continues the conversation: the second turn's request holds the
    first turn."""
    client = ScriptedChatClient(
        [[call("add", {"a": 20, "b": 22}, call_id="c1")], "It is 42."]
    )
    agent = Agent(client, "Be helpful.", tools=[add])
    thread = agent.get_new_thread()
    await agent.run("first question", thread=thread)
    first_turn = [m.to_dict() for m in thread.messages]
    assert len(first_turn) == 4

    def child() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", _CONTINUE, str(ROOT)],
            input=json.dumps(thread.serialize()),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=str(ROOT.parent),
        )

    done = await asyncio.to_thread(child)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["request"][:4] == first_turn
    assert [Message.from_dict(m).text for m in out["request"]] == [
        "first question",
        "",
        "",
        "It is 42.",
        "second question",
    ]
    assert out["request"][1]["contents"][0]["name"] == "add"
    assert out["request"][2]["contents"][0]["result"] == 42
    assert out["answer"] == "second answer"
    restored = AgentThread.deserialize(out["thread"])
    assert restored.thread_id == thread.thread_id
    assert restored.messages[:4] == thread.messages
    assert [m.text for m in restored.messages[4:]] == [
        "second question",
        "second answer",
    ]


# ---------------------------------------------------------------------------------------------
# TH-3: a thread changes only when a run finishes


async def test_a_failing_run_leaves_the_thread_unchanged(stream: bool) -> None:
    """TH-3: when the client raises, the thread is as it was."""
    client = ScriptedChatClient(
        ["ok", [call("add", {"a": 1, "b": 1}, call_id="c1")], RuntimeError("boom")]
    )
    agent = Agent(client, tools=[add])
    thread = agent.get_new_thread()
    await run(agent, "first", stream=stream, thread=thread)
    before = thread.serialize()
    with pytest.raises(RuntimeError, match="boom"):
        await run(agent, "second", stream=stream, thread=thread)
    assert thread.serialize() == before


@agent_middleware
async def passthrough(context: AgentContext, call_next: Any) -> None:
    await call_next()


@pytest.mark.parametrize(
    "middleware", [None, [passthrough]], ids=["plain", "agent-middleware"]
)
async def test_a_stream_closed_early_leaves_the_thread_unchanged(
    middleware: Any,
) -> None:
    """TH-3: a stream closed after its first update does not touch the thread."""
    client = ScriptedChatClient([text_chunks("a", "b", "c")])
    agent = Agent(client, middleware=middleware)
    thread = agent.get_new_thread()
    thread.messages.append(Message("user", ["earlier"]))
    before = thread.serialize()
    stream = agent.run("hi", stream=True, thread=thread)
    async with stream:
        async for update in stream:
            assert update.text == "a"
            break
    assert thread.serialize() == before
    with pytest.raises(StreamError):
        await stream.get_final_response()
    assert thread.serialize() == before


async def test_a_stream_abandoned_by_break_leaves_the_thread_unchanged() -> None:
    """TH-3: leaving the loop without closing explicitly does not update the thread
    either."""
    agent = Agent(ScriptedChatClient([text_chunks("a", "b")]))
    thread = agent.get_new_thread()
    stream = agent.run("hi", stream=True, thread=thread)
    async for _ in stream:
        break
    await stream.aclose()
    assert thread.messages == []


async def test_a_cancelled_run_leaves_the_thread_unchanged() -> None:
    """TH-3: cancelling a run while a tool runs leaves the thread as it was."""
    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Never finishes."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    agent = Agent(
        ScriptedChatClient([[call("wait_forever", {}, call_id="w1")]]),
        tools=[wait_forever],
    )
    thread = agent.get_new_thread()
    task = asyncio.ensure_future(agent.run("go", thread=thread))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert thread.messages == []


async def test_a_stream_consumed_without_get_final_response_updates_the_thread() -> (
    None
):
    """TH-3: iterating a stream to its end updates the thread without
    get_final_response()."""
    client = ScriptedChatClient(
        [[call("add", {"a": 1, "b": 2}, call_id="c1")], text_chunks("thr", "ee")]
    )
    agent = Agent(client, tools=[add])
    thread = agent.get_new_thread()
    async for _ in agent.run("1+2", stream=True, thread=thread):
        pass
    assert [m.role for m in thread.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert thread.messages[-1].text == "three"


# ---------------------------------------------------------------------------------------------
# TH-4: approvals through a thread


async def test_approval_paused_in_a_thread_resumes_with_a_clean_transcript(
    stream: bool,
) -> None:
    """TH-4: the paused run stores the approval request in the thread (which survives
    serialisation); the next run sends the approval response through the thread, the
    tool runs, and the model sees a clean call/result transcript."""
    ran: list[int] = []

    @tool(approval_mode="always_require")
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(amount)
        return f"paid {amount}"

    client = ScriptedChatClient(
        [
            [call("pay", {"amount": 10}, call_id="c1")],
            "Payment done.",
            "You are welcome.",
        ]
    )
    agent = Agent(client, tools=[pay])
    thread = agent.get_new_thread()
    paused = await run(agent, "pay 10", stream=stream, thread=thread)
    [request] = paused.user_input_requests
    assert request.type == "function_approval_request"
    assert ran == []
    stored = [c.type for m in thread.messages for c in m.contents]
    assert stored == ["text", "function_call", "function_approval_request"]

    thread = agent.deserialize_thread(json.loads(json.dumps(thread.serialize())))
    [request] = [
        c
        for m in thread.messages
        for c in m.contents
        if c.type == "function_approval_request"
    ]
    resumed = await run(
        agent,
        Message("user", [request.to_function_approval_response(True)]),
        stream=stream,
        thread=thread,
    )
    assert ran == [10]
    assert resumed.text == "Payment done."
    assert [m.role for m in resumed.messages] == ["tool", "assistant"]
    sent = client.requests[1].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool"]
    assert [c.type for m in sent for c in m.contents] == [
        "text",
        "function_call",
        "function_result",
    ]
    assert sent[2].contents[0].result == "paid 10"

    await run(agent, "thanks", stream=stream, thread=thread)
    third = client.requests[2].messages
    assert [c.type for m in third for c in m.contents] == [
        "text",
        "function_call",
        "function_result",
        "text",
        "text",
    ]
    assert ran == [10]


async def test_rejected_approval_through_a_thread() -> None:
    """TH-4: a rejection sent through the thread gives the call the rejection result."""

    @tool(approval_mode="always_require")
    def delete(path: str) -> str:
        """Delete a file."""
        raise AssertionError("must not run")

    client = ScriptedChatClient(
        [[call("delete", {"path": "/"}, call_id="d1")], "Not deleted."]
    )
    agent = Agent(client, tools=[delete])
    thread = agent.get_new_thread()
    [request] = (await agent.run("delete /", thread=thread)).user_input_requests
    await agent.run(
        Message("user", [request.to_function_approval_response(False)]), thread=thread
    )
    result = client.requests[1].messages[2].contents[0]
    assert result.type == "function_result"
    assert result.exception == "rejected"
    assert "rejected" in result.result


# ---------------------------------------------------------------------------------------------
# TH-5: concurrency


def echo_last_user(messages: list[Message], options: dict[str, Any]) -> str:
    last_user = [m for m in messages if m.role == "user"][-1]
    return f"echo: {last_user.text}"


async def test_fifty_concurrent_runs_keep_their_histories_apart() -> None:
    """TH-5: 50 concurrent runs (half of them streaming) on one agent with separate
    threads, twice, never see each other's messages."""
    turns = 2
    count = 50

    @chat_middleware
    async def interleave(context: ChatContext, call_next: Any) -> None:
        for _ in range(len(context.messages[-1].text) % 4 + 1):
            await asyncio.sleep(0)
        await call_next()

    client = ScriptedChatClient([echo_last_user] * (turns * count))
    agent = Agent(client, "echo", middleware=[interleave])
    threads = [agent.get_new_thread() for _ in range(count)]
    for turn in range(turns):
        responses = await asyncio.gather(
            *(
                run(agent, f"thread {i} turn {turn}", stream=i % 2 == 1, thread=thread)
                for i, thread in enumerate(threads)
            )
        )
        for i, response in enumerate(responses):
            assert response.text == f"echo: thread {i} turn {turn}"
    client.assert_consumed()
    for i, thread in enumerate(threads):
        assert [m.text for m in thread.messages] == [
            f"thread {i} turn 0",
            f"echo: thread {i} turn 0",
            f"thread {i} turn 1",
            f"echo: thread {i} turn 1",
        ]
    for request in client.requests:
        prefix = request.messages[0].text.rsplit(" turn", 1)[0]
        assert all(prefix in m.text for m in request.messages)


def test_thread_repr_and_equality() -> None:
    """TH-2: a thread shows where its history lives; equality is equality of the
    serialised form."""
    from minagent import AgentThread, Message

    local = AgentThread(messages=[Message("user", ["hi"])], thread_id="t1")
    service = AgentThread(service_thread_id="conv-9", thread_id="t2")
    assert repr(local) == "<AgentThread t1 1 messages>"
    assert repr(service) == "<AgentThread t2 service_thread_id='conv-9'>"
    assert local == AgentThread.deserialize(local.serialize())
    assert local != service
    assert local != "t1"


def test_a_hostile_thread_dict_is_a_serialization_error() -> None:
    """TH-7, TH-2: data nested 5000 deep is a SerializationError, not a
    RecursionError."""
    from minagent import AgentThread, SerializationError

    nested: dict[str, Any] = {}
    for _ in range(5000):
        nested = {"x": nested}
    data = {
        "type": "agent_thread",
        "version": 1,
        "thread_id": "t",
        "state": nested,
        "messages": [],
    }
    with pytest.raises(SerializationError):
        AgentThread.deserialize(data)


def test_a_threads_history_entry_keeps_what_is_not_its_messages() -> None:
    """TH-2: `serialize()` writes the messages apart; what else the history entry holds
    stays in the state, and `deserialize` restores an equal thread."""
    messages = [Message("user", ["hi"]), Message("assistant", ["hello"])]
    thread = AgentThread(
        messages=messages, state={"in_memory": {"messages": messages, "cursor": 2}}
    )
    data = thread.serialize()
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["state"]["in_memory"] == {"cursor": 2}
    restored = AgentThread.deserialize(data)
    assert restored.messages == messages
    assert restored.state["in_memory"]["cursor"] == 2


def test_a_history_entry_without_messages_stays_as_it_is() -> None:
    """TH-2: a history entry that holds no messages is state like any other: written and
    restored."""
    thread = AgentThread(state={"in_memory": {"cursor": 0}})
    data = thread.serialize()
    assert data["messages"] == []
    assert data["state"]["in_memory"] == {"cursor": 0}
    assert AgentThread.deserialize(data).state["in_memory"] == {"cursor": 0}


async def test_default_context_provider_adds_nothing() -> None:
    """AG-6: the base ContextProvider's invoking returns an empty Context and invoked
    does nothing."""
    from minagent import Context, ContextProvider, Message

    provider = ContextProvider()
    assert await provider.invoking([Message("user", ["x"])]) == Context()
    assert await provider.invoked([], []) is None


async def test_a_thread_shares_nothing_with_the_outside(stream: bool) -> None:
    """TH-7: changing the response, the caller's input or serialised data never changes
    the thread."""
    client = ScriptedChatClient(["one"])
    agent = Agent(client)
    thread = agent.get_new_thread()
    thread.state["notes"] = {"k": ["v"]}
    question = Message("user", ["question"], additional_properties={"tag": {"a": 1}})
    response = await run(agent, [question], stream=stream, thread=thread)
    before = thread.serialize()
    response.messages[0].contents.append(Content.from_text(" changed"))
    question.contents.clear()
    data = thread.serialize()
    data["state"]["notes"]["k"].append("x")
    data["messages"][0]["additional_properties"]["tag"]["a"] = 2
    assert thread.serialize() == before
    restored = agent.deserialize_thread(before)
    before["messages"][0]["contents"].clear()
    assert restored.messages[0].text == "question"


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


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
