"""A minimal standard-library asyncio HTTP/1.1 server for an ASGI 3 application
(spec/hosting.md HS-7): one request per connection (``Connection: close``), bodies
read by ``Content-Length``, responses without a length sent chunked. The start of
``python -m minagent serve``; keep-alive, disconnect detection and graceful shutdown
are not in this slice."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["serve"]

App = Callable[
    [dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Any], Awaitable[None]
]

_log = logging.getLogger("minagent.hosting")

# HS-7: caps on the request head.
MAX_HEADER_BYTES = 16_384


async def _handle(
    app: App, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers: list[tuple[bytes, bytes]] = []
    length = 0
    for line in lines[1:]:
        if not line:
            continue
        key, _, value = line.partition(":")
        headers.append((key.strip().lower().encode(), value.strip().encode()))
        if key.strip().lower() == "content-length":
            length = int(value.strip())
    path, _, query = target.partition("?")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method.upper(),
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": headers,
        "scheme": "http",
    }
    remaining = length
    chunked = False

    async def receive() -> dict[str, Any]:
        nonlocal remaining
        size = min(remaining, 65_536)
        body = await reader.readexactly(size) if size else b""
        remaining -= size
        return {"type": "http.request", "body": body, "more_body": remaining > 0}

    async def send(message: dict[str, Any]) -> None:
        nonlocal chunked
        if message["type"] == "http.response.start":
            out = [f"HTTP/1.1 {message['status']} X".encode()]
            names = set()
            for key, value in message.get("headers", []):
                names.add(bytes(key).lower())
                out.append(bytes(key) + b": " + bytes(value))
            if b"content-length" not in names:
                chunked = True
                out.append(b"transfer-encoding: chunked")
            out.append(b"connection: close")
            writer.write(b"\r\n".join(out) + b"\r\n\r\n")
        elif message["type"] == "http.response.body":
            body = bytes(message.get("body", b""))
            if chunked:
                if body:
                    writer.write(b"%x\r\n" % len(body) + body + b"\r\n")
                if not message.get("more_body", False):
                    writer.write(b"0\r\n\r\n")
            else:
                writer.write(body)
            await writer.drain()

    try:
        await app(scope, receive, send)
    finally:
        writer.close()


async def serve(
    app: App, host: str = "127.0.0.1", port: int = 0
) -> asyncio.base_events.Server:
    """Start serving ``app``; the caller closes the returned server (HS-7)."""

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await _handle(app, reader, writer)

    return await asyncio.start_server(handle, host, port, limit=MAX_HEADER_BYTES)
