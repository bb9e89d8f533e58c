"""The aiohttp transport end to end against the loopback Ollama server (OL-20 .. OL-23,
PV-23 ..).

Recorded transcripts are replayed by the server (as an NDJSON stream, or merged into the
equivalent body when the request does not stream) and driven through ``get_response``
and ``Agent.run`` with real tools, in both modes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import aiohttp
import pytest
from minagent_ollama import (
    OllamaChatClient,
    OllamaModelNotFoundError,
    OllamaProtocolError,
    OllamaStreamError,
)

from minagent import (
    Agent,
    AuthenticationError,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationConfiguration,
    Message,
    NotFoundError,
    ProviderConnectionError,
    ProviderTimeoutError,
    StreamInterruptedError,
    get_client,
    tool,
)
from tests._support.modes import get_response_with_updates

from ._fake_server import (
    FakeOllama,
    disconnect_after,
    merge_chunks,
    raw,
    replay,
    silence,
    transcript,
)


async def collect(stream: Any, texts: list[str]) -> None:
    """Consume a stream, appending each update's text as it arrives."""
    async for update in stream:
        texts.append(update.text)


NO_LOOP = FunctionInvocationConfiguration(enabled=False)


async def respond(
    client: OllamaChatClient, prompt: str = "Hi", *, stream: bool, **kw: Any
) -> tuple[ChatResponse, list[ChatResponseUpdate]]:
    return await get_response_with_updates(
        client, [Message("user", [prompt])], stream=stream, **kw
    )


async def test_plain_text_transcript(stream: bool) -> None:
    """OL-11, OL-17, PV-34: the reference's text stream, in both modes, through a real
    client."""
    async with FakeOllama() as server:
        server.add(replay(transcript("plain_text.ndjson")))
        async with server.make_client() as client:
            response, updates = await respond(client, stream=stream)
    assert response.text == "The sky is blue — Rayleigh scattering ☀️."
    assert response.finish_reason == "stop"
    assert response.model == "llama3.2"
    assert response.created_at == "2023-08-04T19:22:45Z"
    assert response.usage_details is not None
    assert response.usage_details.total_token_count == 308
    if stream:
        assert "".join(u.text for u in updates) == response.text


async def test_both_modes_of_every_transcript_are_equal() -> None:
    """PV-9, OL-15: each transcript gives equal final responses streamed and not, ids
    included."""
    names = [
        "plain_text.ndjson",
        "tool_call.ndjson",
        "parallel_tool_calls.ndjson",
        "thinking.ndjson",
    ]
    async with FakeOllama() as server:
        for name in names:
            finals = []
            for stream in (False, True):
                server.add(replay(transcript(name)))
                async with server.make_client(
                    function_invocation_configuration=NO_LOOP
                ) as client:
                    finals.append((await respond(client, stream=stream))[0])
            assert finals[0] == finals[1], name


get_current_weather_calls: list[dict[str, Any]] = []


@tool
def get_current_weather(location: str, format: str) -> str:
    """Get the current weather for a location."""
    get_current_weather_calls.append({"location": location, "format": format})
    return f"22 degrees {format} in {location}"


async def test_agent_runs_a_recorded_tool_call(stream: bool) -> None:
    """PV-34, OL-4, OL-5, OL-15: the reference's tool call runs; its result goes back
    with tool_name."""
    get_current_weather_calls.clear()
    async with FakeOllama() as server:
        server.add(
            replay(transcript("tool_call.ndjson")),
            replay(transcript("plain_text.ndjson")),
        )
        async with server.make_client() as client:
            agent = Agent(
                client, "You report the weather.", tools=[get_current_weather]
            )
            run = agent.run("What is the weather today in Paris?", stream=stream)
            if stream:
                async for _ in run:
                    pass
                response = await run.get_final_response()
            else:
                response = await run
        first, second = server.requests()
    assert get_current_weather_calls == [{"location": "Paris, FR", "format": "celsius"}]
    assert [t["function"]["name"] for t in first["tools"]] == ["get_current_weather"]
    calls = [
        c for m in response.messages for c in m.contents if c.type == "function_call"
    ]
    call_id = calls[0].call_id
    assert second["messages"][-2:] == [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": call_id,
                    "function": {
                        "name": "get_current_weather",
                        "arguments": {"format": "celsius", "location": "Paris, FR"},
                    },
                }
            ],
        },
        {
            "role": "tool",
            "content": "22 degrees celsius in Paris, FR",
            "tool_name": "get_current_weather",
            "tool_call_id": call_id,
        },
    ]
    calls = [
        c for m in response.messages for c in m.contents if c.type == "function_call"
    ]
    results = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert response.text.endswith("Rayleigh scattering ☀️.")


async def test_request_line_headers_and_body() -> None:
    """OL-21, OL-1: POST /api/chat, JSON and NDJSON accept headers, our user agent, no
    key."""
    async with FakeOllama() as server:
        server.add(
            replay(transcript("plain_text.ndjson")),
            replay(transcript("plain_text.ndjson")),
        )
        async with server.make_client(default_headers={"X-Team": "a"}) as client:
            await respond(
                client,
                "héllo",
                stream=False,
                options={"max_tokens": 9, "keep_alive": "1m"},
            )
            await respond(client, stream=True)
        plain, streamed = server.headers
        first, second = server.requests()
    assert plain["Content-Type"] == "application/json"
    assert plain["Accept"] == "application/json"
    assert streamed["Accept"] == "application/x-ndjson"
    assert plain["User-Agent"] == "minagent-ollama"
    assert plain["X-Team"] == "a"
    assert "Authorization" not in plain
    assert first == {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "héllo"}],
        "options": {"num_predict": 9},
        "keep_alive": "1m",
        "stream": False,
    }
    assert second["stream"] is True


async def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """OL-21: OLLAMA_HOST (host:port, no scheme) and OLLAMA_API_KEY from the
    environment."""
    async with FakeOllama() as server:
        assert server.server is not None
        monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{server.server.port}/")
        monkeypatch.setenv("OLLAMA_API_KEY", "ollama-key-123")
        server.add(replay(transcript("plain_text.ndjson")))
        client = OllamaChatClient("llama3.2")
        assert client.base_url == f"http://127.0.0.1:{server.server.port}"
        assert (
            repr(client)
            == f"OllamaChatClient(model='llama3.2', base_url='{client.base_url}', api_key='***')"
        )
        async with client:
            response, _ = await respond(client, stream=False)
        assert response.text.startswith("The sky")
        assert server.headers[0]["Authorization"] == "Bearer ollama-key-123"
    monkeypatch.delenv("OLLAMA_HOST")
    monkeypatch.delenv("OLLAMA_API_KEY")
    default = OllamaChatClient("m")
    assert default.base_url == "http://127.0.0.1:11434"
    assert repr(default).endswith("api_key=None)")
    assert default.timeout == 300.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"base_url": "ftp://x"}, "http"), ({"timeout": 0}, "timeout")],
)
def test_invalid_configuration(kwargs: dict[str, Any], match: str) -> None:
    """OL-21: a base URL that is not http(s) and a non-positive timeout are
    ValueErrors."""
    with pytest.raises(ValueError, match=match):
        OllamaChatClient("m", **kwargs)


async def test_model_not_pulled(stream: bool) -> None:
    """OL-20, PV-23: Ollama's 404 for a missing model is a typed error with its message;
    no retry."""
    message = 'model "llama3:70b" not found, try pulling it first'
    async with FakeOllama() as server:
        server.add(raw(404, json.dumps({"error": message})))
        async with server.make_client(model="llama3:70b") as client:
            with pytest.raises(OllamaModelNotFoundError) as caught:
                await respond(client, stream=stream)
        assert len(server.requests()) == 1
    error = caught.value
    assert isinstance(error, NotFoundError)
    assert error.model == "llama3:70b"
    assert error.provider_message == message
    assert "ollama pull llama3:70b" in str(error)


async def test_stream_error_line_after_updates() -> None:
    """OL-18, PV-14, OL-22: a mid-stream error line raises after the earlier updates
    were yielded."""
    lines = transcript("plain_text.ndjson").split(b"\n")
    data = (
        lines[0]
        + b"\n"
        + lines[1]
        + b'\n{"error":"an error was encountered while running the model"}\n'
    )
    async with FakeOllama() as server:
        server.add(replay(data))
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            texts: list[str] = []
            with pytest.raises(
                OllamaStreamError, match="while running the model"
            ) as caught:
                await collect(
                    client.get_response([Message("user", ["Hi"])], stream=True), texts
                )
        # errors decoded from a 2xx body are not retried
        assert len(server.requests()) == 1
    assert texts == ["The", " sky is"]
    assert caught.value.status is None


@pytest.mark.parametrize("cut", ["before_done", "inside_line"])
async def test_incomplete_stream_is_interrupted(cut: str) -> None:
    """OL-22, PV-29, PV-15: a stream that ends without its done chunk is
    StreamInterruptedError."""
    data = transcript("plain_text.ndjson")
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    body = data[:last] if cut == "before_done" else data[: last + 20]
    async with FakeOllama() as server:
        server.add(replay(body))
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            texts: list[str] = []
            with pytest.raises(StreamInterruptedError, match="interrupted"):
                await collect(
                    client.get_response([Message("user", ["Hi"])], stream=True), texts
                )
    assert "".join(texts) == "The sky is blue — Rayleigh scattering ☀️."


async def test_dropped_connection_mid_stream() -> None:
    """PV-29, OL-22: a disconnect after the first byte is StreamInterruptedError, not
    retried."""
    data = transcript("plain_text.ndjson")
    async with FakeOllama() as server:
        server.add(disconnect_after(data, data.index(b"\n") + 1))
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            texts: list[str] = []
            with pytest.raises(StreamInterruptedError):
                await collect(
                    client.get_response([Message("user", ["Hi"])], stream=True), texts
                )
        assert len(server.requests()) == 1
    assert texts == ["The"]


async def test_stream_answered_with_json() -> None:
    """OL-22: a streaming request answered with one JSON body is decoded whole, usage
    kept."""
    merged = merge_chunks(transcript("tool_call.ndjson"))
    async with FakeOllama() as server:
        server.add(raw(200, json.dumps(merged)))
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            response, _updates = await respond(client, stream=True)
    assert [c.name for c in response.messages[0].contents] == ["get_current_weather"]
    assert response.usage_details is not None
    assert response.usage_details.input_token_count == 122
    assert response.finish_reason == "stop"


async def test_non_json_success_body_is_a_protocol_error(stream: bool) -> None:
    """PV-10, OL-14, OL-22: a 2xx body that is not JSON is OllamaProtocolError, not
    retried."""
    async with FakeOllama() as server:
        server.add(raw(200, "<html>proxy</html>", content_type="application/json"))
        async with server.make_client(
            function_invocation_configuration=NO_LOOP
        ) as client:
            with pytest.raises(OllamaProtocolError, match="proxy"):
                await respond(client, stream=stream)
        assert len(server.requests()) == 1


def test_the_entry_point_and_lazy_import() -> None:
    """OL-23, PV-22: the ``ollama`` entry point resolves to OllamaChatClient through
    get_client."""
    client = get_client("ollama", model="llama3.2")
    assert isinstance(client, OllamaChatClient)
    assert client.model == "llama3.2"
    import minagent_ollama

    with pytest.raises(AttributeError, match="nope"):
        _ = minagent_ollama.nope  # type: ignore[attr-defined]


async def test_cli_run_with_provider_ollama() -> None:
    """OL-23: ``python -m minagent run --provider ollama`` streams an answer from
    OLLAMA_HOST."""
    async with FakeOllama() as server:
        assert server.server is not None
        server.add(replay(transcript("plain_text.ndjson")))
        env = {**os.environ, "OLLAMA_HOST": f"http://127.0.0.1:{server.server.port}"}
        env.pop("OLLAMA_API_KEY", None)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "minagent", "run", "Why is the sky blue?", "--provider", "ollama",
            "--model", "llama3.2", "--instructions", "Be brief.",
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        (sent,) = server.requests()
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "The sky is blue — Rayleigh scattering ☀️."
    assert sent["model"] == "llama3.2"
    assert sent["stream"] is True
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Why is the sky blue?"},
    ]


async def test_connection_refused_is_a_connection_error() -> None:
    """OL-22, PV-23, PV-24: no server is a retryable ProviderConnectionError naming the
    URL and saying how to start Ollama."""
    async with FakeOllama() as server:
        url = server.base_url
    client = OllamaChatClient("llama3.2", base_url=url, max_retries=0)
    async with client:
        with pytest.raises(
            ProviderConnectionError, match="connection failed"
        ) as caught:
            await client.get_response([Message("user", ["Hi"])])
    assert url in str(caught.value)
    assert "ollama serve" in str(caught.value)
    assert "OLLAMA_HOST" in str(caught.value)
    assert caught.value.retryable


@pytest.mark.parametrize(
    ("stream", "after_headers"), [(False, False), (True, False), (True, True)]
)
async def test_timeouts_before_the_first_byte(
    stream: bool, after_headers: bool
) -> None:
    """OL-22, PV-23: silence before the first byte of the body is
    ProviderTimeoutError."""
    async with FakeOllama() as server:
        server.add(silence(after_headers=after_headers))
        async with server.make_client(
            timeout=0.2, max_retries=0, function_invocation_configuration=NO_LOOP
        ) as client:
            with pytest.raises(ProviderTimeoutError, match=r"no answer within 0\.2 s"):
                await respond(client, stream=stream)


async def test_timeout_after_the_first_byte() -> None:
    """OL-22, PV-29: silence in the middle of a stream is StreamInterruptedError after
    the updates."""
    first_line = transcript("plain_text.ndjson").split(b"\n")[0] + b"\n"
    async with FakeOllama() as server:
        server.add(silence(first=first_line))
        async with server.make_client(
            timeout=0.2, max_retries=0, function_invocation_configuration=NO_LOOP
        ) as client:
            texts: list[str] = []
            with pytest.raises(StreamInterruptedError):
                await collect(
                    client.get_response([Message("user", ["Hi"])], stream=True), texts
                )
    assert texts == ["The"]


async def test_an_empty_stream_is_retried() -> None:
    """PV-29, OL-22: a 2xx stream that ends before its first byte is retried like a
    connection error."""
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with FakeOllama() as server:
        server.add(replay(b""), replay(transcript("plain_text.ndjson")))
        async with server.make_client(
            sleep=sleep, function_invocation_configuration=NO_LOOP
        ) as client:
            response, _ = await respond(client, stream=True)
        assert len(server.requests()) == 2
    assert response.finish_reason == "stop"
    assert len(sleeps) == 1


async def test_401_without_a_key_says_so() -> None:
    """OL-21: without a key a 401 says that OLLAMA_API_KEY was not set."""
    async with FakeOllama() as server:
        server.add(raw(401, json.dumps({"error": "unauthorized"})))
        async with server.make_client(api_key="", max_retries=0) as client:
            with pytest.raises(AuthenticationError, match="OLLAMA_API_KEY"):
                await client.get_response([Message("user", ["Hi"])])


async def test_session_life_cycle() -> None:
    """PV-31: the session is created lazily and closed by aclose(); one passed in stays
    open."""
    async with FakeOllama() as server:
        server.add(
            replay(transcript("plain_text.ndjson")),
            replay(transcript("plain_text.ndjson")),
        )
        client = server.make_client()
        assert client.session is None
        await client.get_response([Message("user", ["Hi"])])
        own = client.session
        assert own is not None
        await client.aclose()
        assert own.closed
        await client.aclose()
        async with aiohttp.ClientSession() as shared:
            other = server.make_client(session=shared)
            await other.get_response([Message("user", ["Hi"])])
            await other.aclose()
            assert not shared.closed


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("example.test", "http://example.test:11434"),
        ("example.test:8080", "http://example.test:8080"),
        ("https://example.test", "https://example.test:443"),
    ],
)
def test_host_keyword_reads_like_ollama_host(host: str, expected: str) -> None:
    """OL-21: ``host=`` takes what OLLAMA_HOST takes (host, host:port or a URL), also
    through ``get_client("ollama", host=...)``."""
    assert OllamaChatClient("m", host=host).base_url == expected
    client = get_client("ollama", model="m", host=host)
    assert isinstance(client, OllamaChatClient)
    assert client.base_url == expected


def test_host_and_base_url_together_are_an_error() -> None:
    """OL-21: ``host`` and ``base_url`` name the same setting; giving both is a
    ValueError naming both."""
    with pytest.raises(ValueError, match=r"host.*base_url"):
        OllamaChatClient("m", host="a", base_url="http://b")
