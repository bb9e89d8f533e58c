"""What the A2A tests share (spec/hosting.md HS-50 .. HS-70): the app on loopback,
the official `a2a-sdk` client for one agent, raw JSON-RPC through ASGI, and tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.compat.v0_3 import types as v03
from a2a.helpers.proto_helpers import new_message, new_text_part
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Role,
    SendMessageRequest,
    Task,
)
from google.protobuf.json_format import MessageToDict

from minagent import tool
from minagent.hosting import HostingApp
from minagent.hosting.server import serve

# --------------------------------------------------------------------------------------
# helpers


@asynccontextmanager
async def served(app: HostingApp) -> AsyncIterator[str]:
    """The app on loopback; yields its base URL."""
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
        for _ in range(10):
            await asyncio.sleep(0)


# HS-50, HS-71: both protocol versions the host serves: the SDK as it comes (it picks
# 1.0 from the card), and as a 0.3-only client (the card's 0.3 interface only).
both_versions = pytest.mark.parametrize(
    "version", ["1.0", "0.3"], ids=["a2a-1.0", "a2a-0.3"]
)


@asynccontextmanager
async def sdk(
    base: str, name: str, *, streaming: bool, version: str = "1.0"
) -> AsyncIterator[Client]:
    """The SDK's client for one agent, found through its card; with ``version`` "0.3"
    the card is read as a 0.3-only client reads it (its 1.0 interface left out)."""
    async with httpx.AsyncClient(timeout=60) as http:
        factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
        card = await A2ACardResolver(http, f"{base}/a2a/{name}").get_agent_card()
        kept = [i for i in card.supported_interfaces if i.protocol_version == version]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(kept)
        client = factory.create(card)
        # the dialect really spoken: the SDK's transport for that version
        transport = type(client._transport).__name__  # type: ignore[attr-defined]
        expected = "JsonRpcTransport" if version == "1.0" else "CompatJsonRpcTransport"
        assert transport == expected, transport
        try:
            yield client
        finally:
            await client.close()


def user(
    *parts: Any, task_id: str | None = None, context_id: str | None = None
) -> SendMessageRequest:
    built = [new_text_part(p) if isinstance(p, str) else p for p in parts]
    message = new_message(
        built, task_id=task_id, context_id=context_id, role=Role.ROLE_USER
    )
    return SendMessageRequest(message=message)


async def send(client: Client, request: SendMessageRequest) -> list[dict[str, Any]]:
    """Every event the SDK yields for one message, as dicts."""
    return [MessageToDict(e) async for e in client.send_message(request)]


def task_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e["task"] for e in events if "task" in e)


async def settled(client: Client, events: list[dict[str, Any]]) -> Task:
    """The task the events belong to, as `tasks/get` now answers it."""
    return await client.get_task(GetTaskRequest(id=task_of(events)["id"]))


def answer_text(task: Task) -> str:
    (artifact,) = task.artifacts
    assert artifact.name == "answer"
    return "".join(p.text for p in artifact.parts)


async def asgi(
    app: HostingApp,
    method: str,
    path: str,
    body: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """One request straight through ASGI: status, body, headers."""
    sent: list[dict[str, Any]] = []
    chunks = [body]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b""}

    async def send_(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "scheme": "http",
        "headers": [(b"host", b"example.test:8000"), *(headers or [])],
    }
    await app(scope, receive, send_)
    data = b"".join(m.get("body", b"") for m in sent[1:])
    return int(sent[0]["status"]), data, list(sent[0]["headers"])


async def rpc(
    app: HostingApp,
    name: str,
    method: str,
    params: Any,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> dict[str, Any]:
    """A JSON-RPC request through ASGI; the one JSON response (HTTP 200)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    status, data, _ = await asgi(app, "POST", f"/a2a/{name}", body.encode(), headers)
    assert status == 200
    answer: dict[str, Any] = json.loads(data)
    # every answer is a valid A2A 0.3 JSON-RPC response
    if "error" in answer:
        v03.JSONRPCErrorResponse.model_validate(answer)
    elif answer["result"].get("kind") == "task":
        v03.Task.model_validate(answer["result"])
    return answer


def text_message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "message": {
            "kind": "message",
            "role": "user",
            "messageId": "m1",
            "parts": [{"kind": "text", "text": text}],
            **fields,
        }
    }


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


deleted: list[str] = []


class Gate:
    """A tool that waits until the test lets it finish."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

        @tool
        async def slow_work() -> str:
            """Work slowly."""
            self.started.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            return "worked"

        self.tool = slow_work
