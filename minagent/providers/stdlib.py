"""`StdlibTransport`: HTTP/1.1 over asyncio streams and ``ssl`` (spec/providers.md PV-41
.. PV-44).

Rules
-----
1. It only moves bytes, as every `Transport` (PV-39): it never retries, decodes or times
   anything on its own account; the request's `Timeouts` bound connecting (the wait for
   a pooled connection, TCP, the proxy's ``CONNECT`` and TLS), each wait for data (the
   answer's head included) and the whole exchange.
2. Every exception of the operating system, ``ssl``, ``zlib`` or asyncio becomes a
   `TransportError` through one function, ``transport_error`` (what failed while
   connecting is ``connect``; an answer that is not HTTP/1.x is ``protocol``; a
   connection that broke is ``network``), raised outside the ``except`` block, so
   nothing is chained to it. Cancellation passes through, and closes the connection.
3. A connection goes back to its pool only after an answer whose body was read to its
   framed end (``Content-Length`` or chunked) and that allows keep-alive; every other
   end closes it. A pool belongs to one event loop (`LoopBound`, PV-37).
4. With ``trust_env`` the environment's ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY``
   / ``NO_PROXY`` apply (as urllib reads them): plain HTTP goes to the proxy in absolute
   form, HTTPS through a ``CONNECT`` tunnel; a proxy's ``user:password@`` is sent as
   ``Proxy-Authorization`` and appears in no error.

Theory of operation
-------------------
``send`` takes a connection for the request's origin (and proxy) from the pool or opens
one, writes the request (``Content-Length`` framed), and reads the answer's head,
skipping ``1xx`` heads. The `_Response` then reads the body as it arrives:
``Content-Length`` bytes, the chunks of a chunked body (their sizes, extensions and
trailers consumed here), or everything until the server closes; a ``gzip`` or
``deflate`` body is inflated chunk by chunk. Each read waits at most the read bound and
never past the exchange's deadline.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import zlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

from .transport import FailureKind, LoopBound, Request, TransportError

if TYPE_CHECKING:
    import ssl

__all__ = ["MAX_HEAD_LINE", "StdlibTransport", "transport_error"]

T = TypeVar("T")

MAX_HEAD_LINE = 8190  # bytes of the status line or of one header line (aiohttp's bound)
MAX_HEAD_LINES = 128
KEEPALIVE = 15.0  # seconds an idle connection is kept (aiohttp's default)
READ_SIZE = 65536
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_STATUS = re.compile(rb"HTTP/1\.([01]) (\d{3})(?: ([^\r\n]*))?\r?\n")


class HTTPProtocolError(Exception):
    """The answer is not valid HTTP/1.x (``protocol``)."""


class BrokenConnection(Exception):
    """The connection ended before the answer did (``network``)."""


class _Deadline(Exception):
    """A wait ran out: ``kind`` says which bound."""

    def __init__(self, kind: FailureKind) -> None:
        super().__init__(kind)
        self.kind: FailureKind = kind


def transport_error(exc: BaseException, *, connecting: bool = False) -> TransportError:
    """The `TransportError` of an exception raised while connecting or exchanging (rule
    2)."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, _Deadline):
        return TransportError(exc.kind, exc.kind)
    text = str(exc)
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, HTTPProtocolError | asyncio.LimitOverrunError | zlib.error):
        return TransportError("protocol", detail)
    # refused, reset, TLS, DNS, EOF
    if isinstance(exc, OSError | EOFError | BrokenConnection):
        return TransportError("connect" if connecting else "network", detail)
    return TransportError("other", detail)


class _Connection:
    __slots__ = ("idle_since", "key", "reader", "writer")

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        key: tuple[Any, ...],
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.key = key
        self.idle_since = 0.0

    def close(self) -> None:
        self.writer.close()


class _Pool:
    """Idle keep-alive connections by origin, and the bound on connections in use."""

    def __init__(self, limit: int) -> None:
        self.idle: dict[tuple[Any, ...], list[_Connection]] = {}
        self.slots = asyncio.Semaphore(limit)
        self.in_use: set[_Connection] = set()
        self.closed = False

    def take(self, key: tuple[Any, ...], now: float) -> _Connection | None:
        idle = self.idle.get(key)
        while idle:
            connection = idle.pop()
            if (
                now - connection.idle_since < KEEPALIVE
                and not connection.reader.at_eof()
            ):
                return connection
            connection.close()
        return None

    def give_back(self, connection: _Connection, now: float) -> None:
        self.in_use.discard(connection)
        self.slots.release()
        if self.closed:
            connection.close()
            return
        connection.idle_since = now
        self.idle.setdefault(connection.key, []).append(connection)

    def discard(self, connection: _Connection) -> None:
        if connection in self.in_use:
            self.in_use.discard(connection)
            self.slots.release()
        connection.close()

    async def close(self) -> None:
        self.closed = True
        every = [c for idle in self.idle.values() for c in idle] + list(self.in_use)
        self.idle.clear()
        for connection in every:
            connection.close()
        for connection in every:
            with contextlib.suppress(OSError):  # closing is all that is asked
                await connection.writer.wait_closed()


class StdlibTransport:
    """A `Transport` over asyncio streams and ``ssl``, standard library only (PV-41).

    ``trust_env`` applies the environment's proxy settings (rule 4); ``ssl_context``
    replaces ``ssl.create_default_context()`` for HTTPS; ``limit`` bounds the
    connections in use at once (a request waits for one within its connect bound). One
    pool per event loop (PV-37).
    """

    def __init__(
        self,
        *,
        trust_env: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        limit: int = 100,
    ) -> None:
        self.trust_env = trust_env
        self._ssl = ssl_context
        self._pools: LoopBound[_Pool] = LoopBound(lambda: _Pool(limit))
        self._proxies: dict[str, str] | None = None

    @property
    def in_use(self) -> int:
        """Connections handed out with a response and not yet released or closed
        (PV-30)."""
        pool = self._pools.value
        return len(pool.in_use) if pool is not None else 0

    async def aclose(self) -> None:
        """Close every connection this transport opened (idempotent)."""
        await self._pools.aclose()

    async def send(self, request: Request) -> _Response:
        pool = await self._pools.get()
        loop = asyncio.get_running_loop()
        times = request.timeouts
        deadline = None if times.total is None else loop.time() + times.total
        connection: _Connection | None = None
        try:
            url = urlsplit(request.url)
            connection = await _bounded(
                self._connect(pool, url), times.connect, deadline, "connect_timeout"
            )
            connection.writer.write(
                self._head(request, url, connection.key[3]) + request.body
            )
            await _bounded(
                connection.writer.drain(), times.read, deadline, "read_timeout"
            )
            head = await _bounded(
                _read_head(connection.reader), times.read, deadline, "read_timeout"
            )
            response = _Response(
                pool, connection, request.method, *head, times.read, deadline
            )
        except BaseException as exc:
            if connection is not None:
                pool.discard(connection)
            if not isinstance(exc, Exception):
                raise  # cancellation passes through
            failure = transport_error(exc, connecting=connection is None)
        else:
            return response
        raise failure

    # -- connecting ---------------------------------------------------------------------------------

    async def _connect(self, pool: _Pool, url: Any) -> _Connection:
        scheme, host, port = (
            url.scheme,
            url.hostname or "",
            url.port or (443 if url.scheme == "https" else 80),
        )
        proxy = self._proxy_for(scheme, host)
        key = (scheme, host, port, proxy)
        await pool.slots.acquire()
        try:
            loop = asyncio.get_running_loop()
            connection = pool.take(key, loop.time())
            if connection is None:
                connection = await self._open(key)
        except BaseException:
            pool.slots.release()
            raise
        pool.in_use.add(connection)
        return connection

    async def _open(self, key: tuple[Any, ...]) -> _Connection:
        scheme, host, port, proxy = key
        tls = self._context() if scheme == "https" else None
        if proxy is None:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=tls, limit=READ_SIZE * 4
            )
            return _Connection(reader, writer, key)
        parts = urlsplit(proxy)
        if parts.scheme != "http":
            raise OSError(
                f"unsupported proxy {_shown(proxy)}: only http:// proxies are supported"
            )
        reader, writer = await asyncio.open_connection(
            parts.hostname, parts.port or 80, limit=READ_SIZE * 4
        )
        connection = _Connection(reader, writer, key)
        if tls is None:
            # plain HTTP: the request goes to the proxy in absolute form
            return connection
        try:
            target = f"{_host(host)}:{port}"
            writer.write(
                f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{_proxy_auth(proxy)}\r\n".encode(
                    "latin-1"
                )
            )
            _, status, reason, _ = await _read_head(reader)
            if status != 200:
                raise OSError(
                    f"the proxy {_shown(proxy)} answered CONNECT with {status} {reason}".rstrip()
                )
            # PV-44: the stream reader keeps what it has read past the CONNECT answer's
            # head, and TLS would hand those bytes on as if they had come through the
            # tunnel: a proxy could forge the model's answer. Nothing read before the
            # handshake may be part of an answer.
            if _buffered(reader):
                raise OSError(
                    f"the proxy {_shown(proxy)} sent data after its CONNECT answer, "
                    "before TLS; refusing the tunnel"
                )
            await writer.start_tls(tls, server_hostname=host)
        except BaseException:
            writer.close()
            raise
        return connection

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            import ssl

            self._ssl = ssl.create_default_context()
        return self._ssl

    def _proxy_for(self, scheme: str, host: str) -> str | None:
        if not self.trust_env:
            return None
        import urllib.request

        if self._proxies is None:
            self._proxies = urllib.request.getproxies_environment()
        proxy = self._proxies.get(scheme) or self._proxies.get("all")
        bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # typeshed lacks it
        if not proxy or bypass(host, self._proxies):
            return None
        return proxy if "://" in proxy else f"http://{proxy}"

    def _head(self, request: Request, url: Any, proxy: str | None) -> bytes:
        target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        default = 443 if url.scheme == "https" else 80
        host = _host(url.hostname or "") + (
            f":{url.port}" if url.port and url.port != default else ""
        )
        if proxy is not None and url.scheme == "http":
            target = f"http://{host}{target}"
        lines = [f"{request.method} {target} HTTP/1.1", f"Host: {host}"]
        given = {name.lower() for name in request.headers}
        for name, value in request.headers.items():
            if (
                not _TOKEN.fullmatch(name.encode("latin-1", "replace"))
                or "\r" in value
                or "\n" in value
            ):
                raise HTTPProtocolError(
                    f"header {name!r} cannot be sent: a bad name or a line break"
                )
            lines.append(f"{name}: {value}")
        if "accept-encoding" not in given:
            lines.append("Accept-Encoding: gzip, deflate")
        if request.body or request.method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(request.body)}")
        if proxy is not None and url.scheme == "http" and _proxy_auth(proxy):
            lines.append(_proxy_auth(proxy).rstrip())
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


class _Response:
    """An answer whose body is still to be read (a `minagent.providers.Response`)."""

    __slots__ = (
        "_chunks",
        "_connection",
        "_deadline",
        "_done",
        "_inflate",
        "_keep",
        "_left",
        "_mode",
        "_pool",
        "_read",
        "headers",
        "status",
    )

    def __init__(
        self,
        pool: _Pool,
        connection: _Connection,
        method: str,
        version: int,
        status: int,
        reason: str,
        headers: dict[str, str],
        read: float | None,
        deadline: float | None,
    ) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self.status, self.headers = status, headers
        self._read, self._deadline = read, deadline
        connection_header = headers.get("connection", "").lower()
        self._keep = "close" not in connection_header and (
            version == 1 or "keep-alive" in connection_header
        )
        self._left = 0  # bytes of a Content-Length body still to come
        self._chunks: _Dechunker | None = None
        self._done = False
        coding = headers.get("transfer-encoding", "").lower()
        if method == "HEAD" or status in (204, 304):
            self._mode, self._done = "none", True
        elif coding:
            if coding.rsplit(",", 1)[-1].strip() != "chunked":
                raise HTTPProtocolError(f"unsupported Transfer-Encoding {coding!r}")
            self._mode, self._chunks = "chunked", _Dechunker()
        elif "content-length" in headers:
            lengths = {value.strip() for value in headers["content-length"].split(",")}
            if len(lengths) != 1 or not next(iter(lengths)).isdigit():
                raise HTTPProtocolError(
                    f"invalid Content-Length {headers['content-length']!r}"
                )
            self._mode, self._left = "length", int(lengths.pop())
            self._done = self._left == 0
        else:
            self._mode, self._keep = "close", False
        encoding = headers.get("content-encoding", "").strip().lower()
        wbits = {
            "gzip": 16 + zlib.MAX_WBITS,
            "x-gzip": 16 + zlib.MAX_WBITS,
            "deflate": zlib.MAX_WBITS,
        }.get(encoding)
        self._inflate = zlib.decompressobj(wbits) if wbits is not None else None

    async def read_chunk(self) -> bytes:
        """The next bytes of the body as they arrive (inflated); ``b""`` at its end."""
        try:
            done = self._done
            while not done:
                raw, done = await _bounded(
                    self._next_raw(), self._read, self._deadline, "read_timeout"
                )
                if self._inflate is None:
                    if raw:
                        return raw
                    continue
                data = self._inflate.decompress(raw) if raw else b""
                if done:
                    data += self._inflate.flush()
                if data:
                    return data
            return b""
        except Exception as exc:
            failure = transport_error(exc)
        raise failure

    async def _next_raw(self) -> tuple[bytes, bool]:
        """The next raw bytes of the body, and whether the body ended with them."""
        assert self._connection is not None, "the response was released or closed"
        data = await self._raw(self._connection.reader)
        return data, self._done

    async def _raw(self, reader: asyncio.StreamReader) -> bytes:
        if self._mode == "length":
            data = await reader.read(min(self._left, READ_SIZE))
            if not data:
                raise BrokenConnection(
                    f"the connection closed with {self._left} bytes of the body still to come"
                )
            self._left -= len(data)
            self._done = self._left == 0
            return data
        if self._mode == "close":
            data = await reader.read(READ_SIZE)
            self._done = not data
            return data
        assert self._chunks is not None
        data = await reader.read(READ_SIZE)
        if not data:
            raise BrokenConnection("the connection closed inside the chunked body")
        payload = self._chunks.feed(data)
        if self._chunks.done:
            self._done = True
            # bytes after the body: not HTTP we sent for
            self._keep = self._keep and not self._chunks.extra
        return payload

    def release(self) -> None:
        """A clean end: a body read to its end on a keep-alive connection goes back to
        the pool."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        # PV-30: bytes after the framed body are not an answer to anything we sent;
        # pooled, they would become the next request's answer
        if (
            self._done
            and self._keep
            and not self._pool.closed
            and not _buffered(connection.reader)
        ):
            self._pool.give_back(connection, asyncio.get_running_loop().time())
        else:
            self._pool.discard(connection)

    def close(self) -> None:
        """Any other end: the connection is closed (PV-30)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.discard(connection)


class _Dechunker:
    """A chunked body's framing, sans-I/O: bytes as they arrive in, the payload out
    (PV-42).

    Whole reads are parsed at once, however many chunks they hold (one wait per read,
    not per chunk); chunk extensions and trailers are consumed; ``extra`` says that
    bytes followed the last chunk."""

    __slots__ = ("buffer", "done", "extra", "left", "state")

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.state = "size"  # size -> data -> crlf -> size ... -> trailers -> done
        self.left = 0
        self.done = False
        self.extra = False

    def feed(self, data: bytes) -> bytes:
        buffer = self.buffer
        buffer += data
        out = bytearray()
        at = 0
        while not self.done:
            if self.state == "data":
                take = min(self.left, len(buffer) - at)
                out += buffer[at : at + take]
                at += take
                self.left -= take
                if self.left:
                    break
                self.state = "crlf"
            elif self.state == "crlf":
                if len(buffer) - at < 2:
                    break
                if buffer[at : at + 2] != b"\r\n":
                    raise HTTPProtocolError("a chunk is longer than its size")
                at += 2
                self.state = "size"
            else:
                end = buffer.find(b"\n", at)
                if end < 0 or end - at > MAX_HEAD_LINE + 1:
                    if len(buffer) - at > MAX_HEAD_LINE + 1:
                        raise HTTPProtocolError(
                            f"the answer's chunk {self.state} line is longer than {MAX_HEAD_LINE} bytes"
                        )
                    break
                line = bytes(buffer[at : end + 1])
                at = end + 1
                if self.state == "trailers":
                    self.done = not line.strip()
                    continue
                digits = line.split(b";", 1)[0].strip()
                if not digits or not all(
                    c in b"0123456789abcdefABCDEF" for c in digits
                ):
                    raise HTTPProtocolError(f"invalid chunk size line {line[:40]!r}")
                self.left = int(digits, 16)
                self.state = "data" if self.left else "trailers"
        del buffer[:at]
        self.extra = self.done and bool(buffer)
        return bytes(out)


async def _bounded(
    aw: Awaitable[T], read: float | None, deadline: float | None, kind: FailureKind
) -> T:
    """Await ``aw`` for at most ``read`` seconds and never past ``deadline`` (rule
    1)."""
    if read is None and deadline is None:
        return await aw
    loop = asyncio.get_running_loop()
    until = loop.time() + read if read is not None else None
    total = deadline is not None and (until is None or deadline <= until)
    try:
        async with asyncio.timeout_at(deadline if total else until):
            return await aw
    except TimeoutError:
        raise _Deadline("total_timeout" if total else kind) from None


async def _line(reader: asyncio.StreamReader, what: str) -> bytes:
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        raise BrokenConnection(
            f"the connection closed inside the answer's {what}"
        ) from exc
    except asyncio.LimitOverrunError as exc:
        raise HTTPProtocolError(
            f"the answer's {what} line is longer than {MAX_HEAD_LINE} bytes"
        ) from exc
    if len(line) > MAX_HEAD_LINE + 2:
        raise HTTPProtocolError(
            f"the answer's {what} line is longer than {MAX_HEAD_LINE} bytes"
        )
    return line


async def _read_head(
    reader: asyncio.StreamReader,
) -> tuple[int, int, str, dict[str, str]]:
    """The status line and headers of the next final answer (``1xx`` heads are
    skipped)."""
    while True:
        line = await _line(reader, "status")
        match = _STATUS.fullmatch(line)
        if match is None:
            raise HTTPProtocolError(f"invalid status line {line[:40]!r}")
        headers: dict[str, str] = {}
        for _ in range(MAX_HEAD_LINES):
            field = await _line(reader, "header")
            if field in (b"\r\n", b"\n"):
                break
            name, colon, value = field.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):
                raise HTTPProtocolError(f"invalid header line {field[:40]!r}")
            key = name.decode("ascii").lower()
            text = value.strip().decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        else:
            raise HTTPProtocolError(
                f"the answer has more than {MAX_HEAD_LINES} header lines"
            )
        status = int(match.group(2))
        if not 100 <= status < 200 or status == 101:
            return (
                int(match.group(1)),
                status,
                (match.group(3) or b"").decode("latin-1"),
                headers,
            )


def _buffered(reader: asyncio.StreamReader) -> bool:
    """Whether ``reader`` holds bytes nobody has read yet.

    asyncio has no public way to ask a StreamReader for what it has buffered; its
    ``_buffer`` has been that bytearray since asyncio began. A reader without one is
    taken to hold bytes, so a connection is closed rather than trusted."""
    return bool(getattr(reader, "_buffer", True))


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _shown(proxy: str) -> str:
    """A proxy URL as errors show it: without its credentials (rule 4)."""
    parts = urlsplit(proxy)
    return f"{parts.scheme}://{_host(parts.hostname or '')}" + (
        f":{parts.port}" if parts.port else ""
    )


def _proxy_auth(proxy: str) -> str:
    parts = urlsplit(proxy)
    if parts.username is None:
        return ""
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    return f"Proxy-Authorization: Basic {base64.b64encode(pair).decode('ascii')}\r\n"
