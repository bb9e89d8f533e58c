"""Wire parity with the official ``ollama`` Python SDK (test-only dependency, OL-1 ..
OL-12).

The same conversation — system, user with an image, assistant tool call, tool result,
tools, temperature, max tokens, think, format, keep_alive — is sent through our client
and through ``ollama.AsyncClient.chat`` to one recording loopback server; the two
request bodies are compared as JSON, field by field. The same recorded streams (and
their merged whole bodies) are then parsed by both, and must give the same text,
thinking, tool calls, done reason and usage.

Deliberate differences, documented in spec/ollama.md:

* tool parameters: we send the tool's whole JSON schema (OL-6); the SDK's typed ``Tool``
  model keeps only ``type``, ``$defs``, ``items``, ``required``, ``properties`` and, per
  property, ``type``, ``items``, ``description``, ``enum`` (it drops ``default``,
  ``additionalProperties``, ``title``, ...). The comparison checks that our schema is
  the SDK's plus only such keys.
* call ids: we send each call's ``id`` and each result's ``tool_call_id`` (OL-4, OL-5;
  current Ollama servers pair by them); the SDK's typed ``Message`` drops both fields
  even when given (the test hands them to the SDK and checks they vanish). The
  comparison removes them from our body after checking they are the conversation's call
  ids.
* ``tool_choice``: the SDK has no such parameter and Ollama no such field. Our
  ``"auto"`` sends nothing (the bodies are equal with it set); ``"required"`` is a
  ValueError (OL-7).
* key order: the SDK orders keys by its model's fields; JSON objects are compared as
  dicts.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from minagent_ollama import OllamaModelNotFoundError
from ollama import AsyncClient, ResponseError

from minagent import Content, FunctionInvocationConfiguration, Message, tool

from ._fake_server import FakeOllama, merge_chunks, raw, replay, transcript

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
NO_LOOP = FunctionInvocationConfiguration(enabled=False)
SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}
# JSON-schema keys the SDK's typed Tool model does not carry (see the module docstring).
SDK_DROPPED_KEYS = {
    "default",
    "additionalProperties",
    "title",
    "minimum",
    "maximum",
    "format",
}


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather for a city.

    Args:
        city: The city name.
        unit: celsius or fahrenheit.
    """
    return f"Sunny in {city}"


def our_conversation() -> list[Message]:
    return [
        Message("system", ["You are a weather bot."]),
        Message(
            "user",
            [
                "What is in this picture, and the weather in Paris?",
                Content.from_data(PNG, "image/png"),
            ],
        ),
        Message(
            "assistant",
            [Content.from_function_call("call_1", "get_weather", '{"city": "Paris"}')],
        ),
        Message("tool", [Content.from_function_result("call_1", "Sunny, 21 degrees")]),
        Message("user", ["Summarise."]),
    ]


OUR_OPTIONS: dict[str, Any] = {
    "tools": [get_weather],
    "tool_choice": "auto",
    "temperature": 0.3,
    "max_tokens": 256,
    "seed": 42,
    "think": True,
    "response_format": SCHEMA,
    "keep_alive": "10m",
}


def sdk_chat_kwargs(stream: bool) -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {
                "role": "user",
                "content": "What is in this picture, and the weather in Paris?",
                "images": [PNG],
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "function": {
                            "name": "get_weather",
                            "arguments": {"city": "Paris"},
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "content": "Sunny, 21 degrees",
                "tool_name": "get_weather",
                "tool_call_id": "call_1",
            },
            {"role": "user", "content": "Summarise."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": get_weather.name,
                    "description": get_weather.description,
                    "parameters": get_weather.parameters,
                },
            }
        ],
        "options": {"temperature": 0.3, "num_predict": 256, "seed": 42},
        "think": True,
        "format": SCHEMA,
        "keep_alive": "10m",
        "stream": stream,
    }


def strip_sdk_dropped(schema: Any, dropped: set[str]) -> Any:
    """Our schema without the keys the SDK's model drops; records which were dropped."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key in SDK_DROPPED_KEYS:
                dropped.add(key)
                continue
            out[key] = (
                strip_sdk_dropped(value, dropped)
                if key in ("properties", "items")
                else value
            )
            if key == "properties" and isinstance(value, dict):
                out[key] = {
                    name: strip_sdk_dropped(prop, dropped)
                    for name, prop in value.items()
                }
        return out
    return schema


def strip_call_ids(body: dict[str, Any]) -> list[str]:
    """Remove the call ids (calls' ``id``, results' ``tool_call_id``) in place; return
    them in order."""
    ids = []
    for message in body["messages"]:
        ids += [
            call.pop("id") for call in message.get("tool_calls", []) if "id" in call
        ]
        if "tool_call_id" in message:
            ids.append(message.pop("tool_call_id"))
    return ids


def compare_bodies(ours: dict[str, Any], theirs: dict[str, Any]) -> set[str]:
    """Field by field; returns the schema keys that differ only by the documented SDK
    drop."""
    ours = copy.deepcopy(ours)
    assert strip_call_ids(ours) == ["call_1", "call_1"]
    # the SDK sent none, though it was given them
    assert strip_call_ids(copy.deepcopy(theirs)) == []
    dropped: set[str] = set()
    for tool_decl in ours.get("tools", []):
        params = tool_decl["function"]["parameters"]
        tool_decl["function"]["parameters"] = strip_sdk_dropped(params, dropped)
    assert sorted(ours) == sorted(theirs), (sorted(ours), sorted(theirs))
    for key in ours:
        if key == "messages":
            assert len(ours[key]) == len(theirs[key])
            for i, (a, b) in enumerate(zip(ours[key], theirs[key], strict=True)):
                assert a == b, f"messages[{i}]: ours {a} != sdk {b}"
        else:
            assert ours[key] == theirs[key], (
                f"{key}: ours {ours[key]!r} != sdk {theirs[key]!r}"
            )
    return dropped


async def test_request_bodies_match_the_sdk(stream: bool) -> None:
    """OL-1, OL-2, OL-3, OL-4, OL-5, OL-6, OL-7, OL-8, OL-9, OL-10: the same
    conversation sent through our client and through the official SDK gives equal
    request bodies, field by field (tool parameters up to the keys the SDK's model
    drops)."""
    async with FakeOllama() as server:
        server.add(
            replay(transcript("plain_text.ndjson")),
            replay(transcript("plain_text.ndjson")),
        )
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            if stream:
                async for _ in client.get_response(
                    our_conversation(), stream=True, options=OUR_OPTIONS
                ):
                    pass
            else:
                await client.get_response(our_conversation(), options=OUR_OPTIONS)
        async with AsyncClient(host=server.base_url) as sdk:
            answer = await sdk.chat(**sdk_chat_kwargs(stream))
            if stream:
                async for _ in answer:  # type: ignore[union-attr]
                    pass
        ours, theirs = server.requests()
        sdk_headers = server.headers[1]
    dropped = compare_bodies(ours, theirs)
    assert dropped == {"default", "additionalProperties"}
    # base64 of the same bytes
    assert ours["messages"][1]["images"] == theirs["messages"][1]["images"]
    assert sdk_headers["Content-Type"] == "application/json"


async def test_tool_choice_required_is_refused_not_dropped() -> None:
    """OL-7: the SDK cannot express tool_choice; our client refuses 'required' before
    sending."""
    async with (
        FakeOllama() as server,
        server.make_client(function_invocation_configuration=NO_LOOP) as client,
    ):
        with pytest.raises(
            ValueError, match="tool_choice 'required' cannot be honoured"
        ):
            await client.get_response(
                our_conversation(), options={**OUR_OPTIONS, "tool_choice": "required"}
            )
        assert server.requests() == []


def summary_of_ours(response: Any) -> dict[str, Any]:
    contents = [c for m in response.messages for c in m.contents]
    usage = response.usage_details
    return {
        "text": "".join(c.text or "" for c in contents if c.type == "text"),
        "thinking": "".join(
            c.text or "" for c in contents if c.type == "text_reasoning"
        ),
        "calls": [
            (c.name, json.loads(c.arguments))
            for c in contents
            if c.type == "function_call"
        ],
        "done_reason": response.finish_reason,
        "usage": (usage.input_token_count, usage.output_token_count)
        if usage
        else (None, None),
    }


def summary_of_sdk(parts: list[Any]) -> dict[str, Any]:
    last = parts[-1]
    return {
        "text": "".join(p.message.content or "" for p in parts),
        "thinking": "".join(p.message.thinking or "" for p in parts),
        "calls": [
            (call.function.name, dict(call.function.arguments))
            for p in parts
            for call in p.message.tool_calls or []
        ],
        "done_reason": last.done_reason,
        "usage": (last.prompt_eval_count, last.eval_count),
    }


TRANSCRIPTS = [
    "plain_text.ndjson",
    "tool_call.ndjson",
    "parallel_tool_calls.ndjson",
    "thinking.ndjson",
    "length.ndjson",
    "tool_call_with_id.ndjson",
]
# Not here: crlf_blank.ndjson. Ollama never sends blank lines, and the SDK's line loop
# fails on one (json.loads("")); our decoder skips them (OL-16), tested in
# test_codec.py.


@pytest.mark.parametrize("name", TRANSCRIPTS)
async def test_recorded_streams_parse_like_the_sdk(name: str) -> None:
    """OL-11, OL-12, OL-17, PV-9: the same recorded stream, and its whole body, parsed
    by us and by the SDK give the same text, thinking, tool calls, done reason and
    usage."""
    data = transcript(name)
    async with FakeOllama() as server:
        server.add(*[replay(data) for _ in range(4)])
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            stream = client.get_response([Message("user", ["Hi"])], stream=True)
            async for _ in stream:
                pass
            ours_streamed = summary_of_ours(await stream.get_final_response())
            ours_whole = summary_of_ours(
                await client.get_response([Message("user", ["Hi"])])
            )
        async with AsyncClient(host=server.base_url) as sdk:
            parts = [
                p
                async for p in await sdk.chat(
                    "llama3.2",
                    messages=[{"role": "user", "content": "Hi"}],
                    stream=True,
                )
            ]
            whole = await sdk.chat(
                "llama3.2", messages=[{"role": "user", "content": "Hi"}], stream=False
            )
    assert ours_streamed == summary_of_sdk(parts)
    assert ours_whole == summary_of_sdk([whole])
    assert ours_whole == ours_streamed
    assert merge_chunks(data)["done"] is True


async def test_model_not_pulled_message_matches_the_sdk() -> None:
    """OL-20, OL-19: the SDK's ResponseError and our typed error carry the same message
    and status."""
    message = 'model "llama3:70b" not found, try pulling it first'
    async with FakeOllama() as server:
        server.add(
            raw(404, json.dumps({"error": message})),
            raw(404, json.dumps({"error": message})),
        )
        async with server.make_client(model="llama3:70b", max_retries=0) as client:
            with pytest.raises(OllamaModelNotFoundError) as ours:
                await client.get_response([Message("user", ["Hi"])])
        async with AsyncClient(host=server.base_url) as sdk:
            with pytest.raises(ResponseError) as theirs:
                await sdk.chat(
                    "llama3:70b", messages=[{"role": "user", "content": "Hi"}]
                )
    assert theirs.value.error == message
    assert theirs.value.status_code == 404
    assert ours.value.provider_message == message
    assert ours.value.status == 404
