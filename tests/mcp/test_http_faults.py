"""Fault injection for the HTTP client: a loopback aiohttp server that breaks an SSE
answer mid-stream (a real peer cannot be made to do that on demand) and expires sessions
(MCP-40)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from minagent_mcp_http import MCPStreamableHTTPTool

from minagent import MCPConnectionError

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "fake", "version": "1"},
}
TOOLS = {
    "tools": [
        {
            "name": "echo",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
            },
        }
    ]
}


class FakeServer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.expired = False

    async def post(self, request: web.Request) -> web.StreamResponse:
        message = json.loads(await request.read())
        self.seen.append((message.get("method", "answer"), dict(request.headers)))
        if self.expired and message.get("method") != "initialize":
            return web.Response(status=404)
        if "id" not in message:
            return web.Response(status=202)
        method, request_id = message["method"], message["id"]
        if method == "initialize":
            return web.json_response(
                {"jsonrpc": "2.0", "id": request_id, "result": INIT},
                headers={"Mcp-Session-Id": "s-1"},
            )
        if method == "tools/list":
            return web.json_response(
                {"jsonrpc": "2.0", "id": request_id, "result": TOOLS}
            )
        # tools/call: an SSE answer that breaks after its first event (id "e1")
        self.call_id = request_id
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        progress = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "working"},
        }
        await response.write(f"id: e1\ndata: {json.dumps(progress)}\n\n".encode())
        assert request.transport is not None
        request.transport.close()  # the connection breaks before the answer
        return response

    async def get(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(("GET", dict(request.headers)))
        if request.headers.get("Last-Event-ID") != "e1":
            return web.Response(status=405)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        answer = {
            "jsonrpc": "2.0",
            "id": self.call_id,
            "result": {"content": [{"type": "text", "text": "resumed"}]},
        }
        await response.write(f"id: e2\ndata: {json.dumps(answer)}\n\n".encode())
        return response

    async def delete(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(("DELETE", dict(request.headers)))
        return web.Response(status=200)


@asynccontextmanager
async def fake_server() -> AsyncIterator[tuple[FakeServer, str]]:
    fake = FakeServer()
    app = web.Application()
    app.router.add_post("/mcp", fake.post)
    app.router.add_get("/mcp", fake.get)
    app.router.add_delete("/mcp", fake.delete)
    runner = web.AppRunner(app)
    await runner.setup()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        yield fake, f"http://127.0.0.1:{port}/mcp"
    finally:
        await runner.cleanup()


async def test_broken_sse_answer_is_resumed_with_last_event_id() -> None:
    """MCP-40: a POST's SSE stream that breaks is resumed by GET with Last-Event-ID;
    headers carry the session."""
    async with fake_server() as (fake, url):
        async with MCPStreamableHTTPTool("fake", url, headers={"X-Key": "k"}) as server:
            assert await server.call_tool("echo", {"text": "x"}) == "resumed"
        resumed = [
            h for m, h in fake.seen if m == "GET" and h.get("Last-Event-ID") == "e1"
        ]
        assert resumed
        assert resumed[0]["Mcp-Session-Id"] == "s-1"
        assert resumed[0]["MCP-Protocol-Version"] == "2025-06-18"
        calls = [h for m, h in fake.seen if m == "tools/call"]
        assert calls[0]["Mcp-Session-Id"] == "s-1"
        assert calls[0]["X-Key"] == "k"
        assert "text/event-stream" in calls[0]["Accept"]
        assert "application/json" in calls[0]["Accept"]
        assert any(m == "DELETE" and h["Mcp-Session-Id"] == "s-1" for m, h in fake.seen)


async def test_expired_session_is_a_connection_error() -> None:
    """MCP-40: HTTP 404 for a known session says the session expired."""
    async with (
        fake_server() as (fake, url),
        MCPStreamableHTTPTool("fake", url) as server,
    ):
        fake.expired = True
        with pytest.raises(MCPConnectionError, match="'fake': the session has expired"):
            await server.call_tool("echo", {"text": "x"})


async def test_http_request_timeout() -> None:
    """MCP-7 over HTTP: the request timeout covers a server that holds the POST open."""
    blocked = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await blocked.wait()
        return web.Response(status=500)

    app = web.Application()
    app.router.add_post("/mcp", hang)
    runner = web.AppRunner(app)
    await runner.setup()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        tool = MCPStreamableHTTPTool(
            "hang", f"http://127.0.0.1:{port}/mcp", request_timeout=0.5
        )
        with pytest.raises(TimeoutError, match="'hang' did not answer 'initialize'"):
            await tool.connect()
    finally:
        blocked.set()
        await runner.cleanup()


def test_http_upstream_keywords() -> None:
    """MCP-14: http_client and header_provider say to use headers=;
    terminate_on_close=False skips DELETE."""
    with pytest.raises(TypeError, match=r"http_client=\.\.\.: .*headers="):
        MCPStreamableHTTPTool("x", "http://127.0.0.1:1/mcp", http_client=object())
    with pytest.raises(TypeError, match=r"header_provider=\.\.\.: pass the headers"):
        MCPStreamableHTTPTool("x", "http://127.0.0.1:1/mcp", header_provider=object())
    with pytest.raises(ValueError, match="http:// or https://"):
        MCPStreamableHTTPTool("x", "ftp://example.com/mcp")


async def test_terminate_on_close_false_keeps_the_session() -> None:
    """MCP-14: with terminate_on_close=False no DELETE is sent."""
    async with fake_server() as (fake, url):
        async with MCPStreamableHTTPTool("fake", url, terminate_on_close=False):
            pass
        assert not [m for m, _ in fake.seen if m == "DELETE"]
