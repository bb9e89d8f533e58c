"""`ResponseStream` (spec/stream.md, ST-1 .. ST-12, ST-17). Closing and cancelling
(ST-7, ST-8) are in test_closing.py, several consuming tasks (ST-13) in test_tasks.py."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ResponseStream,
    StreamError,
)
from minagent.testing import ScriptedChatClient
from tests._support.modes import run


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


async def failing_source(
    items: Sequence[Any], error: BaseException, log: list[str]
) -> AsyncIterator[Any]:
    try:
        for item in items:
            yield item
        raise error
    finally:
        log.append("source finally")


async def drain(
    stream: ResponseStream[Any, Any], into: list[Any] | None = None
) -> None:
    """Iterate `stream` to its end, collecting the updates into `into`."""
    async for update in stream:
        if into is not None:
            into.append(update)


def others() -> list[asyncio.Task[Any]]:
    me = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not me and not t.done()]


async def settle() -> None:
    """Let the event loop finalise abandoned async generators."""
    for _ in range(2):
        await asyncio.sleep(0)


# --------------------------------------------------------------------------------------------
# ST-1, ST-2: construction


@pytest.mark.parametrize("bad", [[1, 2], (1,), 3, "text", None, iter([1])])
def test_source_must_be_async_iterable_or_awaitable(bad: Any) -> None:
    """ST-1: anything but an async iterable or an awaitable is a TypeError at
    construction."""
    with pytest.raises(TypeError, match="async iterable"):
        ResponseStream(bad)


async def test_awaitable_of_a_non_iterable_is_a_stream_error_on_first_use() -> None:
    """ST-1: an awaitable resolving to something not async-iterable is a StreamError on
    first use."""
    log: list[str] = []

    async def make(value: Any) -> Any:
        return value

    async def first_use(stream: ResponseStream[Any, Any], use: str) -> None:
        if use == "iterate":
            await drain(stream)
        elif use == "await":
            await stream
        else:
            await stream.get_final_response()

    for use in ("iterate", "await", "final"):
        stream: ResponseStream[Any, Any] = ResponseStream(
            make([1, 2]), cleanup_hooks=[lambda use=use: log.append(use)]
        )
        with pytest.raises(StreamError, match="list"):
            await first_use(stream, use)
        with pytest.raises(StreamError, match="list"):
            await stream.get_final_response()
    assert log == ["iterate", "await", "final"]


async def test_construction_does_no_work() -> None:
    """ST-2: the source is not awaited and not iterated until first iterated, awaited or
    finalised."""
    log: list[str] = []

    async def coroutine_source() -> AsyncIterator[int]:
        log.append("coroutine ran")
        return source([1], log)

    streams = {
        "iterate": ResponseStream(coroutine_source()),
        "await": ResponseStream(coroutine_source()),
        "final": ResponseStream(coroutine_source()),
        "from_awaitable": ResponseStream.from_awaitable(coroutine_source()),
        "generator": ResponseStream(source([7], log)),
    }
    await settle()
    assert log == []

    async for update in streams["iterate"]:
        assert update == 1
    assert log[:2] == ["coroutine ran", "source started"]
    log.clear()

    awaited = await streams["await"]
    assert awaited is streams["await"]
    assert log == ["coroutine ran"]  # the source is resolved, not yet iterated
    assert await awaited.get_final_response() == [1]
    log.clear()

    assert await streams["final"].get_final_response() == [1]
    assert log[0] == "coroutine ran"
    log.clear()

    assert isinstance(streams["from_awaitable"], ResponseStream)
    await settle()
    assert log == []
    assert [u async for u in streams["from_awaitable"]] == [1]

    log.clear()
    assert [u async for u in streams["generator"]] == [7]
    assert log[0] == "source started"


async def test_await_returns_the_stream() -> None:
    """ST-2: `await stream` resolves the source and returns the stream itself (also when
    awaited twice)."""
    stream: ResponseStream[int, list[int]] = ResponseStream(source([1, 2]))
    assert await stream is stream
    assert await stream is stream
    assert [u async for u in stream] == [1, 2]
    assert await stream is stream


# --------------------------------------------------------------------------------------------
# ST-3 .. ST-5: consumption and the final response


async def test_a_stream_is_consumed_once() -> None:
    """ST-3: a second iteration over a finished stream yields nothing and raises
    nothing."""
    stream: ResponseStream[int, list[int]] = ResponseStream(source([1, 2, 3]))
    assert [u async for u in stream] == [1, 2, 3]
    assert [u async for u in stream] == []
    assert [u async for u in stream] == []
    assert await stream.get_final_response() == [1, 2, 3]


async def test_updates_are_delivered_once_in_total() -> None:
    """ST-3, ST-5: updates taken by one consumer are not delivered again to another."""
    stream: ResponseStream[int, list[int]] = ResponseStream(source([1, 2, 3, 4]))
    first = aiter(stream)
    assert await anext(first) == 1
    second = aiter(stream)
    assert await anext(second) == 2
    assert [u async for u in first] == [3, 4]
    assert [u async for u in second] == []
    await second.aclose()  # type: ignore[attr-defined]
    assert await stream.get_final_response() == [1, 2, 3, 4]


async def test_closed_and_failed_streams_yield_nothing() -> None:
    """ST-3: iterating a closed or failed stream yields nothing and raises nothing."""
    closed: ResponseStream[int, Any] = ResponseStream(source([1, 2]))
    await closed.aclose()
    assert [u async for u in closed] == []

    failed: ResponseStream[int, Any] = ResponseStream(
        failing_source([1], KeyError("x"), [])
    )
    with pytest.raises(KeyError):
        async for _ in failed:
            pass
    assert [u async for u in failed] == []


async def test_transform_hooks_change_only_what_the_consumer_sees() -> None:
    """ST-4: hooks run in order (sync or async); the consumer sees the transformed
    update; the finalizer and `stream.updates` get the recorded raw updates; a hook
    returning None keeps it."""
    seen_by_finalizer: list[Any] = []

    async def add_ten(u: int) -> int:
        return u + 10

    def finalizer(updates: Sequence[int]) -> int:
        seen_by_finalizer.extend(updates)
        return sum(updates)

    calls: list[int] = []
    stream: ResponseStream[int, int] = ResponseStream(
        source([1, 2, 3]),
        finalizer=finalizer,
        transform_hooks=[add_ten, lambda u: calls.append(u)],  # the second returns None
    )
    stream.with_transform_hook(lambda u: u * 2)
    assert [u async for u in stream] == [22, 24, 26]
    assert calls == [11, 12, 13]
    assert seen_by_finalizer == [1, 2, 3]
    assert stream.updates == [1, 2, 3]
    assert await stream.get_final_response() == 6


async def test_transformed_chat_updates_do_not_reach_the_finalizer() -> None:
    """ST-4: a transform that rewrites update text does not change what from_updates
    merges."""
    updates = [ChatResponseUpdate(["Hel"], "assistant"), ChatResponseUpdate(["lo"])]

    def shout(u: ChatResponseUpdate) -> ChatResponseUpdate:
        return ChatResponseUpdate([u.text.upper()], u.role)

    stream: ResponseStream[ChatResponseUpdate, ChatResponse] = ResponseStream(
        source(updates), finalizer=ChatResponse.from_updates, transform_hooks=[shout]
    )
    assert [u.text async for u in stream] == ["HEL", "LO"]
    assert (await stream.get_final_response()).text == "Hello"
    assert stream.updates == updates


async def test_get_final_response_is_idempotent() -> None:
    """ST-5: the finalizer runs once; later calls return the same object without running
    anything."""
    counts = {"finalizer": 0, "result": 0, "cleanup": 0}

    async def finalizer(updates: Sequence[int]) -> dict[str, Any]:
        counts["finalizer"] += 1
        return {"sum": sum(updates)}

    def result_hook(result: dict[str, Any]) -> None:
        counts["result"] += 1

    stream: ResponseStream[int, dict[str, Any]] = ResponseStream(
        source([1, 2]),
        finalizer=finalizer,
        result_hooks=[result_hook],
        cleanup_hooks=[lambda: counts.__setitem__("cleanup", counts["cleanup"] + 1)],
    )
    first = await stream.get_final_response()
    second = await stream.get_final_response()
    assert first == {"sum": 3}
    assert second is first
    assert counts == {"finalizer": 1, "result": 1, "cleanup": 1}


async def test_get_final_response_consumes_the_rest_through_transform_hooks() -> None:
    """ST-5: get_final_response consumes what is left, running the transform hooks."""
    transformed: list[int] = []
    stream: ResponseStream[int, list[int]] = ResponseStream(
        source([1, 2, 3]), transform_hooks=[lambda u: transformed.append(u)]
    )
    consumer = aiter(stream)
    assert await anext(consumer) == 1
    assert await stream.get_final_response() == [1, 2, 3]
    assert transformed == [1, 2, 3]
    assert [u async for u in consumer] == []  # the earlier consumer reads nothing more


async def test_without_finalizer_the_final_response_is_the_list_of_updates() -> None:
    """ST-5: with no finalizer (and no inner stream) the final response is the recorded
    updates."""
    stream: ResponseStream[str, list[str]] = ResponseStream(
        source(["a", "b"]), transform_hooks=[str.upper]
    )
    assert await stream.get_final_response() == ["a", "b"]
    empty: ResponseStream[str, list[str]] = ResponseStream(source([]))
    assert await empty.get_final_response() == []


async def test_a_stream_over_a_stream_finalises_to_the_inner_result() -> None:
    """ST-5, ST-10: a stream whose source is another ResponseStream (directly or through
    an awaitable) finalises to the inner stream's final response when it has no
    finalizer."""
    inner_runs: list[str] = []

    def make_inner(tag: str) -> ResponseStream[ChatResponseUpdate, ChatResponse]:
        return ResponseStream(
            source([ChatResponseUpdate([tag], "assistant")]),
            finalizer=lambda ups: (
                inner_runs.append(tag) or ChatResponse.from_updates(ups)
            ),
        )

    inner = make_inner("direct")
    outer: ResponseStream[Any, Any] = ResponseStream(inner)
    final = await outer.get_final_response()
    assert final is await inner.get_final_response()
    assert final.text == "direct"

    async def later() -> ResponseStream[ChatResponseUpdate, ChatResponse]:
        return make_inner("awaited")

    outer = ResponseStream.from_awaitable(later())
    assert [u.text async for u in outer] == ["awaited"]
    assert (await outer.get_final_response()).text == "awaited"
    assert inner_runs == ["direct", "awaited"]

    with_hook: ResponseStream[Any, Any] = ResponseStream(
        make_inner("hooked")
    ).with_result_hook(lambda r: r.text + "!")
    assert await with_hook.get_final_response() == "hooked!"


# --------------------------------------------------------------------------------------------
# ST-6: errors (closing and cancelling, ST-7 and ST-8, are in test_closing.py)


async def test_source_error_runs_cleanup_and_propagates() -> None:
    """ST-6: when the source raises, cleanup runs once, the same exception reaches the
    consumer, the stream is not finalised, and get_final_response() raises that
    exception again."""
    log: list[str] = []
    error = ValueError("provider failed")
    stream: ResponseStream[int, Any] = ResponseStream(
        failing_source([1, 2], error, log),
        finalizer=lambda ups: log.append("finalizer"),
        cleanup_hooks=[lambda: log.append("cleanup")],
        result_hooks=[lambda r: log.append("result")],
    )
    seen: list[int] = []
    with pytest.raises(ValueError, match="provider failed") as info:
        await drain(stream, seen)
    assert info.value is error
    assert seen == [1, 2]
    assert log == ["source finally", "cleanup"]
    for _ in range(2):
        with pytest.raises(ValueError, match="provider failed") as again:
            await stream.get_final_response()
        assert again.value is error
    assert log == ["source finally", "cleanup"]


async def test_source_error_during_get_final_response() -> None:
    """ST-6: a failing source seen first by get_final_response raises there and again
    later."""
    log: list[str] = []
    stream: ResponseStream[int, Any] = ResponseStream(
        failing_source([1], KeyError("k"), log),
        cleanup_hooks=[lambda: log.append("cleanup")],
    )
    with pytest.raises(KeyError):
        await stream.get_final_response()
    with pytest.raises(KeyError):
        await stream.get_final_response()
    assert log == ["source finally", "cleanup"]


async def test_transform_hook_error_fails_the_stream() -> None:
    """ST-6: an error raised by a transform hook ends the stream like a source error."""
    log: list[str] = []

    def bad(u: int) -> int:
        if u == 2:
            raise RuntimeError("hook broke")
        return u

    stream: ResponseStream[int, Any] = ResponseStream(
        source([1, 2, 3], log),
        transform_hooks=[bad],
        cleanup_hooks=[lambda: log.append("cleanup")],
    )
    with pytest.raises(RuntimeError, match="hook broke"):
        async for _ in stream:
            pass
    assert log[-2:] == ["source finally", "cleanup"]
    with pytest.raises(RuntimeError, match="hook broke"):
        await stream.get_final_response()


async def test_failing_cleanup_does_not_replace_the_propagating_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """ST-6: a cleanup hook failing while another error propagates is logged and added
    as a note."""
    ran: list[str] = []

    def broken_cleanup() -> None:
        ran.append("broken")
        raise OSError("cleanup broke")

    stream: ResponseStream[int, Any] = ResponseStream(
        failing_source([], ValueError("original"), []),
        cleanup_hooks=[broken_cleanup, lambda: ran.append("next")],
    )
    with (
        caplog.at_level(logging.ERROR, logger="minagent"),
        pytest.raises(ValueError, match="original") as info,
    ):
        await stream.get_final_response()
    assert str(info.value) == "original"
    assert any("cleanup broke" in note for note in info.value.__notes__)
    assert ran == ["broken", "next"]
    assert any(
        r.exc_info and isinstance(r.exc_info[1], OSError) for r in caplog.records
    )


async def test_failing_cleanup_propagates_when_nothing_else_does() -> None:
    """ST-6: otherwise a cleanup failure propagates, several of them as an
    ExceptionGroup."""

    def broken(name: str) -> Any:
        def hook() -> None:
            raise OSError(name)

        return hook

    one: ResponseStream[int, Any] = ResponseStream(
        source([1]), cleanup_hooks=[broken("only")]
    )
    with pytest.raises(OSError, match="only"):
        async for _ in one:
            pass

    two: ResponseStream[int, Any] = ResponseStream(
        source([1]), cleanup_hooks=[broken("a"), broken("b")]
    )
    with pytest.raises(ExceptionGroup) as info:
        await two.aclose()
    assert [str(e) for e in info.value.exceptions] == ["a", "b"]


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


class StreamWatcher(ChatMiddleware):
    def __init__(self, seen):
        self.seen = seen

    async def process(self, context, next):
        await next(context)
        if context.stream:
            context.result.with_result_hook(
                lambda response: self.seen.append(response.text)
            )
            context.result.with_cleanup_hook(lambda: self.seen.append("cleanup"))
        else:
            self.seen.append(context.result.text)


async def test_an_unannotated_chat_middleware_hooks_the_models_stream(stream):
    """ST-6, ST-9: a chat middleware written without annotations, `next(context)`, that
    adds a result and a cleanup hook to the model's stream sees the whole answer once,
    in both modes."""
    seen = []
    client = ScriptedChatClient(
        [ChatResponse(messages=[Message("assistant", ["Hello there"])])]
    )
    agent = Agent(client, middleware=[StreamWatcher(seen)])
    response = await run(agent, "hi", stream=stream)
    assert response.text == "Hello there"
    assert seen == (["cleanup", "Hello there"] if stream else ["Hello there"])


# --------------------------------------------------------------------------------------------
# ST-9 .. ST-12: order of work, map, hooks


async def test_order_of_work() -> None:
    """ST-9: per update the transform hooks; at exhaustion cleanup, then finalizer, then
    result hooks in order; exhausting the stream finalises it without a call to
    get_final_response()."""
    log: list[str] = []

    async def finalizer(updates: Sequence[int]) -> list[int]:
        log.append(f"finalizer {list(updates)}")
        return list(updates)

    def result_hook(tag: str) -> Any:
        def hook(result: list[int]) -> list[int] | None:
            log.append(f"result {tag} {result}")
            return None if tag == "keep" else [*result, len(log)]

        return hook

    stream: ResponseStream[int, list[int]] = ResponseStream(
        source([1, 2], log),
        finalizer=finalizer,
        transform_hooks=[lambda u: log.append(f"transform {u}")],
        cleanup_hooks=[lambda: log.append("cleanup")],
        result_hooks=[result_hook("keep"), result_hook("change")],
    )
    async for update in stream:
        log.append(f"consumer {update}")
    assert log == [
        "source started",
        "source yields 1",
        "transform 1",
        "consumer 1",
        "source yields 2",
        "transform 2",
        "consumer 2",
        "source exhausted",
        "source finally",
        "cleanup",
        "finalizer [1, 2]",
        "result keep [1, 2]",
        "result change [1, 2]",
    ]
    assert await stream.get_final_response() == [1, 2, 13]
    assert len(log) == 13


async def test_map_wraps_the_stream() -> None:
    """ST-10: map passes each delivered (inner-transformed) update through `transform`;
    the new stream records the mapped updates; finalising it runs the inner finalizer
    and result hooks once, then `finalizer` over the mapped updates; the inner stream is
    consumed once."""
    log: list[str] = []

    def inner_finalizer(updates: Sequence[int]) -> int:
        log.append(f"inner finalizer {list(updates)}")
        return sum(updates)

    inner: ResponseStream[int, int] = ResponseStream(
        source([1, 2, 3]),
        finalizer=inner_finalizer,
        transform_hooks=[lambda u: u + 100],
        result_hooks=[lambda r: log.append(f"inner result {r}")],
    )

    async def to_text(u: int) -> str:
        return f"<{u}>"

    def outer_finalizer(updates: Sequence[str]) -> str:
        log.append(f"outer finalizer {list(updates)}")
        return "".join(updates)

    outer = inner.map(to_text, outer_finalizer)
    assert isinstance(outer, ResponseStream)
    assert outer is not inner
    assert [u async for u in outer] == ["<101>", "<102>", "<103>"]
    assert outer.updates == ["<101>", "<102>", "<103>"]
    assert await outer.get_final_response() == "<101><102><103>"
    assert await outer.get_final_response() == "<101><102><103>"
    assert await inner.get_final_response() == 6
    assert log == [
        "inner finalizer [1, 2, 3]",
        "inner result 6",
        "outer finalizer ['<101>', '<102>', '<103>']",
    ]
    assert [u async for u in inner] == []


async def test_map_finalised_directly() -> None:
    """ST-10: get_final_response() on a mapped stream that was never iterated consumes
    the inner one."""
    inner: ResponseStream[ChatResponseUpdate, ChatResponse] = ResponseStream(
        source([ChatResponseUpdate(["a"], "assistant"), ChatResponseUpdate(["b"])]),
        finalizer=ChatResponse.from_updates,
    )
    outer = inner.map(lambda u: u.text, lambda texts: "+".join(texts))
    assert await outer.get_final_response() == "a+b"
    assert (await inner.get_final_response()).text == "ab"


async def test_closing_the_mapped_stream_closes_the_inner_one() -> None:
    """ST-10, ST-7: closing the outer stream closes the inner one, whether or not it had
    started."""
    log: list[str] = []
    inner: ResponseStream[int, Any] = ResponseStream(
        source([1, 2, 3], log), cleanup_hooks=[lambda: log.append("inner cleanup")]
    )
    outer = inner.map(str, list).with_cleanup_hook(lambda: log.append("outer cleanup"))
    assert await anext(aiter(outer)) == "1"
    await outer.aclose()
    assert log[-3:] == ["source finally", "inner cleanup", "outer cleanup"]
    with pytest.raises(StreamError):
        await inner.get_final_response()
    with pytest.raises(StreamError):
        await outer.get_final_response()

    for wrap in ("map", "source"):
        log.clear()
        inner = ResponseStream(
            source([1], log), cleanup_hooks=[lambda: log.append("inner cleanup")]
        )
        outer = inner.map(str, list) if wrap == "map" else ResponseStream(inner)
        if wrap == "source":
            await outer  # resolved but never pulled
        await outer.aclose()
        assert log == ["inner cleanup"], wrap
        with pytest.raises(StreamError):
            await inner.get_final_response()


async def test_breaking_out_of_a_mapped_stream_closes_both() -> None:
    """ST-10, ST-7: a consumer that breaks out of the outer stream closes the inner
    stream and source."""
    log: list[str] = []
    inner: ResponseStream[int, Any] = ResponseStream(
        source([1, 2, 3], log), cleanup_hooks=[lambda: log.append("inner cleanup")]
    )
    outer = inner.map(lambda u: u * 2, list)
    async for _ in outer:
        break
    await settle()
    assert log[-2:] == ["source finally", "inner cleanup"]


async def test_with_hooks_return_the_same_stream() -> None:
    """ST-11: with_transform_hook, with_result_hook and with_cleanup_hook append a hook
    and return self."""
    log: list[str] = []
    stream: ResponseStream[int, list[int]] = ResponseStream(source([1]))
    assert stream.with_transform_hook(lambda u: u + 1) is stream
    assert stream.with_transform_hook(lambda u: u * 10) is stream
    assert stream.with_result_hook(lambda r: [*r, "first"]) is stream
    assert stream.with_result_hook(lambda r: [*r, "second"]) is stream
    assert stream.with_cleanup_hook(lambda: log.append("a")) is stream
    assert stream.with_cleanup_hook(lambda: log.append("b")) is stream
    assert [u async for u in stream] == [20]
    assert await stream.get_final_response() == [1, "first", "second"]
    assert log == ["a", "b"]


async def test_late_result_and_cleanup_hooks_are_stream_errors() -> None:
    """ST-11: a result hook after the final response was computed, or a cleanup hook
    after cleanup ran, is a StreamError."""
    stream: ResponseStream[int, list[int]] = ResponseStream(source([1]))
    await stream.get_final_response()
    with pytest.raises(StreamError):
        stream.with_result_hook(lambda r: r)
    with pytest.raises(StreamError):
        stream.with_cleanup_hook(lambda: None)
    assert await stream.get_final_response() == [1]

    closed: ResponseStream[int, Any] = ResponseStream(source([1]))
    await closed.aclose()
    with pytest.raises(StreamError):
        closed.with_cleanup_hook(lambda: None)
    assert closed.with_transform_hook(lambda u: u) is closed


async def test_middleware_rewrites_what_the_consumer_sees_and_the_final_response_separately() -> (
    None
):
    """ST-12: a transform hook rewrites what the consumer sees, a result hook rewrites
    the final response, a cleanup hook releases resources, and map / wrapping replaces
    the stream."""
    released: list[str] = []
    updates = [
        ChatResponseUpdate(["secret "], "assistant"),
        ChatResponseUpdate(["data"]),
    ]
    stream: ResponseStream[ChatResponseUpdate, ChatResponse] = ResponseStream(
        source(updates), finalizer=ChatResponse.from_updates
    )

    def redact(u: ChatResponseUpdate) -> ChatResponseUpdate:
        return ChatResponseUpdate([u.text.replace("secret", "******")], u.role)

    def sign(r: ChatResponse) -> ChatResponse:
        return ChatResponse([*r.messages], model="signed")

    stream.with_transform_hook(redact).with_result_hook(sign).with_cleanup_hook(
        lambda: released.append("connection")
    )
    assert [u.text async for u in stream] == ["****** ", "data"]
    final = await stream.get_final_response()
    assert final.text == "secret data"
    assert final.model == "signed"
    assert released == ["connection"]

    wrapped = ResponseStream(
        ResponseStream(source(updates), finalizer=ChatResponse.from_updates),
        finalizer=lambda ups: ChatResponse.from_updates(ups).text.upper(),
    )
    assert await wrapped.get_final_response() == "SECRET DATA"


# --------------------------------------------------------------------------------------------
# Hooks against random inputs


@settings(max_examples=60, deadline=None)
@given(
    updates=st.lists(st.integers(-50, 50), max_size=8),
    transforms=st.lists(
        st.tuples(st.integers(-3, 3), st.booleans(), st.booleans()), max_size=3
    ),
    results=st.lists(
        st.tuples(st.integers(0, 9), st.booleans(), st.booleans()), max_size=3
    ),
    source_kind=st.sampled_from(["generator", "coroutine", "stream"]),
    consume=st.booleans(),
)
def test_consumer_sees_transformed_updates_and_final_is_hooked_finalizer(
    updates: list[int],
    transforms: list[tuple[int, bool, bool]],
    results: list[tuple[int, bool, bool]],
    source_kind: str,
    consume: bool,
) -> None:
    """ST-4, ST-5, ST-9: for random updates and hooks, the consumer sees the updates
    through the transform hooks and the final response is finalizer(raw updates) through
    the result hooks."""

    def make_transform(k: int, is_async: bool, keep: bool) -> Any:
        def sync(u: int) -> int | None:
            return None if keep else u * 2 + k

        async def async_(u: int) -> int | None:
            return sync(u)

        return async_ if is_async else sync

    def make_result(tag: int, is_async: bool, keep: bool) -> Any:
        def sync(r: tuple[Any, ...]) -> tuple[Any, ...] | None:
            return None if keep else (*r, tag)

        async def async_(r: tuple[Any, ...]) -> tuple[Any, ...] | None:
            return sync(r)

        return async_ if is_async else sync

    expected_seen = []
    for u in updates:
        for k, _, keep in transforms:
            u = u if keep else u * 2 + k
        expected_seen.append(u)
    expected_final: tuple[Any, ...] = ("final", *updates)
    for tag, _, keep in results:
        expected_final = expected_final if keep else (*expected_final, tag)

    async def main() -> None:
        src: Any
        if source_kind == "generator":
            src = source(updates)
        elif source_kind == "coroutine":

            async def resolve() -> AsyncIterator[int]:
                return source(updates)

            src = resolve()
        else:
            src = ResponseStream(source(updates))
        stream: ResponseStream[int, tuple[Any, ...]] = ResponseStream(
            src,
            finalizer=lambda ups: ("final", *ups),
            transform_hooks=[make_transform(*t) for t in transforms],
            result_hooks=[make_result(*r) for r in results],
        )
        if consume:
            assert [u async for u in stream] == expected_seen
        assert await stream.get_final_response() == expected_final
        assert stream.updates == updates
        assert others() == []

    asyncio.run(main())


async def test_flat_map_and_with_finalizer():
    """ST-17: `flat_map` turns each update into zero or more; `with_finalizer` gives the
    same updates another final value, and the inner stream still finalises first."""
    finalised = []

    async def source():
        for text in ("a", "b"):
            yield ChatResponseUpdate([Content.from_text(text)], "assistant")

    def inner_final(updates):
        finalised.append("inner")
        return ChatResponse.from_updates(updates)

    def doubled(update):
        return [update, update] if update.text == "a" else []

    stream = ResponseStream(source(), finalizer=inner_final).flat_map(
        doubled, ChatResponse.from_updates
    )
    assert [u.text async for u in stream] == ["a", "a"]
    assert (await stream.get_final_response()).text == "aa"
    assert finalised == ["inner"]
    other = ResponseStream(source(), finalizer=inner_final).with_finalizer(
        lambda ups: len(ups)
    )
    assert [u.text async for u in other] == ["a", "b"]
    assert await other.get_final_response() == 2
    assert finalised == ["inner", "inner"]
