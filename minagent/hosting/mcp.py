"""Each hosted agent as an MCP server over Streamable HTTP, mounted on the hosting
application at ``/mcp/{agent}`` (spec/hosting.md HS-170 .. HS-173).

The protocol is the core's `StreamableHTTPEndpoint` (``agent.as_mcp_server()
.http_endpoint()``), the same the aiohttp plugin carries; this module only moves ASGI
requests and answers through it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from minagent import SupportsAgentRun

__all__ = ["MCPMount"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

# JSON-RPC's "invalid request", the code MCP's HTTP errors carry
_INVALID_REQUEST = -32600


class _TooLarge(Exception):
    pass


class _Gone(Exception):
    pass


class MCPMount:
    """The MCP endpoints of ``agents``, one per agent, made on first use (HS-170)."""

    def __init__(self, agents: Mapping[str, SupportsAgentRun], max_body: int) -> None:
        self.agents = agents
        self.max_body = max_body
        self._endpoints: dict[str, Any] = {}

    def _endpoint(self, name: str) -> Any | None:
        endpoint = self._endpoints.get(name)
        if endpoint is None:
            agent = self.agents.get(name)
            as_server = getattr(agent, "as_mcp_server", None)
            if agent is None or not callable(as_server):
                return None
            endpoint = as_server().http_endpoint()
            self._endpoints[name] = endpoint
        return endpoint

    async def __call__(
        self, name: str, scope: Scope, receive: Receive, send: Send
    ) -> int:
        """Answer one request for the agent ``name``; returns the status sent."""
        endpoint = self._endpoint(name)
        if endpoint is None:
            return await _send(
                send,
                404,
                _error(f"no agent named {name!r} is served over MCP"),
                (),
            )
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope.get("headers", ())
        }

        async def read() -> bytes:
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Gone
                chunk = message.get("body", b"")
                size += len(chunk)
                # HS-172: the application's body cap holds here too
                if size > self.max_body:
                    raise _TooLarge
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)

        try:
            answer = await endpoint.handle(scope["method"], headers, read)
        except _TooLarge:
            return await _send(
                send, 413, _error(f"request body over {self.max_body} bytes"), ()
            )
        except _Gone:
            # the client left before its request arrived: nobody reads an answer
            return 499
        return await _send(send, answer.status, answer.body, answer.headers)

    async def close(self) -> None:
        """HS-173: cancel every running call of every endpoint."""
        endpoints, self._endpoints = list(self._endpoints.values()), {}
        for endpoint in endpoints:
            await endpoint.close()


def _error(message: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": _INVALID_REQUEST, "message": message},
        }
    ).encode()


async def _send(
    send: Send, status: int, body: bytes, headers: tuple[tuple[str, str], ...]
) -> int:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if body and not any(k == b"content-type" for k, _ in raw):
        raw.append((b"content-type", b"application/json"))
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
    return status
