"""Safe by default: an ASGI wrapper around any application (spec/hosting.md HS-120 ..
HS-127), applied by ``python -m minagent serve`` and usable under any ASGI server.

Theory of operation
-------------------
`Guard` checks a request before the application sees it, in this order: a CORS
preflight is answered by the guard itself (only for an allowed origin); a request
from a browser origin that is not allowed is refused; a missing or wrong bearer token
is refused. A POST is a run: it counts against the cap on concurrent runs (over the
cap: 429 with ``Retry-After``) and against the per-run time limit.

The application runs in a task of its own. A pump task owns the server's
``receive()``: it hands the body to the application through a one-slot queue and, once
the body is read, keeps waiting for ``http.disconnect``; when that comes, the
application's task is cancelled (the run is cancelled, its session not saved). The
guard's own answers (401, 403, 429, 504, and a 500 for an application that raised
before answering) are OpenAI-shaped JSON with no traceback, exception text or token.
One access-log line per request goes to the ``minagent.hosting.access`` logger:
method, path (without the query string), status and duration.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

__all__ = ["Guard"]

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Mapping[str, Any], Receive, Send], Awaitable[None]]

access_log = logging.getLogger("minagent.hosting.access")
_log = logging.getLogger("minagent.hosting")

_ALLOW_METHODS = b"GET, POST, DELETE, OPTIONS"


def _error(message: str, type_: str, code: str) -> bytes:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return json.dumps(body).encode()


class Guard:
    """Wrap ``app`` with the safe-by-default rules (HS-120).

    ``token``: the bearer token every request must carry (None: no token needed).
    ``cors_origins``: the browser origins allowed (empty: CORS off; ``"*"``: any).
    ``max_runs``: concurrent runs (POST requests) at most, per process.
    ``run_timeout``: seconds a run may take.
    ``public_paths``: paths whose GET (and HEAD) is answered without the token — a
    page's static files, which hold no secret (HS-121).
    """

    def __init__(
        self,
        app: App,
        *,
        token: str | None = None,
        cors_origins: Collection[str] = (),
        max_runs: int = 16,
        run_timeout: float = 300.0,
        retry_after: int = 1,
        public_paths: Collection[str] = (),
    ) -> None:
        if token is not None and (
            not token or token != token.strip() or not token.isprintable()
        ):
            raise ValueError(
                "the token must be non-empty printable text without surrounding spaces"
            )
        if max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, got {max_runs!r}")
        if not run_timeout > 0:
            raise ValueError(f"run_timeout must be positive, got {run_timeout!r}")
        for origin in cors_origins:
            if origin != "*" and (
                not origin.startswith(("http://", "https://")) or origin.endswith("/")
            ):
                raise ValueError(
                    f"a CORS origin is scheme://host[:port] without a path, got {origin!r}"
                )
        for path in public_paths:
            if not isinstance(path, str) or not path.startswith("/"):
                raise ValueError(f"a public path starts with '/', got {path!r}")
        self.app = app
        self.public_paths = frozenset(public_paths)
        self._token = token.encode() if token is not None else None
        self.cors_origins = frozenset(cors_origins)
        self.max_runs = max_runs
        self.run_timeout = run_timeout
        self.retry_after = retry_after
        self.running = 0

    def __repr__(self) -> str:
        # the token is never shown
        return (
            f"Guard({self.app!r}, token={'set' if self._token else None}, "
            f"cors_origins={sorted(self.cors_origins)!r}, max_runs={self.max_runs})"
        )

    async def __call__(
        self, scope: Mapping[str, Any], receive: Receive, send: Send
    ) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            # HS-120: only HTTP is guarded; other scopes (websocket) are refused.
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            raise ValueError(f"unsupported ASGI scope type {scope['type']!r}")
        started = time.monotonic()
        exchange = _Exchange(send)
        try:
            await self._http(scope, receive, exchange)
        finally:
            # HS-127: one line per request; never headers, never the query string.
            access_log.info(
                "%s %s %d %.3fs%s",
                scope.get("method", "?"),
                scope.get("path", "?"),
                exchange.status,
                time.monotonic() - started,
                f" ({exchange.outcome})" if exchange.outcome else "",
            )

    def _origin_allowed(self, origin: str) -> bool:
        return "*" in self.cors_origins or origin in self.cors_origins

    async def _http(
        self, scope: Mapping[str, Any], receive: Receive, exchange: _Exchange
    ) -> None:
        headers = _headers(scope)
        origin = headers.get(b"origin")
        method = scope.get("method", "")
        if origin is not None:
            text = origin.decode("latin-1")
            if not self._origin_allowed(text):
                # HS-122: CORS is off unless an allowlist is given; a browser request
                # (preflight or not) from another origin is refused before it runs.
                await exchange.error(
                    403,
                    f"the origin {text!r} is not allowed",
                    "invalid_request_error",
                    "origin_not_allowed",
                )
                return
            exchange.cors = [
                (b"access-control-allow-origin", origin),
                (b"vary", b"origin"),
            ]
            if method == "OPTIONS" and b"access-control-request-method" in headers:
                requested = headers.get(b"access-control-request-headers", b"")
                await exchange.respond(
                    204,
                    b"",
                    [
                        (b"access-control-allow-methods", _ALLOW_METHODS),
                        (
                            b"access-control-allow-headers",
                            requested or b"authorization, content-type",
                        ),
                        (b"access-control-max-age", b"600"),
                    ],
                )
                return
        public = method in ("GET", "HEAD") and scope.get("path") in self.public_paths
        if self._token is not None and not public:
            # HS-121: compared in constant time; the token is never echoed or logged.
            scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(
                given.strip(), self._token
            ):
                await exchange.respond(
                    401,
                    _error(
                        "missing or invalid bearer token",
                        "invalid_request_error",
                        "invalid_api_key",
                    ),
                    [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b"Bearer"),
                    ],
                )
                return
        is_run = method == "POST"
        if is_run and self.running >= self.max_runs:
            # HS-124: over the cap of concurrent runs.
            await exchange.respond(
                429,
                _error(
                    f"too many runs at once (at most {self.max_runs}); retry later",
                    "requests",
                    "rate_limit_exceeded",
                ),
                [
                    (b"content-type", b"application/json"),
                    (b"retry-after", str(self.retry_after).encode()),
                ],
            )
            return
        if is_run:
            self.running += 1
        try:
            await self._run(
                scope, receive, exchange, self.run_timeout if is_run else None
            )
        finally:
            if is_run:
                self.running -= 1

    async def _run(
        self,
        scope: Mapping[str, Any],
        receive: Receive,
        exchange: _Exchange,
        limit: float | None,
    ) -> None:
        inbox: asyncio.Queue[Message] = asyncio.Queue(maxsize=1)
        gone = asyncio.Event()

        async def pump() -> None:
            # HS-125: the body goes to the application; after it, a disconnect
            # cancels the application's task.
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    return
                await inbox.put(message)

        async def app_receive() -> Message:
            if gone.is_set():
                return {"type": "http.disconnect"}
            getting = asyncio.ensure_future(inbox.get())
            waiting = asyncio.ensure_future(gone.wait())
            try:
                await asyncio.wait(
                    {getting, waiting}, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                for future in (getting, waiting):
                    future.cancel()
            if getting.done() and not getting.cancelled():
                return getting.result()
            return {"type": "http.disconnect"}

        pumping = asyncio.create_task(pump())
        task = asyncio.ensure_future(self.app(scope, app_receive, exchange.send))
        try:
            watcher = asyncio.ensure_future(gone.wait())
            try:
                done, _ = await asyncio.wait(
                    {task, watcher},
                    timeout=limit,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                watcher.cancel()
            if task not in done:
                task.cancel()
                await _settle(task)
                if gone.is_set():
                    # HS-125: the client went away; nothing more is sent.
                    exchange.status, exchange.outcome = 499, "client disconnected"
                elif not exchange.started:
                    # HS-123: the run took too long.
                    exchange.outcome = "run timed out"
                    await exchange.error(
                        504,
                        f"the run took longer than {limit:g} seconds",
                        "server_error",
                        "run_timeout",
                    )
                else:
                    # HS-123: the answer had started; it is cut off (not completed),
                    # so the client sees a broken stream rather than a short one.
                    exchange.outcome = "run timed out"
                return
            error = None if task.cancelled() else task.exception()
            if task.cancelled():
                exchange.outcome = "application cancelled"
            elif error is not None and (exchange.send_failed or gone.is_set()):
                # HS-125: the client went away while the answer was being sent.
                exchange.status, exchange.outcome = 499, "client disconnected"
            elif error is not None:
                # HS-126: no traceback, no exception text in the body or the log line
                # (either may hold a secret); the type goes to the log.
                exchange.outcome = f"application raised {type(error).__name__}"
                _log.error(
                    "hosting: %s %s: the application raised %s",
                    scope.get("method"),
                    scope.get("path"),
                    type(error).__name__,
                )
                if not exchange.started and not gone.is_set():
                    await exchange.error(
                        500, "internal server error", "server_error", "internal_error"
                    )
        finally:
            if not task.done():
                # the guard itself was cancelled (server shutdown)
                task.cancel()
                await _settle(task)
            pumping.cancel()
            await _settle(pumping)


async def _settle(task: asyncio.Future[Any]) -> None:
    # Wait for a task we cancelled without raising its end (our cancel, its error)
    # into this frame, and take its exception so that asyncio does not log it. (A
    # cancel of the guard's own task still goes on.)
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()


class _Exchange:
    """The response side of one request, as the guard sees it."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 0
        self.started = False
        self.outcome = ""
        self.send_failed = False
        self.cors: list[tuple[bytes, bytes]] = []

    async def send(self, message: Message) -> None:
        if message.get("type") == "http.response.start" and not self.started:
            if self.cors:
                message = {
                    **message,
                    "headers": [*message.get("headers", []), *self.cors],
                }
            status = int(message["status"])
        else:
            status = 0
        try:
            await self._send(message)
        except OSError:
            # the server's word for a client that is gone (ASGI: an OSError)
            self.send_failed = True
            raise
        if status:
            self.started, self.status = True, status

    async def respond(
        self, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
    ) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())],
            }
        )
        await self.send({"type": "http.response.body", "body": body})

    async def error(self, status: int, message: str, type_: str, code: str) -> None:
        await self.respond(
            status,
            _error(message, type_, code),
            [(b"content-type", b"application/json")],
        )


def _headers(scope: Mapping[str, Any]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for key, value in scope.get("headers", []):
        name = bytes(key).lower()
        out[name] = out[name] + b", " + bytes(value) if name in out else bytes(value)
    return out
