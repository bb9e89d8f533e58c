"""A loopback Chat Completions server (aiohttp.web on 127.0.0.1) and the conformance harness.

`FakeOpenAI` answers ``POST /v1/chat/completions`` from a queue. Each queued item answers one
request and is either

* a kit step (`ScriptedStep`, queued by the ``script_*`` methods of `ScriptedHarness`),
  rendered as a JSON body or as an SSE stream according to the request's ``stream`` flag,
  with the same id, model and ``created`` either way; or
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
from minagent_openai import OpenAIChatClient

from minagent import UsageDetails
from minagent.testing import ScriptedHarness, ScriptedStep

TRANSCRIPTS = Path(__file__).parent / "transcripts"
CREATED = 1715000000
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

Handler = Callable[["FakeOpenAI", web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]


class FakeOpenAI(ScriptedHarness):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    request_id_header = "x-request-id"

    def __init__(self, *, model: str = "gpt-4o-mini") -> None:
        super().__init__()
        self.model = model
        self.queue: list[ScriptedStep | Handler] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # the path of each request
        self.queries: list[list[tuple[str, str]]] = []  # its query parameters, in order
        self.targets: list[str] = []  # its request target as sent (absolute through a proxy)
        self.server: TestServer | None = None
        self.closing = asyncio.Event()
        self.handlers_running = 0

    # -- life cycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._handle)  # every path: Azure deployments, proxies
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
        return f"http://127.0.0.1:{self.server.port}/v1"

    # -- the harness ----------------------------------------------------------------------------

    def make_client(self, **kwargs: Any) -> OpenAIChatClient:
        kwargs.setdefault("api_key", "sk-test-harness")
        kwargs.setdefault("base_url", self.base_url)
        return OpenAIChatClient(kwargs.pop("model", self.model), **kwargs)

    def reset(self) -> None:
        super().reset()
        self.queue.clear()
        self.headers.clear()
        self.paths.clear()
        self.queries.clear()
        self.targets.clear()

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [t["function"]["name"] for t in body.get("tools", [])]

    async def open_connections(self) -> int:
        assert self.server is not None
        assert self.server.runner is not None
        server = self.server.runner.server
        return len(server.connections) if server is not None else 0

    # The kit's script_* methods append to self.steps; _sync moves them to the one queue.
    def add(self, *items: ScriptedStep | Handler) -> FakeOpenAI:
        """Queue answers (steps or handlers), in order."""
        self._sync()
        self.queue.extend(items)
        return self

    def _sync(self) -> None:
        self.queue.extend(self.steps)
        self.steps.clear()

    # -- serving ------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.handlers_running += 1
        try:
            body = await request.json()
            self.record(body)
            self.headers.append(dict(request.headers))
            self.paths.append(request.path)
            self.queries.append(list(request.query.items()))
            self.targets.append(request._message.path)
            self._sync()
            if not self.queue:
                return web.json_response(
                    {"error": {"message": f"request {len(self.received)} was not scripted"}},
                    status=599,
                )
            item = self.queue.pop(0)
            if isinstance(item, ScriptedStep):
                return await self._render(item, request, body)
            return await item(self, request, body)
        finally:
            self.handlers_running -= 1

    async def _render(self, step: ScriptedStep, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        if step.kind == "error":
            return web.json_response(
                {"error": {"message": step.message, "type": "error", "param": None, "code": None}},
                status=step.status,
                headers=dict(step.headers),
            )
        meta = {
            "id": f"chatcmpl-fake{len(self.received)}",
            "created": CREATED,
            "model": body.get("model", self.model),
        }
        if step.kind == "stall":
            return await stall(request, meta, step.text, self.closing)
        calls = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
            }
            for c in step.calls
        ]
        if not body.get("stream"):
            return web.json_response(completion(meta, step.text or None, calls, step.usage))
        return await send_chunks(request, sse(stream_chunks(meta, step.text, calls, step.usage)))


# --------------------------------------------------------------------------------------------
# Wire rendering


def usage_json(usage: UsageDetails | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.input_token_count,
        "completion_tokens": usage.output_token_count,
        "total_tokens": usage.total_token_count,
    }


def completion(
    meta: Mapping[str, Any],
    text: str | None,
    calls: Sequence[Mapping[str, Any]] = (),
    usage: UsageDetails | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = list(calls)
    body: dict[str, Any] = {
        **meta,
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage_json(usage)
    return body


def stream_chunks(
    meta: Mapping[str, Any],
    text: str,
    calls: Sequence[Mapping[str, Any]] = (),
    usage: UsageDetails | None = None,
) -> list[dict[str, Any]]:
    """The chunks of a stream: role, text word by word, calls in fragments, finish, usage."""
    base = {**meta, "object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": word}) for word in re.findall(r"\S+\s*|\s+", text)]
    for index, call in enumerate(calls):
        head = {"index": index, "id": call["id"], "type": "function"}
        fn = call["function"]
        chunks.append(chunk({"tool_calls": [{**head, "function": {"name": fn["name"], "arguments": ""}}]}))
        args = fn["arguments"]
        for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    if usage is not None:
        chunks.append({**base, "choices": [], "usage": usage_json(usage)})
    return chunks


def sse(chunks: Sequence[Mapping[str, Any]], *, done: bool = True) -> bytes:
    out = b"".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n".encode() for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


async def send_chunks(
    request: web.Request,
    data: bytes,
    cuts: Sequence[int] = (),
    pauses: Sequence[float] = (),
    *,
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    """Stream ``data`` cut at the byte offsets ``cuts``, sleeping ``pauses[i]`` after piece i."""
    response = web.StreamResponse(headers={**SSE_HEADERS, **(headers or {})})
    await response.prepare(request)
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    for i, (start, end) in enumerate(itertools.pairwise(bounds)):
        await response.write(data[start:end])
        await asyncio.sleep(pauses[i] if i < len(pauses) else 0)
    await response.write_eof()
    return response


async def stall(request: web.Request, meta: Mapping[str, Any], text: str, closing: asyncio.Event) -> web.StreamResponse:
    """One text delta, then keep-alive comments until the client leaves (bounded)."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    first = {**meta, "object": "chat.completion.chunk"}
    first["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": text}}]
    await response.write(sse([first], done=False))
    with contextlib.suppress(ConnectionError):
        for _ in range(2000):  # at most ~10 s
            if closing.is_set():
                break
            await asyncio.sleep(0.005)
            await response.write(b": still thinking\n\n")
    return response


# --------------------------------------------------------------------------------------------
# Handlers for the transport's own tests


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def sse_payloads(data: bytes) -> list[str]:
    """The data of each event of an SSE body (a small independent parser for fixtures)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln.startswith("data")]
        if lines:
            out.append("\n".join(ln.split(":", 1)[1].removeprefix(" ") for ln in lines))
    return [p for p in out if p.strip() != "[DONE]"]


def merge_chunks(data: bytes) -> dict[str, Any]:
    """The non-streaming body equivalent to a recorded stream (for replay in both modes)."""
    meta: dict[str, Any] = {}
    text, calls, finish, usage = "", [], None, None
    current: dict[int, int] = {}  # tool-call index -> position in calls
    for payload in sse_payloads(data):
        chunk = json.loads(payload)
        for key in ("id", "created", "model"):
            if chunk.get(key) and key not in meta:
                meta[key] = chunk[key]
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                index = tc.get("index", 0)
                known = current.get(index)
                if known is None or (tc.get("id") and tc["id"] != calls[known]["id"]):
                    current[index] = len(calls)
                    calls.append(
                        {
                            "id": tc.get("id"),
                            "type": "function",
                            "function": {"name": "", "arguments": ""},
                        }
                    )
                call = calls[current[index]]
                fn = tc.get("function") or {}
                call["function"]["name"] += fn.get("name") or ""
                call["function"]["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    body = {
        **meta,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = usage
    return body


def replay(data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its merged body."""

    async def handler(server: FakeOpenAI, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
        if body.get("stream"):
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

    async def handler(server: FakeOpenAI, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        data = body.encode() if isinstance(body, str) else body
        return web.Response(status=status, body=data, content_type=content_type, headers=headers)

    return handler


def disconnect_after(data: bytes, n_bytes: int, **headers: str) -> Handler:
    """Send the first ``n_bytes`` of a stream (0: headers only), then drop the connection."""

    async def handler(server: FakeOpenAI, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers={**SSE_HEADERS, **{k.replace("_", "-"): v for k, v in headers.items()}})
        await response.prepare(request)
        if n_bytes:
            await response.write(data[:n_bytes])
        await asyncio.sleep(0.01)
        assert request.transport is not None
        request.transport.abort()
        return response

    return handler


def silence(after_headers: bool = False) -> Handler:
    """Say nothing (or send headers, then nothing) until the server closes (for timeouts)."""

    async def handler(server: FakeOpenAI, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers=SSE_HEADERS)
        if after_headers:
            await response.prepare(request)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.closing.wait(), 10)
        return response

    return handler


async def collect_texts(stream: Any, texts: list[str]) -> None:
    """Consume a stream, appending each update's text to ``texts`` as it arrives."""
    async for update in stream:
        texts.append(update.text)
