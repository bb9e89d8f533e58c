"""Typed errors and the retry policy (spec/providers.md, PV-23 .. PV-29, OA-23).

The policy is checked as a pure function (``minagent.providers.errors``), then through
the OpenAI transport against the loopback server. Sleeping is injected: delays are
asserted as the values the client asked to sleep, attempts as the requests the server
saw; nothing waits for real.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import minagent
from minagent import (
    AuthenticationError,
    BadRequestError,
    Message,
    NotFoundError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from minagent.providers import (
    RetryPolicy,
    Secret,
    error_for_status,
    parse_duration,
    redact,
    retry_call,
    server_delay,
)
from tests._support.modes import get_response

from ._fake_server import (
    FakeOpenAI,
    collect_texts,
    disconnect_after,
    replay,
    silence,
    transcript,
)

NOW = 1_715_000_000.0


class FixedRandom:
    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


class Sleeps:
    """A fake asyncio.sleep: records what it was asked to wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


# =============================================================================================
# Errors (PV-23, PV-24)


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [
        (400, BadRequestError, False),
        (422, BadRequestError, False),
        (401, AuthenticationError, False),
        (403, AuthenticationError, False),
        (404, NotFoundError, False),
        (408, ProviderTimeoutError, True),
        (409, ProviderError, True),
        (429, RateLimitError, True),
        (500, ServerError, True),
        (503, ServerError, True),
        (599, ServerError, True),
        (418, ProviderError, False),
        (302, ProviderError, False),
    ],
)
def test_error_for_status(
    status: int, cls: type[ProviderError], retryable: bool
) -> None:
    """PV-23: the status picks the class; retryable for 408, 409, 429 and 5xx."""
    error = error_for_status(status, "why", "req_1", provider="p", headers={"X-A": "b"})
    assert type(error) is cls
    assert (error.status, error.provider_message, error.request_id) == (
        status,
        "why",
        "req_1",
    )
    assert error.retryable is retryable
    assert error.headers == {"x-a": "b"}
    assert isinstance(error, minagent.MinagentError)


def test_timeout_and_connection_errors_are_builtin_kinds_too() -> None:
    """PV-23: ProviderTimeoutError is a TimeoutError, ProviderConnectionError a
    ConnectionError, both retryable; StreamInterruptedError is not retryable."""
    timeout = ProviderTimeoutError("slow")
    assert isinstance(timeout, TimeoutError)
    assert timeout.retryable
    assert str(timeout) == "slow"
    assert timeout.provider_message == "slow"
    connection = ProviderConnectionError("refused", provider_message="")
    assert isinstance(connection, ConnectionError)
    assert connection.retryable
    assert connection.provider_message == ""
    assert not StreamInterruptedError("cut").retryable
    assert set(minagent.__all__) >= {
        "ProviderError", "BadRequestError", "AuthenticationError", "NotFoundError",
        "RateLimitError", "ServerError", "ProviderTimeoutError", "ProviderConnectionError",
        "StreamInterruptedError",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("status", "message", "request_id", "text"),
    [
        (429, "Slow down", "req_9", "p: HTTP 429 Too Many Requests: Slow down (request id req_9)"),
        (500, "HTTP 500 Internal Server Error", None, "p: HTTP 500 Internal Server Error"),
        (503, "", None, "p: HTTP 503 Service Unavailable"),
        (599, "odd", None, "p: HTTP 599: odd"),
    ],
)  # fmt: skip
def test_error_text(
    status: int, message: str, request_id: str | None, text: str
) -> None:
    """PV-24: provider, status, reason, message and request id; the status is not
    repeated."""
    assert str(error_for_status(status, message, request_id, provider="p")) == text


def test_redact_and_secret() -> None:
    """PV-24: redact replaces every whole-token occurrence; Secret never shows its
    value."""
    key = "sk-proj-1234567"
    assert (
        redact(f"key {key} and {key}. again", key)
        == "key [redacted] and [redacted]. again"
    )
    assert redact("nothing", "") == "nothing"
    assert redact("nothing", None) == "nothing"
    secret = Secret(key)
    assert redact(f"a {key}", secret) == "a [redacted]"
    assert key not in repr(secret)
    assert key not in str(secret)
    assert secret.reveal() == key
    assert bool(secret)
    assert not Secret("")
    error = error_for_status(401, f"bad key {key}", None, provider="p").redact(secret)
    assert key not in str(error) + repr(error) + error.provider_message


@pytest.mark.parametrize("key", ["llama", "test", "ollama", "sk-none", "EMPTY"])
def test_placeholder_keys_do_not_corrupt_text(key: str) -> None:
    """PV-24: keys shorter than MIN_SECRET_LENGTH are not secrets: text keeps every
    character."""
    text = f'model "llama3" at http://test-server:11434/ollama/v1 said {key}'
    assert redact(text, key) == text
    error = error_for_status(404, text, None, provider="p").redact(key)
    assert error.provider_message == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model sk-abcdefgh3 is not a key", "model sk-abcdefgh3 is not a key"),
        ("Bearer sk-abcdefgh", "Bearer [redacted]"),
        ("url ?key=sk-abcdefgh&x=1", "url ?key=[redacted]&x=1"),
        ("prefix-sk-abcdefgh", "prefix-[redacted]"),
        ("xsk-abcdefgh", "xsk-abcdefgh"),
        ("sk-abcdefghé", "sk-abcdefghé"),
        ('"sk-abcdefgh"', '"[redacted]"'),
    ],
)
def test_only_whole_tokens_are_redacted(text: str, expected: str) -> None:
    """PV-24: a key touched by a letter or a digit is inside a longer token: not an
    occurrence."""
    assert redact(text, "sk-abcdefgh") == expected


def test_url_encoded_key_and_header_values_are_redacted() -> None:
    """PV-24, PV-35: the URL-encoded key, and header values that carry it, are
    redacted."""
    from urllib.parse import quote, quote_plus

    from minagent.providers import redact_headers

    key = "sk-a+b/c=d e-12345"
    text = f"GET /v1?k={quote(key, safe='')}&j={quote_plus(key)} {key}"
    assert redact(text, key) == "GET /v1?k=[redacted]&j=[redacted] [redacted]"
    short = "test"
    headers = {
        "Authorization": f"Bearer {short}",
        "X-Echo": short,
        "x-model": "test-1",
        "Api-Key": "x",
    }
    assert redact_headers(headers, short) == {
        "authorization": "[redacted]",
        "x-echo": "[redacted]",
        "x-model": "test-1",
        "api-key": "[redacted]",
    }


# =============================================================================================
# The policy as a function (PV-25 .. PV-28)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1m30s", 90.0), ("6m0s", 360.0), ("20ms", 0.02), ("1.5s", 1.5), ("1h0m0.5s", 3600.5),
        ("2", 2.0), ("0s", 0.0), ("250us", 0.00025), ("3µs", 3e-6), ("7ns", 7e-9), (".5s", 0.5),
        ("", None), ("1x", None), ("s", None), ("-1s", None), ("1m 30s", None), ("abc", None),
        ("1.5", 1.5), ("nan", None), ("inf", None), ("-3", None),
    ],
)  # fmt: skip
def test_parse_duration(text: str, seconds: float | None) -> None:
    """PV-28: Go durations and bare seconds; anything else is None."""
    result = parse_duration(text)
    assert result == pytest.approx(seconds) if seconds is not None else result is None


def test_full_jitter_backoff() -> None:
    """PV-26: rng.random() * min(max_delay, base_delay * 2 ** (n - 1))."""
    policy = RetryPolicy(base_delay=0.5, max_delay=8.0)
    assert [policy.delay(n, rng=FixedRandom(1.0)) for n in range(1, 8)] == [
        0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0,
    ]  # fmt: skip
    assert policy.delay(3, rng=FixedRandom(0.25)) == 0.5
    assert policy.delay(1, rng=FixedRandom(0.0)) == 0.0
    assert policy.delay(10_000, rng=FixedRandom(0.5)) == 4.0  # no overflow
    with pytest.raises(ValueError, match="attempt"):
        policy.delay(0)


@given(
    attempt=st.integers(1, 100),
    r=st.floats(0, 1, exclude_max=True),
    base=st.floats(0, 10),
    cap=st.floats(0, 100),
)
def test_backoff_is_within_bounds(
    attempt: int, r: float, base: float, cap: float
) -> None:
    """PV-26: every backoff delay lies in [0, min(cap, base * 2 ** (n - 1))]."""
    policy = RetryPolicy(base_delay=base, max_delay=cap)
    delay = policy.delay(attempt, rng=FixedRandom(r))
    assert 0 <= delay <= min(cap, base * 2.0 ** min(attempt - 1, 64))


def test_default_rng_is_used_without_one() -> None:
    """PV-26: without an rng the delay is still within the backoff bounds."""
    for _ in range(50):
        assert 0 <= RetryPolicy().delay(2) <= 1.0


@pytest.mark.parametrize(
    ("headers", "status", "expected"),
    [
        ({"retry-after-ms": "1500"}, 429, 1.5),
        ({"Retry-After": "7"}, 503, 7.0),
        ({"retry-after": "2.5"}, 429, 2.5),
        ({"retry-after": format_datetime(datetime.fromtimestamp(NOW + 30, UTC), True)}, 429, 30),
        ({"retry-after": "Mon, 06 May 2024 12:53:50 GMT"}, 503, 30.0),
        ({"retry-after": "Mon, 06 May 2024 12:00:00 GMT"}, 503, 0.0),  # in the past
        ({"retry-after-ms": "200", "retry-after": "9"}, 429, 0.2),  # ms first
        ({"retry-after-ms": "soon", "retry-after": "9"}, 429, 9.0),  # unusable: next
        ({"retry-after": "-4"}, 429, None),
        ({"retry-after": "whenever"}, 429, None),
        ({"x-ratelimit-reset-requests": "1m30s"}, 429, 90.0),
        ({"x-ratelimit-reset-tokens": "20ms"}, 429, 0.02),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}, 429, 360.0),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s",
          "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "5000"}, 429, 1.0),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s",
          "x-ratelimit-remaining-requests": "12", "x-ratelimit-remaining-tokens": "0"}, 429, 360.0),
        ({"x-ratelimit-reset-tokens": "6m0s"}, 503, None),  # only for 429
        ({"retry-after": "3", "x-ratelimit-reset-tokens": "6m0s"}, 429, 3.0),
        ({}, 429, None),
    ],
)  # fmt: skip
def test_server_delay(
    headers: Mapping[str, str], status: int, expected: float | None
) -> None:
    """PV-27, PV-28: which header wins, how each is read, resets for 429 only."""
    got = server_delay(headers, status=status, now=NOW)
    assert got == pytest.approx(expected) if expected is not None else got is None


@given(
    year=st.integers(min_value=1, max_value=10**30),
    day=st.integers(min_value=1, max_value=28),
)
def test_a_retry_after_date_of_any_year_is_a_delay_or_absent(
    year: int, day: int
) -> None:
    """PV-27: a ``Retry-After`` HTTP date whose year no clock can hold is unusable, so
    it counts as absent; any date gives a non-negative delay or None, never an
    exception (a huge year once raised a bare OverflowError in every provider)."""
    header = f"Mon, {day:02d} Jan {year} 00:00:00 GMT"
    got = server_delay({"retry-after": header}, status=429, now=NOW)
    assert got is None or got >= 0.0
    if year > 9999:
        assert got is None


def test_server_delay_is_used_as_given_but_capped() -> None:
    """PV-27: no jitter on a server delay; never longer than max_server_delay."""
    policy = RetryPolicy()
    rng = FixedRandom(0.0)
    assert policy.delay(1, {"retry-after": "12"}, rng, status=429) == 12.0
    assert policy.delay(1, {"retry-after": "3600"}, rng, status=429) == 60.0
    assert (
        RetryPolicy(max_server_delay=5).delay(1, {"retry-after-ms": "9000"}, rng) == 5.0
    )
    error = error_for_status(429, "slow", headers={"retry-after": "3600"})
    assert error.retry_after == 3600.0  # uncapped on the error, for the caller


def test_should_retry() -> None:
    """PV-25: retryable statuses and failures, the count, x-should-retry, never
    interrupted."""
    policy = RetryPolicy(max_retries=2)
    assert policy.should_retry(error_for_status(503, "x"), 0)
    assert policy.should_retry(error_for_status(503, "x"), 1)
    assert not policy.should_retry(error_for_status(503, "x"), 2)
    assert not policy.should_retry(error_for_status(400, "x"), 0)
    assert policy.should_retry(
        error_for_status(400, "x", headers={"x-should-retry": "true"}), 0
    )
    assert not policy.should_retry(
        error_for_status(503, "x", headers={"X-Should-Retry": "false"}), 0
    )
    assert policy.should_retry(ProviderConnectionError("refused"), 0)
    assert policy.should_retry(ProviderTimeoutError("slow"), 0)
    assert not policy.should_retry(StreamInterruptedError("cut"), 0)
    assert not policy.should_retry(ValueError("not a provider error"), 0)
    assert not RetryPolicy(retry_server_errors=False).should_retry(
        error_for_status(503, "x"), 0
    )
    assert not RetryPolicy(max_retries=0).should_retry(error_for_status(429, "x"), 0)
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)


async def test_retry_call_gives_up_with_the_last_error() -> None:
    """PV-25: max_retries + 1 attempts; the last error is raised; each wait goes to
    sleep."""
    sleeps = Sleeps()
    attempts: list[int] = []

    async def attempt() -> str:
        attempts.append(len(attempts))
        raise error_for_status(500, f"boom {len(attempts)}")

    with pytest.raises(ServerError, match="boom 3"):
        await retry_call(
            attempt,
            policy=RetryPolicy(max_retries=2),
            sleep=sleeps,
            rng=FixedRandom(1.0),
        )
    assert attempts == [0, 1, 2]
    assert sleeps.calls == [0.5, 1.0]


# =============================================================================================
# Through the transport


def client_for(server: FakeOpenAI, **kw: Any) -> Any:
    kw.setdefault("sleep", Sleeps())
    kw.setdefault("rng", FixedRandom(0.5))
    return server.make_client(**kw)


RATE_LIMIT_HEADERS = [
    pytest.param({"retry-after": "2"}, 2.0, id="retry-after-seconds"),
    pytest.param({"retry-after-ms": "750"}, 0.75, id="retry-after-ms"),
    pytest.param(
        {
            "x-ratelimit-reset-requests": "0m45s",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-tokens": "6m0s",
        },
        45.0,
        id="reset-requests",
    ),
    pytest.param(
        {"x-ratelimit-reset-requests": "1m30s"}, 60.0, id="reset-requests-capped"
    ),
    pytest.param({"x-ratelimit-reset-tokens": "1.5s"}, 1.5, id="reset-tokens-seconds"),
    pytest.param({"x-ratelimit-reset-tokens": "20ms"}, 0.02, id="reset-tokens"),
    pytest.param({}, 0.25, id="no-header-backoff"),
]


@pytest.mark.parametrize(("headers", "delay"), RATE_LIMIT_HEADERS)
async def test_429_is_retried_after_the_server_delay(
    headers: dict[str, str], delay: float, stream: bool
) -> None:
    """PV-25, PV-27: a 429 is retried after the delay its headers name, then
    succeeds."""
    sleeps = Sleeps()
    async with FakeOpenAI() as server:
        server.script_error(429, "Rate limit reached", headers)
        server.script_text("after the wait")
        async with client_for(server, sleep=sleeps) as client:
            response = await _respond(client, stream)
        assert len(server.requests()) == 2
    assert sleeps.calls == [pytest.approx(delay)]
    assert response.text == "after the wait"


async def test_429_with_an_http_date() -> None:
    """PV-27: Retry-After as an HTTP date is the time until that date (from now)."""
    sleeps = Sleeps()
    async with FakeOpenAI() as server:
        # a date far enough ahead that the seconds between now and the check do not
        # matter
        when = datetime.fromtimestamp(datetime.now(UTC).timestamp() + 45, UTC)
        server.script_error(
            429, "slow down", {"Retry-After": format_datetime(when, usegmt=True)}
        )
        server.script_text("ok")
        async with client_for(server, sleep=sleeps) as client:
            await _respond(client, False)
    assert len(sleeps.calls) == 1
    assert 40 <= sleeps.calls[0] <= 45


async def test_503_then_success_and_giving_up() -> None:
    """PV-25, PV-26: 503s are retried with backoff; after max_retries the ServerError is
    raised."""
    sleeps = Sleeps()
    async with FakeOpenAI() as server:
        server.script_error(503, "overloaded")
        server.script_text("recovered")
        for _ in range(3):
            server.script_error(503, "still overloaded", {"x-request-id": "req_last"})
        async with client_for(server, sleep=sleeps, rng=FixedRandom(0.5)) as client:
            assert (await _respond(client, False)).text == "recovered"
            assert sleeps.calls == [0.25]
            with pytest.raises(ServerError, match="still overloaded") as info:
                await _respond(client, True)
        assert len(server.requests()) == 2 + 3
    assert sleeps.calls == [0.25, 0.25, 0.5]
    assert info.value.request_id == "req_last"


async def test_x_should_retry_and_non_retryable_statuses() -> None:
    """PV-25: 400 is not retried unless x-should-retry: true; 503 with false is not
    retried."""
    async with FakeOpenAI() as server:
        server.script_error(400, "bad")
        server.script_error(400, "flaky", {"x-should-retry": "true"})
        server.script_text("ok")
        server.script_error(503, "final", {"x-should-retry": "false"})
        async with client_for(server) as client:
            with pytest.raises(BadRequestError):
                await _respond(client, False)
            assert (await _respond(client, False)).text == "ok"
            with pytest.raises(ServerError):
                await _respond(client, False)
        assert len(server.requests()) == 4


async def test_retry_policy_wins_over_max_retries() -> None:
    """PV-32: retry_policy replaces the policy max_retries would build."""
    async with FakeOpenAI() as server:
        client = client_for(
            server, max_retries=5, retry_policy=RetryPolicy(max_retries=0)
        )
        assert client.retry_policy.max_retries == 0
        assert client_for(server, max_retries=5).retry_policy.max_retries == 5
        await client.aclose()


async def test_retries_are_logged_without_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """PV-25, PV-24: each retry is logged at INFO with the (redacted) error."""
    caplog.set_level(logging.DEBUG)
    async with FakeOpenAI() as server:
        server.script_error(503, "overloaded for sk-logged-key")
        server.script_text("ok")
        async with client_for(server, api_key="sk-logged-key") as client:
            await _respond(client, False)
    retries = [
        r
        for r in caplog.records
        if r.name == "minagent_openai" and "retry" in r.getMessage()
    ]
    assert len(retries) == 1
    assert retries[0].levelno == logging.INFO
    assert "retry 1 of 2" in retries[0].getMessage()
    assert "overloaded" in retries[0].getMessage()
    assert all("sk-logged-key" not in r.getMessage() for r in caplog.records)


# -- streams: the first-byte boundary (PV-29) --------------------------------------------------


async def test_mid_stream_disconnect_is_not_retried() -> None:
    """PV-29: after the first byte a disconnect is StreamInterruptedError, never
    retried; the updates before it were delivered."""
    data = transcript("plain_text.sse")
    # after two complete events
    cut = data.index(b"data:", data.index("wörld".encode()))
    sleeps = Sleeps()
    async with FakeOpenAI() as server:
        server.add(disconnect_after(data, cut, x_request_id="req_cut"))
        async with client_for(server, sleep=sleeps) as client:
            stream = client.get_response([Message("user", ["Hi"])], stream=True)
            texts = []
            with pytest.raises(StreamInterruptedError) as info:
                await collect_texts(stream, texts)
        assert len(server.requests()) == 1
    assert "".join(texts) == "Hello, wörld — ünïcode 👋"
    assert sleeps.calls == []
    assert info.value.request_id == "req_cut"
    assert not info.value.retryable
    assert "interrupted" in str(info.value)


async def test_disconnect_before_the_first_byte_is_retried() -> None:
    """PV-29: a 2xx stream that drops before its first byte is retried like a failed
    connect."""
    sleeps = Sleeps()
    async with FakeOpenAI() as server:
        server.add(disconnect_after(b"", 0), replay(transcript("plain_text.sse")))
        async with client_for(server, sleep=sleeps) as client:
            response = await _respond(client, True)
        assert len(server.requests()) == 2
    assert len(sleeps.calls) == 1
    assert response.text == "Hello, wörld — ünïcode 👋!"


async def test_connection_refused() -> None:
    """PV-23, PV-25: nothing listening is ProviderConnectionError after max_retries
    retries."""
    # a port that was free a moment ago, with nothing listening
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps = Sleeps()
    client = minagent_openai_client(
        f"http://127.0.0.1:{port}/v1", sleep=sleeps, max_retries=3
    )
    async with client:
        for stream in (False, True):
            with pytest.raises(ProviderConnectionError) as info:
                await _respond(client, stream)
            assert isinstance(info.value, ConnectionError)
            assert info.value.status is None
            assert info.value.provider_message == ""
            assert f"127.0.0.1:{port}" in str(info.value)
    assert len(sleeps.calls) == 6  # 3 retries per call


async def test_timeout_before_an_answer_is_retried() -> None:
    """OA-23, PV-23, PV-25: no answer within `timeout` is ProviderTimeoutError,
    retried."""
    sleeps = Sleeps()
    async with FakeOpenAI() as server:
        server.add(silence(), silence())
        async with client_for(
            server, sleep=sleeps, timeout=0.2, max_retries=1
        ) as client:
            with pytest.raises(
                ProviderTimeoutError, match=r"no data within timeout=0\.2 s"
            ) as info:
                await _respond(client, False)
        assert len(server.requests()) == 2
    assert isinstance(info.value, TimeoutError)
    assert len(sleeps.calls) == 1


async def test_timeout_after_the_first_byte_is_an_interruption() -> None:
    """OA-23, PV-29: a stream that goes quiet for longer than `timeout` is
    interrupted."""
    sleeps = Sleeps()
    async with FakeOpenAI() as server:
        server.add(silence(after_headers=True))
        server.add(replay(b'data: {"id":"q","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
                          b"data: [DONE]\n\n"))  # fmt: skip
        async with client_for(server, sleep=sleeps, timeout=0.2) as client:
            # headers only, then silence: no first byte yet, so a retryable timeout
            response = await _respond(client, True)
            assert response.text == "a"
            assert len(sleeps.calls) == 1
            server.add(_quiet_after_first_event())
            with pytest.raises(
                StreamInterruptedError, match=r"no data within timeout=0\.2 s"
            ):
                await _respond(client, True)
        assert len(server.requests()) == 3
    assert len(sleeps.calls) == 1


def _quiet_after_first_event() -> Any:
    async def handler(server: FakeOpenAI, request: Any, _: Any) -> Any:
        from aiohttp import web

        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(
            b'data: {"id":"q","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.closing.wait(), 10)
        return response

    return handler


async def test_cancelled_backoff_stops_retrying() -> None:
    """PV-25, PV-30: cancelling during the wait between attempts ends the call at
    once."""
    waiting = asyncio.Event()

    async def forever(seconds: float) -> None:
        waiting.set()
        await asyncio.Event().wait()

    async with FakeOpenAI() as server:
        server.script_error(503, "busy")
        async with client_for(server, sleep=forever) as client:
            task = asyncio.create_task(_respond(client, False))
            await asyncio.wait_for(waiting.wait(), 5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert len(server.requests()) == 1


# -- helpers -----------------------------------------------------------------------------------


async def _respond(client: Any, stream: bool) -> Any:
    return await get_response(client, [Message("user", ["Hi"])], stream=stream)


def minagent_openai_client(base_url: str, **kw: Any) -> Any:
    from minagent_openai import OpenAIChatClient

    kw.setdefault("rng", FixedRandom(0.5))
    return OpenAIChatClient("gpt-4o-mini", api_key="sk-x", base_url=base_url, **kw)
