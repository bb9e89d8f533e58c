"""Every accepted kind end to end: client and agent, both modes, with and without
tools."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from minagent import Agent, ChatResponse, Content, Message, NoValueError, ResponseFormat
from minagent.testing import ScriptedChatClient, call, text_chunks

from ._kinds import KINDS, Forecast, Place

KIND_NAMES = sorted(KINDS)


def lookup(city: str) -> str:
    """The weather station of a city."""
    return f"station-{city}"


def script(answer: Any, with_tools: bool) -> list[Any]:
    text = json.dumps(answer)
    third = max(1, len(text) // 3)
    steps: list[Any] = [
        text_chunks(text[:third], text[third : 2 * third], text[2 * third :])
    ]
    if with_tools:
        steps.insert(0, [call("lookup", {"city": "Oslo"})])
    return steps


async def drain(result: Any, stream: bool) -> Any:
    if not stream:
        return await result
    async for _ in result:
        pass
    return await result.get_final_response()


def check_requests(client: ScriptedChatClient, fmt: Any, with_tools: bool) -> None:
    wire = ResponseFormat.of(fmt).wire
    assert [r.options["response_format"] for r in client.requests] == [wire] * (
        2 if with_tools else 1
    )
    if with_tools:  # SO-8: the tool ran; its result went back with the format still set
        results = [
            c
            for m in client.requests[1].messages
            for c in m.contents
            if c.type == "function_result"
        ]
        assert [r.result for r in results] == ["station-Oslo"]


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("with_tools", [False, True])
async def test_client_round_trip(kind: str, stream: bool, with_tools: bool) -> None:
    """SO-1, SO-7, SO-8, SO-9, SO-10, SO-13, SO-14: get_response in both modes gives
    `value` of the kind."""
    fmt, answer, expected = KINDS[kind]
    client = ScriptedChatClient(script(answer, with_tools))
    options: dict[str, Any] = {"response_format": fmt}
    if with_tools:
        options["tools"] = [lookup]
    response = await drain(
        client.get_response("weather?", options=options, stream=stream), stream
    )
    assert isinstance(response, ChatResponse)
    assert response.value == expected
    assert response.try_value == expected
    check_requests(client, fmt, with_tools)
    assert options["response_format"] is fmt  # the caller's options are not changed


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("with_tools", [False, True])
async def test_agent_round_trip(kind: str, stream: bool, with_tools: bool) -> None:
    """SO-7, SO-8, SO-9: Agent.run in both modes; the run's options carry the format."""
    fmt, answer, expected = KINDS[kind]
    client = ScriptedChatClient(script(answer, with_tools))
    agent = Agent(client, name="forecaster", tools=[lookup] if with_tools else None)
    response = await drain(
        agent.run("weather?", options={"response_format": fmt}, stream=stream), stream
    )
    assert response.value == expected
    check_requests(client, fmt, with_tools)


async def test_agent_default_options_format(stream: bool) -> None:
    """SO-7, SO-9: a format in the agent's default options applies; the run's option
    wins over it."""
    answer = {"city": "Bergen", "country": "NO"}
    client = ScriptedChatClient([json.dumps(answer), json.dumps([1, 2])])
    agent = Agent(client, default_options={"response_format": Place})
    first = await drain(agent.run("where?", stream=stream), stream)
    assert first.value == Place("Bergen", "NO")
    second = await drain(
        agent.run("numbers?", stream=stream, options={"response_format": "json"}),
        stream,
    )
    assert second.value == [1, 2]
    assert client.requests[1].options["response_format"] == {"type": "json_object"}


async def test_agent_over_a_client_that_is_not_a_base_chat_client() -> None:
    """SO-9: an agent over any SupportsChatGetResponse still reads `value` with the
    run's format."""

    class Plain:
        def __init__(self) -> None:
            self.options: list[Any] = []

        async def get_response(
            self, messages: Any, *, options: Any = None, **kwargs: Any
        ) -> ChatResponse:
            self.options.append(options)
            return ChatResponse(
                [Message("assistant", ['{"city": "Oslo", "country": "SE"}'])]
            )

    client = Plain()
    response = await Agent(client).run("where?", options={"response_format": Place})
    assert response.value == Place("Oslo", "SE")


async def test_value_reads_the_last_answer_only() -> None:
    """SO-9: the text of the last assistant message with text; earlier tool-round text
    is not parsed."""
    client = ScriptedChatClient(
        [
            [Content.from_text("let me look"), call("lookup", {"city": "Oslo"})],
            '{"city": "Oslo", "country": null}',
        ]
    )
    response = await client.get_response(
        "go", options={"response_format": Place, "tools": [lookup]}
    )
    assert response.text.startswith("let me look")
    assert response.value == Place("Oslo", "NO")


async def test_value_raises_without_a_format_or_an_answer() -> None:
    """SO-9: with no format, the "text" format, or no assistant text, `value` raises
    `NoValueError` whose ``reason`` says which, and `try_value` gives None."""
    plain = await ScriptedChatClient(['{"a": 1}']).get_response("x")
    with pytest.raises(
        NoValueError, match="without a structured response_format"
    ) as caught:
        _ = plain.value
    assert caught.value.reason == "no format"
    assert plain.try_value is None
    text = await ScriptedChatClient(['{"a": 1}']).get_response(
        "x", options={"response_format": "text"}
    )
    with pytest.raises(NoValueError) as caught:
        _ = text.value
    assert caught.value.reason == "no format"
    assert text.try_value is None
    empty = await ScriptedChatClient([""]).get_response(
        "x", options={"response_format": Forecast}
    )
    with pytest.raises(NoValueError, match="without an answer") as caught:
        _ = empty.value
    assert caught.value.reason == "no answer"
    assert empty.try_value is None
    # built by hand: no format
    with pytest.raises(NoValueError) as caught:
        _ = ChatResponse([Message("assistant", ['{"city": "x"}'])]).value
    assert caught.value.reason == "no format"


async def test_value_is_cached_until_the_text_changes() -> None:
    """SO-9: parsed once; a changed answer is parsed again."""
    response = await ScriptedChatClient(
        ['{"city": "Oslo", "country": "NO"}']
    ).get_response("x", options={"response_format": Place})
    first = response.value
    assert response.value is first
    response.messages.append(
        Message("assistant", ['{"city": "Rome", "country": "IT"}'])
    )
    assert response.value == Place("Rome", "IT")


@dataclasses.dataclass
class Answer:
    a: int


def test_value_reads_the_last_assistant_message_with_text() -> None:
    """SO-9: value parses the last assistant message with non-empty text: a later tool
    message, and a later assistant message with only a call, are skipped."""
    messages = [
        Message("assistant", '{"a": 1}'),
        Message("assistant", [Content.from_function_call("c", "f", "{}")]),
        Message("tool", [Content.from_function_result("c", "x")]),
    ]
    response = ChatResponse(messages=messages, response_format=Answer)
    assert response.value == Answer(1)
    assert response.try_value == Answer(1)
