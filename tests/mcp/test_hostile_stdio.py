"""Hostile stdio peers, as real subprocesses: servers that leave processes holding their
pipes, flood requests, page for ever or send what no parser follows, and a client that
feeds ``mcp-serve`` malformed lines (MCP-43, MCP-44, MCP-47, MCP-48).

Every test leaves no process of its own running, no task and no file descriptor."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from minagent import Agent
from minagent.mcp.jsonrpc import MAX_PEER_REQUESTS, MCPProtocolError
from minagent.mcp.stdio import MCPStdioTool
from minagent.testing import ScriptedChatClient, call

from .conftest import HERE, PYTHON, eventually, gone

ROOT = Path(__file__).resolve().parents[2]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def no_descriptor_left() -> Iterator[None]:
    """Every test closes what it opened: the same number of file descriptors after it as
    before."""
    before = open_fds()
    yield
    assert open_fds() == before


def hostile(mode: str, *args: str, **kwargs: object) -> MCPStdioTool:
    return MCPStdioTool(
        "hostile", PYTHON, args=[str(HERE / "hostile_server.py"), mode, *args], **kwargs
    )  # type: ignore[arg-type]


def running(pid: int) -> bool:
    """The process exists and is not a zombie (an orphaned zombie waits for init, not
    for us)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def pid_in(path: Path) -> int:
    return int(path.read_text())


async def read_pid(path: Path) -> int:
    await eventually(path.exists)
    return pid_in(path)


async def test_leaving_the_agent_ends_what_the_server_left_in_its_group(
    tmp_path: Path,
) -> None:
    """MCP-43, MCP-10: a server whose child inherited its stdout and stderr is closed,
    when the agent's context exits, without waiting for those pipes: the child is ended
    with the server's process group, and the server is reaped."""
    pid_file = tmp_path / "grandchild"
    tool = hostile("grandchild", str(pid_file), shutdown_timeout=0.5)
    agent = Agent(ScriptedChatClient([]), tools=[tool])
    async with asyncio.timeout(30):  # a hang is the failure this test looks for
        async with agent:
            await agent._enter(tool)
            server, grandchild = tool.pid, await read_pid(pid_file)
            assert server is not None
            assert running(grandchild)
    assert not tool.is_connected
    assert gone(server)
    await eventually(lambda: not running(grandchild))


async def test_a_daemon_holding_the_pipes_does_not_hold_up_close(
    tmp_path: Path,
) -> None:
    """MCP-43: a daemon that left the server's process group and keeps its stdout and
    stderr open cannot make close() wait: our ends of the pipes are closed and the
    server is reaped. The daemon, outside the group, is not the client's to end (the
    test ends it)."""
    pid_file = tmp_path / "daemon"
    tool = hostile("daemon", str(pid_file), shutdown_timeout=0.3)
    daemon = 0
    try:
        async with asyncio.timeout(30):
            async with tool:
                server, daemon = tool.pid, await read_pid(pid_file)
                await tool.ping()
        assert server is not None
        assert gone(server)
        assert running(daemon)
    finally:
        if daemon:
            os.kill(daemon, signal.SIGKILL)


async def test_a_flood_of_server_requests_holds_a_bounded_number_of_tasks() -> None:
    """MCP-44: a server that sends thousands of pings and never reads an answer makes
    the session hold at most 64 of them at a time (the reader stops reading), and
    closing still ends it all."""
    tool = hostile("flood", "5000", shutdown_timeout=0.3, load_tools=False)
    async with asyncio.timeout(60):
        async with tool:
            session = tool._session
            assert session is not None
            most = 0
            for _ in range(100):  # 1 s of flood
                most = max(most, len(session._handlers))
                assert len(asyncio.all_tasks()) <= MAX_PEER_REQUESTS + 8
                await asyncio.sleep(0.01)
            assert most == MAX_PEER_REQUESTS


async def test_endless_paging_is_a_protocol_error() -> None:
    """MCP-48, MCP-10: a server that answers every tools/list page with a fresh
    nextCursor makes connect() fail with MCPProtocolError naming the bound, after 100
    pages; nothing is left running."""
    tool = hostile("endless", shutdown_timeout=0.3)
    async with asyncio.timeout(30):
        with pytest.raises(
            MCPProtocolError, match=r"'hostile': tools/list has more than 100 pages"
        ) as info:
            await tool.connect()
    assert info.value.server == "hostile"
    assert not tool.is_connected
    assert tool.pid is None


async def test_a_line_nested_too_deeply_is_a_protocol_error() -> None:
    """MCP-47, MCP-2: an answer nested 100,000 levels deep is a line that is not JSON:
    an MCPProtocolError naming the server, not a RecursionError; connect() closes the
    process."""
    tool = hostile("deep", shutdown_timeout=0.3)
    async with asyncio.timeout(30):
        with pytest.raises(
            MCPProtocolError, match=r"'hostile' sent a line that is not JSON"
        ):
            await tool.connect()
    assert tool.pid is None


MALFORMED = {
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "requestId-list": json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": [1]},
        }
    ).encode(),
    "requestId-object": json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": {"a": 1}},
        }
    ).encode(),
    "requestId-true": json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": True},
        }
    ).encode(),
}


@pytest.mark.parametrize("line", sorted(MALFORMED))
async def test_one_malformed_line_does_not_stop_mcp_serve(line: str) -> None:
    """MCP-47, MCP-33: after a line nested 100,000 deep (answered with -32700) or a
    notifications/cancelled whose requestId is a list, an object or a bool (ignored),
    ``mcp-serve`` answers the next request and exits cleanly when its input ends."""
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
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        process.stdin.write(MALFORMED[line] + b"\n" + json.dumps(ping).encode() + b"\n")
        await process.stdin.drain()
        answers = []
        async with asyncio.timeout(30):
            while not answers or answers[-1].get("id") != 7:
                answers.append(json.loads(await process.stdout.readline()))
        assert answers[-1] == {"jsonrpc": "2.0", "id": 7, "result": {}}
        errors = [a["error"]["code"] for a in answers[:-1]]
        assert errors == ([-32700] if line == "deep" else [])
        process.stdin.close()
        async with asyncio.timeout(30):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_server_tool_with_a_schema_minagent_cannot_apply_still_runs(
    stream: bool,
) -> None:
    """SC-57, MCP-4: a server tool whose schema uses an ECMAScript ``\\p{L}`` pattern
    and ``type: any`` is called: those parts are left to the server, the rest (``name``
    required) is still checked."""
    tool = hostile("js-schema", shutdown_timeout=0.3)
    steps = [
        call("greet", {"extra": 1}, call_id="c1"),
        call("greet", {"name": "Zoë", "extra": [1]}, call_id="c2"),
        "ok",
    ]
    agent = Agent(ScriptedChatClient(steps), tools=[tool])
    async with asyncio.timeout(60), agent:
        if stream:
            result = agent.run("go", stream=True)
            async for _ in result:
                pass
            answer = await result.get_final_response()
        else:
            answer = await agent.run("go")
    results = {
        c.call_id: c.result
        for m in answer.messages
        for c in m.contents
        if c.type == "function_result"
    }
    assert "$.name: required property is missing" in results["c1"]
    assert results["c2"] == "hello Zoë"
    assert answer.text == "ok"
