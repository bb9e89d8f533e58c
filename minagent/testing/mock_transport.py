"""`MockTransport`: an in-memory `minagent.providers.Transport` for tests
(spec/providers.md PV-40).

Rules
-----
1. Nothing leaves the process: a handler function answers every request.
2. The transport records every request it was sent and every response it handed out, and
   each response records how it ended (``released`` or ``closed``), so a test can check
   that no connection was left open (PV-30).

Theory of operation
-------------------
``MockTransport(handler)`` calls ``handler(request)`` (a function or a coroutine
function) on each ``send``. The handler returns a `MockResponse`, or raises a
`TransportError`: a failure before the answer (``connect``, ``read_timeout``, ...). A
`MockResponse`'s body is bytes (one chunk), an iterable of chunks, or an async iterable
of chunks. A `TransportError` among the chunks is raised when the reader reaches it (a
connection that breaks mid-body); an async iterable may wait on anything (a server that
stalls). ``MockTransport.answering(*answers)`` answers the requests in order from a
list. ``aclose()`` only counts: there is nothing to close.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from typing import Any

from ..providers.transport import Request, TransportError

__all__ = ["MockResponse", "MockTransport"]

Body = bytes | Iterable[bytes | TransportError] | AsyncIterable[bytes]
Handler = Callable[[Request], "MockResponse | Awaitable[MockResponse]"]


class MockResponse:
    """An answer with a status, headers (names kept in lower case) and a body read in
    chunks."""

    def __init__(
        self,
        status: int = 200,
        body: Body = b"",
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.headers = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
        self.request: Request | None = None
        self.released = False
        self.closed = False
        self.chunks_read = 0
        self._sync: Iterator[bytes | TransportError] | None = None
        self._async: AsyncIterator[bytes] | None = None
        if isinstance(body, bytes | bytearray):
            self._sync = iter([bytes(body)])
        elif isinstance(body, AsyncIterable):
            self._async = aiter(body)
        else:
            self._sync = iter(body)

    @classmethod
    def json(
        cls, data: Any, status: int = 200, *, headers: Mapping[str, str] | None = None
    ) -> MockResponse:
        """A JSON body with ``content-type: application/json``."""
        return cls(
            status,
            json.dumps(data).encode(),
            headers={"content-type": "application/json", **(headers or {})},
        )

    @property
    def open(self) -> bool:
        """Neither released nor closed: its connection would still be held."""
        return not (self.released or self.closed)

    async def read_chunk(self) -> bytes:
        if self.closed:
            raise TransportError(
                "network", "ClientConnectionError: the response was closed"
            )
        while True:
            if self._async is not None:
                try:
                    chunk: bytes | TransportError = await anext(self._async)
                except StopAsyncIteration:
                    return b""
            else:
                assert self._sync is not None
                item = next(self._sync, None)
                if item is None:
                    return b""
                chunk = item
            if isinstance(chunk, TransportError):
                raise chunk
            if chunk:
                self.chunks_read += 1
                return chunk

    def release(self) -> None:
        self.released = True

    def close(self) -> None:
        self.closed = True


class MockTransport:
    """A `Transport` whose answers come from ``handler(request)``; see the module
    docstring."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.responses: list[MockResponse] = []
        self.aclosed = 0

    @classmethod
    def answering(cls, *answers: MockResponse | TransportError) -> MockTransport:
        """Answer the requests in order: a `MockResponse` is returned, a
        `TransportError` raised."""
        queue = list(answers)

        def handler(request: Request) -> MockResponse:
            if not queue:
                raise AssertionError(
                    f"request {len(transport.requests)} was not expected: {request.url}"
                )
            answer = queue.pop(0)
            if isinstance(answer, TransportError):
                raise answer
            return answer

        transport = cls(handler)
        return transport

    async def send(self, request: Request) -> MockResponse:
        self.requests.append(request)
        result = self.handler(request)
        response = await result if inspect.isawaitable(result) else result
        response.request = request
        self.responses.append(response)
        return response

    async def aclose(self) -> None:
        self.aclosed += 1

    def open_responses(self) -> list[MockResponse]:
        """The responses handed out and neither released nor closed (PV-30)."""
        return [r for r in self.responses if r.open]
