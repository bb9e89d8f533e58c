"""A loopback Ollama server (aiohttp.web on 127.0.0.1) and the conformance harness.

`FakeOllama` answers ``POST /api/chat`` from a queue. Each queued item answers one request
and is either

* a kit step (`ScriptedStep`, queued by the ``script_*`` methods of `ScriptedHarness`),
  rendered as one JSON body or as an NDJSON stream according to the request's ``stream`` flag,
  with the same model and ``created_at`` either way, as Ollama's API reference shows them
  (text chunk by chunk, tool calls whole in one chunk, then the ``done`` chunk with
  ``done_reason`` and the counts); or
* a handler ``async (server, request, body) -> StreamResponse`` for anything else: recorded
  transcripts cut into chunks, raw bodies, disconnects, silence.

Every request body is recorded (``requests()``), with its headers (``headers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from minagent_ollama import OllamaChatClient

from minagent import UsageDetails
from minagent.testing import ScriptedHarness, ScriptedStep

TRANSCRIPTS = Path(__file__).parent / "transcripts"
CREATED_AT = "2024-07-22T20:33:28.123648Z"
NDJSON_HEADERS = {"Content-Type": "application/x-ndjson"}

Handler = Callable[["FakeOllama", web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]


class FakeOllama(ScriptedHarness):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    request_id_header = "x-request-id"

    def __init__(self, *, model: str = "llama3.2") -> None:
        super().__init__()
        self.model = model
        self.queue: list[ScriptedStep | Handler] = []
        self.headers: list[dict[str, str]] = []
        self.server: TestServer | None = None
        self.closing = asyncio.Event()

    async def __aenter__(self) -> FakeOllama:
        app = web.Application()
        app.router.add_post("/api/chat", self._handle)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closing.set()
        assert self.server is not None
        await self.server.close()

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    # -- the harness ----------------------------------------------------------------------------

    def make_client(self, **kwargs: Any) -> OllamaChatClient:
        kwargs.setdefault("base_url", self.base_url)
        return OllamaChatClient(kwargs.pop("model", self.model), **kwargs)

    def reset(self) -> None:
        super().reset()
        self.queue.clear()
        self.headers.clear()

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        return [m.get("content", "") for m in body["messages"] if m["role"] == "tool"]

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [t["function"]["name"] for t in body.get("tools", [])]

    async def open_connections(self) -> int:
        assert self.server is not None
        assert self.server.runner is not None
        server = self.server.runner.server
        return len(server.connections) if server is not None else 0

    def add(self, *items: ScriptedStep | Handler) -> FakeOllama:
        """Queue answers (steps or handlers), in order."""
        self._sync()
        self.queue.extend(items)
        return self

    def _sync(self) -> None:
        self.queue.extend(self.steps)
        self.steps.clear()

    # -- serving ------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.record(body)
        self.headers.append(dict(request.headers))
        self._sync()
        if not self.queue:
            return web.json_response({"error": f"request {len(self.received)} was not scripted"}, status=599)
        item = self.queue.pop(0)
        if isinstance(item, ScriptedStep):
            return await self._render(item, request, body)
        return await item(self, request, body)

    async def _render(self, step: ScriptedStep, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        if step.kind == "error":
            return web.json_response({"error": step.message}, status=step.status, headers=dict(step.headers))
        meta = {"model": body.get("model", self.model), "created_at": CREATED_AT}
        if step.kind == "stall":
            return await stall(request, meta, step.text, self.closing)
        calls = [{"function": {"name": c.name, "arguments": dict(c.arguments)}} for c in step.calls]
        if body.get("stream") is False:
            return web.json_response(whole(meta, step.text, calls, step.usage))
        return await send_chunks(request, ndjson(stream_chunks(meta, step.text, calls, step.usage)))


# --------------------------------------------------------------------------------------------
# Wire rendering (docs/api.md, "Generate a chat completion")


def final_fields(usage: UsageDetails | None, reason: str = "stop") -> dict[str, Any]:
    out: dict[str, Any] = {"done_reason": reason, "done": True, "total_duration": 885095291}
    if usage is not None:
        out["prompt_eval_count"] = usage.input_token_count
        out["eval_count"] = usage.output_token_count
    return out


def whole(
    meta: Mapping[str, Any],
    text: str,
    calls: Sequence[Mapping[str, Any]] = (),
    usage: UsageDetails | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return {**meta, "message": message, **final_fields(usage)}


def stream_chunks(
    meta: Mapping[str, Any],
    text: str,
    calls: Sequence[Mapping[str, Any]] = (),
    usage: UsageDetails | None = None,
) -> list[dict[str, Any]]:
    """Text word by word, the tool calls whole in one chunk, then the done chunk."""
    chunks = [
        {**meta, "message": {"role": "assistant", "content": word}, "done": False}
        for word in re.findall(r"\S+\s*|\s+", text)
    ]
    if calls:
        chunks.append(
            {**meta, "message": {"role": "assistant", "content": "", "tool_calls": list(calls)}, "done": False}
        )
    chunks.append({**meta, "message": {"role": "assistant", "content": ""}, **final_fields(usage)})
    return chunks


def ndjson(chunks: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(json.dumps(c, ensure_ascii=False).encode() + b"\n" for c in chunks)


async def send_chunks(
    request: web.Request,
    data: bytes,
    cuts: Sequence[int] = (),
    pauses: Sequence[float] = (),
    *,
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    """Stream ``data`` cut at the byte offsets ``cuts``, sleeping ``pauses[i]`` after piece i."""
    response = web.StreamResponse(headers={**NDJSON_HEADERS, **(headers or {})})
    await response.prepare(request)
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    for i, (start, end) in enumerate(itertools.pairwise(bounds)):
        await response.write(data[start:end])
        await asyncio.sleep(pauses[i] if i < len(pauses) else 0)
    await response.write_eof()
    return response


async def stall(request: web.Request, meta: Mapping[str, Any], text: str, closing: asyncio.Event) -> web.StreamResponse:
    """One text chunk, then empty chunks until the client leaves (bounded)."""
    response = web.StreamResponse(headers=NDJSON_HEADERS)
    await response.prepare(request)
    await response.write(ndjson([{**meta, "message": {"role": "assistant", "content": text}, "done": False}]))
    empty = ndjson([{**meta, "message": {"role": "assistant", "content": ""}, "done": False}])
    with contextlib.suppress(ConnectionError):
        for _ in range(2000):  # at most ~10 s
            if closing.is_set():
                break
            await asyncio.sleep(0.005)
            await response.write(empty)
    return response


# --------------------------------------------------------------------------------------------
# Handlers for the transport's own tests


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def merge_chunks(data: bytes) -> dict[str, Any]:
    """The non-streaming body equivalent to a recorded NDJSON stream (for replay in both modes)."""
    lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    last = lines[-1]
    text = "".join(c.get("message", {}).get("content") or "" for c in lines)
    thinking = "".join(c.get("message", {}).get("thinking") or "" for c in lines)
    calls = [call for c in lines for call in c.get("message", {}).get("tool_calls") or []]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if thinking:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = calls
    return {**{k: v for k, v in last.items() if k != "message"}, "message": message}


def replay(data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its merged body."""

    async def handler(server: FakeOllama, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
        if body.get("stream") is not False:
            return await send_chunks(request, data, cuts, pauses, headers=hdrs)
        return web.json_response(merge_chunks(data), headers=hdrs)

    return handler


def raw(
    status: int = 200,
    body: bytes | str = b"",
    *,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
) -> Handler:
    """Answer with exactly this status, body and headers."""

    async def handler(server: FakeOllama, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        data = body.encode() if isinstance(body, str) else body
        return web.Response(status=status, body=data, content_type=content_type, headers=headers)

    return handler


def disconnect_after(data: bytes, n_bytes: int) -> Handler:
    """Send the first ``n_bytes`` of a stream (0: headers only), then drop the connection."""

    async def handler(server: FakeOllama, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers=NDJSON_HEADERS)
        await response.prepare(request)
        if n_bytes:
            await response.write(data[:n_bytes])
        await asyncio.sleep(0.01)
        assert request.transport is not None
        request.transport.abort()
        return response

    return handler


def silence(after_headers: bool = False, first: bytes = b"") -> Handler:
    """Say nothing (or send headers and ``first``, then nothing) until the server closes."""

    async def handler(server: FakeOllama, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers=NDJSON_HEADERS)
        if after_headers or first:
            await response.prepare(request)
        if first:
            await response.write(first)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.closing.wait(), 10)
        return response

    return handler
