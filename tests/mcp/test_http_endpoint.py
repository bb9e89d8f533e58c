"""The Streamable HTTP endpoint without any HTTP server (spec/mcp.md MCP-42, MCP-49;
spec/hosting.md HS-170): requests in, `HTTPAnswer`s out, so every bound is checked
in-process and fast."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from minagent import Agent, tool
from minagent.mcp.http import REQUEST_CANCELLED, HTTPAnswer, StreamableHTTPEndpoint
from minagent.testing import ScriptedChatClient, call, reply

VERSION = "2025-06-18"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def endpoint(*steps: Any, tools: list[Any] | None = None, **limits: Any) -> Any:
    agent = Agent(ScriptedChatClient(list(steps)), name="helper", tools=tools or [])
    return agent.as_mcp_server().http_endpoint(**limits)


def body(data: Any) -> Callable[[], Awaitable[bytes]]:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()

    async def read() -> bytes:
        return raw

    return read


def decoded(answer: HTTPAnswer) -> Any:
    return json.loads(answer.body) if answer.body else None


async def open_session(server: StreamableHTTPEndpoint) -> dict[str, str]:
    answer = await server.handle("POST", {}, body(INIT))
    assert answer.status == 200
    return {"mcp-session-id": dict(answer.headers)["Mcp-Session-Id"]}


async def test_the_sans_io_endpoint_checks_before_anything_runs() -> None:
    """MCP-42: a foreign origin is 403, an unsupported protocol version 400, GET 405
    with Allow, a missing session id 400 and an unknown one 404 — each a JSON-RPC error
    body; a local origin is let in."""
    server = endpoint()
    foreign = await server.handle("POST", {"origin": "http://evil.example"}, body(INIT))
    assert foreign.status == 403
    assert "evil.example" in decoded(foreign)["error"]["message"]
    local = await server.handle("POST", {"origin": "http://localhost:3000"}, body(INIT))
    assert local.status == 200
    old = await server.handle(
        "POST", {"mcp-protocol-version": "1999-01-01"}, body(INIT)
    )
    assert old.status == 400
    got = await server.handle("GET", {}, body(b""))
    assert (got.status, dict(got.headers)["Allow"]) == (405, "POST, DELETE")
    listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    missing = await server.handle("POST", {}, body(listed))
    assert missing.status == 400
    unknown = await server.handle("POST", {"mcp-session-id": "nope"}, body(listed))
    assert unknown.status == 404


@pytest.mark.parametrize(
    ("sent", "status", "code", "words"),
    [
        (b"{", 400, -32700, "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, 400, -32700, "nested too deeply"),
        ([INIT], 400, -32600, "no batches"),
        ({"jsonrpc": "1.0", "id": 1, "method": "x"}, 400, -32600, "JSON-RPC 2.0"),
        ({"jsonrpc": "2.0", "id": None, "method": "x"}, 400, -32600, "got null"),
        ({"jsonrpc": "2.0", "id": [1], "method": "x"}, 400, -32600, "got list"),
        ({"jsonrpc": "2.0", "id": True, "method": "x"}, 400, -32600, "got bool"),
    ],
)
async def test_a_malformed_message_is_a_4xx_never_a_500(
    sent: Any, status: int, code: int, words: str
) -> None:
    """MCP-49: not JSON, nested too deeply, a batch, another JSON-RPC version, an id
    that is not a string or an integer: a 400 with the JSON-RPC error naming it."""
    answer = await endpoint().handle("POST", {}, body(sent))
    error = decoded(answer)["error"]
    assert (answer.status, error["code"]) == (status, code)
    assert words in error["message"]


async def test_a_body_that_does_not_come_is_a_408() -> None:
    """MCP-49: a body that does not arrive within read_timeout is not waited for."""

    async def never() -> bytes:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    answer = await endpoint(read_timeout=0.05).handle("POST", {}, never)
    assert answer.status == 408
    assert "0.05 s" in decoded(answer)["error"]["message"]


async def test_idle_sessions_expire_and_make_room() -> None:
    """MCP-49: a session idle past session_timeout is 404; with the table full an
    initialize forgets the expired sessions, else the least recently used idle one."""
    server = endpoint(max_sessions=2, session_timeout=60)
    first = await open_session(server)
    second = await open_session(server)
    listed = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    # the first is used again: the second is now the least recently used
    assert (await server.handle("POST", first, body(listed))).status == 200
    third = await open_session(server)
    assert (await server.handle("POST", second, body(listed))).status == 404
    assert (await server.handle("POST", first, body(listed))).status == 200
    # every session idle past the timeout: all of them are forgotten at once
    for session in server.sessions.values():
        session.used = time.monotonic() - 120
    await open_session(server)
    assert len(server.sessions) == 1
    assert (await server.handle("POST", third, body(listed))).status == 404
    # an expired session is forgotten when it is next used
    [(key, session)] = server.sessions.items()
    session.used = time.monotonic() - 120
    expired = await server.handle("POST", {"mcp-session-id": key}, body(listed))
    assert expired.status == 404
    assert server.sessions == {}


async def test_a_full_table_of_busy_sessions_is_a_429_and_calls_end_well() -> None:
    """MCP-49, MCP-42: with every session running a call an initialize is 429; a
    reused id of a running call is 400 and the call goes on; notifications/cancelled
    cancels it (error -32800); a tool's error is the call's JSON-RPC error; DELETE and
    close() end what runs."""
    started = asyncio.Event()

    @tool
    async def hold() -> str:
        """Wait until cancelled."""
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("never released")

    server = endpoint(
        reply(call("hold", {})), reply(call("hold", {})), tools=[hold], max_sessions=1
    )
    session = await open_session(server)
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "helper", "arguments": {"task": "wait"}},
    }
    running = asyncio.ensure_future(server.handle("POST", session, body(request)))
    await started.wait()
    crowded = await server.handle("POST", {}, body(INIT))
    assert crowded.status == 429
    again = await server.handle("POST", session, body(request))
    assert again.status == 400
    assert "already in use" in decoded(again)["error"]["message"]
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 7},
    }
    assert (await server.handle("POST", session, body(cancel))).status == 202
    answer = await running
    assert decoded(answer)["error"]["code"] == REQUEST_CANCELLED
    # a notification, and a cancellation of a call that is not running: 202, nothing
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await server.handle("POST", session, body(initialized))).status == 202
    assert (await server.handle("POST", session, body(cancel))).status == 202
    no_method = {"jsonrpc": "2.0", "id": 8, "method": "no/such/method"}
    failed = decoded(await server.handle("POST", session, body(no_method)))
    assert failed["error"]["code"] == -32601
    # DELETE cancels the session's running call
    started.clear()
    request["id"] = 9
    running = asyncio.ensure_future(server.handle("POST", session, body(request)))
    await started.wait()
    assert (await server.handle("DELETE", session, body(b""))).status == 200
    assert decoded(await running)["error"]["code"] == REQUEST_CANCELLED
    assert (await server.handle("DELETE", session, body(b""))).status == 404
    await server.close()
    assert server.sessions == {}


async def test_an_unexpected_failure_of_a_call_is_an_internal_error() -> None:
    """MCP-42: an exception that is not the protocol's inside a call is answered as
    JSON-RPC error -32603 naming its type, and the session goes on."""
    server = endpoint()
    session = await open_session(server)
    connection = server.sessions[session["mcp-session-id"]].connection

    async def broken(method: str, params: dict[str, Any]) -> Any:
        raise RuntimeError("odd")

    connection.handle = broken
    answer = await server.handle(
        "POST", session, body({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    )
    error = decoded(answer)["error"]
    assert (answer.status, error["code"]) == (200, -32603)
    assert error["message"] == "RuntimeError: odd"


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        ({"max_sessions": 0}, "max_sessions"),
        ({"max_sessions": True}, "max_sessions"),
        ({"session_timeout": 0}, "session_timeout"),
        ({"read_timeout": "30"}, "read_timeout"),
    ],
)
def test_limits_are_checked_when_the_endpoint_is_made(
    limits: dict[str, Any], words: str
) -> None:
    """MCP-49: a limit that is not a positive number is a ValueError naming it."""
    with pytest.raises(ValueError, match=words):
        endpoint(**limits)


async def test_a_request_whose_client_left_does_not_cancel_its_call() -> None:
    """MCP-42: when the HTTP side of a request is cancelled (its client went away), the
    call itself goes on, still the session's call until it ends, so close() (and DELETE,
    notifications/cancelled) still reach it: no task is left behind."""
    started = asyncio.Event()
    ended: list[str] = []

    @tool
    async def hold() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.append("hold")
        raise AssertionError("never released")

    server = endpoint(reply(call("hold", {})), tools=[hold])
    session = await open_session(server)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "helper", "arguments": {"task": "wait"}},
    }
    answering = asyncio.ensure_future(server.handle("POST", session, body(request)))
    await started.wait()
    answering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await answering
    await asyncio.sleep(0.01)
    assert ended == []
    # still the session's call: close() reaches it, nothing is left running
    assert list(server.sessions[session["mcp-session-id"]].calls) == [1]
    await server.close()
    assert ended == ["hold"]
