"""A loopback Ollama server and the conformance harness over it.

`FakeOllama` answers ``POST /api/chat`` from a queue: a kit step (`ScriptedStep`) is
rendered as one JSON body or as an NDJSON stream according to the request's ``stream``
flag, with the same model and ``created_at`` either way, as Ollama's API reference shows
them (text chunk by chunk, tool calls whole in one chunk, then the ``done`` chunk with
``done_reason`` and the counts); a handler answers anything else (recorded transcripts
cut into chunks, raw bodies, disconnects, silence). Every request body is recorded
(``requests()``), with its headers (``headers``). The server, the queue and the handlers
are the shared loopback helper's (``tests/_support/loopback.py``), bound here to NDJSON streams.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from minagent_ollama import OllamaChatClient

from minagent import UsageDetails
from minagent.testing import ScriptedStep

from .._support import loopback as _loopback
from .._support.loopback import NDJSON_HEADERS, Handler, LoopbackServer, keep_alive, raw

__all__ = [
    "CREATED_AT",
    "NDJSON_HEADERS",
    "FakeOllama",
    "Handler",
    "disconnect_after",
    "final_fields",
    "merge_chunks",
    "ndjson",
    "raw",
    "replay",
    "send_chunks",
    "silence",
    "stall",
    "stream_chunks",
    "transcript",
    "whole",
]

TRANSCRIPTS = Path(__file__).parent / "transcripts"
CREATED_AT = "2024-07-22T20:33:28.123648Z"

send_chunks = functools.partial(_loopback.send_chunks, stream_headers=NDJSON_HEADERS)
disconnect_after = functools.partial(
    _loopback.disconnect_after, stream_headers=NDJSON_HEADERS
)
silence = functools.partial(_loopback.silence, stream_headers=NDJSON_HEADERS)


class FakeOllama(LoopbackServer):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    routes = ("/api/chat",)
    client_class = OllamaChatClient

    def __init__(self, *, model: str = "llama3.2") -> None:
        super().__init__(model=model)

    def make_client(self, **kwargs: Any) -> Any:
        kwargs.setdefault("base_url", self.base_url)
        return OllamaChatClient(kwargs.pop("model", self.model), **kwargs)

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        return [m.get("content", "") for m in body["messages"] if m["role"] == "tool"]

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [t["function"]["name"] for t in body.get("tools", [])]

    def unscripted(self, message: str) -> web.StreamResponse:
        return web.json_response({"error": message}, status=599)

    async def _render(
        self, step: ScriptedStep, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        if step.kind == "error":
            return web.json_response(
                {"error": step.message}, status=step.status, headers=dict(step.headers)
            )
        meta = {"model": body.get("model", self.model), "created_at": CREATED_AT}
        if step.kind == "stall":
            return await stall(request, meta, step.text, self.closing)
        calls = [
            {"function": {"name": c.name, "arguments": dict(c.arguments)}}
            for c in step.calls
        ]
        if body.get("stream") is False:
            return web.json_response(whole(meta, step.text, calls, step.usage))
        return await send_chunks(
            request, ndjson(stream_chunks(meta, step.text, calls, step.usage))
        )


# --------------------------------------------------------------------------------------------
# Wire rendering (docs/api.md, "Generate a chat completion")


def final_fields(usage: UsageDetails | None, reason: str = "stop") -> dict[str, Any]:
    out: dict[str, Any] = {
        "done_reason": reason,
        "done": True,
        "total_duration": 885095291,
    }
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
            {
                **meta,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": list(calls),
                },
                "done": False,
            }
        )
    chunks.append(
        {**meta, "message": {"role": "assistant", "content": ""}, **final_fields(usage)}
    )
    return chunks


def ndjson(chunks: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(json.dumps(c, ensure_ascii=False).encode() + b"\n" for c in chunks)


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def merge_chunks(data: bytes) -> dict[str, Any]:
    """The non-streaming body equivalent to a recorded NDJSON stream (for replay in both
    modes)."""
    lines = [
        json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()
    ]
    last = lines[-1]
    text = "".join(c.get("message", {}).get("content") or "" for c in lines)
    thinking = "".join(c.get("message", {}).get("thinking") or "" for c in lines)
    calls = [
        call for c in lines for call in c.get("message", {}).get("tool_calls") or []
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if thinking:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = calls
    return {**{k: v for k, v in last.items() if k != "message"}, "message": message}


async def stall(
    request: web.Request, meta: Mapping[str, Any], text: str, closing: Any
) -> web.StreamResponse:
    """One text chunk, then empty chunks until the client leaves (bounded)."""
    response = web.StreamResponse(headers=NDJSON_HEADERS)
    await response.prepare(request)
    await response.write(
        ndjson(
            [{**meta, "message": {"role": "assistant", "content": text}, "done": False}]
        )
    )
    empty = ndjson(
        [{**meta, "message": {"role": "assistant", "content": ""}, "done": False}]
    )
    return await keep_alive(response, closing, empty)


def replay(
    data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str
) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its merged
    body."""
    return _loopback.replay(
        data,
        merge_chunks,
        cuts,
        pauses,
        streams=lambda body: body.get("stream") is not False,
        stream_headers=NDJSON_HEADERS,
        **headers,
    )
