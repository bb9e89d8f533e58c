"""An `MCPServer` (``agent.as_mcp_server()``) over Streamable HTTP with aiohttp (spec/mcp.md, MCP-42).

Theory of operation
-------------------
One endpoint (``path``) and a table of sessions, each a core `Connection` plus its running
calls by request id:

    POST initialize          -> new session id (Mcp-Session-Id header), the initialize answer
    POST request             -> the session's call runs as a task; its answer as application/json
    POST notification/answer -> 202; notifications/cancelled cancels that task first
    DELETE                   -> the session ends; its running calls are cancelled
    GET                      -> 405: this server sends nothing unprompted

Checks before anything runs: a foreign ``Origin`` is 403 (DNS rebinding), an unsupported
``MCP-Protocol-Version`` is 400, a missing session id is 400 and an unknown one 404. A client
that disconnects does not cancel its call (the specification says so); ``notifications/cancelled``
does, and the call is then answered with error -32800. Closing the app cancels every call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from minagent.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    SUPPORTED_PROTOCOL_VERSIONS,
    MCPRequestError,
)
from minagent.mcp.server import Connection, MCPServer

__all__ = ["make_app", "serve_http"]

REQUEST_CANCELLED = -32800
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


class _Session:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.calls: dict[Any, asyncio.Task[Any]] = {}


class _Endpoint:
    def __init__(self, server: MCPServer, allowed_origins: Collection[str]) -> None:
        self.server = server
        self.allowed_origins = frozenset(allowed_origins)
        self.sessions: dict[str, _Session] = {}

    def _refuse(self, request: web.Request) -> web.Response | None:
        origin = request.headers.get("Origin")
        if origin and origin not in self.allowed_origins and urlsplit(origin).hostname not in _LOCAL_HOSTS:
            return _rpc_error(403, None, INVALID_REQUEST, f"origin {origin!r} is not allowed")
        version = request.headers.get("MCP-Protocol-Version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            return _rpc_error(400, None, INVALID_REQUEST, f"unsupported MCP-Protocol-Version {version!r}")
        return None

    def _session(self, request: web.Request) -> _Session | web.Response:
        session_id = request.headers.get("Mcp-Session-Id")
        if not session_id:
            return _rpc_error(400, None, INVALID_REQUEST, "missing Mcp-Session-Id header")
        session = self.sessions.get(session_id)
        if session is None:
            return _rpc_error(404, None, INVALID_REQUEST, "unknown or expired session")
        return session

    async def post(self, request: web.Request) -> web.StreamResponse:
        refused = self._refuse(request)
        if refused is not None:
            return refused
        try:
            message = json.loads(await request.read())
        except ValueError as exc:
            return _rpc_error(400, None, PARSE_ERROR, f"not JSON: {exc}")
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _rpc_error(400, None, INVALID_REQUEST, "expected one JSON-RPC 2.0 message (no batches)")
        method, request_id = message.get("method"), message.get("id")
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if method == "initialize" and "id" in message:
            connection = self.server.connection()
            result = await connection.handle("initialize", params)
            session_id = secrets.token_hex(16)
            self.sessions[session_id] = _Session(connection)
            return web.json_response(
                {"jsonrpc": "2.0", "id": request_id, "result": result}, headers={"Mcp-Session-Id": session_id}
            )
        session = self._session(request)
        if isinstance(session, web.Response):
            return session
        if not isinstance(method, str) or "id" not in message:
            if method == "notifications/cancelled":
                call = session.calls.get(params.get("requestId"))
                if call is not None:
                    call.cancel()
            return web.Response(status=202)
        call = asyncio.ensure_future(session.connection.handle(method, params))
        session.calls[request_id] = call
        try:
            result = await asyncio.shield(call)  # a client that disconnects does not cancel (MCP-42)
        except asyncio.CancelledError:
            if not call.cancelled():
                raise
            return _rpc_error(200, request_id, REQUEST_CANCELLED, "request cancelled")
        except MCPRequestError as exc:
            return _rpc_error(200, request_id, exc.code, exc.error_message)
        except Exception as exc:
            return _rpc_error(200, request_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        finally:
            session.calls.pop(request_id, None)
        return web.json_response({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def get(self, request: web.Request) -> web.StreamResponse:
        refused = self._refuse(request)
        return refused or web.Response(status=405, headers={"Allow": "POST, DELETE"})

    async def delete(self, request: web.Request) -> web.StreamResponse:
        refused = self._refuse(request)
        if refused is not None:
            return refused
        session = self._session(request)
        if isinstance(session, web.Response):
            return session
        del self.sessions[request.headers["Mcp-Session-Id"]]
        await _cancel(session.calls.values())
        return web.Response(status=200)

    async def close(self, _app: web.Application) -> None:
        calls = [c for s in self.sessions.values() for c in s.calls.values()]
        self.sessions.clear()
        await _cancel(calls)


async def _cancel(calls: Collection[asyncio.Task[Any]]) -> None:
    calls = list(calls)
    for call in calls:
        call.cancel()
    for call in calls:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await call


def _rpc_error(status: int, request_id: Any, code: int, message: str) -> web.Response:
    return web.json_response(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}, status=status
    )


def make_app(server: MCPServer, *, path: str = "/mcp", allowed_origins: Collection[str] = ()) -> web.Application:
    """An aiohttp application serving ``server`` at ``path`` (MCP-42)."""
    endpoint = _Endpoint(server, allowed_origins)
    app = web.Application()
    app.router.add_post(path, endpoint.post)
    app.router.add_get(path, endpoint.get)
    app.router.add_delete(path, endpoint.delete)
    app.on_shutdown.append(endpoint.close)
    return app


async def serve_http(
    server: MCPServer,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    path: str = "/mcp",
    ready: Callable[[str], Any] | None = None,
) -> None:
    """Serve until cancelled (MCP-42); binds to localhost unless told otherwise, as the specification
    advises. ``ready(url)`` is called once it listens, with the URL (the port the system chose for 0)."""
    runner = web.AppRunner(make_app(server, path=path))
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        if ready is not None:
            sockets = getattr(site._server, "sockets", None) or ()  # an asyncio.Server: the bound addresses
            bound = sockets[0].getsockname()[1] if sockets else port
            ready(f"http://{host if ':' not in host else f'[{host}]'}:{bound}{path}")
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
