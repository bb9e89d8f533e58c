"""AG-UI's run input, read and checked (spec/hosting.md HS-82 .. HS-90): a
`RunAgentInput` as plain data, its messages as minagent messages, its tools as the run's
declaration-only tools, and its resume entries as approval answers.

Nothing here does I/O: every function returns what the run needs or raises `AguiError`
(input refused before the run starts, HS-81), so the endpoint (`minagent.hosting.agui`)
refuses bad input before its stream opens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minagent import Content, FunctionTool, Message, SupportsAgentRun

__all__ = [
    "BOOK_KEY",
    "PROTOCOL_VERSION",
    "AguiError",
    "client_tools",
    "parse_input",
    "plan_messages",
]

# HS-80: the AG-UI version this endpoint speaks (RUN_STARTED.protocolVersion).
PROTOCOL_VERSION = "1.0"
# the thread's book: the message ids it has seen and its open interrupts (HS-84, HS-89)
BOOK_KEY = "ag-ui"

# HS-82: the fields of a RunAgentInput; anything else is refused
_INPUT_FIELDS = frozenset(
    {
        "threadId",
        "runId",
        "parentRunId",
        "protocolVersion",
        "state",
        "messages",
        "tools",
        "context",
        "forwardedProps",
        "resume",
    }
)


class AguiError(Exception):
    """Input refused before the run starts (HS-81): an HTTP status and a RUN_ERROR."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def _expect(ok: bool, message: str, code: str = "invalid_input") -> None:
    if not ok:
        raise AguiError(400, message, code)


def parse_input(request: Mapping[str, Any]) -> dict[str, Any]:
    """HS-82: the RunAgentInput's fields, checked; unknown fields are refused."""
    unknown = sorted(set(request) - _INPUT_FIELDS)
    _expect(
        not unknown,
        f"unknown RunAgentInput field(s): {', '.join(unknown)}",
        "unsupported_field",
    )
    for key in ("threadId", "runId"):
        value = request.get(key)
        _expect(
            isinstance(value, str) and bool(value), f"{key} must be a non-empty string"
        )
    for key in ("parentRunId", "protocolVersion"):
        _expect(
            request.get(key) is None or isinstance(request[key], str),
            f"{key} must be a string",
        )
    version = request.get("protocolVersion")
    _expect(
        version is None or version.split(".")[0] == PROTOCOL_VERSION.split(".")[0],
        f"protocolVersion {version!r} is not spoken here (this endpoint speaks "
        f"{PROTOCOL_VERSION})",
        "unsupported_version",
    )
    messages = request.get("messages")
    _expect(isinstance(messages, list), "messages must be an array")
    tools = request.get("tools") or []
    _expect(isinstance(tools, list), "tools must be an array")
    for index, spec in enumerate(tools):
        _expect(
            isinstance(spec, Mapping)
            and isinstance(spec.get("name"), str)
            and bool(spec["name"])
            and isinstance(spec.get("description"), str)
            and (
                spec.get("parameters") is None
                or isinstance(spec["parameters"], Mapping)
            ),
            f"tools[{index}] needs a name and a description (and parameters, if any, "
            "as a JSON schema object)",
        )
    context = request.get("context") or []
    _expect(isinstance(context, list), "context must be an array")
    for index, item in enumerate(context):
        _expect(
            isinstance(item, Mapping)
            and isinstance(item.get("description"), str)
            and isinstance(item.get("value"), str),
            f"context[{index}] needs a string description and value",
        )
    resume = request.get("resume") or []
    _expect(isinstance(resume, list), "resume must be an array")
    return {
        "threadId": request["threadId"],
        "runId": request["runId"],
        "parentRunId": request.get("parentRunId"),
        "hasState": "state" in request and request["state"] is not None,
        "state": request.get("state"),
        "messages": messages,
        "tools": tools,
        "context": context,
        "forwardedProps": request.get("forwardedProps"),
        "resume": resume,
    }


def _text_of(content: Any, where: str) -> str:
    """A message's content as text: a string, or a list of text parts (HS-85)."""
    if isinstance(content, str):
        return content
    _expect(
        isinstance(content, list),
        f"{where}.content must be a string or an array of parts",
    )
    texts: list[str] = []
    for index, part in enumerate(content):
        _expect(
            isinstance(part, Mapping)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str),
            f"{where}.content[{index}]: only text parts are supported",
            "unsupported_content",
        )
        texts.append(part["text"])
    return "".join(texts)


def _message(raw: Any, where: str) -> tuple[str, Message]:
    """HS-85: one AG-UI message as a minagent message, with its id."""
    _expect(
        isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and bool(raw["id"]),
        f"{where} needs a string id",
    )
    role, mid = raw.get("role"), raw["id"]
    if role in ("user", "system", "developer"):
        text = _text_of(raw.get("content"), where)
        return mid, Message(
            "user" if role == "user" else "system", text=text, message_id=mid
        )
    if role == "assistant":
        contents: list[Content] = []
        text = raw.get("content")
        if text is not None:
            _expect(isinstance(text, str), f"{where}.content must be a string")
            if text:
                contents.append(Content.from_text(text))
        calls = raw.get("toolCalls") or []
        _expect(isinstance(calls, list), f"{where}.toolCalls must be an array")
        for index, call in enumerate(calls):
            function = call.get("function") if isinstance(call, Mapping) else None
            _expect(
                isinstance(call, Mapping)
                and isinstance(call.get("id"), str)
                and isinstance(function, Mapping)
                and isinstance(function.get("name"), str)
                and isinstance(function.get("arguments"), str),
                f"{where}.toolCalls[{index}] needs an id and a function name and "
                "arguments",
            )
            assert isinstance(function, Mapping)
            contents.append(
                Content.from_function_call(
                    call["id"], function["name"], function["arguments"]
                )
            )
        return mid, Message("assistant", contents, message_id=mid)
    if role == "tool":
        call_id = raw.get("toolCallId")
        _expect(
            isinstance(call_id, str) and bool(call_id), f"{where} needs a toolCallId"
        )
        error = raw.get("error")
        _expect(
            error is None or isinstance(error, str), f"{where}.error must be a string"
        )
        result = _text_of(raw.get("content"), where)
        content = Content.from_function_result(call_id, result=result, exception=error)
        return mid, Message("tool", [content], message_id=mid)
    raise AguiError(
        400,
        f"{where}.role {role!r} is not taken here (user, system, developer, assistant, "
        "tool)",
        "unsupported_message",
    )


def plan_messages(
    session: Any, run_input: Mapping[str, Any]
) -> tuple[list[Message], dict[str, Any]]:
    """HS-84, HS-90: the run's new messages (the input's unseen messages, then the
    approval answers) and the thread's updated book."""
    stored = session.state.get(BOOK_KEY) or {}
    seen: list[str] = list(stored.get("seen", []))
    open_interrupts: dict[str, Any] = dict(stored.get("interrupts", {}))
    known = set(seen)
    messages: list[Message] = []
    for index, raw in enumerate(run_input["messages"]):
        mid, message = _message(raw, f"messages[{index}]")
        if mid in known:
            continue
        known.add(mid)
        seen.append(mid)
        messages.append(message)
    answers: list[Content] = []
    answered: set[str] = set()
    for index, entry in enumerate(run_input["resume"]):
        where = f"resume[{index}]"
        _expect(
            isinstance(entry, Mapping), f"{where} must be an object", "invalid_resume"
        )
        interrupt_id = entry.get("interruptId")
        if interrupt_id not in open_interrupts or interrupt_id in answered:
            raise AguiError(
                400,
                f"{where}.interruptId {interrupt_id!r} names no open interrupt of "
                "this thread",
                "unknown_interrupt",
            )
        status, payload = entry.get("status"), entry.get("payload")
        if status == "resolved":
            _expect(
                isinstance(payload, Mapping)
                and set(payload) == {"approved"}
                and isinstance(payload["approved"], bool),
                f'{where}.payload must be {{"approved": true | false}}',
                "invalid_resume",
            )
            assert isinstance(payload, Mapping)
            approved = bool(payload["approved"])
        else:
            _expect(
                status == "cancelled",
                f"{where}.status must be 'resolved' or 'cancelled'",
                "invalid_resume",
            )
            approved = False
        answered.add(interrupt_id)
        call = open_interrupts[interrupt_id]
        function_call = Content.from_function_call(
            call["callId"], call["name"], call["arguments"]
        )
        answers.append(
            Content.from_function_approval_response(
                approved, interrupt_id, function_call
            )
        )
    missing = sorted(set(open_interrupts) - answered)
    _expect(
        not missing,
        f"the thread's interrupt(s) {', '.join(missing)} need a resume entry "
        "(resolved or cancelled)",
        "interrupt_not_answered",
    )
    if answers:
        messages.append(Message("user", answers))
    return messages, {"seen": seen, "interrupts": {}}


def client_tools(
    agent: SupportsAgentRun, specs: Sequence[Mapping[str, Any]]
) -> list[FunctionTool]:
    """HS-87: the input's tools as declaration-only tools; a name the agent's own tools
    use is refused."""
    options = getattr(agent, "default_options", None) or {}
    own = {getattr(t, "name", None) for t in options.get("tools", None) or []}
    tools: list[FunctionTool] = []
    names: set[str] = set()
    for spec in specs:
        name = spec["name"]
        _expect(
            name not in own,
            f"the client tool {name!r} has the name of a tool of the agent",
            "tool_conflict",
        )
        _expect(
            name not in names, f"two client tools are named {name!r}", "tool_conflict"
        )
        names.add(name)
        tools.append(
            FunctionTool(
                name=name,
                description=spec["description"],
                parameters=dict(
                    spec.get("parameters") or {"type": "object", "properties": {}}
                ),
            )
        )
    return tools
