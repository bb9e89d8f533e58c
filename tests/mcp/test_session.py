"""The JSON-RPC session and the server's request handling, over an in-memory transport
pair.

These are our own loopback fakes, used for what a real peer cannot be made to do on
demand (a server-initiated request, a request before initialize); everything else is
tested against the official SDK.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import Agent, MCPRequestError
from minagent.mcp.jsonrpc import (
    MCPConnectionError,
    Session,
    decode_message,
    encode_message,
)
from minagent.mcp.server import MCPServer
from minagent.testing import ScriptedChatClient


class Pipe:
    """One direction of an in-memory connection; closing it ends the other side's
    stream."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.peer: Pipe | None = None

    async def send(self, message: dict[str, Any]) -> None:
        assert self.peer is not None
        self.peer.inbox.put_nowait(decode_message(encode_message(message)))

    async def receive(self) -> dict[str, Any] | None:
        return await self.inbox.get()

    async def aclose(self) -> None:
        assert self.peer is not None
        self.peer.inbox.put_nowait(None)


def pipes() -> tuple[Pipe, Pipe]:
    a, b = Pipe(), Pipe()
    a.peer, b.peer = b, a
    return a, b


async def test_server_ping_answered_and_other_requests_refused() -> None:
    """MCP-9: a ping from the server is answered; any other server request gets
    -32601."""
    client_end, server_end = pipes()
    client = Session(client_end, name="client")
    server = Session(server_end, name="server")
    client.start()
    server.start()
    try:
        assert await server.request("ping", timeout=5) == {}
        with pytest.raises(
            MCPRequestError, match="method not found: sampling/createMessage"
        ) as info:
            await server.request("sampling/createMessage", {}, timeout=5)
        assert info.value.code == -32601
    finally:
        await client.aclose()
        await server.aclose()


async def test_peer_gone_fails_pending_requests() -> None:
    """MCP-8: when the stream ends, a waiting request fails at once with
    MCPConnectionError."""
    client_end, server_end = pipes()
    client = Session(client_end, name="srv")
    client.start()
    try:
        waiting = asyncio.create_task(client.request("tools/list", timeout=30))
        await asyncio.sleep(0)
        await server_end.aclose()
        with pytest.raises(MCPConnectionError, match="'srv' closed the connection"):
            await waiting
        with pytest.raises(MCPConnectionError):
            await client.request("ping", timeout=1)
    finally:
        await client.aclose()


async def test_connection_rules() -> None:
    """MCP-31: requests before initialize are -32600; version negotiation; unknown
    methods are -32601."""
    server = MCPServer(Agent(ScriptedChatClient(["hi"]), name="A"))
    connection = server.connection()
    with pytest.raises(MCPRequestError) as early:
        await connection.handle("tools/list", {})
    assert early.value.code == -32600
    assert (await connection.handle("initialize", {"protocolVersion": "2024-11-05"}))[
        "protocolVersion"
    ] == "2024-11-05"
    other = server.connection()
    assert (await other.handle("initialize", {"protocolVersion": "2099-01-01"}))[
        "protocolVersion"
    ] == "2025-06-18"
    with pytest.raises(MCPRequestError) as unknown:
        await connection.handle("resources/list", {})
    assert unknown.value.code == -32601
    failed = await connection.handle("tools/call", {"name": "A", "arguments": {}})
    assert failed["isError"] is True
    assert (
        "$.task" in failed["content"][0]["text"]
        or "task" in failed["content"][0]["text"]
    )


async def test_failing_run_is_an_error_result() -> None:
    """MCP-31: a run that raises is an isError result naming the exception."""
    server = MCPServer(
        Agent(ScriptedChatClient([RuntimeError("model down")]), name="A")
    )
    connection = server.connection()
    await connection.handle("initialize", {})
    result = await connection.handle(
        "tools/call", {"name": "A", "arguments": {"task": "x"}}
    )
    assert result == {
        "content": [{"type": "text", "text": "RuntimeError: model down"}],
        "isError": True,
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    params=st.dictionaries(st.text(), json_values, max_size=5),
    request_id=st.integers() | st.text(),
)
def test_framing_is_one_line_for_any_message(
    params: dict[str, Any], request_id: int | str
) -> None:
    """MCP-2: any message encodes to exactly one line (newlines in strings escaped) and
    decodes back."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": "m", "params": params}
    line = encode_message(message)
    assert line.endswith(b"\n")
    assert b"\n" not in line[:-1]
    assert b"\r" not in line
    assert decode_message(line) == json.loads(json.dumps(message))


async def test_failing_progress_callback_keeps_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """MCP-9: a progress callback that raises is logged; the call and the connection go
    on."""
    client_end, server_end = pipes()
    errors: list[str] = []
    client = Session(
        client_end, name="cb", on_notification=lambda m, p: errors.append(m) or 1 / 0
    )  # type: ignore[func-returns-value]
    client.start()
    try:
        waiting = asyncio.create_task(client.request("tools/call", timeout=5))
        await asyncio.sleep(0)
        await server_end.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progress": 1},
            }
        )
        await server_end.send({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}})
        assert await waiting == {"ok": True}
        assert errors == ["notifications/progress"]
        assert any(
            "handling 'notifications/progress' failed" in r.getMessage()
            for r in caplog.records
        )
    finally:
        await client.aclose()
