"""Wire parity with the official ``openai`` SDK for Chat Completions (OA-33, issue 20).

Requests: the same conversation is sent through `OpenAIChatClient` and through
``openai.AsyncOpenAI().chat.completions.create`` (written as a user of the SDK writes
it) to the recording loopback server; the JSON bodies must be equal. Deliberate
differences (OA-33): the SDK sends what it is given, so it is given
``max_completion_tokens`` (OA-9) and, when streaming, ``stream_options={"include_usage":
True}`` (OA-1), which minagent always asks for.

Streams: every recorded transcript is replayed to both; the SDK's chunks, accumulated as
its users do, give the same text, tool calls, finish reason and usage as minagent's
updates.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from minagent_openai import ChatCompletionsStreamDecoder, OpenAIChatClient

from minagent import ChatResponse, Content, Message, tool

from ._fake_server import FakeOpenAI, replay, transcript

TRANSCRIPTS = [
    "plain_text.sse",
    "one_tool_call.sse",
    "parallel_tool_calls.sse",
    "whole_tool_call.sse",
]
PNG = b"\x89PNG\r\n\x1a\n0000"


@tool
def get_weather(location: str, unit: str = "celsius") -> str:
    """Current weather for a city."""
    return f"{location}: 21 {unit}"


WEATHER_DECLARATION = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": get_weather.parameters,
    },
}


def _sdk(server: FakeOpenAI) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="sk-parity",
        base_url=server.base_url,
        max_retries=0,
        organization="org-1",
        project="proj-1",
    )


def _ours(server: FakeOpenAI) -> OpenAIChatClient:
    return server.make_client(
        api_key="sk-parity", organization="org-1", project="proj-1", max_retries=0
    )


# Each case: minagent's (messages, options) and the SDK call a user writes for the same
# request.
CASES: dict[str, tuple[list[Message], dict[str, Any], dict[str, Any]]] = {
    "plain": (
        [Message("user", ["Hello"])],
        {},
        {"messages": [{"role": "user", "content": "Hello"}]},
    ),
    "system-and-sampling": (
        [Message("system", ["Be brief."]), Message("user", ["Hi"])],
        {
            "temperature": 0.2,
            "top_p": 0.9,
            "max_tokens": 50,
            "seed": 7,
            "stop": ["\n"],
            "user": "u1",
        },
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
            ],
            "temperature": 0.2,
            "top_p": 0.9,
            "max_completion_tokens": 50,
            "seed": 7,
            "stop": ["\n"],
            "user": "u1",
        },
    ),
    "tool-history": (
        [
            Message("user", ["Weather in Paris?"]),
            Message(
                "assistant",
                [
                    Content.from_function_call(
                        "call_1", "get_weather", '{"location": "Paris"}'
                    )
                ],
            ),
            Message(
                "tool", [Content.from_function_result("call_1", "Paris: 21 celsius")]
            ),
        ],
        {"tools": [get_weather], "tool_choice": "auto", "parallel_tool_calls": True},
        {
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": '{"location": "Paris"}',
                            },
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "call_1",
                    "content": "Paris: 21 celsius",
                },
            ],
            "tools": [WEATHER_DECLARATION],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
        },
    ),
    "required-function": (
        [Message("user", ["Weather?"])],
        {
            "tools": [get_weather],
            "tool_choice": {
                "mode": "required",
                "required_function_name": "get_weather",
            },
        },
        {
            "messages": [{"role": "user", "content": "Weather?"}],
            "tools": [WEATHER_DECLARATION],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        },
    ),
    "image": (
        [Message("user", ["What is this?", Content.from_data(PNG, "image/png")])],
        {},
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {
                            "type": "image_url",
                            "image_url": {
                                "url": Content.from_data(PNG, "image/png").uri
                            },
                        },
                    ],
                }
            ]
        },
    ),
    "json-schema": (
        [Message("user", ["A city"])],
        {
            "response_format": {
                "name": "City",
                "schema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                },
                "strict": True,
            }
        },
        {
            "messages": [{"role": "user", "content": "A city"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "City",
                    "schema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                    },
                    "strict": True,
                },
            },
        },
    ),
    "standard-fields": (
        [Message("user", ["Hi"])],
        {
            "logprobs": True,
            "top_logprobs": 2,
            "service_tier": "flex",
            "reasoning_effort": "low",
            "metadata": {"a": "b"},
        },
        {
            "messages": [{"role": "user", "content": "Hi"}],
            "logprobs": True,
            "top_logprobs": 2,
            "service_tier": "flex",
            "reasoning_effort": "low",
            "metadata": {"a": "b"},
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_request_bodies_equal_the_sdks(case: str, stream: bool) -> None:
    """OA-33: the same request through minagent and through the SDK: equal JSON
    bodies."""
    messages, options, sdk_kwargs = CASES[case]
    async with FakeOpenAI() as server:
        server.add(
            replay(transcript("plain_text.sse")), replay(transcript("plain_text.sse"))
        )
        async with _ours(server) as client:
            if stream:
                _ = [
                    u
                    async for u in client.get_response(
                        messages, stream=True, options=options
                    )
                ]
            else:
                await client.get_response(messages, options=options)
        sdk = _sdk(server)
        try:
            extra: dict[str, Any] = (
                {"stream": True, "stream_options": {"include_usage": True}}
                if stream
                else {}
            )
            answer = await sdk.chat.completions.create(
                model="gpt-4o-mini", **sdk_kwargs, **extra
            )
            if stream:
                _ = [chunk async for chunk in answer]  # type: ignore[union-attr]
        finally:
            await sdk.close()
        ours, theirs = server.requests()
        ours_headers, their_headers = (
            {k.lower(): v for k, v in h.items()} for h in server.headers
        )
    assert ours == theirs, json.dumps({"minagent": ours, "sdk": theirs}, indent=1)
    for name in (
        "openai-organization",
        "openai-project",
        "content-type",
        "authorization",
    ):
        assert ours_headers[name] == their_headers[name], name


def _sdk_accumulate(chunks: list[Any]) -> dict[str, Any]:
    """What an SDK user assembles from a stream: text, calls by index, finish reason,
    usage."""
    text, finish, usage = "", None, None
    calls: dict[int, dict[str, str]] = {}
    order: list[int] = []
    for chunk in chunks:
        if chunk.usage is not None:
            usage = (
                chunk.usage.prompt_tokens,
                chunk.usage.completion_tokens,
                chunk.usage.total_tokens,
            )
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for call in choice.delta.tool_calls or []:
                current = calls.get(call.index)
                if current is None or (call.id and call.id != current["id"]):
                    key = len(order)
                    order.append(key)
                    calls[call.index] = current = {
                        "id": call.id or "",
                        "name": "",
                        "arguments": "",
                    }
                    # keep every call, also when an index is reused
                    calls[-1 - key] = current
                if call.function is not None:
                    current["name"] += call.function.name or ""
                    current["arguments"] += call.function.arguments or ""
    every = [calls[-1 - key] for key in order]
    return {"text": text, "calls": every, "finish_reason": finish, "usage": usage}


def _ours_accumulate(response: ChatResponse) -> dict[str, Any]:
    calls = [
        {"id": c.call_id, "name": c.name, "arguments": c.arguments}
        for m in response.messages
        for c in m.contents
        if c.type == "function_call"
    ]
    usage = response.usage_details
    counts = (
        None
        if usage is None
        else (
            usage.input_token_count,
            usage.output_token_count,
            usage.total_token_count,
        )
    )
    return {
        "text": response.text,
        "calls": calls,
        "finish_reason": response.finish_reason,
        "usage": counts,
    }


@pytest.mark.parametrize("name", TRANSCRIPTS)
async def test_recorded_streams_parse_like_the_sdk(name: str) -> None:
    """OA-33, PV-13: the same recorded stream: same text, calls, finish reason and
    usage."""
    data = transcript(name)
    decoder = ChatCompletionsStreamDecoder()
    ours = _ours_accumulate(
        ChatResponse.from_updates([*decoder.feed(data), *decoder.close()])
    )
    async with FakeOpenAI() as server:
        server.add(replay(data))
        sdk = _sdk(server)
        try:
            stream = await sdk.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "Hi"}],
                stream=True,
            )
            theirs = _sdk_accumulate([chunk async for chunk in stream])
        finally:
            await sdk.close()
    assert ours == theirs


async def test_a_stream_the_sdk_cannot_parse() -> None:
    """OA-33, PV-18, PV-19: comments, CRLF and multi-line data: minagent decodes, the
    SDK fails."""
    data = transcript("keepalive_crlf.sse")
    decoder = ChatCompletionsStreamDecoder()
    ours = ChatResponse.from_updates([*decoder.feed(data), *decoder.close()])
    assert ours.text.startswith("Line one\nline two")
    assert ours.finish_reason == "length"
    async with FakeOpenAI() as server:
        server.add(replay(data))
        sdk = _sdk(server)
        try:
            stream = await sdk.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "Hi"}],
                stream=True,
            )
            try:
                with pytest.raises(json.JSONDecodeError):
                    _ = [chunk async for chunk in stream]
            finally:
                await stream.close()
                # the SDK's abandoned async generators finish closing
                for _ in range(20):
                    await asyncio.sleep(0.01)
        finally:
            await sdk.close()


@pytest.mark.parametrize("auth", ["api_key", "ad_token"])
async def test_azure_requests_equal_the_sdks(auth: str) -> None:
    """OA-32, OA-33: AzureOpenAIChatClient sends what openai.AsyncAzureOpenAI sends."""
    from minagent_openai import AzureOpenAIChatClient

    async with FakeOpenAI() as server:
        server.add(
            replay(transcript("plain_text.sse")), replay(transcript("plain_text.sse"))
        )
        endpoint = server.base_url.removesuffix("/v1")
        credentials = (
            {"api_key": "azure-key-0123456789"}
            if auth == "api_key"
            else {"ad_token": "entra-0123456789"}
        )
        async with AzureOpenAIChatClient(
            "prod-4o", endpoint=endpoint, api_version="2024-10-21", **credentials
        ) as ours:
            await ours.get_response([Message("user", ["Hi"])])
        sdk_credentials = (
            {"api_key": "azure-key-0123456789"}
            if auth == "api_key"
            else {"azure_ad_token": "entra-0123456789"}
        )
        sdk = openai.AsyncAzureOpenAI(
            azure_endpoint=endpoint,
            api_version="2024-10-21",
            max_retries=0,
            **sdk_credentials,
        )
        try:
            await sdk.chat.completions.create(
                model="prod-4o", messages=[{"role": "user", "content": "Hi"}]
            )
        finally:
            await sdk.close()
        mine, theirs = server.requests()
        mine_headers, their_headers = (
            {k.lower(): v for k, v in h.items()} for h in server.headers
        )
    assert mine == theirs
    assert (
        server.paths[0]
        == server.paths[1]
        == "/openai/deployments/prod-4o/chat/completions"
    )
    assert server.queries[0] == server.queries[1] == [("api-version", "2024-10-21")]
    for name in ("api-key", "authorization"):
        assert mine_headers.get(name) == their_headers.get(name), name
