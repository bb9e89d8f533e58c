"""Issue 13 (hardening): streams consumed from several tasks never lose the run
(ST-13)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    BaseChatClient,
    ChatContext,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ResponseStream,
    UsageDetails,
)
from minagent.testing import ScriptedChatClient, text_chunks


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


async def test_run_and_get_response_streams_keep_no_updates() -> None:
    """ST-14: the streams of get_response(stream=True) and run(stream=True) finalise
    from the run and keep no list of updates; the final response is still complete."""
    chunks = [f"c{i} " for i in range(200)]
    client = ScriptedChatClient([text_chunks(*chunks), text_chunks(*chunks)])
    chat_stream = client.get_response("hi", stream=True)
    assert len([u async for u in chat_stream]) == 200
    assert chat_stream.updates == []
    assert (await chat_stream.get_final_response()).text == "".join(chunks)
    agent_stream = Agent(client).run("hi", stream=True)
    assert len([u async for u in agent_stream]) == 200
    assert agent_stream.updates == []
    assert (await agent_stream.get_final_response()).text == "".join(chunks)
    plain: ResponseStream[int, list[int]] = ResponseStream(_numbers(3), finalizer=list)
    assert [u async for u in plain] == [0, 1, 2]
    assert plain.updates == [0, 1, 2]  # ST-4 unchanged for streams users build


async def _numbers(n: int) -> AsyncIterator[int]:
    for i in range(n):
        yield i


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


def test_a_fold_keeps_strings_not_updates() -> None:
    """TY-14, ST-14, ST-50: folding 1000 text chunks keeps the first content and its
    texts as at most 256 strings, and gives exactly from_updates of the same updates."""
    from minagent import ChatResponse, ChatResponseUpdate, Content, UsageDetails
    from minagent._fold import Fold

    updates = [
        ChatResponseUpdate([Content.from_text(f"w{i} ")], "assistant")
        for i in range(1000)
    ]
    updates.insert(500, ChatResponseUpdate([Content.from_usage(UsageDetails(1, 2))]))
    fold = Fold(ChatResponse())
    for update in updates:
        fold.add(update)
    # nothing materialised yet: one run of strings
    assert fold.messages[0].contents == []
    assert len(fold._texts) <= 256
    assert "".join(fold._texts) == "".join(f"w{i} " for i in range(1000))
    assert all(type(t) is str for t in fold._texts)
    result = fold.result()
    assert result == ChatResponse.from_updates(updates)
    assert result.text == "".join(f"w{i} " for i in range(1000))
    assert result.usage_details == UsageDetails(1, 2)


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


_chunk = st.builds(
    lambda text, role, message_id, props, response_id, usage: ChatResponseUpdate(
        [Content.from_text(text, additional_properties=props)]
        if usage is None
        else [Content.from_usage(UsageDetails(usage, 1))],
        role,
        message_id=message_id,
        response_id=response_id,
    ),
    st.text(max_size=3),
    st.sampled_from([None, "assistant", "assistant", "tool"]),
    st.sampled_from([None, None, "m1", "m2"]),
    st.sampled_from([{}, {}, {"k": 1}]),
    st.sampled_from([None, None, "r1"]),
    st.sampled_from([None, None, None, 3]),
)


@settings(max_examples=200, deadline=None)
@given(updates=st.lists(_chunk, max_size=12))
def test_the_folds_quick_step_merges_as_the_full_step(
    updates: list[ChatResponseUpdate],
) -> None:
    """TY-14: folding chunk by chunk (with the quick step for one more text of the run)
    gives the same response as the full merge step alone, for any sequence of chunks."""
    from minagent._fold import Fold

    quick, full = Fold(ChatResponse()), Fold(ChatResponse())
    for update in updates:
        quick.add(update)
        full._add(update)
    assert quick.result() == full.result()
