"""The loopback fake servers' shared part (aiohttp.web on 127.0.0.1), and a raw TCP
server.

`LoopbackServer` answers every POST from a queue and records what it received. Each
queued item answers one request and is either

* a kit step (`ScriptedStep`, queued by the ``script_*`` methods of `ScriptedHarness`),
  which a plugin's fake server renders on its wire (``_render``), as a whole body or as
  a stream according to the request; or
* a handler ``async (server, request, body) -> StreamResponse`` for anything else:
  recorded transcripts cut into chunks, raw bodies, disconnects, silence.

A plugin's fake server (``tests/<plugin>/_fake_server.py``) subclasses it with its
routes, its client class, the content type of its streams and its wire rendering, and
binds the handlers below to that content type. `RawServer` answers at the TCP level with
exactly the bytes it is given (malformed HTTP, a body trickled one byte at a time).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Self

from aiohttp import web
from aiohttp.test_utils import TestServer

from minagent.testing import ScriptedHarness, ScriptedStep

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
NDJSON_HEADERS = {"Content-Type": "application/x-ndjson"}

Handler = Callable[[Any, web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]


class LoopbackServer(ScriptedHarness):
    """The fake server and the `ProviderHarness` of the conformance kit over it (see the
    module)."""

    routes: ClassVar[tuple[str, ...]] = ("/{path:.*}",)
    base_path: ClassVar[str] = ""  # base_url = root + base_path
    client_class: ClassVar[Any] = None
    api_key: ClassVar[str] = "sk-test-harness"
    query_as_dict: ClassVar[bool] = False
    request_id_header = "x-request-id"

    def __init__(self, *, model: str) -> None:
        super().__init__()
        self.model = model
        self.queue: list[ScriptedStep | Handler] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # the path of each request
        # its query parameters (a list of pairs, or a dict)
        self.queries: list[Any] = []
        # its request target as sent (absolute through a proxy)
        self.targets: list[str] = []
        self.server: TestServer | None = None
        self.closing = asyncio.Event()
        self.handlers_running = 0

    # -- life cycle -----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        for route in self.routes:
            app.router.add_post(route, self._handle)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closing.set()
        assert self.server is not None
        await self.server.close()

    @property
    def root(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}{self.base_path}"

    # -- the harness ----------------------------------------------------------------------------

    def make_client(self, **kwargs: Any) -> Any:
        kwargs.setdefault("api_key", self.api_key)
        kwargs.setdefault("base_url", self.base_url)
        return self.client_class(kwargs.pop("model", self.model), **kwargs)

    def reset(self) -> None:
        super().reset()
        for record in (
            self.queue,
            self.headers,
            self.paths,
            self.queries,
            self.targets,
        ):
            record.clear()

    async def open_connections(self) -> int:
        assert self.server is not None
        assert self.server.runner is not None
        server = self.server.runner.server
        return len(server.connections) if server is not None else 0

    # The kit's script_* methods append to self.steps; _sync moves them to the one
    # queue.
    def add(self, *items: ScriptedStep | Handler) -> Self:
        """Queue answers (steps or handlers), in order."""
        self._sync()
        self.queue.extend(items)
        return self

    def _sync(self) -> None:
        self.queue.extend(self.steps)
        self.steps.clear()

    # -- serving --------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.handlers_running += 1
        try:
            body = await request.json()
            self.record(body)
            self.headers.append(dict(request.headers))
            self.paths.append(request.path)
            self.queries.append(
                dict(request.query)
                if self.query_as_dict
                else list(request.query.items())
            )
            self.targets.append(request._message.path)
            self._sync()
            if not self.queue:
                return self.unscripted(f"request {len(self.received)} was not scripted")
            item = self.queue.pop(0)
            if isinstance(item, ScriptedStep):
                return await self._render(item, request, body)
            return await item(self, request, body)
        finally:
            self.handlers_running -= 1

    def unscripted(self, message: str) -> web.StreamResponse:
        """The answer to a request the script does not cover."""
        return web.json_response({"error": {"message": message}}, status=599)

    async def _render(
        self, step: ScriptedStep, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# Handlers (bound to a stream content type by each plugin's fake server)


def _named(headers: Mapping[str, str]) -> dict[str, str]:
    """``x_request_id="r"`` keyword headers as ``{"x-request-id": "r"}``."""
    return {k.replace("_", "-"): v for k, v in headers.items()}


async def send_chunks(
    request: web.Request,
    data: bytes,
    cuts: Sequence[int] = (),
    pauses: Sequence[float] = (),
    *,
    headers: Mapping[str, str] | None = None,
    stream_headers: Mapping[str, str] = SSE_HEADERS,
) -> web.StreamResponse:
    """Stream ``data`` cut at the byte offsets ``cuts``, sleeping ``pauses[i]`` after
    piece i."""
    response = web.StreamResponse(headers={**stream_headers, **(headers or {})})
    await response.prepare(request)
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    for i, (start, end) in enumerate(itertools.pairwise(bounds)):
        await response.write(data[start:end])
        await asyncio.sleep(pauses[i] if i < len(pauses) else 0)
    await response.write_eof()
    return response


async def keep_alive(
    response: web.StreamResponse, closing: asyncio.Event, beat: bytes
) -> web.StreamResponse:
    """Write ``beat`` every 5 ms until the client leaves or the server closes (at most
    ~10 s)."""
    with contextlib.suppress(ConnectionError):
        for _ in range(2000):
            if closing.is_set():
                break
            await asyncio.sleep(0.005)
            await response.write(beat)
    return response


def replay(
    data: bytes,
    whole: Callable[[bytes], Any],
    cuts: Sequence[int] = (),
    pauses: Sequence[float] = (),
    *,
    streams: Callable[[dict[str, Any]], bool] = lambda body: bool(body.get("stream")),
    stream_headers: Mapping[str, str] = SSE_HEADERS,
    **headers: str,
) -> Handler:
    """Answer with a recorded stream (cut as given) or, to a request that does not
    stream, with ``whole(data)``, the equivalent body."""

    async def handler(
        server: Any, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        if streams(body):
            return await send_chunks(
                request,
                data,
                cuts,
                pauses,
                headers=_named(headers),
                stream_headers=stream_headers,
            )
        return web.json_response(whole(data), headers=_named(headers))

    return handler


def raw(
    status: int = 200,
    body: bytes | str = b"",
    *,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
) -> Handler:
    """Answer with exactly this status, body and headers."""

    async def handler(
        server: Any, request: web.Request, _: dict[str, Any]
    ) -> web.StreamResponse:
        data = body.encode() if isinstance(body, str) else body
        return web.Response(
            status=status, body=data, content_type=content_type, headers=headers
        )

    return handler


def disconnect_after(
    data: bytes,
    n_bytes: int,
    *,
    stream_headers: Mapping[str, str] = SSE_HEADERS,
    **headers: str,
) -> Handler:
    """Send the first ``n_bytes`` of a stream (0: headers only), then drop the
    connection."""

    async def handler(
        server: Any, request: web.Request, _: dict[str, Any]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={**stream_headers, **_named(headers)})
        await response.prepare(request)
        if n_bytes:
            await response.write(data[:n_bytes])
        await asyncio.sleep(0.01)
        assert request.transport is not None
        request.transport.abort()
        return response

    return handler


def silence(
    after_headers: bool = False,
    first: bytes = b"",
    *,
    stream_headers: Mapping[str, str] = SSE_HEADERS,
) -> Handler:
    """Say nothing (or send headers and ``first``, then nothing) until the server
    closes."""

    async def handler(
        server: Any, request: web.Request, _: dict[str, Any]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers=stream_headers)
        if after_headers or first:
            await response.prepare(request)
        if first:
            await response.write(first)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.closing.wait(), 10)
        return response

    return handler


# --------------------------------------------------------------------------------------------
# Below HTTP


class RawServer:
    """A TCP server that reads a request and answers with exactly the given bytes, at
    once or, after the first ``at_once`` bytes, one byte every ``trickle`` seconds."""

    def __init__(
        self,
        answer: bytes,
        *,
        trickle: float | None = None,
        at_once: int = 0,
        base_path: str = "",
    ) -> None:
        self.answer = answer
        self.trickle = trickle
        self.at_once = at_once
        self.base_path = base_path
        self.server: asyncio.Server | None = None
        self.handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Self:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self.server is not None
        self.server.close()
        for task in list(self.handlers):
            task.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)
        await self.server.wait_closed()

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}{self.base_path}"

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            await reader.readexactly(length)
            if self.trickle is None:
                writer.write(self.answer)
                await writer.drain()
            else:
                writer.write(self.answer[: self.at_once])
                for i in range(self.at_once, len(self.answer)):
                    writer.write(self.answer[i : i + 1])
                    await writer.drain()
                    await asyncio.sleep(self.trickle)
            await asyncio.sleep(0.05)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            self.handlers.discard(task)
