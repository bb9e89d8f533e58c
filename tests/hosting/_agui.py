"""What the AG-UI tests share: a run posted over loopback, its events validated one by
one against the `ag-ui-protocol` package's models and as a sequence against the run
lifecycle of the AG-UI specification."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from ag_ui.core import Event, RunAgentInput
from pydantic import BaseModel, TypeAdapter

from minagent.hosting import HostingApp
from minagent.hosting.server import serve

EVENT = TypeAdapter(Event)


@asynccontextmanager
async def served(app: HostingApp) -> AsyncIterator[httpx.AsyncClient]:
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=60
        ) as http:
            yield http
    finally:
        server.close()
        await server.wait_closed()


def _no_extra(model: Any, where: str) -> None:
    """Every field the producer wrote is one the model defines (a misspelt field would
    pass pydantic's ``extra="allow"``)."""
    if isinstance(model, BaseModel):
        assert not model.model_extra, (
            f"{where}: fields the protocol lacks: {model.model_extra}"
        )
        for name in type(model).model_fields:
            _no_extra(getattr(model, name), f"{where}.{name}")
    elif isinstance(model, list):
        for index, item in enumerate(model):
            _no_extra(item, f"{where}[{index}]")


def validate(event: dict[str, Any]) -> Any:
    """One event against the package's models: valid, nothing unknown, no nulls."""
    model = EVENT.validate_python(event)
    _no_extra(model, event["type"])
    assert None not in event.values(), f"a null field in {event}"
    return model


def parse_sse(data: bytes) -> list[dict[str, Any]]:
    """The SSE body as its events: LF-framed, ``data:`` lines only (HS-80)."""
    text = data.decode()
    assert "\r" not in text
    events = []
    for block in text.split("\n\n"):
        if not block:
            continue
        lines = block.split("\n")
        assert all(line.startswith("data: ") for line in lines), block
        events.append(json.loads("".join(line[6:] for line in lines)))
    return events


def check_sequence(events: list[dict[str, Any]]) -> None:
    """The lifecycle rules of a run: RUN_STARTED first, one terminal event last, steps,
    text messages and tool calls opened once and closed before RUN_FINISHED."""
    assert events[0]["type"] == "RUN_STARTED", events[0]
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    assert [e["type"] for e in events].count("RUN_STARTED") == 1
    steps: set[str] = set()
    texts: set[str] = set()
    calls: set[str] = set()
    for event in events[1:-1]:
        kind = event["type"]
        assert kind not in ("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"), event
        if kind == "STEP_STARTED":
            assert event["stepName"] not in steps, event
            steps.add(event["stepName"])
        elif kind == "STEP_FINISHED":
            steps.remove(event["stepName"])
        elif kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in texts
            texts.add(event["messageId"])
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event["messageId"] in texts
        elif kind == "TEXT_MESSAGE_END":
            texts.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            assert event["toolCallId"] not in calls
            calls.add(event["toolCallId"])
        elif kind == "TOOL_CALL_ARGS":
            assert event["toolCallId"] in calls
        elif kind == "TOOL_CALL_END":
            calls.remove(event["toolCallId"])
    if events[-1]["type"] == "RUN_FINISHED":
        assert not steps, steps
        assert not texts, texts
        assert not calls, calls


class Result:
    """One posted run: the HTTP status, the events (or the error body)."""

    def __init__(self, status: int, content_type: str, body: bytes) -> None:
        self.status = status
        self.content_type = content_type
        self.body = body
        self.events: list[dict[str, Any]] = []
        self.error: dict[str, Any] | None = None
        if status == 200:
            assert content_type.startswith("text/event-stream")
            self.events = parse_sse(body)
            for event in self.events:
                validate(event)
            check_sequence(self.events)
        else:
            self.error = json.loads(body)
            assert validate(self.error).type.value == "RUN_ERROR"

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def kinds(self) -> list[str]:
        return [e["type"] for e in self.events]

    @property
    def finished(self) -> dict[str, Any]:
        assert self.events[-1]["type"] == "RUN_FINISHED", self.events[-1]
        return self.events[-1]

    @property
    def text(self) -> str:
        return "".join(e["delta"] for e in self.of("TEXT_MESSAGE_CONTENT"))


async def post(
    http: httpx.AsyncClient, body: Any, path: str = "/agui", *, check_input: bool = True
) -> Result:
    """Post one run input (checked against the package's RunAgentInput first, when it is
    meant to be valid) and read the whole answer."""
    if check_input:
        RunAgentInput.model_validate(body)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = await http.post(
        path,
        content=content,
        headers={"content-type": "application/json", "accept": "text/event-stream"},
    )
    return Result(
        response.status_code, response.headers.get("content-type", ""), response.content
    )


def user(text: str, mid: str) -> dict[str, Any]:
    return {"id": mid, "role": "user", "content": text}


def run_input(
    messages: list[dict[str, Any]],
    *,
    thread: str = "t1",
    run: str = "r1",
    **fields: Any,
) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": messages, **fields}


def history(result: Result, before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages a front end holds after a run, built from its events as the AG-UI
    client does: ``before`` plus the run's text, tool calls and tool results."""
    messages = [dict(m) for m in before]
    by_id: dict[str, dict[str, Any]] = {}
    calls: dict[str, dict[str, Any]] = {}
    for event in result.events:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            message = by_id.get(event["messageId"])
            if message is None:
                message = {"id": event["messageId"], "role": "assistant", "content": ""}
                by_id[event["messageId"]] = message
                messages.append(message)
        elif kind == "TEXT_MESSAGE_CONTENT":
            by_id[event["messageId"]]["content"] += event["delta"]
        elif kind == "TOOL_CALL_START":
            parent = event["parentMessageId"]
            message = by_id.get(parent)
            if message is None:
                message = {"id": parent, "role": "assistant"}
                by_id[parent] = message
                messages.append(message)
            call = {
                "id": event["toolCallId"],
                "type": "function",
                "function": {"name": event["toolCallName"], "arguments": ""},
            }
            calls[event["toolCallId"]] = call
            message.setdefault("toolCalls", []).append(call)
        elif kind == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]]["function"]["arguments"] += event["delta"]
        elif kind == "TOOL_CALL_RESULT":
            messages.append(
                {
                    "id": event["messageId"],
                    "role": "tool",
                    "toolCallId": event["toolCallId"],
                    "content": event["content"],
                }
            )
    return messages
