"""The API key never appears in repr, exception text, tracebacks or log records (PV-24,
OA-20).

Every failure path is provoked with a server that echoes the key back where it can: in
an error body, in a malformed success body, in a stream error event. All loggers are
captured at DEBUG.
"""

from __future__ import annotations

import json
import logging
import socket
import traceback
from typing import Any

import pytest

from minagent import Message, ProviderError

from ._fake_server import (
    FakeOpenAI,
    disconnect_after,
    raw,
    send_chunks,
    silence,
    transcript,
)

KEY = "sk-proj-TOPSECRET-0123456789abcdef"


def _texts(error: BaseException) -> str:
    return "\n".join(
        [
            str(error),
            repr(error),
            *map(str, error.args),
            getattr(error, "provider_message", ""),
            *traceback.format_exception(error),
        ]
    )


async def _fail(client: Any, stream: bool) -> ProviderError:
    try:
        if stream:
            async for _ in client.get_response([Message("user", ["Hi"])], stream=True):
                pass
        else:
            await client.get_response([Message("user", ["Hi"])])
    except ProviderError as exc:
        return exc
    raise AssertionError("no error was raised")


def _echo(status: int) -> Any:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "auth"}}
    return raw(status, json.dumps(body), headers={"x-request-id": "req_key"})


def _always_sse() -> Any:
    """An SSE error event, also to a request that did not ask for a stream."""
    data = f'data: {{"error": {{"message": "key {KEY}"}}}}\n\n'.encode()

    async def handler(server: FakeOpenAI, request: Any, _: Any) -> Any:
        return await send_chunks(request, data)

    return handler


FAILURES = [
    pytest.param(lambda: _echo(401), id="401-echoing-the-key"),
    pytest.param(lambda: _echo(500), id="500-echoing-the-key"),
    pytest.param(lambda: raw(200, f"<html>{KEY}</html>"), id="bad-json-with-the-key"),
    pytest.param(
        lambda: raw(200, json.dumps({"error": f"bad {KEY}"})), id="error-body"
    ),
    pytest.param(lambda: _always_sse(), id="stream-error-event"),
    pytest.param(
        lambda: disconnect_after(transcript("plain_text.sse"), 300), id="disconnect"
    ),
    pytest.param(lambda: silence(), id="timeout"),
]


@pytest.mark.parametrize("make", FAILURES)
async def test_the_key_is_never_in_error_text_or_logs(
    make: Any, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """PV-24: whatever fails, and whatever the server echoes, the key is redacted
    everywhere."""
    caplog.set_level(logging.DEBUG)

    async def no_sleep(_: float) -> None:
        return None

    async with FakeOpenAI() as server:
        server.add(make(), make(), make())
        client = server.make_client(
            api_key=KEY, max_retries=2, sleep=no_sleep, timeout=0.2
        )
        async with client:
            error = await _fail(client, stream)
            assert KEY not in repr(client)
            assert KEY not in repr(vars(client))
        # it was sent, though
        assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in _texts(error), _texts(error)
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert all(
        KEY not in logging.Formatter().format(record) for record in caplog.records
    )


async def test_the_key_is_not_in_a_connection_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """PV-24: a refused connection reports where it failed, never the key."""
    caplog.set_level(logging.DEBUG)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    from minagent_openai import OpenAIChatClient

    async def no_sleep(_: float) -> None:
        return None

    client = OpenAIChatClient(
        "m", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1", sleep=no_sleep
    )
    async with client:
        error = await _fail(client, stream=False)
    assert f"127.0.0.1:{port}" in str(error)
    assert KEY not in _texts(error)
    assert all(KEY not in r.getMessage() for r in caplog.records)


def test_repr_and_invalid_base_url_never_show_the_key() -> None:
    """PV-24, OA-20: repr shows '***' for the key; a configuration error redacts it
    too."""
    from minagent_openai import OpenAIChatClient

    client = OpenAIChatClient(
        "gpt-4o-mini", api_key=KEY, base_url="http://localhost:1/v1"
    )
    assert repr(client) == (
        "OpenAIChatClient(model='gpt-4o-mini', base_url='http://localhost:1/v1', api_key='***')"
    )
    with pytest.raises(ValueError, match="redacted") as info:
        OpenAIChatClient("m", api_key=KEY, base_url=f"ftp://host/{KEY}")
    assert KEY not in str(info.value)
