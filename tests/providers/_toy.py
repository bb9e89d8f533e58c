"""A toy provider for the shared transport's tests: a codec, a client, and one wire two
ways.

The toy wire: a request is JSON ``{"model", "messages", "stream"}``; a whole answer is
``{"text", "finish"}``; a stream is NDJSON, one ``{"text"}`` per line, then
``{"finish"}`` and ``{"done": true}``; ``{"error": message}`` is an error, as a body, a
line, or a non-2xx body.

`Wire` plays scripted `Answer`s to a `ToyClient` through one of three transports: the
in-memory `MockTransport`, or the aiohttp transport or the standard library's against a
loopback server (`tests._support.loopback`). Failures are rendered as each transport meets them:
a ``drop`` after the chunks is a `TransportError("network")` in memory and an aborted
connection on the loopback; a ``stall`` after them is a `TransportError("read_timeout")`
in memory and silence past ``timeout`` on the loopback; ``silent`` is the same before
the status line; ``hold`` keeps the body open without data until the client goes away
(in memory, a body that waits forever).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Self
from urllib.parse import parse_qsl, urlsplit

from aiohttp import web
from minagent_http import AiohttpTransport

from minagent import ChatResponse, ChatResponseUpdate, Content, Message, ProviderError
from minagent.providers import (
    HTTPChatClient,
    Request,
    StdlibTransport,
    TransportError,
    error_for_status,
)
from minagent.testing import MockResponse, MockTransport

from .._support.loopback import NDJSON_HEADERS, LoopbackServer

TEXT_LINES = (
    b'{"text": "Hel"}\n',
    b'{"text": "lo"}\n',
    b'{"finish": "stop"}\n',
    b'{"done": true}\n',
)


class ToyProtocolError(ProviderError, ValueError):
    def __init__(self, message: str) -> None:
        super().__init__(message, provider="toy")
        self.updates: list[ChatResponseUpdate] = []


class ToyStreamError(ProviderError):
    def __init__(self, message: str) -> None:
        super().__init__(message, provider="toy")
        self.updates: list[ChatResponseUpdate] = []


def _update(line: Mapping[str, Any]) -> ChatResponseUpdate | None:
    if "error" in line:
        raise ToyStreamError(str(line["error"]))
    if "text" in line:
        return ChatResponseUpdate(
            [Content.from_text(line["text"])], "assistant", message_id="m1"
        )
    if "finish" in line:
        return ChatResponseUpdate(
            [], "assistant", message_id="m1", finish_reason=line["finish"]
        )
    return None


class ToyDecoder:
    def __init__(self, max_line_size: int | None) -> None:
        self.max_line_size = max_line_size
        self.done = False
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[ChatResponseUpdate]:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        updates = self._lines(lines)
        if self.max_line_size is not None and len(self._buffer) > self.max_line_size:
            error = ToyProtocolError(
                f"toy: a line is longer than max_line_size={self.max_line_size}"
            )
            error.updates = updates
            raise error
        return updates

    def close(self) -> list[ChatResponseUpdate]:
        rest, self._buffer = self._buffer, b""
        return self._lines([rest] if rest.strip() else [])

    def _lines(self, lines: list[bytes]) -> list[ChatResponseUpdate]:
        updates: list[ChatResponseUpdate] = []
        for raw in lines:
            if self.done or not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                error = ToyProtocolError(f"toy: a line is not JSON: {raw[:50]!r}")
                error.updates = updates
                raise error from None
            if line.get("done"):
                self.done = True
                continue
            try:
                update = _update(line)
            except ToyStreamError as error:
                error.updates = updates
                raise
            if update is not None:
                updates.append(update)
        return updates


class ToyCodec:
    provider = "toy"
    request_id_headers = ("x-request-id", "request-id")
    protocol_error = ToyProtocolError

    def __init__(self) -> None:
        self.error_bodies: list[bytes] = []

    def headers(self, *, stream: bool) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": "application/x-ndjson" if stream else "application/json",
        }

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, Any]:
        if options.get("bad"):
            raise ValueError("the option 'bad' cannot be sent")
        body = {
            "model": options.get("model", model),
            "messages": [m.text for m in messages],
            "stream": stream,
        }
        return json.dumps(body).encode(), "context"

    def decode(self, body: bytes, context: Any) -> ChatResponse:
        assert context == "context"
        try:
            data = json.loads(body)
        except ValueError:
            raise ToyProtocolError(
                f"toy: the body is not JSON: {body[:50]!r}"
            ) from None
        if "error" in data:
            raise ToyStreamError(str(data["error"]))
        message = Message("assistant", [data["text"]], message_id="m1")
        return ChatResponse([message], finish_reason=data.get("finish"))

    def stream_decoder(self, context: Any, *, max_line_size: int | None) -> ToyDecoder:
        assert context == "context"
        return ToyDecoder(max_line_size)

    def parse_error(
        self, status: int, body: bytes, headers: Mapping[str, str]
    ) -> tuple[str, str | None]:
        self.error_bodies.append(body)
        try:
            message = str(json.loads(body)["error"])
        except (ValueError, KeyError, TypeError):
            message = body.decode("utf-8", "replace").strip()[:500] or f"HTTP {status}"
        return message, headers.get("x-request-id")

    def status_error(
        self,
        status: int,
        message: str,
        request_id: str | None,
        headers: Mapping[str, str],
    ) -> ProviderError:
        return error_for_status(
            status, message, request_id, provider="toy", headers=headers
        )

    def unfinished(self, decoder: ToyDecoder, finished: bool) -> str | None:
        return (
            None
            if decoder.done or finished
            else "the stream ended before its done line"
        )


class ToyClient(HTTPChatClient):
    path = "/chat"
    api_key_env = "TOY_API_KEY"
    connect_hint = "is the toy server running?"
    user_agent = "toy/1.0"
    keeps_request_id = True

    def __init__(
        self, model: str = "toy-1", *, transport: Any, base_url: str, **kwargs: Any
    ) -> None:
        super().__init__(
            model, codec=ToyCodec(), transport=transport, base_url=base_url, **kwargs
        )

    def _connection_headers(self) -> dict[str, str]:
        return {**super()._connection_headers(), "X-Toy": "1"}


# --------------------------------------------------------------------------------------------
# One wire, two transports


@dataclass
class Answer:
    """One scripted answer: a status, headers, body chunks, then how the body ends."""

    status: int = 200
    chunks: tuple[bytes, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    then: Literal["end", "drop", "stall", "hold", "silent"] = "end"


def text(stream: bool, **headers: str) -> Answer:
    if stream:
        return Answer(
            chunks=TEXT_LINES,
            headers={"content-type": "application/x-ndjson", **headers},
        )
    body = json.dumps({"text": "Hello", "finish": "stop"}).encode()
    return Answer(
        chunks=(body,), headers={"content-type": "application/json", **headers}
    )


def refusal(status: int, message: str, **headers: str) -> Answer:
    return Answer(
        status,
        (json.dumps({"error": message}).encode(),),
        {"content-type": "application/json", **headers},
    )


class Wire:
    """Answers scripted requests through one of the two transports (see the module)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.answers: list[Answer | TransportError] = []
        self.mock = MockTransport(self._memory)
        self.server: _ToyServer | None = None
        self.clients: list[ToyClient] = []

    async def __aenter__(self) -> Self:
        if self.kind in ("aiohttp", "stdlib"):
            self.server = await _ToyServer(self).__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for client in self.clients:
            await client.aclose()
        if self.server is not None:
            await self.server.__aexit__()

    def add(self, *answers: Answer | TransportError) -> Wire:
        self.answers.extend(answers)
        return self

    def client(self, cls: type[ToyClient] = ToyClient, **kwargs: Any) -> ToyClient:
        if self.kind == "memory":
            kwargs.setdefault("base_url", "http://toy.invalid/v1")
            transport: Any = self.mock
        else:
            assert self.server is not None
            kwargs.setdefault("base_url", f"{self.server.root}/v1")
            transport = (
                AiohttpTransport(trust_env=False)
                if self.kind == "aiohttp"
                else StdlibTransport(trust_env=False)
            )
        client = cls(transport=transport, **kwargs)
        self.clients.append(client)
        return client

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received, in order."""
        if self.server is not None:
            return self.server.requests()
        return [json.loads(r.body) for r in self.mock.requests]

    @property
    def paths(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """The path and query of each request."""
        if self.server is not None:
            return list(zip(self.server.paths, self.server.queries, strict=True))
        return [
            (urlsplit(r.url).path, parse_qsl(urlsplit(r.url).query))
            for r in self.mock.requests
        ]

    @property
    def headers(self) -> list[dict[str, str]]:
        if self.server is not None:
            return [{k.lower(): v for k, v in h.items()} for h in self.server.headers]
        return [
            {k.lower(): v for k, v in r.headers.items()} for r in self.mock.requests
        ]

    async def held(self, client: ToyClient) -> int:
        """Responses the client still holds open (PV-30): in memory, neither released
        nor closed; over aiohttp, connections its pool handed out and did not get
        back."""
        if self.kind == "memory":
            return len(self.mock.open_responses())
        for _ in range(3):
            await asyncio.sleep(0)
        if isinstance(client.transport, StdlibTransport):
            return client.transport.in_use
        session = client.session
        return (
            len(session.connector._acquired)
            if session is not None and session.connector
            else 0
        )

    def _next(self) -> Answer | TransportError:
        if not self.answers:
            raise AssertionError("a request was not scripted")
        return self.answers.pop(0)

    def _memory(self, request: Request) -> MockResponse:
        answer = self._next()
        if isinstance(answer, TransportError):
            raise answer
        if answer.then == "silent":
            raise TransportError(
                "read_timeout",
                "SocketTimeoutError: Timeout on reading data from socket",
            )
        if answer.then == "hold":
            return MockResponse(
                answer.status, _held(answer.chunks), headers=answer.headers
            )
        chunks: list[bytes | TransportError] = list(answer.chunks)
        if answer.then == "drop":
            chunks.append(
                TransportError(
                    "network", "ClientPayloadError: Response payload is not completed"
                )
            )
        elif answer.then in ("stall", "hold"):
            chunks.append(
                TransportError(
                    "read_timeout",
                    "SocketTimeoutError: Timeout on reading data from socket",
                )
            )
        return MockResponse(answer.status, chunks, headers=answer.headers)


async def _held(chunks: tuple[bytes, ...]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
    await asyncio.Event().wait()
    yield b""  # never reached


class _ToyServer(LoopbackServer):
    def __init__(self, wire: Wire) -> None:
        super().__init__(model="toy-1")
        self.wire = wire

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.record(await request.json())
        self.headers.append(dict(request.headers))
        self.paths.append(request.path)
        self.queries.append(list(request.query.items()))
        answer = self.wire._next()
        if isinstance(answer, TransportError):  # the loopback renders only answers
            raise AssertionError(
                f"a {answer.kind} failure cannot be scripted on the loopback server"
            )
        if answer.then == "silent":
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.closing.wait(), 10)
            return web.Response()
        response = web.StreamResponse(
            status=answer.status, headers=answer.headers or NDJSON_HEADERS
        )
        await response.prepare(request)
        for chunk in answer.chunks:
            await response.write(chunk)
            await asyncio.sleep(0.001)
        if answer.then == "drop":
            await asyncio.sleep(0.01)
            assert request.transport is not None
            request.transport.abort()
        elif answer.then in ("stall", "hold"):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.closing.wait(), 10)
        else:
            await response.write_eof()
        return response
