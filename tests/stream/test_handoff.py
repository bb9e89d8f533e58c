"""A stream lent by its source (`Handoff`, spec/stream.md ST-51), read as the tool loop
reads a model call's stream: in the source's place, with the source's cleanup where it
lent it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minagent import (
    Agent,
    BaseChatClient,
    ChatContext,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ResponseStream,
)
from minagent._stream import Handoff
from minagent.testing import ScriptedChatClient, text_chunks


class Provider:
    """A lent stream's source: yields ``items`` (raising ``fail`` after them, if given)
    and records whether it was closed."""

    def __init__(
        self,
        items: list[Any],
        fail: BaseException | None = None,
        gate: asyncio.Event | None = None,
    ) -> None:
        self.items, self.fail, self.gate, self.closed = items, fail, gate, False

    async def __call__(self) -> AsyncIterator[Any]:
        try:
            for item in self.items:
                if self.gate is not None:
                    await self.gate.wait()
                yield item
            if self.fail is not None:
                raise self.fail
        finally:
            self.closed = True


def lent_stream(
    provider: Provider, *, hooked: bool = False
) -> ResponseStream[Any, list[Any]]:
    """A model call's stream: folds (records) its updates; with ``hooked`` a transform
    hook of its own."""
    seen: list[Any] = []
    stream: ResponseStream[Any, list[Any]] = ResponseStream.over(
        provider(), _Recorder(seen)
    )
    return stream.with_transform_hook(lambda u: f"{u}!") if hooked else stream


class _Recorder:
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    def add(self, update: Any) -> None:
        self.seen.append(update)

    def result(self) -> list[Any]:
        return list(self.seen)


class Source:
    """A driver: yields "start", lends ``lent`` (with ``transform``), then yields the
    lent stream's final response; records the error thrown in at the handoff, and
    whether its cleanup ran."""

    def __init__(
        self,
        lent: ResponseStream[Any, Any],
        transform: Any = None,
        recover: bool = False,
    ) -> None:
        self.lent, self.transform, self.recover = lent, transform, recover
        self.thrown: BaseException | None = None
        self.cleaned = False

    async def __call__(self) -> AsyncIterator[Any]:
        try:
            yield "start"
            try:
                yield Handoff(self.lent, self.transform)
                final = await self.lent.get_final_response()
            except Exception as exc:
                self.thrown = exc
                if not self.recover:
                    raise
                final = "recovered"
            finally:
                await self.lent.aclose()
            yield ("final", final)
        finally:
            self.cleaned = True


async def read(stream: ResponseStream[Any, Any]) -> list[Any]:
    return [u async for u in stream]


@pytest.mark.parametrize(
    "hooked", [False, True], ids=["read-at-its-source", "with-its-own-hook"]
)
async def test_the_lent_streams_updates_come_in_the_sources_place(hooked: bool) -> None:
    """ST-51: the reader reads the lent stream's updates where the source lent it, then
    goes on with the source, which takes the lent stream's final response (its fold saw
    every update); a lent stream with a hook of its own is read through its reader, so
    the hook runs."""
    provider = Provider(["a", "b", "c"])
    lent = lent_stream(provider, hooked=hooked)
    source = Source(lent)
    stream = ResponseStream.of_run(source(), lambda: "done")
    got = await read(stream)
    shown = ["a!", "b!", "c!"] if hooked else ["a", "b", "c"]
    assert got == ["start", *shown, ("final", ["a", "b", "c"])]
    assert await stream.get_final_response() == "done"
    assert provider.closed
    assert source.cleaned


async def test_the_transform_maps_each_lent_update_and_none_drops_it() -> None:
    """ST-51: each lent update passes the handoff's transform, a None result drops it,
    and then this stream's own mapping (here the agent's view) as any update of the
    source."""
    provider = Provider(["keep", "drop", "keep2"])
    source = Source(
        lent_stream(provider), transform=lambda u: None if u == "drop" else u.upper()
    )
    stream = ResponseStream._mapping(
        ResponseStream.of_run(source(), lambda: None),
        lambda u: ("view", u),
        lambda _: 0,
    )
    got = await read(stream)
    assert got[1:4] == [
        ("view", "KEEP"),
        ("view", "KEEP2"),
        ("view", ("final", ["keep", "drop", "keep2"])),
    ]


@pytest.mark.parametrize(
    "hooked", [False, True], ids=["read-at-its-source", "with-its-own-hook"]
)
async def test_a_lent_streams_error_is_thrown_into_the_source_where_it_lent_it(
    hooked: bool,
) -> None:
    """ST-51: an error of the lent stream fails it and reaches the source at its
    handoff: a source that lets it through fails the stream with that same error after
    its cleanup ran."""
    error = ValueError("model failed")
    provider = Provider(["a"], fail=error)
    lent = lent_stream(provider, hooked=hooked)
    source = Source(lent)
    stream = ResponseStream.of_run(source(), lambda: "done")
    seen: list[Any] = []

    async def read_into() -> None:
        async for update in stream:
            seen.append(update)

    with pytest.raises(ValueError, match="model failed") as info:
        await read_into()
    assert info.value is error
    assert seen[0] == "start"
    assert source.thrown is error
    assert source.cleaned
    assert provider.closed
    with pytest.raises(ValueError, match="model failed"):
        await lent.get_final_response()
    with pytest.raises(ValueError, match="model failed"):
        await stream.get_final_response()


async def test_a_source_that_recovers_from_the_error_goes_on() -> None:
    """ST-51: what the source does with the thrown error is what the reader gets: a
    source that catches it and yields goes on, and the stream ends normally."""
    provider = Provider(["a"], fail=KeyError("gone"))
    source = Source(lent_stream(provider), recover=True)
    stream = ResponseStream.of_run(source(), lambda: "done")
    assert await read(stream) == ["start", "a", ("final", "recovered")]
    assert isinstance(source.thrown, KeyError)
    assert await stream.get_final_response() == "done"


@pytest.mark.parametrize(
    "hooked", [False, True], ids=["read-at-its-source", "with-its-own-hook"]
)
async def test_closing_while_a_stream_is_lent_closes_the_source_and_the_lent_stream(
    hooked: bool,
) -> None:
    """ST-51, ST-7: leaving the stream while it reads a lent stream closes the source
    (its cleanup runs) and the lent stream's source; no task is left behind (the test
    fixture checks)."""
    provider = Provider(["a", "b", "c"])
    lent = lent_stream(provider, hooked=hooked)
    source = Source(lent)
    stream = ResponseStream.of_run(source(), lambda: "done")
    async for update in stream:
        if update in ("a", "a!"):
            break
    await stream.aclose()
    assert source.cleaned
    assert provider.closed
    assert lent._state in ("closed", "failed")


async def test_an_agent_stream_reads_the_client_stream_source_directly() -> None:
    """AG-4, ST-7: the agent's stream over the stream get_response returned: the
    client's stream finalises with it, and closing the agent's stream early closes the
    client's."""
    client = ScriptedChatClient([text_chunks("a", "b", "c"), text_chunks("x", "y")])
    agent = Agent(client)
    stream = agent.run("hi", stream=True)
    assert [u.text async for u in stream] == ["a", "b", "c"]
    inner = stream._inner
    assert inner is not None
    assert (await stream.get_final_response()).text == "abc"
    assert (await inner.get_final_response()).text == "abc"
    early = agent.run("again", stream=True)
    async for update in early:
        assert update.text == "x"
        break
    await early.aclose()
    assert early._inner is not None
    assert early._inner._state == "closed"


class _ChunkClient(BaseChatClient):
    """Streams ``chunks``, then raises ``fail`` when given (fault injection for the
    model stream)."""

    def __init__(self, chunks: list[str], fail: Exception | None = None) -> None:
        super().__init__()
        self.chunks, self.fail, self.closed = chunks, fail, 0

    async def _inner_get_response(
        self, *, messages: Any, options: Any, **kwargs: Any
    ) -> ChatResponse:
        raise AssertionError("streaming only")

    async def _inner_get_streaming_response(
        self, *, messages: Any, options: Any, **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        try:
            for chunk in self.chunks:
                yield ChatResponseUpdate([Content.from_text(chunk)], "assistant")
            if self.fail is not None:
                raise self.fail
        finally:
            self.closed += 1


def _watching_middleware(seen: dict[str, Any]) -> Any:
    async def watch(context: ChatContext, call_next: Any) -> None:
        await call_next()
        seen["stream"] = context.result
        context.result.with_result_hook(
            lambda r: seen.setdefault("results", []).append(r.text)
        )
        context.result.with_cleanup_hook(
            lambda: seen.setdefault("cleanups", []).append(1)
        )

    return watch


async def test_closing_the_run_early_closes_the_lent_provider_stream() -> None:
    """ST-7, LP-22: leaving the agent's stream after one update closes the model stream
    and the provider's generator; the model stream's cleanup hook runs once."""
    seen: dict[str, Any] = {}
    client = _ChunkClient(["a", "b", "c"])
    agent = Agent(client, middleware=[_watching_middleware(seen)])
    stream = agent.run("hi", stream=True)
    async for update in stream:
        assert update.text == "a"
        break
    await stream.aclose()
    assert seen["stream"]._state == "closed"
    assert seen["cleanups"] == [1]
    assert client.closed == 1


async def test_consumers_in_two_tasks_take_turns_on_a_lent_stream() -> None:
    """ST-51, ST-13: two tasks reading one stream while it reads a lent stream each get
    some of the updates, every update exactly once, in order overall, and the source
    goes on after it."""
    gate = asyncio.Event()
    provider = Provider([f"u{i}" for i in range(20)], gate=gate)
    stream = ResponseStream.of_run(Source(lent_stream(provider))(), lambda: "done")
    got: list[tuple[int, Any]] = []

    async def reader(n: int) -> None:
        async for update in stream:
            got.append((n, update))
            await asyncio.sleep(0)

    tasks = [asyncio.create_task(reader(n)) for n in (1, 2)]
    await asyncio.sleep(0)
    gate.set()
    await asyncio.gather(*tasks)
    updates = [u for _, u in got]
    assert updates == [
        "start",
        *[f"u{i}" for i in range(20)],
        ("final", [f"u{i}" for i in range(20)]),
    ]
    assert {n for n, _ in got} == {1, 2}


@pytest.mark.parametrize("with_middleware", [False, True])
async def test_the_loop_reads_the_provider_stream_itself(with_middleware: bool) -> None:
    """ST-5, ST-6, ST-14: the model stream of a streamed run folds the provider's
    updates and finalises once; the result and cleanup hooks chat middleware added run
    once; the provider's generator is read once, to its end, and closed."""
    seen: dict[str, Any] = {}
    client = _ChunkClient(["a", "b", "c"])
    agent = Agent(
        client, middleware=[_watching_middleware(seen)] if with_middleware else []
    )
    stream = agent.run("hi", stream=True)
    assert [u.text async for u in stream] == ["a", "b", "c"]
    assert (await stream.get_final_response()).text == "abc"
    assert client.closed == 1
    if with_middleware:
        model_stream = seen["stream"]
        assert model_stream._state == "done"
        assert seen["results"] == ["abc"]
        assert seen["cleanups"] == [1]
        assert (await model_stream.get_final_response()).text == "abc"


async def test_a_failing_provider_stream_fails_the_model_stream() -> None:
    """ST-6, LP-22: an error of the provider's stream reaches the caller and fails the
    model stream, whose cleanup hooks run once; nothing is finalised."""
    seen: dict[str, Any] = {}
    client = _ChunkClient(["a", "b"], fail=RuntimeError("provider broke"))
    agent = Agent(client, middleware=[_watching_middleware(seen)])
    stream = agent.run("hi", stream=True)
    got: list[str] = []

    async def consume() -> None:
        async for update in stream:
            got.append(update.text)

    with pytest.raises(RuntimeError, match="provider broke"):
        await consume()
    assert got == ["a", "b"]
    assert seen["stream"]._state == "failed"
    assert isinstance(seen["stream"]._error, RuntimeError)
    assert seen["cleanups"] == [1]
    assert "results" not in seen
    assert client.closed == 1
