"""A loopback Responses API server and the conformance harness over it.

`FakeResponses` answers ``POST /v1/responses`` (and Azure's paths) from a queue, like
the Chat Completions fake of ``tests/openai``: a queued kit step (`ScriptedStep`) is
rendered as a whole ``response`` object or, when the request streams, as the event
sequence the service sends for it (``events``); a queued handler answers anything else
(recorded transcripts cut into chunks, raw bodies, disconnects). Every request body and
its headers are recorded. The server, the queue and the handlers are the shared loopback
helper's (``tests/_support/loopback.py``).

``response_body`` and ``events`` are also how the transcripts in ``transcripts/`` were
made:
``events`` turns a whole response into the stream the service sends for it, event by
event.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from minagent_openai import OpenAIResponsesClient

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
    "CREATED",
    "SSE_HEADERS",
    "FakeResponses",
    "Handler",
    "disconnect_after",
    "events",
    "final_body",
    "raw",
    "replay",
    "response_body",
    "send_chunks",
    "sse",
    "sse_payloads",
    "stall",
    "transcript",
    "usage_json",
]

TRANSCRIPTS = Path(__file__).parent / "transcripts"
CREATED = 1715000000


class FakeResponses(LoopbackServer):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    # OpenAI, Azure
    routes = ("/v1/responses", "/openai/responses", "/openai/v1/responses")
    client_class = OpenAIResponsesClient
    base_path = "/v1"
    api_key = "sk-test-harness"
    query_as_dict = True

    def __init__(self, *, model: str = "gpt-5-mini") -> None:
        super().__init__(model=model)

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        return [
            i["output"]
            for i in body["input"]
            if i.get("type") == "function_call_output"
        ]

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [t["name"] for t in body.get("tools", []) if t.get("type") == "function"]

    async def _render(
        self, step: ScriptedStep, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        if step.kind == "error":
            return web.json_response(
                {
                    "error": {
                        "message": step.message,
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
                status=step.status,
                headers=dict(step.headers),
            )
        n = len(self.received)
        model = body.get("model", self.model)
        if step.kind == "stall":
            return await stall(request, f"resp_fake{n}", model, step.text, self.closing)
        calls = [(c.call_id, c.name, json.dumps(dict(c.arguments))) for c in step.calls]
        whole = response_body(
            f"resp_fake{n}",
            model,
            text=step.text,
            calls=calls,
            usage=usage_json(step.usage),
        )
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
        "input_tokens_details": {
            "cached_tokens": usage.cache_read_input_token_count or 0
        },
        "output_tokens": usage.output_token_count,
        "output_tokens_details": {
            "reasoning_tokens": usage.reasoning_output_token_count or 0
        },
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
    """A whole ``response`` object: reasoning, extra items, a message with ``text``,
    calls."""
    output: list[dict[str, Any]] = [dict(r) for r in reasoning] + [
        dict(i) for i in extra_items
    ]
    suffix = response_id.removeprefix("resp_")
    if text:
        output.append(
            {
                "id": f"msg_{suffix}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": text,
                        "annotations": [],
                        "logprobs": [],
                    }
                ],
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
        "incomplete_details": {"reason": incomplete_reason}
        if incomplete_reason
        else None,
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
                empty = (
                    {**part, "text": ""}
                    if part["type"] == "output_text"
                    else {**part, "refusal": ""}
                )
                base = {
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": c,
                }
                out.append(
                    {"type": "response.content_part.added", **base, "part": empty}
                )
                if part["type"] == "output_text":
                    for word in re.findall(r"\S+\s*|\s+", part["text"]):
                        out.append(
                            {
                                "type": "response.output_text.delta",
                                **base,
                                "delta": word,
                                "logprobs": [],
                            }
                        )
                    out.append(
                        {
                            "type": "response.output_text.done",
                            **base,
                            "text": part["text"],
                            "logprobs": [],
                        }
                    )
                else:
                    out.append(
                        {
                            "type": "response.refusal.delta",
                            **base,
                            "delta": part["refusal"],
                        }
                    )
                    out.append(
                        {
                            "type": "response.refusal.done",
                            **base,
                            "refusal": part["refusal"],
                        }
                    )
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
            out.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "summary": []},
                }
            )
            for s, summary in enumerate(item.get("summary", [])):
                base = {
                    "item_id": item["id"],
                    "output_index": index,
                    "summary_index": s,
                }
                out.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        **base,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                out.append(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **base,
                        "delta": summary["text"],
                    }
                )
                out.append(
                    {
                        "type": "response.reasoning_summary_text.done",
                        **base,
                        "text": summary["text"],
                    }
                )
                out.append(
                    {
                        "type": "response.reasoning_summary_part.done",
                        **base,
                        "part": summary,
                    }
                )
        else:
            out.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress"},
                }
            )
            out.append(
                {
                    "type": f"response.{kind}.in_progress",
                    "item_id": item.get("id"),
                    "output_index": index,
                }
            )
            out.append(
                {
                    "type": f"response.{kind}.completed",
                    "item_id": item.get("id"),
                    "output_index": index,
                }
            )
        out.append(
            {"type": "response.output_item.done", "output_index": index, "item": item}
        )
    terminal = (
        "response.incomplete"
        if whole["status"] == "incomplete"
        else "response.completed"
    )
    out.append({"type": terminal, "response": dict(whole)})
    return [{**e, "sequence_number": next(seq)} for e in out]


def sse(event_list: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode()
        for e in event_list
    )


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
        if event.get("type") in (
            "response.completed",
            "response.incomplete",
            "response.failed",
        ):
            return dict(event["response"])
    raise AssertionError("transcript without a terminal event")


async def stall(
    request: web.Request, response_id: str, model: str, text: str, closing: Any
) -> web.StreamResponse:
    """One text delta, then keep-alive comments until the client leaves (bounded)."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    whole = response_body(response_id, model, text=text)
    head = [e for e in events(whole) if e["type"] != "response.completed"]
    head = head[
        : next(
            i for i, e in enumerate(head) if e["type"] == "response.output_text.delta"
        )
        + 1
    ]
    await response.write(sse(head))
    return await keep_alive(response, closing, b": keep-alive\n\n")


def replay(
    data: bytes, cuts: Sequence[int] = (), pauses: Sequence[float] = (), **headers: str
) -> Handler:
    """Answer with a recorded stream (cut as given) or, non-streaming, its final
    response."""
    return _loopback.replay(data, final_body, cuts, pauses, **headers)
