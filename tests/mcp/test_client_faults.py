"""`MCPTool` against a loopback server that answers what a test scripts: fault
injection.

A real server (FastMCP) cannot be made to send a wrong protocol version, a repeated
cursor, a tool without a schema or a broken content block on demand; these tests send
exactly that and check the typed error, and that a failed connect closes what it opened
(MCP-3, MCP-10).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from minagent import Content
from minagent.mcp.client import MCPTool
from minagent.mcp.jsonrpc import (
    MCPConnectionError,
    MCPProtocolError,
    MCPToolError,
    Transport,
)

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "fake", "version": "1"},
}
ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
HOLD = object()  # an answer the test sends later (by the request's id)


class Loopback:
    """A scripted MCP server in this process: ``answers`` maps a method to a result, a
    callable (params -> result) or ``HOLD``; an answer that is an ``Exception`` is sent
    as a JSON-RPC error."""

    def __init__(self, **answers: Any) -> None:
        self.answers: dict[str, Any] = {
            "initialize": INIT,
            "tools/list": {"tools": [ECHO]},
            "ping": {},
            **answers,
        }
        self.inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []
        self.held: list[int] = []
        self.closed = False

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if "id" not in message or "method" not in message:
            return
        answer = self.answers[message["method"]]
        if callable(answer):
            answer = answer(message.get("params", {}))
        if answer is HOLD:
            self.held.append(message["id"])
        elif isinstance(answer, Exception):
            self.push(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32603, "message": str(answer)},
                }
            )
        else:
            self.push({"jsonrpc": "2.0", "id": message["id"], "result": answer})

    async def receive(self) -> dict[str, Any] | None:
        return await self.inbox.get()

    async def aclose(self) -> None:
        self.closed = True

    def push(self, message: dict[str, Any]) -> None:
        self.inbox.put_nowait(message)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.push({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def methods(self) -> list[str]:
        return [m["method"] for m in self.sent if "method" in m]


class LoopbackTool(MCPTool):
    def __init__(self, server: Loopback, **kwargs: Any) -> None:
        super().__init__("fake", **kwargs)
        self.server = server

    async def _open_transport(self) -> Transport:
        return self.server


async def settle(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not check():  # noqa: ASYNC110 - the loopback server works in other tasks
            await asyncio.sleep(0.001)


def test_constructor_checks() -> None:
    """MCP-1: an empty name is a ValueError naming it."""
    with pytest.raises(ValueError, match="non-empty name, got ''"):
        MCPTool("")


async def test_base_class_has_no_transport() -> None:
    """MCP-1: `MCPTool` itself has no transport: connecting says a subclass must
    implement one."""
    tool = MCPTool("bare")
    with pytest.raises(
        NotImplementedError, match="MCPTool must implement _open_transport"
    ):
        await tool.connect()
    assert not tool.is_connected


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (["not", "an", "object"], "initialize result is not an object"),
        (
            {**INIT, "protocolVersion": "1999-01-01"},
            "speaks protocol version '1999-01-01'; minagent supports 2025-06-18",
        ),
        ({"capabilities": {}}, "speaks protocol version None"),
    ],
)
async def test_bad_initialize_answer_is_a_protocol_error(
    result: Any, message: str
) -> None:
    """MCP-3, MCP-10: a non-object answer or an unsupported version fails the connect,
    which closes the transport and sends no `notifications/initialized`."""
    server = Loopback(initialize=result)
    tool = LoopbackTool(server)
    with pytest.raises(MCPProtocolError, match=message) as info:
        await tool.connect()
    assert info.value.server == "fake"
    assert server.closed
    assert not tool.is_connected
    assert server.methods() == ["initialize"]


async def test_older_protocol_version_is_kept() -> None:
    """MCP-3: a supported older version is accepted and kept with the server's info and
    instructions."""
    server = Loopback(
        initialize={**INIT, "protocolVersion": "2024-11-05", "instructions": "be nice"}
    )
    async with LoopbackTool(server) as tool:
        assert tool.protocol_version == "2024-11-05"
        assert tool.instructions == "be nice"
        assert tool.server_info == {"name": "fake", "version": "1"}
        assert server.methods() == [
            "initialize",
            "notifications/initialized",
            "tools/list",
        ]


async def test_list_without_the_list_is_a_protocol_error() -> None:
    """MCP-4: a `tools/list` answer without a `tools` list is an MCPProtocolError;
    nothing stays open."""
    server = Loopback(**{"tools/list": {"items": []}})
    with pytest.raises(MCPProtocolError, match="tools/list result has no 'tools' list"):
        await LoopbackTool(server).connect()
    assert server.closed


async def test_repeated_cursor_is_a_protocol_error() -> None:
    """MCP-4: pages are followed by `nextCursor`; a cursor seen before is an
    MCPProtocolError (a server looping forever would otherwise hang the connect)."""
    pages = {None: "a", "a": "b", "b": "a"}

    def page(params: dict[str, Any]) -> dict[str, Any]:
        return {"tools": [ECHO], "nextCursor": pages[params.get("cursor")]}

    server = Loopback(**{"tools/list": page})
    with pytest.raises(MCPProtocolError, match="tools/list repeats cursor 'a'"):
        await LoopbackTool(server).connect()
    assert [
        m.get("params") for m in server.sent if m.get("method") == "tools/list"
    ] == [
        {},
        {"cursor": "a"},
        {"cursor": "b"},
    ]
    assert server.closed


@pytest.mark.parametrize("cursor", [["a"], {"a": 1}, 7])
async def test_a_cursor_that_is_not_a_string_is_a_protocol_error(cursor: Any) -> None:
    """MCP-48, MCP-10: a `nextCursor` that is not a string (a list, an object, a number)
    is an MCPProtocolError naming the server, not a TypeError; nothing stays open."""
    server = Loopback(**{"tools/list": {"tools": [ECHO], "nextCursor": cursor}})
    with pytest.raises(
        MCPProtocolError, match="tools/list nextCursor is not a string"
    ) as info:
        await LoopbackTool(server).connect()
    assert info.value.server == "fake"
    assert server.closed


@pytest.mark.parametrize("schema", [None, "object", {"type": "string"}])
async def test_tool_without_object_schema_is_a_protocol_error(schema: Any) -> None:
    """MCP-4: a tool whose `inputSchema` is missing or not an object schema is an
    MCPProtocolError."""
    spec = {"name": "odd"} if schema is None else {"name": "odd", "inputSchema": schema}
    server = Loopback(**{"tools/list": {"tools": [ECHO, spec]}})
    with pytest.raises(
        MCPProtocolError, match="tool 'odd' has no inputSchema of type 'object'"
    ):
        await LoopbackTool(server).connect()
    assert server.closed


async def test_invalid_tool_name_says_to_leave_it_out() -> None:
    """MCP-6: a server tool name that is not a valid tool name is an MCPProtocolError
    pointing to `allowed_tools`; leaving it out with `allowed_tools` connects."""
    bad = {**ECHO, "name": "has space"}
    server = Loopback(**{"tools/list": {"tools": [ECHO, bad]}})
    with pytest.raises(
        MCPProtocolError,
        match=r"tool named 'has space'.*leave it out with allowed_tools",
    ):
        await LoopbackTool(server).connect()
    async with LoopbackTool(
        Loopback(**{"tools/list": {"tools": [ECHO, bad]}}), allowed_tools=["echo"]
    ) as tool:
        assert [f.name for f in tool.functions] == ["echo"]
    with pytest.raises(MCPProtocolError, match="tool named 'echo'"):
        await LoopbackTool(Loopback(), tool_name_prefix="x" * 125).connect()


async def test_nothing_loaded_when_tools_and_prompts_are_off() -> None:
    """MCP-14: `load_tools=False` without prompts offers no tools and sends no list
    request."""
    server = Loopback()
    async with LoopbackTool(server, load_tools=False) as tool:
        assert tool.functions == []
    assert server.methods() == ["initialize", "notifications/initialized"]


async def test_prompt_arguments_and_allowed_prompts() -> None:
    """MCP-13, MCP-6: a prompt's arguments become string parameters (required where
    marked; malformed entries skipped); `allowed_tools` filters prompts; calling one
    sends `prompts/get`."""
    prompts = [
        {
            "name": "plan",
            "description": "Plan it.",
            "arguments": [{"name": "goal", "required": True}, {"name": "tone"}],
        },
        {"name": "odd", "arguments": ["junk", {"description": "no name"}]},
        {"name": "hidden"},
    ]
    got: list[dict[str, Any]] = []

    def get(params: dict[str, Any]) -> dict[str, Any]:
        got.append(params)
        text = {"type": "text", "text": f"plan {params['arguments']['goal']}"}
        link = {"type": "resource_link", "uri": "file:///x"}
        return {
            "messages": [
                {"role": "user", "content": text},
                {"role": "assistant", "content": link},
            ]
        }

    server = Loopback(
        initialize={**INIT, "capabilities": {"prompts": {}}},
        **{
            "tools/list": {"tools": []},
            "prompts/list": {"prompts": prompts},
            "prompts/get": get,
        },
    )
    async with LoopbackTool(
        server, load_prompts=True, allowed_tools=["plan", "odd"]
    ) as tool:
        plan, odd = tool.functions
        assert plan.description == "Plan it."
        assert plan.parameters["required"] == ["goal"]
        assert set(plan.parameters["properties"]) == {"goal", "tone"}
        assert odd.parameters == {"type": "object", "properties": {}, "required": []}
        assert (
            await plan.invoke({"goal": "launch"})
            == "user: plan launch\nassistant: file:///x"
        )
    assert got == [{"name": "plan", "arguments": {"goal": "launch"}}]


async def test_list_changed_while_reloading_starts_no_second_reload() -> None:
    """MCP-5: a `list_changed` during a reload starts no second one; other notifications
    change nothing; `functions` keeps the last complete list until the reload
    finishes."""
    lists = [{"tools": [ECHO]}, HOLD]
    server = Loopback(**{"tools/list": lambda params: lists.pop(0)})
    async with LoopbackTool(server) as tool:
        server.notify("notifications/tools/list_changed")
        await settle(lambda: len(server.held) == 1)
        server.notify("notifications/tools/list_changed")
        server.notify("notifications/resources/list_changed")
        await tool.ping()  # every notification above has been handled
        assert server.methods().count("tools/list") == 2
        assert [f.name for f in tool.functions] == ["echo"]
        late = {**ECHO, "name": "late"}
        server.push(
            {"jsonrpc": "2.0", "id": server.held[0], "result": {"tools": [ECHO, late]}}
        )
        await settle(lambda: len(tool.functions) == 2)
        assert server.methods().count("tools/list") == 2


async def test_failed_reload_keeps_the_list(caplog: pytest.LogCaptureFixture) -> None:
    """MCP-5: a background reload that fails is a warning; the previous list stays."""
    lists: list[Any] = [{"tools": [ECHO]}, RuntimeError("list broke")]
    server = Loopback(**{"tools/list": lambda params: lists.pop(0)})
    async with LoopbackTool(server) as tool:
        with caplog.at_level(logging.WARNING, logger="minagent.mcp"):
            server.notify("notifications/tools/list_changed")
            await settle(
                lambda: any(
                    "reloading the tool list failed" in r.getMessage()
                    for r in caplog.records
                )
            )
        assert "list broke" in caplog.text
        assert [f.name for f in tool.functions] == ["echo"]
        assert tool.is_connected


async def test_progress_without_callback_or_number_is_ignored() -> None:
    """MCP-9: progress reaches only a set callback, and only with a numeric
    `progress`."""
    seen: list[tuple[float, float | None, str | None]] = []
    server = Loopback(**{"tools/call": {"content": [{"type": "text", "text": "done"}]}})
    async with LoopbackTool(server) as tool:
        server.notify("notifications/progress", {"progressToken": "t", "progress": 1})
        await tool.ping()
        assert (
            "_meta"
            not in (await tool.call_tool("echo", {}), server.sent[-1]["params"])[1]
        )
        tool.progress_callback = lambda p, t, m: seen.append((p, t, m))
        server.notify(
            "notifications/progress", {"progressToken": "t", "progress": "half"}
        )
        server.notify(
            "notifications/progress",
            {"progressToken": "t", "progress": 2, "total": 4, "message": "m"},
        )
        await tool.ping()
    assert seen == [(2.0, 4.0, "m")]


async def test_async_progress_callback_is_awaited_and_cancelled_on_close() -> None:
    """MCP-9, MCP-10: an async progress callback runs in the background; one still
    running when the tool closes is cancelled and awaited, so nothing of the tool
    outlives it."""
    started: list[float] = []
    finished: list[float] = []
    cancelled: list[float] = []

    async def callback(
        progress: float, total: float | None, message: str | None
    ) -> None:
        started.append(progress)
        try:
            if progress > 1:
                await asyncio.Event().wait()
            finished.append(progress)
        except asyncio.CancelledError:
            cancelled.append(progress)
            raise

    server = Loopback()
    tool = LoopbackTool(server, progress_callback=callback)
    async with tool:
        server.notify("notifications/progress", {"progress": 1})
        server.notify("notifications/progress", {"progress": 2})
        await settle(lambda: len(started) == 2)
    assert finished == [1.0]
    assert cancelled == [2.0]
    assert not tool._callbacks
    assert server.closed


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ("text", "tools/call result is not an object"),
        (
            {"content": {"type": "text", "text": "x"}},
            "tools/call content is not a list",
        ),
        (
            {"content": [{"type": "video", "data": "AAAA"}]},
            "content block minagent cannot read: .*video",
        ),
        (
            {"content": [{"type": "resource", "resource": {"uri": "x:1"}}]},
            "cannot read",
        ),
        (
            {
                "content": [
                    {"type": "image", "data": "not base64!", "mimeType": "image/png"}
                ]
            },
            "image/png data that is not base64",
        ),
    ],
)
async def test_unreadable_results_are_protocol_errors(
    result: Any, message: str
) -> None:
    """MCP-11: a result that is not an object, content that is not a list, an unknown
    block and image data that is not base64 are MCPProtocolErrors; the connection stays
    usable."""
    server = Loopback(**{"tools/call": result})
    async with LoopbackTool(server) as tool:
        with pytest.raises(MCPProtocolError, match=message):
            await tool.call_tool("echo", {"text": "x"})
        assert tool.is_connected
        await tool.ping()


async def test_blob_resource_and_structured_content_with_an_image() -> None:
    """MCP-11: an embedded blob resource is a data content carrying its uri; a
    structured object beside a non-text block is appended as JSON text."""
    blob = {
        "type": "resource",
        "resource": {"uri": "mem://b", "blob": "AAEC", "mimeType": "application/x-bin"},
    }
    image = {"type": "image", "data": "iVBO", "mimeType": "image/png"}
    results = [{"content": [blob]}, {"content": [image], "structuredContent": {"w": 1}}]
    server = Loopback(**{"tools/call": lambda params: results.pop(0)})
    async with LoopbackTool(server) as tool:
        (data,) = await tool.call_tool("echo")
        assert data.type == "data"
        assert data.uri == "data:application/x-bin;base64,AAEC"
        assert data.additional_properties["uri"] == "mem://b"
        picture, structured = await tool.call_tool("echo")
        assert picture.uri == "data:image/png;base64,iVBO"
        assert structured == Content.from_text('{"w": 1}')


async def test_error_result_without_text() -> None:
    """MCP-12: `isError` without any text still raises MCPToolError with a generic
    message."""
    server = Loopback(**{"tools/call": {"isError": True, "content": []}})
    async with LoopbackTool(server) as tool:
        with pytest.raises(MCPToolError, match="the tool reported an error"):
            await tool.call_tool("echo")


async def test_connect_after_the_server_went_away_starts_again() -> None:
    """MCP-8: after the server is gone, calls fail with MCPConnectionError and
    `connect()` starts a new connection (closing the old transport)."""
    first, second = Loopback(), Loopback()
    servers = [first, second]

    class Reconnecting(MCPTool):
        async def _open_transport(self) -> Transport:
            return servers.pop(0)

    tool = Reconnecting("again")
    async with tool:
        first.inbox.put_nowait(None)
        await settle(lambda: not tool.is_connected)
        with pytest.raises(MCPConnectionError, match="'again' closed the connection"):
            await tool.ping()
        await tool.connect()
        assert first.closed
        assert tool.is_connected
        await tool.ping()
    assert second.closed
