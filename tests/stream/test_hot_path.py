"""The hot path's visible behaviour: what a stream keeps (spec/stream.md ST-50)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ResponseStream,
)
from minagent._fold import PIECES, Fold
from minagent.testing import ScriptedChatClient, text_chunks

chunk = st.one_of(
    st.text(max_size=3),
    st.tuples(
        st.text(max_size=3),
        st.dictionaries(st.sampled_from("ab"), st.integers(), min_size=1, max_size=1),
    ),
)


@settings(max_examples=40, deadline=None)
@given(
    chunks=st.lists(chunk, max_size=3 * PIECES),
    role_every=st.integers(min_value=0, max_value=400),
)
def test_a_fold_keeps_at_most_pieces_strings_and_the_whole_text(
    chunks: list[Any], role_every: int
) -> None:
    """ST-50, TY-14: however many chunks (plain, or carrying additional_properties, some
    naming the role), a fold never holds more than PIECES strings of its text run, and
    its result holds the whole text, the properties merged (the first value of a key
    wins), as the text joined at once."""
    fold = Fold(ChatResponse())
    texts: list[str] = []
    props: dict[str, Any] = {}
    for i, item in enumerate(chunks):
        text, extra = (item, None) if isinstance(item, str) else item
        content = (
            Content.from_text(text, additional_properties=extra)
            if extra
            else Content.from_text(text)
        )
        role = "assistant" if role_every and i % role_every == 0 else None
        fold.add(ChatResponseUpdate([content], role))
        texts.append(text)
        if extra:
            props = {**extra, **props}  # TY-10: the first value of a key wins
        assert len(fold._texts) <= PIECES
    result = fold.result()
    if not chunks:
        assert result.messages == []
        return
    (message,) = result.messages
    assert message.text == "".join(texts)
    assert message.contents[0].additional_properties == props


async def _numbers(n: int) -> AsyncIterator[int]:
    for i in range(n):
        yield i


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


class Chunks(BaseChatClient):
    def __init__(self, chunks: list[str]) -> None:
        super().__init__()
        self.chunks = chunks

    async def _inner_get_response(
        self, **kwargs: Any
    ) -> ChatResponse:  # pragma: no cover - streaming only
        raise NotImplementedError

    async def _inner_get_streaming_response(self, **kwargs: Any) -> Any:
        for text in self.chunks:
            yield ChatResponseUpdate([Content.from_text(text)], "assistant")


async def test_a_long_agent_stream_delivers_every_chunk_and_the_whole_text() -> None:
    """ST-50, ST-14: an agent stream of 5,000 chunks (twenty times PIECES) delivers each
    chunk as it came and a final response whose text is every chunk's, in order."""
    chunks = [f"{i % 10}" for i in range(5000)]
    stream = Agent(Chunks(chunks)).run("go", stream=True)
    seen = [update.text async for update in stream]
    final = await stream.get_final_response()
    assert seen == chunks
    assert final.text == "".join(chunks)
    assert stream.updates == []


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
