"""`GeminiChatClient` over the loopback server: URLs, headers, the key, agent runs in both
modes, the error table, cut streams, and the plugin's packaging (spec/gemini.md GM-17 ..
GM-24)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from minagent_gemini import GeminiChatClient, GeminiSafetyError, GeminiStreamError

from minagent import (
    Agent,
    AuthenticationError,
    BadRequestError,
    Message,
    NotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    get_client,
    tool,
)
from minagent.testing import MockTransport

from ._fake_server import (
    FakeGemini,
    disconnect_after,
    events,
    google_error,
    raw,
    send_chunks,
    sse,
)

MODEL = "gemini-2.5-flash"
ROOT = Path(__file__).resolve().parents[2]


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


async def ask(client: GeminiChatClient, *, stream: bool, **options: Any) -> Any:
    messages = [Message("user", ["Hi"])]
    if stream:
        updates = [
            u async for u in client.get_response(messages, options=options, stream=True)
        ]
        return updates
    return await client.get_response(messages, options=options)


async def collect(client: GeminiChatClient, got: list[str]) -> None:
    """Stream an answer to "Hi", appending each update's text to ``got``."""
    async for update in client.get_response([Message("user", ["Hi"])], stream=True):
        got.append(update.text)


def text_of(answer: Any) -> str:
    if isinstance(answer, list):
        return "".join(u.text for u in answer)
    return str(answer.text)


# --------------------------------------------------------------------------------------------
# URL, headers, key (GM-22, GM-23)


async def test_url_headers_and_key(stream: bool) -> None:
    """GM-22, GM-23: the method in the path, alt=sse when streaming, the base URL's
    query kept; content type, accept, user agent, default headers; the key as
    x-goog-api-key and never in the URL."""
    async with FakeGemini() as server:
        server.script_text("Hello there")
        async with server.make_client(
            base_url=server.root + "/?tenant=a",
            api_key="sk-secret-1",
            default_headers={"x-extra": "1"},
        ) as client:
            assert text_of(await ask(client, stream=stream)) == "Hello there"
        method = "streamGenerateContent" if stream else "generateContent"
        assert server.paths == [f"/v1/models/{MODEL}:{method}"]
        expected = [("tenant", "a"), ("alt", "sse")] if stream else [("tenant", "a")]
        assert server.queries == [expected]
        headers = {k.lower(): v for k, v in server.headers[0].items()}
        assert headers["x-goog-api-key"] == "sk-secret-1"
        assert "authorization" not in headers
        assert headers["content-type"] == "application/json"
        assert headers["accept"] == (
            "text/event-stream" if stream else "application/json"
        )
        assert headers["user-agent"] == "minagent-gemini"
        assert headers["x-extra"] == "1"
        assert "sk-secret-1" not in server.targets[0]


async def test_api_version_and_resource_names() -> None:
    """GM-22, GM-1: api_version and a tuned model's resource name shape the path."""
    async with FakeGemini() as server:
        server.script_text("ok")
        async with server.make_client(
            model="tunedModels/my-tune", api_version="v1beta"
        ) as client:
            await ask(client, stream=False)
        assert server.paths == ["/v1beta/tunedModels/my-tune:generateContent"]
    with pytest.raises(ValueError, match="api_version"):
        GeminiChatClient(MODEL, api_key="k", api_version="v1/../x")


async def test_concurrent_calls_in_both_modes_use_their_own_urls() -> None:
    """GM-22: calls in both modes at the same time on one client each go to their own
    method."""
    async with FakeGemini() as server:
        for _ in range(6):
            server.script_text("same")
        async with server.make_client() as client:
            answers = await asyncio.gather(
                *(ask(client, stream=i % 2 == 0) for i in range(6))
            )
        assert [text_of(a) for a in answers] == ["same"] * 6
        streamed = [p for p in server.paths if p.endswith(":streamGenerateContent")]
        assert len(streamed) == 3
        for path, query in zip(server.paths, server.queries, strict=True):
            assert (query == [("alt", "sse")]) == path.endswith(
                ":streamGenerateContent"
            )


def test_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """GM-22, GM-23: GOOGLE_API_KEY wins over GEMINI_API_KEY; GOOGLE_GEMINI_BASE_URL is
    the base URL; the repr hides the key."""
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9/proxy")
    client = GeminiChatClient(MODEL)
    assert client._auth_headers() == {"x-goog-api-key": "google-key"}
    assert client.base_url == "http://127.0.0.1:9/proxy"
    assert "google-key" not in repr(client)
    assert "api_key='***'" in repr(client)
    monkeypatch.delenv("GOOGLE_API_KEY")
    assert GeminiChatClient(MODEL)._auth_headers() == {"x-goog-api-key": "gemini-key"}
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL")
    bare = GeminiChatClient(MODEL)
    assert bare._auth_headers() == {}
    assert bare.base_url == "https://generativelanguage.googleapis.com"


async def test_no_key_no_request_to_google(monkeypatch: pytest.MonkeyPatch) -> None:
    """GM-23, PV-46: without a key nothing is sent to Google; the error names both
    variables."""
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    transport = MockTransport.answering()
    client = GeminiChatClient(MODEL, transport=transport)
    with pytest.raises(AuthenticationError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        await client.get_response([Message("user", ["Hi"])])
    assert transport.requests == []


async def test_no_key_and_a_401_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """GM-23: with no key none is sent, and a 401 says no key was configured."""
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    async with FakeGemini() as server:
        server.script_error(401, "missing credentials")
        async with server.make_client(api_key="", max_retries=0) as client:
            with pytest.raises(AuthenticationError, match="no API key was configured"):
                await ask(client, stream=False)
        assert "x-goog-api-key" not in {k.lower() for k in server.headers[0]}


# --------------------------------------------------------------------------------------------
# Agent runs (GM-5, GM-8, GM-14, GM-20)


@dataclasses.dataclass
class Forecast:
    city: str
    degrees: int


async def test_agent_run_with_a_tool_round_and_structured_output(stream: bool) -> None:
    """GM-5, GM-6, GM-8, GM-14, GM-20, PV-34: Agent.run calls the tool Gemini asks for
    (a call without id), sends the result back under the call's generated id and
    name, then reads the structured answer."""
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        seen.append(city)
        return f"Sunny, 21 degrees in {city}"

    async with FakeGemini() as server:
        server.script_tool_call("get_weather", {"city": "Paris"}, "unused")
        server.script_text('{"city": "Paris", "degrees": 21}')
        async with server.make_client() as client:
            agent = Agent(client, "You report the weather.", tools=[get_weather])
            options = {"response_format": Forecast}
            if stream:
                run = agent.run("Weather in Paris?", stream=True, options=options)
                texts = [u.text async for u in run]
                assert "".join(texts) == '{"city": "Paris", "degrees": 21}'
                final = await run.get_final_response()
            else:
                final = await agent.run("Weather in Paris?", options=options)
        assert final.value == Forecast("Paris", 21)
        assert seen == ["Paris"]
        first, second = server.requests()
        assert first["systemInstruction"] == {
            "parts": [{"text": "You report the weather."}]
        }
        assert server.declared_tools(first) == ["get_weather"]
        schema = first["generationConfig"]["responseJsonSchema"]
        assert set(schema["properties"]) == {"city", "degrees"}
        call = second["contents"][1]["parts"][0]["functionCall"]
        response = second["contents"][2]["parts"][0]["functionResponse"]
        assert call["id"].startswith("call_")
        assert response == {
            "id": call["id"],
            "name": "get_weather",
            "response": {"result": "Sunny, 21 degrees in Paris"},
        }


async def test_parallel_calls_with_wire_ids_round_trip() -> None:
    """GM-14, GM-5: calls with Gemini's own ids keep them; each result answers its
    call in one user content."""

    @tool
    def double(n: int) -> int:
        """Double a number."""
        return n * 2

    async def answer_with_ids(server: Any, request: Any, body: dict[str, Any]) -> Any:
        calls = [
            {"id": "g-1", "name": "double", "args": {"n": 2}},
            {"id": "g-2", "name": "double", "args": {"n": 5}},
        ]
        return await send_chunks(request, sse(events("", calls)))

    async with FakeGemini() as server:
        server.add(answer_with_ids)
        server.script_text("4 and 10")
        async with server.make_client() as client:
            run = Agent(client, tools=[double]).run("double 2 and 5", stream=True)
            assert "".join([u.text async for u in run]) == "4 and 10"
        second = server.requests()[1]
        results = second["contents"][2]
        assert results["role"] == "user"
        assert [p["functionResponse"]["id"] for p in results["parts"]] == ["g-1", "g-2"]
        assert [p["functionResponse"]["response"] for p in results["parts"]] == [
            {"result": 4},
            {"result": 10},
        ]


# --------------------------------------------------------------------------------------------
# Errors (GM-17 .. GM-19, GM-24)

ERROR_TABLE = [
    (400, BadRequestError, "INVALID_ARGUMENT", False),
    (401, AuthenticationError, "UNAUTHENTICATED", False),
    (403, AuthenticationError, "PERMISSION_DENIED", False),
    (404, NotFoundError, "NOT_FOUND", False),
    (429, RateLimitError, "RESOURCE_EXHAUSTED", True),
    (500, ServerError, "INTERNAL", True),
    (503, ServerError, "UNAVAILABLE", True),
]


@pytest.mark.parametrize(("status", "cls", "name", "retried"), ERROR_TABLE)
async def test_error_table(
    stream: bool, status: int, cls: type[ProviderError], name: str, retried: bool
) -> None:
    """GM-18, GM-24, PV-23: each status with Google's error body is its typed error
    carrying the message and the status name; 429, 500 and 503 are retried."""
    sleep = Sleeps()
    async with FakeGemini() as server:
        for _ in range(2):
            server.add(
                raw(
                    status,
                    json.dumps(google_error(status, f"failure {status}")),
                    headers={"x-request-id": "req-7"},
                )
            )
        async with server.make_client(max_retries=1, sleep=sleep) as client:
            with pytest.raises(cls) as caught:
                await ask(client, stream=stream)
        error = caught.value
        assert type(error) is cls
        assert error.status == status
        assert error.provider_message == f"failure {status} ({name})"
        assert error.request_id == "req-7"
        assert error.provider == "gemini"
        assert len(server.requests()) == (2 if retried else 1)
        if status == 404:
            assert "model name" in str(error)


async def test_invalid_key_is_an_authentication_error() -> None:
    """GM-18: Gemini's 400 API_KEY_INVALID is an AuthenticationError, not retried, and
    the key is in no error."""
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                }
            ],
        }
    }
    async with FakeGemini() as server:
        server.add(raw(400, json.dumps(body)))
        async with server.make_client(api_key="sk-bad-key-123") as client:
            with pytest.raises(AuthenticationError) as caught:
                await ask(client, stream=True)
        assert len(server.requests()) == 1
        assert "sk-bad-key-123" not in str(caught.value)
        assert "[API_KEY_INVALID]" in str(caught.value)


async def test_429_is_retried_after_retry_after(stream: bool) -> None:
    """GM-24, PV-27: a 429 is retried after the server's Retry-After."""
    sleep = Sleeps()
    async with FakeGemini() as server:
        server.add(
            raw(
                429,
                json.dumps(google_error(429, "quota")),
                headers={"retry-after": "3"},
            )
        )
        server.script_text("Finally.")
        async with server.make_client(max_retries=2, sleep=sleep) as client:
            assert text_of(await ask(client, stream=stream)) == "Finally."
    assert sleep.calls == [3.0]


async def test_429_is_retried_after_the_bodys_retry_delay(stream: bool) -> None:
    """GM-18, GM-24, PV-27: without a Retry-After header, a 429 waits the RetryInfo
    delay of Google's error body."""
    sleep = Sleeps()
    body = google_error(429, "quota")
    body["error"]["details"] = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}
    ]
    async with FakeGemini() as server:
        server.add(raw(429, json.dumps(body)))
        server.script_text("Finally.")
        async with server.make_client(max_retries=2, sleep=sleep) as client:
            assert text_of(await ask(client, stream=stream)) == "Finally."
    assert sleep.calls == [1.5]


async def test_safety_block_through_the_client(stream: bool) -> None:
    """GM-17: a blocked prompt is a GeminiSafetyError naming its category, never
    retried, in both modes."""
    blocked = {
        "promptFeedback": {
            "blockReason": "SAFETY",
            "safetyRatings": [
                {
                    "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                    "probability": "HIGH",
                    "blocked": True,
                }
            ],
        }
    }

    async def answer(server: Any, request: Any, body: dict[str, Any]) -> Any:
        return await send_chunks(request, sse([blocked]))

    async with FakeGemini() as server:
        if stream:
            server.add(answer)
        else:
            server.add(raw(200, json.dumps(blocked)))
        async with server.make_client(max_retries=2) as client:
            with pytest.raises(GeminiSafetyError) as caught:
                await ask(client, stream=stream)
        assert caught.value.categories == ("HARM_CATEGORY_DANGEROUS_CONTENT",)
        assert "HARM_CATEGORY_DANGEROUS_CONTENT" in str(caught.value)
        assert len(server.requests()) == 1


async def test_error_event_mid_stream_keeps_what_was_streamed() -> None:
    """GM-19, PV-14: an error event mid-stream raises GeminiStreamError after the text
    before it was yielded; it is not retried."""
    data = sse(
        [
            {"candidates": [{"content": {"parts": [{"text": "Partial "}]}}]},
            {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}},
        ]
    )

    async def answer(server: Any, request: Any, body: dict[str, Any]) -> Any:
        return await send_chunks(request, data)

    async with FakeGemini() as server:
        server.add(answer)
        async with server.make_client(max_retries=2) as client:
            got: list[str] = []
            with pytest.raises(GeminiStreamError, match="internal"):
                await collect(client, got)
        assert got == ["Partial "]
        assert len(server.requests()) == 1


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
async def test_a_cut_stream_is_interrupted(cut: float) -> None:
    """GM-21, PV-29: a connection dropped mid-stream is a StreamInterruptedError after
    the updates before it; nothing is retried after the first byte."""
    data = sse(events("one two three four five six"))
    async with FakeGemini() as server:
        server.add(disconnect_after(data, int(len(data) * cut)))
        async with server.make_client(max_retries=2) as client:
            got: list[str] = []
            with pytest.raises(StreamInterruptedError):
                await collect(client, got)
        assert "one two three four five six".startswith("".join(got))
        assert len(server.requests()) == 1


async def test_a_stream_without_finish_reason_is_interrupted() -> None:
    """GM-21: a stream that ends cleanly but without a finishReason is interrupted."""
    data = sse([{"candidates": [{"content": {"parts": [{"text": "Half"}]}}]}])

    async def answer(server: Any, request: Any, body: dict[str, Any]) -> Any:
        return await send_chunks(request, data)

    async with FakeGemini() as server:
        server.add(answer)
        async with server.make_client() as client:
            got: list[str] = []
            with pytest.raises(StreamInterruptedError, match="finishReason"):
                await collect(client, got)
        assert got == ["Half"]


# --------------------------------------------------------------------------------------------
# Packaging (GM-24)


def test_entry_point_resolves_the_client() -> None:
    """GM-24, PV-22: get_client('gemini') builds a GeminiChatClient."""
    client = get_client(
        "gemini", model=MODEL, api_key="k", base_url="http://127.0.0.1:1"
    )
    assert isinstance(client, GeminiChatClient)
    assert client.model == MODEL


async def _run(*args: str, env: dict[str, str], cwd: str | None = None) -> Any:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        env=env,
        cwd=cwd,
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


async def test_codec_import_does_not_load_a_network_library() -> None:
    """GM-24, PV-1: importing the package and using the codec imports neither aiohttp
    nor the client."""
    code = (
        "import sys, minagent_gemini as m\n"
        "from minagent import Message\n"
        "m.build_request([Message('user', ['x'])], {}, model='m')\n"
        "m.GeminiStreamDecoder().feed(b'')\n"
        "assert 'aiohttp' not in sys.modules, 'aiohttp was imported'\n"
        "assert 'minagent_gemini._client' not in sys.modules\n"
        "print('ok')\n"
    )
    code_, out, err = await _run("-c", code, env=dict(os.environ))
    assert (code_, out.strip()) == (0, "ok"), err


def test_the_plugin_names_the_core_only_in_its_locator() -> None:
    """GM-24, PV-43: no module but _minagent.py imports minagent by its absolute
    name."""
    package = ROOT / "plugins" / "gemini" / "minagent_gemini"
    offenders = [
        p.name
        for p in package.glob("*.py")
        if p.name != "_minagent.py"
        and any(
            line.startswith(("import minagent", "from minagent ", "from minagent."))
            for line in p.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert offenders == []


async def test_vendored_beside_a_copy_of_the_core(tmp_path: Path) -> None:
    """GM-24, PV-43: copied beside a copy of minagent under another package, the plugin
    uses that copy (no top-level minagent is loaded) and answers over the standard
    library's transport."""
    import shutil

    vendor = tmp_path / "myapp" / "_vendor"
    vendor.mkdir(parents=True)
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (vendor / "__init__.py").write_text("")
    shutil.copytree(
        ROOT / "minagent",
        vendor / "minagent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copytree(
        ROOT / "plugins" / "gemini" / "minagent_gemini",
        vendor / "minagent_gemini",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    async with FakeGemini() as server:
        server.script_text("vendored hello")
        code = (
            "import asyncio, sys\n"
            "from myapp._vendor.minagent_gemini import GeminiChatClient\n"
            "from myapp._vendor.minagent.providers import StdlibTransport\n"
            "from myapp._vendor.minagent import Message\n"
            "async def main():\n"
            f"    client = GeminiChatClient('{MODEL}', api_key='k', base_url='{server.root}',"
            " transport=StdlibTransport())\n"
            "    async with client:\n"
            "        r = await client.get_response([Message('user', ['Hi'])])\n"
            "    print(r.text)\n"
            "asyncio.run(main())\n"
            "assert 'minagent' not in sys.modules, 'the top-level minagent was loaded'\n"
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = str(tmp_path)
        code_, out, err = await _run("-S", "-c", code, env=env, cwd=str(tmp_path))
    assert (code_, out.strip()) == (0, "vendored hello"), err
