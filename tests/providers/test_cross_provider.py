"""A conversation moves between providers and keeps valid call/result pairs (AN-22,
OL-15).

For every ordered pair of provider codecs (OpenAI Chat Completions, Anthropic Messages
and, when installed, native Ollama), a conversation starts on the first: its answer (two
parallel tool calls, in that provider's own wire shape and id style) is decoded, the
results are appended, and the conversation continues on the second, whose request must
pair every result with its call the way that API requires. The second provider then
answers with its own calls, and the conversation goes back to the first, which must pair
those too. The caller's messages are never changed on the way.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import minagent_anthropic
import minagent_openai
import pytest

from minagent import ChatResponse, Content, Message

_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Provider:
    name: str
    build: Callable[[list[Message]], dict[str, Any]]
    # the provider's answer to that request
    answer: Callable[[dict[str, Any]], ChatResponse]
    # validated (call id, result) pairs
    check: Callable[[dict[str, Any]], list[tuple[str, str]]]


# -- OpenAI ---------------------------------------------------------------------------------------


def _openai_answer(request: dict[str, Any]) -> ChatResponse:
    calls = [
        # an id style Anthropic rejects
        ("functions.get_weather:0", "get_weather", '{"city": "Paris"}'),
        ("call_Bx9", "get_time", "{}"),
    ]
    body = {
        "id": "chatcmpl-x1",
        "object": "chat.completion",
        "created": 1715000000,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": i,
                            "type": "function",
                            "function": {"name": n, "arguments": a},
                        }
                        for i, n, a in calls
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    return minagent_openai.parse_response(body)


def _openai_check(body: dict[str, Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    messages = body["messages"]
    for i, message in enumerate(messages):
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        ids = [c["id"] for c in message["tool_calls"]]
        answered = []
        for follower in messages[i + 1 :]:
            if follower["role"] != "tool":
                break
            assert follower["tool_call_id"] in ids, follower
            answered.append(follower["tool_call_id"])
            pairs.append((follower["tool_call_id"], follower["content"]))
        assert sorted(answered) == sorted(ids), (ids, answered)
    assert all(m["role"] in ("system", "user", "assistant", "tool") for m in messages)
    return pairs


# -- Anthropic ------------------------------------------------------------------------------------


def _anthropic_answer(request: dict[str, Any]) -> ChatResponse:
    body = {
        "id": "msg_01X",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {
                "type": "thinking",
                "thinking": "Two lookups are needed.",
                "signature": "EqQBsig",
            },
            {"type": "text", "text": "Checking both."},
            {
                "type": "tool_use",
                "id": "toolu_01Wx",
                "name": "get_weather",
                "input": {"city": "Oslo"},
            },
            {"type": "tool_use", "id": "toolu_01Yz", "name": "get_time", "input": {}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return minagent_anthropic.parse_response(body)


def _anthropic_check(body: dict[str, Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    messages = body["messages"]
    roles = [m["role"] for m in messages]
    # roles alternate (AN-3)
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    for i, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        assert all(_ANTHROPIC_ID.fullmatch(u) for u in uses), uses
        if not uses:
            continue
        assert message["role"] == "assistant"
        follower = messages[i + 1]["content"]
        results = [b for b in follower if b["type"] == "tool_result"]
        # tool results first in the next user turn
        assert follower[: len(results)] == results
        assert sorted(b["tool_use_id"] for b in results) == sorted(uses)
        pairs += [(b["tool_use_id"], b["content"]) for b in results]
    return pairs


# -- Ollama (when its plugin is installed) ----------------------------------------------------------


def _providers() -> list[Provider]:
    providers = [
        Provider(
            "openai",
            lambda m: minagent_openai.build_request(
                m, {}, model="gpt-4o", stream=False
            ),
            _openai_answer,
            _openai_check,
        ),
        Provider(
            "anthropic",
            lambda m: minagent_anthropic.build_request(
                m, {}, model="claude-sonnet-4-5", stream=False
            ),
            _anthropic_answer,
            _anthropic_check,
        ),
    ]
    if importlib.util.find_spec("minagent_ollama") is not None:
        import minagent_ollama

        def ollama_answer(request: dict[str, Any]) -> ChatResponse:
            body = {
                "model": "llama3.2",
                "created_at": "2024-07-22T20:33:28.123648Z",
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "function": {
                                "name": "get_weather",
                                "arguments": {"city": "Lima"},
                            }
                        },
                        {"function": {"name": "get_time", "arguments": {}}},
                    ],
                },
                "done": True,
                "done_reason": "stop",
            }
            return minagent_ollama.parse_response(
                body, id_seed=minagent_ollama.call_id_seed(request)
            )

        def ollama_check(body: dict[str, Any]) -> list[tuple[str, str]]:
            pairs: list[tuple[str, str]] = []
            messages = body["messages"]
            for i, message in enumerate(messages):
                calls = message.get("tool_calls") or []
                if message["role"] != "assistant" or not calls:
                    continue
                ids = [c["id"] for c in calls]
                followers = list(
                    itertools.takewhile(
                        lambda m: m["role"] == "tool", messages[i + 1 :]
                    )
                )
                assert sorted(f["tool_call_id"] for f in followers) == sorted(ids)
                pairs += [(f["tool_call_id"], f["content"]) for f in followers]
            return pairs

        providers.append(
            Provider(
                "ollama",
                lambda m: minagent_ollama.build_request(
                    m, {}, model="llama3.2", stream=False
                ),
                ollama_answer,
                ollama_check,
            )
        )
    return providers


PROVIDERS = _providers()


def _results_for(response: ChatResponse) -> Message:
    calls = [
        c for m in response.messages for c in m.contents if c.type == "function_call"
    ]
    return Message(
        "tool",
        [
            Content.from_function_result(c.call_id or "", f"result of {c.name}")
            for c in calls
        ],
    )


def _turn(
    history: list[Message], provider: Provider
) -> tuple[dict[str, Any], list[Message]]:
    """One model turn on ``provider``: its request for ``history``, then its answer and
    the results."""
    request = provider.build(history)
    response = provider.answer(request)
    return request, [*history, *response.messages, _results_for(response)]


@pytest.mark.parametrize(
    ("first", "second"),
    [(a, b) for a, b in itertools.permutations(PROVIDERS, 2)],
    ids=lambda p: p.name,
)
def test_a_conversation_moves_between_providers_both_ways(
    first: Provider, second: Provider
) -> None:
    """AN-22, AN-8, OL-15, PV-7: started on one provider and continued on another (and
    back), every request pairs each tool result with its call as that API requires, in
    both directions."""
    history = [Message("user", ["Weather and time, please."])]
    _, history = _turn(history, first)
    snapshot = [m.to_dict() for m in history]

    on_second, history = _turn(history, second)
    pairs = second.check(on_second)
    assert [p[1] for p in pairs] == ["result of get_weather", "result of get_time"]

    on_first = first.build([*history, Message("user", ["Thanks."])])
    pairs = first.check(on_first)
    assert [p[1] for p in pairs] == ["result of get_weather", "result of get_time"] * 2
    # the caller's messages unchanged
    assert [m.to_dict() for m in history[: len(snapshot)]] == snapshot


def test_reasoning_stays_with_its_provider() -> None:
    """AN-22, AN-9, PV-6: Anthropic thinking (with its signature) is replayed to
    Anthropic and never sent to another provider."""
    anthropic = next(p for p in PROVIDERS if p.name == "anthropic")
    _, history = _turn([Message("user", ["Weather and time, please."])], anthropic)
    for provider in PROVIDERS:
        body = provider.build([*history, Message("user", ["Thanks."])])
        sent = repr(body)
        if provider.name == "anthropic":
            assert body["messages"][1]["content"][0] == {
                "type": "thinking",
                "thinking": "Two lookups are needed.",
                "signature": "EqQBsig",
            }
        else:
            assert "EqQBsig" not in sent
            assert "Two lookups are needed." not in sent
