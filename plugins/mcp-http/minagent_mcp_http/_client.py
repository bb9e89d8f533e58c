"""`MCPStreamableHTTPTool`: an MCP server over Streamable HTTP as tools (spec/mcp.md,
MCP-40, MCP-41).

Theory of operation
-------------------
The transport turns HTTP exchanges into the message stream `minagent`'s MCP session
reads:

    send(request)       POST; an HTTP error raises at once (the caller's request fails,
    the
                        session lives on); a JSON answer is queued; an SSE answer is
                        read by a task that queues every message and, when the stream
                        breaks before its answer, resumes it once with GET +
                        Last-Event-ID
    send(notification)  POST; 202 expected after initialized   one GET stream for
    messages the server sends unprompted (405: none) receive()           the next queued
    message; a queued exception ends the session aclose()            cancel the readers,
    DELETE the session, close the HTTP client

What the server can make the client hold is bounded (MCP-44, MCP-45): a JSON answer and
an SSE event at most ``MAX_MESSAGE_BYTES`` (the stdio line limit), an error body read to
64 KiB, and at most 64 queued messages (a reader waits for room). An SSE answer that
ends without the answer to its request fails that request at once with a `RequestFailed`
(MCP-46).

Every later request carries ``Mcp-Session-Id`` (from the initialize answer) and
``MCP-Protocol-Version`` (the negotiated one). The caller's headers are sent with every
request and appear nowhere else: not in a repr, an error or a log line (MCP-41).

The bytes move through a `minagent.providers.Transport`: by default the aiohttp
transport of ``minagent_http``, the chat providers' own (one session per connection and
event loop, every library exception mapped by its one table to a `TransportError`), so
this module imports no HTTP library.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
from collections.abc import Collection, Mapping
from typing import Any

from minagent_http import AiohttpTransport

from minagent.mcp.client import MCPTool, ProgressCallback
from minagent.mcp.jsonrpc import (
    MAX_MESSAGE_BYTES,
    MAX_PEER_REQUESTS,
    MCPConnectionError,
    MCPProtocolError,
    RequestFailed,
    Transport,
    decode_message,
    encode_message,
)
from minagent.providers import (
    Request,
    Response,
    SSEDecoder,
    SSELimitError,
    Timeouts,
    TransportError,
)
from minagent.providers import Transport as HTTPTransport

__all__ = ["MCPStreamableHTTPTool"]

logger = logging.getLogger("minagent.mcp")

_QUEUE_END: Any = object()
_TIMEOUTS = Timeouts(connect=30.0)  # a stream may stay open as long as the server wants
# bytes of an HTTP error's body read for its message (MCP-45)
MAX_ERROR_BODY = 64 * 1024


async def _body(response: Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the body, and whether that was all of it (MCP-45)."""
    data = bytearray()
    while chunk := await response.read_chunk():
        data += chunk
        if len(data) > limit:
            return bytes(data[:limit]), False
    return bytes(data), True


def _content_type(response: Response) -> str:
    return response.headers.get("content-type", "").partition(";")[0].strip().lower()


class _HTTPTransport:
    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        name: str,
        http: HTTPTransport,
        *,
        delete_on_close: bool,
    ) -> None:
        self.delete_on_close = delete_on_close
        self.url = url
        self.name = name
        self._headers = dict(headers)
        self._http = http
        # readers wait for room (MCP-44)
        self._queue: asyncio.Queue[Any] = asyncio.Queue(MAX_PEER_REQUESTS)
        self._tasks: set[asyncio.Task[None]] = set()
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._listening = False

    def _request_headers(self, accept: str) -> dict[str, str]:
        headers = {**self._headers, "Accept": accept}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _spawn(self, coro: Any, what: str) -> None:
        task = asyncio.create_task(coro, name=f"mcp-http-{what}:{self.name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _error(self, response: Response, body: str) -> MCPConnectionError:
        if response.status == 404 and self.session_id is not None:
            return MCPConnectionError(
                f"MCP server {self.name!r}: the session has expired (HTTP 404); connect again",
                server=self.name,
            )
        try:
            reason = http.HTTPStatus(response.status).phrase
        except ValueError:
            reason = ""
        return MCPConnectionError(
            f"MCP server {self.name!r} answered HTTP {response.status} {reason}: {body[:200]}",
            server=self.name,
        )

    async def _request(
        self, method: str, headers: Mapping[str, str], body: bytes = b""
    ) -> Response:
        return await self._http.send(
            Request(method, self.url, headers, body, _TIMEOUTS)
        )

    async def send(self, message: dict[str, Any]) -> None:
        headers = self._request_headers("application/json, text/event-stream")
        headers["Content-Type"] = "application/json"
        try:
            response = await self._request("POST", headers, encode_message(message))
        except TransportError as exc:
            raise MCPConnectionError(
                f"MCP server {self.name!r} cannot be reached: {exc.detail}",
                server=self.name,
            ) from None
        try:
            if response.status >= 400:
                body, _whole = await _body(response, MAX_ERROR_BODY)
                raise self._error(response, body.decode("utf-8", "replace"))
            session_id = response.headers.get("mcp-session-id")
            if session_id and message.get("method") == "initialize":
                self.session_id = session_id
            if "method" in message and "id" in message:
                await self._answer(response, message["id"])
                return
        except TransportError as exc:
            response.close()
            raise MCPConnectionError(
                f"MCP server {self.name!r}: the answer broke: {exc.detail}",
                server=self.name,
            ) from None
        except BaseException:
            response.close()  # the body may be unread: the connection goes (PV-30)
            raise
        response.release()
        if message.get("method") == "notifications/initialized" and not self._listening:
            self._listening = True
            self._spawn(self._listen(), "get")

    async def _answer(self, response: Response, request_id: int | str) -> None:
        kind = _content_type(response)
        if kind == "application/json":
            body, whole = await _body(response, MAX_MESSAGE_BYTES)
            if not whole:
                raise self._too_long()
            response.release()
            await self._queue.put(decode_message(body, server=self.name))
        elif kind == "text/event-stream":
            self._spawn(self._read_stream(response, request_id, resume=True), "sse")
        else:
            raise MCPProtocolError(
                f"MCP server {self.name!r} answered a request with Content-Type {kind!r}",
                server=self.name,
            )

    def _too_long(self) -> MCPProtocolError:
        return MCPProtocolError(
            f"MCP server {self.name!r} sent a message longer than {MAX_MESSAGE_BYTES} bytes",
            server=self.name,
        )

    async def _read_stream(
        self, response: Response, request_id: int | str | None, *, resume: bool
    ) -> None:
        """Queue every message of an SSE stream; resume once with Last-Event-ID if it
        breaks. A stream that answers ``request_id`` and ends without the answer fails
        it (MCP-46)."""
        decoder = SSEDecoder(max_line_size=MAX_MESSAGE_BYTES)
        answered = request_id is None
        try:
            while chunk := await response.read_chunk():
                for event in decoder.feed(chunk):
                    if event.event == "message" and event.data.strip():
                        message = decode_message(event.data, server=self.name)
                        answered = answered or (
                            "method" not in message and message.get("id") == request_id
                        )
                        await self._queue.put(message)
        except TransportError as exc:
            if not (resume and decoder.last_event_id):
                broken = (
                    f"MCP server {self.name!r}: the event stream broke: {exc.detail}"
                )
                await self._queue.put(MCPConnectionError(broken, server=self.name))
                return
        except SSELimitError:
            await self._queue.put(self._too_long())
            return
        except MCPProtocolError as exc:
            await self._queue.put(exc)
            return
        else:
            if not answered:
                assert request_id is not None
                ended = f"MCP server {self.name!r}: the event stream ended without the answer to request {request_id!r}"
                await self._queue.put(
                    RequestFailed(
                        request_id, MCPConnectionError(ended, server=self.name)
                    )
                )
            return
        finally:
            response.release()
        await self._resume(decoder.last_event_id, request_id)

    async def _resume(
        self, last_event_id: str | None, request_id: int | str | None
    ) -> None:
        headers = self._request_headers("text/event-stream")
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        try:
            response = await self._request("GET", headers)
        except TransportError as exc:
            failed = f"MCP server {self.name!r}: cannot resume: {exc.detail}"
            await self._queue.put(MCPConnectionError(failed, server=self.name))
            return
        if response.status != 200:
            response.release()
            failed = (
                f"MCP server {self.name!r}: resuming answered HTTP {response.status}"
            )
            await self._queue.put(MCPConnectionError(failed, server=self.name))
            return
        await self._read_stream(response, request_id, resume=False)

    async def _listen(self) -> None:
        """The GET stream for messages the server sends on its own; 405 means it offers
        none."""
        try:
            response = await self._request(
                "GET", self._request_headers("text/event-stream")
            )
        except TransportError as exc:
            logger.info("MCP %s: no GET stream: %s", self.name, exc.detail)
            return
        if response.status != 200 or _content_type(response) != "text/event-stream":
            response.release()
            return
        await self._read_stream(response, None, resume=True)

    async def receive(self) -> dict[str, Any] | RequestFailed | None:
        item = await self._queue.get()
        if item is _QUEUE_END:
            return None
        if isinstance(item, Exception):
            raise item
        return item  # type: ignore[no-any-return]  # a message or a RequestFailed

    async def aclose(self) -> None:
        await asyncio.shield(self._shutdown())

    async def _shutdown(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        try:
            if self.session_id is not None and self.delete_on_close:
                with contextlib.suppress(TransportError, TimeoutError):
                    async with asyncio.timeout(5):
                        response = await self._request(
                            "DELETE", self._request_headers("application/json")
                        )
                        response.release()
        finally:
            await self._http.aclose()
            # the readers are gone: what they queued is not read any more
            while self._queue.full():
                self._queue.get_nowait()
            self._queue.put_nowait(_QUEUE_END)


class MCPStreamableHTTPTool(MCPTool):
    """An MCP server reached over Streamable HTTP (MCP-40); ``headers`` are never logged
    (MCP-41)."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        tool_name_prefix: str | None = None,
        allowed_tools: Collection[str] | None = None,
        request_timeout: float | None = 60.0,
        load_prompts: bool = False,
        description: str | None = None,
        approval_mode: Any = "never_require",
        progress_callback: ProgressCallback | None = None,
        load_tools: bool = True,
        terminate_on_close: bool = True,
        additional_properties: Mapping[str, Any] | None = None,
        **unsupported: Any,
    ) -> None:
        for key, hint in (
            (
                "http_client",
                "the plugin uses its own HTTP session; pass headers=... for what the client added",
            ),
            ("header_provider", "pass the headers with headers=..."),
        ):
            if key in unsupported:
                raise TypeError(f"MCP tool argument {key}=...: {hint}")
        super().__init__(
            name,
            description=description,
            tool_name_prefix=tool_name_prefix,
            allowed_tools=allowed_tools,
            request_timeout=request_timeout,
            load_prompts=load_prompts,
            approval_mode=approval_mode,
            progress_callback=progress_callback,
            load_tools=load_tools,
            additional_properties=additional_properties,
            **unsupported,
        )
        self.terminate_on_close = terminate_on_close
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http:// or https:// URL, got {url!r}")
        self.url = url
        self._headers = dict(headers or {})

    @property
    def session_id(self) -> str | None:
        transport = self._transport
        return transport.session_id if isinstance(transport, _HTTPTransport) else None

    async def _open_transport(self) -> Transport:
        # its session opens with the first request
        http = AiohttpTransport(trust_env=False)
        return _HTTPTransport(
            self.url,
            self._headers,
            self.name,
            http,
            delete_on_close=self.terminate_on_close,
        )

    def _initialized(self, protocol_version: str) -> None:
        if isinstance(self._transport, _HTTPTransport):
            self._transport.protocol_version = protocol_version
