"""Streams consumed from several tasks (spec/stream.md ST-13): one task iterating while
another awaits the final response, turns, shared finalisation and failures, closing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentContext,
    AgentMiddleware,
    ChatMiddleware,
    ChatResponseUpdate,
    ResponseStream,
    StreamError,
    agent_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, text_chunks

READERS = pytest.mark.parametrize(
    "hooked", [False, True], ids=["plain", "transform-hook"]
)


class Source:
    """An async generator source that records whether it was closed, optionally held at
    a gate."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.closed = False

    async def __call__(self) -> AsyncIterator[int]:
        try:
            yield 1
            if self.gate is not None:
                await self.gate.wait()
            yield 2
            yield 3
        finally:
            self.closed = True


def make(source: Source, hooked: bool) -> ResponseStream[int, list[int]]:
    stream: ResponseStream[int, list[int]] = ResponseStream(source())
    return stream.with_transform_hook(lambda u: u * 10) if hooked else stream


@READERS
async def test_closing_while_another_task_is_in_the_step_drops_that_update(
    hooked: bool,
) -> None:
    """ST-13: closing a stream while another task is inside the source's step closes the
    stream at once, and the source when that step returns; the update the step returns
    is not delivered."""
    gate = asyncio.Event()
    source = Source(gate)
    stream = make(source, hooked)
    got: list[int] = []

    async def reader() -> None:
        async for update in stream:
            got.append(update)

    task = asyncio.create_task(reader())
    for _ in range(20):
        await asyncio.sleep(0)
    assert got == [10 if hooked else 1]
    await stream.aclose()
    assert not source.closed  # the step is still running: its task closes the source
    gate.set()
    await asyncio.wait_for(task, 5)
    assert got == [10 if hooked else 1]
    assert source.closed
    with pytest.raises(StreamError):
        await stream.get_final_response()


async def test_a_cancelled_waiter_is_skipped_when_the_stream_closes() -> None:
    """ST-13: a task waiting in get_final_response() for another task's iteration can be
    cancelled; a close at that moment wakes the others and leaves the cancelled waiter
    alone, and nothing hangs."""
    gate = asyncio.Event()
    source = Source(gate)
    stream = make(source, hooked=False)
    got: list[int] = []

    async def reader() -> None:
        async for update in stream:
            got.append(update)

    iterating = asyncio.create_task(reader())
    for _ in range(10):
        await asyncio.sleep(0)
    waiting = asyncio.create_task(stream.get_final_response())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()
    # wakes the waiters synchronously: the cancelled one is already done
    await stream.aclose()
    gate.set()
    await asyncio.wait_for(iterating, 5)
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert got == [1]
    assert source.closed


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


async def test_get_final_response_in_another_task_waits_and_shares_the_result() -> None:
    """ST-13: one task iterates while another awaits get_final_response(): the iterating
    task sees every update, both get the same final response, and the thread is updated
    once."""
    client = ScriptedChatClient([text_chunks(*[f"w{i} " for i in range(30)])])
    agent = Agent(client)
    thread = agent.get_new_thread()
    stream = agent.run("hi", stream=True, thread=thread)
    seen: list[str] = []

    async def iterate() -> None:
        async for update in stream:
            seen.append(update.text)
            await asyncio.sleep(0)

    async def final() -> object:
        await asyncio.sleep(0)
        return await stream.get_final_response()

    _, result = await asyncio.gather(iterate(), final())
    assert seen == [f"w{i} " for i in range(30)]
    assert result is await stream.get_final_response()
    assert [m.role for m in thread.messages] == ["user", "assistant"]


async def test_two_iterating_tasks_take_turns_and_finalise_once() -> None:
    """ST-13: two tasks iterating one stream never pull at once; each update goes to one
    of them; the finalizer runs once."""
    finalised: list[int] = []

    async def source() -> AsyncIterator[int]:
        for i in range(40):
            await asyncio.sleep(0)
            yield i

    def finalizer(updates: object) -> str:
        finalised.append(1)
        return "final"

    stream: ResponseStream[int, str] = ResponseStream(source(), finalizer=finalizer)
    got: list[list[int]] = [[], []]

    async def reader(index: int) -> str:
        async for item in stream:
            got[index].append(item)
            await asyncio.sleep(0)
        return await stream.get_final_response()

    results = await asyncio.gather(reader(0), reader(1))
    assert results == ["final", "final"]
    assert sorted(got[0] + got[1]) == list(range(40))
    assert finalised == [1]


async def test_a_failure_reaches_every_waiting_consumer() -> None:
    """ST-13: when the source fails while another task waits for the final response,
    both see the same error and nothing hangs."""

    async def source() -> AsyncIterator[str]:
        yield "a"
        await asyncio.sleep(0.01)
        raise RuntimeError("provider broke")

    stream: ResponseStream[str, object] = ResponseStream(source())

    async def iterate() -> None:
        async for _ in stream:
            pass

    async def final() -> object:
        await asyncio.sleep(0)
        return await stream.get_final_response()

    outcomes = await asyncio.wait_for(
        asyncio.gather(iterate(), final(), return_exceptions=True), 5
    )
    assert [str(o) for o in outcomes] == ["provider broke", "provider broke"]


async def test_closing_while_another_task_waits_gives_a_stream_error() -> None:
    """ST-13, ST-7: the iterating task closes the stream early; the waiting task gets
    StreamError."""
    from minagent import StreamError

    async def source() -> AsyncIterator[int]:
        for i in range(100):
            await asyncio.sleep(0)
            yield i

    stream: ResponseStream[int, object] = ResponseStream(source())

    async def iterate() -> None:
        async with stream:
            async for item in stream:
                if item == 3:
                    break

    async def final() -> object:
        await asyncio.sleep(0)
        return await stream.get_final_response()

    outcomes = await asyncio.wait_for(
        asyncio.gather(iterate(), final(), return_exceptions=True), 5
    )
    assert outcomes[0] is None
    assert isinstance(outcomes[1], StreamError)


async def test_the_same_task_may_still_take_over_after_break() -> None:
    """ST-7 unchanged by ST-13: after `break`, get_final_response() in the same task
    reads the rest."""

    async def source() -> AsyncIterator[int]:
        for i in range(5):
            yield i

    stream: ResponseStream[int, list[int]] = ResponseStream(source(), finalizer=list)
    async for item in stream:
        if item == 1:
            break
    assert await stream.get_final_response() == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


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


# -- an agent's stream opened by two tasks at once (ST-13, ST-51) -----------------------
#
# An agent middleware that awaits anything before `call_next` lets a second consumer reach
# the stream while the first one is still opening it. Opening is part of the
# one-reader-at-a-time turn: the agent runs once, the tool once, and every update reaches
# exactly one consumer.


class _SleepFirstCallNext(AgentMiddleware):
    async def process(self, context: AgentContext, call_next: Any) -> None:
        await asyncio.sleep(0)
        await call_next()


class _SleepFirstNextContext(AgentMiddleware):
    async def process(self, context: AgentContext, call_next: Any) -> None:
        await asyncio.sleep(0)
        await call_next(context)


@agent_middleware
async def _sleep_first_call_next(context: AgentContext, call_next: Any) -> None:
    await asyncio.sleep(0)
    await call_next()


@agent_middleware
async def _sleep_first_next_context(context: AgentContext, next: Any) -> None:
    await asyncio.sleep(0)
    await next(context)


OPENING_MIDDLEWARE = pytest.mark.parametrize(
    "middleware",
    [
        _SleepFirstCallNext(),
        _SleepFirstNextContext(),
        _sleep_first_call_next,
        _sleep_first_next_context,
    ],
    ids=[
        "class-call_next()",
        "class-next(context)",
        "function-call_next()",
        "function-next(context)",
    ],
)


def _agent_with_one_tool_call(
    middleware: Any,
) -> tuple[Agent, ScriptedChatClient, list[int], list[int]]:
    """An agent whose model calls a tool once, then streams "done!"; returns it, its
    client, the tool's charges and the runs of the agent pipeline after
    ``middleware``."""
    charged: list[int] = []
    runs: list[int] = []

    @agent_middleware
    async def count_runs(context: AgentContext, call_next: Any) -> None:
        runs.append(1)
        await call_next()

    @tool
    def charge(amount: int) -> str:
        """Charge an amount."""
        charged.append(amount)
        return "charged"

    client = ScriptedChatClient(
        [
            [ChatResponseUpdate([call("charge", {"amount": 5})], "assistant")],
            text_chunks("do", "ne", "!"),
        ]
    )
    agent = Agent(client=client, tools=[charge], middleware=[middleware, count_runs])
    return agent, client, charged, runs


@OPENING_MIDDLEWARE
async def test_final_response_awaited_while_another_task_iterates_runs_the_agent_once(
    middleware: Any,
) -> None:
    """ST-13, ST-51: with an agent middleware that awaits before `call_next`, one task
    iterating the agent's stream while another awaits `get_final_response()` runs the
    agent once: two model calls, the tool once, every update delivered once."""
    agent, client, charged, runs = _agent_with_one_tool_call(middleware)
    stream = agent.run("go", stream=True)
    seen: list[str] = []

    async def iterate() -> None:
        async for update in stream:
            seen.append(update.text)

    final, _ = await asyncio.gather(stream.get_final_response(), iterate())
    assert runs == [1]
    assert len(client.requests) == 2
    assert charged == [5]
    assert final.text == "done!"
    # the final response's task pulls until the other task starts iterating (ST-13):
    # the iterating task sees a tail of the chunks, none of them twice
    texts = [text for text in seen if text]
    assert texts == ["do", "ne", "!"][len(["do", "ne", "!"]) - len(texts) :]


@OPENING_MIDDLEWARE
async def test_two_tasks_iterating_an_agent_stream_get_each_update_once(
    middleware: Any,
) -> None:
    """ST-13, ST-51: two tasks iterating one agent stream whose middleware awaits
    before `call_next`: the agent runs once (two model calls, the tool once), and every
    update reaches exactly one of them, the first one included."""
    agent, client, charged, runs = _agent_with_one_tool_call(middleware)
    stream = agent.run("go", stream=True)
    got: list[list[Any]] = [[], []]

    async def reader(index: int) -> None:
        async for update in stream:
            got[index].append(update)
            await asyncio.sleep(0)

    await asyncio.gather(reader(0), reader(1))
    delivered = got[0] + got[1]
    assert len({id(update) for update in delivered}) == len(delivered)
    # the readers interleave: each chunk once, in whichever reader pulled it
    texts = sorted(update.text for update in delivered if update.text)
    assert texts == sorted(["do", "ne", "!"])
    assert runs == [1]
    assert len(client.requests) == 2
    assert charged == [5]
    assert (await stream.get_final_response()).text == "done!"
