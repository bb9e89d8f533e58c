"""A2A 1.0's JSON-RPC methods, as a translation of 0.3's (spec/hosting.md HS-71 ..
HS-73), without I/O.

The host keeps one task machine and speaks 0.3's wire objects inside; a request that
calls a 1.0 method (``SendMessage``, ``GetTask``, ...) has its params translated to
0.3's shape on the way in, and its result and events translated to 1.0's ProtoJSON on
the way out: no ``kind`` fields, members that name the variant (``{"task": ...}``,
``{"statusUpdate": ...}``, a part's ``text`` or ``data``), enums in
SCREAMING_SNAKE_CASE (``TASK_STATE_COMPLETED``, ``ROLE_AGENT``), and no ``final`` flag
on status updates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .a2a_wire import (
    EXTENDED_CARD_NOT_CONFIGURED,
    INVALID_PARAMS,
    PUSH_NOT_SUPPORTED,
    UNSUPPORTED_OPERATION,
    RpcError,
)

__all__ = ["METHODS", "event_to_v1", "is_v1_method", "params_to_v03", "result_to_v1"]

# HS-71: each 1.0 method served, and the 0.3 method it is.
METHODS = {
    "SendMessage": "message/send",
    "SendStreamingMessage": "message/stream",
    "GetTask": "tasks/get",
    "CancelTask": "tasks/cancel",
    "SubscribeToTask": "tasks/resubscribe",
}
# HS-73: the 1.0 methods refused, with the code and the reason.
REFUSED = {
    "ListTasks": (UNSUPPORTED_OPERATION, "listing tasks is not supported"),
    "CreateTaskPushNotificationConfig": (
        PUSH_NOT_SUPPORTED,
        "push notifications are not supported",
    ),
    "GetTaskPushNotificationConfig": (
        PUSH_NOT_SUPPORTED,
        "push notifications are not supported",
    ),
    "ListTaskPushNotificationConfigs": (
        PUSH_NOT_SUPPORTED,
        "push notifications are not supported",
    ),
    "DeleteTaskPushNotificationConfig": (
        PUSH_NOT_SUPPORTED,
        "push notifications are not supported",
    ),
    "GetExtendedAgentCard": (
        EXTENDED_CARD_NOT_CONFIGURED,
        "there is no authenticated extended card",
    ),
}

_STATES = {
    state: "TASK_STATE_" + state.upper().replace("-", "_")
    for state in (
        "submitted",
        "working",
        "completed",
        "failed",
        "canceled",
        "rejected",
        "input-required",
        "auth-required",
    )
}
_ROLES = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
# what a message carries over unchanged, both ways
_MESSAGE_FIELDS = (
    "messageId",
    "contextId",
    "taskId",
    "metadata",
    "extensions",
    "referenceTaskIds",
)


def is_v1_method(method: str) -> bool:
    """Whether ``method`` is one of A2A 1.0's (served or refused)."""
    return method in METHODS or method in REFUSED


def params_to_v03(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """HS-72: a 1.0 method's params in 0.3's shape; ``method`` is the 1.0 name.
    Raises `RpcError` for a refused method or a tenant."""
    refused = REFUSED.get(method)
    if refused is not None:
        raise RpcError(*refused)
    if params.get("tenant"):
        raise RpcError(UNSUPPORTED_OPERATION, "tenants are not supported")
    if METHODS[method] not in ("message/send", "message/stream"):
        return {k: v for k, v in params.items() if k != "tenant"}
    message = params.get("message")
    if not isinstance(message, dict):
        raise RpcError(INVALID_PARAMS, "params.message must be an object")
    out: dict[str, Any] = {"message": _message_to_v03(message)}
    config = params.get("configuration")
    if config is not None:
        if not isinstance(config, dict):
            raise RpcError(INVALID_PARAMS, "params.configuration must be an object")
        converted: dict[str, Any] = {
            k: config[k]
            for k in ("acceptedOutputModes", "historyLength")
            if k in config
        }
        if config.get("taskPushNotificationConfig") is not None:
            converted["pushNotificationConfig"] = config["taskPushNotificationConfig"]
        if "returnImmediately" in config:
            immediately = config["returnImmediately"]
            if not isinstance(immediately, bool):
                raise RpcError(
                    INVALID_PARAMS,
                    "params.configuration.returnImmediately must be a bool",
                )
            converted["blocking"] = not immediately
        out["configuration"] = converted
    return out


def _message_to_v03(message: Mapping[str, Any]) -> dict[str, Any]:
    if message.get("role") != "ROLE_USER":
        raise RpcError(INVALID_PARAMS, 'params.message.role must be "ROLE_USER"')
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise RpcError(INVALID_PARAMS, "params.message.parts must be an array")
    out = {k: message[k] for k in _MESSAGE_FIELDS if k in message}
    out.update(kind="message", role="user", parts=[_part_to_v03(p) for p in parts])
    return out


def _part_to_v03(part: Any) -> dict[str, Any]:
    # A part that fits no variant becomes one `parse_message` refuses with the
    # part's index.
    if not isinstance(part, dict):
        return {}
    extra = {"metadata": part["metadata"]} if "metadata" in part else {}
    if "text" in part:
        return {"kind": "text", "text": part["text"], **extra}
    if "data" in part:
        return {"kind": "data", "data": part["data"], **extra}
    if "raw" in part or "url" in part:
        return {"kind": "file", "file": {}}
    return {}


def result_to_v1(method: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """HS-72: a 0.3 result (a task) as the 1.0 method's; ``method`` is the 1.0 name."""
    task = _task(result)
    return {"task": task} if method == "SendMessage" else task


def event_to_v1(event: Mapping[str, Any]) -> dict[str, Any]:
    """HS-72: one 0.3 stream event as 1.0's `StreamResponse`."""
    kind = event["kind"]
    if kind == "task":
        return {"task": _task(event)}
    if kind == "status-update":
        return {
            "statusUpdate": {
                "taskId": event["taskId"],
                "contextId": event["contextId"],
                "status": _status(event["status"]),
            }
        }
    return {
        "artifactUpdate": {
            "taskId": event["taskId"],
            "contextId": event["contextId"],
            "artifact": _artifact(event["artifact"]),
            "append": event["append"],
            "lastChunk": event["lastChunk"],
        }
    }


def _task(task: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": task["id"],
        "contextId": task["contextId"],
        "status": _status(task["status"]),
        "artifacts": [_artifact(a) for a in task["artifacts"]],
        "history": [_message(m) for m in task["history"]],
    }


def _status(status: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "state": _STATES[status["state"]],
        "timestamp": status["timestamp"],
    }
    if "message" in status:
        out["message"] = _message(status["message"])
    return out


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: message[k] for k in _MESSAGE_FIELDS if k in message}
    out["role"] = _ROLES[message["role"]]
    out["parts"] = [_part(p) for p in message["parts"]]
    return out


def _artifact(artifact: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "artifactId": artifact["artifactId"],
        "name": artifact["name"],
        "parts": [_part(p) for p in artifact["parts"]],
    }


def _part(part: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = (
        {"text": part["text"]} if part["kind"] == "text" else {"data": part["data"]}
    )
    if "metadata" in part:
        out["metadata"] = part["metadata"]
    return out
