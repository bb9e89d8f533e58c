"""What moves bytes: `Transport`, its requests and answers, and `LoopBound`
(spec/providers.md PV-39, PV-37).

Rules
-----
1. A transport only moves bytes: it never retries, decodes or times anything on its own
   account (the request carries its `Timeouts`), and raises nothing but `TransportError`
   (and cancellation, and the `RuntimeError` of PV-37).
2. A connection pool belongs to the event loop it was opened on; `LoopBound` is the one
   place that knows how to keep it there (PV-37), for every transport.

Theory of operation
-------------------
``Transport.send(Request)`` returns a `Response` once the status line and headers have
arrived; the body is read with ``read_chunk()`` until ``b""``, and the response ends
with ``release()`` (clean) or ``close()`` (anything else, PV-30). A transport maps its
library's exceptions to the seven kinds of `TransportError` with one table;
`HTTPChatClient` (``http``) turns each kind into a typed `ProviderError`, once. Standard
library only: an aiohttp transport lives in the plugin ``minagent-http``, a
standard-library one can sit beside it without changing the client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

from .. import MinagentError

__all__ = [
    "FailureKind",
    "LoopBound",
    "Request",
    "Response",
    "Timeouts",
    "Transport",
    "TransportError",
]

FailureKind = Literal[
    "connect",
    "connect_timeout",
    "read_timeout",
    "total_timeout",
    "protocol",
    "network",
    "other",
]


class TransportError(MinagentError):
    """A transport could not send a request or read its answer (PV-35).

    ``kind`` says what failed: ``connect`` (no connection could be made),
    ``connect_timeout``, ``read_timeout`` (a wait for data), ``total_timeout`` (the
    whole exchange), ``protocol`` (the answer is not valid HTTP), ``network`` (the
    connection broke), ``other`` (anything else the library raised). ``detail`` is the
    library's exception as ``"Type: text"``.
    """

    def __init__(self, kind: FailureKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: FailureKind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds, None for no bound: connecting (including the wait for a pooled
    connection), each wait for data, and the whole exchange from sending to the end of
    the body."""

    connect: float | None = None
    read: float | None = None
    total: float | None = None


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request: a method, an absolute URL (its query included), headers and a
    body."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    timeouts: Timeouts = Timeouts()


class Response(Protocol):
    """An HTTP answer whose body is still to be read."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers, names in lower case."""
        ...

    async def read_chunk(self) -> bytes:
        """The next bytes of the body as they arrive; ``b""`` at its end;
        `TransportError`."""
        ...

    def release(self) -> None:
        """A clean end: the connection may serve another request once the body was
        read."""

    def close(self) -> None:
        """Any other end: the connection is closed (PV-30)."""


class Transport(Protocol):
    """What moves bytes (httpx's ``AsyncBaseTransport``): one method, and ``aclose()``.

    ``send`` returns once the status line and headers have arrived, and raises nothing
    but `TransportError` (a RuntimeError of PV-37 aside). ``aclose()`` closes what the
    transport opened (idempotent); a later ``send`` opens anew.
    """

    async def send(self, request: Request) -> Response: ...

    async def aclose(self) -> None: ...


class _Pool(Protocol):
    @property
    def closed(self) -> bool: ...

    async def close(self) -> None: ...


P = TypeVar("P", bound=_Pool)


class LoopBound(Generic[P]):
    """A connection pool that belongs to the event loop it was opened on (PV-37).

    ``get()`` opens the pool on first use, on the running loop, and starts there a
    *keeper* (an async generator) that closes it when the loop shuts down its async
    generators (as ``asyncio.run`` does). On another loop: when the pool's loop is
    closed, the pool is closed and a new one opened; when it is still open, ``get()``
    raises `RuntimeError` saying what to do. ``aclose()`` closes the pool (idempotent);
    the next ``get()`` opens a new one.
    """

    def __init__(self, open_pool: Callable[[], P]) -> None:
        self._open = open_pool
        self.value: P | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._keeper: AsyncGenerator[None, None] | None = None

    async def get(self) -> P:
        loop = asyncio.get_running_loop()
        pool = self.value
        if pool is not None and not pool.closed and self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed():
                raise RuntimeError(
                    "this client's HTTP session belongs to another event loop that is still open; "
                    "`await client.aclose()` on that loop first, or use one client per event loop"
                )
            await pool.close()  # its loop is closed: nothing of it can run any more
            pool = None
        if pool is None or pool.closed:
            pool = self._open()
            self.value, self._loop = pool, loop
            self._keeper = _keeper(pool)
            # now closed by the loop's shutdown_asyncgens()
            await self._keeper.asend(None)
        return pool

    async def aclose(self) -> None:
        pool, self.value = self.value, None
        keeper, self._keeper = self._keeper, None
        if keeper is not None and self._loop is asyncio.get_running_loop():
            await keeper.aclose()
        if pool is not None and not pool.closed:
            await pool.close()


async def _keeper(pool: _Pool) -> AsyncGenerator[None, None]:
    """Closes ``pool`` when its loop shuts down its async generators (PV-37)."""
    try:
        yield
    finally:
        if not pool.closed:
            await pool.close()
