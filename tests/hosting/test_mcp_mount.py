"""Each hosted agent as an MCP server at /mcp/{name}, driven by the official `mcp` SDK's
Streamable HTTP client (spec/hosting.md HS-170 .. HS-173)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from minagent import Agent, tool
from minagent.hosting import HostingApp
from minagent.hosting.server import serve
from minagent.testing import ScriptedChatClient, call, reply


def agent(name: str, *answers: str) -> Agent:
    return Agent(
        ScriptedChatClient(list(answers)), name=name, description=f"The {name} agent."
    )


@asynccontextmanager
async def served(app: HostingApp) -> AsyncIterator[str]:
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def test_the_sdk_lists_and_calls_each_agent_at_its_path() -> None:
    """HS-170: the SDK initializes, lists the agent's one tool and calls it, for two
    agents on one application, each at /mcp/{name}."""
    app = HostingApp([agent("planner", "a plan"), agent("critic", "a critique")])
    async with served(app) as base:
        for name, answer in (("planner", "a plan"), ("critic", "a critique")):
            async with (
                streamable_http_client(f"{base}/mcp/{name}") as (read, write, _),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.serverInfo.name == name
                [tool] = (await session.list_tools()).tools
                assert tool.name == name
                result = await session.call_tool(name, {"task": "go"})
                texts = [
                    c.text for c in result.content if isinstance(c, types.TextContent)
                ]
                assert texts == [answer]


async def raw(
    app: HostingApp,
    method: str,
    path: str,
    body: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int, dict[str, str], Any]:
    sent: list[dict[str, Any]] = []
    chunks = [body]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": headers or []}
    await app(scope, receive, send)
    data = b"".join(m.get("body", b"") for m in sent[1:])
    head = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    return int(sent[0]["status"]), head, json.loads(data) if data else None


INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
).encode()


@pytest.mark.parametrize("name", ["nobody", "plain"])
async def test_an_unknown_or_unservable_agent_is_a_json_rpc_404(name: str) -> None:
    """HS-171: a name that is no hosted agent, or an agent without as_mcp_server, is a
    404 whose JSON-RPC error names it."""

    class Plain:
        name = "plain"

        async def run(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("never run")

    app = HostingApp([agent("planner"), Plain()])  # type: ignore[list-item]
    status, _, body = await raw(app, "POST", f"/mcp/{name}", INIT)
    assert status == 404
    assert body["error"]["code"] == -32600
    assert repr(name) in body["error"]["message"]


async def test_the_body_cap_holds_for_mcp() -> None:
    """HS-172: a body over the application's cap is a 413 with a JSON-RPC error."""
    app = HostingApp([agent("planner")], max_body=100)
    status, _, body = await raw(app, "POST", "/mcp/planner", b" " * 101)
    assert status == 413
    assert body["error"]["code"] == -32600
    status, _, body = await raw(app, "POST", "/mcp/planner", INIT)
    assert status == 413


async def test_lifespan_shutdown_cancels_running_calls_and_forgets_sessions() -> None:
    """HS-173: shutdown cancels a running MCP call (its answer is request cancelled)
    and the session's id is unknown after."""
    started = asyncio.Event()

    @tool
    async def hold() -> str:
        """Wait until cancelled."""
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("never released")

    client = ScriptedChatClient([reply(call("hold", {}))])
    app = HostingApp([Agent(client, name="slow", tools=[hold])])
    status, head, _ = await raw(app, "POST", "/mcp/slow", INIT)
    assert status == 200
    session = [(b"mcp-session-id", head["mcp-session-id"].encode())]
    request = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"task": "wait"}},
        }
    ).encode()
    running = asyncio.ensure_future(raw(app, "POST", "/mcp/slow", request, session))
    await started.wait()
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    acknowledged: list[str] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        acknowledged.append(message["type"])

    await app({"type": "lifespan"}, receive, send)
    assert acknowledged[-1] == "lifespan.shutdown.complete"
    status, _, body = await running
    assert body["error"]["code"] == -32800
    listed = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).encode()
    status, _, body = await raw(app, "POST", "/mcp/slow", listed, session)
    assert status == 404
