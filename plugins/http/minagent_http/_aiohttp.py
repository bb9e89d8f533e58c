"""`AiohttpTransport`: a `minagent.providers.Transport` over aiohttp (spec/providers.md,
PV-35, PV-37).

Rules
-----
1. This is the only module that imports aiohttp for the chat providers.
2. Every exception aiohttp or the operating system raises while sending or reading
   becomes a `TransportError` through one table, ``EXCEPTIONS`` (httpx's
   ``HTTPCORE_EXC_MAP`` idea), raised outside the ``except`` block, so no library
   exception (whose request info carries the request headers) is chained to it.
   Cancellation passes through untouched.
3. A session the transport opens belongs to one event loop (`LoopBound`, PV-37) and
   trusts the environment's proxy settings when ``trust_env`` (OA-31); a session passed
   in is used as it is and never closed (PV-31).

Theory of operation
-------------------
``send`` posts with aiohttp's own timeouts (``Timeouts``: ``connect``, ``sock_read``,
``total``) and returns once the headers have arrived, wrapping the ``ClientResponse``:
``read_chunk`` is ``content.readany()``, ``release`` and ``close`` are aiohttp's.
Nothing here retries, decodes or redacts: `HTTPChatClient` does that, once, for every
transport.
"""

from __future__ import annotations

import re

import aiohttp
from aiohttp import ClientSession

from ._minagent import FailureKind, LoopBound, Request, Transport, TransportError

__all__ = [
    "EXCEPTIONS",
    "AiohttpTransport",
    "ClientSession",
    "transport_error",
    "transport_for",
]

# aiohttp's (and the OS's) exceptions -> TransportError kinds. First match wins:
# subclasses come before their bases (ConnectionTimeoutError and ServerTimeoutError are
# TimeoutErrors, and the connector's errors are OSErrors). Anything else is "other".
EXCEPTIONS: tuple[
    tuple[type[BaseException] | tuple[type[BaseException], ...], FailureKind], ...
] = (
    # connecting, or waiting for the pool
    (aiohttp.ConnectionTimeoutError, "connect_timeout"),
    (aiohttp.ServerTimeoutError, "read_timeout"),  # sock_read: one wait for data
    (TimeoutError, "total_timeout"),  # ClientTimeout.total: the whole exchange
    # refused, unreachable, DNS, TLS handshake
    (aiohttp.ClientConnectorError, "connect"),
    # raised by the HTTP parser: not valid HTTP
    (aiohttp.ClientResponseError, "protocol"),
    # reset, dropped
    ((aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError), "network"),
)


# aiohttp's parser errors carry an internal code that reads like an HTTP status
# ("<TransferEncodingError: 400, message='...'>"): the text keeps the name and the
# message (PV-47).
_INTERNAL_CODE = re.compile(r"<(\w+): \d{3}, message=(['\"])(.*?)\2>")


def transport_error(exc: Exception) -> TransportError:
    """The `TransportError` of an exception of aiohttp or of the OS (``EXCEPTIONS``)."""
    text = exc.message if isinstance(exc, aiohttp.ClientResponseError) else str(exc)
    text = _INTERNAL_CODE.sub(lambda m: f"{m.group(1)}: {m.group(3)}", text)
    # a tuple of arguments: "(message, <cause>)"
    if text.startswith("('") and "', " in text:
        text = text[2:].replace("', ", ": ", 1).removesuffix(")")
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    for types, kind in EXCEPTIONS:
        if isinstance(exc, types):
            return TransportError(kind, detail)
    return TransportError("other", detail)


class _Response:
    """A ``ClientResponse`` as a `minagent.providers.Response`."""

    __slots__ = ("_response", "headers", "status")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers = {name.lower(): value for name, value in response.headers.items()}

    async def read_chunk(self) -> bytes:
        try:
            return await self._response.content.readany()
        except Exception as exc:
            failure = transport_error(exc)
        raise failure

    def release(self) -> None:
        self._response.release()

    def close(self) -> None:
        self._response.close()


class AiohttpTransport:
    """Sends requests through an ``aiohttp.ClientSession``: its own, one per event loop,
    or the one passed in as ``session`` (used as it is, never closed)."""

    def __init__(
        self, *, session: ClientSession | None = None, trust_env: bool = True
    ) -> None:
        self.trust_env = trust_env
        self._given = session
        self._sessions: LoopBound[ClientSession] = LoopBound(
            lambda: ClientSession(trust_env=self.trust_env)
        )

    @property
    def session(self) -> ClientSession | None:
        """The session in use, once there is one."""
        return self._given if self._given is not None else self._sessions.value

    async def send(self, request: Request) -> _Response:
        session = self._given if self._given is not None else await self._sessions.get()
        times = request.timeouts
        timeout = aiohttp.ClientTimeout(
            total=times.total, connect=times.connect, sock_read=times.read
        )
        try:
            response = await session.request(
                request.method,
                request.url,
                data=request.body,
                headers=dict(request.headers),
                timeout=timeout,
            )
        except Exception as exc:
            failure = transport_error(exc)
        else:
            return _Response(response)
        raise failure

    async def aclose(self) -> None:
        """Close the session this transport opened (idempotent); a session passed in
        stays open."""
        await self._sessions.aclose()


def transport_for(
    transport: Transport | None, *, session: ClientSession | None, trust_env: bool
) -> Transport:
    """What a plugin's constructor sends through: ``transport`` when given, else an
    `AiohttpTransport` over ``session`` (None: its own sessions, trusting the
    environment's proxies when ``trust_env``)."""
    if transport is None:
        return AiohttpTransport(session=session, trust_env=trust_env)
    if session is not None:
        raise ValueError(
            "pass session= or transport=, not both: a transport brings its own connections"
        )
    return transport
