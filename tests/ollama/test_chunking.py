"""The transport is chunking-invariant over the network (PV-12, OL-16, PV-34).

Hypothesis picks a recorded NDJSON transcript, cuts it into random byte pieces (inside
multi-byte characters and CRLF pairs included) and has the loopback server write the
pieces with small awaits between them. Whatever the cuts, the client yields the same
updates, and the same final response, as the codec decoding the whole transcript at
once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minagent_ollama import OllamaStreamDecoder, build_request, call_id_seed

from minagent import ChatResponse, FunctionInvocationConfiguration, Message

from ._fake_server import FakeOllama, replay, transcript

NAMES = [
    "plain_text.ndjson",
    "tool_call.ndjson",
    "parallel_tool_calls.ndjson",
    "thinking.ndjson",
    "length.ndjson",
    "crlf_blank.ndjson",
    "tool_call_with_id.ndjson",
]
PROMPT = [Message("user", ["Hi"])]
SEED = call_id_seed(build_request(PROMPT, {}, model="llama3.2", stream=True))


def reference(data: bytes) -> list[dict[str, Any]]:
    decoder = OllamaStreamDecoder(SEED)
    return [u.to_dict() for u in decoder.feed(data) + decoder.close()]


async def served(
    data: bytes, cuts: list[int], pauses: list[float]
) -> tuple[list[Any], Any]:
    async with FakeOllama() as server:
        server.add(replay(data, cuts, pauses))
        client = server.make_client(
            function_invocation_configuration=FunctionInvocationConfiguration(
                enabled=False
            )
        )
        async with client:
            stream = client.get_response(PROMPT, stream=True)
            updates = [u async for u in stream]
            final = await stream.get_final_response()
    return updates, final


async def _checked(coro: Any) -> Any:
    result = await coro
    for _ in range(3):
        await asyncio.sleep(0)
    leaked = [
        t
        for t in asyncio.all_tasks()
        if t is not asyncio.current_task() and not t.done()
    ]
    assert not leaked, leaked
    return result


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_network_chunking_gives_identical_updates(data: st.DataObject) -> None:
    """PV-12, OL-16, PV-34: every NDJSON transcript, written by the server in random
    byte chunks with small awaits between them, yields identical updates and an
    identical final response."""
    name = data.draw(st.sampled_from(NAMES), label="transcript")
    body = transcript(name)
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=40), label="cuts")
    pauses = data.draw(
        st.lists(st.sampled_from([0.0, 0.0, 0.001]), max_size=len(cuts) + 1),
        label="pauses",
    )
    updates, final = asyncio.run(_checked(served(body, cuts, pauses)))
    assert [u.to_dict() for u in updates] == reference(body)
    assert final == ChatResponse.from_updates(OllamaStreamDecoder(SEED).feed(body))


async def test_byte_by_byte_delivery() -> None:
    """PV-12, OL-17: one byte per write, the worst case, still gives the reference
    updates."""
    body = transcript("parallel_tool_calls.ndjson")
    updates, final = await served(body, list(range(1, len(body))), [])
    assert [u.to_dict() for u in updates] == reference(body)
    calls = [c for m in final.messages for c in m.contents if c.type == "function_call"]
    assert [c.arguments for c in calls] == [
        '{"city": "Paris"}',
        '{"city": "東京"}',
        "{}",
    ]
