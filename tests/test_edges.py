"""Edge paths of the loop, the transcript view and the stream that ordinary runs do not
reach."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minagent import (
    Agent,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    Message,
    ResponseStream,
    StreamError,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run


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


async def test_get_response_rejects_options_that_are_not_a_mapping() -> None:
    """AG-12, LP-25: options must be a mapping, also for a client called directly."""
    with pytest.raises(TypeError, match="options must be a dict"):
        await ScriptedChatClient(["x"]).get_response("hi", options=["temperature"])  # type: ignore[arg-type]


async def test_surrogates_in_call_arguments_and_results_of_a_response_are_repaired(
    stream: bool,
) -> None:
    """LP-27: a function call's arguments and a hosted result in the model's own
    response are repaired too."""
    hosted = Content.from_function_result("h1", "bad \udc00")
    calling = Content.from_function_call("c1", "echo", '{"text": "x \ud800"}')

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    first = ChatResponse(
        [
            Message(
                "assistant",
                [Content.from_function_call("h1", "hosted", "{}"), hosted, calling],
            )
        ]
    )
    client = ScriptedChatClient([first, "done"])
    response = await run(Agent(client, tools=[echo]), "go", stream=stream)
    calls = [
        c for m in response.messages for c in m.contents if c.type == "function_call"
    ]
    texts = [c.arguments for c in calls if c.name == "echo"]
    assert texts == ['{"text": "x \ufffd"}']
    results = [
        c.result
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    ]
    assert "bad \ufffd" in results


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


async def test_two_tasks_finalising_at_once_share_one_result() -> None:
    """ST-13: two tasks that call get_final_response() while a slow finalizer runs get
    the same object; the finalizer runs once."""
    calls: list[int] = []
    gate = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        yield 1

    async def finalizer(updates: Any) -> str:
        calls.append(1)
        await gate.wait()
        return "final"

    stream: ResponseStream[int, str] = ResponseStream(source(), finalizer=finalizer)
    first = asyncio.ensure_future(stream.get_final_response())
    await asyncio.sleep(0)
    second = asyncio.ensure_future(stream.get_final_response())
    await asyncio.sleep(0)
    gate.set()
    assert await first == await second == "final"
    assert calls == [1]


async def test_a_failed_shared_finalisation_reaches_both_tasks() -> None:
    """ST-13: when the finalizer fails, the task that waited for it gets the same
    error."""
    gate = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        yield 1

    async def finalizer(updates: Any) -> str:
        await gate.wait()
        raise ValueError("finalizer broke")

    stream: ResponseStream[int, str] = ResponseStream(source(), finalizer=finalizer)
    first = asyncio.ensure_future(stream.get_final_response())
    await asyncio.sleep(0)
    second = asyncio.ensure_future(stream.get_final_response())
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(first, second, return_exceptions=True)
    assert [str(r) for r in results] == ["finalizer broke", "finalizer broke"]


async def test_a_waiting_reader_cancelled_leaves_no_waiter() -> None:
    """ST-13: a task waiting for its turn that is cancelled removes its waiter; the
    stream goes on."""
    release = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        await release.wait()
        yield 1
        yield 2

    stream: ResponseStream[int, list[int]] = ResponseStream(source(), finalizer=list)

    async def reader() -> list[int]:
        return [u async for u in stream]

    first = asyncio.ensure_future(reader())
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(stream.get_final_response())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert stream._waiters == []
    release.set()
    assert await first == [1, 2]
    assert await stream.get_final_response() == [1, 2]


async def test_a_stream_closed_while_a_task_waits_for_its_turn() -> None:
    """ST-13, ST-7: the stream is closed while another task waits to pull: that task's
    iteration ends without error and get_final_response() says the stream was closed."""
    release = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        await release.wait()
        yield 1

    stream: ResponseStream[int, list[int]] = ResponseStream(source(), finalizer=list)

    async def reader() -> list[int]:
        return [u async for u in stream]

    first = asyncio.ensure_future(reader())
    second = asyncio.ensure_future(reader())
    await asyncio.sleep(0)
    await stream.aclose()
    release.set()
    assert await first == []
    assert await second == []
    with pytest.raises(StreamError):
        await stream.get_final_response()


def test_coalescing_keeps_joined_texts_and_their_properties() -> None:
    """TY-10: adjacent texts (also across a usage content) join; on a clash the first
    one's properties win."""
    from minagent import UsageDetails

    updates = [
        ChatResponseUpdate(
            [Content("text", text="a", additional_properties={"k": 1})], "assistant"
        ),
        ChatResponseUpdate([Content.from_usage(UsageDetails(1, 1))]),
        ChatResponseUpdate(
            [Content("text", text="b", additional_properties={"k": 2})], "assistant"
        ),
    ]
    merged = ChatResponse.from_updates(updates).messages[0].contents
    assert [(c.text, c.additional_properties) for c in merged] == [("ab", {"k": 1})]


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


async def test_agent_edges() -> None:
    """AG-1, AG-12, AG-8, AG-7: BaseAgent.run must be implemented; run_stream names
    run(stream=True); options must be a mapping; an agent-as-tool whose run returns a
    ChatResponse or something else; a client that returns no ChatResponse."""
    from minagent import BaseAgent

    with pytest.raises(NotImplementedError, match="must implement run"):
        BaseAgent(name="b").run("x")
    agent = Agent(ScriptedChatClient([]))
    with pytest.raises(TypeError, match=r"run\(\.\.\., stream=True\)"):
        agent.run_stream("x")
    with pytest.raises(TypeError, match="options must be a dict"):
        agent.run("x", options=["bad"])  # type: ignore[arg-type]

    class ChatAnswering(BaseAgent):
        def __init__(self, answer: Any) -> None:
            super().__init__(name="inner")
            self.answer = answer

        def run(
            self,
            messages: Any = None,
            *,
            stream: bool = False,
            thread: Any = None,
            **kwargs: Any,
        ) -> Any:
            async def whole() -> Any:
                return self.answer

            return whole()

    as_chat = ChatAnswering(
        ChatResponse([Message("assistant", ["from chat"])])
    ).as_tool()
    assert await as_chat.invoke({"task": "t"}, skip_parsing=True) == "from chat"
    with pytest.raises(TypeError, match="async iterable of updates or a response"):
        await ChatAnswering(42).as_tool().invoke({"task": "t"})

    class NotAChatResponse(ScriptedChatClient):
        def get_response(
            self, messages: Any, *, stream: bool = False, **kwargs: Any
        ) -> Any:
            async def answer() -> str:
                return "text"

            return answer()

    with pytest.raises(TypeError, match="not a ChatResponse"):
        await Agent(NotAChatResponse([])).run("x")
