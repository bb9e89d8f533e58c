"""The official SDK's stdio client against ``python -m minagent mcp-serve`` (MCP-30 ..
MCP-34)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

import minagent
from minagent import MCPServer
from minagent.mcp.jsonrpc import decode_message, encode_message
from minagent.testing import ScriptedChatClient

from .conftest import PYTHON, eventually

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def sdk_client(
    target: str = "tests.mcp.served_agent:agent", **env: str
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=PYTHON,
        args=["-m", "minagent", "mcp-serve", target],
        cwd=str(ROOT),
        env={**os.environ, **env},
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session


async def test_sdk_lists_and_calls_the_agent() -> None:
    """MCP-30, MCP-31, MCP-34: initialize, the agent's tool in tools/list, a call
    answered by the agent."""
    async with sdk_client() as session:
        init = await session.initialize()
        assert init.serverInfo.name == "Task Runner"
        assert init.serverInfo.version == minagent.__version__
        assert init.capabilities.tools is not None
        listed = await session.list_tools()
        [tool] = listed.tools
        assert tool.name == "Task_Runner"
        assert tool.description == "Runs a task and answers."
        assert tool.inputSchema["required"] == ["task"]
        result = await session.call_tool("Task_Runner", {"task": "say hi"})
        assert not result.isError
        assert [c.text for c in result.content if isinstance(c, types.TextContent)] == [
            "answer: say hi"
        ]
        await session.send_ping()


async def test_sdk_bad_calls() -> None:
    """MCP-31: unknown tool is error -32602; invalid arguments are an isError result
    naming the problem."""
    async with sdk_client("tests.mcp.served_agent:make_agent") as session:
        await session.initialize()
        bad = await session.call_tool("Task_Runner", {"task": 7})
        assert bad.isError
        text = bad.content[0].text  # type: ignore[union-attr]
        assert "Invalid arguments for Task_Runner" in text
        assert "$.task" in text
        with pytest.raises(McpError, match="unknown tool") as info:
            await session.call_tool("nope", {})
        assert info.value.error.code == -32602


async def test_stray_print_goes_to_stderr() -> None:
    """MCP-33: a print() in the served agent does not corrupt the protocol stream."""
    async with sdk_client("tests.mcp.served_agent:make_agent_async") as session:
        await session.initialize()
        result = await session.call_tool("Task_Runner", {"task": "print"})
        assert result.content[0].text == "answer: print"  # type: ignore[union-attr]


async def test_sdk_cancels_a_call(tmp_path: Path) -> None:
    """MCP-32: notifications/cancelled from the SDK cancels the agent run (its tool sees
    it)."""
    marker = tmp_path / "marker"
    async with sdk_client(MCP_TEST_MARKER=str(marker)) as session:
        await session.initialize()
        request_id = session._request_id  # the id the next request will get
        call = asyncio.create_task(
            session.call_tool("Task_Runner", {"task": "slow please"})
        )
        await asyncio.sleep(1.5)
        await session.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    params=types.CancelledNotificationParams(
                        requestId=request_id, reason="test"
                    )
                )
            )
        )
        await eventually(marker.exists)
        assert marker.read_text() == "cancelled"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # still serving
        result = await session.call_tool("Task_Runner", {"task": "after"})
        assert result.content[0].text == "answer: after"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests.mcp.served_agent", "expected module:attribute"),
        ("tests.mcp.nowhere:agent", "cannot import module 'tests.mcp.nowhere'"),
        ("tests.mcp.served_agent:missing", "has no attribute 'missing'"),
        ("tests.mcp.served_agent:not_an_agent", "is int, not an agent"),
    ],
)
def test_mcp_serve_bad_target(target: str, message: str) -> None:
    """MCP-34: a bad target is a message on stderr and exit status 2."""
    done = subprocess.run(
        [sys.executable, "-m", "minagent", "mcp-serve", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_as_mcp_server_defaults() -> None:
    """MCP-30: the server exposes the agent's as_tool(); names and version default
    sensibly."""
    from minagent import Agent

    agent = Agent(ScriptedChatClient([]), name="Helper", description="Helps.")
    server = agent.as_mcp_server()
    assert isinstance(server, MCPServer)
    assert server.name == "Helper"
    assert server.version == minagent.__version__
    assert server.tool_declaration() == {
        "name": "Helper",
        "description": "Helps.",
        "inputSchema": agent.as_tool().parameters,
    }
    named = Agent(ScriptedChatClient([])).as_mcp_server(
        server_name="s", version="9", instructions="Use it."
    )
    assert (named.name, named.version, named.instructions, named.tool.name) == (
        "s",
        "9",
        "Use it.",
        "agent",
    )


async def test_client_going_away_cancels_running_calls(tmp_path: Path) -> None:
    """MCP-32: when stdin ends, mcp-serve cancels the running agent call and exits."""
    marker = tmp_path / "marker"
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "minagent",
        "mcp-serve",
        "tests.mcp.served_agent:agent",
        cwd=str(ROOT),
        env={**os.environ, "MCP_TEST_MARKER": str(marker)},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write(
            encode_message(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
            )
        )
        process.stdin.write(
            encode_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        call = {"name": "Task_Runner", "arguments": {"task": "slow"}}
        process.stdin.write(
            encode_message(
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
            )
        )
        await process.stdin.drain()
        first = decode_message(await process.stdout.readline())
        assert first["id"] == 1
        assert first["result"]["serverInfo"]["name"] == "Task Runner"
        await asyncio.sleep(1.0)
        process.stdin.close()
        async with asyncio.timeout(20):
            assert await process.wait() == 0
        assert marker.read_text() == "cancelled"
        assert await process.stdout.read() == b""  # no answer for the cancelled call
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_garbage_line_gets_a_parse_error_and_serving_goes_on() -> None:
    """MCP-33: a line that is not JSON-RPC is answered with error -32700; the next
    message is served."""
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "minagent",
        "mcp-serve",
        "tests.mcp.served_agent:agent",
        cwd=str(ROOT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write(b"this is not json\n")
        process.stdin.write(
            encode_message({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        )
        await process.stdin.drain()
        async with asyncio.timeout(30):
            error = decode_message(await process.stdout.readline())
            pong = decode_message(await process.stdout.readline())
        assert error["id"] is None
        assert error["error"]["code"] == -32700
        assert pong == {"jsonrpc": "2.0", "id": 7, "result": {}}
        process.stdin.close()
        async with asyncio.timeout(20):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_requests_that_cannot_run_get_invalid_request() -> None:
    """MCP-36: a request with a null, float or bool id is answered -32600 with id null;
    a request whose id a running call uses is answered -32600 with that id while the
    call goes on; serving goes on after both."""
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "minagent",
        "mcp-serve",
        "tests.mcp.served_agent:agent",
        cwd=str(ROOT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        send = process.stdin.write
        send(
            encode_message(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
            )
        )
        send(encode_message({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        slow = {"name": "Task_Runner", "arguments": {"task": "slow"}}
        send(
            encode_message(
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": slow}
            )
        )
        await process.stdin.drain()
        async with asyncio.timeout(30):
            assert decode_message(await process.stdout.readline())["id"] == 1
        send(encode_message({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        for bad in (None, 1.5, True):
            send(encode_message({"jsonrpc": "2.0", "id": bad, "method": "ping"}))
        send(encode_message({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
        await process.stdin.drain()
        async with asyncio.timeout(30):
            answers = [
                decode_message(await process.stdout.readline()) for _ in range(5)
            ]
        refused = [a for a in answers if "error" in a]
        assert sorted((a["id"] is None, a["error"]["code"]) for a in refused) == [
            (False, -32600),
            (True, -32600),
            (True, -32600),
            (True, -32600),
        ]
        assert [a["id"] for a in refused if a["id"] is not None] == [2]
        assert (
            "already in use"
            in next(a for a in refused if a["id"] == 2)["error"]["message"]
        )
        assert {"jsonrpc": "2.0", "id": 9, "result": {}} in answers
        process.stdin.close()
        async with asyncio.timeout(20):
            assert await process.wait() == 0
        # the slow call was cancelled, not answered
        assert await process.stdout.read() == b""
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
