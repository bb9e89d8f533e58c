"""A loopback Bedrock Runtime server and the conformance harness over it.

`FakeBedrock` answers ``POST /model/{modelId}/converse`` with a JSON body and
``POST /model/{modelId}/converse-stream`` with an ``application/vnd.amazon.eventstream``
body, from the shared loopback queue (``tests/_support/loopback.py``). A kit step renders the
same answer in both forms. Every request's body, headers and path are recorded. The
clients it makes sign with SigV4 under fixed fake credentials unless given an
``api_key`` (a Bedrock API key).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web
from minagent_bedrock import BedrockChatClient, encode_message

from minagent import UsageDetails
from minagent.testing import ScriptedStep

from .._support.loopback import LoopbackServer, keep_alive, send_chunks

__all__ = [
    "ACCESS_KEY",
    "EVENT_STREAM_HEADERS",
    "MODEL",
    "REGION",
    "SECRET_KEY",
    "FakeBedrock",
    "error_response",
    "event",
    "exception",
    "stream_of",
    "stream_response",
    "whole_output",
]

MODEL = "anthropic.claude-sonnet-4-5-v1:0"
REGION = "us-east-1"
ACCESS_KEY = "AKIDEXAMPLEFAKE"
SECRET_KEY = "fake/secret+key/DO-NOT-PRINT"
EVENT_STREAM_HEADERS = {"Content-Type": "application/vnd.amazon.eventstream"}

_ERROR_TYPES = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    422: "ValidationException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


class FakeBedrock(LoopbackServer):
    """The fake server, and the `ProviderHarness` of the conformance kit over it."""

    routes = ("/model/{model}/converse", "/model/{model}/converse-stream")
    client_class = BedrockChatClient
    api_key = ""
    request_id_header = "x-amzn-RequestId"

    def __init__(self, *, model: str = MODEL) -> None:
        super().__init__(model=model)
        self.raw_bodies: list[bytes] = []  # each request's body as sent (it is signed)

    def reset(self) -> None:
        super().reset()
        self.raw_bodies.clear()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.raw_bodies.append(await request.read())  # aiohttp keeps it for .json()
        return await super()._handle(request)

    def make_client(self, **kwargs: Any) -> Any:
        kwargs.setdefault("base_url", self.base_url)
        kwargs.setdefault("region", REGION)
        if not kwargs.get("api_key"):
            kwargs.setdefault("aws_access_key_id", ACCESS_KEY)
            kwargs.setdefault("aws_secret_access_key", SECRET_KEY)
            kwargs["api_key"] = ""
        return BedrockChatClient(kwargs.pop("model", self.model), **kwargs)

    def tool_results(self, body: Mapping[str, Any]) -> list[str]:
        out: list[str] = []
        for message in body["messages"]:
            for block in message["content"]:
                if "toolResult" in block:
                    for part in block["toolResult"]["content"]:
                        out.append(
                            part["text"] if "text" in part else json.dumps(part["json"])
                        )
        return out

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]:
        return [
            t["toolSpec"]["name"] for t in body.get("toolConfig", {}).get("tools", [])
        ]

    def unscripted(self, message: str) -> web.StreamResponse:
        return error_response(500, message)

    async def _render(
        self, step: ScriptedStep, request: web.Request, body: dict[str, Any]
    ) -> web.StreamResponse:
        if step.kind == "error":
            return error_response(step.status, step.message, headers=step.headers)
        request_id = f"req-fake-{len(self.received)}"
        streaming = request.path.endswith("/converse-stream")
        if step.kind == "stall":
            return await stall(request, step.text, self.closing)
        blocks: list[dict[str, Any]] = []
        if step.text:
            blocks.append({"text": step.text})
        blocks += [
            {
                "toolUse": {
                    "toolUseId": c.call_id,
                    "name": c.name,
                    "input": dict(c.arguments),
                }
            }
            for c in step.calls
        ]
        output = whole_output(
            blocks, "tool_use" if step.calls else "end_turn", step.usage
        )
        headers = {"x-amzn-RequestId": request_id}
        if not streaming:
            return web.json_response(output, headers=headers)
        return await stream_response(request, stream_of(output), headers=headers)


# --------------------------------------------------------------------------------------------
# Wire rendering


def error_response(
    status: int, message: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    kind = _ERROR_TYPES.get(status, "InternalServerException")
    all_headers = {
        "x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "x-amzn-RequestId": "req-error-body",
        **dict(headers or {}),
    }
    return web.json_response({"message": message}, status=status, headers=all_headers)


def usage_json(usage: UsageDetails | None) -> dict[str, int]:
    given = usage or UsageDetails(input_token_count=0, output_token_count=0)
    inputs, outputs = given.input_token_count or 0, given.output_token_count or 0
    return {
        "inputTokens": inputs,
        "outputTokens": outputs,
        "totalTokens": inputs + outputs,
    }


def whole_output(
    blocks: list[dict[str, Any]], stop_reason: str, usage: UsageDetails | None
) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": stop_reason,
        "usage": usage_json(usage),
        "metrics": {"latencyMs": 12},
    }


def event(kind: str, payload: Mapping[str, Any]) -> bytes:
    headers = {
        ":event-type": kind,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())


def stream_of(output: Mapping[str, Any]) -> bytes:
    """The event stream equivalent to a whole output: text word by word, inputs in two
    halves."""
    out = [event("messageStart", {"role": "assistant"})]
    for index, block in enumerate(output["output"]["message"]["content"]):
        if "text" in block:
            words = block["text"].split(" ")
            for i, word in enumerate(words):
                piece = word if i == len(words) - 1 else word + " "
                out.append(
                    event(
                        "contentBlockDelta",
                        {"contentBlockIndex": index, "delta": {"text": piece}},
                    )
                )
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            out.append(
                event("contentBlockStart", {"contentBlockIndex": index, "start": start})
            )
            args = json.dumps(use["input"])
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                delta = {"toolUse": {"input": piece}}
                out.append(
                    event(
                        "contentBlockDelta",
                        {"contentBlockIndex": index, "delta": delta},
                    )
                )
        out.append(event("contentBlockStop", {"contentBlockIndex": index}))
    out.append(event("messageStop", {"stopReason": output["stopReason"]}))
    out.append(
        event("metadata", {"usage": output["usage"], "metrics": output["metrics"]})
    )
    return b"".join(out)


async def stream_response(
    request: web.Request,
    data: bytes,
    cuts: Sequence[int] = (),
    *,
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    return await send_chunks(
        request, data, cuts, headers=headers, stream_headers=EVENT_STREAM_HEADERS
    )


async def stall(request: web.Request, text: str, closing: Any) -> web.StreamResponse:
    """One text delta, then unknown events until the client leaves (bounded)."""
    response = web.StreamResponse(headers=EVENT_STREAM_HEADERS)
    await response.prepare(request)
    await response.write(event("messageStart", {"role": "assistant"}))
    await response.write(
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})
    )
    return await keep_alive(response, closing, event("keepAlive", {}))
