"""Streamable HTTP both ways with the plugin: our client against the SDK's FastMCP HTTP
server, the SDK's HTTP client against our aiohttp server (MCP-40 .. MCP-42)."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from minagent_mcp_http import MCPStreamableHTTPTool, SSEDecoder, make_app

from minagent import Agent, MCPConnectionError, MCPToolError
from minagent.testing import ScriptedChatClient, call

from .conftest import PYTHON, eventually, server_args
from .served_agent import make_agent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_fastmcp_http(
    mode: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    import os

    port = free_port()
    process = subprocess.Popen(
        [PYTHON, *server_args(mode), str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    process.kill()
    process.wait()
    raise RuntimeError("the FastMCP HTTP server did not start")


@pytest.fixture(scope="module", params=["http", "http-json"])
def fastmcp_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    marker = tmp_path_factory.mktemp("marker") / "marker"
    process, url = start_fastmcp_http(request.param, {"MCP_TEST_MARKER": str(marker)})
    try:
        yield url, marker
    finally:
        process.terminate()
        process.wait(10)


async def test_http_client_against_fastmcp(fastmcp_url: tuple[str, Path]) -> None:
    """MCP-40: handshake, session id, tools, structured, error and image results over
    HTTP (SSE and JSON answers)."""
    url, _ = fastmcp_url
    async with MCPStreamableHTTPTool(
        "web", url, headers={"Authorization": "Bearer s3cret-token"}
    ) as server:
        assert server.protocol_version == "2025-06-18"
        assert server.session_id
        assert {"echo", "weather", "picture"} <= {t.name for t in server.functions}
        assert await server.call_tool("weather", {"city": "Rome"}) == {
            "city": "Rome",
            "celsius": 21.5,
        }
        with pytest.raises(MCPToolError, match="failed because nope"):
            await server.call_tool("fail", {"reason": "nope"})
        [image] = await server.call_tool("picture", {})
        assert image.media_type == "image/png"
        await server.ping()
    assert not server.is_connected


async def test_http_cancel_reaches_fastmcp(fastmcp_url: tuple[str, Path]) -> None:
    """MCP-40, MCP-7: cancelling a call over HTTP sends notifications/cancelled; the
    server stops the tool."""
    url, marker = fastmcp_url
    marker.unlink(missing_ok=True)
    async with MCPStreamableHTTPTool("web", url) as server:
        task = asyncio.create_task(server.call_tool("slow", {"seconds": 30}))
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await eventually(marker.exists)
        assert await server.call_tool("echo", {"text": "on"}) == {"result": "echo: on"}


async def test_agent_with_http_server(
    fastmcp_url: tuple[str, Path], stream: bool
) -> None:
    """MCP-20, MCP-40: an agent connects an HTTP MCP server lazily and closes it with
    its context."""
    url, _ = fastmcp_url
    server = MCPStreamableHTTPTool("web", url, allowed_tools=["echo"])
    client = ScriptedChatClient([call("echo", {"text": "hey"}), "done"])
    async with Agent(client, tools=[server]) as agent:
        response = await (
            agent.run("go", stream=True).get_final_response()
            if stream
            else agent.run("go")
        )
    [result] = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert result.result == {"result": "echo: hey"}
    assert not server.is_connected


async def test_headers_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    """MCP-41: the authorization header appears in no repr, error message or log
    record."""
    secret = "Bearer sk-very-secret"
    tool = MCPStreamableHTTPTool(
        "web", f"http://127.0.0.1:{free_port()}/mcp", headers={"Authorization": secret}
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(MCPConnectionError) as info:
        await tool.connect()
    assert "cannot be reached" in str(info.value)
    assert "sk-very-secret" not in repr(tool)
    assert "sk-very-secret" not in str(info.value)
    assert not any("sk-very-secret" in r.getMessage() for r in caplog.records)


@asynccontextmanager
async def our_http_server(**kwargs: Any) -> AsyncIterator[str]:
    """`make_app(agent.as_mcp_server())` on a free local port, in this event loop."""
    from aiohttp import web

    runner = web.AppRunner(make_app(make_agent().as_mcp_server(), **kwargs))
    await runner.setup()
    port = free_port()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def sdk_http_session(url: str) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        yield session


async def test_sdk_http_client_against_our_server() -> None:
    """MCP-42, MCP-31: the SDK's Streamable HTTP client lists and calls the agent served
    by the plugin."""
    async with our_http_server() as url, sdk_http_session(url) as session:
        init = await session.initialize()
        assert init.serverInfo.name == "Task Runner"
        [tool] = (await session.list_tools()).tools
        assert tool.name == "Task_Runner"
        result = await session.call_tool("Task_Runner", {"task": "over http"})
        assert [c.text for c in result.content if isinstance(c, types.TextContent)] == [
            "answer: over http"
        ]


async def test_sdk_http_client_cancels_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MCP-42, MCP-32: the SDK's notifications/cancelled over HTTP cancels the agent
    run."""
    marker = tmp_path / "marker"
    monkeypatch.setenv("MCP_TEST_MARKER", str(marker))
    async with our_http_server() as url, sdk_http_session(url) as session:
        await session.initialize()
        request_id = session._request_id
        task = asyncio.create_task(
            session.call_tool("Task_Runner", {"task": "slow one"})
        )
        await asyncio.sleep(1.0)
        notification = types.CancelledNotification(
            params=types.CancelledNotificationParams(
                requestId=request_id, reason="test"
            )
        )
        await session.send_notification(types.ClientNotification(notification))
        await eventually(marker.exists)
        with pytest.raises(McpError, match="request cancelled") as info:
            await task  # HTTP needs an answer to the POST: error -32800
        assert info.value.error.code == -32800
        after = await session.call_tool("Task_Runner", {"task": "next"})
        assert after.content[0].text == "answer: next"  # type: ignore[union-attr]


async def test_our_client_against_our_server() -> None:
    """MCP-40, MCP-42: the plugin's client and server agree (session id, JSON answers,
    DELETE on close)."""
    async with our_http_server() as url:
        async with MCPStreamableHTTPTool("agent", url) as server:
            [tool] = server.functions
            assert await tool.invoke({"task": "ping"}) == "answer: ping"
            session_id = server.session_id
        async with aiohttp.ClientSession() as http:  # the session was deleted on close
            headers = {
                "Mcp-Session-Id": str(session_id),
                "Accept": "application/json, text/event-stream",
            }
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            async with http.post(url, json=body, headers=headers) as response:
                assert response.status == 404


async def test_server_http_checks() -> None:
    """MCP-42: origin, protocol version, session id and method checks answer with the
    specified status."""
    async with our_http_server() as url, aiohttp.ClientSession() as http:
        accept = {"Accept": "application/json, text/event-stream"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
        async with http.post(
            url, json=init, headers={**accept, "Origin": "http://evil.example"}
        ) as response:
            assert response.status == 403
        async with http.post(
            url, json=init, headers={**accept, "MCP-Protocol-Version": "1999-01-01"}
        ) as response:
            assert response.status == 400
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        async with http.post(url, json=listing, headers=accept) as response:
            assert response.status == 400  # no session id
        async with http.post(url, json=[listing], headers=accept) as response:
            assert response.status == 400  # no batches in 2025-06-18
        async with http.get(url, headers={"Accept": "text/event-stream"}) as response:
            assert response.status == 405
        async with http.post(
            url, json=init, headers={**accept, "Origin": "http://localhost:3000"}
        ) as response:
            assert response.status == 200
            session_id = response.headers["Mcp-Session-Id"]
        notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with http.post(
            url, json=notification, headers={**accept, "Mcp-Session-Id": session_id}
        ) as response:
            assert response.status == 202
        async with http.delete(url, headers={"Mcp-Session-Id": session_id}) as response:
            assert response.status == 200
        async with http.delete(url, headers={"Mcp-Session-Id": session_id}) as response:
            assert response.status == 404


def test_sse_decoder_any_chunking() -> None:
    """MCP-40: SSE events decode the same for every split of the byte stream (CRLF
    across chunks too)."""
    stream = b'id: 7\r\nevent: message\r\ndata: {"a":\r\ndata: 1}\r\n\r\n: comment\n\ndata: x\r\rdata: y\n\n'
    expected = SSEDecoder().feed(stream)
    assert [(e.event, e.data, e.id) for e in expected] == [
        ("message", '{"a":\n1}', "7"),
        ("message", "x", "7"),
        ("message", "y", "7"),
    ]
    for cut in range(len(stream) + 1):
        for second in range(cut, len(stream) + 1):
            decoder = SSEDecoder()
            got = (
                decoder.feed(stream[:cut])
                + decoder.feed(stream[cut:second])
                + decoder.feed(stream[second:])
            )
            assert got == expected, (cut, second)


async def test_run_http_uses_the_plugin() -> None:
    """MCP-35: MCPServer.run_http serves through the plugin's entry point until
    cancelled."""
    port = free_port()
    serving = asyncio.create_task(
        make_agent().as_mcp_server().run_http("127.0.0.1", port)
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        await eventually(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0)
        async with MCPStreamableHTTPTool("agent", url) as server:
            assert (
                await server.functions[0].invoke({"task": "via run_http"})
                == "answer: via run_http"
            )
    finally:
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving


async def test_run_http_without_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """MCP-35: without an HTTP plugin, run_http gives the command that installs it from
    a checkout."""
    import minagent.providers.registry
    from minagent import PluginNotFoundError

    monkeypatch.setattr(minagent.providers.registry, "entry_points", lambda group: [])
    with pytest.raises(
        PluginNotFoundError,
        match=r"`pip install -e \. -e plugins/http -e plugins/mcp-http`",
    ):
        await make_agent().as_mcp_server().run_http()


_event_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\0"),
    max_size=20,
)


@given(
    events=st.lists(
        st.tuples(
            st.lists(_event_text, min_size=1, max_size=3), st.none() | _event_text
        ),
        max_size=5,
    ),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6),
)
def test_sse_decoder_property(
    events: list[tuple[list[str], str | None]], newline: str, cuts: list[int]
) -> None:
    """MCP-40: any events, any line ending, any chunking: the decoder gives back each
    event's data and id."""
    wire = ""
    expected = []
    last_id = None
    for lines, event_id in events:
        if event_id is not None:
            wire += f"id: {event_id}{newline}"
            last_id = event_id
        wire += "".join(f"data: {line}{newline}" for line in lines) + newline
        expected.append(("message", "\n".join(lines), last_id))
    data = wire.encode()
    decoder = SSEDecoder()
    got = []
    start = 0
    for cut in sorted(c for c in cuts if c <= len(data)):
        got += decoder.feed(data[start:cut])
        start = cut
    got += decoder.feed(data[start:])
    assert [(e.event, e.data, e.id) for e in got] == expected


async def test_disconnect_is_not_cancellation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MCP-42: a client that drops the POST does not cancel its call; DELETE of the
    session does."""
    marker = tmp_path / "marker"
    monkeypatch.setenv("MCP_TEST_MARKER", str(marker))
    accept = {"Accept": "application/json, text/event-stream"}
    async with our_http_server() as url, aiohttp.ClientSession() as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
        async with http.post(url, json=init, headers=accept) as response:
            session = {**accept, "Mcp-Session-Id": response.headers["Mcp-Session-Id"]}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        call["params"] = {"name": "Task_Runner", "arguments": {"task": "slow"}}
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.0):
                # dropped after one second
                await http.post(url, json=call, headers=session)
        await asyncio.sleep(1.0)
        assert not marker.exists()  # still running
        async with http.delete(url, headers=session) as response:
            assert response.status == 200
        assert marker.read_text() == "cancelled"
