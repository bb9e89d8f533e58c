"""An `MCPServer` (``agent.as_mcp_server()``) over Streamable HTTP with aiohttp
(spec/mcp.md, MCP-42).

The protocol's rules live in the core's `minagent.mcp.http.StreamableHTTPEndpoint`
(the same endpoint the hosting application mounts, HS-170); this module only carries its
requests and answers over aiohttp, and closes a connection whose request line and headers
do not arrive within ``read_timeout`` (MCP-49).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any

from aiohttp import web

from minagent.mcp.http import (
    MAX_SESSIONS,
    READ_TIMEOUT,
    SESSION_TIMEOUT,
    StreamableHTTPEndpoint,
)
from minagent.mcp.server import MCPServer

__all__ = ["make_app", "serve_http"]


def make_app(
    server: MCPServer,
    *,
    path: str = "/mcp",
    allowed_origins: Collection[str] = (),
    max_sessions: int = MAX_SESSIONS,
    session_timeout: float = SESSION_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
) -> web.Application:
    """An aiohttp application serving ``server`` at ``path`` (MCP-42, MCP-49)."""
    endpoint = StreamableHTTPEndpoint(
        server,
        allowed_origins=allowed_origins,
        max_sessions=max_sessions,
        session_timeout=session_timeout,
        read_timeout=read_timeout,
    )

    async def handle(request: web.Request) -> web.StreamResponse:
        headers = {name.lower(): value for name, value in request.headers.items()}
        answer = await endpoint.handle(request.method, headers, request.read)
        return web.Response(
            status=answer.status, body=answer.body, headers=dict(answer.headers)
        )

    async def close(_app: web.Application) -> None:
        await endpoint.close()

    app = web.Application()
    for method in ("POST", "GET", "DELETE"):
        app.router.add_route(method, path, handle)
    app.on_shutdown.append(close)
    return app


async def serve_http(
    server: MCPServer,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    path: str = "/mcp",
    max_sessions: int = MAX_SESSIONS,
    session_timeout: float = SESSION_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
    ready: Callable[[str], Any] | None = None,
) -> None:
    """Serve until cancelled (MCP-42); binds to localhost unless told otherwise, as the
    specification advises. A connection that sends no complete request within
    ``read_timeout`` is closed (MCP-49). ``ready(url)`` is called once it listens, with
    the URL (the port the system chose for 0)."""
    app = make_app(
        server,
        path=path,
        max_sessions=max_sessions,
        session_timeout=session_timeout,
        read_timeout=read_timeout,
    )
    runner = web.AppRunner(app, keepalive_timeout=read_timeout)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        if ready is not None:
            # an asyncio.Server: the bound addresses
            sockets = getattr(site._server, "sockets", None) or ()
            bound = sockets[0].getsockname()[1] if sockets else port
            ready(f"http://{host if ':' not in host else f'[{host}]'}:{bound}{path}")
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
