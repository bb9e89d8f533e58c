"""Wire parity with boto3's ``bedrock-runtime`` client on the same loopback server
(BR-1 .. BR-7, BR-13, BR-16 .. BR-18, BR-21).

boto3 (a test-only dependency, pinned in requirements-test.txt) is pointed at the fake
server with ``endpoint_url`` and fake credentials; it is synchronous, so it runs in a
thread while the server answers on the loop. The fake server checks every request's
SigV4 signature with botocore's own signer, so "the fake accepts it" means botocore
agrees with the signature our plugin put on the wire.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Iterator
from typing import Any
from unittest import mock

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials as BotoCredentials

from minagent import Content, FunctionInvocationConfiguration, Message, tool

from ._fake_server import (
    ACCESS_KEY,
    MODEL,
    REGION,
    SECRET_KEY,
    FakeBedrock,
    stream_of,
    whole_output,
)


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    return


def botocore_accepts(server: FakeBedrock, index: int) -> bool:
    """Recompute request ``index``'s signature with botocore's SigV4Auth over the
    headers it names as signed, at its own X-Amz-Date."""
    headers = {k.lower(): v for k, v in server.headers[index].items()}
    authorization = headers["authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    request = AWSRequest(
        method="POST",
        url=f"{server.root}{server.targets[index]}",
        headers={name: headers[name] for name in signed if name != "x-amz-date"},
        data=server.raw_bodies[index],
    )
    when = datetime.datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ")
    credentials = BotoCredentials(
        ACCESS_KEY, SECRET_KEY, headers.get("x-amz-security-token")
    )
    with mock.patch("botocore.auth.get_current_datetime", return_value=when):
        SigV4Auth(credentials, "bedrock", REGION).add_auth(request)
    return bool(request.headers["Authorization"] == authorization)


def boto_client(server: FakeBedrock) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.root,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"max_attempts": 1}),
    )


@tool
def get_weather(location: str, unit: str = "celsius") -> str:
    """Current weather for a city."""
    return f"Sunny in {location}"


# the tool record's parameters (TL-13), written out
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "unit": {"type": "string", "default": "celsius"},
    },
    "required": ["location"],
    "additionalProperties": False,
}

CONVERSATION = [
    Message("system", ["Be brief."]),
    Message("user", ["Weather in Paris and Oslo?"]),
    Message(
        "assistant",
        [
            Content.from_text("Checking."),
            Content.from_function_call("tool_a", "get_weather", {"location": "Paris"}),
            Content.from_function_call("tool_b", "get_weather", '{"location": "Oslo"}'),
        ],
    ),
    Message(
        "tool",
        [
            Content.from_function_result("tool_a", "Sunny in Paris"),
            Content.from_function_result("tool_b", {"temp": 3, "sky": "snow"}),
        ],
    ),
]
OPTIONS: dict[str, Any] = {
    "tools": [get_weather],
    "tool_choice": "required",
    "max_tokens": 256,
    "temperature": 0.5,
    "top_p": 0.9,
    "stop": ["END"],
}
# the same conversation, written as boto3's converse() arguments
BOTO_ARGS: dict[str, Any] = {
    "system": [{"text": "Be brief."}],
    "messages": [
        {"role": "user", "content": [{"text": "Weather in Paris and Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "Checking."},
                {
                    "toolUse": {
                        "toolUseId": "tool_a",
                        "name": "get_weather",
                        "input": {"location": "Paris"},
                    }
                },
                {
                    "toolUse": {
                        "toolUseId": "tool_b",
                        "name": "get_weather",
                        "input": {"location": "Oslo"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tool_a",
                        "content": [{"text": "Sunny in Paris"}],
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "tool_b",
                        "content": [{"json": {"temp": 3, "sky": "snow"}}],
                    }
                },
            ],
        },
    ],
    "inferenceConfig": {
        "maxTokens": 256,
        "temperature": 0.5,
        "topP": 0.9,
        "stopSequences": ["END"],
    },
    "toolConfig": {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "inputSchema": {"json": WEATHER_SCHEMA},
                }
            }
        ],
        "toolChoice": {"any": {}},
    },
}


async def answer_twice(server: FakeBedrock) -> None:
    server.script_text("Sunny in both.")
    server.script_text("Sunny in both.")


async def test_request_parity_field_by_field(stream: bool) -> None:
    """BR-1 .. BR-6, BR-21: boto3's converse / converse_stream and our client send the
    same path and the same JSON body, field by field, for the same conversation; the
    fake accepts both signatures (botocore recomputes ours)."""
    async with FakeBedrock() as server:
        await answer_twice(server)
        boto = boto_client(server)
        call = boto.converse_stream if stream else boto.converse
        result = await asyncio.to_thread(call, modelId=MODEL, **BOTO_ARGS)
        if stream:
            await asyncio.to_thread(lambda: list(result["stream"]))
        async with server.make_client() as client:
            if stream:
                await client.get_response(
                    CONVERSATION, stream=True, options=OPTIONS
                ).get_final_response()
            else:
                await client.get_response(CONVERSATION, options=OPTIONS)
        theirs, ours = server.requests()
        assert sorted(ours) == sorted(theirs)
        for key in theirs:
            assert ours[key] == theirs[key], key
        assert server.paths[0] == server.paths[1]
        # BR-1: the same path; ":" of the model id as it is where botocore sends %3A
        assert server.targets[1] == server.targets[0].replace("%3A", ":")
        assert server.targets[1].endswith("-stream" if stream else "/converse")
        assert botocore_accepts(server, 1)
        assert botocore_accepts(server, 0)
        assert server.headers[1]["Authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/"
        )


async def test_structured_output_parity() -> None:
    """BR-7: a schema response_format is outputConfig.textFormat as boto3 sends it
    (the schema a JSON string)."""
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    async with FakeBedrock() as server:
        await answer_twice(server)
        boto = boto_client(server)
        await asyncio.to_thread(
            boto.converse,
            modelId=MODEL,
            messages=[{"role": "user", "content": [{"text": "City?"}]}],
            outputConfig={
                "textFormat": {
                    "type": "json_schema",
                    "structure": {
                        "jsonSchema": {
                            "schema": json.dumps(schema, separators=(",", ":")),
                            "name": "City",
                        }
                    },
                }
            },
        )
        async with server.make_client() as client:
            await client.get_response(
                [Message("user", ["City?"])],
                options={
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {"name": "City", "schema": schema},
                    }
                },
            )
        theirs, ours = server.requests()
        assert ours == theirs


async def test_boto3_reads_our_fake_stream_as_our_decoder_does() -> None:
    """BR-16, BR-18: the event stream the fake sends is read by botocore and by our
    client to the same text, tool call, stop reason and usage."""
    output = whole_output(
        [
            {"text": "Let me look."},
            {
                "toolUse": {
                    "toolUseId": "t9",
                    "name": "get_weather",
                    "input": {"location": "Rome"},
                }
            },
        ],
        "tool_use",
        None,
    )
    output["usage"] = {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14}
    data = stream_of(output)

    async def handler(server: Any, request: Any, body: Any) -> Any:
        from ._fake_server import stream_response

        return await stream_response(request, data, cuts=[7, 50, 51, 200])

    async with FakeBedrock() as server:
        server.add(handler, handler)
        boto = boto_client(server)
        answer = await asyncio.to_thread(
            boto.converse_stream,
            modelId=MODEL,
            messages=[{"role": "user", "content": [{"text": "Rome?"}]}],
        )
        events = await asyncio.to_thread(lambda: list(answer["stream"]))
        # the answer itself, not the tool loop's next round
        loop_off = FunctionInvocationConfiguration(enabled=False)
        async with server.make_client(
            function_invocation_configuration=loop_off
        ) as client:
            final = await client.get_response(
                [Message("user", ["Rome?"])], stream=True
            ).get_final_response()
    boto_text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "")
        for e in events
        if "contentBlockDelta" in e
    )
    boto_input = "".join(
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in events
        if "contentBlockDelta" in e and "toolUse" in e["contentBlockDelta"]["delta"]
    )
    boto_stop = next(
        e["messageStop"]["stopReason"] for e in events if "messageStop" in e
    )
    boto_usage = next(e["metadata"]["usage"] for e in events if "metadata" in e)
    calls = [c for m in final.messages for c in m.contents if c.type == "function_call"]
    assert final.text == boto_text == "Let me look."
    assert [c.call_id for c in calls] == ["t9"]
    assert (
        json.loads(str(calls[0].arguments))
        == json.loads(boto_input)
        == {"location": "Rome"}
    )
    assert final.additional_properties["stop_reason"] == boto_stop == "tool_use"
    assert final.usage_details is not None
    assert final.usage_details.total_token_count == boto_usage["totalTokens"] == 14


async def test_session_token_is_sent_and_signed() -> None:
    """BR-12, BR-13: with a session token both clients send X-Amz-Security-Token and
    sign it; botocore accepts our signature."""
    async with FakeBedrock() as server:
        await answer_twice(server)
        boto = boto3.client(
            "bedrock-runtime",
            endpoint_url=server.root,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            aws_session_token="session-tok",
        )
        await asyncio.to_thread(
            boto.converse,
            modelId=MODEL,
            messages=[{"role": "user", "content": [{"text": "Hi"}]}],
        )
        async with server.make_client(aws_session_token="session-tok") as client:
            await client.get_response([Message("user", ["Hi"])])
        for index in (0, 1):
            headers = {k.lower(): v for k, v in server.headers[index].items()}
            assert headers["x-amz-security-token"] == "session-tok"
            assert "x-amz-security-token" in headers["authorization"]
        assert botocore_accepts(server, 1)
