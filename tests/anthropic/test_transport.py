"""`AnthropicChatClient` over a loopback Messages server: headers, retries, streams,
secrets, discovery."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_anthropic import (
    AnthropicChatClient,
    AnthropicProtocolError,
    AnthropicStreamError,
)

from minagent import (
    Agent,
    AuthenticationError,
    ChatResponse,
    Content,
    FunctionInvocationConfiguration,
    Message,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    get_client,
    tool,
)
from tests._support.modes import get_response

from ._fake_server import (
    COMPLETE,
    FakeAnthropic,
    disconnect_after,
    error_response,
    event,
    raw,
    replay,
    stream_of,
    transcript,
    whole_message,
)

KEY = "sk-ant-api03-TOPSECRET-key-value"
NO_TOOLS = FunctionInvocationConfiguration(enabled=False)


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


async def ask(client: AnthropicChatClient, *, stream: bool, **kw: Any) -> ChatResponse:
    messages = kw.pop("messages", [Message("user", ["Hi"])])
    response: ChatResponse = await get_response(client, messages, stream=stream, **kw)
    return response


async def collect(client: AnthropicChatClient, texts: list[str]) -> None:
    """Stream an answer, appending each update's text as it arrives."""
    async for update in client.get_response([Message("user", ["Hi"])], stream=True):
        texts.append(update.text)


def error_step(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
    async def handler(
        server: FakeAnthropic, request: web.Request, _: dict[str, Any]
    ) -> web.StreamResponse:
        return error_response(status, message, headers=headers)

    return handler


# -- AN-19 ---------------------------------------------------------------------------------------


async def test_request_url_headers_and_body(stream: bool) -> None:
    """AN-19, AN-1: POST /v1/messages with x-api-key, anthropic-version and the codec's
    body."""
    async with FakeAnthropic() as server:
        server.script_text("Hello!")
        async with server.make_client(
            api_key=KEY, default_headers={"anthropic-beta": "b1"}
        ) as client:
            response = await ask(
                client, stream=stream, options={"model": "claude-opus-4-1"}
            )
        headers = {k.lower(): v for k, v in server.headers[0].items()}
        [body] = server.requests()
    assert response.text == "Hello!"
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2026-10-21"
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == ("text/event-stream" if stream else "application/json")
    assert headers["user-agent"] == "minagent-anthropic"
    assert headers["anthropic-beta"] == "b1"
    assert "authorization" not in headers
    assert body["model"] == "claude-opus-4-1"
    assert body["max_tokens"] == 4096
    assert body.get("stream", False) is stream


async def test_older_api_version_allows_sampling_options() -> None:
    """AN-19, AN-12: anthropic_version='2023-06-01' is sent as the header and lets
    temperature through; with the default version the option is refused before anything
    is sent."""
    async with FakeAnthropic() as server:
        server.script_text("ok")
        async with server.make_client(anthropic_version="2023-06-01") as client:
            await client.get_response(
                [Message("user", ["Hi"])], options={"temperature": 0.1}
            )
        async with server.make_client() as client:
            with pytest.raises(ValueError, match="temperature"):
                await client.get_response(
                    [Message("user", ["Hi"])], options={"temperature": 0.1}
                )
        assert len(server.requests()) == 1
        assert server.requests()[0]["temperature"] == 0.1
        assert server.headers[0]["anthropic-version"] == "2023-06-01"


async def test_environment_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """AN-19: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL are the defaults; max_tokens per
    client."""
    async with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url + "/")
        server.script_text("env")
        async with AnthropicChatClient("claude-haiku-4-5", max_tokens=64) as client:
            assert client.base_url == server.base_url
            response = await client.get_response([Message("user", ["Hi"])])
        assert response.text == "env"
        assert server.headers[0]["x-api-key"] == KEY
        assert server.requests()[0]["max_tokens"] == 64
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert AnthropicChatClient("m").base_url == "https://api.anthropic.com"


async def test_no_key_sends_no_header_and_a_401_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AN-19: without a key no x-api-key is sent; a 401 names the missing key."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    async with FakeAnthropic() as server:
        server.add(error_step(401, "x-api-key header is required"))
        async with server.make_client(api_key="", max_retries=0) as client:
            with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
                await client.get_response([Message("user", ["Hi"])])
        assert "x-api-key" not in {k.lower() for k in server.headers[0]}


def test_constructor_validation_and_repr() -> None:
    """AN-19: a non-http URL, a bad timeout or max_tokens are ValueErrors; repr hides
    the key."""
    with pytest.raises(ValueError, match="http"):
        AnthropicChatClient("m", base_url="ftp://x")
    with pytest.raises(ValueError, match="timeout"):
        AnthropicChatClient("m", timeout=0)
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicChatClient("m", max_tokens=0)
    client = AnthropicChatClient("claude-x", api_key=KEY, base_url="http://127.0.0.1:1")
    assert (
        repr(client)
        == "AnthropicChatClient(model='claude-x', base_url='http://127.0.0.1:1', api_key='***')"
    )


# -- AN-20: retries -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type"), [(429, "rate_limit_error"), (529, "overloaded_error")]
)
async def test_429_and_529_are_retried_after_retry_after(
    stream: bool, status: int, error_type: str
) -> None:
    """AN-20, PV-25, PV-27: 429 and 529 are retried after the server's retry-after."""
    sleep = Sleeps()
    async with FakeAnthropic() as server:
        server.add(error_step(status, "wait", {"retry-after": "3"}))
        server.add(error_step(status, "wait more", {"retry-after-ms": "250"}))
        server.script_text("Finally.")
        async with server.make_client(max_retries=2, sleep=sleep) as client:
            response = await ask(client, stream=stream)
        assert response.text == "Finally."
        assert len(server.requests()) == 3
    assert sleep.calls == [3.0, 0.25]


async def test_overloaded_beyond_retries_is_a_server_error(stream: bool) -> None:
    """AN-20, PV-23: a 529 after the last retry is a ServerError with status and
    retry_after."""
    async with FakeAnthropic() as server:
        for _ in range(2):
            server.add(
                error_step(
                    529, "Overloaded", {"retry-after": "7", "request-id": "req_529"}
                )
            )
        async with server.make_client(max_retries=1, sleep=Sleeps()) as client:
            with pytest.raises(ServerError) as info:
                await ask(client, stream=stream)
    error = info.value
    assert error.status == 529
    assert error.retry_after == 7.0
    assert error.request_id == "req_529"
    assert error.provider_message == "Overloaded"
    assert "anthropic: HTTP 529" in str(error)


async def test_rate_limit_type_and_message() -> None:
    """AN-20, AN-18: a 429 is a RateLimitError carrying the provider's message and
    request id."""
    async with FakeAnthropic() as server:
        server.add(
            error_step(
                429, "Number of request tokens has exceeded your per-minute rate limit"
            )
        )
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(RateLimitError, match="per-minute rate limit") as info:
                await client.get_response([Message("user", ["Hi"])])
    assert info.value.request_id == "req_body_id"


async def test_no_retry_after_the_first_byte() -> None:
    """AN-20, PV-29: a stream dropped after its first byte is StreamInterruptedError,
    after the text that arrived was yielded; it is never retried."""
    data = transcript("text.sse")
    cut = data.index(b"event: content_block_stop")
    async with FakeAnthropic() as server:
        server.add(disconnect_after(data, cut))
        server.script_text("must not be used")
        async with server.make_client(max_retries=3, sleep=Sleeps()) as client:
            texts: list[str] = []
            with pytest.raises(StreamInterruptedError):
                await collect(client, texts)
        assert len(server.requests()) == 1
    assert "".join(texts) == "Hello! Grüße — ünïcödé 🌍 done."


async def test_a_stream_that_ends_before_its_first_byte_is_retried() -> None:
    """PV-29, AN-20: a 2xx stream closed before any byte is a connection failure,
    retried."""
    async with FakeAnthropic() as server:
        server.add(disconnect_after(b"", 0))
        server.script_text("second try")
        async with server.make_client(max_retries=1, sleep=Sleeps()) as client:
            response = await ask(client, stream=True)
        assert response.text == "second try"
        assert len(server.requests()) == 2


async def test_error_event_mid_stream_is_typed_and_keeps_what_was_streamed() -> None:
    """AN-17, AN-20, PV-14: an error event after text raises AnthropicStreamError once
    the text was yielded; it is not retried and carries the request id."""
    async with FakeAnthropic() as server:
        server.add(replay(transcript("error_midstream.sse"), request_id="req_mid"))
        server.script_text("must not be used")
        async with server.make_client(max_retries=3, sleep=Sleeps()) as client:
            texts: list[str] = []
            with pytest.raises(AnthropicStreamError) as info:
                await collect(client, texts)
        assert len(server.requests()) == 1
    assert "".join(texts) == "Partial answer"
    assert info.value.type == "overloaded_error"
    assert info.value.request_id == "req_mid"
    assert isinstance(info.value, ProviderError)


async def test_stream_without_message_stop_or_stop_reason_is_interrupted() -> None:
    """AN-20, PV-15: a body that ends early, cleanly, is not presented as a complete
    answer."""
    data = transcript("text.sse")
    truncated = data[: data.index(b"event: message_delta")]
    async with FakeAnthropic() as server:
        server.add(replay(truncated))
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(StreamInterruptedError, match="message_stop"):
                await ask(client, stream=True)


async def test_bodies_the_protocol_does_not_allow() -> None:
    """AN-20, PV-10: a 2xx body that is not JSON is an AnthropicProtocolError; a
    streaming request answered with a JSON body is decoded whole."""
    async with FakeAnthropic() as server:
        server.add(raw(200, "<html>oops</html>"))
        message = whole_message(
            "msg_j", "m", [{"type": "text", "text": "whole"}], "end_turn", None
        )
        server.add(raw(200, json.dumps(message)))
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(AnthropicProtocolError, match="not valid JSON"):
                await client.get_response([Message("user", ["Hi"])])
            response = await ask(client, stream=True)
    assert response.text == "whole"
    assert response.finish_reason == "stop"


# -- AN-8 end to end ---------------------------------------------------------------------------


async def test_tool_ids_are_normalised_on_the_wire_and_mapped_back(
    stream: bool,
) -> None:
    """AN-8, LP-26: a rejected id goes out normalised; an answer that refers to the wire
    id comes back with the caller's id; the caller's messages are untouched."""
    original = "call.7|abc"
    history = [
        Message("user", ["Weather?"]),
        Message(
            "assistant",
            [Content.from_function_call(original, "get_weather", '{"city": "Oslo"}')],
        ),
        Message("tool", [Content.from_function_result(original, "cold")]),
    ]

    async def echo_wire_id(
        server: FakeAnthropic, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        wire = body["messages"][1]["content"][0]["id"]
        block = {
            "type": "tool_use",
            "id": wire,
            "name": "get_weather",
            "input": {"city": "Oslo"},
        }
        message = whole_message("msg_echo", "m", [block], "tool_use", None)
        if body.get("stream"):
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(stream_of(message))
            await response.write_eof()
            return response
        return web.json_response(message)

    async with FakeAnthropic() as server:
        server.add(echo_wire_id)
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            response = await ask(client, stream=stream, messages=history)
        sent = server.requests()[0]["messages"]
    wire = sent[1]["content"][0]["id"]
    assert wire != original
    assert sent[2]["content"][0]["tool_use_id"] == wire
    [call] = response.messages[0].contents
    # mapped back to the caller's id, which the history already holds, so the loop makes
    # it unique (LP-26); unmapped it would be the wire id
    assert call.call_id == f"{original}~2"
    assert history[1].contents[0].call_id == original


# -- PV-24: the key never leaks ------------------------------------------------------------------


def _texts_of(error: BaseException) -> list[str]:
    seen: list[str] = []
    current: BaseException | None = error
    while current is not None:
        seen += [str(current), repr(current), *map(repr, current.args)]
        seen += [repr(v) for v in vars(current).values()]
        current = current.__cause__ or current.__context__
    return seen


async def test_the_key_is_in_no_error_and_no_log(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-24, AN-19: an echoed key, a retried failure and a refused connection never
    show the key in str, repr, args, attributes, the exception chain or a log record."""
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    async with FakeAnthropic() as server:
        server.add(error_step(529, f"overloaded for key {KEY}", {"x-echo": KEY}))
        server.add(error_step(401, f"invalid x-api-key: {KEY}"))
        async with server.make_client(
            api_key=KEY, max_retries=1, sleep=Sleeps()
        ) as client:
            with pytest.raises(AuthenticationError) as info:
                await ask(client, stream=stream)
            errors.append(info.value)
        server.add(disconnect_after(transcript("text.sse"), 200))
        async with server.make_client(api_key=KEY, max_retries=0) as client:
            with pytest.raises(StreamInterruptedError) as interrupted:
                await ask(client, stream=True)
            errors.append(interrupted.value)
    async with AnthropicChatClient(
        "m", api_key=KEY, base_url="http://127.0.0.1:9", max_retries=0
    ) as client:
        with pytest.raises(ProviderConnectionError) as refused:
            await ask(client, stream=stream)
        errors.append(refused.value)
    for error in errors:
        assert error.__cause__ is None
        texts = _texts_of(error)
        assert not [t for t in texts if KEY in t], texts
    logged = [r.getMessage() + repr(r.args) for r in caplog.records]
    assert any("retry" in m for m in logged)
    assert not [m for m in logged if KEY in m]


# -- AN-21: discovery, CLI, no aiohttp in the codec ----------------------------------------------


def test_entry_point_resolves_the_client() -> None:
    """AN-21, PV-22: get_client('anthropic') builds an AnthropicChatClient."""
    client = get_client(
        "anthropic",
        model="claude-sonnet-4-5",
        api_key="k",
        base_url="http://127.0.0.1:1",
    )
    assert isinstance(client, AnthropicChatClient)
    assert client.model == "claude-sonnet-4-5"


async def _run(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode or 0, out.decode(), err.decode()


async def test_codec_import_does_not_load_aiohttp() -> None:
    """AN-21, PV-1: importing the package and using the codec does not import
    aiohttp."""
    code = (
        "import sys, minagent_anthropic as m\n"
        "from minagent import Message\n"
        "m.build_request([Message('user', ['x'])], {}, model='m', stream=True)\n"
        "m.MessagesStreamDecoder().feed(b'')\n"
        "assert 'aiohttp' not in sys.modules, 'aiohttp was imported'\n"
        "print('ok')\n"
    )
    code_, out, err = await _run("-c", code, env=dict(os.environ))
    assert (code_, out.strip()) == (0, "ok"), err


async def test_cli_run_with_provider_anthropic() -> None:
    """AN-21: `python -m minagent run --provider anthropic` streams the answer from the
    server named by ANTHROPIC_BASE_URL, with the key from ANTHROPIC_API_KEY."""
    async with FakeAnthropic() as server:
        server.script_text("Bonjour from the fake Claude.")
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": KEY,
        }
        code, out, err = await _run(
            "-m",
            "minagent",
            "run",
            "Say hello",
            "--provider",
            "anthropic",
            "--model",
            "claude-haiku-4-5",
            env=env,
        )
        [body] = server.requests()
    assert code == 0, err
    assert out.strip() == "Bonjour from the fake Claude."
    assert body["model"] == "claude-haiku-4-5"
    assert body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "Say hello"}]
    assert server.headers[0]["x-api-key"] == KEY


# -- PV-12 over the network ----------------------------------------------------------------------


@settings(max_examples=25)
@given(data=st.data())
def test_random_network_chunking_gives_identical_responses(data: st.DataObject) -> None:
    """PV-12, AN-16: every transcript written by the server in random byte pieces gives
    the same updates and final response as the codec decoding it whole."""
    from minagent_anthropic import MessagesStreamDecoder

    name = data.draw(st.sampled_from(COMPLETE))
    body = transcript(name)
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=25))
    decoder = MessagesStreamDecoder()
    expected = decoder.feed(body) + decoder.close()

    async def go() -> tuple[list[Any], ChatResponse]:
        async with FakeAnthropic() as server:
            server.add(replay(body, cuts))
            async with server.make_client(
                function_invocation_configuration=NO_TOOLS
            ) as client:
                stream = client.get_response([Message("user", ["Hi"])], stream=True)
                updates = [u async for u in stream]
                return updates, await stream.get_final_response()

    updates, final = asyncio.run(go())
    assert [u.to_dict() for u in updates] == [u.to_dict() for u in expected]
    assert final.to_dict() == ChatResponse.from_updates(expected).to_dict()


# -- PV-35, PV-36, PV-37 --------------------------------------------------------------------------


async def test_an_answer_that_is_not_http_is_a_typed_scrubbed_error() -> None:
    """PV-35: bytes that are not HTTP become a retryable ProviderConnectionError whose
    chain is cut and whose texts hold no key; it was retried once and failed again."""

    async def garbage(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(100)
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(garbage, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with AnthropicChatClient(
            "m",
            api_key=KEY,
            base_url=f"http://127.0.0.1:{port}",
            max_retries=1,
            sleep=Sleeps(),
        ) as client:
            with pytest.raises(
                ProviderConnectionError, match=r"not valid HTTP|connection failed"
            ) as info:
                await client.get_response([Message("user", ["Hi"])])
    finally:
        server.close()
        await server.wait_closed()
    assert info.value.retryable
    assert info.value.__cause__ is None
    assert info.value.__context__ is None
    assert not [t for t in _texts_of(info.value) if KEY in t]


async def test_sizes_are_bounded() -> None:
    """PV-36: a 2xx body past max_body_size and a stream line past max_line_size are
    AnthropicProtocolErrors naming the bound; neither is retried; updates before it are
    kept."""
    big = whole_message(
        "msg_big", "m", [{"type": "text", "text": "x" * 5000}], "end_turn", None
    )
    data = transcript("text.sse")
    long_line = data.replace(b'"text": "Hello"', b'"text": "' + b"y" * 5000 + b'"', 1)
    async with FakeAnthropic() as server:
        server.add(raw(200, json.dumps(big)))
        server.add(replay(long_line))
        async with server.make_client(
            max_body_size=1000, max_line_size=1000, max_retries=2
        ) as client:
            with pytest.raises(AnthropicProtocolError, match="max_body_size=1000"):
                await client.get_response([Message("user", ["Hi"])])
            texts: list[str] = []
            with pytest.raises(AnthropicProtocolError, match="max_line_size=1000"):
                await collect(client, texts)
        assert len(server.requests()) == 2
    assert texts == [""]  # message_start arrived before the long line


def test_a_client_works_across_event_loops() -> None:
    """PV-37: one client used under two asyncio.run() calls opens a fresh session on the
    second loop; a client whose session belongs to another open loop says what to do."""
    client = AnthropicChatClient("m", api_key="k", base_url="http://127.0.0.1:1")

    async def once(port_holder: list[int]) -> str:
        async with FakeAnthropic() as server:
            assert server.server is not None
            client._init_url(server.base_url, "k")
            server.script_text(f"run {len(port_holder)}")
            port_holder.append(server.server.port)
            response = await client.get_response([Message("user", ["Hi"])])
            return response.text

    ports: list[int] = []
    assert asyncio.run(once(ports)) == "run 0"
    first_session = client.session
    assert asyncio.run(once(ports)) == "run 1"
    assert client.session is not first_session
    assert first_session is not None
    assert first_session.closed
    asyncio.run(client.aclose())

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(once(ports)) == "run 2"
        with pytest.raises(RuntimeError, match="aclose"):
            asyncio.run(client.get_response([Message("user", ["Hi"])]))
        loop.run_until_complete(client.aclose())
    finally:
        loop.close()


async def test_base_url_password_is_a_secret() -> None:
    """PV-24, AN-19: a password in the base URL is shown as *** and never appears in
    errors."""
    password = "pa55-w0rd-SECRET"
    async with FakeAnthropic() as server:
        server.add(error_step(400, f"bad request from {password}"))
        url = server.base_url.replace("http://", f"http://proxyuser:{password}@")
        async with AnthropicChatClient(
            "m", api_key=KEY, base_url=url, max_retries=0
        ) as client:
            assert password not in repr(client)
            assert "proxyuser:***@" in client.base_url
            with pytest.raises(ProviderError) as info:
                await client.get_response([Message("user", ["Hi"])])
        assert server.headers[0]["Authorization"].startswith("Basic ")
    assert not [t for t in _texts_of(info.value) if password in t]


# -- AN-9 end to end: thinking goes back with its signature in the tool loop ----------------------


async def test_thinking_is_replayed_unchanged_in_the_tool_loop(stream: bool) -> None:
    """AN-9, AN-13, AN-16: with extended thinking, the thinking and redacted_thinking
    blocks that preceded a tool call go back, unchanged and with their signature, in the
    next request of the tool loop, before the tool_use, in both modes."""
    blocks = [
        {
            "type": "thinking",
            "thinking": "The user wants Paris weather.",
            "signature": "EqQBsignature==",
        },
        {"type": "redacted_thinking", "data": "EmwKAhgBredacted"},
        {
            "type": "tool_use",
            "id": "toolu_01Think",
            "name": "get_weather",
            "input": {"city": "Paris"},
        },
    ]
    first = whole_message("msg_think", "claude-sonnet-4-5", blocks, "tool_use", None)

    async def thinking_answer(
        server: FakeAnthropic, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        if not body.get("stream"):
            return web.json_response(first)
        start = {**first, "content": [], "stop_reason": None}
        parts = [
            event("message_start", {"message": start}),
            event(
                "content_block_start",
                {"index": 0, "content_block": {"type": "thinking", "thinking": ""}},
            ),
            event(
                "content_block_delta",
                {
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "The user "},
                },
            ),
            event(
                "content_block_delta",
                {
                    "index": 0,
                    "delta": {
                        "type": "thinking_delta",
                        "thinking": "wants Paris weather.",
                    },
                },
            ),
            event(
                "content_block_delta",
                {
                    "index": 0,
                    "delta": {
                        "type": "signature_delta",
                        "signature": "EqQBsignature==",
                    },
                },
            ),
            event("content_block_stop", {"index": 0}),
            event("content_block_start", {"index": 1, "content_block": blocks[1]}),
            event("content_block_stop", {"index": 1}),
            event(
                "content_block_start",
                {"index": 2, "content_block": {**blocks[2], "input": {}}},
            ),
            event(
                "content_block_delta",
                {
                    "index": 2,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": '{"city": "Paris"}',
                    },
                },
            ),
            event("content_block_stop", {"index": 2}),
            event(
                "message_delta",
                {
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 9},
                },
            ),
            event("message_stop", {}),
        ]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"".join(parts))
        await response.write_eof()
        return response

    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        return f"Sunny in {city}"

    async with FakeAnthropic() as server:
        server.add(thinking_answer)
        server.script_text("It is sunny in Paris.")
        async with server.make_client() as client:
            agent = Agent(client, "Think first.", tools=[get_weather])
            if stream:
                run = agent.run("Weather in Paris?", stream=True)
                async for _ in run:
                    pass
                response = await run.get_final_response()
            else:
                response = await agent.run("Weather in Paris?")
        second = server.requests()[1]
    assert response.text == "It is sunny in Paris."
    assert second["messages"][1] == {"role": "assistant", "content": blocks}
    assert second["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01Think",
            "content": "Sunny in Paris",
        }
    ]
