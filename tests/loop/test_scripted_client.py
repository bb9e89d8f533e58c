"""`minagent.testing.ScriptedChatClient`: the scripted model every loop test stands on.

It is a real `BaseChatClient`, so each test here also exercises the loop rules it relies
on; the docstrings cite those rules.
"""

from __future__ import annotations

from typing import Any

import pytest

from minagent import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    SupportsChatGetResponse,
    UsageDetails,
    tool,
)
from minagent.testing import (
    Request,
    ScriptedChatClient,
    ScriptExhaustedError,
    call,
    reply,
    text_chunks,
)
from tests.loop._script import Script, add, describe, results, run_both, run_mode


def test_is_a_real_chat_client() -> None:
    """LP-2: the scripted client is a BaseChatClient (the loop runs around it)."""
    client = ScriptedChatClient(["hi"])
    assert isinstance(client, BaseChatClient)
    assert isinstance(client, SupportsChatGetResponse)


# ---------------------------------------------------------------------------------------------
# Recording and exhaustion


async def test_records_every_request() -> None:
    """LP-3, LP-4: each model call is recorded with the messages, options, mode and
    extra keyword arguments it received; options["instructions"] reaches the client."""
    client = ScriptedChatClient(
        [reply(call("add", {"a": 1, "b": 2}, call_id="c1")), "three"]
    )
    response = await client.get_response(
        "1+2?", options={"tools": [add], "instructions": "be exact"}, user_tag="t1"
    )
    assert response.text == "three"
    first, second = client.requests
    assert isinstance(first, Request)
    assert first.texts == ["user: 1+2?"]
    assert second.texts == ["user: 1+2?", "assistant: ", "tool: "]
    assert describe(second.messages)[1:] == [
        "assistant: call c1 add",
        "tool: result c1=3",
    ]
    assert first.options["instructions"] == "be exact"
    assert first.options["tools"] == [add]
    assert (first.stream, second.stream) == (False, False)
    assert first.kwargs == {"user_tag": "t1"}

    streaming = ScriptedChatClient(["hello"])
    await streaming.get_response("hi", stream=True).get_final_response()
    assert streaming.requests[0].stream is True


async def test_recorded_requests_are_copies() -> None:
    """LP-3: a recorded request does not change when the loop's transcript grows
    later."""
    client = ScriptedChatClient(
        [reply(call("add", {"a": 1, "b": 1}, call_id="c1")), "two"]
    )
    await client.get_response("1+1?", options={"tools": [add]})
    assert len(client.requests[0].messages) == 1
    assert len(client.requests[1].messages) == 3


async def test_an_unscripted_call_raises_a_helpful_error(stream: bool) -> None:
    """LP-2: a call beyond the script raises ScriptExhaustedError (an AssertionError)
    naming the call number, the script length and what the call received; in both
    modes."""
    script = Script(reply(call("add", {"a": 1, "b": 1}, call_id="c1")))
    with pytest.raises(ScriptExhaustedError) as info:
        await run_mode(script, "what is one plus one", stream, options={"tools": [add]})
    message = str(info.value)
    assert isinstance(info.value, AssertionError)
    assert "model call 2 was not scripted" in message
    assert "the script has 1 steps" in message
    assert "user: what is one plus one" in message
    assert len(script.clients[0].requests) == 2  # the extra call is recorded too


async def test_assert_consumed() -> None:
    """LP-2: assert_consumed fails while steps are left, naming how many, and passes
    after."""
    client = ScriptedChatClient(["one", "two"])
    with pytest.raises(AssertionError, match="2 scripted step"):
        client.assert_consumed()
    await client.get_response("hi")
    assert client.unconsumed == ["two"]
    with pytest.raises(AssertionError, match="1 scripted step"):
        client.assert_consumed()
    await client.get_response("hi again")
    client.assert_consumed()
    assert client.position == 2


# ---------------------------------------------------------------------------------------------
# Step kinds, each in both modes


async def test_str_step() -> None:
    """LP-2: a str step is an assistant message with that text."""
    script = Script("hello there")
    ns, streamed, updates = await run_both(script, "hi")
    assert streamed == ns
    assert describe(ns.messages) == ["assistant: hello there"]
    assert [(u.role, u.text) for u in updates] == [("assistant", "hello there")]


async def test_content_step() -> None:
    """LP-2, LP-4: a Content step is one assistant message holding it."""
    script = Script(call("add", {"a": 2, "b": 5}, call_id="c1"), "seven")
    ns, streamed, _ = await run_both(script, "2+5?", options={"tools": [add]})
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call c1 add",
        "tool: result c1=7",
        "assistant: seven",
    ]


async def test_list_of_contents_step() -> None:
    """LP-2, LP-4: a list of Content (and str) is one assistant message with those
    contents."""
    script = Script(
        [
            "Adding.",
            call("add", {"a": 1, "b": 1}, call_id="c1"),
            call("add", {"a": 2, "b": 2}, call_id="c2"),
        ],
        [Content.from_text_reasoning("easy"), "Two and four."],
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [add]})
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: Adding., call c1 add, call c2 add",
        "tool: result c1=2, result c2=4",
        "assistant: text_reasoning, Two and four.",
    ]


async def test_chat_response_step_keeps_its_fields() -> None:
    """LP-2, LP-18: a ChatResponse step is used as is; its response fields and usage
    reach the final response identically in both modes."""
    step = reply(
        "done",
        usage=UsageDetails(input_token_count=5, output_token_count=1),
        response_id="resp-1",
        conversation_id="conv-1",
        model="scripted-large",
        created_at="2025-01-01T00:00:00Z",
        finish_reason="stop",
        additional_properties={"trace": "abc"},
    )
    script = Script(step)
    ns, streamed, updates = await run_both(script, "hi")
    assert streamed == ns
    assert (ns.response_id, ns.conversation_id, ns.model) == (
        "resp-1",
        "conv-1",
        "scripted-large",
    )
    assert (ns.created_at, ns.finish_reason) == ("2025-01-01T00:00:00Z", "stop")
    assert ns.additional_properties == {"trace": "abc"}
    assert ns.usage_details == UsageDetails(input_token_count=5, output_token_count=1)
    assert [c.type for u in updates for c in u.contents] == ["text", "usage"]


async def test_update_list_step_is_streamed_exactly_and_merged_otherwise() -> None:
    """LP-2: a list of updates is streamed exactly as given (chunk boundaries under the
    test's control) and merged with ChatResponse.from_updates when not streaming."""
    chunks = text_chunks(
        "Hel", "lo, ", "world", usage=UsageDetails(output_token_count=3)
    )
    script = Script(chunks)
    ns, streamed, updates = await run_both(script, "hi")
    assert streamed == ns
    assert updates == chunks
    assert ns.text == "Hello, world"
    assert ns.usage_details == UsageDetails(output_token_count=3)
    assert ns == ChatResponse.from_updates(chunks)


async def test_streamed_argument_deltas_merge_into_one_call() -> None:
    """LP-2, LP-4, TY-10: tool-call argument deltas are streamed as given; the loop runs
    the merged call once with the complete arguments."""
    deltas = [
        ChatResponseUpdate(["Let me add."], "assistant"),
        ChatResponseUpdate(
            [Content.from_function_call("c1", "add", '{"a": ')], "assistant"
        ),
        ChatResponseUpdate(
            [Content(type="function_call", arguments="40, ")], "assistant"
        ),
        ChatResponseUpdate(
            [Content.from_function_call("c1", "", '"b": 2}')], "assistant"
        ),
    ]
    script = Script(deltas, "42")
    ns, streamed, updates = await run_both(script, "40+2?", options={"tools": [add]})
    assert streamed == ns
    assert updates[:4] == deltas
    assert results(ns) == {"c1": 42}
    (merged,) = [c for c in ns.messages[0].contents if c.type == "function_call"]
    assert (merged.call_id, merged.name, merged.parse_arguments()) == (
        "c1",
        "add",
        {"a": 40, "b": 2},
    )


async def test_exception_step_is_raised(stream: bool) -> None:
    """LP-2: an exception step is raised by the model call, in both modes."""
    script = Script(TimeoutError("the model timed out"))
    with pytest.raises(TimeoutError, match="timed out"):
        await run_mode(script, "hi", stream)
    assert len(script.clients[0].requests) == 1


async def test_callable_step_is_computed_at_call_time() -> None:
    """LP-2, LP-4: a callable step receives the messages and options of the call and
    returns any other kind of step (also an exception to raise)."""
    seen: list[tuple[list[str], Any]] = []

    def respond(messages: list[Message], options: dict[str, Any]) -> Any:
        seen.append((describe(messages), options.get("tool_choice")))
        last = messages[-1]
        if last.role == "tool":
            return f"The sum is {last.contents[0].result}."
        return [call("add", {"a": 20, "b": 22}, call_id="c1")]

    script = Script(respond, respond)
    ns, streamed, _ = await run_both(
        script, "20+22?", options={"tools": [add], "tool_choice": "auto"}
    )
    assert streamed == ns
    assert ns.text == "The sum is 42."
    assert (
        seen
        == [
            (["user: 20+22?"], "auto"),
            (["user: 20+22?", "assistant: call c1 add", "tool: result c1=42"], "auto"),
        ]
        * 2
    )

    failing = Script(lambda messages, options: ValueError("computed failure"))
    for stream in (False, True):
        with pytest.raises(ValueError, match="computed failure"):
            await run_mode(failing, "hi", stream)


async def test_invalid_step_is_a_type_error(stream: bool) -> None:
    """LP-2: a step of no known kind fails loudly, naming it."""
    script = Script(12345)
    with pytest.raises(TypeError, match="not a valid script step: 12345"):
        await run_mode(script, "hi", stream)


# ---------------------------------------------------------------------------------------------
# The helpers


def test_call_helper() -> None:
    """LP-4: call() builds a function_call; dict arguments become a JSON string, a
    string is kept, and each call gets a fresh call_id unless one is given."""
    first = call("add", {"a": 1, "b": 2})
    second = call("add", '{"a": 1')
    assert first.type == "function_call"
    assert first.arguments == '{"a": 1, "b": 2}'
    assert first.parse_arguments() == {"a": 1, "b": 2}
    assert second.arguments == '{"a": 1'
    assert first.call_id != second.call_id
    assert call("add", call_id="mine").call_id == "mine"
    assert call("add").arguments == "{}"


def test_reply_and_text_chunks_helpers() -> None:
    """LP-18: reply() is an assistant response with contents, usage and fields;
    text_chunks() one update per chunk plus a usage update."""
    response = reply(
        "a", call("add", {}), usage=UsageDetails(input_token_count=1), response_id="r"
    )
    assert [m.role for m in response.messages] == ["assistant"]
    assert [c.type for c in response.messages[0].contents] == ["text", "function_call"]
    assert response.usage_details == UsageDetails(input_token_count=1)
    assert response.response_id == "r"
    updates = text_chunks("x", "y", usage=UsageDetails(output_token_count=2))
    assert [(u.role, u.text) for u in updates[:2]] == [
        ("assistant", "x"),
        ("assistant", "y"),
    ]
    assert updates[2].contents[0].usage_details == UsageDetails(output_token_count=2)
    assert text_chunks("only") == [ChatResponseUpdate(["only"], "assistant")]


async def test_sync_and_async_tools_run_against_the_script() -> None:
    """LP-4, LP-6: a scripted conversation with a sync tool, an async tool and a failing
    tool."""

    @tool
    async def shout(text: str) -> str:
        return text.upper()

    @tool
    def whisper(text: str) -> str:
        return text.lower()

    script = Script(
        reply(
            call("shout", {"text": "hi"}, call_id="s"),
            call("whisper", {"text": "HI"}, call_id="w"),
            call("whisper", {"text": 3}, call_id="bad"),
        ),
        "ok",
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [shout, whisper]})
    assert streamed == ns
    found = results(ns)
    assert (found["s"], found["w"]) == ("HI", "hi")
    assert found["bad"].startswith(
        "Error: Argument parsing failed. Invalid arguments for whisper:"
    )
    script.assert_consumed()
