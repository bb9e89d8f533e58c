"""An `MCPServer` (``agent.as_mcp_server()``) over Streamable HTTP with aiohttp
(spec/mcp.md, MCP-42).

Theory of operation
-------------------
One endpoint (``path``) and a table of sessions, each a core `Connection` plus its
running calls by request id:

    POST initialize          -> new session id (Mcp-Session-Id header), the initialize
    answer POST request             -> the session's call runs as a task; its answer as
    application/json POST notification/answer -> 202; notifications/cancelled cancels
    that task first DELETE                   -> the session ends; its running calls are
    cancelled GET                      -> 405: this server sends nothing unprompted

Checks before anything runs: a foreign ``Origin`` is 403 (DNS rebinding), an unsupported
``MCP-Protocol-Version`` is 400, a missing session id is 400 and an unknown one 404. A
client that disconnects does not cancel its call (the specification says so);
``notifications/cancelled`` does, and the call is then answered with error -32800.
Closing the app cancels every call.

What a client can make the server hold is bounded (MCP-49): a body must arrive within
``read_timeout`` (408 otherwise; ``serve_http`` also closes a connection whose request
line and headers do not arrive within it), a message that is not JSON-RPC — nested too
deeply, an id that is not a string or an integer, an id in use by a running call of the
session — is a 4xx with a JSON-RPC error, at most ``max_sessions`` sessions live at once
(an ``initialize`` beyond forgets the least recently used session with no running call,
and is 429 only while every session has one), and a session idle for
``session_timeout`` seconds with no running call is forgotten (404 after).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Callable, Collection
from typing import Any, TypeGuard
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
MAX_SESSIONS = 1024
SESSION_TIMEOUT = 3600.0  # seconds a session may sit idle (no request, no running call)
READ_TIMEOUT = 30.0  # seconds to receive one request


class _Session:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.calls: dict[int | str, asyncio.Task[Any]] = {}
        self.used = time.monotonic()

    def idle_for(self, seconds: float) -> bool:
        return not self.calls and time.monotonic() - self.used > seconds


def _is_id(value: object) -> TypeGuard[int | str]:
    return isinstance(value, int | str) and not isinstance(value, bool)


class _Endpoint:
    def __init__(
        self,
        server: MCPServer,
        allowed_origins: Collection[str],
        *,
        max_sessions: int,
        session_timeout: float,
        read_timeout: float,
    ) -> None:
        self.server = server
        self.allowed_origins = frozenset(allowed_origins)
        self.sessions: dict[str, _Session] = {}
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self.read_timeout = read_timeout

    def _refuse(self, request: web.Request) -> web.Response | None:
        origin = request.headers.get("Origin")
        if (
            origin
            and origin not in self.allowed_origins
            and urlsplit(origin).hostname not in _LOCAL_HOSTS
        ):
            return _rpc_error(
                403, None, INVALID_REQUEST, f"origin {origin!r} is not allowed"
            )
        version = request.headers.get("MCP-Protocol-Version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            return _rpc_error(
                400,
                None,
                INVALID_REQUEST,
                f"unsupported MCP-Protocol-Version {version!r}",
            )
        return None

    def _session(self, request: web.Request) -> _Session | web.Response:
        session_id = request.headers.get("Mcp-Session-Id")
        if not session_id:
            return _rpc_error(
                400, None, INVALID_REQUEST, "missing Mcp-Session-Id header"
            )
        session = self.sessions.get(session_id)
        # MCP-49: expired
        if session is not None and session.idle_for(self.session_timeout):
            del self.sessions[session_id]
            session = None
        if session is None:
            return _rpc_error(404, None, INVALID_REQUEST, "unknown or expired session")
        session.used = time.monotonic()
        return session

    def _room(self) -> bool:
        """MCP-49: room for one more session: when the table is full, the expired
        sessions are forgotten, and if none was, the least recently used session with
        no running call is (its id is 404 after); no room only while every session has
        a call running."""
        if len(self.sessions) < self.max_sessions:
            return True
        for key in [
            k for k, s in self.sessions.items() if s.idle_for(self.session_timeout)
        ]:
            del self.sessions[key]
        if len(self.sessions) < self.max_sessions:
            return True
        # decided in issue 36: idle sessions must not lock new clients out until they
        # expire (up to session_timeout); one scan, only when the table is full
        resting = [(s.used, k) for k, s in self.sessions.items() if not s.calls]
        if not resting:
            return False
        del self.sessions[min(resting)[1]]
        return True

    async def post(self, request: web.Request) -> web.StreamResponse:
        refused = self._refuse(request)
        if refused is not None:
            return refused
        try:
            async with asyncio.timeout(self.read_timeout):
                body = await request.read()
        except TimeoutError:  # MCP-49: a body that does not come is not waited for
            return _rpc_error(
                408,
                None,
                INVALID_REQUEST,
                f"the request did not arrive within {self.read_timeout} s",
            )
        try:
            message = json.loads(body)
        # RecursionError: nested too deeply (MCP-49)
        except (ValueError, RecursionError) as exc:
            problem = (
                "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            )
            return _rpc_error(400, None, PARSE_ERROR, f"not JSON: {problem}")
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _rpc_error(
                400,
                None,
                INVALID_REQUEST,
                "expected one JSON-RPC 2.0 message (no batches)",
            )
        method, request_id = message.get("method"), message.get("id")
        # MCP-36, MCP-49: never a key we cannot use
        if "id" in message and not _is_id(request_id):
            shown = "null" if request_id is None else type(request_id).__name__
            return _rpc_error(
                400,
                None,
                INVALID_REQUEST,
                f"request id must be a string or an integer, got {shown}",
            )
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if method == "initialize" and "id" in message:
            if not self._room():
                return _rpc_error(
                    429,
                    request_id,
                    INVALID_REQUEST,
                    f"too many sessions ({self.max_sessions})",
                )
            connection = self.server.connection()
            result = await connection.handle("initialize", params)
            session_id = secrets.token_hex(16)
            self.sessions[session_id] = _Session(connection)
            return web.json_response(
                {"jsonrpc": "2.0", "id": request_id, "result": result},
                headers={"Mcp-Session-Id": session_id},
            )
        session = self._session(request)
        if isinstance(session, web.Response):
            return session
        if not isinstance(method, str) or "id" not in message:
            if method == "notifications/cancelled":
                cancelled = params.get("requestId")
                call = session.calls.get(cancelled) if _is_id(cancelled) else None
                if call is not None:
                    call.cancel()
            return web.Response(status=202)
        assert _is_id(request_id)  # a request: its id was checked above
        # MCP-36, MCP-49: the running call goes on, and stays cancellable
        if request_id in session.calls:
            return _rpc_error(
                400,
                request_id,
                INVALID_REQUEST,
                f"request id {request_id!r} is already in use",
            )
        call = asyncio.ensure_future(session.connection.handle(method, params))
        session.calls[request_id] = call
        try:
            # a client that disconnects does not cancel (MCP-42)
            result = await asyncio.shield(call)
        except asyncio.CancelledError:
            if not call.cancelled():
                raise
            return _rpc_error(200, request_id, REQUEST_CANCELLED, "request cancelled")
        except MCPRequestError as exc:
            return _rpc_error(200, request_id, exc.code, exc.error_message)
        except Exception as exc:
            return _rpc_error(
                200, request_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"
            )
        finally:
            session.calls.pop(request_id, None)
            # idle from the end of its last call (MCP-49)
            session.used = time.monotonic()
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
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": code, "message": message},
        },
        status=status,
    )


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
    if (
        isinstance(max_sessions, bool)
        or not isinstance(max_sessions, int)
        or max_sessions < 1
    ):
        raise ValueError(f"max_sessions must be an int >= 1, got {max_sessions!r}")
    for name, value in (
        ("session_timeout", session_timeout),
        ("read_timeout", read_timeout),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not value > 0
        ):
            raise ValueError(
                f"{name} must be a positive number of seconds, got {value!r}"
            )
    endpoint = _Endpoint(
        server,
        allowed_origins,
        max_sessions=max_sessions,
        session_timeout=session_timeout,
        read_timeout=read_timeout,
    )
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
