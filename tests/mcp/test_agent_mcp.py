"""An Agent whose (scripted) model calls MCP tools: lazy connection inside the agent's
exit stack."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from minagent import Agent, ToolError, tool
from minagent._toolset import expand_tool_sets
from minagent.mcp.stdio import MCPStdioTool
from minagent.testing import ScriptedChatClient, call

from .conftest import PYTHON, eventually, gone, server_args


def fastmcp(name: str = "weather", **kwargs: Any) -> MCPStdioTool:
    return MCPStdioTool(name, PYTHON, args=server_args(), **kwargs)


def results(response: Any) -> list[Any]:
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


async def test_agent_connects_on_first_use_and_closes_with_its_context(
    stream: bool,
) -> None:
    """MCP-20: not connected at construction; connected by the first run; the agent's
    exit closes it."""
    server = fastmcp(allowed_tools=["weather", "echo"])
    client = ScriptedChatClient(
        [call("weather", {"city": "Oslo"}), "It is 21.5 degrees."]
    )
    agent = Agent(client, tools=[server])
    assert not server.is_connected
    async with agent:
        # MCP-20: `async with agent` connects the agent's own tools
        assert server.is_connected
        pid = server.pid
        if stream:
            response = await agent.run("weather?", stream=True).get_final_response()
        else:
            response = await agent.run("weather?")
        assert response.text == "It is 21.5 degrees."
        [result] = results(response)
        assert result.result == {"city": "Oslo", "celsius": 21.5}
        declared = [t.name for t in client.requests[0].options["tools"]]
        # the server's tools, not the server
        assert sorted(declared) == ["echo", "weather"]
    assert not server.is_connected
    assert pid is not None
    assert gone(pid)


async def test_run_level_server_connects_lazily(stream: bool) -> None:
    """MCP-20, AG-9: a server given to run() inside `async with agent` connects during
    that run and stays until the agent's context exits; outside such a block it is
    closed when the run ends."""
    server = fastmcp(allowed_tools=["echo"])
    client = ScriptedChatClient(
        [
            call("echo", {"text": "hi"}),
            "done",
            "again",
            call("echo", {"text": "x"}),
            "end",
        ]
    )
    agent = Agent(client)
    async with agent:
        assert not server.is_connected
        if stream:
            updates = [u async for u in agent.run("go", stream=True, tools=[server])]
            assert any(c.type == "function_result" for u in updates for c in u.contents)
        else:
            response = await agent.run("go", tools=[server])
            assert results(response)[0].result == {"result": "echo: hi"}
        assert server.is_connected
        pid = server.pid
        await agent.run("more", tools=[server])  # the same connection is reused
        assert server.pid == pid
    assert not server.is_connected
    # no `async with`: this run's only
    response = await agent.run("outside", tools=[server])
    assert results(response)[0].result == {"result": "echo: x"}
    assert not server.is_connected
    assert gone(pid)


async def test_tool_error_is_shown_to_the_model() -> None:
    """MCP-12: an isError result reaches the model as an error result with the server's
    text."""
    client = ScriptedChatClient([call("fail", {"reason": "no data"}), "sorry"])
    async with Agent(client, tools=[fastmcp(allowed_tools=["fail"])]) as agent:
        response = await agent.run("go")
    [result] = results(response)
    assert result.exception
    assert "failed because no data" in str(result.result)


async def test_invalid_arguments_never_reach_the_server() -> None:
    """MCP-4: the loop validates against the server's inputSchema before sending."""
    client = ScriptedChatClient([call("echo", {"text": 5}), "ok"])
    async with Agent(client, tools=[fastmcp(allowed_tools=["echo"])]) as agent:
        response = await agent.run("go")
    [result] = results(response)
    assert "Invalid arguments for echo" in str(result.result)
    assert "$.text" in str(result.result)


async def test_duplicate_names_across_servers_is_an_error() -> None:
    """MCP-21: two servers with one tool name: a ToolError suggesting
    tool_name_prefix."""
    client = ScriptedChatClient(["never"])
    agent = Agent(
        client,
        tools=[
            fastmcp("one", allowed_tools=["echo"]),
            fastmcp("two", allowed_tools=["echo"]),
        ],
    )
    async with agent:
        with pytest.raises(
            ToolError,
            match=r"'echo' is provided by both 'one' and 'two'.*tool_name_prefix='two_'",
        ):
            await agent.run("go")


async def test_duplicate_with_a_local_tool_is_an_error() -> None:
    """MCP-21: an MCP tool named like a local tool is the same error."""

    @tool
    def echo(text: str) -> str:
        return text

    agent = Agent(
        ScriptedChatClient(["never"]), tools=[echo, fastmcp(allowed_tools=["echo"])]
    )
    async with agent:
        with pytest.raises(ToolError, match="tool_name_prefix"):
            await agent.run("go")


async def test_prefix_resolves_duplicates() -> None:
    """MCP-21, MCP-6: with tool_name_prefix both servers' tools are callable."""
    client = ScriptedChatClient([call("b_echo", {"text": "x"}), "ok"])
    one, two = (
        fastmcp("a", allowed_tools=["echo"]),
        fastmcp("b", allowed_tools=["echo"], tool_name_prefix="b_"),
    )
    async with Agent(client, tools=[one, two]) as agent:
        response = await agent.run("go")
        assert sorted(t.name for t in client.requests[0].options["tools"]) == [
            "b_echo",
            "echo",
        ]
    assert results(response)[0].result == {"result": "echo: x"}


def test_expand_tool_sets_without_sets_is_a_copy() -> None:
    """MCP-21: a tool list with no tool set is returned as a new list of the same
    tools."""
    tools: list[Any] = [object(), object()]
    out = expand_tool_sets(tools)
    assert out == tools
    assert out is not tools


async def test_standalone_functions_work_as_plain_tools() -> None:
    """MCP-20: `async with MCPStdioTool(...)` on its own; its functions can be given to
    an agent."""
    client = ScriptedChatClient([call("echo", {"text": "y"}), "ok"])
    async with fastmcp(allowed_tools=["echo"]) as server:
        response = await Agent(client, tools=server.functions).run("go")
    assert results(response)[0].result == {"result": "echo: y"}


async def test_cancelled_run_cancels_the_server_call(
    stream: bool, tmp_path: Path
) -> None:
    """MCP-7: cancelling an agent run in a tool call sends notifications/cancelled to
    the server."""
    marker = tmp_path / "marker"
    server = MCPStdioTool(
        "slowpoke",
        PYTHON,
        args=server_args(),
        env={"MCP_TEST_MARKER": str(marker)},
        allowed_tools=["slow"],
    )
    client = ScriptedChatClient([call("slow", {"seconds": 60}), "never"])
    async with Agent(client, tools=[server]) as agent:

        async def run() -> Any:
            if stream:
                return [u async for u in agent.run("go", stream=True)]
            return await agent.run("go")

        task = asyncio.create_task(run())
        await asyncio.sleep(1.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await eventually(marker.exists)
        assert server.is_connected  # the connection survives a cancelled call


async def test_server_shared_by_two_agents_stays_until_the_last_exits() -> None:
    """MCP-20: the last agent context to exit closes a shared server."""
    server = fastmcp(allowed_tools=["echo"])
    first = Agent(ScriptedChatClient([]), tools=[server])
    second = Agent(ScriptedChatClient([]), tools=[server])
    async with first:
        async with second:
            assert server.is_connected
        assert server.is_connected
        assert [t.name for t in server.functions] == ["echo"]
    assert not server.is_connected


async def test_approval_modes_apply_per_tool() -> None:
    """MCP-15: the per-tool approval mapping marks the listed tools; the loop asks
    before calling them."""
    server = fastmcp(
        allowed_tools=["echo", "weather"],
        approval_mode={"always_require_approval": ["echo"]},
    )
    client = ScriptedChatClient([call("echo", {"text": "x"})])
    async with Agent(client, tools=[server]) as agent:
        modes = {t.name: t.approval_mode for t in server.functions}
        assert modes == {"echo": "always_require", "weather": "never_require"}
        response = await agent.run("go")
    assert [c.type for m in response.messages for c in m.contents] == [
        "function_call",
        "function_approval_request",
    ]
    assert response.user_input_requests[0].function_call.name == "echo"
    with pytest.raises(ValueError, match="approval_mode must be"):
        fastmcp(approval_mode="sometimes")
    with pytest.raises(ValueError, match="approval_mode must be"):
        fastmcp(approval_mode={"always_require_approval": "echo"})
