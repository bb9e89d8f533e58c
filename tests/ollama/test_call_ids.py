"""Tool-call ids across providers for Ollama (issue 19 item 3; OL-4, OL-5, OL-15).

Older Ollama servers (and the documented examples) send no call ids; current ones send
random ones. A conversation whose calls Ollama answered without ids gets generated ids
that other providers accept, and a conversation started elsewhere keeps its call/result
pairs when sent to Ollama: each result carries its call's name (what the documented API
pairs by) and its id (what current servers pair by).
"""

from __future__ import annotations

import re

from minagent_ollama import build_request, call_id_seed, parse_response
from minagent_openai import build_request as openai_request

from minagent import ChatResponse, Content, FunctionInvocationConfiguration, Message

from ._fake_server import FakeOllama, replay, transcript

NO_LOOP = FunctionInvocationConfiguration(enabled=False)
# What the OpenAI (<= 40 characters) and Anthropic (^[a-zA-Z0-9_-]+$) APIs accept as
# ids.
PORTABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


def test_results_are_matched_back_to_calls_made_elsewhere() -> None:
    """OL-5, OL-4: every result carries its call's name and id, also when the results
    come in another order than the calls and across turns; each call carries its id."""
    messages = [
        Message("user", ["Paris and the time?"]),
        Message(
            "assistant",
            [
                Content.from_function_call(
                    "toolu_01A09q90qw90lq917835lq9", "get_weather", '{"city": "Paris"}'
                ),
                Content.from_function_call("toolu_01B7Xq", "get_time", "{}"),
            ],
        ),
        Message(
            "tool",
            [
                Content.from_function_result("toolu_01B7Xq", "12:00"),
                Content.from_function_result("toolu_01A09q90qw90lq917835lq9", "Sunny"),
            ],
        ),
        Message(
            "assistant",
            [Content.from_function_call("call_Xy9", "get_weather", '{"city": "Oslo"}')],
        ),
        Message("tool", [Content.from_function_result("call_Xy9", "Snow")]),
    ]
    sent = build_request(messages, {}, model="llama3.2", stream=False)["messages"]
    assert [
        (m.get("tool_name"), m.get("tool_call_id"), m["content"])
        for m in sent
        if m["role"] == "tool"
    ] == [
        ("get_time", "toolu_01B7Xq", "12:00"),
        ("get_weather", "toolu_01A09q90qw90lq917835lq9", "Sunny"),
        ("get_weather", "call_Xy9", "Snow"),
    ]
    assert [c["id"] for m in sent for c in m.get("tool_calls", [])] == [
        "toolu_01A09q90qw90lq917835lq9",
        "toolu_01B7Xq",
        "call_Xy9",
    ]


async def test_an_ollama_conversation_continues_on_another_provider() -> None:
    """OL-15: the ids Ollama's calls get are portable, unique per turn, and pair calls
    with results when the conversation is rendered for the OpenAI API."""
    async with FakeOllama() as server:
        server.add(
            replay(transcript("parallel_tool_calls.ndjson")),
            replay(transcript("tool_call.ndjson")),
        )
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            history = [Message("user", ["Weather in Paris and Tokyo, and the time?"])]
            first = await client.get_response(history)
            history += first.messages
            calls = [
                c
                for m in first.messages
                for c in m.contents
                if c.type == "function_call"
            ]
            history.append(
                Message(
                    "tool",
                    [
                        Content.from_function_result(c.call_id or "", f"result {i}")
                        for i, c in enumerate(calls)
                    ],
                )
            )
            stream = client.get_response(history, stream=True)
            async for _ in stream:
                pass
            second: ChatResponse = await stream.get_final_response()
            history += second.messages
    later = [
        c for m in second.messages for c in m.contents if c.type == "function_call"
    ]
    ids = [c.call_id or "" for c in [*calls, *later]]
    assert all(PORTABLE_ID.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == len(ids) == 4
    rendered = openai_request(history, {}, model="gpt-4o-mini", stream=False)[
        "messages"
    ]
    sent_calls = [tc["id"] for m in rendered for tc in m.get("tool_calls", [])]
    sent_results = [m["tool_call_id"] for m in rendered if m["role"] == "tool"]
    assert sent_calls == ids
    assert sent_results == ids[:3]


def test_the_same_turn_gets_the_same_ids_and_the_next_turn_others() -> None:
    """OL-15: ids depend on the conversation sent, the position, the name and the
    arguments."""
    body = {
        "message": {"tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}
    }
    turn = build_request([Message("user", ["go"])], {}, model="m", stream=False)
    again = build_request(
        [Message("user", ["go"])], {"temperature": 1}, model="m", stream=True
    )
    later = build_request(
        [Message("user", ["go"]), Message("user", ["again"])],
        {},
        model="m",
        stream=False,
    )

    def call_id(request: dict[str, object]) -> str | None:
        return (
            parse_response(body, id_seed=call_id_seed(request))
            .messages[0]
            .contents[0]
            .call_id
        )

    assert call_id(turn) == call_id(again)
    assert call_id(turn) != call_id(later)
