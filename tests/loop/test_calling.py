"""The function-invocation loop (spec/loop.md): calling and its configuration (LP-1 ..
LP-3, LP-24, LP-25, LP-60), the batch and repeated call ids (LP-4, LP-5, LP-26),
concurrency, usage and conversation ids (LP-18, LP-19).

Every rule runs in both modes with the same script through `run_both`, which also checks
that the streaming final response equals the non-streaming response (LP-2). The helpers
are in ``tests/loop/_script.py``, shared by the loop tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from minagent import (
    Agent,
    BaseChatClient,
    ChatContext,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    FunctionMiddleware,
    Message,
    ResponseStream,
    UsageDetails,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from tests._support.modes import run
from tests.loop._script import (
    Script,
    add,
    describe,
    get_weather,
    results,
    run_both,
)

# ---------------------------------------------------------------------------------------------
# LP-1 configuration


def test_configuration_defaults() -> None:
    """LP-1: the defaults of seed 000 plus max_function_calls=None."""
    config = FunctionInvocationConfiguration()
    assert config.enabled is True
    assert config.max_iterations == 40
    assert config.max_consecutive_errors_per_request == 3
    assert config.terminate_on_unknown_calls is False
    assert config.additional_tools == []
    assert config.include_detailed_errors is False
    assert config.max_function_calls is None
    assert (
        FunctionInvocationConfiguration().additional_tools
        is not config.additional_tools
    )
    assert ScriptedChatClient().function_invocation_configuration == config


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_iterations", 0),
        ("max_iterations", -3),
        ("max_consecutive_errors_per_request", -1),
        ("max_function_calls", 0),
    ],
)
def test_configuration_rejects_out_of_range_values(field: str, value: int) -> None:
    """LP-1: an out-of-range value is a ValueError that names the field."""
    with pytest.raises(ValueError, match=field):
        FunctionInvocationConfiguration(**{field: value})


def test_configuration_accepts_boundary_values() -> None:
    """LP-1: the smallest permitted values are accepted."""
    config = FunctionInvocationConfiguration(
        max_iterations=1, max_consecutive_errors_per_request=0, max_function_calls=1
    )
    assert (config.max_iterations, config.max_function_calls) == (1, 1)


async def test_disabled_loop_makes_one_call_and_returns_calls_unexecuted() -> None:
    """LP-1: with enabled=False the loop makes one model call; function calls come back
    as is."""
    ran: list[str] = []

    @tool
    def lookup(q: str) -> str:
        ran.append(q)
        return "found"

    script = Script(
        reply(call("lookup", {"q": "x"}, call_id="c1"), "calling"),
        config=FunctionInvocationConfiguration(enabled=False),
    )
    ns, streamed, updates = await run_both(script, "hi", options={"tools": [lookup]})
    assert streamed == ns
    assert ran == []
    assert describe(ns.messages) == ["assistant: call c1 lookup, calling"]
    assert len(script.requests) == 1
    assert [u.role for u in updates] == ["assistant"]
    script.assert_consumed()


# ---------------------------------------------------------------------------------------------
# LP-2 laziness and the streamed updates


async def test_nothing_runs_before_the_result_is_awaited_or_iterated() -> None:
    """LP-2: get_response returns synchronously and does nothing until awaited or
    iterated."""
    events: list[str] = []

    @chat_middleware
    async def spy(context: ChatContext, call_next: Any) -> None:
        events.append("chat")
        await call_next()

    client = ScriptedChatClient(["hello", "again"], middleware=[spy])
    pending = client.get_response("hi")
    stream = client.get_response("hi", stream=True)
    assert isinstance(stream, ResponseStream)
    await asyncio.sleep(0)
    assert client.requests == []
    assert events == []

    response = await pending
    assert response.text == "hello"
    assert events == ["chat"]
    assert len(client.requests) == 1
    assert (await stream.get_final_response()).text == "again"
    assert events == ["chat", "chat"]


async def test_streaming_yields_model_updates_tool_batches_and_injected_messages() -> (
    None
):
    """LP-2: a streaming run yields every model update as it arrives, one role="tool"
    update per batch and one update per injected message; the final response equals the
    non-streaming one."""

    @tool
    def note(context: FunctionInvocationContext) -> str:
        assert context.messages is not None
        context.messages.append(Message("user", ["remember the milk"]))
        return "noted"

    first = [
        ChatResponseUpdate(["Let me "], "assistant"),
        ChatResponseUpdate(["check."], "assistant"),
        ChatResponseUpdate([call("note", {}, call_id="c1")], "assistant"),
        ChatResponseUpdate([Content.from_usage(UsageDetails(input_token_count=3))]),
    ]
    script = Script(first, text_chunks("Do", "ne"))
    ns, streamed, updates = await run_both(script, "hi", options={"tools": [note]})
    assert streamed == ns
    assert updates[:4] == first
    assert [(u.role, u.text) for u in updates[4:]] == [
        ("tool", ""),
        ("user", "remember the milk"),
        ("assistant", "Do"),
        ("assistant", "ne"),
    ]
    assert [c.type for c in updates[4].contents] == ["function_result"]
    assert describe(ns.messages) == [
        "assistant: Let me check., call c1 note",
        "tool: result c1=noted",
        "user: remember the milk",
        "assistant: Done",
    ]
    assert ns.usage_details == UsageDetails(input_token_count=3)
    script.assert_consumed()


class OnlyNonStreaming(BaseChatClient):
    """A provider that implements only ``_inner_get_response``."""

    def __init__(self, responses: Sequence[ChatResponse], **kw: Any) -> None:
        super().__init__(**kw)
        self.responses = list(responses)

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        return self.responses.pop(0)


async def test_default_streaming_yields_the_non_streaming_response_as_updates() -> None:
    """LP-2: a provider with only _inner_get_response streams that response as updates,
    with the same final response in both modes."""

    def make() -> OnlyNonStreaming:
        return OnlyNonStreaming(
            [
                reply(
                    call("add", {"a": 1, "b": 2}, call_id="c1"),
                    response_id="r1",
                    usage=UsageDetails(input_token_count=1),
                ),
                reply(
                    "three",
                    response_id="r2",
                    model="m",
                    finish_reason="stop",
                    created_at="2024-01-01T00:00:00Z",
                    usage=UsageDetails(input_token_count=2),
                    additional_properties={"region": "eu"},
                ),
            ]
        )

    ns, streamed, updates = await run_both(make, "1+2?", options={"tools": [add]})
    assert streamed == ns
    assert ns.text == "three"
    assert results(ns) == {"c1": 3}
    assert (ns.response_id, ns.model, ns.finish_reason) == ("r2", "m", "stop")
    assert ns.created_at == "2024-01-01T00:00:00Z"
    assert ns.additional_properties == {"region": "eu"}
    assert ns.usage_details == UsageDetails(input_token_count=3)
    assert [u.role for u in updates] == ["assistant", None, "tool", "assistant", None]


async def test_a_model_call_that_produces_no_chat_response_is_a_type_error() -> None:
    """LP-2: a provider whose _inner_get_response returns something else is a TypeError
    naming it."""

    class Broken(ScriptedChatClient):
        async def _inner_get_response(
            self, *, messages: Any, options: Any, **kwargs: Any
        ) -> Any:
            return "not a response"

    with pytest.raises(Exception, match="ChatResponse"):
        await Broken([]).get_response("hi")


# ---------------------------------------------------------------------------------------------
# LP-3 chat middleware once per model call


async def test_chat_middleware_runs_once_per_model_call() -> None:
    """LP-3: chat middleware wraps every model call inside the loop; function middleware
    every tool call: chat, chat, function, function, chat, chat across a two-call
    loop."""
    script: Script

    @chat_middleware
    async def chat_log(context: ChatContext, call_next: Any) -> None:
        number = sum(1 for e in script.log if e.startswith("chat_before")) + 1
        script.log.append(f"chat_before_{number}")
        await call_next()
        script.log.append(f"chat_after_{number}")

    @function_middleware
    async def func_log(context: FunctionInvocationContext, call_next: Any) -> None:
        script.log.append("func_before")
        await call_next()
        script.log.append("func_after")

    script = Script(
        reply(call("add", {"a": 2, "b": 2}, call_id="c1")),
        "four",
        middleware=[chat_log, func_log],
    )
    ns, streamed, _ = await run_both(script, "2+2?", options={"tools": [add]})
    assert streamed == ns
    expected = ["chat_before_1", "chat_after_1", "func_before", "func_after"]
    expected += ["chat_before_2", "chat_after_2"]
    assert script.logs == [expected, expected]
    script.assert_consumed()


async def test_chat_context_messages_and_options_are_fresh_per_call() -> None:
    """LP-3: ChatContext.messages and options are copies per call: edits affect that
    call only; options["instructions"] reaches the provider."""
    seen: list[tuple[int, Any]] = []

    @chat_middleware
    async def meddle(context: ChatContext, call_next: Any) -> None:
        seen.append((len(context.messages), context.options.get("temperature")))
        context.messages.append(Message("system", ["only for this call"]))
        context.options["temperature"] = 0.5
        await call_next()

    script = Script(
        reply(call("add", {"a": 1, "b": 1}, call_id="c1")), "two", middleware=meddle
    )
    options = {"tools": [add], "instructions": "be brief"}
    ns, streamed, _ = await run_both(script, "1+1?", options=options)
    assert streamed == ns
    first, second = script.requests
    assert first.messages[-1].text == "only for this call"
    assert describe(second.messages) == [
        "user: 1+1?",
        "assistant: call c1 add",
        "tool: result c1=2",
        "system: only for this call",
    ]
    # nothing leaked from one call into the next
    assert seen == [(1, None), (3, None)] * 2
    assert first.options["instructions"] == second.options["instructions"] == "be brief"
    assert "temperature" not in options
    assert "only for this call" not in ns.text


async def test_in_place_edits_of_chat_context_messages_affect_that_call_only() -> None:
    """LP-3: editing a message of ChatContext.messages in place (replacing or adding
    contents) changes what that call sends, not the transcript, later calls or the
    response."""

    @chat_middleware
    async def redact(context: ChatContext, call_next: Any) -> None:
        for message in context.messages:
            if message.role == "user":
                message.contents[0] = Content.from_text("[redacted]")
            if message.role == "assistant":
                message.contents.append(Content.from_text("(annotated)"))
        await call_next()

    script = Script(
        reply("Checking.", call("add", {"a": 1, "b": 1}, call_id="c1")),
        "two",
        middleware=redact,
    )
    ns, streamed, _ = await run_both(script, "my secret sum", options={"tools": [add]})
    assert streamed == ns
    first, second = script.requests
    assert describe(first.messages) == ["user: [redacted]"]
    assert describe(second.messages) == [
        "user: [redacted]",
        "assistant: Checking., call c1 add, (annotated)",
        "tool: result c1=2",
    ]
    assert describe(ns.messages) == [
        "assistant: Checking., call c1 add",
        "tool: result c1=2",
        "assistant: two",
    ]


async def test_chat_middleware_without_a_result_ends_the_loop_cleanly() -> None:
    """LP-3, MW-7: chat middleware that skips a model call and sets no result gives an
    empty response for that call, and the loop ends cleanly with the transcript so
    far."""
    calls = 0

    @chat_middleware
    async def only_once(context: ChatContext, call_next: Any) -> None:
        nonlocal calls
        calls += 1
        if calls % 2 == 1:
            await call_next()

    script = Script(
        reply(call("add", {"a": 1, "b": 1}, call_id="c1")), middleware=[only_once]
    )
    ns, streamed, updates = await run_both(script, "go", options={"tools": [add]})
    assert streamed == ns
    assert describe(ns.messages) == ["assistant: call c1 add", "tool: result c1=2"]
    assert len(script.requests) == 1
    assert [u.role for u in updates] == ["assistant", "tool"]


# ---------------------------------------------------------------------------------------------
# LP-4 the batch


async def test_second_call_receives_call_and_result() -> None:
    """LP-4: the second model call receives [user, assistant(call), tool(result)]."""
    script = Script(
        reply(call("get_weather", {"city": "Oslo"}, call_id="c1")), "It is sunny."
    )
    ns, streamed, _ = await run_both(
        script, "Weather in Oslo?", options={"tools": [get_weather]}
    )
    assert streamed == ns
    second = script.requests[1]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[1].contents[0].call_id == "c1"
    (result,) = second.messages[2].contents
    assert (result.type, result.call_id, result.result) == (
        "function_result",
        "c1",
        "sunny in Oslo (celsius)",
    )
    assert result.exception is None
    assert describe(ns.messages) == [
        "assistant: call c1 get_weather",
        "tool: result c1=sunny in Oslo (celsius)",
        "assistant: It is sunny.",
    ]
    script.assert_consumed()


async def test_results_are_one_tool_message_in_call_order() -> None:
    """LP-4: several calls give one tool message with the results in call order,
    whatever order they finish in."""

    @tool
    async def wait(ms: int) -> int:
        await asyncio.sleep(ms / 1000)
        return ms

    calls = [call("wait", {"ms": ms}, call_id=f"c{ms}") for ms in (30, 1, 15, 0)]
    script = Script(reply(*calls), "done")
    ns, streamed, updates = await run_both(script, "go", options={"tools": [wait]})
    assert streamed == ns
    tool_messages = [m for m in ns.messages if m.role == "tool"]
    assert len(tool_messages) == 1
    assert [(c.call_id, c.result) for c in tool_messages[0].contents] == [
        ("c30", 30),
        ("c1", 1),
        ("c15", 15),
        ("c0", 0),
    ]
    assert [u.role for u in updates].count("tool") == 1


async def test_only_actionable_calls_run_and_a_repeated_call_id_is_renamed() -> None:
    """LP-4, LP-26: informational calls and calls answered in the same response are not
    run; a call_id that appears twice is two calls: the second is renamed and both run,
    each with its own result (issue 13: one result for two calls was sent before)."""
    ran: list[str] = []

    @tool
    def act(tag: str) -> str:
        ran.append(tag)
        return tag

    # Two messages with message ids, so that streaming keeps the repeated call_id apart
    # (in one streamed message a repeated call_id is an argument delta of the same call,
    # TY-10).
    response = ChatResponse(
        [
            Message(
                "assistant",
                [
                    Content.from_function_call(
                        "i1", "act", '{"tag": "info"}', informational_only=True
                    ),
                    call("act", {"tag": "hosted"}, call_id="h1"),
                    Content.from_function_result("h1", "done by the service"),
                    call("act", {"tag": "first"}, call_id="d1"),
                ],
                message_id="m1",
            ),
            Message(
                "assistant",
                [call("act", {"tag": "second"}, call_id="d1")],
                message_id="m2",
            ),
        ]
    )
    script = Script(response, "ok")
    ns, streamed, _ = await run_both(script, "go", options={"tools": [act]})
    assert streamed == ns
    # both calls (concurrent), in each of two runs
    assert sorted(ran) == ["first", "first", "second", "second"]
    assert describe(ns.messages)[2] == "tool: result d1=first, result d1~2=second"


def test_a_third_repeated_call_id_gets_the_next_suffix() -> None:
    """LP-26: `~2` taken, the next repeat is `~3`."""
    from minagent._transcript import Transcript

    response = ChatResponse(
        [Message("assistant", [call("f", {}, call_id="x"), call("f", {}, call_id="x")])]
    )
    transcript = Transcript([])
    transcript.call_ids = {"x", "x~2"}
    renamed = transcript._checked(response)
    assert [c.call_id for c in renamed.messages[0].contents] == ["x~3", "x~4"]


def function_results(response: Any) -> list[Content]:
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


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
    assert [(r.call_id, r.result) for r in function_results(response)] == [
        ("dup", 2),
        ("dup~2", 4),
    ]
    sent = client.requests[1].messages
    assert [c.call_id for c in sent[1].contents] == ["dup", "dup~2"]


def test_the_final_response_type_is_unchanged() -> None:
    """LP-26: a response without duplicate ids is recorded unchanged (no copy, no
    rename)."""
    from minagent._transcript import Transcript

    response = ChatResponse(
        [Message("assistant", [call("a", {}, call_id="x"), call("b", {}, call_id="y")])]
    )
    assert Transcript([])._checked(response) is response


@tool(name="get_weather")
def get_location_weather(location):
    """Get the weather for a location."""
    return f"sunny in {location}"


class CountingMiddleware(FunctionMiddleware):
    def __init__(self):
        self.seen = []

    async def process(self, context, next):
        self.seen.append(context.function.name)
        await next(context)


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
    agent = Agent(client=client, tools=[get_location_weather], middleware=[middleware])
    response = await run(agent, "weather?", stream=stream)
    results = {
        c.call_id: c.result
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    }
    assert results == {"x": "sunny in Oslo", "x~2": "sunny in Rome"}
    assert middleware.seen == ["get_weather", "get_weather"]


# ---------------------------------------------------------------------------------------------
# LP-5 concurrency


async def test_calls_of_one_batch_run_concurrently() -> None:
    """LP-4, LP-5: two async tools that each sleep in one response overlap in time."""
    script: Script

    @tool
    async def slow(tag: str) -> str:
        start = time.monotonic()
        await asyncio.sleep(0.2)
        script.log.append((tag, start, time.monotonic()))
        return tag

    script = Script(
        reply(
            call("slow", {"tag": "a"}, call_id="a"),
            call("slow", {"tag": "b"}, call_id="b"),
        ),
        "done",
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [slow]})
    assert streamed == ns
    for log in script.logs:
        (_, a_start, a_end), (_, b_start, b_end) = sorted(log)
        assert a_start < b_end, "the two calls did not overlap"
        assert b_start < a_end, "the two calls did not overlap"


async def test_sequential_tool_never_overlaps_another_call() -> None:
    """LP-5: a sequential=True tool runs alone; the batch runs in call order as
    groups."""
    script: Script

    async def record(tag: str) -> str:
        start = time.monotonic()
        script.log.append(("start", tag))
        await asyncio.sleep(0.05)
        script.log.append(("end", tag))
        script.log.append((tag, start, time.monotonic()))
        return tag

    @tool
    async def plain(tag: str) -> str:
        return await record(tag)

    @tool(sequential=True)
    async def alone(tag: str) -> str:
        return await record(tag)

    script = Script(
        reply(
            call("plain", {"tag": "p1"}, call_id="p1"),
            call("plain", {"tag": "p2"}, call_id="p2"),
            call("alone", {"tag": "s"}, call_id="s"),
            call("plain", {"tag": "p3"}, call_id="p3"),
        ),
        "done",
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [plain, alone]})
    assert streamed == ns
    assert [c.call_id for c in ns.messages[1].contents] == ["p1", "p2", "s", "p3"]
    for log in script.logs:
        order = [e for e in log if e[0] in ("start", "end")]
        # p1, p2 together
        assert {order[0], order[1]} == {("start", "p1"), ("start", "p2")}
        assert order[4:] == [
            ("start", "s"),
            ("end", "s"),
            ("start", "p3"),
            ("end", "p3"),
        ]
        spans = {e[0]: e[1:] for e in log if len(e) == 3}
        s_start, s_end = spans["s"]
        for tag in ("p1", "p2", "p3"):
            start, end = spans[tag]
            assert end <= s_start or start >= s_end, (
                f"{tag} overlapped the sequential call"
            )


# ---------------------------------------------------------------------------------------------
# LP-18 usage, LP-19 conversation ids


async def test_usage_is_summed_over_all_model_calls() -> None:
    """LP-18: usage_details is the sum over all model calls of the request."""
    script = Script(
        reply(
            call("add", {"a": 1, "b": 2}, call_id="c1"),
            usage=UsageDetails(input_token_count=10, output_token_count=2),
        ),
        reply("three", usage=UsageDetails(input_token_count=15, output_token_count=1)),
    )
    ns, streamed, _ = await run_both(script, "1+2?", options={"tools": [add]})
    assert streamed == ns
    assert ns.usage_details == UsageDetails(input_token_count=25, output_token_count=3)


async def test_usage_is_none_when_no_call_reported_usage() -> None:
    """LP-18: no usage anywhere gives usage_details None; a call without usage adds
    nothing."""
    script = Script(reply(call("add", {"a": 1, "b": 2}, call_id="c1")), "three")
    ns, streamed, _ = await run_both(script, "1+2?", options={"tools": [add]})
    assert streamed == ns
    assert ns.usage_details is None

    script = Script(
        reply(call("add", {"a": 1, "b": 2}, call_id="c1")),
        reply("three", usage=UsageDetails(output_token_count=4)),
    )
    ns, streamed, _ = await run_both(script, "1+2?", options={"tools": [add]})
    assert streamed == ns
    assert ns.usage_details == UsageDetails(output_token_count=4)


async def test_conversation_id_is_carried_and_only_new_messages_are_sent() -> None:
    """LP-19: a conversation_id is put in the options of the following calls, which then
    send only the messages the service has not seen; the final response carries the last
    id."""
    script = Script(
        reply(call("add", {"a": 1, "b": 2}, call_id="c1"), conversation_id="conv-1"),
        reply(call("add", {"a": 3, "b": 4}, call_id="c2"), conversation_id="conv-2"),
        reply("done"),
    )
    ns, streamed, _ = await run_both(script, "sum things", options={"tools": [add]})
    assert streamed == ns
    first, second, third = script.requests
    assert "conversation_id" not in first.options
    assert describe(first.messages) == ["user: sum things"]
    assert second.options["conversation_id"] == "conv-1"
    assert describe(second.messages) == ["tool: result c1=3"]
    assert third.options["conversation_id"] == "conv-2"
    assert describe(third.messages) == ["tool: result c2=7"]
    assert ns.conversation_id == "conv-2"
    assert describe(ns.messages) == [
        "assistant: call c1 add",
        "tool: result c1=3",
        "assistant: call c2 add",
        "tool: result c2=7",
        "assistant: done",
    ]


async def test_conversation_id_given_by_the_caller() -> None:
    """LP-19: with a conversation_id in the caller's options, each following call sends
    only what came after the previous response."""
    script = Script(reply(call("add", {"a": 1, "b": 2}, call_id="c1")), "done")
    options = {"tools": [add], "conversation_id": "existing"}
    ns, streamed, _ = await run_both(script, "sum", options=options)
    assert streamed == ns
    first, second = script.requests
    assert (
        first.options["conversation_id"]
        == second.options["conversation_id"]
        == "existing"
    )
    assert describe(first.messages) == ["user: sum"]
    assert describe(second.messages) == ["tool: result c1=3"]


async def test_chat_middleware_editing_option_containers_affects_that_call_only() -> (
    None
):
    """LP-3: lists and dicts inside ChatContext.options (tools, metadata) are the call's
    own copies."""
    seen: list[tuple[int, dict[str, Any]]] = []

    @chat_middleware
    async def widen(context: ChatContext, call_next: Any) -> None:
        seen.append((len(context.options["tools"]), dict(context.options["metadata"])))
        context.options["tools"].append(
            {"name": "extra", "parameters": {"type": "object"}}
        )
        context.options["metadata"]["touched"] = True
        await call_next()

    def make() -> ScriptedChatClient:
        return ScriptedChatClient(
            [reply(call("add", {"a": 1, "b": 1}, call_id="c1")), "two"],
            middleware=widen,
        )

    ns, streamed, _ = await run_both(
        make, "sum", options={"tools": [add], "metadata": {"user": "u1"}}
    )
    assert ns == streamed
    # two calls per mode, each starting from the run's options
    assert seen == [(1, {"user": "u1"})] * 4


async def test_configuration_and_tool_edges() -> None:
    """LP-24, TL-4, TL-2: unknown configuration fields by attribute and item, mapping
    access, a non-list additional_tools; a sync tool that returns an awaitable is
    awaited; functools.partial tools."""
    import functools

    from minagent import FunctionInvocationConfiguration, FunctionTool

    config = FunctionInvocationConfiguration()
    with pytest.raises(AttributeError, match="no field 'nope'"):
        config.nope = 1  # type: ignore[attr-defined]
    with pytest.raises(KeyError, match="no field 'nope'"):
        _ = config["nope"]
    assert config.keys()[0] == "enabled"
    assert config.get("max_iterations") == 40
    assert config.get("nope", "fallback") == "fallback"
    with pytest.raises(ValueError, match="additional_tools must be a list"):
        config.additional_tools = ()  # type: ignore[assignment]

    async def later() -> str:
        return "awaited"

    def returns_awaitable() -> Any:
        return later()

    tool_ = FunctionTool(
        name="t",
        func=returns_awaitable,
        parameters={"type": "object", "properties": {}},
    )
    assert await tool_.invoke({}, skip_parsing=True) == "awaited"

    async def add(a: int, b: int) -> int:
        return a + b

    partial = FunctionTool(
        name="p", func=functools.partial(add, b=2), parameters={"type": "object"}
    )
    assert await partial.invoke({"a": 1}, skip_parsing=True) == 3


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("max_duration_seconds", "asyncio.timeout(seconds)"),
        ("allow_concurrent_invocation", "sequential=True"),
    ],
)
def test_upstreams_configuration_keys_say_what_to_write(key: str, words: str) -> None:
    """LP-60: in a dict, by item or by attribute: the LP-24 error with the field list
    and the hint; the configuration keeps its values."""
    client = ScriptedChatClient([])
    with pytest.raises(KeyError) as by_dict:
        ScriptedChatClient([], function_invocation_configuration={key: 1})
    config = client.function_invocation_configuration
    with pytest.raises(KeyError) as by_item:
        config[key] = 1
    with pytest.raises(AttributeError) as by_attribute:
        setattr(config, key, 1)
    for info in (by_dict, by_item, by_attribute):
        message = str(info.value)
        assert f"has no field '{key}'" in message
        assert "max_iterations" in message
        assert f"{key} is upstream's: " in message
        assert words in message
    assert config.max_iterations == 40
    with pytest.raises(KeyError) as other:
        config["no_such_key"] = 1
    assert "upstream's" not in str(other.value)


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


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
    agent = client.as_agent(tools=[get_location_weather])
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
