"""The stdio transports under faults: a client against `faulty_server.py` (a server that
misbehaves on purpose), and ``python -m minagent mcp-serve`` fed what no SDK client
sends (MCP-2, MCP-8, MCP-10, MCP-30 .. MCP-34)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from minagent import Agent
from minagent.mcp.jsonrpc import (
    MCPConnectionError,
    MCPProtocolError,
    decode_message,
    encode_message,
)
from minagent.mcp.server import MCPServer
from minagent.mcp.stdio import MCPStdioTool
from minagent.testing import ScriptedChatClient

from .conftest import HERE, PYTHON, eventually, gone

ROOT = Path(__file__).resolve().parents[2]


def faulty_processes() -> list[int]:
    """Live children of this process running faulty_server.py (zombies included)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except (OSError, NotADirectoryError):
            continue
        if (
            int(stat.rpartition(")")[2].split()[1]) == os.getpid()
            and b"faulty_server.py" in cmdline
        ):
            found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True)
def no_faulty_server_survives() -> Iterator[None]:
    """MCP-10: whatever the fault, no server process of a test outlives it."""
    yield
    assert faulty_processes() == []


def faulty(mode: str, **kwargs: Any) -> MCPStdioTool:
    return MCPStdioTool(
        "faulty", PYTHON, args=[str(HERE / "faulty_server.py"), mode], **kwargs
    )


async def test_blank_lines_are_skipped() -> None:
    """MCP-2: blank lines between messages are skipped."""
    tool = faulty("blank")
    async with tool:
        await tool.ping()
        assert tool.server_info == {"name": "faulty", "version": "1"}
        pid = tool.pid
    assert pid is not None
    assert gone(pid)


async def test_line_longer_than_the_limit_is_a_protocol_error() -> None:
    """MCP-2, MCP-10: a line longer than 32 MiB is an MCPProtocolError; the connect
    closes the process."""
    tool = faulty("huge", shutdown_timeout=0.5)
    with pytest.raises(
        MCPProtocolError, match="'faulty' sent a message longer than 33554432 bytes"
    ) as info:
        await tool.connect()
    assert info.value.server == "faulty"
    assert not tool.is_connected
    assert tool.pid is None


async def test_closed_stdout_of_a_running_server_names_no_exit_code() -> None:
    """MCP-8: a server that closes its stdout but keeps running fails the request with
    MCPConnectionError saying it exited, without an exit code it does not have yet."""
    tool = faulty("close-stdout", shutdown_timeout=5)
    with pytest.raises(MCPConnectionError) as info:
        await tool.connect()
    assert str(info.value) == "MCP server 'faulty' exited"


async def test_server_that_closed_its_stdin_is_not_running() -> None:
    """MCP-8, MCP-10: once the server's stdin is closed, a request fails at once with
    MCPConnectionError; closing still stops and reaps the process (it needs SIGTERM)."""
    tool = faulty("deaf", shutdown_timeout=0.3)
    await tool.connect()
    pid = tool.pid
    transport: Any = tool._transport
    try:
        await eventually(lambda: transport.process.stdin.is_closing())
        with pytest.raises(MCPConnectionError, match="'faulty' is not running"):
            await tool.ping()
    finally:
        await tool.close()
    assert pid is not None
    assert gone(pid)
    assert transport.process.returncode == -signal.SIGTERM


async def test_server_that_stops_reading_fails_the_send() -> None:
    """MCP-8: a request that cannot be written because the server stopped reading and
    exited is an MCPConnectionError naming the server; the tool is then not
    connected."""
    tool = faulty("stops-reading", shutdown_timeout=0.5)
    await tool.connect()
    pid = tool.pid
    try:
        with pytest.raises(
            MCPConnectionError, match=r"MCP server 'faulty' (stopped reading|exited)"
        ):
            await tool.call_tool("anything", {"text": "x" * (4 * 1024 * 1024)})
        await eventually(lambda: not tool.is_connected)
    finally:
        await tool.close()
    assert pid is not None
    assert gone(pid)


# -- the server side --------------------------------------------------------------------------


def test_server_needs_an_agent_and_names_itself() -> None:
    """MCP-30: an object without `as_tool()` is a TypeError; the repr names server and
    tool."""
    with pytest.raises(
        TypeError, match="MCPServer needs an agent with as_tool\\(\\), got int"
    ):
        MCPServer(42)
    server = MCPServer(Agent(ScriptedChatClient([]), name="Helper"))
    assert repr(server) == "<MCPServer 'Helper' tool='Helper'>"


async def test_initialize_carries_instructions_and_ping_is_answered() -> None:
    """MCP-31: `initialize` answers with the instructions when set; `ping` is `{}` (the
    HTTP transport hands every request to the connection)."""
    server = MCPServer(
        Agent(ScriptedChatClient([]), name="Helper"), instructions="Ask for help."
    )
    connection = server.connection()
    assert await connection.handle("ping", {}) == {}
    result = await connection.handle("initialize", {"protocolVersion": "2025-03-26"})
    assert result["instructions"] == "Ask for help."
    assert result["protocolVersion"] == "2025-03-26"


@asynccontextmanager
async def mcp_serve(
    target: str = "tests.mcp.served_agent:agent", stdin: Any = asyncio.subprocess.PIPE
) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "minagent",
        "mcp-serve",
        target,
        cwd=str(ROOT),
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_blank_and_overlong_lines_to_the_server() -> None:
    """MCP-33, MCP-2: blank lines are skipped; a line longer than 32 MiB is answered
    with error -32700 (id null) and serving goes on."""
    async with mcp_serve() as process:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(
            b"\n   \n" + encode_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        )
        await process.stdin.drain()
        async with asyncio.timeout(30):
            assert decode_message(await process.stdout.readline()) == {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {},
            }
        process.stdin.write(b"x" * (33 * 1024 * 1024) + b"\n")
        process.stdin.write(
            encode_message({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        )
        await process.stdin.drain()
        errors = []
        async with asyncio.timeout(60):
            while (answer := decode_message(await process.stdout.readline())).get(
                "id"
            ) != 2:
                errors.append(answer)
        assert answer == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert errors
        assert all(e["id"] is None and e["error"]["code"] == -32700 for e in errors)
        assert "message longer than 33554432 bytes" in errors[0]["error"]["message"]
        process.stdin.close()
        async with asyncio.timeout(20):
            assert await process.wait() == 0


async def test_stdin_that_is_not_a_pipe_is_refused(tmp_path: Path) -> None:
    """MCP-33, MCP-34: serving needs stdin and stdout to be pipes or sockets; a regular
    file as stdin is a message saying so on stderr and exit status 2, never a
    traceback."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(encode_message({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
    with requests.open("rb") as stdin:
        async with mcp_serve(stdin=stdin) as process:
            async with asyncio.timeout(30):
                out, err = await process.communicate()
    assert process.returncode == 2
    assert out == b""
    assert b"error: run_stdio needs stdin and stdout to be pipes or sockets" in err
    assert b"Traceback" not in err


async def test_interrupt_stops_serving_with_status_130() -> None:
    """MCP-34: Ctrl-C (SIGINT) ends `mcp-serve` with exit status 130, without a
    traceback."""
    async with mcp_serve() as process:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdin.write(
            encode_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        )
        await process.stdin.drain()
        async with asyncio.timeout(30):
            assert decode_message(await process.stdout.readline())["id"] == 1
        os.kill(process.pid, signal.SIGINT)
        async with asyncio.timeout(20):
            assert await process.wait() == 130
        assert b"Traceback" not in await process.stderr.read()


async def test_serves_an_agent_without_an_async_context() -> None:
    """MCP-34, MCP-32: a target with `as_tool()` but no async context is served as it is
    (nothing to enter): its tool is listed and called; when stdin ends the process exits
    with 0."""
    async with mcp_serve("tests.mcp.plain_agent:agent") as process:
        assert process.stdin is not None
        assert process.stdout is not None
        call = {"name": "Plain", "arguments": {"task": "hello"}}
        for message in (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18"},
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
        ):
            process.stdin.write(encode_message(message))
        await process.stdin.drain()
        async with asyncio.timeout(30):
            answers = {
                m["id"]: m
                for m in [
                    decode_message(await process.stdout.readline()) for _ in range(3)
                ]
            }
        assert answers[1]["result"]["serverInfo"]["name"] == "Plain"
        assert [t["name"] for t in answers[2]["result"]["tools"]] == ["Plain"]
        assert answers[3]["result"] == {
            "content": [{"type": "text", "text": "answer: hello"}],
            "isError": False,
        }
        process.stdin.close()
        async with asyncio.timeout(20):
            assert await process.wait() == 0
