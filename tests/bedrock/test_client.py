"""The Bedrock client end to end on the loopback server: Agent.run in both modes,
structured output, the error table, cut streams, exception events, redaction, the
entry point (BR-7, BR-9 .. BR-11, BR-18 .. BR-21, PV-15, PV-23, PV-24, PV-29)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from minagent_bedrock import BedrockChatClient, BedrockProtocolError, BedrockStreamError

from minagent import Agent, FunctionInvocationConfiguration, Message, get_client, tool
from minagent.providers import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from minagent.testing import ScriptedCall

from ._fake_server import (
    MODEL,
    SECRET_KEY,
    FakeBedrock,
    event,
    exception,
    stream_of,
    stream_response,
    whole_output,
)
from .test_sdk_parity import botocore_accepts


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return


async def run_agent(agent: Agent, prompt: str, *, stream: bool, **kw: Any) -> Any:
    if stream:
        run = agent.run(prompt, stream=True, **kw)
        async for _ in run:
            pass
        return await run.get_final_response()
    return await agent.run(prompt, **kw)


async def ask(client: BedrockChatClient, *, stream: bool) -> Any:
    if stream:
        return await client.get_response(
            [Message("user", ["Hi"])], stream=True
        ).get_final_response()
    return await client.get_response([Message("user", ["Hi"])])


async def collect(client: BedrockChatClient, texts: list[str]) -> None:
    """Stream an answer, keeping each update's text as it arrives."""
    async for update in client.get_response([Message("user", ["Go."])], stream=True):
        texts.append(update.text)


async def test_agent_run_with_a_tool_round(stream: bool) -> None:
    """BR-3, BR-4, BR-6, BR-9, BR-18: Agent.run calls the tool the model asked for
    (two calls in parallel) and sends the results back as toolResult blocks; every
    request is signed and botocore accepts the signature."""
    seen: list[str] = []

    @tool
    def get_weather(location: str) -> str:
        """Current weather for a city."""
        seen.append(location)
        return f"Sunny in {location}"

    async with FakeBedrock() as server:
        server.script_parallel_tool_calls(
            [
                ScriptedCall("get_weather", {"location": "Paris"}, "tooluse_1"),
                ScriptedCall("get_weather", {"location": "Oslo"}, "tooluse_2"),
            ]
        )
        server.script_text("Sunny in Paris and Oslo.")
        async with server.make_client() as client:
            agent = Agent(client, "You report the weather.", tools=[get_weather])
            result = await run_agent(agent, "Weather?", stream=stream)
        assert result.text == "Sunny in Paris and Oslo."
        assert sorted(seen) == ["Oslo", "Paris"]
        first, second = server.requests()
        assert first["system"] == [{"text": "You report the weather."}]
        assert first["toolConfig"]["tools"][0]["toolSpec"]["name"] == "get_weather"
        assert second["messages"][-1] == {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tooluse_1",
                        "content": [{"text": "Sunny in Paris"}],
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "tooluse_2",
                        "content": [{"text": "Sunny in Oslo"}],
                    }
                },
            ],
        }
        assert [
            b["toolUse"]["toolUseId"] for b in second["messages"][1]["content"]
        ] == [
            "tooluse_1",
            "tooluse_2",
        ]
        suffix = "/converse-stream" if stream else "/converse"
        assert all(p.endswith(suffix) for p in server.paths)
        assert botocore_accepts(server, 0)
        assert botocore_accepts(server, 1)


async def test_the_loops_last_call_keeps_tools_without_a_choice() -> None:
    """BR-6, LP-7: at max_iterations the loop's last call (tool_choice "none") still
    declares the tools, as Converse needs with tool blocks in the history, but sends no
    toolChoice; the call the model makes anyway is not run."""
    seen: list[str] = []

    @tool
    def get_weather(location: str) -> str:
        """Current weather for a city."""
        seen.append(location)
        return "Sunny"

    async with FakeBedrock() as server:
        server.script_tool_call("get_weather", {"location": "Paris"}, "tooluse_1")
        server.script_tool_call("get_weather", {"location": "Rome"}, "tooluse_2")
        async with server.make_client(
            function_invocation_configuration=FunctionInvocationConfiguration(
                max_iterations=1
            )
        ) as client:
            await Agent(client, tools=[get_weather]).run("Weather?")
        first, last = server.requests()
        assert first["toolConfig"]["tools"] == last["toolConfig"]["tools"]
        assert "toolChoice" not in last["toolConfig"]
        assert [t["toolSpec"]["name"] for t in last["toolConfig"]["tools"]] == [
            "get_weather"
        ]
        assert seen == ["Paris"]


@dataclass
class City:
    name: str
    population: int


async def test_structured_output(stream: bool) -> None:
    """BR-7: a dataclass response_format is sent as outputConfig.textFormat with the
    schema as a JSON string; the answer's text is parsed to the dataclass."""
    async with FakeBedrock() as server:
        server.script_text('{"name": "Oslo", "population": 717710}')
        async with server.make_client() as client:
            result = await run_agent(
                Agent(client),
                "Which city?",
                stream=stream,
                options={"response_format": City},
            )
        assert result.value == City("Oslo", 717710)
        text_format = server.requests()[0]["outputConfig"]["textFormat"]
        assert text_format["type"] == "json_schema"
        schema = json.loads(text_format["structure"]["jsonSchema"]["schema"])
        assert schema["properties"]["population"]["type"] == "integer"


ERROR_TABLE = [
    (400, "ValidationException", BadRequestError, False),
    (401, "UnrecognizedClientException", AuthenticationError, False),
    (403, "AccessDeniedException", AuthenticationError, False),
    (404, "ResourceNotFoundException", NotFoundError, False),
    (429, "ThrottlingException", RateLimitError, True),
    (500, "InternalServerException", ServerError, True),
    (503, "ServiceUnavailableException", ServerError, True),
]


@pytest.mark.parametrize(("status", "kind", "cls", "retryable"), ERROR_TABLE)
async def test_error_table(
    stream: bool, status: int, kind: str, cls: type[ProviderError], retryable: bool
) -> None:
    """BR-20, PV-23: each status with Bedrock's error body (x-amzn-ErrorType and a
    message) is its typed error, the AWS type leading the message, the request id
    from x-amzn-RequestId."""
    async with FakeBedrock() as server:
        server.script_error(status, f"bedrock says no ({status})")
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(ProviderError) as info:
                await ask(client, stream=stream)
    error = info.value
    assert type(error) is cls
    assert error.status == status
    assert error.provider_message.startswith(f"{kind}: bedrock says no ({status})")
    if status == 401:
        # not the key-only hint of the shared client: the request was signed
        assert "no API key" not in str(error)
        assert "signed with AWS credentials from arguments" in str(error)
    assert error.request_id == "req-error-body"
    assert error.retryable is retryable
    if status == 404:
        assert "model id" in str(error)


async def test_error_type_from_the_body() -> None:
    """BR-20: without x-amzn-ErrorType, the body's __type (after its #) names the
    error; a plain-text body is its own message."""

    async def typed(server: Any, request: web.Request, body: Any) -> web.Response:
        return web.json_response(
            {"__type": "com.amazon.coral#ValidationException", "Message": "bad"},
            status=400,
        )

    async def plain(server: Any, request: web.Request, body: Any) -> web.Response:
        return web.Response(status=400, text="not json at all")

    async with FakeBedrock() as server:
        server.add(typed, plain)
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(BadRequestError) as first:
                await client.get_response([Message("user", ["Hi"])])
            with pytest.raises(BadRequestError) as second:
                await client.get_response([Message("user", ["Hi"])])
    assert first.value.provider_message == "ValidationException: bad"
    assert second.value.provider_message == "not json at all"


def answer_stream(data: bytes, cuts: tuple[int, ...] = ()) -> Any:
    async def handler(server: Any, request: web.Request, body: Any) -> Any:
        return await stream_response(request, data, cuts)

    return handler


async def test_a_cut_stream_is_interrupted_after_its_text() -> None:
    """BR-19, PV-15, PV-29: a stream that ends inside a message, or before messageStop,
    is a StreamInterruptedError; the text before it was delivered; nothing is
    retried."""
    whole = stream_of(whole_output([{"text": "one two three"}], "end_turn", None))
    inside = whole[: len(whole) - 40]
    before_stop = b"".join(
        [
            event("messageStart", {"role": "assistant"}),
            event(
                "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "one "}}
            ),
        ]
    )
    for data, why in ((inside, "inside an event"), (before_stop, "before messageStop")):
        async with FakeBedrock() as server:
            server.add(answer_stream(data, cuts=(30,)))
            async with server.make_client() as client:
                texts: list[str] = []
                with pytest.raises(StreamInterruptedError, match=why):
                    await collect(client, texts)
            assert "".join(texts).startswith("one ")
            assert len(server.requests()) == 1


async def test_an_end_after_message_stop_is_complete() -> None:
    """BR-19: a stream that ends after messageStop without metadata is a complete
    answer: its text and finish reason, no usage."""
    data = b"".join(
        [
            event("messageStart", {"role": "assistant"}),
            event(
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"text": "Done."}},
            ),
            event("messageStop", {"stopReason": "max_tokens"}),
        ]
    )
    async with FakeBedrock() as server:
        server.add(answer_stream(data))
        async with server.make_client() as client:
            final = await client.get_response(
                [Message("user", ["Go."])], stream=True
            ).get_final_response()
    assert final.text == "Done."
    assert final.finish_reason == "length"
    assert final.usage_details is None


async def test_a_message_over_max_line_size_is_a_protocol_error() -> None:
    """BR-19, PV-36: an event-stream message larger than max_line_size is a
    BedrockProtocolError naming the bound, not an interruption."""
    big = stream_of(whole_output([{"text": "x" * 500}], "end_turn", None))
    async with FakeBedrock() as server:
        server.add(answer_stream(big))
        async with server.make_client(max_line_size=300) as client:
            with pytest.raises(BedrockProtocolError, match="max_line_size=300"):
                await collect(client, [])


async def test_an_exception_event_mid_stream() -> None:
    """BR-18, PV-14: an exception event after some text raises BedrockStreamError
    (its type and message, the request id) once the text before it is yielded."""
    data = b"".join(
        [
            event("messageStart", {"role": "assistant"}),
            event(
                "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hal"}}
            ),
            exception("modelStreamErrorException", "the model stopped"),
        ]
    )

    async def handler(server: Any, request: web.Request, body: Any) -> Any:
        return await stream_response(
            request, data, headers={"x-amzn-RequestId": "r-77"}
        )

    async with FakeBedrock() as server:
        server.add(handler)
        async with server.make_client() as client:
            texts: list[str] = []
            with pytest.raises(BedrockStreamError) as info:
                await collect(client, texts)
    assert "".join(texts) == "Hal"
    assert info.value.exception_type == "modelStreamErrorException"
    assert "the model stopped" in str(info.value)
    assert info.value.request_id == "r-77"
    assert info.value.status is None


async def test_secret_key_token_and_signature_are_redacted() -> None:
    """PV-24, BR-21: an error body echoing the secret key, the session token and the
    request's signature shows none of them."""
    echoed: list[str] = []

    async def echo(server: Any, request: web.Request, body: Any) -> web.Response:
        signature = request.headers["Authorization"].rpartition("Signature=")[2]
        echoed.append(signature)
        text = f"denied: {SECRET_KEY} {signature} sess-tok-SECRET"
        return web.json_response({"message": text}, status=403)

    async with FakeBedrock() as server:
        server.add(echo)
        async with server.make_client(
            max_retries=0, aws_session_token="sess-tok-SECRET"
        ) as client:
            assert SECRET_KEY not in repr(client)
            with pytest.raises(AuthenticationError) as info:
                await client.get_response([Message("user", ["Hi"])])
    texts = [str(info.value), repr(info.value), info.value.provider_message]
    for secret in (SECRET_KEY, echoed[0], "sess-tok-SECRET"):
        assert not any(secret in t for t in texts), secret
    assert "denied:" in str(info.value)


async def test_retry_is_signed_again() -> None:
    """BR-13, PV-25: a throttled attempt is retried with a new signature over the same
    body; botocore accepts both."""
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with FakeBedrock() as server:
        server.script_error(429, "slow down", {"retry-after": "2"})
        server.script_text("ok")
        async with server.make_client(sleep=sleep) as client:
            result = await client.get_response([Message("user", ["Hi"])])
        assert result.text == "ok"
        assert sleeps == [2.0]
        assert botocore_accepts(server, 0)
        assert botocore_accepts(server, 1)
        assert server.raw_bodies[0] == server.raw_bodies[1]


async def test_bearer_key_requests_are_not_signed() -> None:
    """BR-12: with api_key the request carries Authorization: Bearer and no X-Amz-Date."""
    async with FakeBedrock() as server:
        server.script_text("hi")
        async with server.make_client(api_key="bedrock-key-123") as client:
            await client.get_response([Message("user", ["Hi"])])
        headers = {k.lower(): v for k, v in server.headers[0].items()}
        assert headers["authorization"] == "Bearer bedrock-key-123"
        assert "x-amz-date" not in headers


def test_get_client_builds_a_bedrock_client() -> None:
    """BR-15, PV-22: get_client('bedrock') builds a BedrockChatClient from the entry
    point."""
    client = get_client(
        "bedrock",
        model=MODEL,
        region="ap-northeast-1",
        aws_access_key_id="AKID",
        aws_secret_access_key="secret",
    )
    assert isinstance(client, BedrockChatClient)
    assert client.base_url.startswith(
        "https://bedrock-runtime.ap-northeast-1.amazonaws.com/"
    )
