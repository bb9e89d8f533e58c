"""Every failure path of the transport: a typed error, and the key nowhere in it (PV-24,
PV-35).

Malformed HTTP comes from a raw TCP server (bad status line, non-HTTP bytes, an
oversized or broken header, broken chunked encoding, a body sent one byte at a time);
HTTP-level failures from the loopback fake, which echoes the key wherever a server
could: in the body, URL-encoded, and in response headers. Each error is searched,
recursively, in its ``str``, ``repr``, ``args``, every attribute, its ``headers`` and
its ``__cause__``/``__context__`` chain.
"""

from __future__ import annotations

import functools
import json
import logging
import socket
import traceback
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web
from minagent_openai import OpenAIChatClient, OpenAIProtocolError

from minagent import (
    Message,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    StreamInterruptedError,
)

from .._support import loopback as _loopback
from ._fake_server import (
    SSE_HEADERS,
    FakeOpenAI,
    disconnect_after,
    raw,
    send_chunks,
    silence,
    transcript,
)

KEY = "sk-proj-TOP+SECRET/0123456789=abcdef"
ENCODED = quote(KEY, safe="")


# -- the search ---------------------------------------------------------------------------------


def find_secret(error: BaseException, secret: str = KEY) -> list[str]:
    """Every place under ``error`` where ``secret`` (or its URL-encoded form) shows:
    paths."""
    hits: list[str] = []
    seen: set[int] = set()
    forms = {secret, quote(secret, safe=""), quote(secret)}

    def text(value: object) -> str:
        try:
            return f"{value!s}\n{value!r}"
        except Exception as exc:
            return f"<{type(exc).__name__}>"

    def walk(value: object, path: str, depth: int) -> None:
        if id(value) in seen or depth > 8:
            return
        seen.add(id(value))
        if isinstance(value, str | bytes):
            data = value if isinstance(value, str) else value.decode("utf-8", "replace")
            if any(form in data for form in forms):
                hits.append(path)
            return
        if value is None or isinstance(value, int | float | bool):
            return
        if any(form in text(value) for form in forms):
            hits.append(f"{path} (str/repr)")
        if isinstance(value, BaseException):
            for name in ("__cause__", "__context__"):
                walk(getattr(value, name), f"{path}.{name}", depth + 1)
            walk(value.args, f"{path}.args", depth + 1)
            walk(getattr(value, "__notes__", None), f"{path}.__notes__", depth + 1)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, f"{path}[key]", depth + 1)
                walk(v, f"{path}[{k!r}]", depth + 1)
            return
        if isinstance(value, list | tuple | set | frozenset):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]", depth + 1)
            return
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict):
            for k, v in attrs.items():
                walk(v, f"{path}.{k}", depth + 1)
        for slot in getattr(type(value), "__slots__", ()):
            if isinstance(slot, str) and hasattr(value, slot):
                walk(getattr(value, slot), f"{path}.{slot}", depth + 1)

    walk(error, "error", 0)
    if isinstance(error, BaseException) and any(
        form in "".join(traceback.format_exception(error)) for form in forms
    ):
        hits.append("formatted traceback")
    return hits


def test_the_search_finds_what_it_looks_for() -> None:
    """The search itself can fail: a key in an attribute, a header, a chained cause."""
    plain = ValueError("nothing")
    assert find_secret(plain) == []
    nested = ProviderError("x", headers={"x-echo": KEY})
    assert find_secret(nested)
    chained = ProviderError("x")
    chained.__context__ = RuntimeError(f"Bearer {ENCODED}")
    assert find_secret(chained)

    class Holder:
        def __init__(self) -> None:
            self.request_info = {"headers": {"Authorization": f"Bearer {KEY}"}}

    hidden = ProviderError("x")
    hidden.__cause__ = ValueError(Holder())
    assert any("request_info" in hit for hit in find_secret(hidden))


# -- servers ------------------------------------------------------------------------------------


# the shared raw TCP server
RawServer = functools.partial(_loopback.RawServer, base_path="/v1")


def _body(text: str = "Hi") -> bytes:
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()


def _http(status_line: bytes, headers: bytes = b"", body: bytes = b"") -> bytes:
    return (
        status_line
        + b"\r\n"
        + headers
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )


MALFORMED = [
    pytest.param(b"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n", id="bad-status-line"),
    pytest.param(
        b"\x00\x01 not http at all " + KEY.encode() + b"\r\n\r\n",
        id="non-http-bytes-with-the-key",
    ),
    pytest.param(
        _http(b"HTTP/1.1 200 OK", b"X-Big: " + b"a" * 20000 + b"\r\n"),
        id="oversized-header",
    ),
    pytest.param(
        _http(b"HTTP/1.1 200 OK", b"X\x01Bad: " + KEY.encode() + b"\r\n"),
        id="broken-header",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        id="broken-chunked-body",
    ),
]


async def _no_sleep(_: float) -> None:
    return None


async def _call(client: OpenAIChatClient, stream: bool) -> Any:
    if stream:
        return [
            u async for u in client.get_response([Message("user", ["Hi"])], stream=True)
        ]
    return await client.get_response([Message("user", ["Hi"])])


async def _error_of(client: OpenAIChatClient, stream: bool) -> BaseException:
    try:
        await _call(client, stream)
    except Exception as exc:
        return exc
    raise AssertionError("no error was raised")


@pytest.mark.parametrize("answer", MALFORMED)
async def test_malformed_http_is_a_typed_retried_error_without_the_key(
    answer: bytes, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-35: bad status line, non-HTTP bytes, oversized/broken headers, broken
    chunking."""
    caplog.set_level(logging.DEBUG)
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with RawServer(answer) as server:
        client = OpenAIChatClient(
            "m", api_key=KEY, base_url=server.base_url, max_retries=1, sleep=sleep
        )
        async with client:
            error = await _error_of(client, stream)
    assert isinstance(error, ProviderConnectionError | StreamInterruptedError), repr(
        error
    )
    if isinstance(error, ProviderConnectionError):
        assert error.retryable
        assert len(sleeps) == 1
    assert error.__cause__ is None
    assert error.__context__ is None
    assert find_secret(error) == []
    assert all(KEY not in record.getMessage() for record in caplog.records)


async def test_a_body_sent_one_byte_at_a_time_hits_the_total_timeout() -> None:
    """OA-23, PV-35: total_timeout bounds an attempt although each read gets its byte in
    time."""
    answer = _http(
        b"HTTP/1.1 200 OK", b"Content-Type: application/json\r\n", _body("x" * 400)
    )
    async with RawServer(answer, trickle=0.005) as server:
        client = OpenAIChatClient(
            "m",
            api_key=KEY,
            base_url=server.base_url,
            timeout=5,
            total_timeout=0.3,
            max_retries=0,
        )
        async with client:
            error = await _error_of(client, stream=False)
    assert isinstance(error, ProviderTimeoutError), repr(error)
    assert "total_timeout=0.3" in str(error)
    assert find_secret(error) == []


async def test_a_stream_sent_one_byte_at_a_time_is_interrupted_by_the_total_timeout() -> (
    None
):
    """OA-23: after the first byte, the total timeout interrupts the stream (not
    retried)."""
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": "x" * 200}}]}
    sse = f"data: {json.dumps(chunk)}\n\n".encode() * 3
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
        % len(sse)
    )
    async with RawServer(head + sse, trickle=0.003) as server:
        client = OpenAIChatClient(
            "m", api_key=KEY, base_url=server.base_url, timeout=5, total_timeout=0.4
        )
        async with client:
            error = await _error_of(client, stream=True)
    assert isinstance(error, StreamInterruptedError), repr(error)
    assert "total_timeout=0.4" in str(error)
    assert find_secret(error) == []


# -- HTTP-level failures with a server that echoes the key ----------------------------------------


def _echo_everywhere(status: int) -> Callable[..., Awaitable[web.StreamResponse]]:
    async def handler(
        server: FakeOpenAI, request: web.Request, _: Any
    ) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        body = {
            "error": {
                "message": f"bad key {KEY} ({ENCODED}) from {auth}",
                "param": KEY,
                "code": KEY,
            }
        }
        headers = {
            "x-echo-auth": auth,
            "x-echo-key": KEY,
            "x-echo-encoded": ENCODED,
            "x-request-id": "req_1",
        }
        return web.json_response(body, status=status, headers=headers)

    return handler


def _sse_error_with_the_key() -> Callable[..., Awaitable[web.StreamResponse]]:
    async def handler(
        server: FakeOpenAI, request: web.Request, _: Any
    ) -> web.StreamResponse:
        event = {
            "error": {
                "message": f"key {KEY}",
                "type": KEY,
                "param": ENCODED,
                "code": KEY,
            }
        }
        return await send_chunks(
            request, f"data: {json.dumps(event)}\n\n".encode(), headers={"x-echo": KEY}
        )

    return handler


def _huge(stream: bool) -> Callable[..., Awaitable[web.StreamResponse]]:
    async def handler(
        server: FakeOpenAI, request: web.Request, _: Any
    ) -> web.StreamResponse:
        data = json.dumps({"echo": KEY, "pad": "x" * 5000}).encode()
        if request.headers.get("Accept") == "text/event-stream":
            return await send_chunks(
                request, b"data: " + data + b"\n\n", headers={"x-echo": KEY}
            )
        return web.Response(
            body=data, content_type="application/json", headers={"x-echo": KEY}
        )

    return handler


HTTP_FAILURES = [
    pytest.param(lambda: _echo_everywhere(401), id="401"),
    pytest.param(lambda: _echo_everywhere(408), id="408"),
    pytest.param(lambda: _echo_everywhere(429), id="429"),
    pytest.param(lambda: _echo_everywhere(500), id="500"),
    pytest.param(lambda: raw(200, f"<html>{KEY} {ENCODED}</html>"), id="2xx-not-json"),
    pytest.param(
        lambda: raw(200, json.dumps({"error": {"message": KEY, "code": KEY}})),
        id="2xx-error-object",
    ),
    pytest.param(lambda: raw(200, '{"a": [' * 5000), id="2xx-deeply-nested"),
    pytest.param(
        lambda: raw(200, '{"n": ' + "9" * 5000 + ', "k": "' + KEY + '"}'),
        id="2xx-huge-integer",
    ),
    pytest.param(_sse_error_with_the_key, id="stream-error-event"),
    pytest.param(lambda: _huge(True), id="over-the-size-limits"),
    pytest.param(
        lambda: disconnect_after(transcript("plain_text.sse"), 300, x_echo=KEY),
        id="disconnect",
    ),
    pytest.param(
        lambda: disconnect_after(b"", 0, x_echo=KEY), id="disconnect-before-first-byte"
    ),
    pytest.param(lambda: silence(after_headers=True), id="timeout-after-headers"),
    pytest.param(lambda: silence(), id="timeout"),
]


@pytest.mark.parametrize("make", HTTP_FAILURES)
async def test_every_failure_is_typed_and_carries_no_secret(
    make: Any, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-24, PV-35, issue 13 items 1 and 15: repr, args, attributes, headers, chain —
    no key."""
    caplog.set_level(logging.DEBUG)
    async with FakeOpenAI() as server:
        server.add(make(), make(), make())
        client = server.make_client(
            api_key=KEY,
            max_retries=2,
            sleep=_no_sleep,
            timeout=0.2,
            max_body_size=4096,
            max_line_size=4096,
        )
        async with client:
            error = await _error_of(client, stream)
            # the key is held in a Secret
            assert KEY not in repr(client) + repr(vars(client))
    assert isinstance(error, ProviderError), repr(error)
    assert error.__cause__ is None
    assert error.__context__ is None
    assert find_secret(error) == [], find_secret(error)
    assert all(
        KEY not in logging.Formatter().format(r) and ENCODED not in r.getMessage()
        for r in caplog.records
    )


async def test_408_keeps_status_message_and_request_id_and_is_retried() -> None:
    """PV-23 (issue 20 item 1): a 408 answer is a status error, not "no answer in
    time"."""
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    body = {
        "error": {"message": "the request took too long to arrive", "type": "timeout"}
    }
    answer = raw(408, json.dumps(body), headers={"x-request-id": "req_408"})
    async with FakeOpenAI() as server:
        server.add(answer, answer)
        async with server.make_client(max_retries=1, sleep=sleep) as client:
            with pytest.raises(ProviderTimeoutError) as info:
                await client.get_response([Message("user", ["Hi"])])
        assert len(server.requests()) == 2
    error = info.value
    assert error.status == 408
    assert error.provider_message == "the request took too long to arrive"
    assert error.request_id == "req_408"
    assert str(error) == (
        "openai: HTTP 408 Request Timeout: the request took too long to arrive "
        f"(POST {client.base_url}/chat/completions) (request id req_408)"
    )
    assert len(sleeps) == 1


async def test_the_key_in_a_connection_refused_error_and_base_url_credentials() -> None:
    """PV-24, PV-35: userinfo in base_url: shown as ***, redacted from errors, sent as
    Basic auth."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAIChatClient(
        "m",
        api_key="",
        base_url=f"http://user:{ENCODED}@127.0.0.1:{port}/v1",
        sleep=_no_sleep,
    )
    assert KEY not in repr(client)
    assert ENCODED not in repr(client)
    assert "user:***@127.0.0.1" in repr(client)
    async with client:
        error = await _error_of(client, stream=False)
    assert isinstance(error, ProviderConnectionError)
    assert f"127.0.0.1:{port}" in str(error)
    assert find_secret(error) == []
    with pytest.raises(ValueError, match="carries credentials") as info:
        OpenAIChatClient(
            "m", api_key="sk-other-key-123", base_url=f"http://user:{ENCODED}@host/v1"
        )
    with pytest.raises(ValueError, match="invalid port") as info:
        # an unencoded '/' in userinfo
        OpenAIChatClient("m", base_url=f"http://user:{KEY}@host/v1")
    assert find_secret(info.value) == []
    assert find_secret(info.value) == []


async def test_base_url_credentials_are_sent_as_basic_auth() -> None:
    """OA-20: user:password@ in base_url becomes an Authorization: Basic header."""
    import base64

    async with FakeOpenAI() as server:
        server.script_text("ok")
        url = server.base_url.replace("http://", f"http://user:{ENCODED}@")
        async with OpenAIChatClient("m", api_key="", base_url=url) as client:
            response = await client.get_response([Message("user", ["Hi"])])
        assert response.text == "ok"
        auth = server.headers[0]["Authorization"]
    assert auth == "Basic " + base64.b64encode(f"user:{KEY}".encode()).decode()


async def test_oversized_bodies_and_lines_are_protocol_errors() -> None:
    """PV-36: max_body_size bounds a 2xx body, max_line_size a stream line; typed, not
    retried."""
    async with FakeOpenAI() as server:
        server.add(_huge(False), _huge(True))
        async with server.make_client(
            max_body_size=1000, max_line_size=1000, sleep=_no_sleep
        ) as client:
            with pytest.raises(OpenAIProtocolError, match="max_body_size=1000"):
                await _call(client, stream=False)
            with pytest.raises(OpenAIProtocolError, match="max_line_size=1000"):
                await _call(client, stream=True)
        assert len(server.requests()) == 2  # neither was retried
    with pytest.raises(ValueError, match="max_body_size"):
        OpenAIChatClient("m", max_body_size=0)


async def test_a_declared_length_over_the_limit_fails_before_reading() -> None:
    """PV-36: a Content-Length above max_body_size is refused without reading the
    body."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{"
    async with (
        RawServer(answer) as server,
        OpenAIChatClient("m", base_url=server.base_url, max_body_size=100) as c,
    ):
        error = await _error_of(c, stream=False)
    assert isinstance(error, OpenAIProtocolError)
    assert "max_body_size=100" in str(error)


async def test_invalid_default_headers_are_refused_at_construction() -> None:
    """OA-20: a header with a line break is a ValueError, not a library error at send
    time."""
    with pytest.raises(ValueError, match="line break"):
        OpenAIChatClient("m", default_headers={"X-A": "1\r\nX-Injected: 2"})
    with pytest.raises(TypeError, match="must be str"):
        OpenAIChatClient("m", default_headers={"X-A": 1})  # type: ignore[dict-item]


async def test_sse_response_headers_stay_usable_after_redaction() -> None:
    """PV-35: redaction keeps non-secret headers (request id, retry hints) intact."""
    async with FakeOpenAI() as server:
        server.add(
            raw(
                429,
                "{}",
                headers={"retry-after-ms": "5", "x-request-id": "req_9", "x-echo": KEY},
            )
        )
        async with server.make_client(api_key=KEY, max_retries=0) as client:
            error = await _error_of(client, stream=False)
    assert isinstance(error, ProviderError)
    assert error.headers["retry-after-ms"] == "5"
    assert error.retry_after == 0.005
    assert error.headers["x-echo"] == "[redacted]"
    assert SSE_HEADERS  # the fake's stream headers are what the transport expects


@pytest.mark.parametrize("key", ["llama", "test", "ollama"])
async def test_placeholder_keys_leave_error_texts_and_urls_alone(key: str) -> None:
    """PV-24 (issue 20 item 4): a short placeholder key does not turn llama3 into
    [redacted]3."""
    body = {
        "error": {"message": 'model "llama3" not found at http://test-server/ollama/v1'}
    }
    async with FakeOpenAI() as server:
        server.add(raw(404, json.dumps(body), headers={"x-model": "llama3-test"}))
        async with server.make_client(api_key=key, max_retries=0) as client:
            error = await _error_of(client, stream=False)
            assert repr(client).count("[redacted]") == 0
            assert server.base_url in repr(client)
    assert isinstance(error, ProviderError)
    assert (
        error.provider_message
        == 'model "llama3" not found at http://test-server/ollama/v1'
    )
    assert error.headers["x-model"] == "llama3-test"
    assert "[redacted]" not in str(error)


def test_provider_error_redact_scrubs_every_attribute_and_the_chain() -> None:
    """PV-35: message, args, notes, nested plain data, headers; __cause__/__context__
    cut."""
    error = OpenAIProtocolError(f"bad {KEY}")
    error.request_id = f"req-{ENCODED}"
    error.headers = {
        "x-echo": KEY,
        "authorization": "Bearer anything",
        "x-request-id": "req_1",
    }
    error.body = {"nested": [{"deep": (f"Bearer {KEY}",)}], KEY: 1}  # type: ignore[attr-defined]
    error.add_note(f"note {KEY}")
    error.__cause__ = RuntimeError(KEY)
    error.__context__ = RuntimeError(KEY)
    assert find_secret(error)
    error.redact(KEY)
    assert find_secret(error) == []
    assert error.headers == {
        "x-echo": "[redacted]",
        "authorization": "[redacted]",
        "x-request-id": "req_1",
    }
    assert error.body == {"nested": [{"deep": ("Bearer [redacted]",)}], "[redacted]": 1}  # type: ignore[attr-defined]
    assert error.__notes__ == ["note [redacted]"]
    assert error.__suppress_context__
