"""Issue 13 (hardening), the loop's half: model output and tools never hang or kill a
run."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from minagent import (
    Agent,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    Message,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run


def results(response: Any) -> list[Content]:
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


@pytest.mark.parametrize("raised", [StopIteration, StopAsyncIteration])
async def test_a_sync_tool_raising_stop_iteration_gives_an_error_result(
    stream: bool, raised: type
) -> None:
    """TL-9, LP-6: a sync tool that raises StopIteration (or StopAsyncIteration) gives
    an error result instead of hanging the run forever (the exception cannot cross the
    executor future)."""

    @tool
    def first_item(items: list[int]) -> int:
        """The first item."""
        raise raised("empty")

    client = ScriptedChatClient(
        [reply(call("first_item", {"items": []}, call_id="f1")), "No items."]
    )
    response = await asyncio.wait_for(
        run(Agent(client, tools=[first_item]), "go", stream=stream), 10
    )
    assert response.text == "No items."
    [result] = results(response)
    assert result.exception == f"the tool raised {raised.__name__}: empty"


async def test_two_calls_with_one_id_each_get_a_result(stream: bool) -> None:
    """LP-26, TY-10: a model that sends two calls with one id (streamed with argument
    deltas, or whole) gets both run, the second renamed, each with its own result,
    equally in both modes."""
    ran: list[int] = []

    @tool
    def double(n: int) -> int:
        """Double n."""
        ran.append(n)
        return 2 * n

    streamed_calls = [
        ChatResponseUpdate(
            [Content.from_function_call("dup", "double", '{"n"')], "assistant"
        ),
        ChatResponseUpdate(
            [Content.from_function_call("dup", "", ": 1}")], "assistant"
        ),
        ChatResponseUpdate(
            [Content.from_function_call("dup", "double", '{"n": ')], "assistant"
        ),
        ChatResponseUpdate([Content.from_function_call("dup", "", "2}")], "assistant"),
    ]
    client = ScriptedChatClient([streamed_calls, "done"])
    response = await run(Agent(client, tools=[double]), "go", stream=stream)
    assert sorted(ran) == [1, 2]
    assert [(r.call_id, r.result) for r in results(response)] == [
        ("dup", 2),
        ("dup~2", 4),
    ]
    sent = client.requests[1].messages
    assert [c.call_id for c in sent[1].contents] == ["dup", "dup~2"]


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


class ToolLike:
    """A tool without FunctionTool: name, description, parameters and invoke."""

    name = "lookup"
    description = "Look up a key."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"key": {"type": "string", "maxLength": 3}},
        "required": ["key"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def invoke(self, arguments: Any, *, context: Any = None) -> str:
        self.seen.append(dict(arguments))
        return "found"


async def test_tool_like_objects_are_validated_like_function_tools(
    stream: bool,
) -> None:
    """LP-6: arguments that violate a tool-like object's schema never reach its invoke;
    the model gets the validation error."""
    lookup = ToolLike()
    client = ScriptedChatClient(
        [
            reply(
                call("lookup", {"key": "toolong"}, call_id="a"),
                call("lookup", {"key": "ok"}, call_id="b"),
            ),
            "done",
        ]
    )
    response = await run(Agent(client, tools=[lookup]), "go", stream=stream)
    assert lookup.seen == [{"key": "ok"}]
    bad, good = results(response)
    assert bad.exception == "invalid arguments"
    assert "$.key" in bad.result
    assert good.result == "found"


def test_the_final_response_type_is_unchanged() -> None:
    """LP-26: a response without duplicate ids is recorded unchanged (no copy, no
    rename)."""
    from minagent._transcript import Transcript

    response = ChatResponse(
        [Message("assistant", [call("a", {}, call_id="x"), call("b", {}, call_id="y")])]
    )
    assert Transcript([])._checked(response) is response


async def test_lone_surrogates_never_poison_a_thread(stream: bool) -> None:
    """LP-27: model text with a lone surrogate, a surrogate pair split across two
    streamed chunks, and a tool result with a lone surrogate are repaired before they
    are stored: the next request can be encoded (utf-8)."""
    from minagent import ChatResponseUpdate

    @tool
    def broken() -> str:
        """Returns a lone surrogate."""
        return "bad \udc00 result"

    split_pair = [
        ChatResponseUpdate([Content.from_text("smile \ud83d")], "assistant"),
        ChatResponseUpdate([Content.from_text("\ude00 and \ud800")], "assistant"),
    ]
    client = ScriptedChatClient(
        [reply(call("broken", {}, call_id="b")), split_pair, "next"]
    )
    agent = Agent(client, tools=[broken])
    thread = agent.get_new_thread()
    first = await run(agent, "go", stream=stream, thread=thread)
    assert first.messages[-1].text == "smile \U0001f600 and \ufffd"
    assert results(first)[0].result == "bad \ufffd result"
    await run(agent, "again", stream=stream, thread=thread)
    for message in client.requests[-1].messages:
        message.to_json().encode("utf-8")  # would raise on a lone surrogate
        for content in message.contents:
            for value in (content.text, content.result):
                if isinstance(value, str):
                    value.encode("utf-8")


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


async def test_a_broken_history_is_repaired_before_it_is_sent(stream: bool) -> None:
    """LP-28, HI-1: a thread restored with a dangling call and an orphan result is sent
    valid."""
    from minagent import AgentThread, is_valid_history

    broken = [
        Message("user", ["hi"]),
        Message("assistant", [call("lookup", {}, call_id="dangling")]),
        Message("tool", [Content.from_function_result("orphan", "stale")]),
        Message("assistant", ["earlier answer"]),
    ]
    client = ScriptedChatClient(["fine"])
    thread = AgentThread(messages=list(broken))
    await run(Agent(client), "next", stream=stream, thread=thread)
    sent = client.requests[0].messages
    assert is_valid_history(sent)
    assert [
        c.call_id for m in sent for c in m.contents if c.type == "function_result"
    ] == ["dangling"]
    assert thread.messages[: len(broken)] == broken  # the thread keeps what it had


async def test_a_foreign_orphan_result_added_mid_run_is_not_sent(stream: bool) -> None:
    """LP-28: a tool that appends a message with an orphan result to the live transcript
    does not make the next model call receive an invalid history (the loop checks
    again)."""
    from minagent import is_valid_history

    @tool
    def meddle(ctx: FunctionInvocationContext) -> str:
        """Appends an orphan result."""
        ctx.messages.append(
            Message("tool", [Content.from_function_result("ghost", "boo")])
        )
        return "done"

    client = ScriptedChatClient([reply(call("meddle", {}, call_id="m1")), "fine"])
    await run(Agent(client, tools=[meddle]), "go", stream=stream)
    assert all(is_valid_history(r.messages) for r in client.requests)
    assert "ghost" not in {
        c.call_id for m in client.requests[1].messages for c in m.contents
    }


async def test_error_results_are_bounded(stream: bool) -> None:
    """LP-29: a 1 MB tool name and 10,000 unexpected properties give error results of a
    few KB."""

    @tool
    def f(a: int) -> int:
        """f"""
        return a

    args = {"a": 1, **{f"x{i}": i for i in range(10_000)}, "y" * 100_000: 1}
    client = ScriptedChatClient(
        [
            reply(call("f", args, call_id="1"), call("g" * 1_000_000, {}, call_id="2")),
            "ok",
        ]
    )
    response = await run(Agent(client, tools=[f]), "go", stream=stream)
    invalid, unknown = results(response)
    assert len(invalid.result) < 8_000
    assert invalid.result.endswith("more problems")
    assert len(unknown.result) < 300
    assert ("g" * 61 + "...") in unknown.result
    assert response.text == "ok"


async def test_the_history_is_checked_only_when_it_may_be_invalid(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LP-28: no check for a history without calls and results, nor after the loop's own
    appends; one check for a restored history with calls (then valid, kept valid by the
    loop)."""
    import minagent._transcript as loop_module

    checks: list[int] = []
    real = loop_module.repair_history

    def counting(messages: Any) -> Any:
        checks.append(len(messages))
        return real(messages)

    monkeypatch.setattr(loop_module, "repair_history", counting)

    @tool
    def lookup(key: str) -> str:
        """Look up."""
        return key

    client = ScriptedChatClient(
        [reply(call("lookup", {"key": "a"}, call_id="k1")), "found"]
    )
    await run(Agent(client, tools=[lookup]), "plain", stream=stream)
    assert checks == []
    restored = [
        Message("user", ["earlier"]),
        Message("assistant", [call("lookup", {"key": "z"}, call_id="old")]),
        Message("tool", [Content.from_function_result("old", "z")]),
    ]
    client = ScriptedChatClient(
        [reply(call("lookup", {"key": "b"}, call_id="k2")), "found"]
    )
    await run(
        Agent(client, tools=[lookup]),
        [*restored, Message("user", ["again"])],
        stream=stream,
    )
    assert checks == [4]  # before the first model call only
