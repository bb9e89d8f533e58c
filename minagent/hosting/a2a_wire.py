"""A2A 0.3's JSON-RPC wire (spec/hosting.md HS-50 .. HS-69), without I/O: the codes,
the checks that turn a request's JSON into checked values or raise `RpcError`, and the
parts the host sends. `minagent.hosting.a2a` does the I/O and holds the tasks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minagent import Content, ContentError, SupportsAgentRun, __version__

__all__ = [
    "Envelope",
    "Incoming",
    "RpcError",
    "agent_card",
    "answers",
    "check_version",
    "history_length",
    "parse_envelope",
    "parse_message",
    "request_part",
    "skills",
    "text_part",
]

# HS-50: the protocol version served, as the card states it.
PROTOCOL_VERSION = "0.3.0"

# HS-54, HS-67: JSON-RPC's codes and A2A's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
EXTENDED_CARD_NOT_CONFIGURED = -32007
VERSION_NOT_SUPPORTED = -32009

# HS-57: states after which a task takes no message and no cancel.
TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
# HS-60: states that end a stream (`final: true`).
FINAL = TERMINAL | {"input-required"}

# HS-62: the texts that answer every pending approval request at once.
ANSWER_TEXTS = {"approve": True, "reject": False}
ANSWER_HINT = (
    'answer with a data part {"approved": true|false} (with "id" to answer one '
    'request) or the text "approve" or "reject"'
)

# HS-55: what a client may send and accept.
INPUT_MODES = ["text/plain", "application/json"]
OUTPUT_MODES = ["text/plain", "application/json"]


class RpcError(Exception):
    """A request answered with a JSON-RPC error object (HS-54)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Envelope:
    """A checked JSON-RPC request (HS-54)."""

    id: str | int
    method: str
    params: dict[str, Any]


def parse_envelope(body: bytes) -> Envelope | tuple[str | int | None, RpcError]:
    """A JSON-RPC request, or the id to answer and the error (HS-54)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None, RpcError(PARSE_ERROR, "request body is not valid JSON")
    if isinstance(data, list):
        return None, RpcError(INVALID_REQUEST, "batch requests are not supported")
    if not isinstance(data, dict):
        return None, RpcError(INVALID_REQUEST, "a request must be a JSON object")
    rid = data.get("id")
    if "id" not in data or rid is None:
        return None, RpcError(
            INVALID_REQUEST, "'id' is required: A2A methods are requests"
        )
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        return None, RpcError(INVALID_REQUEST, "'id' must be a string or an integer")
    if data.get("jsonrpc") != "2.0":
        return rid, RpcError(INVALID_REQUEST, "'jsonrpc' must be \"2.0\"")
    method = data.get("method")
    if not isinstance(method, str):
        return rid, RpcError(INVALID_REQUEST, "'method' must be a string")
    params = data.get("params", {})
    if not isinstance(params, dict):
        return rid, RpcError(INVALID_PARAMS, "'params' must be an object")
    return Envelope(rid, method, params)


def optional_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{where}.{key} must be a non-empty string")
    return value


@dataclass
class Incoming:
    """A checked `message/send` or `message/stream` request (HS-55)."""

    message: dict[str, Any]
    texts: list[str]
    data: list[dict[str, Any]]
    task_id: str | None
    context_id: str | None
    blocking: bool
    history_length: int | None


def history_length(config: Mapping[str, Any], where: str) -> int | None:
    value = config.get("historyLength")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RpcError(
            INVALID_PARAMS, f"{where}.historyLength must be a non-negative integer"
        )
    return value


def parse_message(params: Mapping[str, Any]) -> Incoming:
    message = params.get("message")
    if not isinstance(message, dict):
        raise RpcError(INVALID_PARAMS, "params.message must be an object")
    if message.get("kind", "message") != "message":
        raise RpcError(INVALID_PARAMS, 'params.message.kind must be "message"')
    if message.get("role") != "user":
        raise RpcError(INVALID_PARAMS, 'params.message.role must be "user"')
    if optional_str(message, "messageId", "params.message") is None:
        raise RpcError(INVALID_PARAMS, "params.message.messageId is required")
    task_id = optional_str(message, "taskId", "params.message")
    context_id = optional_str(message, "contextId", "params.message")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise RpcError(INVALID_PARAMS, "params.message.parts must be a non-empty array")
    texts: list[str] = []
    data: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        where = f"params.message.parts[{index}]"
        kind = part.get("kind") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "data" and isinstance(part.get("data"), dict):
            data.append(part["data"])
        elif kind == "file":
            # HS-67: files are not taken.
            raise RpcError(
                CONTENT_TYPE_NOT_SUPPORTED, f"{where}: file parts are not supported"
            )
        else:
            raise RpcError(
                INVALID_PARAMS,
                f"{where} must be a text part {{kind, text}} or a data part "
                "{kind, data}",
            )
    config = params.get("configuration") or {}
    if not isinstance(config, dict):
        raise RpcError(INVALID_PARAMS, "params.configuration must be an object")
    if config.get("pushNotificationConfig") is not None:
        raise RpcError(PUSH_NOT_SUPPORTED, "push notifications are not supported")
    modes = config.get("acceptedOutputModes")
    if modes is not None:
        if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
            raise RpcError(
                INVALID_PARAMS,
                "params.configuration.acceptedOutputModes must be an array of strings",
            )
        if modes and not {"text/plain", "text", "*/*"} & set(modes):
            raise RpcError(
                CONTENT_TYPE_NOT_SUPPORTED,
                f"the agent answers in {OUTPUT_MODES}, none of which is accepted",
            )
    blocking = config.get("blocking", True)
    if not isinstance(blocking, bool):
        raise RpcError(INVALID_PARAMS, "params.configuration.blocking must be a bool")
    return Incoming(
        message=message,
        texts=texts,
        data=data,
        task_id=task_id,
        context_id=context_id,
        blocking=blocking,
        history_length=history_length(config, "params.configuration"),
    )


def answers(
    task_id: str, pending: Mapping[str, Content], incoming: Incoming
) -> list[Content]:
    """HS-62: the approval responses a message to an ``input-required`` task carries,
    one per pending request; any other text of the message goes along with them."""
    decided: dict[str, bool] = {}
    default: bool | None = None
    for index, data in enumerate(incoming.data):
        approved = data.get("approved")
        if not isinstance(approved, bool) or set(data) - {"approved", "id"}:
            raise RpcError(
                INVALID_PARAMS,
                f"data part {index} is not an approval answer: {ANSWER_HINT}",
            )
        request_id = data.get("id")
        if request_id is None:
            default = approved
        elif request_id not in pending:
            raise RpcError(
                INVALID_PARAMS,
                f"data part {index}: the task waits for no request {request_id!r}",
            )
        else:
            decided[str(request_id)] = approved
    if not incoming.data:
        answer = ANSWER_TEXTS.get("".join(incoming.texts).strip().lower())
        if answer is None:
            raise RpcError(
                INVALID_PARAMS,
                f"task {task_id} waits for an approval: {ANSWER_HINT}",
            )
        default = answer
    out: list[Content] = []
    for request_id, request in pending.items():
        approved = decided.get(request_id, default)
        if approved is None:
            raise RpcError(
                INVALID_PARAMS,
                f"approval request {request_id!r} has no answer: {ANSWER_HINT}",
            )
        out.append(request.to_function_approval_response(approved))
    return out


def request_part(request: Content) -> dict[str, Any]:
    """HS-61: one approval request as a data part."""
    call = request.function_call
    arguments: Any = None
    if call is not None:
        try:
            arguments = call.parse_arguments()
        except ContentError:
            # the model's raw text, when it is not a JSON object
            arguments = call.arguments
    return {
        "kind": "data",
        "data": {
            "type": "function_approval_request",
            "id": request.id,
            "function_call": {
                "call_id": call.call_id if call is not None else None,
                "name": call.name if call is not None else None,
                "arguments": arguments,
            },
        },
    }


def text_part(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def check_version(version: str | None, spoken: str) -> None:
    """HS-50, HS-71: a request whose ``A2A-Version`` header names another version than
    the one its method belongs to (``spoken``, "0.3" or "1.0") is refused."""
    if version is None or not version.strip():
        return
    if version.strip().split(".")[:2] != spoken.split("."):
        raise RpcError(
            VERSION_NOT_SUPPORTED,
            f"A2A-Version {version.strip()!r} does not match the method called, "
            f"which is A2A {spoken}'s; this server speaks A2A 0.3 and 1.0",
        )


def agent_card(name: str, agent: SupportsAgentRun, url: str) -> dict[str, Any]:
    """HS-51, HS-52: the agent card of the agent ``name`` served at ``url``."""
    description = getattr(agent, "description", None)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "name": name,
        "description": description
        if isinstance(description, str) and description
        else f"The minagent agent {name}.",
        "url": url,
        "preferredTransport": "JSONRPC",
        # HS-71: A2A 1.0 clients read this list; 0.3 clients the fields around it
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "version": __version__,
        "capabilities": {
            "streaming": True,
            "pushNotifications": False,
            "stateTransitionHistory": False,
        },
        "defaultInputModes": list(INPUT_MODES),
        "defaultOutputModes": list(OUTPUT_MODES),
        "skills": skills(agent),
    }


def skills(agent: SupportsAgentRun) -> list[dict[str, Any]]:
    """HS-52: one skill per named tool of the agent."""
    options = getattr(agent, "default_options", None) or {}
    tools = options.get("tools") or () if isinstance(options, Mapping) else ()
    out: list[dict[str, Any]] = []
    for item in tools:
        name = getattr(item, "name", None)
        if not isinstance(name, str) or not name:
            continue
        description = getattr(item, "description", None)
        skill: dict[str, Any] = {
            "id": name,
            "name": name,
            "description": description
            if isinstance(description, str) and description
            else name,
            "tags": ["tool"],
        }
        if getattr(item, "approval_mode", None) == "always_require":
            skill["tags"] = ["tool", "approval-required"]
        out.append(skill)
    return out
