"""A loopback Messages API server (aiohttp.web on 127.0.0.1) and the conformance harness.

`FakeAnthropic` answers ``POST /v1/messages`` from a queue. Each queued item answers one
request and is either

* a kit step (`ScriptedStep`, queued by the ``script_*`` methods of `ScriptedHarness`),
  rendered as a JSON message or as an SSE event stream according to the request's ``stream``
  flag, with the same ids and model either way; or
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
from minagent_anthropic import AnthropicChatClient

from minagent import UsageDetails
from minagent.testing import ScriptedHarness, ScriptedStep

TRANSCRIPTS = Path(__file__).parent / "transcripts"
TRANSCRIPT_NAMES = sorted(p.name for p in TRANSCRIPTS.glob("*.sse"))
COMPLETE = [n for n in TRANSCRIPT_NAMES if n != "error_midstream.sse"]  # ends with message_stop
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
MODEL = "claude-sonnet-4-5"

Handler = Callable[["FakeAnthropic", web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class FakeAnthropic(ScriptedHarness):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    request_id_header = "request-id"

    def __init__(self, *, model: str = MODEL) -> None:
        super().__init__()
        self.model = model
        self.queue: list[ScriptedStep | Handler] = []
        self.headers: list[dict[str, str]] = []
        self.server: TestServer | None = None
        self.closing = asyncio.Event()

    async def __aenter__(self) -> FakeAnthropic:
        app = web.Application()
        app.router.add_post("/v1/messages", self._handle)
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

    def make_client(self, **kwargs: Any) -> AnthropicChatClient:
        kwargs.setdefault("api_key", "sk-ant-test-harness")
        kwargs.setdefault("base_url", self.base_url)
        return AnthropicChatClient(kwargs.pop("model", self.model), **kwargs)

    def reset(self) -> None:
        super().reset()
        self.queue.clear()
        self.headers.clear()

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        return [
            block["content"]
            for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for block in m["content"]
            if block["type"] == "tool_result"
        ]

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [t["name"] for t in body.get("tools", [])]

    async def open_connections(self) -> int:
        assert self.server is not None
        assert self.server.runner is not None
        server = self.server.runner.server
        return len(server.connections) if server is not None else 0

    def add(self, *items: ScriptedStep | Handler) -> FakeAnthropic:
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
            return error_response(500, f"request {len(self.received)} was not scripted")
        item = self.queue.pop(0)
        if isinstance(item, ScriptedStep):
            return await self._render(item, request, body)
        return await item(self, request, body)

    async def _render(self, step: ScriptedStep, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        if step.kind == "error":
            return error_response(step.status, step.message, headers=step.headers)
        message_id = f"msg_fake{len(self.received)}"
        model = body.get("model", self.model)
        if step.kind == "stall":
            return await stall(request, message_id, model, step.text, self.closing)
        blocks: list[dict[str, Any]] = []
        if step.text:
            blocks.append({"type": "text", "text": step.text})
        blocks += [
            {"type": "tool_use", "id": c.call_id, "name": c.name, "input": dict(c.arguments)} for c in step.calls
        ]
        message = whole_message(message_id, model, blocks, "tool_use" if step.calls else "end_turn", step.usage)
        if not body.get("stream"):
            return web.json_response(message, headers={"request-id": f"req_{message_id}"})
        return await send_chunks(request, stream_of(message), headers={"request-id": f"req_{message_id}"})


# --------------------------------------------------------------------------------------------
# Wire rendering


def error_response(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> web.Response:
    body = {
        "type": "error",
        "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message},
        "request_id": "req_body_id",
    }
    return web.json_response(body, status=status, headers=dict(headers or {}))


def usage_json(usage: UsageDetails | None) -> dict[str, Any]:
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {"input_tokens": usage.input_token_count or 0, "output_tokens": usage.output_token_count or 0}


def whole_message(
    message_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str, usage: UsageDetails | None
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage_json(usage),
    }


def event(kind: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n".encode()


def stream_of(message: Mapping[str, Any]) -> bytes:
    """The event stream equivalent to a whole message: text word by word, inputs in two halves."""
    usage = dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    out = [event("message_start", {"message": start}), event("ping", {})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            out.append(event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}))
            for word in re.findall(r"\S+\s*|\s+", block["text"]):
                delta = {"type": "text_delta", "text": word}
                out.append(event("content_block_delta", {"index": index, "delta": delta}))
        elif block["type"] == "tool_use":
            head = {**block, "input": {}}
            out.append(event("content_block_start", {"index": index, "content_block": head}))
            args = json.dumps(block["input"], ensure_ascii=False)
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(event("content_block_delta", {"index": index, "delta": delta}))
        out.append(event("content_block_stop", {"index": index}))
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    out.append(event("message_delta", {"delta": stop, "usage": {"output_tokens": usage["output_tokens"]}}))
    out.append(event("message_stop", {}))
    return b"".join(out)


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


async def stall(
    request: web.Request, message_id: str, model: str, text: str, closing: asyncio.Event
) -> web.StreamResponse:
    """One text delta, then pings until the client leaves (bounded)."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    start = whole_message(message_id, model, [], "end_turn", None)
    start["stop_reason"] = None
    await response.write(event("message_start", {"message": start}))
    await response.write(event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}))
    await response.write(event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}))
    with contextlib.suppress(ConnectionError):
        for _ in range(2000):  # at most ~10 s
            if closing.is_set():
                break
            await asyncio.sleep(0.005)
            await response.write(event("ping", {}))
    return response


# --------------------------------------------------------------------------------------------
# Recorded transcripts


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def sse_payloads(data: bytes) -> list[dict[str, Any]]:
    """The JSON data of each event of an SSE body (a small independent parser for fixtures)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln.startswith("data")]
        if lines:
            out.append(json.loads("\n".join(ln.split(":", 1)[1].removeprefix(" ") for ln in lines)))
    return out


def merge_events(data: bytes) -> dict[str, Any]:
    """The whole message equivalent to a recorded stream (independent of the codec)."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for payload in sse_payloads(data):
        kind = payload["type"]
        if kind == "message_start":
            message = json.loads(json.dumps(payload["message"]))
        elif kind == "content_block_start":
            message["content"].append(dict(payload["content_block"]))
        elif kind == "content_block_delta":
            block, delta = message["content"][payload["index"]], payload["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[payload["index"]] = partial.get(payload["index"], "") + delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
        elif kind == "message_delta":
            message.update(payload["delta"])
            message["usage"].update({k: v for k, v in payload["usage"].items() if v is not None})
    for index, text in partial.items():
        message["content"][index]["input"] = json.loads(text) if text else {}
    return message


def replay(data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its merged message."""

    async def handler(server: FakeAnthropic, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
        if body.get("stream"):
            return await send_chunks(request, data, cuts, pauses, headers=hdrs)
        return web.json_response(merge_events(data), headers=hdrs)

    return handler


def raw(
    status: int = 200,
    body: bytes | str = b"",
    *,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
) -> Handler:
    """Answer with exactly this status, body and headers."""

    async def handler(server: FakeAnthropic, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        data = body.encode() if isinstance(body, str) else body
        return web.Response(status=status, body=data, content_type=content_type, headers=headers)

    return handler


def disconnect_after(data: bytes, n_bytes: int) -> Handler:
    """Send the first ``n_bytes`` of a stream (0: headers only), then drop the connection."""

    async def handler(server: FakeAnthropic, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers=SSE_HEADERS)
        await response.prepare(request)
        if n_bytes:
            await response.write(data[:n_bytes])
        await asyncio.sleep(0.01)
        assert request.transport is not None
        request.transport.abort()
        return response

    return handler
