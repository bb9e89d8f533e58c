"""Our standard-library stdio client against servers written with the official SDK
(FastMCP)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from minagent import (
    Content,
)
from minagent.mcp.jsonrpc import (
    MCPConnectionError,
    MCPProtocolError,
    MCPTimeoutError,
    MCPToolError,
    decode_message,
    encode_message,
)
from minagent.mcp.stdio import MCPStdioTool

from .conftest import HERE, PYTHON, eventually, gone, our_processes, server_args


def fastmcp(mode: str = "normal", **kwargs: Any) -> MCPStdioTool:
    return MCPStdioTool("test", PYTHON, args=server_args(mode), **kwargs)


async def test_list_and_call_tools() -> None:
    """MCP-1, MCP-3, MCP-4: the handshake, the tool list as FunctionTools with the
    server's schemas."""
    async with fastmcp() as server:
        assert server.protocol_version == "2025-06-18"
        assert server.server_info["name"] == "test-server"
        assert server.instructions == "A server for minagent's tests."
        tools = {t.name: t for t in server.functions}
        assert set(tools) >= {
            "echo",
            "weather",
            "fail",
            "picture",
            "slow",
            "crash",
            "grow",
        }
        echo = tools["echo"]
        assert echo.description == "Echo the text back."
        assert echo.parameters["properties"]["text"]["type"] == "string"
        assert echo.parameters["required"] == ["text"]
        assert await echo.invoke({"text": "hi"}) == {"result": "echo: hi"}
        # MCP-4: our validator checks before sending
        assert echo.validate_arguments({"text": 3})
        await server.ping()


async def test_structured_result_is_the_object() -> None:
    """MCP-11: structuredContent is what the model sees when the other blocks are only
    its text."""
    async with fastmcp() as server:
        assert await server.call_tool("weather", {"city": "Oslo"}) == {
            "city": "Oslo",
            "celsius": 21.5,
        }


async def test_error_result_raises_tool_error_the_model_sees() -> None:
    """MCP-12: isError becomes MCPToolError with the server's text, marked
    model-visible."""
    async with fastmcp() as server:
        with pytest.raises(MCPToolError, match="failed because bad input") as info:
            await server.call_tool("fail", {"reason": "bad input"})
        assert info.value.server == "test"
        assert info.value.model_visible is True


async def test_image_result_is_a_data_content() -> None:
    """MCP-11: an image block becomes a data Content with its media type."""
    async with fastmcp() as server:
        result = await server.call_tool("picture", {})
    assert isinstance(result, list)
    assert len(result) == 1
    image = result[0]
    assert isinstance(image, Content)
    assert image.type == "data"
    assert image.media_type == "image/png"
    assert image.uri is not None
    assert image.uri.startswith("data:image/png;base64,iVBORw0KGgo")


async def test_pagination_follows_next_cursor() -> None:
    """MCP-4: a server that pages its tools two at a time still yields every tool, in
    order."""
    async with fastmcp() as plain:
        expected = [t.name for t in plain.functions]
    async with fastmcp("paged") as paged:
        assert [t.name for t in paged.functions] == expected
        assert len(expected) > 4  # more than two pages


async def test_list_changed_reloads_the_tools() -> None:
    """MCP-5: notifications/tools/list_changed makes the new tool appear in
    `functions`."""
    async with fastmcp() as server:
        assert "late" not in [t.name for t in server.functions]
        await server.call_tool("grow", {})
        await eventually(lambda: "late" in [t.name for t in server.functions])
        late = next(t for t in server.functions if t.name == "late")
        assert await late.invoke({}) == {"result": "late tool"}


async def test_prefix_and_allowed_tools() -> None:
    """MCP-6: allowed_tools filters by the server's names; tool_name_prefix renames for
    the model."""
    async with fastmcp(
        tool_name_prefix="t_", allowed_tools=["echo", "weather"]
    ) as server:
        assert sorted(t.name for t in server.functions) == ["t_echo", "t_weather"]
        echo = next(t for t in server.functions if t.name == "t_echo")
        assert await echo.invoke({"text": "x"}) == {"result": "echo: x"}


async def test_progress_reaches_the_callback() -> None:
    """MCP-9: notifications/progress for a call are surfaced to progress_callback."""
    seen: list[tuple[float, float | None, str | None]] = []
    async with fastmcp(
        progress_callback=lambda p, t, m: seen.append((p, t, m))
    ) as server:
        assert await server.call_tool("slow", {"seconds": 0.01}) == {"result": "slept"}
    assert seen == [(0.5, 1.0, "half way")]


async def test_stderr_is_forwarded_to_logging(caplog: pytest.LogCaptureFixture) -> None:
    """MCP-9: the server's stderr lines reach the `minagent.mcp` logger."""
    with caplog.at_level(logging.INFO, logger="minagent.mcp"):
        async with fastmcp() as server:
            await server.call_tool("echo", {"text": "x"})
    assert any(
        "stderr" in r.getMessage() for r in caplog.records if r.name == "minagent.mcp"
    )


async def test_log_messages_reach_logging(caplog: pytest.LogCaptureFixture) -> None:
    """MCP-9: notifications/message is logged at its level."""
    with caplog.at_level(logging.INFO, logger="minagent.mcp"):
        async with fastmcp() as server:
            await server.call_tool("chatty", {})
    [record] = [r for r in caplog.records if "careful now" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "MCP test: careful now"


async def test_an_mcp_server_that_exits_shows_its_last_stderr_lines(
    tmp_path: Path,
) -> None:
    """MCP-9: a server that exits puts its exit code and its last lines of stderr into
    the MCPConnectionError, whatever logging is configured."""
    from minagent import MCPConnectionError, MCPStdioTool

    missing = tmp_path / "no_such_server.py"
    tool = MCPStdioTool("calc", sys.executable, args=[str(missing)])
    with pytest.raises(MCPConnectionError) as info:
        async with tool:
            pass
    text = str(info.value)
    assert "MCP server 'calc' exited (exit code 2); its last lines on stderr:" in text
    assert "can't open file" in text
    assert str(missing) in text


async def test_cancelled_call_cancels_on_the_server(tmp_path: Path) -> None:
    """MCP-7: cancelling the caller sends notifications/cancelled; the server stops the
    tool."""
    marker = tmp_path / "marker"
    async with MCPStdioTool(
        "test",
        PYTHON,
        args=server_args(),
        env={"MCP_TEST_MARKER": str(marker)},
        progress_callback=lambda *a: None,
    ) as server:
        task = asyncio.create_task(server.call_tool("slow", {"seconds": 30}))
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await eventually(marker.exists)
        assert marker.read_text() == "cancelled"
        assert await server.call_tool("echo", {"text": "still alive"}) == {
            "result": "echo: still alive"
        }


async def test_request_timeout_cancels_and_raises(tmp_path: Path) -> None:
    """MCP-7: a call past request_timeout raises MCPTimeoutError and the server is told
    to stop."""
    marker = tmp_path / "marker"
    async with MCPStdioTool(
        "test",
        PYTHON,
        args=server_args(),
        env={"MCP_TEST_MARKER": str(marker)},
        request_timeout=5,
    ) as server:
        server.request_timeout = 0.5
        with pytest.raises(
            MCPTimeoutError, match=r"'test' did not answer 'tools/call' within 0\.5 s"
        ):
            await server.call_tool("slow", {"seconds": 30})
        await eventually(marker.exists)


async def test_server_crash_mid_call_is_a_typed_error() -> None:
    """MCP-8: the process dies during a call: MCPConnectionError naming the server, no
    hang."""
    async with fastmcp() as server:
        async with asyncio.timeout(20):
            with pytest.raises(
                MCPConnectionError, match=r"MCP server 'test' exited \(exit code 3\)"
            ) as info:
                await server.call_tool("crash", {})
        assert info.value.server == "test"
        assert not server.is_connected
        with pytest.raises(MCPConnectionError):
            await server.call_tool("echo", {"text": "x"})
        await server.connect()  # MCP-8: connect() starts a server that has gone again
        assert server.is_connected
        assert await server.call_tool("echo", {"text": "back"}) == {
            "result": "echo: back"
        }


async def test_server_that_exits_at_start() -> None:
    """MCP-8, MCP-10: a server that exits before answering initialize: a typed error,
    nothing left."""
    tool = fastmcp("crash-on-start")
    with pytest.raises(MCPConnectionError, match="exit code 5"):
        await tool.connect()
    assert not tool.is_connected
    assert tool.pid is None


async def test_initialize_never_answered_times_out() -> None:
    """MCP-3, MCP-10: no answer to initialize within request_timeout: MCPTimeoutError,
    process stopped."""
    tool = MCPStdioTool(
        "silent", PYTHON, args=[str(HERE / "silent_server.py")], request_timeout=0.5
    )
    with pytest.raises(MCPTimeoutError, match="'silent' did not answer 'initialize'"):
        await tool.connect()
    assert not tool.is_connected
    assert not [p for p in our_processes() if "silent_server.py" in p[2]]


async def test_garbage_on_stdout_is_a_protocol_error() -> None:
    """MCP-2: a non-JSON line on stdout is an MCPProtocolError quoting it."""
    tool = fastmcp("garbage")
    with pytest.raises(
        MCPProtocolError, match=r"not JSON.*Starting the server"
    ) as info:
        await tool.connect()
    assert info.value.server == "test"
    assert not [p for p in our_processes() if "garbage" in p[2]]


async def test_command_not_found() -> None:
    """MCP-8: a command that cannot start is an MCPConnectionError naming the server."""
    with pytest.raises(MCPConnectionError, match="'nope' could not be started"):
        async with MCPStdioTool("nope", "/nonexistent/mcp-server"):
            pass


async def test_functions_before_connecting() -> None:
    """MCP-20: `functions` of an unconnected server says how to connect."""
    with pytest.raises(
        MCPConnectionError,
        match=r"not connected: use `async with` or give it to an agent",
    ):
        _ = fastmcp().functions


async def test_close_reaps_the_process_and_is_idempotent() -> None:
    """MCP-10: after close the process is gone (not even a zombie); closing twice is
    fine."""
    tool = fastmcp()
    await tool.connect()
    pid = tool.pid
    assert pid is not None
    await tool.close()
    await tool.close()
    assert gone(pid)


async def test_cancelled_connect_leaves_nothing() -> None:
    """MCP-10: a connect cancelled half-way stops the process it started."""
    tool = MCPStdioTool(
        "silent", PYTHON, args=[str(HERE / "silent_server.py")], request_timeout=30
    )
    task = asyncio.create_task(tool.connect())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not tool.is_connected
    assert not [p for p in our_processes() if "silent_server.py" in p[2]]


def test_framing_round_trip() -> None:
    """MCP-2: one message is one line; embedded newlines are escaped; decoding restores
    it."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "x",
        "params": {"text": "a\nb\r\nc", "n": "é"},
    }
    line = encode_message(message)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert decode_message(line) == message
    with pytest.raises(MCPProtocolError, match=r"not a JSON-RPC 2\.0 message"):
        decode_message(json.dumps({"id": 1}))


def test_arguments_are_validated() -> None:
    """Constructor errors are typed and say what was wrong."""
    with pytest.raises(TypeError, match="allowed_tools"):
        MCPStdioTool("x", sys.executable, allowed_tools="echo")
    with pytest.raises(TypeError, match="args"):
        MCPStdioTool("x", sys.executable, args="-m server")
    with pytest.raises(ValueError, match="request_timeout"):
        MCPStdioTool("x", sys.executable, request_timeout=0)


async def test_resource_and_audio_blocks() -> None:
    """MCP-11: resource links, embedded resources and audio become contents; nothing is
    dropped."""
    async with fastmcp() as server:
        result = await server.call_tool("mixed", {})
    assert [c.type for c in result] == ["text", "uri", "text", "data"]
    text, link, memo, audio = result
    assert text.text == "see also"
    assert link.uri == "file:///notes.txt"
    assert link.media_type == "text/plain"
    assert link.additional_properties["name"] == "notes"
    assert memo.text == "the memo"
    assert memo.additional_properties["uri"] == "memo://1"
    assert audio.uri == "data:audio/wav;base64,AAAA"
    assert audio.media_type == "audio/wav"


async def test_prompts_as_tools() -> None:
    """MCP-13: load_prompts adds each prompt as a tool that returns its messages."""
    async with fastmcp(load_prompts=True, allowed_tools=["review", "echo"]) as server:
        tools = {t.name: t for t in server.functions}
        assert sorted(tools) == ["echo", "review"]
        review = tools["review"]
        assert review.parameters["required"] == ["code"]
        assert await review.invoke({"code": "x = 1"}) == "user: Please review: x = 1"
    async with fastmcp() as plain:
        assert "review" not in [t.name for t in plain.functions]


def test_exports_load_on_first_use() -> None:
    """MCP-1: the MCP names are exported from minagent, and `import minagent` does not
    load them."""
    import subprocess

    code = (
        "import sys, minagent; before = sorted(m for m in sys.modules if m.startswith('minagent') and 'mcp' in m); "
        "tool = minagent.MCPStdioTool; print(before, tool.__mro__[1].__name__, 'MCPStdioTool' in minagent.__all__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[] MCPTool True"


async def test_stubborn_server_is_killed() -> None:
    """MCP-10: a server that ignores stdin closing and SIGTERM is killed and reaped."""
    tool = MCPStdioTool(
        "stubborn",
        PYTHON,
        args=[str(HERE / "stubborn_server.py")],
        request_timeout=1.0,
        shutdown_timeout=0.3,
    )
    with pytest.raises(MCPTimeoutError):
        await tool.connect()
    assert not [p for p in our_processes() if "stubborn_server.py" in p[2]]


@pytest.mark.parametrize(
    ("keyword", "hint"),
    [
        ("session", "own their connection"),
        ("parse_tool_results", "function middleware"),
        ("chat_client", "sampling is not supported"),
        ("sampling_max_tokens", "sampling is not supported"),
        ("made_up", "not a parameter"),
    ],
)
def test_upstream_keywords_not_taken_say_what_to_do(keyword: str, hint: str) -> None:
    """MCP-14: an upstream keyword minagent does not take is a TypeError naming it, with
    a hint."""
    with pytest.raises(TypeError, match=rf"{keyword}=\.\.\.: .*{hint}"):
        MCPStdioTool("x", PYTHON, **{keyword: object()})
    with pytest.raises(ValueError, match="UTF-8"):
        MCPStdioTool("x", PYTHON, encoding="latin-1")


async def test_upstream_keywords_taken() -> None:
    """MCP-14: args=None, approval_mode=None, encoding='utf-8' work; load_tools=False
    offers no tools."""
    tool = MCPStdioTool(
        "x",
        PYTHON,
        args=None,
        approval_mode=None,
        encoding="utf-8",
        additional_properties={"a": 1},
    )
    assert tool.args == []
    assert tool.approval_mode == "never_require"
    assert tool.additional_properties == {"a": 1}
    async with fastmcp(load_tools=False, load_prompts=True) as server:
        assert [t.name for t in server.functions] == ["review"]
