"""An `MCPServer` over Streamable HTTP, apart from any HTTP server (spec/mcp.md MCP-42,
MCP-49; spec/hosting.md HS-170).

`StreamableHTTPEndpoint` answers one HTTP request at a time — a method, the request's
headers and a way to read its body in, an `HTTPAnswer` out — so every HTTP server can
carry it: the aiohttp plugin (``minagent_mcp_http``) and the hosting application
(``minagent.hosting``) both do, and neither holds the protocol's rules itself.

Theory of operation
-------------------
One endpoint and a table of sessions, each a `Connection` plus its running calls by
request id:

    POST initialize            -> a new session id (Mcp-Session-Id header) and the
                                  initialize answer
    POST request               -> the session's call runs as a task; its answer as
                                  application/json
    POST notification, answer  -> 202; notifications/cancelled cancels that call first
    DELETE                     -> the session ends; its running calls are cancelled
    GET                        -> 405: this server sends nothing unprompted

Checks before anything runs: a foreign ``Origin`` is 403 (DNS rebinding), an unsupported
``MCP-Protocol-Version`` is 400, a missing session id is 400 and an unknown one 404. A
client that disconnects does not cancel its call (the specification says so);
``notifications/cancelled`` does, and the call is then answered with error -32800.
`close` cancels every call.

What a client can make the server hold is bounded (MCP-49): a body must arrive within
``read_timeout`` (408 otherwise), a message that is not JSON-RPC — nested too deeply, an
id that is not a string or an integer, an id in use by a running call of the session —
is a 4xx with a JSON-RPC error, at most ``max_sessions`` sessions live at once (an
``initialize`` beyond forgets the least recently used session with no running call, and
is 429 only while every session has one), and a session idle for ``session_timeout``
seconds with no running call is forgotten (404 after).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard
from urllib.parse import urlsplit

from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    SUPPORTED_PROTOCOL_VERSIONS,
    MCPRequestError,
)

__all__ = [
    "MAX_SESSIONS",
    "READ_TIMEOUT",
    "REQUEST_CANCELLED",
    "SESSION_TIMEOUT",
    "HTTPAnswer",
    "StreamableHTTPEndpoint",
]

REQUEST_CANCELLED = -32800
MAX_SESSIONS = 1024
# seconds a session may sit idle (no request, no running call)
SESSION_TIMEOUT = 3600.0
# seconds to receive one request
READ_TIMEOUT = 30.0
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_JSON = (("Content-Type", "application/json"),)


class _Connection(Protocol):
    """One client's state: what `MCPServer.connection()` returns."""

    async def handle(self, method: str, params: dict[str, Any]) -> Any: ...


class _Server(Protocol):
    """What the endpoint needs of an `MCPServer` (typed here, not imported: the
    server module makes endpoints)."""

    def connection(self) -> _Connection: ...


@dataclass(frozen=True, slots=True)
class HTTPAnswer:
    """One HTTP response: its status, headers and whole body."""

    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


class _Session:
    def __init__(self, connection: _Connection) -> None:
        self.connection = connection
        self.calls: dict[int | str, asyncio.Task[Any]] = {}
        self.used = time.monotonic()

    def idle_for(self, seconds: float) -> bool:
        return not self.calls and time.monotonic() - self.used > seconds


def _is_id(value: object) -> TypeGuard[int | str]:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _json(
    status: int, data: Mapping[str, Any], headers: tuple[tuple[str, str], ...] = ()
) -> HTTPAnswer:
    return HTTPAnswer(status, json.dumps(data).encode(), _JSON + headers)


def _rpc_error(status: int, request_id: Any, code: int, message: str) -> HTTPAnswer:
    return _json(
        status,
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": code, "message": message},
        },
    )


def _seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


class StreamableHTTPEndpoint:
    """``server`` as one Streamable HTTP endpoint (MCP-42, MCP-49): `handle` answers a
    request, `close` cancels every running call."""

    def __init__(
        self,
        server: _Server,
        *,
        allowed_origins: Collection[str] = (),
        max_sessions: int = MAX_SESSIONS,
        session_timeout: float = SESSION_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        if (
            isinstance(max_sessions, bool)
            or not isinstance(max_sessions, int)
            or max_sessions < 1
        ):
            raise ValueError(f"max_sessions must be an int >= 1, got {max_sessions!r}")
        self.server = server
        self.allowed_origins = frozenset(allowed_origins)
        self.sessions: dict[str, _Session] = {}
        self.max_sessions = max_sessions
        self.session_timeout = _seconds("session_timeout", session_timeout)
        self.read_timeout = _seconds("read_timeout", read_timeout)

    async def handle(
        self,
        method: str,
        headers: Mapping[str, str],
        read: Callable[[], Awaitable[bytes]],
    ) -> HTTPAnswer:
        """Answer one request. ``headers`` has lower-case names; ``read()`` returns the
        whole body."""
        origin = headers.get("origin")
        if (
            origin
            and origin not in self.allowed_origins
            and urlsplit(origin).hostname not in _LOCAL_HOSTS
        ):
            return _rpc_error(
                403, None, INVALID_REQUEST, f"origin {origin!r} is not allowed"
            )
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            return _rpc_error(
                400,
                None,
                INVALID_REQUEST,
                f"unsupported MCP-Protocol-Version {version!r}",
            )
        if method == "POST":
            return await self._post(headers, read)
        if method == "DELETE":
            return await self._delete(headers)
        # GET: this server sends nothing unprompted
        return HTTPAnswer(405, headers=(("Allow", "POST, DELETE"),))

    def _session(self, headers: Mapping[str, str]) -> _Session | HTTPAnswer:
        session_id = headers.get("mcp-session-id")
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

    async def _post(
        self, headers: Mapping[str, str], read: Callable[[], Awaitable[bytes]]
    ) -> HTTPAnswer:
        try:
            async with asyncio.timeout(self.read_timeout):
                body = await read()
        # MCP-49: a body that does not come is not waited for
        except TimeoutError:
            return _rpc_error(
                408,
                None,
                INVALID_REQUEST,
                f"the request did not arrive within {self.read_timeout:g} s",
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
            return _json(
                200,
                {"jsonrpc": "2.0", "id": request_id, "result": result},
                (("Mcp-Session-Id", session_id),),
            )
        session = self._session(headers)
        if isinstance(session, HTTPAnswer):
            return session
        if not isinstance(method, str) or "id" not in message:
            if method == "notifications/cancelled":
                cancelled = params.get("requestId")
                call = session.calls.get(cancelled) if _is_id(cancelled) else None
                if call is not None:
                    call.cancel()
            return HTTPAnswer(202)
        # a request: its id was checked above
        assert _is_id(request_id)
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
            if call.done():
                session.calls.pop(request_id, None)
            else:
                # the client left (MCP-42): the call goes on, and stays in the
                # session's table, so that notifications/cancelled, DELETE and close()
                # still reach it, until it ends
                call.add_done_callback(lambda done: _forget(session, request_id, done))
            # idle from the end of its last call (MCP-49)
            session.used = time.monotonic()
        return _json(200, {"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _delete(self, headers: Mapping[str, str]) -> HTTPAnswer:
        session = self._session(headers)
        if isinstance(session, HTTPAnswer):
            return session
        del self.sessions[headers["mcp-session-id"]]
        await _cancel(session.calls.values())
        return HTTPAnswer(200)

    async def close(self) -> None:
        """Forget every session and cancel every running call."""
        calls = [c for s in self.sessions.values() for c in s.calls.values()]
        self.sessions.clear()
        await _cancel(calls)


def _forget(session: _Session, request_id: int | str, call: asyncio.Task[Any]) -> None:
    """A call that outlived its request has ended: out of the table, its outcome read
    (nobody is left to read it)."""
    if session.calls.get(request_id) is call:
        del session.calls[request_id]
    if not call.cancelled():
        call.exception()


async def _cancel(calls: Collection[asyncio.Task[Any]]) -> None:
    calls = list(calls)
    for call in calls:
        call.cancel()
    for call in calls:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await call
