"""One update object per streamed chunk (spec/stream.md ST-52), counted, not timed.

Every update and every content built while a scenario runs is counted by class (a
counting ``__new__`` on the update base class and on `Content`). A class's ``__new__``
cannot be put back once replaced, so each scenario runs in a fresh interpreter. The
counts of two runs that differ only in their number of chunks give what one chunk
costs, whatever a run builds once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import ChatResponse, ChatResponseUpdate, Content
from minagent._fold import Fold

_COUNTING = """
import asyncio, json, sys
from collections import Counter
from minagent import Agent, AgentResponseUpdate, BaseChatClient, ChatResponseUpdate, Content
from minagent._responses import _Update

made = Counter()

def counting_new(cls, *args, **kwargs):
    made[cls.__name__] += 1
    return object.__new__(cls)

_Update.__new__ = staticmethod(counting_new)
Content.__new__ = staticmethod(counting_new)
inits = Counter()
real_init = ChatResponseUpdate.__init__

def counting_init(self, *args, **kwargs):
    inits[type(self).__name__] += 1
    real_init(self, *args, **kwargs)

ChatResponseUpdate.__init__ = counting_init


class Chunks(BaseChatClient):
    def __init__(self, n):
        super().__init__()
        self.n, self.yielded = n, []

    async def _inner_get_response(self, *, messages, options, **kw):
        raise AssertionError("streaming only")

    async def _inner_get_streaming_response(self, *, messages, options, **kw):
        for i in range(self.n):
            update = ChatResponseUpdate([Content.from_text(f"{i},")], "assistant")
            self.yielded.append(update)
            yield update
"""


def _counts(scenario: str) -> dict[str, Any]:
    """Run ``scenario`` (it defines ``main(n)``, returning a dict of facts) for 5 and for
    45 chunks in a fresh interpreter; the counts of what 40 chunks more build."""
    script = (
        _COUNTING
        + textwrap.dedent(scenario)
        + """
out = []
for n in (5, 45):
    made.clear(); inits.clear()
    facts = main(n)
    out.append({"made": dict(made), "inits": dict(inits), "facts": facts})
print(json.dumps(out))
"""
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    small, large = json.loads(done.stdout)
    diff = {
        kind: {
            name: large[kind].get(name, 0) - small[kind].get(name, 0)
            for name in large[kind].keys() | small[kind].keys()
        }
        for kind in ("made", "inits")
    }
    return {**diff, "facts": large["facts"]}


def test_an_agent_stream_builds_one_update_per_chunk() -> None:
    """ST-52: per chunk, an agent's stream builds exactly one `AgentResponseUpdate` and
    nothing else (no other update, no content) beyond the provider's own chat update and
    content; each agent update views the chat update the provider yielded."""
    counts = _counts(
        """
        def main(n):
            client = Chunks(n)
            agent = Agent(client, name="Helper", id="agent-1")

            async def go():
                stream = agent.run("go", stream=True)
                seen = [update async for update in stream]
                response = await stream.get_final_response()
                return seen, response

            seen, response = asyncio.run(go())
            pairs = list(zip(seen, client.yielded, strict=True))
            return {
                "text": response.text == "".join(f"{i}," for i in range(n)),
                "types": sorted({type(u).__name__ for u in seen}),
                "views": all(u.raw_representation is c for u, c in pairs),
                "own_list": all(
                    u.contents == c.contents and u.contents is not c.contents
                    for u, c in pairs
                ),
                "fields": sorted(
                    {(u.agent_id, u.author_name, u.role, c.author_name) for u, c in pairs}
                ),
            }
        """
    )
    assert counts["made"] == {
        "ChatResponseUpdate": 40,  # the provider's
        "Content": 40,  # the provider's
        "AgentResponseUpdate": 40,  # the run's one object per chunk
    }
    assert counts["facts"] == {
        "text": True,
        "types": ["AgentResponseUpdate"],
        "views": True,
        "own_list": True,
        "fields": [["agent-1", "Helper", "assistant", None]],
    }


def test_a_client_stream_hands_over_the_providers_updates() -> None:
    """ST-52: a client's stream builds no update per chunk: the consumer gets the
    provider's own `ChatResponseUpdate` objects."""
    counts = _counts(
        """
        def main(n):
            client = Chunks(n)

            async def go():
                stream = client.get_response("go", stream=True)
                seen = [update async for update in stream]
                return seen, await stream.get_final_response()

            seen, final = asyncio.run(go())
            return {
                "text": final.text == "".join(f"{i}," for i in range(n)),
                "same": all(a is b for a, b in zip(seen, client.yielded, strict=True)),
            }
        """
    )
    assert counts["made"] == {"ChatResponseUpdate": 40, "Content": 40}
    assert counts["facts"] == {"text": True, "same": True}


def test_the_openai_codec_builds_each_update_with_one_constructor_call() -> None:
    """ST-52: the Chat Completions codec makes one `ChatResponseUpdate` per streamed
    chunk, with one constructor call, and one content per text delta: no update copied
    or replaced afterwards."""
    pytest.importorskip("minagent_openai._stream")
    counts = _counts(
        r"""
        from minagent_openai._stream import ChatCompletionsStreamDecoder

        def main(n):
            events = [
                {
                    "id": "r1",
                    "model": "m",
                    "created": 1,
                    "choices": [{"index": 0, "delta": {"content": f"{i},"}}],
                }
                for i in range(n)
            ]
            body = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
            decoder = ChatCompletionsStreamDecoder()
            updates = decoder.feed((body + "data: [DONE]\n\n").encode())
            updates += decoder.close()
            text = "".join(u.text for u in updates)
            return {"done": decoder.done, "text": text == "".join(f"{i}," for i in range(n))}
        """
    )
    assert counts["made"] == {"ChatResponseUpdate": 40, "Content": 40}
    assert counts["inits"] == {"ChatResponseUpdate": 40}
    assert counts["facts"] == {"done": True, "text": True}


# -- the fold keeps the piece, also when a chunk repeats what the response holds -------------

_ids = st.sampled_from([None, "a", "b"])
_chunk = st.fixed_dictionaries(
    {
        "text": st.text(alphabet="ab ", max_size=2),
        "role": st.sampled_from([None, "assistant", "user"]),
        "message_id": _ids,
        "author_name": _ids,
        "response_id": _ids,
        "model": _ids,
        "finish_reason": st.sampled_from([None, "stop"]),
        "props": st.sampled_from([None, {"k": 1}]),
    }
)


class _SlowFold(Fold):
    """The fold without its quick step: every update through the whole merge."""

    def add(self, update: Any) -> None:
        self._add(update)


@settings(max_examples=150, deadline=None)
@given(chunks=st.lists(_chunk, max_size=40))
def test_the_folds_quick_step_changes_nothing(chunks: list[dict[str, Any]]) -> None:
    """TY-14, ST-52: folding chunks that repeat ids, roles, authors and scalars the
    response already holds (the chunks a provider streams) gives exactly what the whole
    merge of every update gives."""

    def updates() -> list[ChatResponseUpdate]:
        return [
            ChatResponseUpdate(
                [Content.from_text(c["text"])],
                c["role"],
                message_id=c["message_id"],
                author_name=c["author_name"],
                response_id=c["response_id"],
                model=c["model"],
                finish_reason=c["finish_reason"],
                additional_properties=dict(c["props"]) if c["props"] else None,
            )
            for c in chunks
        ]

    quick, slow = Fold(ChatResponse()), _SlowFold(ChatResponse())
    for update in updates():
        quick.add(update)
    for update in updates():
        slow.add(update)
    assert quick.result() == slow.result()
    assert ChatResponse.from_updates(updates()) == slow.result()
