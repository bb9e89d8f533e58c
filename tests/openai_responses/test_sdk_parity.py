"""Wire parity with the official ``openai`` SDK (spec/openai-responses.md, OR-22).

The same conversation goes through `OpenAIResponsesClient` and through
``AsyncOpenAI().responses.create(...)`` to the recording loopback server; the JSON
bodies must be equal. The same recorded streams are parsed by our decoder and by the
SDK's stream events; text, tool calls, status / finish reason, usage and reasoning must
agree. The SDK sends what its caller writes, so the SDK call spells out what minagent
derives (the list in OR-22).
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from minagent import (
    ChatResponse,
    Content,
    FunctionInvocationConfiguration,
    Message,
    tool,
)

from ._fake_server import FakeResponses, replay, transcript

NO_TOOLS = FunctionInvocationConfiguration(enabled=False)
PNG = b"\x89PNG\r\n\x1a\nfake"


@tool
def get_weather(location: str, unit: str = "celsius") -> str:
    """Current weather for a city."""
    return location


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
    "required": ["city", "sunny"],
    "additionalProperties": False,
}


def conversation() -> list[Message]:
    image = Content.from_data(PNG, "image/png")
    return [
        Message("developer", ["Answer in JSON."]),
        Message("user", ["Is it sunny here?", image]),
        Message(
            "assistant",
            [
                Content.from_text_reasoning(
                    "Need the weather.", id="rs_1", protected_data="ENC=="
                ),
                Content.from_function_call(
                    "call_1", "get_weather", '{"location":"Paris"}', id="fc_1"
                ),
            ],
        ),
        Message("tool", [Content.from_function_result("call_1", "Sunny, 21 degrees")]),
        Message("assistant", ["It is sunny."]),
        Message("user", ["Again, as JSON please."]),
    ]


OPTIONS: dict[str, Any] = {
    "instructions": "You are a weather bot.",
    "tools": [get_weather, {"type": "web_search"}],
    "tool_choice": {"mode": "required", "required_function_name": "get_weather"},
    "parallel_tool_calls": False,
    "response_format": {"schema": SCHEMA, "name": "weather", "strict": True},
    "max_tokens": 300,
    "reasoning_effort": "low",
    "include": ["reasoning.encrypted_content"],
    "store": False,
    "temperature": 0.2,
    "top_p": 0.9,
    "metadata": {"run": "parity"},
    "user": "user-1",
    "service_tier": "auto",
    "conversation_id": "resp_previous",
}


def sdk_arguments() -> dict[str, Any]:
    """The SDK call equivalent to ``conversation()`` with ``OPTIONS``."""
    image_url = Content.from_data(PNG, "image/png").uri
    return {
        "model": "gpt-5-mini",
        "instructions": "You are a weather bot.",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Answer in JSON."}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Is it sunny here?"},
                    {"type": "input_image", "image_url": image_url, "detail": "auto"},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Need the weather."}],
                "encrypted_content": "ENC==",
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"location":"Paris"}',
                "id": "fc_1",
            },
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": "Sunny, 21 degrees",
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "It is sunny.", "annotations": []}
                ],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Again, as JSON please."}],
            },
        ],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": get_weather.parameters,
                "strict": False,
            },
            {"type": "web_search"},
        ],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "parallel_tool_calls": False,
        "text": {
            "format": {
                "type": "json_schema",
                "name": "weather",
                "schema": SCHEMA,
                "strict": True,
            }
        },
        "max_output_tokens": 300,
        "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
        "temperature": 0.2,
        "top_p": 0.9,
        "metadata": {"run": "parity"},
        "user": "user-1",
        "service_tier": "auto",
        "previous_response_id": "resp_previous",
    }


async def test_same_body_as_the_sdk(stream: bool) -> None:
    """OR-22: the same conversation through our client and the SDK gives the same JSON
    body."""
    async with FakeResponses(model="gpt-5-mini") as server:
        server.script_text("{}")
        server.script_text("{}")
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            if stream:
                result = client.get_response(
                    conversation(), stream=True, options=dict(OPTIONS)
                )
                async for _ in result:
                    pass
            else:
                await client.get_response(conversation(), options=dict(OPTIONS))
        sdk = openai.AsyncOpenAI(
            api_key="sk-sdk", base_url=server.base_url, max_retries=0
        )
        async with sdk:
            if stream:
                events = await sdk.responses.create(**sdk_arguments(), stream=True)
                async for _ in events:
                    pass
            else:
                await sdk.responses.create(**sdk_arguments())
        ours, theirs = server.requests()
    assert ours == theirs
    assert ours["previous_response_id"] == "resp_previous"
    assert len(ours["input"]) == 7
    assert ("stream" in ours) is stream


def sdk_view(events: list[Any]) -> dict[str, Any]:
    """What the SDK's parsed stream events say: text, calls, status, usage,
    reasoning."""
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = next(
        e.response
        for e in events
        if e.type in ("response.completed", "response.incomplete")
    )
    calls = [
        (i.call_id, i.name, i.arguments)
        for i in final.output
        if i.type == "function_call"
    ]
    reasoning = [
        (i.id, "\n\n".join(s.text for s in i.summary), i.encrypted_content)
        for i in final.output
        if i.type == "reasoning"
    ]
    usage = final.usage
    reason = final.incomplete_details.reason if final.incomplete_details else None
    return {
        "text": text,
        "calls": calls,
        "finish": {"max_output_tokens": "length"}.get(reason or "", reason)
        if final.status == "incomplete"
        else ("tool_calls" if calls else "stop"),
        "usage": (
            usage.input_tokens,
            usage.output_tokens,
            usage.total_tokens,
            usage.input_tokens_details.cached_tokens,
            usage.output_tokens_details.reasoning_tokens,
        ),
        "reasoning": reasoning,
        "id": final.id,
        "model": final.model,
    }


def our_view(response: ChatResponse) -> dict[str, Any]:
    contents = [c for m in response.messages for c in m.contents]
    usage = response.usage_details
    assert usage is not None
    return {
        "text": response.text,
        "calls": [
            (c.call_id, c.name, c.arguments)
            for c in contents
            if c.type == "function_call"
        ],
        "finish": response.finish_reason,
        "usage": (
            usage.input_token_count,
            usage.output_token_count,
            usage.total_token_count,
            usage.cache_read_input_token_count,
            usage.reasoning_output_token_count,
        ),
        "reasoning": [
            (c.id, c.text, c.protected_data)
            for c in contents
            if c.type == "text_reasoning"
        ],
        "id": response.response_id,
        "model": response.model,
    }


@pytest.mark.parametrize(
    "name",
    [
        "plain_text.sse",
        "one_tool_call.sse",
        "parallel_tool_calls.sse",
        "reasoning_tool_call.sse",
        "hosted_web_search.sse",
        "incomplete.sse",
        "keepalive_crlf.sse",
        "no_deltas.sse",
    ],
)
async def test_same_stream_reading_as_the_sdk(name: str) -> None:
    """OR-22: a recorded stream reads the same through our decoder and the SDK's stream
    events."""
    data = transcript(name)
    async with FakeResponses() as server:
        server.add(replay(data), replay(data))
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            stream = client.get_response([Message("user", ["Hi"])], stream=True)
            async for _ in stream:
                pass
            ours = our_view(await stream.get_final_response())
        sdk = openai.AsyncOpenAI(
            api_key="sk-sdk", base_url=server.base_url, max_retries=0
        )
        async with sdk:
            events = [
                e
                async for e in await sdk.responses.create(
                    model="m", input="Hi", stream=True
                )
            ]
    theirs = sdk_view(events)
    # the SDK's text is its deltas only; ours completes from the item
    if name == "no_deltas.sse":
        assert theirs["text"] == ""
        theirs["text"] = "Whole text at once."
    assert ours == theirs


@pytest.mark.parametrize(
    "name", ["plain_text.sse", "reasoning_tool_call.sse", "incomplete.sse"]
)
async def test_same_body_reading_as_the_sdk(name: str) -> None:
    """OR-22: a whole response reads the same through our codec and the SDK's Response
    model."""
    data = transcript(name)
    async with FakeResponses() as server:
        server.add(replay(data), replay(data))
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            ours = await client.get_response([Message("user", ["Hi"])])
        sdk = openai.AsyncOpenAI(
            api_key="sk-sdk", base_url=server.base_url, max_retries=0
        )
        async with sdk:
            response = await sdk.responses.create(model="m", input="Hi")
    assert ours.text == response.output_text
    assert ours.response_id == response.id
    calls = [
        (i.call_id, i.name, i.arguments)
        for i in response.output
        if i.type == "function_call"
    ]
    assert [
        (c.call_id, c.name, c.arguments)
        for m in ours.messages
        for c in m.contents
        if c.type == "function_call"
    ] == calls
    assert ours.usage_details is not None
    assert response.usage is not None
    assert ours.usage_details.total_token_count == response.usage.total_tokens
    assert (
        ours.usage_details.reasoning_output_token_count
        == response.usage.output_tokens_details.reasoning_tokens
    )
