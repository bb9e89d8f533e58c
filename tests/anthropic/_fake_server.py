"""A loopback Messages API server and the conformance harness over it.

`FakeAnthropic` answers ``POST /v1/messages`` from a queue: a kit step (`ScriptedStep`)
is rendered as a JSON message or as an SSE event stream according to the request's
``stream`` flag, with the same ids and model either way; a handler answers anything else
(recorded transcripts cut into chunks, raw bodies, disconnects). Every request body is
recorded (``requests()``), with its headers (``headers``). The server, the queue and the
handlers are the shared loopback helper's (``tests/_support/loopback.py``); this module adds the
Messages API wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from minagent_anthropic import AnthropicChatClient

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
)

__all__ = [
    "COMPLETE",
    "MODEL",
    "SSE_HEADERS",
    "TRANSCRIPT_NAMES",
    "FakeAnthropic",
    "Handler",
    "disconnect_after",
    "error_response",
    "event",
    "merge_events",
    "raw",
    "replay",
    "send_chunks",
    "sse_payloads",
    "stall",
    "stream_of",
    "transcript",
    "usage_json",
    "whole_message",
]

TRANSCRIPTS = Path(__file__).parent / "transcripts"
TRANSCRIPT_NAMES = sorted(p.name for p in TRANSCRIPTS.glob("*.sse"))
# ends with message_stop
COMPLETE = [n for n in TRANSCRIPT_NAMES if n != "error_midstream.sse"]
MODEL = "claude-sonnet-4-5"

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


class FakeAnthropic(LoopbackServer):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    routes = ("/v1/messages",)
    client_class = AnthropicChatClient
    api_key = "sk-ant-test-harness"
    request_id_header = "request-id"

    def __init__(self, *, model: str = MODEL) -> None:
        super().__init__(model=model)

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

    def unscripted(self, message: str) -> web.StreamResponse:
        return error_response(500, message)

    async def _render(
        self, step: ScriptedStep, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
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
            {
                "type": "tool_use",
                "id": c.call_id,
                "name": c.name,
                "input": dict(c.arguments),
            }
            for c in step.calls
        ]
        message = whole_message(
            message_id,
            model,
            blocks,
            "tool_use" if step.calls else "end_turn",
            step.usage,
        )
        if not body.get("stream"):
            return web.json_response(
                message, headers={"request-id": f"req_{message_id}"}
            )
        return await send_chunks(
            request, stream_of(message), headers={"request-id": f"req_{message_id}"}
        )


# --------------------------------------------------------------------------------------------
# Wire rendering


def error_response(
    status: int, message: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    body = {
        "type": "error",
        "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message},
        "request_id": "req_body_id",
    }
    return web.json_response(body, status=status, headers=dict(headers or {}))


def usage_json(usage: UsageDetails | None) -> dict[str, Any]:
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": usage.input_token_count or 0,
        "output_tokens": usage.output_token_count or 0,
    }


def whole_message(
    message_id: str,
    model: str,
    blocks: list[dict[str, Any]],
    stop_reason: str,
    usage: UsageDetails | None,
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
    """The event stream equivalent to a whole message: text word by word, inputs in two
    halves."""
    usage = dict(message["usage"])
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**usage, "output_tokens": 1},
    }
    out = [event("message_start", {"message": start}), event("ping", {})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            out.append(
                event(
                    "content_block_start",
                    {"index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            for word in re.findall(r"\S+\s*|\s+", block["text"]):
                delta = {"type": "text_delta", "text": word}
                out.append(
                    event("content_block_delta", {"index": index, "delta": delta})
                )
        elif block["type"] == "tool_use":
            head = {**block, "input": {}}
            out.append(
                event("content_block_start", {"index": index, "content_block": head})
            )
            args = json.dumps(block["input"], ensure_ascii=False)
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(
                    event("content_block_delta", {"index": index, "delta": delta})
                )
        out.append(event("content_block_stop", {"index": index}))
    stop = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": message["stop_sequence"],
    }
    out.append(
        event(
            "message_delta",
            {"delta": stop, "usage": {"output_tokens": usage["output_tokens"]}},
        )
    )
    out.append(event("message_stop", {}))
    return b"".join(out)


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def sse_payloads(data: bytes) -> list[dict[str, Any]]:
    """The JSON data of each event of an SSE body (a small independent parser for
    fixtures)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln.startswith("data")]
        if lines:
            out.append(
                json.loads(
                    "\n".join(ln.split(":", 1)[1].removeprefix(" ") for ln in lines)
                )
            )
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
                partial[payload["index"]] = (
                    partial.get(payload["index"], "") + delta["partial_json"]
                )
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
        elif kind == "message_delta":
            message.update(payload["delta"])
            message["usage"].update(
                {k: v for k, v in payload["usage"].items() if v is not None}
            )
    for index, text in partial.items():
        message["content"][index]["input"] = json.loads(text) if text else {}
    return message


async def stall(
    request: web.Request, message_id: str, model: str, text: str, closing: Any
) -> web.StreamResponse:
    """One text delta, then pings until the client leaves (bounded)."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    start = whole_message(message_id, model, [], "end_turn", None)
    start["stop_reason"] = None
    await response.write(event("message_start", {"message": start}))
    await response.write(
        event(
            "content_block_start",
            {"index": 0, "content_block": {"type": "text", "text": ""}},
        )
    )
    await response.write(
        event(
            "content_block_delta",
            {"index": 0, "delta": {"type": "text_delta", "text": text}},
        )
    )
    return await keep_alive(response, closing, event("ping", {}))


def replay(
    data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str
) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its merged
    message."""
    return _loopback.replay(data, merge_events, cuts, pauses, **headers)
