"""`ResponseStream` corners (coverage, tests only): spec/stream.md ST-6, ST-7, ST-13.

Each corner is read both ways a stream may be built: one that adds nothing, and one with
a transform hook.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from minagent import ResponseStream, StreamError

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


async def test_reader_asend_then_athrow_fails_the_stream() -> None:
    """ST-6: an exception thrown into the reader fails the stream with it: the source is
    closed and get_final_response() raises that same error; asend(None) reads the next
    update."""
    source = Source()
    stream = make(source, hooked=False)
    reader = aiter(stream)
    assert await reader.asend(None) == 1
    error = ValueError("boom")
    with pytest.raises(ValueError, match="boom") as info:
        await reader.athrow(error)
    assert info.value is error
    assert source.closed
    with pytest.raises(ValueError, match="boom"):
        await stream.get_final_response()


async def test_reader_athrow_of_an_exception_class() -> None:
    """ST-6: throwing an exception class in fails the stream with an instance of it."""
    stream = make(Source(), hooked=False)
    reader = aiter(stream)
    assert await anext(reader) == 1
    with pytest.raises(KeyError):
        await reader.athrow(KeyError)
    with pytest.raises(KeyError):
        await stream.get_final_response()


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


async def test_a_cleanup_hook_failing_at_the_end_leaves_no_final_response() -> None:
    """ST-6: a cleanup hook that fails when the source is exhausted (no other error)
    propagates to the consumer; the stream then has no final response, and
    get_final_response() says so (StreamError)."""
    calls: list[str] = []

    def cleanup() -> None:
        calls.append("cleanup")
        raise OSError("could not release")

    stream: ResponseStream[int, list[int]] = ResponseStream(
        Source()(), cleanup_hooks=[cleanup]
    )
    got: list[int] = []

    async def read() -> None:
        async for update in stream:
            got.append(update)

    with pytest.raises(OSError, match="could not release"):
        await read()
    assert got == [1, 2, 3]
    with pytest.raises(StreamError, match="without a final response"):
        await stream.get_final_response()
    assert calls == ["cleanup"]  # exactly once


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
