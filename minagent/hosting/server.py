"""The dev server: a standard-library asyncio HTTP/1.1 server for an ASGI 3 application
(spec/hosting.md HS-7, HS-110 .. HS-119), the server of ``python -m minagent serve``.

Theory of operation
-------------------
One task per connection reads request heads from its own buffer, so bytes that arrive
early (a pipelined next request) are never lost. A connection is in one of three
states: ``idle`` (waiting for the first byte of a request, bounded by the keep-alive
timeout), ``head`` (reading a request head, bounded by the head timeout and the head
caps) or ``busy`` (the application is answering). The application runs inside the
connection's task, so cancelling that task (at the end of a graceful shutdown) cancels
the application.

Once a request's body has been read, a watcher task reads the socket on: end of file
means the client is gone, which sets the exchange's ``disconnected`` event; every
``receive()`` from then on waits for that event and returns ``http.disconnect``, and
every ``send()`` after it raises `ClientDisconnected` (an `OSError`, as ASGI 2.4 asks).
Bytes the watcher reads are kept for the next request.

The number of open connections is capped: a connection accepted at the cap evicts the
connection that has waited longest without a request in flight (``idle`` or ``head``);
when every connection is ``busy`` the newcomer is answered 503 and closed. So idle or
slow clients cannot hold the server, and they cannot starve a real request.

`Server.shutdown` stops listening, closes idle connections, lets requests in flight end
within a grace period (their responses carry ``connection: close``), then cancels what
is left. `run` wires that to SIGTERM and SIGINT (a second signal cancels at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

__all__ = [
    "ClientDisconnected",
    "Server",
    "ServerLimits",
    "run",
    "serve",
    "serve_until_signalled",
]

Message = dict[str, Any]
App = Callable[
    [dict[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Any]],
    Awaitable[None],
]

_log = logging.getLogger("minagent.hosting.server")

# HS-7: the default cap on a request head, in bytes (request line and headers).
MAX_HEADER_BYTES = 16_384
_READ = 65_536
# HS-111: how long a closing connection reads and drops a body nobody read
LINGER_SECONDS = 5.0
# the characters of an HTTP token (RFC 9110 5.6.2): method and header names
_TOKEN = frozenset(
    b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


class ClientDisconnected(OSError):
    """``send()`` was called after the client went away (HS-112)."""


@dataclass(frozen=True)
class ServerLimits:
    """The dev server's caps and timeouts (HS-113, HS-114), in bytes and seconds."""

    max_connections: int = 100
    max_head_bytes: int = MAX_HEADER_BYTES
    max_headers: int = 100
    keep_alive_timeout: float = 5.0
    head_timeout: float = 10.0
    body_timeout: float = 30.0
    send_timeout: float = 30.0
    shutdown_grace: float = 10.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0:
                raise ValueError(f"ServerLimits.{name} must be positive, got {value!r}")


class _BadRequest(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[bytes, bytes]]
    length: int
    chunked: bool
    keep_alive: bool
    expect_continue: bool


class Server:
    """One listening socket serving one ASGI application (HS-7, HS-110)."""

    def __init__(self, app: App, limits: ServerLimits | None = None) -> None:
        self.app = app
        self.limits = limits or ServerLimits()
        self.closing = False
        self.state: dict[str, Any] = {}
        self._listener: asyncio.base_events.Server | None = None
        self._connections: set[_Connection] = set()
        # connections being answered 503 at the cap (each ends within a second)
        self._refusing: set[asyncio.Task[Any]] = set()
        self._lifespan: _Lifespan | None = None
        self._shutdown_done = False

    @property
    def sockets(self) -> tuple[Any, ...]:
        return tuple(self._listener.sockets) if self._listener else ()

    @property
    def port(self) -> int:
        return int(self.sockets[0].getsockname()[1])

    @property
    def connection_count(self) -> int:
        """Connections open right now (HS-113)."""
        return len(self._connections)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Run the application's lifespan startup, then listen (HS-116)."""
        self._lifespan = _Lifespan(self.app, self.state)
        await self._lifespan.startup()
        try:
            # HS-110: the listen backlog holds a burst of the connection cap's size
            self._listener = await asyncio.start_server(
                self._accept,
                host,
                port,
                limit=self.limits.max_head_bytes,
                backlog=max(100, self.limits.max_connections),
            )
        except BaseException:
            await self._lifespan.shutdown()
            raise

    def close(self) -> None:
        """Stop accepting; close idle connections; requests in flight go on."""
        self.closing = True
        if self._listener is not None:
            self._listener.close()
        for connection in list(self._connections):
            if connection.state != "busy":
                connection.drop()

    async def wait_closed(self) -> None:
        """Close, let requests in flight end within the grace, then cancel them."""
        await self.shutdown(self.limits.shutdown_grace)

    async def shutdown(self, grace: float | None = None) -> None:
        """HS-115: graceful shutdown; ``grace`` seconds for requests in flight."""
        self.close()
        grace = self.limits.shutdown_grace if grace is None else grace
        tasks = {c.task for c in self._connections}
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=grace)
            # a connection leaves the set before its task ends: those left are pending
            for connection in list(self._connections):
                connection.cancel()
            if pending:
                await asyncio.wait(pending)
        if self._refusing:
            await asyncio.wait(set(self._refusing))
        if self._listener is not None:
            await self._listener.wait_closed()
        if not self._shutdown_done:
            self._shutdown_done = True
            if self._lifespan is not None:
                await self._lifespan.shutdown()

    async def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if self.closing:
            writer.transport.abort()
            return
        live = [c for c in self._connections if not c.dropped]
        if len(live) >= self.limits.max_connections:
            # HS-113: make room by evicting the longest-waiting connection that has
            # no request in flight; when all are busy, refuse the newcomer.
            waiting = [c for c in live if c.state != "busy"]
            if waiting:
                min(waiting, key=lambda c: c.since).drop()
            else:
                writer.write(_plain(503, b"server busy", retry_after=True))
                task = _this_task()
                self._refusing.add(task)
                try:
                    await _linger(reader, writer, 1.0)
                finally:
                    self._refusing.discard(task)
                return
        connection = _Connection(self, reader, writer)
        self._connections.add(connection)
        try:
            await connection.run()
        except asyncio.CancelledError:
            # HS-115: a cancel of our own (shutdown) ends the connection's task
            # normally; any other cancel goes on.
            if not connection.stopping or _this_task().uncancel():
                raise
        except Exception:
            _log.exception("hosting server: a connection failed")
        finally:
            self._connections.discard(connection)


def _this_task() -> asyncio.Task[Any]:
    # The server's coroutines always run in a task (asyncio.start_server makes one
    # per connection), so there is always a current task.
    task = asyncio.current_task()
    assert task is not None
    return task


async def _linger(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, budget: float
) -> None:
    # Close after a final answer without a reset: closing a socket that still holds
    # unread request bytes makes the kernel send RST, which can destroy the answer
    # before the client reads it. So: send, half-close, read and drop what the client
    # still sends until it closes or ``budget`` seconds have passed (HS-111).
    # The socket is closed however this ends, a cancellation (shutdown) included: an
    # open transport would leak its descriptor, and Python >= 3.12.1's
    # Server.wait_closed() waits for it for ever.
    try:
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(budget):
                await writer.drain()
                writer.write_eof()
                while await reader.read(_READ):
                    pass
    finally:
        writer.transport.abort()


def _plain(status: int, text: bytes, *, retry_after: bool = False) -> bytes:
    phrase = http.HTTPStatus(status).phrase
    lines = [
        f"HTTP/1.1 {status} {phrase}".encode(),
        b"content-type: text/plain; charset=utf-8",
        b"content-length: " + str(len(text)).encode(),
        b"connection: close",
    ]
    if retry_after:
        lines.append(b"retry-after: 1")
    return b"\r\n".join(lines) + b"\r\n\r\n" + text


class _Connection:
    def __init__(
        self, server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.limits = server.limits
        self.reader = reader
        self.writer = writer
        self.buffer = bytearray()
        self.state = "idle"
        self.since = time.monotonic()
        self.task = _this_task()
        self.stopping = False
        self.dropped = False
        # an error answer was written: close without a reset (see _linger)
        self.linger = False
        peer = writer.get_extra_info("peername")
        local = writer.get_extra_info("sockname")
        self.client = (str(peer[0]), int(peer[1])) if peer else None
        self.local = (str(local[0]), int(local[1])) if local else None

    def drop(self) -> None:
        """Close a connection that has no request in flight."""
        self.dropped = True
        self.writer.transport.close()

    def cancel(self) -> None:
        """Cancel the request in flight (end of a graceful shutdown)."""
        self.stopping = True
        self.task.cancel()

    async def _read(self) -> bytes:
        try:
            return await self.reader.read(_READ)
        except ConnectionError:
            return b""

    async def run(self) -> None:
        try:
            while not self.server.closing:
                request = await self._read_head()
                if request is None:
                    return
                if not await _Exchange(self, request).run():
                    return
        finally:
            try:
                if self.linger:
                    await _linger(self.reader, self.writer, LINGER_SECONDS)
            finally:
                self.writer.close()

    async def _read_head(self) -> _Request | None:
        self.state, self.since = "idle", time.monotonic()
        limits = self.limits
        # HS-114: empty lines before a request line are dropped, also when they arrive
        # on their own; an idle keep-alive connection is closed after the timeout.
        try:
            async with asyncio.timeout(limits.keep_alive_timeout):
                while True:
                    while self.buffer[:2] == b"\r\n":
                        del self.buffer[:2]
                    if self.buffer:
                        break
                    data = await self._read()
                    if not data:
                        return None
                    self.buffer += data
        except TimeoutError:
            return None
        self.state = "head"
        deadline = asyncio.get_running_loop().time() + limits.head_timeout
        try:
            while (end := self.buffer.find(b"\r\n\r\n")) < 0:
                if len(self.buffer) > limits.max_head_bytes:
                    raise _BadRequest(431, "request head too large")
                try:
                    async with asyncio.timeout_at(deadline):
                        data = await self._read()
                except TimeoutError:
                    # HS-114: a head that trickles in too slowly is answered 408.
                    raise _BadRequest(
                        408, "request head not received in time"
                    ) from None
                if not data:
                    return None
                self.buffer += data
            if end + 4 > limits.max_head_bytes:
                raise _BadRequest(431, "request head too large")
            head = bytes(self.buffer[:end])
            del self.buffer[: end + 4]
            return self._parse(head)
        except _BadRequest as bad:
            self.writer.write(_plain(bad.status, str(bad).encode()))
            self.linger = True
            return None

    def _parse(self, head: bytes) -> _Request:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or not parts[0] or not set(parts[0]) <= _TOKEN:
            raise _BadRequest(400, "malformed request line")
        method, target, version = (p.decode("latin-1") for p in parts)
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise _BadRequest(505, "only HTTP/1.1 and HTTP/1.0 are served")
        if not (target.startswith("/") or (method == "OPTIONS" and target == "*")):
            raise _BadRequest(400, "the request target must be a path")
        if len(lines) - 1 > self.limits.max_headers:
            raise _BadRequest(431, "too many request headers")
        headers: list[tuple[bytes, bytes]] = []
        lengths: set[bytes] = set()
        encodings: list[bytes] = []
        connection: set[bytes] = set()
        expect = False
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or not set(name) <= _TOKEN:
                raise _BadRequest(400, "malformed request header")
            name, value = name.lower(), value.strip(b" \t")
            if b"\r" in value or b"\n" in value or b"\0" in value:
                raise _BadRequest(400, "malformed request header")
            headers.append((name, value))
            if name == b"content-length":
                lengths.add(value)
            elif name == b"transfer-encoding":
                encodings += [v.strip().lower() for v in value.split(b",")]
            elif name == b"connection":
                connection |= {v.strip().lower() for v in value.split(b",")}
            elif name == b"expect":
                if value.lower() != b"100-continue":
                    raise _BadRequest(417, "only 'Expect: 100-continue' is understood")
                expect = True
        # HS-111: a body's length comes from one Content-Length or from chunked
        # coding, never both (a request that could be read two ways is refused).
        if encodings and lengths:
            raise _BadRequest(400, "both Content-Length and Transfer-Encoding")
        if encodings and encodings != [b"chunked"]:
            raise _BadRequest(501, "only the chunked transfer coding is understood")
        if len(lengths) > 1:
            raise _BadRequest(400, "conflicting Content-Length headers")
        length = 0
        if lengths:
            text = lengths.pop()
            if not text.isdigit() or len(text) > 18:
                raise _BadRequest(400, "malformed Content-Length")
            length = int(text)
        keep = version == "HTTP/1.1" and b"close" not in connection
        return _Request(
            method, target, version, headers, length, bool(encodings), keep, expect
        )


class _Exchange:
    """One request and its response on a connection."""

    def __init__(self, connection: _Connection, request: _Request) -> None:
        self.connection = connection
        self.request = request
        self.writer = connection.writer
        self.remaining = request.length
        self.body_done = not request.chunked and request.length == 0
        # the message with ``more_body: False`` has been handed to the application
        self.body_delivered = False
        self.body_broken = False
        self.continue_sent = False
        self.disconnected = asyncio.Event()
        self.watcher: asyncio.Task[None] | None = None
        # the application has returned: no more watching (the body may be skipped)
        self.ended = False
        self.started = False
        self.finished = False
        self.chunked = False
        self.head_only = request.method == "HEAD"
        self.declared: int | None = None
        self.written = 0
        self.close_after = not request.keep_alive
        # the transport's low-water mark: a write buffer at or under it is not paused
        self.low_water = connection.writer.transport.get_write_buffer_limits()[0]

    def scope(self) -> dict[str, Any]:
        request, server = self.request, self.connection.server
        path, _, query = request.target.partition("?")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": request.version.removeprefix("HTTP/"),
            "method": request.method,
            "scheme": "http",
            "path": unquote_to_bytes(path).decode("utf-8", "replace"),
            "raw_path": path.encode("latin-1"),
            "query_string": query.encode("latin-1"),
            "root_path": "",
            "headers": request.headers,
            "client": self.connection.client,
            "server": self.connection.local,
            "state": dict(server.state),
        }

    async def run(self) -> bool:
        """Run the application; True when the connection can carry another
        request."""
        connection = self.connection
        connection.state = "busy"
        if self.body_done:
            self._watch()
        try:
            await connection.server.app(self.scope(), self.receive, self.send)
        except ClientDisconnected:
            return False
        except Exception:
            _log.exception("hosting server: the application raised")
            if not self.started and not self.disconnected.is_set():
                await self._fallback(500, b"internal server error")
            return False
        finally:
            self.ended = True
            if self.watcher is not None:
                self.watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.watcher
        if not self.started and not self.disconnected.is_set():
            # HS-110: an application that returns without answering is a 500.
            await self._fallback(500, b"internal server error")
            return False
        if not self.finished or self.disconnected.is_set():
            return False
        return await self._drain_body(
            not (self.close_after or connection.server.closing)
        )

    async def _fallback(self, status: int, text: bytes) -> None:
        self.writer.write(_plain(status, text))
        self.connection.linger = True

    async def _drain_body(self, keep: bool) -> bool:
        # HS-111: a body the application did not read is skipped when it is small and
        # the connection is kept; otherwise the connection is closed, lingering so the
        # client still reads the answer. A client waiting for `100 Continue` after the
        # final answer is not sent one: it closes too.
        if self.body_done:
            return keep and not self.body_broken
        if (
            not keep
            or self.request.chunked
            or self.remaining > _READ
            or (self.request.expect_continue and not self.continue_sent)
        ):
            self.connection.linger = True
            return False
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                return False
            if not message.get("more_body", False):
                return not self.body_broken

    # ---- receiving -------------------------------------------------------------------

    def _watch(self) -> None:
        if self.watcher is None and not self.ended:
            self.watcher = asyncio.create_task(self._watch_socket())

    async def _watch_socket(self) -> None:
        # HS-112: after the body, end of file means the client went away; bytes that
        # arrive are kept for the next request (up to the head cap).
        connection = self.connection
        while len(connection.buffer) <= self.connection.limits.max_head_bytes:
            data = await connection._read()
            if not data:
                self.disconnected.set()
                return
            connection.buffer += data

    async def receive(self) -> Message:
        if self.disconnected.is_set():
            return {"type": "http.disconnect"}
        if self.body_done:
            self._watch()
            if not self.body_delivered:
                self.body_delivered = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await self.disconnected.wait()
            return {"type": "http.disconnect"}
        if self.request.expect_continue and not self.continue_sent:
            self.continue_sent = True
            self.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            async with asyncio.timeout(self.connection.limits.body_timeout):
                body, done = await self._body_chunk()
        except (TimeoutError, _BadRequest):
            # HS-111: a body that stalls or is malformed ends the exchange as a
            # disconnect; the connection is closed.
            self.body_broken = True
            self.body_done = True
            self.disconnected.set()
            self.writer.transport.abort()
            return {"type": "http.disconnect"}
        if done:
            self.body_done = self.body_delivered = True
            self._watch()
        return {"type": "http.request", "body": body, "more_body": not done}

    async def _fill(self, size: int) -> None:
        buffer = self.connection.buffer
        while len(buffer) < size:
            data = await self.connection._read()
            if not data:
                raise _BadRequest(400, "the body ended early")
            buffer += data

    async def _line(self) -> bytes:
        buffer = self.connection.buffer
        while (end := buffer.find(b"\r\n")) < 0:
            if len(buffer) > 4096:
                raise _BadRequest(400, "malformed chunk")
            await self._fill(len(buffer) + 1)
        line = bytes(buffer[:end])
        del buffer[: end + 2]
        return line

    async def _body_chunk(self) -> tuple[bytes, bool]:
        buffer = self.connection.buffer
        if not self.request.chunked:
            if not buffer:
                await self._fill(1)
            size = min(self.remaining, len(buffer), _READ)
            body = bytes(buffer[:size])
            del buffer[:size]
            self.remaining -= size
            return body, self.remaining == 0
        size_text = self._chunk_size(await self._line())
        if size_text == 0:
            # trailers are read and dropped
            while await self._line():
                pass
            return b"", True
        await self._fill(size_text + 2)
        body = bytes(buffer[:size_text])
        if buffer[size_text : size_text + 2] != b"\r\n":
            raise _BadRequest(400, "malformed chunk")
        del buffer[: size_text + 2]
        return body, False

    @staticmethod
    def _chunk_size(line: bytes) -> int:
        text = line.split(b";", 1)[0].strip()
        if not text or len(text) > 15:
            raise _BadRequest(400, "malformed chunk")
        try:
            return int(text, 16)
        except ValueError:
            raise _BadRequest(400, "malformed chunk") from None

    # ---- sending ---------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        if self.disconnected.is_set() or self.writer.transport.is_closing():
            self.disconnected.set()
            raise ClientDisconnected("the client has disconnected")
        kind = message.get("type")
        if kind == "http.response.start":
            if self.started:
                raise RuntimeError("http.response.start was sent twice")
            # HS-118: a start that cannot be sent leaves the answer unstarted (a 500)
            head = self._head(message)
            self.started = True
            self.writer.write(head)
        elif kind == "http.response.body":
            if not self.started or self.finished:
                raise RuntimeError(
                    "http.response.body before http.response.start or after the end"
                )
            self._body(bytes(message.get("body", b"")), message.get("more_body", False))
        else:
            raise ValueError(f"unexpected ASGI message type {kind!r}")
        # HS-112: waiting for the client to take the data is bounded by send_timeout.
        # A transport pauses its writer when its buffer grows over the high-water mark
        # and resumes it as soon as the buffer is back at or under the low-water mark,
        # so a buffer at or under that mark means not paused: `drain()` would return at
        # once, and the timeout (a timer scheduled and cancelled, most of a send's cost
        # for a small streamed chunk) is skipped. A closing transport (a write that
        # failed, a client gone) goes the slow way, so the send raises.
        transport = self.writer.transport
        if (
            transport.get_write_buffer_size() <= self.low_water
            and not transport.is_closing()
        ):
            return
        try:
            async with asyncio.timeout(self.connection.limits.send_timeout):
                await self.writer.drain()
        except (ConnectionError, TimeoutError):
            # HS-112: a client that is gone, or reads nothing for send_timeout
            self.disconnected.set()
            self.writer.transport.abort()
            raise ClientDisconnected("the client has disconnected") from None

    def _head(self, message: Message) -> bytes:
        status = int(message["status"])
        try:
            phrase = http.HTTPStatus(status).phrase
        except ValueError:
            phrase = "Unknown"
        out = [f"HTTP/1.1 {status} {phrase}".encode()]
        for key, value in message.get("headers", []):
            name, text = bytes(key).lower(), bytes(value)
            if any(c in name + text for c in (b"\r", b"\n", b"\0")):
                raise ValueError("a response header holds CR, LF or NUL")
            if name == b"connection":
                if b"close" in text.lower():
                    self.close_after = True
                continue
            if name == b"transfer-encoding":
                continue
            if name == b"content-length":
                self.declared = int(text)
            out.append(name + b": " + text)
        bodiless = status < 200 or status in (204, 304) or self.head_only
        if self.declared is None and not bodiless:
            if self.request.version == "HTTP/1.1":
                self.chunked = True
                out.append(b"transfer-encoding: chunked")
            else:
                self.close_after = True
        if self.connection.server.closing:
            self.close_after = True
        out.append(
            b"connection: close" if self.close_after else b"connection: keep-alive"
        )
        return b"\r\n".join(out) + b"\r\n\r\n"

    def _body(self, body: bytes, more: bool) -> None:
        if not more:
            self.finished = True
        if self.head_only:
            return
        self.written += len(body)
        if self.declared is not None and self.written > self.declared:
            raise RuntimeError("the response body is longer than its content-length")
        if self.chunked:
            # one write per message: the chunk's size line, its data and its end (and
            # the last chunk when this is the end), joined into one buffer
            if body:
                if more:
                    self.writer.write(b"".join((b"%x\r\n" % len(body), body, b"\r\n")))
                else:
                    self.writer.write(
                        b"".join((b"%x\r\n" % len(body), body, b"\r\n0\r\n\r\n"))
                    )
            elif not more:
                self.writer.write(b"0\r\n\r\n")
        elif body:
            self.writer.write(body)
        if not more and self.declared is not None and self.written != self.declared:
            self.close_after = True


class LifespanFailed(RuntimeError):
    """The application answered ``lifespan.startup.failed`` (HS-116)."""


class _Lifespan:
    def __init__(self, app: App, state: dict[str, Any]) -> None:
        self.app = app
        self.state = state
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.supported = True
        self.answers: asyncio.Queue[Message] = asyncio.Queue()

    async def _send(self, message: Message) -> None:
        await self.answers.put(message)

    async def _answer(self) -> Message | None:
        assert self.task is not None
        answer = asyncio.ensure_future(self.answers.get())
        await asyncio.wait({answer, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if answer.done():
            return answer.result()
        answer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await answer
        return None

    async def startup(self) -> None:
        scope = {
            "type": "lifespan",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "state": self.state,
        }
        self.task = asyncio.ensure_future(self.app(scope, self.inbox.get, self._send))
        await self.inbox.put({"type": "lifespan.startup"})
        answer = await self._answer()
        kind = answer.get("type") if answer is not None else None
        if kind not in ("lifespan.startup.complete", "lifespan.startup.failed"):
            # HS-116: an application without lifespan support raises, returns or
            # answers something else; it is served without lifespan events.
            self.supported = False
            await self._stop()
            return
        if answer is not None and kind == "lifespan.startup.failed":
            await self._stop()
            raise LifespanFailed(str(answer.get("message", "")))

    async def shutdown(self) -> None:
        if not self.supported or self.task is None:
            return
        await self.inbox.put({"type": "lifespan.shutdown"})
        answer = await self._answer()
        await self._stop()
        if answer is not None and answer.get("type") == "lifespan.shutdown.failed":
            _log.error("hosting server: lifespan shutdown failed")

    async def _stop(self) -> None:
        assert self.task is not None
        if not self.task.done():
            self.task.cancel()
        # The task's own end (an error, our cancel) is not the caller's: wait without
        # raising it, and take its exception so that asyncio does not log it.
        await asyncio.wait({self.task})
        if not self.task.cancelled():
            self.task.exception()


async def serve(
    app: App,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: ServerLimits | None = None,
) -> Server:
    """Start serving ``app``; the caller ends it with ``close()`` and
    ``await wait_closed()``, or ``await shutdown(grace)`` (HS-7)."""
    server = Server(app, limits)
    await server.start(host, port)
    return server


async def serve_until_signalled(
    app: App,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ServerLimits | None = None,
    *,
    ready: Callable[[Server], None] | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully (HS-115); a second
    signal cancels the requests still running."""
    server = await serve(app, host, port, limits)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            stop.set()
        else:
            for connection in list(server._connections):
                connection.cancel()

    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, on_signal)
    try:
        if ready is not None:
            ready(server)
        await stop.wait()
        await server.shutdown()
    finally:
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(number)
        await server.shutdown(0)


def run(
    app: App,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ServerLimits | None = None,
    *,
    ready: Callable[[Server], None] | None = None,
) -> None:
    """`serve_until_signalled` in a new event loop."""
    asyncio.run(serve_until_signalled(app, host, port, limits, ready=ready))
