"""Wire parity with the official `anthropic` SDK (test-only dependency, pinned in
requirements-test.txt).

1. Requests: the same conversation (system, user text and images, an assistant tool
   call, tool results including an error result, tools, tool_choice, temperature, max
   tokens) sent through `AnthropicChatClient` and through
   ``anthropic.AsyncAnthropic().messages.create`` to the same recording loopback server
   gives equal JSON bodies, compared field by field. The deliberate differences are
   listed in spec/anthropic.md ("Deliberate differences ...").
2. Responses: the same recorded streams (and their merged whole messages), parsed by the
   SDK and by this plugin, give the same text, tool calls, thinking, stop reason and
   usage.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
from typing import Annotated, Any

import anthropic
import pytest

from minagent import (
    ChatResponse,
    Content,
    FunctionInvocationConfiguration,
    Message,
    tool,
)

from ._fake_server import COMPLETE, FakeAnthropic, merge_events, replay, transcript

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
NO_TOOLS = FunctionInvocationConfiguration(enabled=False)


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def minagent_conversation() -> tuple[list[Message], dict[str, Any]]:
    messages = [
        Message(
            "user",
            [
                Content.from_text(
                    "Where was this taken, and what is the weather there?"
                ),
                Content.from_data(PNG, "image/png"),
                Content.from_uri(
                    "https://upload.wikimedia.org/tour.jpg", media_type="image/jpeg"
                ),
            ],
        ),
        Message(
            "assistant",
            [
                Content.from_text("That is Paris. Let me check the weather."),
                Content.from_function_call(
                    "toolu_01A09q90qw90lq917835lq9", "get_weather", '{"city": "Paris"}'
                ),
                Content.from_function_call(
                    "toolu_01B", "get_weather", {"city": "Atlantis"}
                ),
            ],
        ),
        Message(
            "tool",
            [
                Content.from_function_result(
                    "toolu_01A09q90qw90lq917835lq9", "Sunny, 21 degrees"
                ),
                Content.from_function_result(
                    "toolu_01B", None, exception="Error: unknown city Atlantis"
                ),
            ],
        ),
        Message("user", ["Thanks. And tomorrow?"]),
    ]
    options = {
        "instructions": "You are a concise weather assistant.",
        "tools": [get_weather],
        "tool_choice": {"mode": "required", "required_function_name": "get_weather"},
        "parallel_tool_calls": False,
        "max_tokens": 1024,
        "stop": ["\n\nHuman:"],
        "metadata": {"user_id": "user-42"},
    }
    return messages, options


def sdk_conversation() -> dict[str, Any]:
    """The same conversation as an SDK user writes it."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are a concise weather assistant.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "Where was this taken, and what is the weather there?",
                    },
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": base64.b64encode(PNG).decode(),
                        },
                    },
                    {
                        "type": "image",
                        "source": {
                            "type": "url",
                            "url": "https://upload.wikimedia.org/tour.jpg",
                        },
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "That is Paris. Let me check the weather.",
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_01A09q90qw90lq917835lq9",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_01B",
                        "name": "get_weather",
                        "input": {"city": "Atlantis"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                        "content": "Sunny, 21 degrees",
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01B",
                        "content": "Error: unknown city Atlantis",
                        "is_error": True,
                    },
                    {"type": "text", "text": "Thanks. And tomorrow?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": get_weather.parameters,
            }
        ],
        "tool_choice": {
            "type": "tool",
            "name": "get_weather",
            "disable_parallel_tool_use": True,
        },
        "stop_sequences": ["\n\nHuman:"],
        "metadata": {"user_id": "user-42"},
    }


def field_diff(ours: Any, theirs: Any, path: str = "$") -> list[str]:
    """Every path where two JSON values differ (a field-by-field comparison)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(set(ours) | set(theirs)):
            if key not in ours or key not in theirs:
                out.append(
                    f"{path}.{key}: only in {'ours' if key in ours else 'the SDK'}"
                )
            else:
                out += field_diff(ours[key], theirs[key], f"{path}.{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items vs {len(theirs)}"]
        return [
            d
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
            for d in field_diff(a, b, f"{path}[{i}]")
        ]
    return (
        []
        if ours == theirs and type(ours) is type(theirs)
        else [f"{path}: {ours!r} vs {theirs!r}"]
    )


def sdk_client(server: FakeAnthropic, **kw: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="sk-ant-parity", base_url=server.base_url, max_retries=0, **kw
    )


OLD_VERSION = "2023-06-01"


@pytest.mark.parametrize("version", ["default", OLD_VERSION])
async def test_request_bodies_equal_the_sdks(stream: bool, version: str) -> None:
    """AN-1 .. AN-12, AN-2, AN-3, AN-5, AN-6, AN-7, AN-10, AN-11, AN-19: the same
    conversation sent through AnthropicChatClient and through the official SDK gives
    equal bodies, field by field, and the same anthropic-version; on API version
    2023-06-01 with temperature and top_k (which the SDK only sends through extra_body,
    spec/anthropic.md)."""
    messages, options = minagent_conversation()
    request = sdk_conversation()
    ours_kw: dict[str, Any] = {}
    sdk_kw: dict[str, Any] = {}
    if version == OLD_VERSION:
        options = {**options, "temperature": 0.3, "top_k": 40}
        request["extra_body"] = {"temperature": 0.3, "top_k": 40}
        ours_kw["anthropic_version"] = OLD_VERSION
        sdk_kw["default_headers"] = {"anthropic-version": OLD_VERSION}
    async with FakeAnthropic() as server:
        server.script_text("Sunny tomorrow too.")
        server.script_text("Sunny tomorrow too.")
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS, **ours_kw
        ) as client:
            if stream:
                async for _ in client.get_response(
                    messages, stream=True, options=options
                ):
                    pass
            else:
                await client.get_response(messages, options=options)
        async with sdk_client(server, **sdk_kw) as sdk:
            if stream:
                events = await sdk.messages.create(**request, stream=True)
                async for _ in events:
                    pass
            else:
                await sdk.messages.create(**request)
        ours, theirs = server.requests()
        our_headers = {k.lower(): v for k, v in server.headers[0].items()}
        their_headers = {k.lower(): v for k, v in server.headers[1].items()}
    assert field_diff(ours, theirs) == []
    if version == OLD_VERSION:
        assert ours["temperature"] == 0.3
    assert our_headers["anthropic-version"] == their_headers["anthropic-version"]
    assert our_headers["x-api-key"] == "sk-ant-test-harness"
    # deliberate difference (AN-19)
    assert their_headers["authorization"] == "Bearer sk-ant-parity"


def sdk_summary(message: Any) -> dict[str, Any]:
    blocks = message.content
    return {
        "id": message.id,
        "model": message.model,
        "text": "".join(b.text for b in blocks if b.type == "text"),
        "calls": [(b.id, b.name, b.input) for b in blocks if b.type == "tool_use"],
        "thinking": [(b.thinking, b.signature) for b in blocks if b.type == "thinking"],
        "redacted": [b.data for b in blocks if b.type == "redacted_thinking"],
        "stop_reason": message.stop_reason,
        "stop_sequence": message.stop_sequence,
        "input": message.usage.input_tokens
        + (message.usage.cache_creation_input_tokens or 0)
        + (message.usage.cache_read_input_tokens or 0),
        "output": message.usage.output_tokens,
        "cache_read": message.usage.cache_read_input_tokens,
        "cache_creation": message.usage.cache_creation_input_tokens,
    }


def our_summary(response: ChatResponse) -> dict[str, Any]:
    [message] = response.messages
    contents = message.contents
    reasoning = [c for c in contents if c.type == "text_reasoning"]
    usage = response.usage_details
    assert usage is not None
    return {
        "id": response.response_id,
        "model": response.model,
        "text": response.text,
        "calls": [
            (c.call_id, c.name, c.parse_arguments())
            for c in contents
            if c.type == "function_call"
        ],
        "thinking": [
            (c.text or "", c.protected_data)
            for c in reasoning
            if c.additional_properties.get("anthropic_type") == "thinking"
        ],
        "redacted": [
            c.protected_data
            for c in reasoning
            if c.additional_properties.get("anthropic_type") == "redacted_thinking"
        ],
        "stop_reason": response.additional_properties.get("stop_reason"),
        "stop_sequence": response.additional_properties.get("stop_sequence"),
        "input": usage.input_token_count,
        "output": usage.output_token_count,
        "cache_read": usage.cache_read_input_token_count,
        "cache_creation": usage.cache_creation_input_token_count,
    }


_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


@pytest.mark.parametrize("name", COMPLETE)
async def test_recorded_answers_parse_the_same_as_the_sdk(
    name: str, stream: bool
) -> None:
    """AN-13 .. AN-16, PV-9: each recorded stream (and its merged whole message) parsed
    by the SDK and by AnthropicChatClient gives the same text, tool calls, thinking,
    stop reason and usage."""
    data = transcript(name)
    async with FakeAnthropic() as server:
        server.add(replay(data), replay(data))
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            if stream:
                result = client.get_response([Message("user", ["Hi"])], stream=True)
                async for _ in result:
                    pass
                ours = await result.get_final_response()
            else:
                ours = await client.get_response([Message("user", ["Hi"])])
        async with sdk_client(server) as sdk:
            request = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "messages": [{"role": "user", "content": "Hi"}],
            }
            if stream:
                async with sdk.messages.stream(**request) as events:
                    theirs = await events.get_final_message()
            else:
                theirs = await sdk.messages.create(**request)
    expected = sdk_summary(theirs)
    assert our_summary(ours) == expected
    assert ours.finish_reason == _FINISH[expected["stop_reason"]]


async def test_error_event_is_an_error_for_both() -> None:
    """AN-17: the mid-stream error event is an error for the SDK and for us, after the
    same text."""
    data = transcript("error_midstream.sse")
    async with FakeAnthropic() as server:
        server.add(replay(data), replay(data))
        texts: list[str] = []
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            with pytest.raises(Exception, match="Overloaded") as ours:
                await _collect(client, texts)
        sdk_texts: list[str] = []
        async with sdk_client(server) as sdk:
            with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
                await _sdk_collect(sdk, sdk_texts)
        # the SDK closes its abandoned byte iterator in a finaliser task
        for _ in range(20):
            await asyncio.sleep(0.005)
    assert "".join(texts) == "".join(sdk_texts) == "Partial answer"
    assert type(ours.value).__name__ == "AnthropicStreamError"


async def _collect(client: Any, texts: list[str]) -> None:
    async for update in client.get_response([Message("user", ["Hi"])], stream=True):
        texts.append(update.text)


async def _sdk_collect(sdk: anthropic.AsyncAnthropic, texts: list[str]) -> None:
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    async with sdk.messages.stream(**request) as events:
        async for text in events.text_stream:
            texts.append(text)


def test_merged_fixture_matches_the_sdk_accumulator() -> None:
    """AN-16: the fake server's merged whole messages agree with the SDK's own
    accumulation."""
    from anthropic.lib.streaming._messages import accumulate_event

    from ._fake_server import sse_payloads

    for name in COMPLETE:
        snapshot = None
        json_bufs: dict[int, bytes] = {}
        for payload in sse_payloads(transcript(name)):
            if payload["type"] in ("ping", "message_stop"):
                continue
            snapshot = accumulate_event(
                event=payload, current_snapshot=snapshot, json_bufs=json_bufs
            )
        assert snapshot is not None
        merged = merge_events(transcript(name))
        sdk_view = json.loads(snapshot.to_json())
        for key in ("id", "model", "stop_reason", "stop_sequence"):
            assert merged[key] == sdk_view[key], (name, key)
        assert [b["type"] for b in merged["content"]] == [
            b["type"] for b in sdk_view["content"]
        ], name


# --------------------------------------------------------------------------------------------
# Structured output: the schema subset (AN-24)

_LEAF_TYPES = ("string", "integer", "number", "boolean", "null")
_EXTRAS: dict[str, Any] = {
    "minimum": 1,
    "maximum": 9.5,
    "pattern": "^a+$",
    "minLength": 2,
    "format": "date",
    "description": "a thing",
    "title": "T",
    "examples": ["x"],
}


def _schemas() -> Any:
    from hypothesis import strategies as st

    extras = st.dictionaries(
        st.sampled_from(sorted(_EXTRAS)), st.just(None), max_size=3
    ).map(lambda keys: {k: _EXTRAS[k] for k in keys})
    formats = st.sampled_from(["date-time", "email", "regex", "uuid"])
    leaves = st.one_of(
        st.builds(lambda t, e: {"type": t, **e}, st.sampled_from(_LEAF_TYPES), extras),
        st.builds(lambda f: {"type": "string", "format": f}, formats),
        st.builds(
            lambda v: {"type": "string", "enum": v},
            st.lists(st.text(max_size=3), min_size=1, max_size=3),
        ),
        st.builds(lambda v: {"const": v}, st.integers() | st.text(max_size=3)),
    )

    def containers(children: Any) -> Any:
        props = st.dictionaries(
            st.from_regex(r"[a-z]{1,5}", fullmatch=True), children, max_size=3
        )
        return st.one_of(
            st.builds(
                lambda p, extra: {
                    "type": "object",
                    "properties": p,
                    "required": sorted(p),
                    **extra,
                },
                props,
                st.sampled_from(
                    [{}, {"additionalProperties": True}, {"description": "obj"}]
                ),
            ),
            st.builds(
                lambda i, n: {
                    "type": "array",
                    "items": i,
                    **({} if n is None else {"minItems": n}),
                },
                children,
                st.sampled_from([None, 0, 1, 2]),
            ),
            st.builds(
                lambda alts: {"anyOf": alts}, st.lists(children, min_size=1, max_size=3)
            ),
            st.builds(
                lambda alts: {"oneOf": alts}, st.lists(children, min_size=1, max_size=2)
            ),
        )

    return st.recursive(leaves, containers, max_leaves=8)


def test_output_schema_matches_the_sdk_transform() -> None:
    """AN-24: output_schema rewrites every schema exactly as the SDK's transform_schema
    does."""
    import copy

    from anthropic.lib._parse._transform import transform_schema
    from hypothesis import given, settings
    from minagent_anthropic._request import output_schema

    @settings(max_examples=300, deadline=None)
    @given(_schemas())
    def check(schema: dict[str, Any]) -> None:
        original = copy.deepcopy(schema)
        assert output_schema(schema) == transform_schema(copy.deepcopy(schema))
        assert schema == original  # never changed
        with_defs = {"$defs": {"X": schema}, "$ref": "#/$defs/X"}
        assert output_schema(with_defs) == transform_schema(copy.deepcopy(with_defs))

    check()


class _Positive:
    ge = 1
    description = "at least one"


@dataclasses.dataclass
class _Order:
    qty: Annotated[int, _Positive()]
    note: str = ""


def test_output_schema_of_derived_formats_and_the_body() -> None:
    """AN-24, AN-23: strict schemas derived from classes are sent in the SDK's
    subset."""
    from anthropic.lib._parse._transform import transform_schema
    from minagent_anthropic import build_request

    from minagent import ResponseFormat

    schema = ResponseFormat.of(_Order).schema
    assert schema is not None
    sent = build_request(
        [Message("user", ["x"])], {"response_format": _Order}, model="m", stream=False
    )
    assert sent["output_config"]["format"] == {
        "type": "json_schema",
        "schema": transform_schema(schema),
    }
    assert sent["output_config"]["format"]["schema"]["properties"]["qty"] == {
        "type": "integer",
        "description": "at least one\n\n{minimum: 1}",
    }
    with pytest.raises(ValueError, match="has no 'type'"):
        build_request(
            [Message("user", ["x"])],
            {"response_format": {"properties": {}}},
            model="m",
            stream=False,
        )
