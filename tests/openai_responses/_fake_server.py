"""A loopback Responses API server (aiohttp.web on 127.0.0.1) and the conformance harness.

`FakeResponses` answers ``POST /v1/responses`` from a queue, like the Chat Completions fake of
``tests/openai``: a queued kit step (`ScriptedStep`) is rendered as a whole ``response`` object
or, when the request streams, as the event sequence the service sends for it (``events``); a
queued handler answers anything else (recorded transcripts cut into chunks, raw bodies,
disconnects). Every request body and its headers are recorded.

``response_body`` and ``events`` are also how the transcripts in ``transcripts/`` were made:
``events`` turns a whole response into the stream the service sends for it, event by event.
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
from minagent_openai import OpenAIResponsesClient

from minagent import UsageDetails
from minagent.testing import ScriptedHarness, ScriptedStep

TRANSCRIPTS = Path(__file__).parent / "transcripts"
CREATED = 1715000000
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

Handler = Callable[["FakeResponses", web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]


class FakeResponses(ScriptedHarness):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    request_id_header = "x-request-id"

    def __init__(self, *, model: str = "gpt-5-mini") -> None:
        super().__init__()
        self.model = model
        self.queue: list[ScriptedStep | Handler] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.queries: list[dict[str, str]] = []
        self.server: TestServer | None = None
        self.closing = asyncio.Event()

    async def __aenter__(self) -> FakeResponses:
        app = web.Application()
        for path in ("/v1/responses", "/openai/responses", "/openai/v1/responses"):  # OpenAI, Azure
            app.router.add_post(path, self._handle)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closing.set()
        assert self.server is not None
        await self.server.close()

    @property
    def root(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    # -- the harness ----------------------------------------------------------------------------

    def make_client(self, **kwargs: Any) -> OpenAIResponsesClient:
        kwargs.setdefault("api_key", "sk-test-harness")
        kwargs.setdefault("base_url", self.base_url)
        return OpenAIResponsesClient(kwargs.pop("model", self.model), **kwargs)

    def reset(self) -> None:
        super().reset()
        self.queue.clear()
        self.headers.clear()
        self.paths.clear()
        self.queries.clear()

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [t["name"] for t in body.get("tools", []) if t.get("type") == "function"]

    async def open_connections(self) -> int:
        assert self.server is not None
        assert self.server.runner is not None
        server = self.server.runner.server
        return len(server.connections) if server is not None else 0

    def add(self, *items: ScriptedStep | Handler) -> FakeResponses:
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
        self.paths.append(request.path)
        self.queries.append(dict(request.query))
        self._sync()
        if not self.queue:
            return web.json_response(
                {"error": {"message": f"request {len(self.received)} was not scripted"}}, status=599
            )
        item = self.queue.pop(0)
        if isinstance(item, ScriptedStep):
            return await self._render(item, request, body)
        return await item(self, request, body)

    async def _render(self, step: ScriptedStep, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        if step.kind == "error":
            return web.json_response(
                {"error": {"message": step.message, "type": "invalid_request_error", "param": None, "code": None}},
                status=step.status,
                headers=dict(step.headers),
            )
        n = len(self.received)
        model = body.get("model", self.model)
        if step.kind == "stall":
            return await stall(request, f"resp_fake{n}", model, step.text, self.closing)
        calls = [(c.call_id, c.name, json.dumps(dict(c.arguments))) for c in step.calls]
        whole = response_body(f"resp_fake{n}", model, text=step.text, calls=calls, usage=usage_json(step.usage))
        if not body.get("stream"):
            return web.json_response(whole)
        return await send_chunks(request, sse(events(whole)))


# --------------------------------------------------------------------------------------------
# Wire rendering


def usage_json(usage: UsageDetails | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_token_count,
        "input_tokens_details": {"cached_tokens": usage.cache_read_input_token_count or 0},
        "output_tokens": usage.output_token_count,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_output_token_count or 0},
        "total_tokens": usage.total_token_count,
    }


def response_body(
    response_id: str,
    model: str,
    *,
    text: str = "",
    calls: Sequence[tuple[str, str, str]] = (),
    reasoning: Sequence[Mapping[str, Any]] = (),
    extra_items: Sequence[Mapping[str, Any]] = (),
    usage: Mapping[str, Any] | None = None,
    status: str = "completed",
    incomplete_reason: str | None = None,
) -> dict[str, Any]:
    """A whole ``response`` object: reasoning, extra items, a message with ``text``, calls."""
    output: list[dict[str, Any]] = [dict(r) for r in reasoning] + [dict(i) for i in extra_items]
    suffix = response_id.removeprefix("resp_")
    if text:
        output.append(
            {
                "id": f"msg_{suffix}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
            }
        )
    for i, (call_id, name, arguments) in enumerate(calls):
        output.append(
            {
                "id": f"fc_{suffix}_{i}",
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
            }
        )
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "instructions": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "store": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "usage": dict(usage) if usage is not None else None,
    }


def events(whole: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The event sequence the service streams for a whole response (OR-16 .. OR-19)."""
    seq = itertools.count()
    start = {**whole, "status": "in_progress", "output": [], "usage": None}
    out: list[dict[str, Any]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    for index, item in enumerate(whole["output"]):
        kind = item["type"]
        if kind == "message":
            out.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            for c, part in enumerate(item["content"]):
                empty = {**part, "text": ""} if part["type"] == "output_text" else {**part, "refusal": ""}
                base = {"item_id": item["id"], "output_index": index, "content_index": c}
                out.append({"type": "response.content_part.added", **base, "part": empty})
                if part["type"] == "output_text":
                    for word in re.findall(r"\S+\s*|\s+", part["text"]):
                        out.append({"type": "response.output_text.delta", **base, "delta": word, "logprobs": []})
                    out.append({"type": "response.output_text.done", **base, "text": part["text"], "logprobs": []})
                else:
                    out.append({"type": "response.refusal.delta", **base, "delta": part["refusal"]})
                    out.append({"type": "response.refusal.done", **base, "refusal": part["refusal"]})
                out.append({"type": "response.content_part.done", **base, "part": part})
        elif kind == "function_call":
            out.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                }
            )
            args = item["arguments"]
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                out.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "delta": piece,
                    }
                )
            out.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "arguments": args,
                }
            )
        elif kind == "reasoning":
            out.append({"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}})
            for s, summary in enumerate(item.get("summary", [])):
                base = {"item_id": item["id"], "output_index": index, "summary_index": s}
                out.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        **base,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                out.append({"type": "response.reasoning_summary_text.delta", **base, "delta": summary["text"]})
                out.append({"type": "response.reasoning_summary_text.done", **base, "text": summary["text"]})
                out.append({"type": "response.reasoning_summary_part.done", **base, "part": summary})
        else:
            out.append(
                {"type": "response.output_item.added", "output_index": index, "item": {**item, "status": "in_progress"}}
            )
            out.append({"type": f"response.{kind}.in_progress", "item_id": item.get("id"), "output_index": index})
            out.append({"type": f"response.{kind}.completed", "item_id": item.get("id"), "output_index": index})
        out.append({"type": "response.output_item.done", "output_index": index, "item": item})
    terminal = "response.incomplete" if whole["status"] == "incomplete" else "response.completed"
    out.append({"type": terminal, "response": dict(whole)})
    return [{**e, "sequence_number": next(seq)} for e in out]


def sse(event_list: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in event_list)


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
    request: web.Request, response_id: str, model: str, text: str, closing: asyncio.Event
) -> web.StreamResponse:
    """One text delta, then keep-alive comments until the client leaves (bounded)."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    whole = response_body(response_id, model, text=text)
    head = [e for e in events(whole) if e["type"] != "response.completed"]
    head = head[: next(i for i, e in enumerate(head) if e["type"] == "response.output_text.delta") + 1]
    await response.write(sse(head))
    with contextlib.suppress(ConnectionError):
        for _ in range(2000):  # at most ~10 s
            if closing.is_set():
                break
            await asyncio.sleep(0.005)
            await response.write(b": keep-alive\n\n")
    return response


# --------------------------------------------------------------------------------------------
# Handlers for the transport's own tests


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def sse_payloads(data: bytes) -> list[dict[str, Any]]:
    """The JSON events of an SSE body (a small independent parser for fixtures)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln.startswith("data")]
        if lines:
            payload = "\n".join(ln.split(":", 1)[1].removeprefix(" ") for ln in lines)
            if payload.strip() != "[DONE]":
                out.append(json.loads(payload))
    return out


def final_body(data: bytes) -> dict[str, Any]:
    """The whole response of a recorded stream: its terminal event's response."""
    for event in reversed(sse_payloads(data)):
        if event.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            return dict(event["response"])
    raise AssertionError("transcript without a terminal event")


def replay(data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its final response."""

    async def handler(server: FakeResponses, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
        if body.get("stream"):
            return await send_chunks(request, data, cuts, pauses, headers=hdrs)
        return web.json_response(final_body(data), headers=hdrs)

    return handler


def raw(status: int = 200, body: bytes | str = b"", *, content_type: str = "application/json") -> Handler:
    """Answer with exactly this status and body."""

    async def handler(server: FakeResponses, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        data = body.encode() if isinstance(body, str) else body
        return web.Response(status=status, body=data, content_type=content_type)

    return handler


def disconnect_after(data: bytes, n_bytes: int) -> Handler:
    """Send the first ``n_bytes`` of a stream, then drop the connection."""

    async def handler(server: FakeResponses, request: web.Request, _: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers=SSE_HEADERS)
        await response.prepare(request)
        await response.write(data[:n_bytes])
        await asyncio.sleep(0.01)
        assert request.transport is not None
        request.transport.abort()
        return response

    return handler
