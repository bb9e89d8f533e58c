"""An MCP server written with the official SDK's FastMCP, run as a subprocess by the
tests.

``python fastmcp_server.py MODE``: ``normal``; ``paged`` (tools/list answers two tools
per page); ``garbage`` (prints a banner on stdout before serving); ``crash-on-start``
(exits at once); ``http PORT`` / ``http-json PORT`` (Streamable HTTP on 127.0.0.1:PORT
at /mcp, answering with SSE streams or with JSON). The environment variable
``MCP_TEST_MARKER`` names a file the slow tool writes ``cancelled`` to when the server
cancels it, so a test can see that the cancellation arrived.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import zlib
from typing import Any, TypedDict

from mcp import types
from mcp.server.fastmcp import Context, FastMCP, Image

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
server = FastMCP("test-server", instructions="A server for minagent's tests.")


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


class Weather(TypedDict):
    city: str
    celsius: float


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def weather(city: str) -> Weather:
    """Structured weather for a city."""
    return {"city": city, "celsius": 21.5}


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ValueError(f"failed because {reason}")


@server.tool()
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=tiny_png(), format="png")


@server.tool()
async def slow(seconds: float, ctx: Context[Any, Any, Any]) -> str:
    """Sleep, reporting progress; records a cancellation in the marker file."""
    await ctx.report_progress(0.5, 1.0, "half way")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        marker = os.environ.get("MCP_TEST_MARKER")
        if marker:
            with open(marker, "w") as f:  # noqa: ASYNC230 - a test marker, written once
                f.write("cancelled")
        raise
    return "slept"


@server.tool()
async def chatty(ctx: Context[Any, Any, Any]) -> str:
    """Sends a log message to the client."""
    await ctx.warning("careful now")
    return "said"


@server.tool()
def crash() -> str:
    """The process dies mid-call."""
    sys.stderr.write("about to crash\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def grow(ctx: Context[Any, Any, Any]) -> str:
    """Adds the tool `late` and tells the client the list changed."""

    def late() -> str:
        """Added at run time."""
        return "late tool"

    server.add_tool(late, name="late")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool(structured_output=False)
def mixed() -> list[types.ContentBlock]:
    """Text, a resource link, an embedded text resource and audio."""
    return [
        types.TextContent(type="text", text="see also"),
        types.ResourceLink(
            type="resource_link",
            uri="file:///notes.txt",
            name="notes",
            mimeType="text/plain",
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="memo://1", mimeType="text/plain", text="the memo"
            ),
        ),
        types.AudioContent(type="audio", data="AAAA", mimeType="audio/wav"),
    ]


@server.prompt()
def review(code: str) -> str:
    """Ask for a code review."""
    return f"Please review: {code}"


if MODE == "paged":
    low = server._mcp_server

    @low.list_tools()
    async def paged(request: types.ListToolsRequest) -> types.ListToolsResult:
        tools = await server.list_tools()
        start = (
            int(request.params.cursor)
            if request.params and request.params.cursor
            else 0
        )
        end = start + 2
        return types.ListToolsResult(
            tools=tools[start:end], nextCursor=str(end) if end < len(tools) else None
        )


if __name__ == "__main__":
    if MODE == "garbage":
        print("Starting the server, please wait...", flush=True)
    if MODE == "crash-on-start":
        sys.exit(5)
    if MODE in ("http", "http-json"):
        server.settings.port = int(sys.argv[2])
        server.settings.json_response = MODE == "http-json"
        server.settings.log_level = "WARNING"
        server.run("streamable-http")
    else:
        server.run("stdio")
