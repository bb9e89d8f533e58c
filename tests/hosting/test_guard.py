"""The guard in front of the hosting application, on the dev server over loopback, with
the official `openai` SDK and raw hostile clients (spec/hosting.md HS-120 .. HS-127)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent, tool
from minagent.hosting import HostingApp
from minagent.hosting.guard import Guard
from minagent.hosting.server import ClientDisconnected, Server, serve
from minagent.testing import ScriptedChatClient, call

from ._served import EchoModel, SlowModel, read_response, request_once, status_of

TOKEN = "s3cret-token-value"


@contextlib.asynccontextmanager
async def guarded(app: Any, **options: Any) -> AsyncIterator[Server]:
    server = await serve(Guard(app, **options), "127.0.0.1", 0)
    try:
        yield server
    finally:
        await server.shutdown(0)


@contextlib.asynccontextmanager
async def sdk(server: Server, key: str = "unused") -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{server.port}/v1", api_key=key, max_retries=0
    )
    try:
        yield client
    finally:
        await client.close()
        for _ in range(10):
            await asyncio.sleep(0)


def echo_app() -> HostingApp:
    return HostingApp([Agent(EchoModel(), name="echo")])


def raw_post(
    path: str, body: dict[str, Any], headers: bytes = b"", *, close: bool = True
) -> bytes:
    data = json.dumps(body).encode()
    return (
        f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n".encode()
        + headers
        + (b"connection: close\r\n" if close else b"")
        + b"content-length: %d\r\n\r\n" % len(data)
        + data
    )


CHAT = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}


async def asgi(app: Any, scope: dict[str, Any], body: bytes = b"") -> list[Any]:
    """One request straight through ASGI (no network): every message sent."""
    sent: list[Any] = []
    chunks = [{"type": "http.request", "body": body}]
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if chunks:
            return chunks.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": "GET", "path": "/", **scope}, receive, send)
    return sent


# ---- HS-120 ------------------------------------------------------------------------------


async def test_lifespan_passes_and_other_scopes_are_refused() -> None:
    """HS-120: the lifespan scope reaches the application; a websocket is closed with
    1008; another scope type is a ValueError."""
    guard = Guard(echo_app(), token=TOKEN)
    incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for kind in ("lifespan.startup", "lifespan.shutdown"):
        incoming.put_nowait({"type": kind})
    sent: list[Any] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await guard({"type": "lifespan"}, incoming.get, send)
    assert [m["type"] for m in sent] == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]
    sent.clear()
    await guard({"type": "websocket", "path": "/"}, incoming.get, send)
    assert sent == [{"type": "websocket.close", "code": 1008}]
    with pytest.raises(ValueError, match="telepathy"):
        await guard({"type": "telepathy"}, incoming.get, send)


def test_bad_options_are_value_errors_and_the_token_is_never_shown() -> None:
    """HS-120: invalid options are ValueErrors; `repr` does not show the token."""
    app = echo_app()
    for options in (
        {"token": ""},
        {"token": " padded "},
        {"token": "line\nbreak"},
        {"max_runs": 0},
        {"run_timeout": 0},
        {"cors_origins": ["example.com"]},
        {"cors_origins": ["https://example.com/"]},
        {"public_paths": ["ui/app.js"]},
        {"public_paths": [b"/"]},
    ):
        with pytest.raises(
            ValueError, match=r"token|max_runs|run_timeout|origin|public path"
        ):
            Guard(app, **options)
    assert TOKEN not in repr(Guard(app, token=TOKEN))


# ---- HS-121 ------------------------------------------------------------------------------


async def test_a_wrong_or_missing_token_is_a_401_and_the_agent_does_not_run() -> None:
    """HS-121: with a token, the SDK with another key gets AuthenticationError (401,
    `invalid_api_key`); a raw request without the header gets 401 with
    `www-authenticate: Bearer`; the right key works; the agent never ran for the
    refused ones."""
    client = ScriptedChatClient(["welcome"])
    app = HostingApp([Agent(client, name="echo")])
    async with guarded(app, token=TOKEN) as server:
        async with sdk(server, "wrong") as wrong:
            with pytest.raises(openai.AuthenticationError) as caught:
                await wrong.chat.completions.create(**CHAT)  # type: ignore[call-overload]
        assert caught.value.code == "invalid_api_key"
        assert TOKEN not in json.dumps(caught.value.body)
        for header in (
            b"",
            b"authorization: Basic czNjcmV0\r\n",
            b"authorization: Bearer\r\n",
        ):
            answer = await request_once(
                server.port, raw_post("/v1/chat/completions", CHAT, header)
            )
            assert status_of(answer) == 401
            assert b"www-authenticate: Bearer" in answer
        assert client.requests == []
        models = await request_once(
            server.port, b"GET /v1/models HTTP/1.1\r\nconnection: close\r\n\r\n"
        )
        assert status_of(models) == 401
        async with sdk(server, TOKEN) as right:
            completion = await right.chat.completions.create(**CHAT)  # type: ignore[call-overload]
        assert completion.choices[0].message.content == "welcome"


@given(given_token=st.text(min_size=0, max_size=40))
def test_only_the_exact_token_passes(given_token: str) -> None:
    """HS-121: whatever the client sends, only the exact token passes, and the
    comparison goes through `hmac.compare_digest` (constant time)."""
    import hmac
    from unittest import mock

    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def recording(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    header = given_token.encode("utf-8")
    scope = {"headers": [(b"authorization", b"Bearer " + header)]}
    with mock.patch("minagent.hosting.guard.hmac.compare_digest", recording):
        sent = asyncio.run(asgi(Guard(app, token=TOKEN), scope))
    expected = 204 if header.strip() == TOKEN.encode() else 401
    assert sent[0]["status"] == expected
    assert calls
    assert calls[0][1] == TOKEN.encode()


PUBLIC = ("/", "/ui/app.js")


@settings(max_examples=60)
@given(
    method=st.sampled_from(["GET", "HEAD", "POST", "DELETE", "OPTIONS", "PUT"]),
    path=st.sampled_from(
        [
            "/",
            "/ui/app.js",
            "/ui/app.js/",
            "/ui/app.jsx",
            "/ui/",
            "/ui/api/agents",
            "//",
        ]
    ),
    header=st.sampled_from([b"", b"Bearer " + TOKEN.encode(), b"Bearer wrong"]),
)
def test_public_paths_are_served_without_the_token(
    method: str, path: str, header: bytes
) -> None:
    """HS-121: a GET or HEAD of exactly a public path passes without the token; any
    other method or path (a prefix or an extension of a public one included) still
    needs it, and a wrong token on a public GET does not matter."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    headers = [(b"authorization", header)] if header else []
    scope = {"method": method, "path": path, "headers": headers}
    guard = Guard(app, token=TOKEN, public_paths=PUBLIC)
    sent = asyncio.run(asgi(guard, scope))
    public = method in ("GET", "HEAD") and path in PUBLIC
    right = header == b"Bearer " + TOKEN.encode()
    assert sent[0]["status"] == (204 if public or right else 401)
    assert TOKEN.encode() not in b"".join(m.get("body", b"") for m in sent)


# ---- HS-122 ------------------------------------------------------------------------------


async def test_cors_is_off_unless_allowed() -> None:
    """HS-122: without an allowlist, any request carrying an Origin (preflight or not)
    is a 403 without CORS headers and the agent does not run; requests without Origin
    are served."""
    client = ScriptedChatClient(["ok"])
    app = HostingApp([Agent(client, name="echo")])
    async with guarded(app) as server:
        origin = b"origin: http://evil.example\r\n"
        answer = await request_once(
            server.port, raw_post("/v1/chat/completions", CHAT, origin)
        )
        assert status_of(answer) == 403
        assert b"origin_not_allowed" in answer
        assert b"access-control" not in answer
        preflight = (
            b"OPTIONS /v1/chat/completions HTTP/1.1\r\n"
            + origin
            + b"access-control-request-method: POST\r\nconnection: close\r\n\r\n"
        )
        answer = await request_once(server.port, preflight)
        assert status_of(answer) == 403
        assert b"access-control" not in answer
        assert client.requests == []
        answer = await request_once(server.port, raw_post("/v1/chat/completions", CHAT))
        assert status_of(answer) == 200


async def test_allowed_origins_get_preflight_and_headers() -> None:
    """HS-122: for an allowed origin the preflight is answered 204 (without the token)
    and the answers carry access-control-allow-origin and vary; other origins are
    still refused; `*` allows any."""
    async with guarded(
        echo_app(), token=TOKEN, cors_origins=["http://ui.example:3000"]
    ) as server:
        origin = b"origin: http://ui.example:3000\r\n"
        preflight = (
            b"OPTIONS /v1/chat/completions HTTP/1.1\r\n"
            + origin
            + b"access-control-request-method: POST\r\n"
            b"access-control-request-headers: authorization, content-type, x-extra\r\n"
            b"connection: close\r\n\r\n"
        )
        answer = await request_once(server.port, preflight)
        assert status_of(answer) == 204
        assert b"access-control-allow-origin: http://ui.example:3000" in answer
        assert b"access-control-allow-methods: GET, POST, DELETE, OPTIONS" in answer
        assert (
            b"access-control-allow-headers: authorization, content-type, x-extra"
            in answer
        )
        assert b"access-control-max-age: 600" in answer
        auth = f"authorization: Bearer {TOKEN}\r\n".encode()
        answer = await request_once(
            server.port, raw_post("/v1/chat/completions", CHAT, origin + auth)
        )
        assert status_of(answer) == 200
        assert b"access-control-allow-origin: http://ui.example:3000" in answer
        assert b"vary: origin" in answer
        other = b"origin: http://ui.example:3001\r\n"
        answer = await request_once(
            server.port, raw_post("/v1/chat/completions", CHAT, other + auth)
        )
        assert status_of(answer) == 403
    async with guarded(echo_app(), cors_origins=["*"]) as server:
        answer = await request_once(
            server.port,
            raw_post("/v1/chat/completions", CHAT, b"origin: https://any.example\r\n"),
        )
        assert status_of(answer) == 200
        assert b"access-control-allow-origin: https://any.example" in answer


# ---- HS-123, HS-124 ----------------------------------------------------------------------


async def test_a_run_over_the_time_limit_is_cut(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HS-123: a run past `run_timeout` is cancelled: a 504 (`run_timeout`) when nothing
    was sent yet; a started stream is cut off without being completed."""
    monkeypatch.setenv("MINAGENT_TEST_TICK", "0.05")
    cancelled: list[str] = []
    monkeypatch.setattr("tests.hosting._served.journal", cancelled.append)
    app = HostingApp([Agent(SlowModel(), name="slow")])
    async with guarded(app, run_timeout=0.3) as server, sdk(server) as client:
        request: Any = {
            "model": "slow",
            "messages": [{"role": "user", "content": "go"}],
        }
        if stream:
            events = await client.chat.completions.create(**request, stream=True)
            texts: list[str] = []
            with pytest.raises(openai.APIError):
                await read_texts(events, texts)
            assert texts[0] == "tick 0 "
        else:
            with pytest.raises(openai.InternalServerError) as caught:
                await client.chat.completions.create(**request)
            assert caught.value.status_code == 504
            assert caught.value.code == "run_timeout"
    assert cancelled == ["started", "cancelled"]


async def read_texts(events: Any, texts: list[str]) -> None:
    async with events:
        async for chunk in events:
            if chunk.choices and chunk.choices[0].delta.content:
                texts.append(chunk.choices[0].delta.content)


async def test_runs_over_the_cap_get_429_with_retry_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HS-124: with `max_runs=1`, a second POST while one runs is answered 429 with
    Retry-After and `rate_limit_exceeded`, without running; a GET is not a run; once
    the first ends a POST runs again."""
    monkeypatch.setenv("MINAGENT_TEST_TICKS", "1000000")
    journal: list[str] = []
    started = asyncio.Event()

    def note(line: str) -> None:
        journal.append(line)
        started.set()

    monkeypatch.setattr("tests.hosting._served.journal", note)
    app = HostingApp([Agent(SlowModel(), name="slow"), Agent(EchoModel(), name="echo")])
    async with guarded(app, max_runs=1, retry_after=7) as server:
        _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        body = {"model": "slow", "messages": [{"role": "user", "content": "go"}]}
        writer.write(raw_post("/v1/chat/completions", body))
        await writer.drain()
        await started.wait()
        answer = await request_once(server.port, raw_post("/v1/chat/completions", CHAT))
        assert status_of(answer) == 429
        assert b"retry-after: 7" in answer
        assert b"rate_limit_exceeded" in answer
        models = await request_once(
            server.port, b"GET /v1/models HTTP/1.1\r\nconnection: close\r\n\r\n"
        )
        assert status_of(models) == 200
        writer.close()
        await writer.wait_closed()
        for _ in range(1000):
            answer = await request_once(
                server.port, raw_post("/v1/chat/completions", CHAT)
            )
            if status_of(answer) == 200:
                break
            await asyncio.sleep(0.01)
        assert status_of(answer) == 200
        assert journal == ["started", "cancelled"]


# ---- HS-125 ------------------------------------------------------------------------------


class ConversationApp:
    """A protocol handler's shape: one conversation per request's ``conversation``,
    the agent run inside `HostingApp.conversations` (as the protocols run it)."""

    def __init__(self, hosting: HostingApp, stream: bool) -> None:
        self.hosting = hosting
        self.stream = stream

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        message = await receive()
        request = json.loads(message["body"])
        agent = self.hosting.agents[request["model"]]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/plain")],
            }
        )
        async with self.hosting.conversations.session(
            request["model"], request["conversation"]
        ) as session:
            if self.stream:
                async for update in agent.run(
                    request["input"], session=session, stream=True
                ):
                    await send(
                        {
                            "type": "http.response.body",
                            "body": update.text.encode(),
                            "more_body": True,
                        }
                    )
            else:
                response = await agent.run(request["input"], session=session)
                await send(
                    {
                        "type": "http.response.body",
                        "body": response.text.encode(),
                        "more_body": True,
                    }
                )
        await send({"type": "http.response.body", "body": b""})


async def test_a_client_that_disconnects_cancels_its_run(stream: bool) -> None:
    """HS-125: a client that goes away mid-run cancels it: the running tool is
    cancelled (cleaned up), the conversation's stored session is left as it was
    (nothing half-stored), and the access log says 499."""
    inside = asyncio.Event()
    events: list[str] = []

    @tool
    async def wait_forever() -> str:
        """Waits."""
        inside.set()
        try:
            await asyncio.Event().wait()
        finally:
            events.append("tool cleaned up")
        return "never"

    client = ScriptedChatClient(["first answer", [call("wait_forever", {})], "unused"])
    hosting = HostingApp([Agent(client, name="helper", tools=[wait_forever])])
    app = ConversationApp(hosting, stream)
    async with guarded(app) as server:
        body = {"model": "helper", "conversation": "c1", "input": "hello"}
        answer = await request_once(server.port, raw_post("/run", body))
        assert answer.endswith(b"first answer\r\n0\r\n\r\n")
        before = await hosting.conversations.get("helper", "c1")
        assert before is not None
        stored = json.dumps(before.to_dict(), sort_keys=True)
        assert "first answer" in stored
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(raw_post("/run", {**body, "input": "wait"}, close=False))
        await writer.drain()
        await read_response_head(reader)
        await inside.wait()
        writer.close()
        await writer.wait_closed()
        for _ in range(1000):
            if events:
                break
            await asyncio.sleep(0.01)
        # before the server shuts down (which would cancel it too)
        assert events == ["tool cleaned up"]
    after = await hosting.conversations.get("helper", "c1")
    assert after is not None
    assert json.dumps(after.to_dict(), sort_keys=True) == stored


async def read_response_head(reader: asyncio.StreamReader) -> bytes:
    return await reader.readuntil(b"\r\n\r\n")


async def test_a_stream_whose_reader_leaves_is_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HS-125: a client that drops a chat completions stream mid-way cancels the run
    (the model's stream is closed, not left running)."""
    journal: list[str] = []
    monkeypatch.setattr("tests.hosting._served.journal", journal.append)
    app = HostingApp([Agent(SlowModel(), name="slow")])
    async with guarded(app) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        body = {
            "model": "slow",
            "stream": True,
            "messages": [{"role": "user", "content": "go"}],
        }
        writer.write(raw_post("/v1/chat/completions", body, close=False))
        await writer.drain()
        await reader.readuntil(b"tick 1")
        writer.close()
        await writer.wait_closed()
        for _ in range(1000):
            if "cancelled" in journal:
                break
            await asyncio.sleep(0.01)
        assert journal == ["started", "cancelled"]


# ---- HS-126, HS-127 ----------------------------------------------------------------------


async def test_errors_carry_no_traceback_or_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """HS-126: an application that raises before answering gets the guard's 500 in
    OpenAI's shape, without the exception's text; the log names only its type."""
    secret = "sk-live-SECRET-42"

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError(f"upstream rejected key {secret}")

    caplog.set_level(logging.INFO, logger="minagent")
    async with guarded(app, token=TOKEN) as server:
        auth = f"authorization: Bearer {TOKEN}\r\n".encode()
        answer = await request_once(
            server.port, raw_post("/v1/chat/completions", CHAT, auth)
        )
    assert status_of(answer) == 500
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["code"] == "internal_error"
    assert secret.encode() not in answer
    assert b"Traceback" not in answer
    assert secret not in caplog.text
    assert TOKEN not in caplog.text
    assert "RuntimeError" in caplog.text


async def test_one_access_log_line_per_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """HS-127: each request gives one INFO line on `minagent.hosting.access` with
    method, path, status and duration, never the token or the query string."""
    caplog.set_level(logging.INFO, logger="minagent.hosting.access")
    async with guarded(echo_app(), token=TOKEN) as server:
        auth = f"authorization: Bearer {TOKEN}\r\n".encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(
            b"GET /v1/models?key=hidden-query HTTP/1.1\r\n"
            + auth
            + b"\r\n"
            + raw_post("/v1/chat/completions", CHAT, auth, close=False)
            + b"GET /nowhere HTTP/1.1\r\nconnection: close\r\n\r\n"
        )
        await writer.drain()
        statuses = [(await read_response(reader))[0] for _ in range(3)]
        writer.close()
    assert statuses == [200, 200, 401]
    lines = [
        r.getMessage() for r in caplog.records if r.name == "minagent.hosting.access"
    ]
    assert len(lines) == 3
    assert lines[0].startswith("GET /v1/models 200 ")
    assert lines[1].startswith("POST /v1/chat/completions 200 ")
    assert lines[2].startswith("GET /nowhere 401 ")
    assert all(line.split(" ")[3].endswith("s") for line in lines)
    assert TOKEN not in caplog.text
    assert "hidden-query" not in caplog.text


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "minagent.hosting.access"
    ]


async def test_a_send_that_fails_because_the_client_left_is_a_499(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """HS-125, HS-127: a `send()` that raises an OSError (the ASGI server's word for a
    client that is gone) counts as a disconnect: the guard sends nothing more and logs
    499 `client disconnected`, not an application error."""
    caplog.set_level(logging.INFO, logger="minagent")
    calls: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def receive() -> dict[str, Any]:
        if not calls:
            calls.append("body")
            return {"type": "http.request", "body": b""}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        calls.append(message["type"])
        raise ClientDisconnected("gone")

    await Guard(app)({"type": "http", "method": "POST", "path": "/run"}, receive, send)
    assert calls == ["body", "http.response.start"]
    assert access_lines(caplog)[0].startswith("POST /run 499 ")
    assert access_lines(caplog)[0].endswith("s (client disconnected)")
    assert "the application raised" not in caplog.text


async def test_after_the_client_left_receive_says_disconnect(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """HS-125: once the client is gone, every `receive()` of the application returns
    `http.disconnect` (the body it did not read is not handed over)."""
    caplog.set_level(logging.INFO, logger="minagent.hosting.access")
    seen: list[str] = []
    messages = [{"type": "http.disconnect"}, {"type": "http.request", "body": b"x"}]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        for _ in range(2):
            seen.append((await receive())["type"])

    async def receive() -> dict[str, Any]:
        return messages.pop()

    sent: list[Any] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await Guard(app)({"type": "http", "method": "GET", "path": "/"}, receive, send)
    assert seen == ["http.disconnect", "http.disconnect"]
    assert sent == []


async def test_an_application_that_raises_after_answering_or_cancels_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """HS-126, HS-127: an application that raises after its answer started gets no
    second answer from the guard (the log names the exception's type); one that ends
    cancelled without the guard cancelling it is logged `application cancelled` and the
    guard sends nothing."""
    caplog.set_level(logging.INFO, logger="minagent")

    async def raises_late(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise KeyError("secret-key-text")

    async def cancels_itself(scope: Any, receive: Any, send: Any) -> None:
        raise asyncio.CancelledError

    sent = await asgi(Guard(raises_late), {"path": "/late"})
    assert [m["type"] for m in sent] == ["http.response.start"]
    sent = await asgi(Guard(cancels_itself), {"path": "/cancelled"})
    assert sent == []
    lines = access_lines(caplog)
    assert lines[0].startswith("GET /late 200 ")
    assert lines[0].endswith("s (application raised KeyError)")
    assert lines[1].startswith("GET /cancelled 0 ")
    assert lines[1].endswith("s (application cancelled)")
    assert "secret-key-text" not in caplog.text
