"""The dev server on real loopback sockets, driven by raw HTTP/1.1 and hostile clients
(spec/hosting.md HS-7, HS-110 .. HS-118)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from minagent import Agent
from minagent.hosting import HostingApp
from minagent.hosting.server import (
    ClientDisconnected,
    LifespanFailed,
    Server,
    ServerLimits,
    run,
    serve,
    serve_until_signalled,
)

from ._served import EchoModel, read_response, request_once, status_of

Message = dict[str, Any]


async def until(condition: Callable[[], bool]) -> None:
    """Wait for the server's side to catch up (a condition, never a duration)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


@contextlib.asynccontextmanager
async def running(app: Any, **limits: Any) -> AsyncIterator[Server]:
    server = await serve(app, "127.0.0.1", 0, ServerLimits(**limits))
    try:
        yield server
    finally:
        await server.shutdown(0)


def echo_app() -> HostingApp:
    return HostingApp([Agent(EchoModel(), name="echo")])


def chat(stream: bool, text: str = "hi", *, close: bool = False) -> bytes:
    body = json.dumps(
        {
            "model": "echo",
            "messages": [{"role": "user", "content": text}],
            "stream": stream,
        }
    ).encode()
    extra = b"connection: close\r\n" if close else b""
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
        b"content-type: application/json\r\n" + extra + b"content-length: "
        b"%d\r\n\r\n" % len(body) + body
    )


GET_MODELS = b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n"
GET_CLOSE = b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"


class BodyApp:
    """Answers with the request body it read, or records what it saw."""

    def __init__(self, read: bool = True) -> None:
        self.read = read
        self.seen: list[Message] = []
        self.after: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        body = b""
        while self.read:
            message = await receive()
            self.seen.append(message)
            if message["type"] == "http.disconnect":
                self.after.append("disconnect while reading")
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def test_keep_alive_pipelining_and_close() -> None:
    """HS-110: one HTTP/1.1 connection carries several requests (a pipelined one
    included), answered with `connection: keep-alive`; `Connection: close` and HTTP/1.0
    get one response and the connection closes."""
    async with running(echo_app()) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(GET_MODELS + chat(False, "one"))
        await writer.drain()
        first = await read_response(reader)
        second = await read_response(reader)
        assert first[0] == second[0] == 200
        assert first[1]["connection"] == "keep-alive"
        assert json.loads(first[2])["data"][0]["id"] == "echo"
        assert json.loads(second[2])["choices"][0]["message"]["content"] == "echo: one"
        writer.write(chat(True, "two words", close=True))
        await writer.drain()
        status, headers, body = await read_response(reader)
        assert (status, headers["connection"]) == (200, "close")
        assert headers["transfer-encoding"] == "chunked"
        assert body.endswith(b"data: [DONE]\n\n")
        assert await reader.read() == b""
        writer.close()
        old = await request_once(server.port, b"GET /v1/models HTTP/1.0\r\n\r\n")
        assert status_of(old) == 200
        assert b"connection: close" in old


async def test_streamed_answers_are_chunked_and_head_has_no_body() -> None:
    """HS-110: a response without a length is sent chunked as the application sends
    it; a HEAD answer has no body."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for part in (b"ab", b"", b"cd"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"e"})

    async with running(app) as server:
        answer = await request_once(
            server.port, b"GET / HTTP/1.1\r\nconnection: close\r\n\r\n"
        )
        assert answer.endswith(b"\r\n\r\n2\r\nab\r\n2\r\ncd\r\n1\r\ne\r\n0\r\n\r\n")
        head = await request_once(
            server.port, b"HEAD / HTTP/1.1\r\nconnection: close\r\n\r\n"
        )
        assert status_of(head) == 200
        assert head.endswith(b"\r\n\r\n")
        assert b"transfer-encoding" not in head


async def test_a_failing_or_silent_application() -> None:
    """HS-110: an application that raises or returns before answering is a plain 500
    without the exception's text; one that raises after its answer started has the
    connection closed without the terminating chunk."""
    secret = "sk-TOP-SECRET"

    async def raises(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError(secret)

    async def silent(scope: Any, receive: Any, send: Any) -> None:
        return

    async def breaks(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send(
            {"type": "http.response.body", "body": b"partial", "more_body": True}
        )
        raise RuntimeError(secret)

    for app in (raises, silent):
        async with running(app) as server:
            answer = await request_once(server.port, GET_MODELS)
        assert status_of(answer) == 500
        assert answer.endswith(b"internal server error")
        assert secret.encode() not in answer
        assert b"Traceback" not in answer
    async with running(breaks) as server:
        answer = await request_once(server.port, GET_MODELS)
    assert b"7\r\npartial\r\n" in answer
    assert not answer.endswith(b"0\r\n\r\n")


async def test_request_bodies_by_length_and_chunked() -> None:
    """HS-111: bodies by Content-Length and chunked coding reach the application;
    `Expect: 100-continue` is answered; ambiguous or unknown framing is refused."""
    app = BodyApp()
    async with running(app) as server:
        answer = await request_once(
            server.port,
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            b"3;ext=1\r\nabc\r\n0\r\ntrailer: x\r\n\r\n",
        )
        assert status_of(answer) == 200
        assert answer.endswith(b"\r\n\r\nabc")
        answer = await request_once(
            server.port,
            b"POST / HTTP/1.1\r\ncontent-length: 5\r\nexpect: 100-continue\r\n"
            b"connection: close\r\n\r\nhello",
        )
        assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK")
        assert answer.endswith(b"hello")
        cases = {
            b"content-length: 3\r\ntransfer-encoding: chunked\r\n": 400,
            b"transfer-encoding: gzip\r\n": 501,
            b"content-length: 3\r\ncontent-length: 4\r\n": 400,
            b"content-length: -3\r\n": 400,
            b"expect: something\r\n": 417,
        }
        for headers, status in cases.items():
            answer = await request_once(
                server.port, b"POST / HTTP/1.1\r\n" + headers + b"\r\nabc"
            )
            assert status_of(answer) == status, headers
            assert b"connection: close" in answer


async def test_a_stalled_or_broken_body_is_a_disconnect() -> None:
    """HS-111: a body that stalls past `body_timeout` or has malformed chunks ends the
    exchange: the application receives `http.disconnect` and the connection closes."""
    for tail in (
        b"content-length: 10\r\n\r\nabc",
        b"transfer-encoding: chunked\r\n\r\nzz\r\n",
    ):
        app = BodyApp()
        async with running(app, body_timeout=0.2) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"POST / HTTP/1.1\r\n" + tail)
            await writer.drain()
            assert await reader.read() == b""
            writer.close()
        assert app.after == ["disconnect while reading"]


async def test_an_unread_body_is_skipped_when_small() -> None:
    """HS-111: a small body the application did not read is skipped and the connection
    kept; a large one closes the connection."""
    async with running(BodyApp(read=False)) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello" + GET_MODELS)
        await writer.drain()
        assert (await read_response(reader))[0] == 200
        assert (await read_response(reader))[0] == 200
        big = 200_000
        writer.write(b"POST / HTTP/1.1\r\ncontent-length: %d\r\n\r\n" % big)
        writer.write(b"x" * 1000)
        await writer.drain()
        assert (await read_response(reader))[0] == 200
        assert await reader.read() == b""
        writer.close()


async def test_a_client_that_leaves_is_reported_to_the_application() -> None:
    """HS-112: after the body, a client that closes its socket makes every
    `receive()` return `http.disconnect`, and `send()` then raises
    `ClientDisconnected` (an OSError)."""
    seen: list[Any] = []
    reading = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        seen.append((await receive())["type"])
        reading.set()
        seen.append((await receive())["type"])
        try:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        except ClientDisconnected as exc:
            seen.append(isinstance(exc, OSError))
        seen.append((await receive())["type"])

    async with running(app) as server:
        _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST / HTTP/1.1\r\ncontent-length: 2\r\n\r\nhi")
        await writer.drain()
        await reading.wait()
        writer.close()
        await writer.wait_closed()
    assert seen == ["http.request", "http.disconnect", True, "http.disconnect"]


async def test_idle_connections_are_evicted_at_the_cap() -> None:
    """HS-113: at the cap, a new connection evicts the longest-waiting idle one, so a
    real request gets through; when every connection is busy the newcomer gets 503."""
    gate = asyncio.Event()
    entered = asyncio.Semaphore(0)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        if scope["path"] == "/wait":
            entered.release()
            await gate.wait()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"2")],
            }
        )
        await send({"type": "http.response.body", "body": b"ok"})

    async with running(app, max_connections=3) as server:
        idle = []
        for _ in range(3):
            idle.append(await asyncio.open_connection("127.0.0.1", server.port))
            await until(lambda: server.connection_count == len(idle))
        answer = await request_once(
            server.port, b"GET / HTTP/1.1\r\nconnection: close\r\n\r\n"
        )
        assert status_of(answer) == 200
        assert await idle[0][0].read() == b""
        assert server.connection_count <= 3
        busy = []
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /wait HTTP/1.1\r\n\r\n")
            busy.append((reader, writer))
            await entered.acquire()
        refused = await request_once(server.port, GET_MODELS)
        assert status_of(refused) == 503
        assert b"retry-after: 1" in refused
        gate.set()
        for reader, writer in busy:
            assert (await read_response(reader))[0] == 200
            writer.close()
        for _reader, writer in idle:
            writer.close()


async def test_hostile_heads() -> None:
    """HS-114: an oversized head or too many headers is 431, a malformed one 400, an
    unknown version 505; each closes the connection."""
    async with running(
        BodyApp(read=False), max_head_bytes=1024, max_headers=10
    ) as server:
        cases = {
            b"GET / HTTP/1.1\r\nx: " + b"a" * 2000 + b"\r\n\r\n": 431,
            b"GET / HTTP/1.1\r\n" + b"x: y\r\n" * 11 + b"\r\n": 431,
            b"GET /\r\n\r\n": 400,
            b"GET / HTTP/1.1\r\nbad header\r\n\r\n": 400,
            b"GET / HTTP/1.1\r\n folded: x\r\n\r\n": 400,
            b"GET http://x/ HTTP/1.1\r\n\r\n": 400,
            b"GET / HTTP/2.0\r\n\r\n": 505,
        }
        for data, status in cases.items():
            answer = await request_once(server.port, data)
            assert status_of(answer) == status, data[:40]
            assert b"connection: close" in answer


async def test_a_slow_drip_head_is_408_and_idle_keep_alive_closes() -> None:
    """HS-114: a head still incomplete `head_timeout` after its first byte is answered
    408; a kept-alive connection that sends nothing is closed after
    `keep_alive_timeout`."""
    async with running(echo_app(), head_timeout=0.3, keep_alive_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        answer = b""

        async def drip() -> None:
            with contextlib.suppress(ConnectionError):
                for byte in b"GET /v1/models HTTP/1.1\r\nx-slow: " + b"a" * 1000:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(0.02)

        dripping = asyncio.create_task(drip())
        answer = await reader.read()
        dripping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await dripping
        writer.close()
        assert status_of(answer) == 408
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(GET_MODELS)
        assert (await read_response(reader))[0] == 200
        assert await reader.read() == b""
        writer.close()


async def test_shutdown_lets_requests_finish_then_cancels() -> None:
    """HS-115: shutdown stops listening and closes idle connections; a request in
    flight finishes within the grace (answered `connection: close`); one still running
    after the grace is cancelled."""
    gate = asyncio.Event()
    entered = asyncio.Event()
    events: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            raise ValueError("no lifespan")
        entered.set()
        try:
            await gate.wait()
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"4")],
            }
        )
        await send({"type": "http.response.body", "body": b"done"})
        events.append("answered")

    server = await serve(app, "127.0.0.1", 0)
    port = server.port
    _idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\n\r\n")
    await entered.wait()
    stopping = asyncio.create_task(server.shutdown(60))
    assert await _idle_reader.read() == b""
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", port)
    gate.set()
    status, headers, body = await read_response(reader)
    assert (status, headers["connection"], body) == (200, "close", b"done")
    await stopping
    assert events == ["answered"]
    writer.close()
    idle_writer.close()

    entered.clear()
    gate.clear()
    server = await serve(app, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET / HTTP/1.1\r\n\r\n")
    await entered.wait()
    await server.shutdown(0.1)
    assert events == ["answered", "cancelled"]
    assert await reader.read() == b""
    writer.close()


async def test_lifespan_runs_around_serving() -> None:
    """HS-116: lifespan startup completes before the server listens, shutdown after;
    each request sees a copy of the lifespan state; a failed startup raises and
    nothing listens; an application without lifespan is served without it."""
    log: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                log.append(message["type"])
                if message["type"] == "lifespan.startup":
                    scope["state"]["greeting"] = "hello"
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = scope["state"]["greeting"].encode()
        scope["state"]["greeting"] = "changed"
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async with running(app) as server:
        assert log == ["lifespan.startup"]
        for _ in range(2):
            answer = await request_once(server.port, GET_CLOSE)
            assert answer.endswith(b"hello")
    assert log == ["lifespan.startup", "lifespan.shutdown"]

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "no database"})

    with pytest.raises(LifespanFailed, match="no database"):
        await serve(failing, "127.0.0.1", 0)

    async with running(BodyApp(read=False)) as server:
        answer = await request_once(server.port, GET_CLOSE)
        assert status_of(answer) == 200


def test_limits_must_be_positive() -> None:
    """HS-117: a limit that is not positive is a ValueError naming it."""
    with pytest.raises(ValueError, match="max_connections"):
        ServerLimits(max_connections=0)
    with pytest.raises(ValueError, match="head_timeout"):
        ServerLimits(head_timeout=-1)


async def test_serve_returns_a_server_on_the_port_chosen() -> None:
    """HS-7: `serve` returns a started `Server`; `close` and `wait_closed` end it."""
    server = await serve(echo_app(), "127.0.0.1", 0)
    assert server.port > 0
    assert server.sockets
    answer = await request_once(server.port, GET_CLOSE)
    assert status_of(answer) == 200
    server.close()
    await server.wait_closed()
    assert server.connection_count == 0


async def test_a_large_body_over_the_cap_still_gets_its_413() -> None:
    """HS-111, HS-6: the application answers 413 without reading an 8 MB body; the
    server closes with a lingering close, so the SDK reads the 413 instead of a reset;
    a client waiting for `100 Continue` is not sent one after the final answer."""
    async with running(echo_app()) as server:
        client = openai.AsyncOpenAI(
            base_url=f"http://127.0.0.1:{server.port}/v1", api_key="x", max_retries=0
        )
        try:
            with pytest.raises(openai.APIStatusError) as caught:
                await client.chat.completions.create(
                    model="echo",
                    messages=[{"role": "user", "content": "x" * 8_000_000}],
                )
        finally:
            await client.close()
        assert caught.value.status_code == 413
        answer = await request_once(
            server.port,
            b"POST /v1/models HTTP/1.1\r\ncontent-length: 10\r\n"
            b"expect: 100-continue\r\n\r\n",
        )
        assert status_of(answer) == 404
        assert b"100 Continue" not in answer


@pytest.mark.parametrize("size", [100, 1_000_000])
async def test_a_client_that_reads_nothing_makes_send_fail(size: int) -> None:
    """HS-112: a client that sends a request and never reads: once the answer cannot
    be handed over within `send_timeout`, `send()` raises ClientDisconnected and the
    connection is dropped — also when the answer is many small chunks (an event
    stream), each of which fits in the transport's buffer when it is sent."""
    outcome: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        chunk = b"x" * size
        try:
            for _ in range(200_000_000 // size):
                await send(
                    {"type": "http.response.body", "body": chunk, "more_body": True}
                )
        except ClientDisconnected:
            outcome.append("send failed")
            raise

    async with running(app, send_timeout=0.3) as server:
        _reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.port, limit=1024
        )
        transport = writer.transport
        transport.pause_reading()
        writer.write(b"GET / HTTP/1.1\r\n\r\n")
        await until(lambda: bool(outcome))
        writer.close()
    assert outcome == ["send failed"]


async def test_a_client_that_leaves_mid_stream_makes_send_fail() -> None:
    """HS-112: a client that resets its connection while a response streams in small
    chunks: a later `send()` raises ClientDisconnected, and the connection is closed."""
    outcome: list[Any] = []
    streaming = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        streaming.set()
        try:
            # bounded: ~100 MB of 100-byte chunks, far past any socket buffer
            for _ in range(1_000_000):
                await send(
                    {
                        "type": "http.response.body",
                        "body": b"y" * 100,
                        "more_body": True,
                    }
                )
                await asyncio.sleep(0)
        except ClientDisconnected:
            outcome.append("send failed")
            raise
        outcome.append("every send succeeded")

    async with running(app) as server:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.setblocking(False)
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        await streaming.wait()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        await until(lambda: bool(outcome))
        await until(lambda: server.connection_count == 0)
    assert outcome == ["send failed"]


async def test_the_application_can_close_and_bodiless_statuses_have_no_body() -> None:
    """HS-110: a response saying `connection: close` ends the connection; a 204 has
    neither a body nor chunked framing and keeps the connection."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        if scope["path"] == "/close":
            headers = [(b"connection", b"close"), (b"content-length", b"2")]
            await send(
                {"type": "http.response.start", "status": 200, "headers": headers}
            )
            await send({"type": "http.response.body", "body": b"ok"})
            return
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async with running(app) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /empty HTTP/1.1\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 204 No Content")
        assert b"transfer-encoding" not in head
        assert b"connection: keep-alive" in head
        writer.write(b"GET /close HTTP/1.1\r\n\r\n")
        status, headers, body = await read_response(reader)
        assert (status, headers["connection"], body) == (200, "close", b"ok")
        assert await reader.read() == b""
        writer.close()


async def test_the_scope_carries_the_request() -> None:
    """HS-110: the scope's path is percent-decoded text, raw_path and query_string
    are as sent, header names are lower-cased, client and server are the peers."""
    scopes: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        scopes.append(scope)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async with running(app) as server:
        port = server.port
        answer = await request_once(
            port,
            b"GET /caf%C3%A9/a%20b?x=1&y=%C3%A9 HTTP/1.1\r\nX-Thing: Value\r\n"
            b"connection: close\r\n\r\n",
        )
    assert status_of(answer) == 204
    scope = scopes[0]
    assert scope["path"] == "/café/a b"
    assert scope["raw_path"] == b"/caf%C3%A9/a%20b"
    assert scope["query_string"] == b"x=1&y=%C3%A9"
    assert (b"x-thing", b"Value") in scope["headers"]
    assert scope["client"][0] == "127.0.0.1"
    assert scope["server"] == ("127.0.0.1", port)
    assert (scope["method"], scope["http_version"]) == ("GET", "1.1")


async def test_sends_out_of_order_or_malformed_raise_in_the_application() -> None:
    """HS-118: a second `http.response.start`, a body before the start or after the
    end, an unknown message type, a response header holding CR, LF or NUL and a body
    longer than its `content-length` raise in `send()`; the application raising counts
    as HS-110 says (500 before the answer started, a closed connection after)."""
    raised: list[str] = []
    start = {"type": "http.response.start", "status": 200, "headers": []}
    end = {"type": "http.response.body", "body": b""}
    plans: dict[str, list[Message]] = {
        "/twice": [start, start],
        "/early": [end],
        "/after": [start, end, end],
        "/kind": [{"type": "http.response.trailers"}],
        "/header": [{**start, "headers": [(b"x-a", b"1\r\nx-b: 2")]}],
        "/long": [
            {**start, "headers": [(b"content-length", b"2")]},
            {"type": "http.response.body", "body": b"abc"},
        ],
    }

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        try:
            for message in plans[scope["path"]]:
                await send(message)
        except (RuntimeError, ValueError) as exc:
            raised.append(f"{scope['path']} {type(exc).__name__}")
            raise

    async with running(app) as server:
        for path in plans:
            answer = await request_once(
                server.port, b"GET " + path.encode() + b" HTTP/1.1\r\n\r\n"
            )
            if path in ("/early", "/kind", "/header"):
                assert status_of(answer) == 500, path
                assert answer.endswith(b"internal server error")
            elif path == "/after":
                # the answer was complete; the connection closes after it
                assert answer.endswith(b"\r\n\r\n0\r\n\r\n")
            else:
                assert status_of(answer) == 200, path
                assert not answer.endswith(b"0\r\n\r\n")
    assert raised == [
        "/twice RuntimeError",
        "/early RuntimeError",
        "/after RuntimeError",
        "/kind ValueError",
        "/header ValueError",
        "/long RuntimeError",
    ]


async def test_response_framing_is_the_servers() -> None:
    """HS-110, HS-118: the server frames the response itself: the application's
    `transfer-encoding` and `connection: keep-alive` headers are replaced by its own; a
    status without a standard reason phrase is sent as `Unknown`; an HTTP/1.0 answer
    without a length is delimited by the close; an answer shorter than its
    `content-length` closes the connection."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        if scope["path"] == "/short":
            headers = [(b"content-length", b"10")]
        else:
            headers = [(b"transfer-encoding", b"gzip"), (b"connection", b"keep-alive")]
        await send({"type": "http.response.start", "status": 599, "headers": headers})
        await send({"type": "http.response.body", "body": b"abc"})

    async with running(app) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET / HTTP/1.1\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 599 Unknown\r\n")
        assert head.count(b"transfer-encoding") == head.count(b"connection") == 1
        assert b"transfer-encoding: chunked" in head
        assert b"connection: keep-alive" in head
        assert await reader.readuntil(b"0\r\n\r\n") == b"3\r\nabc\r\n0\r\n\r\n"
        writer.write(b"GET /short HTTP/1.1\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"connection: keep-alive" in head
        assert await reader.read() == b"abc"
        writer.close()
        old = await request_once(server.port, b"GET / HTTP/1.0\r\n\r\n")
        assert b"transfer-encoding" not in old
        assert b"connection: close" in old
        assert old.endswith(b"\r\n\r\nabc")


async def test_bodies_that_arrive_in_pieces() -> None:
    """HS-111: a chunked body whose chunks arrive after the head reaches the
    application; an unread small body whose rest arrives after the answer is skipped
    and the connection kept; a body that ends early (the client half-closes) is a
    disconnect, also while it is being skipped."""
    app = BodyApp()
    async with running(app) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n")
        await until(lambda: any(c.state == "busy" for c in server._connections))
        for part in (b"3\r", b"\nab", b"c\r\n0\r\n\r\n"):
            writer.write(part)
            await writer.drain()
        assert await read_response(reader) == (
            200,
            {"content-length": "3", "connection": "keep-alive"},
            b"abc",
        )
        writer.write(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nabc")
        writer.write_eof()
        assert await reader.read() == b""
        writer.close()
    assert app.after == ["disconnect while reading"]

    async with running(BodyApp(read=False)) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nabc")
        assert (await read_response(reader))[0] == 200
        writer.write(b"defghij" + GET_MODELS)
        assert (await read_response(reader))[0] == 200
        writer.write(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nabc")
        writer.write_eof()
        assert (await read_response(reader))[0] == 200
        assert await reader.read() == b""
        writer.close()


async def test_malformed_chunks_are_a_disconnect() -> None:
    """HS-111: a chunk without its CRLF, an empty or over-long chunk size and a chunk
    size line that never ends are malformed: the application receives
    `http.disconnect` and the connection closes."""
    for body in (b"3\r\nabcX\r\n", b"\r\n", b"1" * 16 + b"\r\n", b"1" * 5000):
        app = BodyApp()
        async with running(app) as server:
            answer = await request_once(
                server.port,
                b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n" + body,
            )
        assert answer == b""
        assert app.after == ["disconnect while reading"], body[:20]


async def test_heads_before_and_beyond_a_request() -> None:
    """HS-114: empty lines before a request line are ignored; a head that passes
    `max_head_bytes` before it ends is 431, one holding a NUL 400; a client that closes
    in the middle of a head gets no answer."""
    async with running(BodyApp(read=False), max_head_bytes=1024) as server:
        answer = await request_once(server.port, b"\r\n\r\n" + GET_CLOSE)
        assert status_of(answer) == 200
        answer = await request_once(server.port, b"GET / HTTP/1.1\r\nx: " + b"a" * 2000)
        assert status_of(answer) == 431
        answer = await request_once(server.port, b"GET / HTTP/1.1\r\nx: a\0b\r\n\r\n")
        assert status_of(answer) == 400
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET / HTTP/1.1\r\nx: a")
        writer.write_eof()
        assert await reader.read() == b""
        writer.close()


async def test_bytes_sent_while_busy_are_kept_up_to_the_head_cap() -> None:
    """HS-110, HS-112, HS-114: a request sent while the previous one is answered is
    kept and answered next; bytes past `max_head_bytes` that never end a head are 431."""
    gate = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        if scope["path"] == "/wait":
            await gate.wait()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"2")],
            }
        )
        await send({"type": "http.response.body", "body": b"ok"})

    async with running(app, max_head_bytes=1024) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /wait HTTP/1.1\r\n\r\n")
        await until(lambda: any(c.state == "busy" for c in server._connections))
        (connection,) = server._connections
        writer.write(GET_MODELS)
        await until(lambda: bytes(connection.buffer) == GET_MODELS)
        writer.write(b"GET /wait HTTP/1.1\r\nx: " + b"a" * 2000)
        await until(lambda: len(connection.buffer) > 1024)
        gate.set()
        assert (await read_response(reader))[:2] == (
            200,
            {"content-length": "2", "connection": "keep-alive"},
        )
        assert (await read_response(reader))[0] == 200
        assert status_of(await reader.read()) == 431
        writer.close()


async def test_lifespan_around_a_failed_bind_and_a_failed_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """HS-116: when the address cannot be bound, `start` raises and the lifespan is
    shut down again; a `lifespan.shutdown.failed` answer is logged; a lifespan task
    still running after its shutdown answer is cancelled."""
    log: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            raise ValueError("lifespan only")
        try:
            while True:
                message = await receive()
                log.append(message["type"])
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.failed", "message": "x"})
        except asyncio.CancelledError:
            log.append("cancelled")
            raise

    async with running(app) as taken:
        with pytest.raises(OSError, match="in use"):
            await serve(app, "127.0.0.1", taken.port)
        assert log == [
            "lifespan.startup",
            "lifespan.startup",
            "lifespan.shutdown",
            "cancelled",
        ]
    assert log[4:] == ["lifespan.shutdown", "cancelled"]
    assert "lifespan shutdown failed" in caplog.text


async def test_a_server_never_started_closes_quietly() -> None:
    """HS-7: `close()` and `shutdown()` of a server that was never started do nothing
    (no lifespan event reaches the application); a second shutdown does nothing."""
    app = BodyApp(read=False)
    server = Server(app)
    server.close()
    await server.shutdown()
    assert (server.sockets, server.connection_count, app.seen) == ((), 0, [])
    started = await serve(app, "127.0.0.1", 0)
    await started.shutdown(0)
    await started.shutdown(0)
    assert started.sockets == ()


async def test_shutdown_waits_for_a_refused_connection() -> None:
    """HS-113, HS-115: a newcomer refused with 503 at the cap is closed before
    shutdown returns, even when it neither reads nor closes."""
    gate = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        await gate.wait()

    server = await serve(app, "127.0.0.1", 0, ServerLimits(max_connections=1))
    busy_reader, busy_writer = await asyncio.open_connection("127.0.0.1", server.port)
    busy_writer.write(GET_MODELS)
    await until(lambda: any(c.state == "busy" for c in server._connections))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(GET_MODELS)
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ")
    await server.shutdown(0)
    assert await reader.read() == b"server busy"
    assert await busy_reader.read() == b""
    for closing in (writer, busy_writer):
        closing.close()


async def test_a_client_that_resets_mid_head_gets_no_answer() -> None:
    """HS-114: a client that resets its connection in the middle of a head is closed
    without an answer; the server goes on serving."""
    async with running(echo_app()) as server:
        _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        await until(lambda: server.connection_count == 1)
        writer.write(b"GET / HTTP/1.1\r\nx: a")
        await writer.drain()
        (connection,) = server._connections
        await until(lambda: connection.state == "head")
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        await until(lambda: server.connection_count == 0)
        assert status_of(await request_once(server.port, GET_CLOSE)) == 200
        assert connection.linger is False


def test_run_serves_until_sigterm() -> None:
    """HS-7, HS-115: `run` serves in a new event loop until SIGTERM, then shuts down
    and returns."""
    answers: list[bytes] = []

    def ready(server: Server) -> None:
        async def client() -> None:
            # SIGTERM whatever the request does: a failed request fails the test below
            # instead of leaving the server running
            try:
                answers.append(
                    await asyncio.wait_for(request_once(server.port, GET_CLOSE), 60)
                )
            finally:
                os.kill(os.getpid(), signal.SIGTERM)

        asyncio.get_running_loop().create_task(client())

    run(echo_app(), "127.0.0.1", 0, ready=ready)
    assert len(answers) == 1
    assert status_of(answers[0]) == 200


async def test_serve_until_signalled_without_ready() -> None:
    """HS-115: `serve_until_signalled` without a `ready` callback serves until SIGINT,
    then returns and no longer listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serving = asyncio.create_task(serve_until_signalled(echo_app(), "127.0.0.1", port))
    answer = b""
    while not answer:
        try:
            answer = await request_once(port, GET_CLOSE)
        except ConnectionRefusedError:
            await asyncio.sleep(0.01)
    assert status_of(answer) == 200
    os.kill(os.getpid(), signal.SIGINT)
    await serving
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_a_cancel_that_is_not_the_servers_goes_on() -> None:
    """HS-115: a connection's task cancelled by someone other than the server's
    shutdown ends cancelled (the cancel is not swallowed) and the connection closes."""
    entered = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError("http only")
        entered.set()
        await asyncio.Event().wait()

    async with running(app) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(GET_MODELS)
        await entered.wait()
        (connection,) = server._connections
        connection.task.cancel()
        await asyncio.wait({connection.task})
        assert connection.task.cancelled()
        assert server.connection_count == 0
        assert await reader.read() == b""
        writer.close()


async def test_shutdown_lets_an_unread_body_arrive_then_closes() -> None:
    """HS-111, HS-115: a shutdown while the server skips a small body the application
    did not read lets the body arrive within the grace, then closes the connection
    instead of waiting for a next request."""
    async with running(BodyApp(read=False)) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nabc")
        status, headers, _body = await read_response(reader)
        assert (status, headers["connection"]) == (200, "keep-alive")
        (connection,) = server._connections
        assert connection.state == "busy"
        stopping = asyncio.create_task(server.shutdown(60))
        await until(lambda: server.closing)
        writer.write(b"defghij")
        assert await reader.read() == b""
        await stopping
        assert not connection.stopping
        writer.close()


async def test_shutdown_closes_a_connection_that_lingers() -> None:
    """HS-115, HS-111: a connection lingering after its final answer (a large body left
    unread, the client still connected) is closed by shutdown: its socket is closed
    (not left open, leaking its descriptor)."""
    server = await serve(BodyApp(read=False), "127.0.0.1", 0, ServerLimits())
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"POST / HTTP/1.1\r\ncontent-length: 200000\r\n\r\n" + b"x" * 1000)
    await writer.drain()
    assert (await read_response(reader))[0] == 200
    # the client neither closes nor sends the rest: the server lingers on its side
    [connection] = server._connections
    transport = connection.writer.transport
    await asyncio.wait_for(server.shutdown(0), 10)
    assert transport.is_closing()
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
