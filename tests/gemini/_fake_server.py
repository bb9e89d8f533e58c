"""A loopback Gemini API server and the conformance harness over it.

`FakeGemini` answers ``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` from a queue: a kit step (`ScriptedStep`) is rendered
as one ``GenerateContentResponse`` or as an SSE stream according to the method in the
path, as the Gemini API reference shows them (text in several events, function calls
whole in one event, then the event with ``finishReason`` and ``usageMetadata``); a
handler answers anything else (raw bodies, disconnects, silence). Every request body is
recorded (``requests()``), with its headers, path and query. The server, the queue and
the handlers are the shared loopback helper's (``tests/_support/loopback.py``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web
from minagent_gemini import GeminiChatClient

from minagent import UsageDetails
from minagent.testing import ScriptedStep

from .._support import loopback as _loopback
from .._support.loopback import SSE_HEADERS, Handler, LoopbackServer, keep_alive, raw

__all__ = [
    "MODEL_VERSION",
    "SSE_HEADERS",
    "FakeGemini",
    "Handler",
    "disconnect_after",
    "events",
    "google_error",
    "raw",
    "send_chunks",
    "silence",
    "sse",
    "whole",
]

MODEL_VERSION = "gemini-2.5-flash-001"
RESPONSE_ID = "resp-fake-1"

send_chunks = functools.partial(_loopback.send_chunks, stream_headers=SSE_HEADERS)
disconnect_after = functools.partial(
    _loopback.disconnect_after, stream_headers=SSE_HEADERS
)
silence = functools.partial(_loopback.silence, stream_headers=SSE_HEADERS)

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def google_error(status: int, message: str) -> dict[str, Any]:
    """Google's error body (``google.rpc.Status`` in JSON)."""
    return {
        "error": {
            "code": status,
            "message": message,
            "status": _STATUS_NAMES.get(status, "UNKNOWN"),
        }
    }


def streaming(request: web.Request) -> bool:
    return request.path.endswith(":streamGenerateContent")


class FakeGemini(LoopbackServer):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    client_class = GeminiChatClient

    def __init__(self, *, model: str = "gemini-2.5-flash") -> None:
        super().__init__(model=model)

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        out: list[str] = []
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionResponse" in part:
                    result = part["functionResponse"]["response"].get("result")
                    out.append(
                        result if isinstance(result, str) else json.dumps(result)
                    )
        return out

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [
            d["name"]
            for tool in body.get("tools", [])
            for d in tool.get("functionDeclarations", [])
        ]

    def unscripted(self, message: str) -> web.StreamResponse:
        return web.json_response(google_error(500, message), status=599)

    async def _render(
        self, step: ScriptedStep, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        if step.kind == "error":
            return web.json_response(
                google_error(step.status, step.message),
                status=step.status,
                headers=dict(step.headers),
            )
        if step.kind == "stall":
            return await stall(request, step.text, self.closing)
        calls = [{"name": c.name, "args": dict(c.arguments)} for c in step.calls]
        if not streaming(request):
            return web.json_response(whole(step.text, calls, step.usage))
        return await send_chunks(request, sse(events(step.text, calls, step.usage)))


# --------------------------------------------------------------------------------------------
# Wire rendering (the API reference's GenerateContentResponse)


def usage_metadata(usage: UsageDetails | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    prompt = usage.input_token_count or 0
    output = usage.output_token_count or 0
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    }


def _answer(
    parts: list[dict[str, Any]],
    finish: str | None,
    usage: UsageDetails | None,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    out: dict[str, Any] = {"candidates": [candidate]}
    metadata = usage_metadata(usage)
    if metadata is not None and finish is not None:
        out["usageMetadata"] = metadata
    out["modelVersion"] = MODEL_VERSION
    out["responseId"] = RESPONSE_ID
    return out


def _parts(text: str, calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts.extend({"functionCall": dict(call)} for call in calls)
    return parts


def whole(
    text: str,
    calls: Sequence[Mapping[str, Any]] = (),
    usage: UsageDetails | None = None,
    finish: str = "STOP",
) -> dict[str, Any]:
    return _answer(_parts(text, calls), finish, usage)


def events(
    text: str,
    calls: Sequence[Mapping[str, Any]] = (),
    usage: UsageDetails | None = None,
    finish: str = "STOP",
) -> list[dict[str, Any]]:
    """Text word by word, then the calls whole in one event, which also carries the
    finish reason and the usage (as Gemini sends the last event)."""
    words = re.findall(r"\S+\s*|\s+", text)
    out = [_answer([{"text": word}], None, None) for word in words]
    out.append(_answer(_parts("", calls), finish, usage))
    return out


def sse(chunks: Sequence[Mapping[str, Any]]) -> bytes:
    """Gemini's framing: ``data: <json>`` and a blank line, with CRLF line ends."""
    return b"".join(
        b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\r\n\r\n"
        for c in chunks
    )


async def stall(request: web.Request, text: str, closing: Any) -> web.StreamResponse:
    """One text event, then keep-alive comments until the client leaves (bounded)."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    await response.write(sse([_answer([{"text": text}], None, None)]))
    return await keep_alive(response, closing, b": keep-alive\r\n\r\n")
