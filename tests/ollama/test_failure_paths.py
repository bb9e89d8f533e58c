"""Every failure path of the Ollama transport is typed and scrubbed (PV-24, PV-35 ..
PV-37, OL-22).

Everything comes from the loopback Ollama server (malformed HTTP below HTTP is the
shared transport's, tested once in tests/providers). The API key (Ollama's hosted API)
must appear nowhere under an error.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import warnings
from typing import Any
from urllib.parse import quote

import pytest
from minagent_ollama import OllamaChatClient, OllamaProtocolError, OllamaStreamDecoder

from minagent import (
    FunctionInvocationConfiguration,
    Message,
    ProviderError,
)

from ._fake_server import FakeOllama, disconnect_after, raw, replay, silence, transcript

KEY = "ollama-KEY+secret/0123456789=abcdef"
ENCODED = quote(KEY, safe="")
NO_LOOP = FunctionInvocationConfiguration(enabled=False)


def find_secret(error: BaseException) -> list[str]:
    """Every place under ``error`` where the key (or its URL-encoded form) shows."""
    hits: list[str] = []
    seen: set[int] = set()

    def walk(value: object, path: str, depth: int) -> None:
        if id(value) in seen or depth > 6:
            return
        seen.add(id(value))
        if isinstance(value, str | bytes):
            data = value if isinstance(value, str) else value.decode("utf-8", "replace")
            if KEY in data or ENCODED in data:
                hits.append(path)
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, f"{path}[key]", depth + 1)
                walk(v, f"{path}[{k!r}]", depth + 1)
        elif isinstance(value, list | tuple | set):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]", depth + 1)
        elif hasattr(value, "__dict__"):
            for k, v in vars(value).items():
                walk(v, f"{path}.{k}", depth + 1)
        if isinstance(value, BaseException):
            walk(value.args, f"{path}.args", depth + 1)
            walk(str(value), f"str({path})", depth + 1)
            walk(value.__cause__, f"{path}.__cause__", depth + 1)
            walk(value.__context__, f"{path}.__context__", depth + 1)

    walk(error, "error", 0)
    return hits


async def _error_of(client: OllamaChatClient, stream: bool) -> BaseException:
    try:
        if stream:
            async for _ in client.get_response([Message("user", ["Hi"])], stream=True):
                pass
        else:
            await client.get_response([Message("user", ["Hi"])])
    except Exception as exc:
        return exc
    raise AssertionError("no error was raised")


HTTP_FAILURES = [
    pytest.param(
        lambda: raw(401, json.dumps({"error": f"bad key {KEY}"})),
        id="401-echoing-the-key",
    ),
    pytest.param(
        lambda: raw(500, f"upstream said {ENCODED}", content_type="text/plain"),
        id="500-encoded-key",
    ),
    pytest.param(
        lambda: raw(200, json.dumps({"error": f"model crashed {KEY}"})),
        id="2xx-error-body",
    ),
    pytest.param(
        lambda: disconnect_after(transcript("plain_text.ndjson"), 0), id="disconnect"
    ),
    pytest.param(lambda: silence(), id="timeout"),
    pytest.param(
        lambda: raw(
            200, json.dumps({"message": {"content": "x" * 9000}, "done": True})
        ),
        id="body-too-large",
    ),
    pytest.param(
        lambda: replay(b'{"message": {"content": "' + b"y" * 9000 + b'"}}\n'),
        id="line-too-long",
    ),
]


@pytest.mark.parametrize("make", HTTP_FAILURES)
async def test_every_failure_is_typed_and_carries_no_secret(
    make: Any, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-24, PV-35, PV-36: each failure is a ProviderError with no key anywhere and no
    chain."""
    caplog.set_level(logging.DEBUG)

    async def no_sleep(_: float) -> None:
        return None

    async with FakeOllama() as server:
        server.add(make(), make(), make())
        client = server.make_client(
            api_key=KEY,
            max_retries=2,
            sleep=no_sleep,
            timeout=0.2,
            max_body_size=4096,
            max_line_size=4096,
        )
        async with client:
            error = await _error_of(client, stream)
        assert KEY not in repr(client) + repr(vars(client))
    assert isinstance(error, ProviderError), repr(error)
    assert error.__cause__ is None
    assert error.__context__ is None
    assert find_secret(error) == [], find_secret(error)
    assert all(KEY not in logging.Formatter().format(r) for r in caplog.records)


async def _error_or_result(client: OllamaChatClient, stream: bool) -> Any:
    if stream:
        return [
            u async for u in client.get_response([Message("user", ["Hi"])], stream=True)
        ]
    return await client.get_response([Message("user", ["Hi"])])


async def test_size_limits(stream: bool) -> None:
    """PV-36: max_body_size bounds a whole body, max_line_size a stream line; typed, not
    retried."""
    big = json.dumps({"model": "m", "message": {"content": "z" * 5000}, "done": True})
    async with FakeOllama() as server:
        server.add(raw(200, big, content_type="application/json"))
        async with server.make_client(
            max_body_size=1000, function_invocation_configuration=NO_LOOP
        ) as client:
            with pytest.raises(OllamaProtocolError, match="max_body_size=1000"):
                await _error_or_result(client, stream)
        assert len(server.requests()) == 1
    long_line = b'{"message": {"content": "' + b"w" * 5000 + b'"}, "done": false}\n'
    async with FakeOllama() as server:
        server.add(replay(long_line + transcript("plain_text.ndjson")))
        async with server.make_client(
            max_line_size=1000, function_invocation_configuration=NO_LOOP
        ) as client:
            with pytest.raises(OllamaProtocolError, match="max_line_size=1000"):
                async for _ in client.get_response(
                    [Message("user", ["Hi"])], stream=True
                ):
                    pass
        assert len(server.requests()) == 1


def test_decoder_line_limit_keeps_earlier_updates() -> None:
    """PV-36, PV-14: a line past max_line_size raises with the updates decoded before
    it."""
    first = transcript("plain_text.ndjson").split(b"\n")[0] + b"\n"
    decoder = OllamaStreamDecoder(max_line_size=600)
    with pytest.raises(OllamaProtocolError, match="max_line_size=600") as caught:
        decoder.feed(first + b'{"message": {"content": "' + b"v" * 700)
    assert [u.text for u in caught.value.updates] == ["The"]
    with pytest.raises(OllamaProtocolError, match="max_line_size=600"):
        OllamaStreamDecoder(max_line_size=600).feed(
            b'{"message": {"content": "' + b"v" * 700 + b'"}}\n'
        )
    with pytest.raises(ValueError, match="max_line_size"):
        OllamaStreamDecoder(max_line_size=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_body_size": 0}, "max_body_size"),
        ({"default_headers": {"X-A": "1\r\nX-B: 2"}}, "line break"),
        ({"default_headers": {"X-A": 1}}, "must be str"),
    ],
)
def test_invalid_limits_and_headers(kwargs: dict[str, Any], match: str) -> None:
    """PV-36, OL-21: bad limits and header injection are refused when the client is
    built."""
    with pytest.raises((ValueError, TypeError), match=match):
        OllamaChatClient("m", **kwargs)


async def test_nan_in_options_is_refused_before_sending() -> None:
    """PV-2, OL-8: a value JSON cannot carry is a ValueError before anything is sent."""
    async with FakeOllama() as server:
        async with server.make_client() as client:
            with pytest.raises(ValueError, match="NaN"):
                await client.get_response(
                    [Message("user", ["Hi"])], options={"temperature": float("nan")}
                )
        assert server.requests() == []


def test_a_client_outlives_an_event_loop() -> None:
    """PV-37: one client under two asyncio.run() calls; no unclosed session is
    reported."""

    async def main() -> None:
        async with FakeOllama() as server:
            server.script_text("one")
            server.script_text("two")
            client = server.make_client()

            def run_once() -> str:
                async def call() -> str:
                    return (await client.get_response([Message("user", ["Hi"])])).text

                return asyncio.run(call())

            first = await asyncio.to_thread(run_once)
            assert client.session is not None
            assert client.session.closed
            second = await asyncio.to_thread(run_once)
            assert (first, second) == ("one", "two")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert [w for w in caught if "nclosed" in str(w.message)] == []


async def test_a_session_on_another_open_loop_is_a_clear_error() -> None:
    """PV-37: the session's loop is still open: a RuntimeError that says what to do."""
    async with FakeOllama() as server:
        server.script_text("one")
        client = server.make_client()
        other = asyncio.new_event_loop()
        try:
            answer = await asyncio.to_thread(
                other.run_until_complete, client.get_response([Message("user", ["Hi"])])
            )
            assert answer.text == "one"
            with pytest.raises(RuntimeError, match=r"aclose\(\)"):
                await client.get_response([Message("user", ["Hi"])])
            await asyncio.to_thread(other.run_until_complete, client.aclose())
        finally:
            other.close()
        server.script_text("two")
        async with client:
            assert (await client.get_response([Message("user", ["Hi"])])).text == "two"
