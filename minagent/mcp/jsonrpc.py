"""MCP's JSON-RPC 2.0 layer: framing, one session per connection, typed errors
(spec/mcp.md).

Rules
-----
1. Everything JSON-RPC lives here: message framing, request ids, routing, timeouts and
   cancellation, the error codes and the MCP errors; both sides of a session (client and
   server) use this one `Session`.
2. The only MCP methods known here are the ones every session answers alike:
   ``notifications/cancelled`` and ``ping``. Everything else is the client's or the
   server's.
3. A `Session` owns its tasks: nothing it started outlives ``aclose()`` (MCP-7, MCP-8).
4. What a peer can make a session hold is bounded: at most `MAX_PEER_REQUESTS` of its
   requests run or wait for their answer to be sent at once; beyond that the reader
   stops reading until one ends, so a peer that floods requests and never reads the
   answers stalls itself (MCP-44).

Theory of operation
-------------------
A `Transport` moves whole JSON-RPC messages (dicts): ``send(message)`` and
``receive()``, which returns ``None`` once the peer is gone. stdio frames one message
per line (MCP-2); the HTTP plugin is another transport. Nothing above this module knows
how bytes move.

A `Session` owns one transport and one reader task. The reader is the only consumer of
``receive()`` and routes every incoming message:

    response (has "id", "result"/"error")  -> the waiting request's future, by id
    request  (has "id", "method")          -> a handler task, registered by id, answered
    when done notification (has "method", no "id")   -> "notifications/cancelled"
    cancels that handler task;
                                              anything else goes to the notification
                                              callback

``request()`` registers a future under a fresh id, sends, and waits at most ``timeout``
seconds. When the wait ends without an answer — timeout or the caller's cancellation —
the peer is told with ``notifications/cancelled`` (sent by a task of the session: the
caller never waits for a peer that does not read) and the id is forgotten, so a late
answer is dropped (MCP-7). When the reader stops (end of stream, undecodable input,
transport failure) every pending request fails with `MCPConnectionError` or
`MCPProtocolError` naming the server, and later requests fail at once: nobody waits for
a peer that is gone (MCP-8). ``aclose()`` cancels the reader and every handler task and
awaits them: nothing of the session outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

from .._exceptions import MinagentError

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "MAX_MESSAGE_BYTES",
    "MAX_PEER_REQUESTS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "MCPConnectionError",
    "MCPError",
    "MCPProtocolError",
    "MCPRequestError",
    "MCPTimeoutError",
    "MCPToolError",
    "RequestFailed",
    "Session",
    "Transport",
    "decode_message",
    "encode_message",
]

logger = logging.getLogger("minagent.mcp")

LATEST_PROTOCOL_VERSION = "2025-06-18"
SUPPORTED_PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# the peer's requests running, or being answered, at once (MCP-44)
MAX_PEER_REQUESTS = 64
# one message, whatever the transport (MCP-2, MCP-45)
MAX_MESSAGE_BYTES = 32 * 1024 * 1024


class MCPError(MinagentError):
    """Something went wrong talking to an MCP peer; ``server`` names it (MCP-8)."""

    def __init__(self, message: str, *, server: str | None = None) -> None:
        super().__init__(message)
        self.server = server


class MCPProtocolError(MCPError):
    """The peer sent something that is not a valid MCP message (MCP-2)."""


class MCPConnectionError(MCPError, ConnectionError):
    """The peer is gone: the process exited, the stream closed, or it could not be
    started (MCP-8)."""


class MCPTimeoutError(MCPError, TimeoutError):
    """A request got no answer within its timeout; the peer was sent a cancellation
    (MCP-7)."""


class MCPRequestError(MCPError):
    """The peer answered a request with a JSON-RPC error (code, message, data)."""

    def __init__(
        self, code: int, message: str, data: Any = None, *, server: str | None = None
    ) -> None:
        where = f"MCP server {server!r}" if server else "MCP peer"
        super().__init__(
            f"{where} answered with error {code}: {message}", server=server
        )
        self.code = code
        self.error_message = message
        self.data = data


class MCPToolError(MCPError):
    """A tool call whose result has ``isError: true``; the message is the tool's own
    text (MCP-12).

    ``model_visible`` asks the tool loop to show this text to the model as the error
    result.
    """

    model_visible = True


@dataclass(frozen=True)
class RequestFailed:
    """What a transport's ``receive`` gives for one of our requests whose answer cannot
    come (an HTTP event stream that ended without it): that request fails with
    ``error``; the session goes on (MCP-46)."""

    request_id: int | str
    error: MCPError


class Transport(Protocol):
    """Moves whole JSON-RPC messages; ``receive`` returns None at the end of the stream,
    and may return a `RequestFailed` for a request whose answer cannot arrive."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any] | RequestFailed | None: ...

    async def aclose(self) -> None: ...


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One message as one line of UTF-8 JSON (MCP-2): JSON escapes every newline inside
    strings."""
    return (
        json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        + b"\n"
    )


def decode_message(data: bytes | str, *, server: str | None = None) -> dict[str, Any]:
    """Parse one JSON-RPC message; anything else is an `MCPProtocolError` quoting the
    input (MCP-2)."""
    try:
        message = json.loads(data)
    # RecursionError: nested too deeply (MCP-47)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        excerpt = text.strip()[:120]
        where = f"MCP server {server!r}" if server else "MCP peer"
        raise MCPProtocolError(
            f"{where} sent a line that is not JSON ({exc}): {excerpt!r}; an MCP server must write only "
            "JSON-RPC messages to stdout (logs belong on stderr)",
            server=server,
        ) from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        where = f"MCP server {server!r}" if server else "MCP peer"
        raise MCPProtocolError(
            f"{where} sent JSON that is not a JSON-RPC 2.0 message: {str(message)[:120]!r}",
            server=server,
        )
    return message


def _is_id(value: object) -> TypeGuard[int | str]:
    """A JSON-RPC request id minagent accepts: a string or an integer (MCP-36)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


RequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
NotificationHandler = Callable[[str, dict[str, Any]], None]


class Session:
    """One JSON-RPC connection over a `Transport`, usable by a client and a server
    alike."""

    def __init__(
        self,
        transport: Transport,
        *,
        name: str,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
    ) -> None:
        self.transport = transport
        self.name = name
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._handlers: dict[int | str, asyncio.Task[None]] = {}
        # refusals (MCP-36) and cancellations (MCP-7) on their way
        self._sending: set[asyncio.Task[None]] = set()
        # set when one of the peer's requests ended (MCP-44)
        self._room = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._failure: MCPError | None = None
        self.closed = asyncio.Event()

    def start(self) -> None:
        if self._reader is None:
            self._reader = asyncio.create_task(
                self._read(), name=f"mcp-reader:{self.name}"
            )

    @property
    def failure(self) -> MCPError | None:
        """Why the session stopped, once it has."""
        return self._failure

    # -- outgoing ---------------------------------------------------------------------------

    async def notify(
        self, method: str, params: Mapping[str, Any] | None = None
    ) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.transport.send(message)

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - a per-request timeout is part of the protocol (MCP-7)
        cancellable: bool = True,
    ) -> Any:
        """Send a request and return its result; raises `MCPRequestError` for an error
        answer."""
        if self._failure is not None:
            raise self._failure
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        try:
            # sending counts: an HTTP answer may come with the response
            async with asyncio.timeout(timeout):
                await self.transport.send(message)
                return await future
        except TimeoutError:
            if (
                future.done()
                and not future.cancelled()
                and future.exception() is not None
            ):
                raise future.exception() from None  # type: ignore[misc]
            if cancellable:
                self._cancel_remote(request_id, f"timed out after {timeout} s")
            raise MCPTimeoutError(
                f"MCP server {self.name!r} did not answer {method!r} within {timeout} s",
                server=self.name,
            ) from None
        except asyncio.CancelledError:
            # awaiting it cancelled it
            if cancellable and (future.cancelled() or not future.done()):
                self._cancel_remote(request_id, "the caller was cancelled")
            raise
        finally:
            self._pending.pop(request_id, None)

    def _cancel_remote(self, request_id: int | str, reason: str) -> None:
        """Tell the peer to stop working on a request we no longer wait for (MCP-7),
        from a task of the session: a peer that does not read never holds up the
        caller."""
        if self._failure is None:
            params = {"requestId": request_id, "reason": reason}
            message = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": params,
            }
            self._send_later(message, f"the cancellation of {request_id!r}")

    # -- incoming ---------------------------------------------------------------------------

    async def _read(self) -> None:
        failure: MCPError
        try:
            while True:
                message = await self.transport.receive()
                if message is None:
                    failure = MCPConnectionError(
                        f"MCP server {self.name!r} closed the connection",
                        server=self.name,
                    )
                    break
                # MCP-46: that request fails, the session goes on
                if isinstance(message, RequestFailed):
                    future = self._pending.get(message.request_id)
                    if future is not None and not future.done():
                        future.set_exception(message.error)
                    continue
                if "method" in message and "id" in message:
                    await self._room_for_a_request()
                self._dispatch(message)
        except MCPError as exc:
            failure = exc
        except (OSError, ValueError) as exc:
            failure = MCPConnectionError(
                f"MCP server {self.name!r}: {exc}", server=self.name
            )
        # a transport bug must not leave requests waiting forever (MCP-8)
        except Exception as exc:
            logger.exception("MCP %s: reading failed", self.name)
            failure = MCPConnectionError(
                f"MCP server {self.name!r}: {type(exc).__name__}: {exc}",
                server=self.name,
            )
        self._stop(failure)

    async def _room_for_a_request(self) -> None:
        """MCP-44: the reader waits while `MAX_PEER_REQUESTS` of the peer's requests are
        in hand."""
        while len(self._handlers) + len(self._sending) >= MAX_PEER_REQUESTS:
            self._room.clear()
            await self._room.wait()

    def _stop(self, failure: MCPError) -> None:
        if self._failure is None:
            self._failure = failure
        for future in self._pending.values():
            if not future.done():
                future.set_exception(self._failure)
                # retrieved: a request abandoned at the same moment logs nothing
                future.exception()
        self.closed.set()

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            request_id = message.get("id")
            future = (
                self._pending.get(request_id)
                if isinstance(request_id, int | str)
                else None
            )
            if future is None or future.done():
                # MCP-7: an answer to a request we stopped waiting for is dropped
                return
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                code = error.get("code")
                future.set_exception(
                    MCPRequestError(
                        code if isinstance(code, int) else INTERNAL_ERROR,
                        str(error.get("message", "")),
                        error.get("data"),
                        server=self.name,
                    )
                )
            else:
                future.set_result(message.get("result"))
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            if method == "notifications/cancelled":
                cancelled = params.get("requestId")
                task = (
                    self._handlers.get(cancelled) if _is_id(cancelled) else None
                )  # MCP-47: any other id names nothing
                if task is not None:
                    logger.debug(
                        "MCP %s: request %r cancelled: %s",
                        self.name,
                        params.get("requestId"),
                        params.get("reason"),
                    )
                    task.cancel()
            elif self._on_notification is not None:
                try:
                    self._on_notification(method, params)
                # the application's callback failed: report it, keep the connection
                except Exception:
                    logger.exception("MCP %s: handling %r failed", self.name, method)
            return
        request_id = message["id"]
        if not _is_id(request_id):  # MCP-36
            shown = "null" if request_id is None else type(request_id).__name__
            self._refuse(
                None, f"request id must be a string or an integer, got {shown}"
            )
            return
        if request_id in self._handlers:  # MCP-36: the running request goes on
            self._refuse(
                request_id,
                f"request id {request_id!r} is already in use by a running request",
            )
            return
        task = asyncio.create_task(
            self._answer(request_id, str(method), params),
            name=f"mcp-request:{self.name}",
        )
        self._handlers[request_id] = task
        task.add_done_callback(functools.partial(self._forget, request_id))

    def _refuse(self, request_id: int | str | None, text: str) -> None:
        """Answer a request that cannot run with error -32600 (MCP-36), in a task closed
        with the session."""
        error = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": INVALID_REQUEST, "message": text},
        }
        self._send_later(error, f"the refusal of {request_id!r}")

    def _send_later(self, message: dict[str, Any], what: str) -> None:
        task = asyncio.create_task(
            self._send_quietly(message, what), name=f"mcp-send:{self.name}"
        )
        self._sending.add(task)
        task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        self._room.set()

    async def _send_quietly(self, message: dict[str, Any], what: str) -> None:
        try:
            await self.transport.send(message)
        except Exception as exc:  # the peer may have gone; the reader reports that
            logger.debug("MCP %s: could not send %s: %s", self.name, what, exc)

    def _forget(self, request_id: int | str, _task: object) -> None:
        self._handlers.pop(request_id, None)
        self._room.set()

    async def _answer(
        self, request_id: int | str, method: str, params: dict[str, Any]
    ) -> None:
        response: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            if method == "ping":
                result: Any = {}
            elif self._on_request is None:
                raise MCPRequestError(METHOD_NOT_FOUND, f"method not found: {method}")
            else:
                result = await self._on_request(method, params)
            response["result"] = result
        except asyncio.CancelledError:
            return  # MCP-7: a cancelled request gets no answer
        except MCPRequestError as exc:
            response["error"] = {"code": exc.code, "message": exc.error_message}
            if exc.data is not None:
                response["error"]["data"] = exc.data
        except Exception as exc:
            logger.exception("MCP %s: handler for %r failed", self.name, method)
            response["error"] = {
                "code": INTERNAL_ERROR,
                "message": f"{type(exc).__name__}: {exc}",
            }
        # the peer may have gone; the reader reports that
        with contextlib.suppress(Exception):
            await self.transport.send(response)

    async def wait_closed(self) -> None:
        await self.closed.wait()

    async def aclose(self) -> None:
        """Stop reading, cancel every handler, fail every pending request;
        idempotent."""
        running = (self._reader, *self._handlers.values(), *self._sending)
        tasks = [t for t in running if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._stop(
            MCPConnectionError(
                f"MCP session with {self.name!r} is closed", server=self.name
            )
        )
