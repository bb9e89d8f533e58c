"""The standard library's HTTP/1.1 transport on the wire (spec/providers.md PV-41 ..
PV-44).

What the shared rules ask of every transport is tested once for both network transports
in ``test_transport`` (the toy provider against one loopback server). Here: what is the
standard library transport's own — keep-alive, body framing, inflating, proxies, TLS
through a tunnel, and which transport a plugin gets by default.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import shutil
import ssl
import subprocess
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent.providers import (
    Request,
    StdlibTransport,
    Timeouts,
    TransportError,
    transport_for,
)
from minagent.providers import default as transport_module
from minagent.providers.stdlib import transport_error

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """A raw loopback HTTP server: counts connections, records request heads and
    bodies."""

    def __init__(
        self,
        answers: list[bytes | list[bytes | float]],
        *,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.answers = answers
        self.tasks: set[asyncio.Task[None]] = set()
        self.tls = tls
        self.connections = 0
        self.heads: list[str] = []
        self.bodies: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", 0, ssl=self.tls
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        if self.tasks:
            _, pending = await asyncio.wait(self.tasks, timeout=1)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            while self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head.decode("latin-1"))
                length = next(
                    (
                        int(line.split(":", 1)[1])
                        for line in self.heads[-1].split("\r\n")
                        if line.lower().startswith("content-length:")
                    ),
                    0,
                )
                self.bodies.append(await reader.readexactly(length))
                answer = self.answers.pop(0)
                for part in answer if isinstance(answer, list) else [answer]:
                    if isinstance(part, float):
                        await asyncio.sleep(part)
                        continue
                    writer.write(part)
                    await writer.drain()
                    await asyncio.sleep(0.02)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _answer(body: bytes, *headers: str) -> bytes:
    lines = ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _chunked(*chunks: bytes) -> list[bytes | float]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    return [
        head,
        *(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks),
        b"0\r\nX-Trailer: t\r\n\r\n",
    ]


async def _body(
    transport: StdlibTransport, url: str, **kw: object
) -> tuple[int, dict[str, str], list[bytes]]:
    response = await transport.send(
        Request("POST", url, {"Content-Type": "application/json"}, b"{}", **kw)
    )  # type: ignore[arg-type]
    parts = []
    try:
        while chunk := await response.read_chunk():
            parts.append(chunk)
    except BaseException:
        # as HTTPChatClient does on every exit that is not clean (PV-30)
        response.close()
        raise
    response.release()
    return response.status, dict(response.headers), parts


async def test_keep_alive_reuses_one_connection_and_frames_bodies() -> None:
    """PV-42: answers framed by Content-Length and chunked (extensions and trailers
    consumed) are read to their end and their connection serves the next request; the
    request carries Host, Content-Length and the body; a body read to its end leaves no
    connection in use."""
    answers: list[bytes | list[bytes | float]] = [
        _answer(b'{"a": 1}'),
        _chunked(b"data: one\n\n", b"data: two\n\n"),
    ]
    answers.append(_answer(b"last"))
    async with Server(answers) as server:
        transport = StdlibTransport(trust_env=False)
        url = f"http://127.0.0.1:{server.port}/v1/chat?x=1"
        assert await _body(transport, url) == (
            200,
            {"content-length": "8"},
            [b'{"a": 1}'],
        )
        status, headers, parts = await _body(transport, url)
        assert (status, headers["transfer-encoding"]) == (200, "chunked")
        assert b"".join(parts) == b"data: one\n\ndata: two\n\n"
        assert len(parts) == 2  # each chunk as it arrived
        assert (await _body(transport, url))[2] == [b"last"]
        assert transport.in_use == 0
        await transport.aclose()
    assert server.connections == 1
    first = server.heads[0].split("\r\n")
    assert first[0] == "POST /v1/chat?x=1 HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}" in first
    assert "Content-Length: 2" in first
    assert server.bodies == [b"{}"] * 3


async def test_connection_close_and_unread_bodies_are_not_reused() -> None:
    """PV-42: an answer with ``Connection: close``, one framed by the end of the
    connection and one released before its end each close their connection; the next
    request opens another."""
    answers: list[bytes | list[bytes | float]] = [_answer(b"a", "Connection: close")]
    async with (
        Server(answers) as one,
        Server([b"HTTP/1.1 200 OK\r\n\r\nuntil the end"]) as two,
    ):
        transport = StdlibTransport(trust_env=False)
        assert (await _body(transport, f"http://127.0.0.1:{one.port}/"))[2] == [b"a"]
        assert (await _body(transport, f"http://127.0.0.1:{two.port}/"))[2] == [
            b"until the end"
        ]
        assert transport.in_use == 0
        pool = transport._pools.value
        assert pool is not None
        assert all(not idle for idle in pool.idle.values())
        await transport.aclose()


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_compressed_bodies_are_inflated(encoding: str) -> None:
    """PV-42: a gzip or deflate body is inflated as it arrives; the request asks for
    them."""
    data = b'{"text": "' + b"x" * 5000 + b'"}'
    packed = gzip.compress(data) if encoding == "gzip" else zlib.compress(data)
    async with Server([_answer(packed, f"Content-Encoding: {encoding}")]) as server:
        transport = StdlibTransport(trust_env=False)
        assert (
            b"".join((await _body(transport, f"http://127.0.0.1:{server.port}/"))[2])
            == data
        )
        await transport.aclose()
    assert "Accept-Encoding: gzip, deflate" in server.heads[0]


async def test_timeouts_say_which_bound() -> None:
    """PV-42: silence before the head is a read_timeout; a body that keeps arriving past
    the whole exchange's bound is a total_timeout; nothing listening is ``connect``."""
    slow: list[bytes | list[bytes | float]] = [
        [b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", *([b"x"] * 50)]
    ]
    async with Server([[5.0]]) as silent, Server(slow) as trickle:
        transport = StdlibTransport(trust_env=False)
        with pytest.raises(TransportError) as info:
            await _body(
                transport,
                f"http://127.0.0.1:{silent.port}/",
                timeouts=Timeouts(read=0.1),
            )
        assert info.value.kind == "read_timeout"
        with pytest.raises(TransportError) as info:
            await _body(
                transport,
                f"http://127.0.0.1:{trickle.port}/",
                timeouts=Timeouts(read=1, total=0.3),
            )
        assert info.value.kind == "total_timeout"
        assert transport.in_use == 0
        await transport.aclose()
    with pytest.raises(TransportError) as info:
        await _body(
            StdlibTransport(trust_env=False), f"http://127.0.0.1:{silent.port}/"
        )
    assert info.value.kind == "connect"
    assert info.value.detail.startswith("ConnectionRefusedError")


@given(cuts=st.lists(st.integers(min_value=1, max_value=40), max_size=8))
@settings(max_examples=25)
def test_a_chunked_body_cut_anywhere_reads_the_same(cuts: list[int]) -> None:
    """PV-42: however the bytes of a chunked answer are split across TCP writes, the
    body read is the same bytes."""
    whole = b"".join(_chunked(b"data: one\n\n", b"", b"data: two\n\n")[1:])
    whole = whole.replace(b"0\r\n\r\n", b"")  # the empty chunk would end the body early
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    stream = (
        head
        + b"".join(
            b"%x\r\n%s\r\n" % (len(c), c) for c in (b"data: one\n\n", b"data: two\n\n")
        )
        + b"0\r\n\r\n"
    )
    parts: list[bytes | float] = []
    at = 0
    for cut in cuts:
        parts.append(stream[at : at + cut])
        at += cut
    parts.append(stream[at:])

    async def go() -> bytes:
        async with Server([[p for p in parts if p]]) as server:
            transport = StdlibTransport(trust_env=False)
            body = b"".join(
                (await _body(transport, f"http://127.0.0.1:{server.port}/"))[2]
            )
            await transport.aclose()
            return body

    assert whole
    assert asyncio.run(go()) == b"data: one\n\ndata: two\n\n"


@contextlib.asynccontextmanager
async def proxy(record: list[str]) -> AsyncIterator[int]:
    """A forwarding proxy on the loopback: absolute-form requests and CONNECT
    tunnels."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        record.append(head)
        method, target, _ = head.split(" ", 2)
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            return
        rest = target.split("://", 1)[1]
        hostport, _, path = rest.partition("/")
        host, port = hostport.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        up_writer.write(head.replace(target, "/" + path, 1).encode("latin-1"))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def test_proxies_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """PV-44: with trust_env, HTTP_PROXY carries plain HTTP in absolute form with its
    credentials as Proxy-Authorization; NO_PROXY and trust_env=False go direct."""
    seen: list[str] = []
    async with (
        proxy(seen) as port,
        Server([_answer(b"via proxy"), _answer(b"direct")]) as server,
    ):
        monkeypatch.setenv("HTTP_PROXY", f"http://user:pa%40ss@127.0.0.1:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        transport = StdlibTransport()
        url = f"http://127.0.0.1:{server.port}/v1/x"
        assert (await _body(transport, url))[2] == [b"via proxy"]
        await transport.aclose()
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        direct = StdlibTransport()
        assert (await _body(direct, url))[2] == [b"direct"]
        await direct.aclose()
    assert len(seen) == 1
    assert seen[0].startswith(f"POST http://127.0.0.1:{server.port}/v1/x HTTP/1.1")
    assert (
        f"Proxy-Authorization: Basic {base64.b64encode(b'user:pa@ss').decode()}"
        in seen[0]
    )
    assert StdlibTransport(trust_env=False)._proxy_for("http", "example.com") is None


def _certificate(folder: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make a test certificate")
    key, cert = folder / "key.pem", folder / "cert.pem"
    request = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(cert),
    ]
    subject = [
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ]
    subprocess.run(
        [*request, *subject],
        check=True,
        capture_output=True,
    )
    return key, cert


async def test_https_directly_and_through_a_connect_tunnel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PV-44, PV-42: HTTPS is verified TLS (a certificate the context does not trust is
    a ``connect`` failure); through HTTPS_PROXY the transport opens a CONNECT tunnel,
    then TLS inside it, and keeps the tunnel for the next request."""
    key, cert = _certificate(tmp_path)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    seen: list[str] = []
    answers: list[bytes | list[bytes | float]] = [
        _answer(b"direct"),
        _answer(b"tunnel 1"),
        _answer(b"tunnel 2"),
    ]
    async with Server(answers, tls=server_side) as server, proxy(seen) as port:
        url = f"https://localhost:{server.port}/v1"
        untrusting = StdlibTransport(trust_env=False)
        with pytest.raises(TransportError) as info:
            await _body(untrusting, url)
        assert info.value.kind == "connect"
        assert "CERTIFICATE_VERIFY_FAILED" in info.value.detail
        direct = StdlibTransport(trust_env=False, ssl_context=trusting)
        assert (await _body(direct, url))[2] == [b"direct"]
        await direct.aclose()
        monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        tunnelled = StdlibTransport(ssl_context=trusting)
        assert (await _body(tunnelled, url))[2] == [b"tunnel 1"]
        assert (await _body(tunnelled, url))[2] == [b"tunnel 2"]
        await tunnelled.aclose()
    assert [h.split("\r\n")[0] for h in seen] == [
        f"CONNECT localhost:{server.port} HTTP/1.1"
    ]


async def test_bytes_after_a_content_length_body_close_the_connection() -> None:
    """PV-30: an answer with more bytes than its ``Content-Length`` (here a whole
    second answer) is not a clean end: its connection is closed, never pooled, so one
    request sent never yields two answers; the next request opens a new connection
    and gets the server's own answer."""
    smuggled = _answer(b"smuggled")
    answers: list[bytes | list[bytes | float]] = [
        _answer(b"first") + smuggled,
        _answer(b"second"),
    ]
    async with Server(answers) as server:
        transport = StdlibTransport(trust_env=False)
        url = f"http://127.0.0.1:{server.port}/"
        try:
            assert (await _body(transport, url))[2] == [b"first"]
            assert (await _body(transport, url))[2] == [b"second"]
        finally:
            await transport.aclose()
    assert len(server.heads) == 2
    assert server.connections == 2


@contextlib.asynccontextmanager
async def forging_proxy(forged: bytes) -> AsyncIterator[int]:
    """A CONNECT proxy that tunnels to the real origin but sends ``forged`` right after
    its ``200``, before the client's TLS handshake (issue 36, item 2)."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    handlers: set[asyncio.Task[None]] = set()

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)  # type: ignore[arg-type]
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        host, port = head.split(" ", 2)[1].rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n" + forged)
        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            # the origin is left waiting for a handshake that never comes: end it; and
            # close the client's side too, which Python >= 3.12.1's Server.wait_closed()
            # waits for
            up_writer.close()
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()
        # let the origin's accept task see the closed connection
        for _ in range(20):
            await asyncio.sleep(0.01)


async def test_bytes_a_proxy_sends_before_tls_are_never_an_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PV-44: a proxy that appends a whole forged HTTP answer to its CONNECT ``200``
    (the certificate check of the real origin still passes) gets the tunnel refused: a
    ``connect`` failure naming the proxy without its password, and the forged body is
    never returned."""
    key, cert = _certificate(tmp_path)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    forged = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"
    async with (
        Server([_answer(b"genuine")], tls=server_side) as server,
        forging_proxy(forged) as port,
    ):
        monkeypatch.setenv("HTTPS_PROXY", f"http://me:s3cret-pw@127.0.0.1:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        transport = StdlibTransport(ssl_context=trusting)
        try:
            with pytest.raises(TransportError) as info:
                await _body(transport, f"https://localhost:{server.port}/v1")
        finally:
            await transport.aclose()
    assert info.value.kind == "connect"
    assert f"the proxy http://127.0.0.1:{port}" in info.value.detail
    assert "before TLS" in info.value.detail
    assert "s3cret-pw" not in str(info.value)


def test_the_exception_function() -> None:
    """PV-42: the OS's, ssl's and zlib's exceptions map to the kinds of TransportError,
    by phase."""
    assert (
        transport_error(ConnectionRefusedError(111, "refused"), connecting=True).kind
        == "connect"
    )
    assert (
        transport_error(ssl.SSLCertVerificationError("bad"), connecting=True).kind
        == "connect"
    )
    assert transport_error(ConnectionResetError(104, "reset")).kind == "network"
    assert transport_error(asyncio.IncompleteReadError(b"", 10)).kind == "network"
    assert transport_error(zlib.error("bad data")).kind == "protocol"
    assert transport_error(RuntimeError("odd")).kind == "other"
    assert transport_error(RuntimeError("odd")).detail == "RuntimeError: odd"


def test_a_plugin_gets_aiohttp_where_it_is_installed_and_the_stdlib_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-41: ``transport_for`` gives the aiohttp transport where aiohttp and
    minagent_http can be imported; otherwise the standard library's (a session then is
    an error); a transport given is used as it is."""
    from minagent_http import AiohttpTransport

    import minagent.providers.default as module

    assert isinstance(transport_for(None), AiohttpTransport)
    given = StdlibTransport()
    assert transport_for(given) is given
    with pytest.raises(ValueError, match="not both"):
        transport_for(given, session=object())
    monkeypatch.setattr(module, "aiohttp_transport", lambda: None)
    assert isinstance(transport_for(None, trust_env=False), StdlibTransport)
    with pytest.raises(ValueError, match="aiohttp"):
        transport_for(None, session=object())


def test_aiohttp_transport_is_none_when_the_plugin_cannot_be_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-41: without the minagent_http plugin (or aiohttp) there is no aiohttp
    transport: None, so the standard-library transport is used."""

    def missing(name: str, package: str | None = None) -> Any:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(transport_module, "import_module", missing)
    assert transport_module.aiohttp_transport() is None
    assert type(transport_module.transport_for(None)).__name__ == "StdlibTransport"


ANSWERS = [
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "protocol",
        "unsupported Transfer-Encoding",
        id="te",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc",
        "protocol",
        "invalid Content-Length",
        id="cl",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        "network",
        "7 bytes of the body still to come",
        id="short",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef",
        "protocol",
        "longer than its size",
        id="chunk",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 9000,
        "protocol",
        "line is longer",
        id="size-line",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Le",
        "network",
        "inside the answer's header",
        id="cut-head",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 129 + b"\r\n",
        "protocol",
        "more than 128 header",
        id="headers",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope",
        "protocol",
        "error",
        id="gzip",
    ),
]


@pytest.mark.parametrize(("answer", "kind", "words"), ANSWERS)
async def test_answers_that_are_not_valid_http(
    answer: bytes, kind: str, words: str
) -> None:
    """PV-42: a bad Transfer-Encoding or Content-Length, a body or head cut short, a
    chunk longer than its size, an overlong size line, too many headers and data that
    does not inflate are each the TransportError kind of one function, saying what was
    wrong; nothing stays in use."""
    async with Server([[answer, 0.05]]) as server:
        transport = StdlibTransport(trust_env=False)
        with pytest.raises(TransportError) as info:
            await _body(
                transport, f"http://127.0.0.1:{server.port}/", timeouts=Timeouts(read=2)
            )
        assert transport.in_use == 0
        await transport.aclose()
    assert info.value.kind == kind, info.value
    assert words in info.value.detail


async def test_no_body_statuses_and_interim_answers() -> None:
    """PV-42: a 204 has no body (its connection serves again); a 100 Continue head
    before the answer is skipped."""
    answers: list[bytes | list[bytes | float]] = [b"HTTP/1.1 204 No Content\r\n\r\n"]
    answers.append(b"HTTP/1.1 100 Continue\r\n\r\n" + _answer(b"after"))
    async with Server(answers) as server:
        transport = StdlibTransport(trust_env=False)
        assert await _body(transport, f"http://127.0.0.1:{server.port}/") == (
            204,
            {},
            [],
        )
        assert (await _body(transport, f"http://127.0.0.1:{server.port}/"))[2] == [
            b"after"
        ]
        await transport.aclose()
    assert server.connections == 1


async def test_proxy_failures_are_connect_errors_without_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-44: an https:// proxy, and a proxy that refuses the CONNECT, are ``connect``
    failures naming the proxy without its password; a header with a line break is never
    sent."""
    refusing: list[bytes | list[bytes | float]] = [
        b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"
    ]
    async with Server(refusing) as proxy_server:
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.setenv(
            "HTTPS_PROXY", f"http://me:s3cret-pw@127.0.0.1:{proxy_server.port}"
        )
        transport = StdlibTransport()
        with pytest.raises(TransportError) as info:
            await _body(transport, "https://example.invalid/v1")
        assert info.value.kind == "connect"
        assert (
            f"the proxy http://127.0.0.1:{proxy_server.port} answered CONNECT with 407"
            in info.value.detail
        )
        assert "s3cret-pw" not in info.value.detail
        await transport.aclose()
    monkeypatch.setenv("HTTPS_PROXY", "https://me:s3cret-pw@127.0.0.1:1")
    transport = StdlibTransport()
    with pytest.raises(TransportError) as info:
        await _body(transport, "https://example.invalid/v1")
    assert info.value.kind == "connect"
    assert "only http:// proxies are supported" in info.value.detail
    assert "s3cret-pw" not in info.value.detail
    await transport.aclose()
    async with Server([_answer(b"never")]) as server:
        direct = StdlibTransport(trust_env=False)
        with pytest.raises(TransportError) as info:
            await direct.send(
                Request(
                    "POST",
                    f"http://127.0.0.1:{server.port}/",
                    {"X-Bad": "a\r\nInjected: 1"},
                    b"",
                )
            )
        assert info.value.kind == "protocol"
        assert direct.in_use == 0
        await direct.aclose()
    assert server.heads == []
