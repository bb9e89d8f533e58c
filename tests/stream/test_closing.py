"""Closing and cancelling a `ResponseStream` (spec/stream.md ST-7, ST-8): `break`,
`aclose`, `async with`, a cancelled consumer; what is closed and what is left."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from minagent import (
    ResponseStream,
    StreamError,
)


async def source(
    items: Sequence[Any], log: list[str] | None = None
) -> AsyncIterator[Any]:
    """An async generator that records when it starts, yields and runs its `finally`."""
    log = log if log is not None else []
    log.append("source started")
    try:
        for item in items:
            log.append(f"source yields {item}")
            yield item
        log.append("source exhausted")
    finally:
        log.append("source finally")


def others() -> list[asyncio.Task[Any]]:
    me = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not me and not t.done()]


async def settle() -> None:
    """Let the event loop finalise abandoned async generators."""
    for _ in range(2):
        await asyncio.sleep(0)


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


async def test_break_closes_the_stream() -> None:
    """ST-7: after `break`, once the loop finalises the abandoned iterator, the source's
    finally and the cleanup hooks have run once, and get_final_response() raises
    StreamError."""
    log: list[str] = []
    stream: ResponseStream[int, Any] = ResponseStream(
        source([1, 2, 3], log),
        finalizer=lambda ups: log.append("finalizer"),
        cleanup_hooks=[lambda: log.append("cleanup")],
    )
    async for update in stream:
        assert update == 1
        break
    await settle()
    assert log == ["source started", "source yields 1", "source finally", "cleanup"]
    with pytest.raises(StreamError):
        await stream.get_final_response()
    await stream.aclose()
    assert [u async for u in stream] == []
    assert log.count("cleanup") == 1
    assert "finalizer" not in log


@pytest.mark.parametrize("keep", [True, False], ids=["stream-kept", "stream-dropped"])
async def test_break_closes_a_stream_that_adds_nothing(keep: bool) -> None:
    """ST-7: a stream with no hook, mapping or inner stream (read without a generator in
    between) abandoned by `break` is closed by the event loop too, whether the caller
    keeps the stream or not: the source's finally runs within the next loop turns; a
    later get_final_response() then raises StreamError."""
    log: list[str] = []
    stream: ResponseStream[int, Any] | None = ResponseStream(source([1, 2, 3], log))
    assert stream is not None
    async for update in stream:
        assert update == 1
        break
    if not keep:
        stream = None
    await settle()
    assert log == ["source started", "source yields 1", "source finally"]
    if stream is not None:
        with pytest.raises(StreamError):
            await stream.get_final_response()


async def test_get_final_response_right_after_break_takes_over_a_relay() -> None:
    """ST-7: before the loop closes an abandoned stream that adds nothing, a
    get_final_response() takes it over and reads the rest."""
    log: list[str] = []
    stream: ResponseStream[int, list[int]] = ResponseStream(source([1, 2, 3], log))
    async for _ in stream:
        break
    assert await stream.get_final_response() == [1, 2, 3]
    await settle()
    assert log[-2:] == ["source exhausted", "source finally"]


async def test_an_exception_in_the_loop_body_closes_the_stream() -> None:
    """ST-7: an exception in the consumer's loop body closes the stream too."""
    log: list[str] = []
    stream: ResponseStream[int, Any] = ResponseStream(
        source([1, 2], log), cleanup_hooks=[lambda: log.append("cleanup")]
    )

    async def consume_and_fail() -> None:
        async for _ in stream:
            _ = 1 / 0

    with pytest.raises(ZeroDivisionError):
        await consume_and_fail()
    await settle()
    assert log[-2:] == ["source finally", "cleanup"]
    with pytest.raises(StreamError):
        await stream.get_final_response()


async def test_get_final_response_right_after_break_takes_over() -> None:
    """ST-7: a get_final_response() that starts before the abandoned loop is finalised
    reads the rest."""
    log: list[str] = []
    stream: ResponseStream[int, list[int]] = ResponseStream(
        source([1, 2, 3], log), cleanup_hooks=[lambda: log.append("cleanup")]
    )
    async for _ in stream:
        break
    assert await stream.get_final_response() == [1, 2, 3]
    await settle()
    assert log.count("cleanup") == 1
    assert await stream.get_final_response() == [1, 2, 3]


async def test_aclose_closes_at_once() -> None:
    """ST-7: aclose() closes the source and runs cleanup immediately; it is
    idempotent."""
    log: list[str] = []
    stream: ResponseStream[int, Any] = ResponseStream(
        source([1, 2, 3], log), cleanup_hooks=[lambda: log.append("cleanup")]
    )
    consumer = aiter(stream)
    assert await anext(consumer) == 1
    await stream.aclose()
    assert log[-2:] == ["source finally", "cleanup"]
    await stream.aclose()
    assert log.count("cleanup") == 1
    assert [u async for u in consumer] == []
    with pytest.raises(StreamError, match="closed"):
        await stream.get_final_response()


async def test_leaving_async_with_closes_the_stream() -> None:
    """ST-7: leaving `async with stream:` early closes it at once, also on an
    exception."""
    log: list[str] = []
    stream: ResponseStream[int, Any] = ResponseStream(
        source([1, 2, 3], log), cleanup_hooks=[lambda: log.append("cleanup")]
    )
    async with stream as entered:
        assert entered is stream
        async for _ in stream:
            break
    assert log[-2:] == ["source finally", "cleanup"]
    with pytest.raises(StreamError):
        await stream.get_final_response()

    other: ResponseStream[int, Any] = ResponseStream(
        source([1, 2], log), cleanup_hooks=[lambda: log.append("other cleanup")]
    )

    async def fail_inside() -> None:
        async with other:
            await anext(aiter(other))
            raise KeyError("boom")

    with pytest.raises(KeyError):
        await fail_inside()
    assert log[-1] == "other cleanup"

    done: ResponseStream[int, list[int]] = ResponseStream(source([5]))
    async with done:
        assert [u async for u in done] == [5]
    assert await done.get_final_response() == [5]


async def test_closing_an_unstarted_stream_closes_its_coroutine_without_running_it() -> (
    None
):
    """ST-7: aclose() on a stream that never started closes its coroutine source
    unrun."""
    log: list[str] = []

    async def never() -> AsyncIterator[int]:
        log.append("ran")
        return source([1])

    coroutine = never()
    stream: ResponseStream[int, Any] = ResponseStream(
        coroutine, cleanup_hooks=[lambda: log.append("cleanup")]
    )
    await stream.aclose()
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED
    assert log == ["cleanup"]
    with pytest.raises(StreamError):
        await stream.get_final_response()


async def test_cancelling_the_consumer_closes_the_source_and_leaves_no_task() -> None:
    """ST-8: cancelling a consumer blocked on a slow source closes the source, runs
    cleanup, propagates CancelledError, and leaves no task running."""
    log: list[str] = []
    waiting = asyncio.Event()

    async def slow() -> AsyncIterator[int]:
        try:
            yield 1
            waiting.set()
            await asyncio.sleep(3600)
            yield 2
        finally:
            log.append("source finally")

    async def cleanup() -> None:
        await asyncio.sleep(0)
        log.append("cleanup")

    stream: ResponseStream[int, Any] = ResponseStream(slow(), cleanup_hooks=[cleanup])
    seen: list[int] = []

    async def consume() -> None:
        async for update in stream:
            seen.append(update)

    task = asyncio.create_task(consume())
    await waiting.wait()
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert seen == [1]
    assert log == ["source finally", "cleanup"]
    assert others() == []
    with pytest.raises(StreamError):
        await stream.get_final_response()


async def test_cancelling_get_final_response_closes_the_source() -> None:
    """ST-8: the same when the consumer is get_final_response()."""
    log: list[str] = []
    started = asyncio.Event()

    async def slow() -> AsyncIterator[int]:
        try:
            started.set()
            await asyncio.sleep(3600)
            yield 1
        finally:
            log.append("source finally")

    stream: ResponseStream[int, Any] = ResponseStream(
        slow(), cleanup_hooks=[lambda: log.append("cleanup")]
    )
    task = asyncio.create_task(stream.get_final_response())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log == ["source finally", "cleanup"]
    assert others() == []


async def test_reader_after_the_stream_was_closed_ends_and_a_throw_does_not_fail_it() -> (
    None
):
    """ST-7: after aclose(), the reader ends (StopAsyncIteration), the source is closed,
    and an exception thrown into the old reader propagates without turning the closed
    stream into a failed one."""
    source = Source()
    stream = make(source, hooked=False)
    reader = aiter(stream)
    assert await anext(reader) == 1
    await stream.aclose()
    assert source.closed
    with pytest.raises(StopAsyncIteration):
        await anext(reader)
    # the ended reader's own business
    with contextlib.suppress(RuntimeError, StopAsyncIteration):
        await reader.athrow(RuntimeError("late"))
    with pytest.raises(StreamError, match="closed"):
        await stream.get_final_response()


class CloseFails(Exception):
    """What a source raises from its `finally` when it is closed."""


async def breaks_on_close(log: list[str]) -> AsyncIterator[int]:
    """A source whose close fails: its `finally` raises."""
    try:
        yield 1
        yield 2
    finally:
        log.append("source finally")
        raise CloseFails("the source could not close")


@pytest.mark.parametrize("ending", ["aclose", "break", "hook fails", "cancelled"])
async def test_cleanup_runs_when_closing_the_source_fails(ending: str) -> None:
    """ST-6: cleanup hooks run once even when closing the source raises. While another
    error propagates (a failing hook, a cancellation) that error is kept and the close's
    failure is noted on it; otherwise the close's failure propagates, after cleanup."""
    log: list[str] = []
    gate = asyncio.Event()

    def hook(update: int) -> None:
        if ending == "hook fails" and update == 2:
            raise ValueError("the hook refused 2")

    async def held() -> AsyncIterator[int]:
        try:
            yield 1
            await gate.wait()
            yield 2
        finally:
            log.append("source finally")
            raise CloseFails("the source could not close")

    stream: ResponseStream[int, Any] = ResponseStream(
        held() if ending == "cancelled" else breaks_on_close(log),
        cleanup_hooks=[lambda: log.append("cleanup")],
    )
    if ending == "hook fails":
        stream = stream.with_transform_hook(hook)
    reader = aiter(stream)
    assert await anext(reader) == 1
    if ending == "aclose":
        with pytest.raises(CloseFails):
            await stream.aclose()
    elif ending == "break":
        with pytest.raises(CloseFails):
            await reader.aclose()  # what the event loop does to an abandoned loop
    elif ending == "hook fails":
        with pytest.raises(ValueError, match="refused 2") as failed:
            await anext(reader)
        assert any("could not close" in note for note in failed.value.__notes__)
    else:
        task = asyncio.create_task(anext(reader))
        await asyncio.sleep(0)
        task.cancel()
        # the cancellation reached the source inside its step, whose `finally` raised
        with pytest.raises(CloseFails):
            await task
    assert log == ["source finally", "cleanup"]
    with pytest.raises((StreamError, ValueError, CloseFails)):
        await stream.get_final_response()
