"""A loopback Chat Completions server and the conformance harness over it.

`FakeOpenAI` answers ``POST /v1/chat/completions`` (any path: Azure deployments,
proxies) from a queue: a kit step (`ScriptedStep`) is rendered as a JSON body or as an
SSE stream according to the request's ``stream`` flag, with the same id, model and
``created`` either way; a handler answers anything else (recorded transcripts cut into
chunks, raw bodies, disconnects, silence). Every request body is recorded
(``requests()``), with its headers (``headers``). The server, the queue and the handlers
are the shared loopback helper's (``tests/_support/loopback.py``); this module adds the Chat
Completions wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from minagent_openai import OpenAIChatClient

from minagent import UsageDetails
from minagent.testing import ScriptedStep

from .._support import loopback as _loopback
from .._support.loopback import (
    SSE_HEADERS,
    Handler,
    LoopbackServer,
    disconnect_after,
    keep_alive,
    raw,
    send_chunks,
    silence,
)

__all__ = [
    "CREATED",
    "SSE_HEADERS",
    "FakeOpenAI",
    "Handler",
    "collect_texts",
    "completion",
    "disconnect_after",
    "merge_chunks",
    "raw",
    "replay",
    "send_chunks",
    "silence",
    "sse",
    "sse_payloads",
    "stall",
    "stream_chunks",
    "transcript",
    "usage_json",
]

TRANSCRIPTS = Path(__file__).parent / "transcripts"
CREATED = 1715000000


class FakeOpenAI(LoopbackServer):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    client_class = OpenAIChatClient
    base_path = "/v1"
    api_key = "sk-test-harness"

    def __init__(self, *, model: str = "gpt-4o-mini") -> None:
        super().__init__(model=model)

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [t["function"]["name"] for t in body.get("tools", [])]

    async def _render(
        self, step: ScriptedStep, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        if step.kind == "error":
            return web.json_response(
                {
                    "error": {
                        "message": step.message,
                        "type": "error",
                        "param": None,
                        "code": None,
                    }
                },
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
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(dict(c.arguments)),
                },
            }
            for c in step.calls
        ]
        if not body.get("stream"):
            return web.json_response(
                completion(meta, step.text or None, calls, step.usage)
            )
        return await send_chunks(
            request, sse(stream_chunks(meta, step.text, calls, step.usage))
        )


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
    """The chunks of a stream: role, text word by word, calls in fragments, finish,
    usage."""
    base = {**meta, "object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": word}) for word in re.findall(r"\S+\s*|\s+", text)]
    for index, call in enumerate(calls):
        head = {"index": index, "id": call["id"], "type": "function"}
        fn = call["function"]
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {**head, "function": {"name": fn["name"], "arguments": ""}}
                    ]
                }
            )
        )
        args = fn["arguments"]
        for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
            chunks.append(
                chunk(
                    {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                )
            )
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    if usage is not None:
        chunks.append({**base, "choices": [], "usage": usage_json(usage)})
    return chunks


def sse(chunks: Sequence[Mapping[str, Any]], *, done: bool = True) -> bytes:
    out = b"".join(
        f"data: {json.dumps(c, ensure_ascii=False)}\n\n".encode() for c in chunks
    )
    return out + (b"data: [DONE]\n\n" if done else b"")


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def sse_payloads(data: bytes) -> list[str]:
    """The data of each event of an SSE body (a small independent parser for
    fixtures)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln.startswith("data")]
        if lines:
            out.append("\n".join(ln.split(":", 1)[1].removeprefix(" ") for ln in lines))
    return [p for p in out if p.strip() != "[DONE]"]


def merge_chunks(data: bytes) -> dict[str, Any]:
    """The non-streaming body equivalent to a recorded stream (for replay in both
    modes)."""
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


async def stall(
    request: web.Request, meta: Mapping[str, Any], text: str, closing: Any
) -> web.StreamResponse:
    """One text delta, then keep-alive comments until the client leaves (bounded)."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    first = {**meta, "object": "chat.completion.chunk"}
    first["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": text}}]
    await response.write(sse([first], done=False))
    return await keep_alive(response, closing, b": still thinking\n\n")


def replay(
    data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str
) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its merged
    body."""
    return _loopback.replay(data, merge_chunks, cuts, pauses, **headers)


async def collect_texts(stream: Any, texts: list[str]) -> None:
    """Consume a stream, appending each update's text to ``texts`` as it arrives."""
    async for update in stream:
        texts.append(update.text)
