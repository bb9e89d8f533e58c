"""The shared transport's rules, tested once (spec/providers.md, "Transport contract").

Every test drives `HTTPChatClient` through the toy provider of ``_toy``, and most run
through three transports: the in-memory `MockTransport`, and the aiohttp transport and
the standard library's `StdlibTransport` against one real loopback server (PV-41: the
same rules hold for both). A plugin's own tests keep its codec and its end-to-end
checks; what is proven here holds for every plugin, since every plugin sends through
this client.
"""

from __future__ import annotations

import asyncio
import calendar
import json
import logging
import socket
from typing import Any
from urllib.parse import quote

import pytest

from minagent import (
    AuthenticationError,
    Message,
    NotFoundError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from minagent.providers import RetryPolicy, StdlibTransport, Timeouts, TransportError
from minagent.providers.errors import server_delay

from .._support.loopback import RawServer
from ._toy import (
    TEXT_LINES,
    Answer,
    ToyClient,
    ToyProtocolError,
    ToyStreamError,
    Wire,
    refusal,
    text,
)

BOTH = pytest.mark.parametrize("kind", ["memory", "aiohttp", "stdlib"])
NETWORK = pytest.mark.parametrize("network", ["aiohttp", "stdlib"])
KEY = "sk-toy-TOP+SECRET/0123456789=abcdef"
ENCODED = quote(KEY, safe="")
NDJSON = {"content-type": "application/x-ndjson"}


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class Half:
    def random(self) -> float:
        return 0.5


async def ask(
    client: ToyClient, stream: bool, texts: list[str] | None = None, **kwargs: Any
) -> Any:
    if not stream:
        return await client.get_response([Message("user", ["Hi"])], **kwargs)
    result = client.get_response([Message("user", ["Hi"])], stream=True, **kwargs)
    async for update in result:
        if texts is not None:
            texts.append(update.text)
    return await result.get_final_response()


async def failure(
    client: ToyClient, stream: bool, texts: list[str] | None = None
) -> BaseException:
    try:
        await ask(client, stream, texts)
    except Exception as exc:
        return exc
    raise AssertionError("no error was raised")


class HeaderKeyClient(ToyClient):
    """A connection that sends its key in a header of its own, so the URL may carry
    credentials."""

    def _auth_headers(self) -> dict[str, str]:
        return {"X-Key": self._api_key.reveal()}


def secrets_in(error: BaseException, *secrets: str) -> list[str]:
    """Where under ``error`` (text, args, attributes, headers, chain) a secret or its
    URL form shows."""
    forms = {f for s in secrets for f in (s, quote(s, safe=""))}
    hits: list[str] = []

    def walk(value: object, path: str, depth: int) -> None:
        if depth > 6 or value is None:
            return
        if isinstance(value, str):
            hits.extend(path for f in forms if f in value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k, f"{path}[key]", depth + 1)
                walk(v, f"{path}[{k!r}]", depth + 1)
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]", depth + 1)
        elif isinstance(value, BaseException):
            walk(str(value), f"str({path})", depth + 1)
            walk(repr(value), f"repr({path})", depth + 1)
            walk(value.args, f"{path}.args", depth + 1)
            walk(vars(value), f"{path}.__dict__", depth + 1)
            walk(value.__cause__, f"{path}.__cause__", depth + 1)
            walk(value.__context__, f"{path}.__context__", depth + 1)

    walk(error, "error", 0)
    return hits


# =============================================================================================
# The request (PV-38)


@BOTH
async def test_the_request(kind: str, stream: bool) -> None:
    """PV-38: POST {base path}{path}?{base query}&{default_query} with the codec's
    headers, the connection's, default_headers and the credentials, later ones winning,
    and the codec's body; the client's timeouts reach the transport."""
    async with Wire(kind) as wire:
        wire.add(text(stream))
        url = f"{wire.client().base_url}?tenant=t&v=1"
        headers = {"X-Team": "a", "User-Agent": "mine/2"}
        client = wire.client(
            api_key=KEY, base_url=url, default_headers=headers, default_query={"v": "2"}
        )
        await ask(client, stream)
        [headers] = wire.headers
        [body] = wire.requests
        assert wire.paths == [("/v1/chat", [("tenant", "t"), ("v", "2")])]
    assert body == {"model": "toy-1", "messages": ["Hi"], "stream": stream}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["accept"] == (
        "application/x-ndjson" if stream else "application/json"
    )
    assert headers["content-type"] == "application/json"
    assert headers["x-toy"] == "1"
    assert headers["x-team"] == "a"
    # default_headers replace the connection's own
    assert headers["user-agent"] == "mine/2"
    if kind == "memory":
        assert wire.mock.requests[0].method == "POST"
        assert wire.mock.requests[0].timeouts == Timeouts(
            connect=60.0, read=60.0, total=None
        )


@BOTH
async def test_credentials_in_the_base_url(kind: str) -> None:
    """PV-24, PV-38: user:password@ in the base URL is sent as Basic authentication and
    shown as ***; with a key sent as Authorization as well it is a ValueError naming
    neither secret."""
    async with Wire(kind) as wire:
        wire.add(text(False))
        plain = wire.client()
        url = plain.base_url.replace("://", f"://ann:{ENCODED}@")
        client = wire.client(base_url=url)
        assert "ann:***@" in client.base_url
        assert KEY not in repr(client)
        assert ENCODED not in repr(client)
        await ask(client, False)
        [headers] = wire.headers
    assert headers["authorization"].startswith("Basic ")
    with pytest.raises(ValueError, match="carries credentials") as info:
        ToyClient(transport=wire.mock, base_url=url, api_key="sk-another-key-123")
    assert secrets_in(info.value, KEY) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "ftp://toy.invalid"}, "http"),
        ({"base_url": "toy.invalid:80"}, "http"),
        ({"base_url": "http://toy.invalid:x/v1"}, "invalid port"),
        ({"timeout": 0}, "timeout"),
        ({"total_timeout": -1}, "total_timeout"),
        ({"max_body_size": 0}, "max_body_size"),
        ({"max_line_size": 0}, "max_line_size"),
        ({"default_headers": {"X-A": "1\r\nX-B: 2"}}, "line break"),
        ({"default_headers": {"X-A": 1}}, "must be str"),
        ({"default_query": {"a": 1}}, "must be str"),
    ],
)
def test_configuration_errors(kwargs: dict[str, Any], match: str) -> None:
    """PV-38: a base URL that is not http(s), a bad port, a timeout <= 0, a size < 1 and
    a header or query that is not a str or holds a line break fail when the client is
    built."""
    kwargs.setdefault("base_url", "http://toy.invalid/v1")
    from minagent.testing import MockTransport

    with pytest.raises((ValueError, TypeError), match=match):
        ToyClient(transport=MockTransport.answering(), **kwargs)
    assert (
        ToyClient(
            transport=MockTransport.answering(), base_url="http://h", max_line_size=None
        ).max_line_size
        is None
    )


# =============================================================================================
# Answers (PV-38, PV-30, PV-23, PV-11)


@BOTH
async def test_a_text_answer(kind: str, stream: bool) -> None:
    """PV-38, PV-30: a complete answer, its request id kept when the client keeps one
    (OA-29), and the response given back cleanly (released), not closed."""
    async with Wire(kind) as wire:
        wire.add(text(stream, **{"x-request-id": "req_1"}))
        client = wire.client()
        texts: list[str] = []
        response = await ask(client, stream, texts)
        assert await wire.held(client) == 0
    assert response.text == "Hello"
    assert response.finish_reason == "stop"
    assert response.additional_properties["request_id"] == "req_1"
    if stream:
        assert texts == ["Hel", "lo", ""]
    if kind == "memory":
        assert [(r.released, r.closed) for r in wire.mock.responses] == [(True, False)]


@BOTH
async def test_a_json_answer_to_a_stream(kind: str) -> None:
    """PV-38, PV-14: a streaming request answered with a JSON body is decoded whole and
    yielded as updates; an error in such a body is the codec's error, not retried."""
    async with Wire(kind) as wire:
        wire.add(text(False), refusal(200, "nope"))
        client = wire.client()
        response = await ask(client, True)
        with pytest.raises(ToyStreamError, match="nope"):
            await ask(client, True)
        assert len(wire.requests) == 2
    assert response.text == "Hello"


@BOTH
async def test_status_errors(kind: str, stream: bool) -> None:
    """PV-23, PV-24, PV-11, PV-45: the codec's message and request id, the class of the
    status, the text of PV-24 with the method and URL the request went to (a 404 with
    the connection's hint), and the lower-case headers; a 401 without a key says which
    variable to set."""
    async with Wire(kind) as wire:
        wire.add(
            refusal(404, "no such model", **{"x-request-id": "req_404"}),
            refusal(401, "who are you"),
        )
        client = wire.client(max_retries=0)
        missing = await failure(client, stream)
        anonymous = await failure(client, stream)
        assert await wire.held(client) == 0
    assert isinstance(missing, NotFoundError)
    url = client.base_url + "/chat"
    assert (
        str(missing)
        == f"toy: HTTP 404 Not Found: no such model (POST {url}) (request id req_404)"
    )
    assert (missing.status, missing.provider_message, missing.request_id) == (
        404,
        "no such model",
        "req_404",
    )
    assert missing.headers["x-request-id"] == "req_404"
    assert isinstance(anonymous, AuthenticationError)
    assert "no API key was configured: pass api_key= or set TOY_API_KEY" in str(
        anonymous
    )


@BOTH
async def test_an_error_body_that_breaks(kind: str) -> None:
    """PV-11, PV-23: a non-2xx answer whose body breaks is still the status's error; its
    message says the body could not be read."""
    async with Wire(kind) as wire:
        wire.add(
            Answer(503, (b"partial",), {"content-type": "text/plain"}, then="drop")
        )
        client = wire.client(max_retries=0)
        error = await failure(client, False)
        assert await wire.held(client) == 0
    assert isinstance(error, ServerError)
    assert "(the error body could not be read: " in str(error)


@BOTH
async def test_an_error_body_is_read_up_to_64_kib(kind: str) -> None:
    """PV-11, PV-36: at most the first 64 KiB of a non-2xx body is read for its
    message."""
    async with Wire(kind) as wire:
        wire.add(
            Answer(500, (b"x" * 40_000, b"y" * 40_000), {"content-type": "text/plain"})
        )
        client = wire.client(max_retries=0)
        assert isinstance(await failure(client, False), ServerError)
    [body] = client.codec.error_bodies
    assert body == b"x" * 40_000 + b"y" * (64 * 1024 - 40_000)


# =============================================================================================
# Retries (PV-25 .. PV-27, PV-29, PV-32)


@BOTH
async def test_retries_wait_what_the_server_asks(
    kind: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-25, PV-26, PV-27, PV-32: a 429 waits its retry-after, a 503 full-jitter
    backoff, both through the client's sleep and rng; each retry is logged at INFO by
    the plugin's logger, redacted."""
    caplog.set_level(logging.DEBUG)
    sleeps = Sleeps()
    async with Wire(kind) as wire:
        wire.add(
            refusal(429, f"slow down {KEY}", **{"retry-after": "2"}),
            refusal(503, "busy"),
            text(stream),
        )
        client = wire.client(api_key=KEY, sleep=sleeps, rng=Half())
        response = await ask(client, stream)
        assert len(wire.requests) == 3
    assert response.text == "Hello"
    assert sleeps.calls == [2.0, 0.5]
    retries = [
        r for r in caplog.records if r.name == "tests" and "retry" in r.getMessage()
    ]
    assert [r.levelno for r in retries] == [logging.INFO, logging.INFO]
    assert "retry 1 of 2" in retries[0].getMessage()
    assert all(KEY not in r.getMessage() for r in caplog.records)


def test_retry_after_http_date_without_zone_is_gmt() -> None:
    """PV-27: a Retry-After HTTP date is counted from now; a date with no zone (-0000)
    is GMT."""
    now = calendar.timegm((2015, 10, 21, 7, 27, 50, 0, 0, 0))
    assert (
        server_delay({"Retry-After": "Wed, 21 Oct 2015 07:28:00 -0000"}, now=now)
        == 10.0
    )
    assert (
        server_delay({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=now) == 10.0
    )


@BOTH
async def test_the_policy_decides(kind: str) -> None:
    """PV-25, PV-32: x-should-retry overrides the status; retry_policy wins over
    max_retries; after the last retry the last error is raised."""
    async with Wire(kind) as wire:
        wire.add(refusal(400, "flaky", **{"x-should-retry": "true"}), text(False))
        wire.add(refusal(503, "final", **{"x-should-retry": "false"}))
        wire.add(refusal(429, "first"), refusal(429, "last"))
        client = wire.client(
            sleep=Sleeps(), max_retries=5, retry_policy=RetryPolicy(max_retries=1)
        )
        assert (await ask(client, False)).text == "Hello"
        with pytest.raises(ServerError, match="final"):
            await ask(client, False)
        with pytest.raises(RateLimitError, match="last"):
            await ask(client, False)
        assert len(wire.requests) == 5
    assert client.retry_policy.max_retries == 1


@BOTH
async def test_before_the_first_byte_everything_is_retried(kind: str) -> None:
    """PV-29: a 2xx stream that ends, or breaks, before its first byte is a
    ProviderConnectionError and is retried; the stream that follows is read."""
    sleeps = Sleeps()
    async with Wire(kind) as wire:
        wire.add(
            Answer(headers=NDJSON), Answer(headers=NDJSON, then="drop"), text(True)
        )
        client = wire.client(sleep=sleeps)
        response = await ask(client, True)
        assert len(wire.requests) == 3
        assert await wire.held(client) == 0
    assert response.text == "Hello"
    assert len(sleeps.calls) == 2
    wire = Wire("memory").add(Answer(headers=NDJSON))
    error = await failure(wire.client(max_retries=0), True)
    assert isinstance(error, ProviderConnectionError)
    assert "the stream ended before its first byte" in str(error)


@BOTH
async def test_after_the_first_byte_nothing_is_retried(kind: str) -> None:
    """PV-29, PV-14: the updates decoded before a broken connection are delivered, then
    a StreamInterruptedError with the request id, not retryable and not retried."""
    sleeps = Sleeps()
    async with Wire(kind) as wire:
        wire.add(
            Answer(
                chunks=TEXT_LINES[:2],
                headers={**NDJSON, "x-request-id": "req_cut"},
                then="drop",
            )
        )
        client = wire.client(sleep=sleeps)
        texts: list[str] = []
        error = await failure(client, True, texts)
        assert len(wire.requests) == 1
        assert await wire.held(client) == 0
    assert isinstance(error, StreamInterruptedError)
    assert texts == ["Hel", "lo"]
    assert (error.retryable, error.status, error.request_id) == (False, None, "req_cut")
    assert str(error).startswith("toy: the stream was interrupted: ")
    assert sleeps.calls == []


@BOTH
async def test_silence(kind: str) -> None:
    """PV-23, PV-25, PV-29, PV-35: no answer within ``timeout`` is a retried
    ProviderTimeoutError (also a TimeoutError); silence after the first byte is a
    StreamInterruptedError naming it."""
    sleeps = Sleeps()
    async with Wire(kind) as wire:
        wire.add(Answer(then="silent"), Answer(then="silent"))
        wire.add(Answer(chunks=TEXT_LINES[:1], headers=NDJSON, then="stall"))
        client = wire.client(timeout=0.2, max_retries=1, sleep=sleeps)
        before = await failure(client, False)
        texts: list[str] = []
        after = await failure(client, True, texts)
    assert isinstance(before, ProviderTimeoutError)
    assert isinstance(before, TimeoutError)
    assert (
        str(before)
        == f"toy: no answer within 0.2 s: no data within timeout=0.2 s ({client.base_url})"
    )
    assert len(sleeps.calls) == 1
    assert isinstance(after, StreamInterruptedError)
    assert str(after) == "toy: the stream was interrupted: no data within timeout=0.2 s"
    assert texts == ["Hel"]


@BOTH
async def test_the_end_of_a_stream(kind: str) -> None:
    """PV-14, PV-15, PV-29: an error line raises the codec's error after the updates
    before it; a body that ends inside a line, or without the terminator and without a
    finish_reason, is StreamInterruptedError; a finish_reason is enough without the
    terminator; data after the terminator is ignored; nothing is retried."""
    async with Wire(kind) as wire:
        wire.add(
            Answer(
                chunks=(TEXT_LINES[0], b'{"error": "overloaded"}\n'), headers=NDJSON
            ),
            Answer(chunks=(TEXT_LINES[0], b'{"text": "cut'), headers=NDJSON),
            Answer(chunks=TEXT_LINES[:2], headers=NDJSON),
            Answer(chunks=TEXT_LINES[:3], headers=NDJSON),
            Answer(chunks=(*TEXT_LINES, b"not json at all\n"), headers=NDJSON),
        )
        client = wire.client(sleep=Sleeps())
        texts: list[str] = []
        overloaded = await failure(client, True, texts)
        truncated = await failure(client, True)
        unfinished = await failure(client, True)
        finished = await ask(client, True)
        terminated = await ask(client, True)
        assert len(wire.requests) == 5
        assert await wire.held(client) == 0
    assert isinstance(overloaded, ToyStreamError)
    assert texts == ["Hel"]
    assert isinstance(truncated, StreamInterruptedError)
    assert "truncated event: toy: a line is not JSON" in str(truncated)
    assert isinstance(unfinished, StreamInterruptedError)
    assert "the stream ended before its done line" in str(unfinished)
    assert finished.text == terminated.text == "Hello"


# =============================================================================================
# Bounds (PV-36)


@BOTH
async def test_bodies_and_lines_are_bounded(kind: str, stream: bool) -> None:
    """PV-36: a Content-Length above max_body_size fails before the body is read; a body
    that grows past it fails; a line past max_line_size is the codec's protocol error
    naming the bound, after the updates before it; none of them is retried."""
    json_headers = {"content-type": "application/json"}
    async with Wire(kind) as wire:
        wire.add(
            Answer(
                chunks=(b'{"text": ',),
                headers={**json_headers, "content-length": "999999"},
            )
        )
        wire.add(
            Answer(
                chunks=(b'{"text": "' + b"x" * 60, b"y" * 60, b'"}'),
                headers=json_headers,
            )
        )
        client = wire.client(max_body_size=100, max_line_size=50, sleep=Sleeps())
        declared = await failure(client, stream)
        grown = await failure(client, stream)
        if stream:
            wire.add(
                Answer(
                    chunks=(TEXT_LINES[0], b'{"text": "' + b"z" * 100), headers=NDJSON
                )
            )
            texts: list[str] = []
            long_line = await failure(client, True, texts)
            assert isinstance(long_line, ToyProtocolError)
            assert "max_line_size=50" in str(long_line)
            assert texts == ["Hel"]
        assert len(wire.requests) == (3 if stream else 2)
        assert await wire.held(client) == 0
    for error in (declared, grown):
        assert isinstance(error, ToyProtocolError), repr(error)
        assert (
            str(error)
            == "toy: the response body is larger than max_body_size=100 bytes"
        )
    if kind == "memory" and not stream:
        assert wire.mock.responses[0].chunks_read == 0


# =============================================================================================
# Every exit closes (PV-30)


async def _consume_until_cancelled(client: ToyClient, started: asyncio.Event) -> None:
    async for update in client.get_response([Message("user", ["Go"])], stream=True):
        if update.text:
            started.set()


@BOTH
async def test_every_exit_closes_the_response(kind: str) -> None:
    """PV-30: a status error, a broken stream, a consumer cancelled mid-stream and a
    stream left early each close their response before the exit completes; nothing stays
    held."""
    held = Answer(chunks=TEXT_LINES[:1], headers=NDJSON, then="hold")
    async with Wire(kind) as wire:
        client = wire.client(max_retries=0, timeout=5)
        for _ in range(3):
            wire.add(
                refusal(500, "down"),
                Answer(chunks=TEXT_LINES[:1], headers=NDJSON, then="drop"),
                held,
                held,
            )
            await failure(client, False)
            await failure(client, True)
            assert await wire.held(client) == 0
            started = asyncio.Event()
            task = asyncio.create_task(_consume_until_cancelled(client, started))
            await asyncio.wait_for(started.wait(), 5)
            task.cancel()
            await asyncio.wait([task])
            assert task.cancelled()
            # closed before the cancellation completed
            assert await wire.held(client) == 0
            stream = client.get_response([Message("user", ["Go"])], stream=True)
            async for update in stream:
                if update.text:
                    break
            await stream.aclose()
            assert await wire.held(client) == 0
    if kind == "memory":
        assert all(r.closed for r in wire.mock.responses)


# =============================================================================================
# Failures (PV-35)

FAILURES = [
    (
        "connect",
        ProviderConnectionError,
        True,
        "connection failed ({url}): X: refused; is the toy server running?",
    ),
    ("network", ProviderConnectionError, True, "connection failed ({url}): X: reset"),
    (
        "protocol",
        ProviderConnectionError,
        True,
        "the answer of {url} is not valid HTTP: X: bad status line",
    ),
    (
        "connect_timeout",
        ProviderTimeoutError,
        True,
        "could not connect within timeout=0.2 s ({url})",
    ),
    (
        "read_timeout",
        ProviderTimeoutError,
        True,
        "no answer within 0.2 s: no data within timeout=0.2 s ({url})",
    ),
    (
        "total_timeout",
        ProviderTimeoutError,
        True,
        "the request took longer than total_timeout=9.0 s ({url})",
    ),
    ("other", ProviderError, False, "the request to {url} failed: X: odd"),
]


@pytest.mark.parametrize(("failure_kind", "cls", "retryable", "text"), FAILURES)
async def test_each_kind_of_transport_failure(
    failure_kind: Any, cls: type, retryable: bool, text: str
) -> None:
    """PV-35, PV-23, PV-24: each kind of transport failure before the answer is the
    class of one table, retryable or not, saying what failed and where; scrubbed, with
    no chain."""
    detail = {
        "connect": "refused",
        "network": "reset",
        "protocol": "bad status line",
        "other": "odd",
    }
    wire = Wire("memory").add(
        *[TransportError(failure_kind, f"X: {detail.get(failure_kind, 't')} {KEY}")] * 2
    )
    client = wire.client(
        api_key=KEY, timeout=0.2, total_timeout=9.0, max_retries=1, sleep=Sleeps()
    )
    error = await failure(client, False)
    assert type(error) is cls
    assert error.retryable is retryable
    assert len(wire.mock.requests) == (2 if retryable else 1)
    assert str(error).replace(" [redacted]", "") == "toy: " + text.format(
        url=client.base_url
    )
    assert (error.__cause__, error.__context__, error.status) == (None, None, None)
    assert secrets_in(error, KEY) == []


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


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


def _network(network: str) -> Any:
    from minagent_http import AiohttpTransport

    return (
        AiohttpTransport(trust_env=False)
        if network == "aiohttp"
        else StdlibTransport(trust_env=False)
    )


@pytest.mark.parametrize("answer", MALFORMED)
@NETWORK
async def test_malformed_http(
    network: str, answer: bytes, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-35, PV-39, PV-42: what either transport's parser rejects is a retried
    ProviderConnectionError (or, after the first byte, a StreamInterruptedError): typed,
    scrubbed, unchained, and in no log record."""
    caplog.set_level(logging.DEBUG)
    sleeps = Sleeps()
    async with RawServer(answer, base_path="/v1") as server:
        transport = _network(network)
        client = ToyClient(
            transport=transport,
            base_url=server.base_url,
            api_key=KEY,
            max_retries=1,
            sleep=sleeps,
        )
        async with client:
            error = await failure(client, stream)
    assert isinstance(error, ProviderConnectionError | StreamInterruptedError), repr(
        error
    )
    if isinstance(error, ProviderConnectionError):
        assert error.retryable
        assert len(sleeps.calls) == 1
    assert (error.__cause__, error.__context__) == (None, None)
    assert secrets_in(error, KEY) == []
    assert all(KEY not in r.getMessage() for r in caplog.records)


@NETWORK
async def test_real_failures(network: str) -> None:
    """PV-35, PV-39, PV-23, PV-42: through either transport, nothing listening is a
    ProviderConnectionError with the connection's hint; a body trickled past
    total_timeout (each byte in time for ``timeout``) is a ProviderTimeoutError for a
    non-streaming answer, whose attempt includes the whole body, and an interruption
    after the first byte of a stream; a connection dropped inside a whole body is a
    retried ProviderConnectionError."""

    def client(url: str, **kwargs: Any) -> ToyClient:
        return ToyClient(
            transport=_network(network), base_url=url, sleep=Sleeps(), **kwargs
        )

    refused_url = f"http://127.0.0.1:{_dead_port()}/v1"
    async with client(refused_url, api_key=KEY) as refused:
        error = await failure(refused, False)
    assert isinstance(error, ProviderConnectionError)
    library = (
        "ClientConnectorError" if network == "aiohttp" else "ConnectionRefusedError"
    )
    assert str(error).startswith(f"toy: connection failed ({refused_url}): {library}")
    assert str(error).endswith("; is the toy server running?")
    body = json.dumps({"text": "x" * 300, "finish": "stop"}).encode()
    slow = _http(b"HTTP/1.1 200 OK", b"Content-Type: application/json\r\n", body)
    async with (
        RawServer(
            slow, trickle=0.003, at_once=len(slow) - len(body) + 1, base_path="/v1"
        ) as server,
        client(
            server.base_url, timeout=5, total_timeout=0.4, max_retries=0
        ) as trickled,
    ):
        whole = await failure(trickled, False)
        streamed = await failure(trickled, True)
    assert isinstance(whole, ProviderTimeoutError)
    assert "the request took longer than total_timeout=0.4 s" in str(whole)
    assert isinstance(streamed, StreamInterruptedError)
    assert "total_timeout=0.4" in str(streamed)
    async with Wire(network) as wire:
        wire.add(
            Answer(
                chunks=(b'{"text": ',),
                headers={"content-type": "application/json"},
                then="drop",
            )
        )
        wire.add(text(False))
        sleeps = Sleeps()
        dropped = wire.client(sleep=sleeps)
        assert (await ask(dropped, False)).text == "Hello"
    assert len(sleeps.calls) == 1


@BOTH
async def test_secrets_never_leave(
    kind: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-24, PV-35: whatever the server echoes (in a body, a stream, headers,
    URL-encoded), the key and the base URL's password appear nowhere under an error nor
    in a log record, and the client's repr holds neither."""
    caplog.set_level(logging.DEBUG)
    password = "pa55-w0rd-SECRET"
    echoes = [
        refusal(
            401,
            f"bad key {KEY} ({ENCODED})",
            **{"x-echo": KEY, "x-echo-encoded": ENCODED},
        ),
        refusal(500, f"down for {password}", **{"x-echo": password}),
        Answer(
            chunks=(
                TEXT_LINES[0],
                json.dumps({"error": f"key {KEY}"}).encode() + b"\n",
            ),
            headers=NDJSON,
        ),
        Answer(
            chunks=(f"<html>{KEY}</html>".encode(),),
            headers={"content-type": "application/json"},
        ),
        Answer(chunks=(TEXT_LINES[0],), headers={**NDJSON, "x-echo": KEY}, then="drop"),
    ]
    async with Wire(kind) as wire:
        wire.add(*echoes)
        url = wire.client().base_url.replace("://", f"://proxy:{password}@")
        client = wire.client(
            cls=HeaderKeyClient, api_key=KEY, max_retries=0, base_url=url
        )
        errors = [await failure(client, stream) for _ in echoes]
        assert KEY not in repr(client) + repr(vars(client))
        assert password not in repr(client)
    for error in errors:
        assert isinstance(error, ProviderError), repr(error)
        assert (error.__cause__, error.__context__) == (None, None)
        assert secrets_in(error, KEY, password) == [], (
            error,
            secrets_in(error, KEY, password),
        )
    assert all(
        KEY not in logging.Formatter().format(r) and password not in r.getMessage()
        for r in caplog.records
    )


async def test_bad_input_fails_before_sending() -> None:
    """PV-35, PV-38: the codec's ValueError for input it cannot send comes out as it is,
    before any request."""
    wire = Wire("memory")
    with pytest.raises(ValueError, match="'bad'"):
        await ask(wire.client(), False, options={"bad": True})
    assert wire.mock.requests == []
