"""The OpenAI Responses API on the wire, sans I/O (spec/hosting.md HS-20 .. HS-24,
HS-29): a request checked into a `Plan`, and the shapes of what is sent back (the
response object, its output items, usage).

Parsing is separate from running (`responses.py`): every malformed request is refused
here, with a 400 naming the field, before anything runs.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minagent import Content, FunctionTool, Message, SupportsAgentRun

from .client_tools import declared_tool, refuse_name_clashes, text_arguments
from .openai_wire import bad_request
from .openai_wire import usage as chat_usage

__all__ = [
    "Plan",
    "call_item",
    "message_item",
    "new_id",
    "output_items",
    "plan",
    "response_body",
    "text_part",
    "usage_of",
]

# HS-22: request parameters read here; every other one with a value is refused
_OWN = frozenset(
    {
        "model",
        "input",
        "instructions",
        "stream",
        "store",
        "previous_response_id",
        "conversation",
        "tools",
        "tool_choice",
        "metadata",
    }
)
# HS-22: request parameter -> the run option it becomes, and the type it must have
_FORWARDED: dict[str, tuple[str, tuple[type, ...]]] = {
    "temperature": ("temperature", (int, float)),
    "top_p": ("top_p", (int, float)),
    "max_output_tokens": ("max_tokens", (int,)),
    "parallel_tool_calls": ("parallel_tool_calls", (bool,)),
    "user": ("user", (str,)),
}


def new_id(prefix: str) -> str:
    """A fresh id of the kind ``prefix`` names (``resp``, ``msg``, ``fc``)."""
    return f"{prefix}_{uuid.uuid4().hex}"


# -- the request -------------------------------------------------------------------------


@dataclass
class Plan:
    """A checked request: everything the run needs, decided before it starts."""

    agent_name: str
    agent: SupportsAgentRun
    messages: list[Message]
    options: dict[str, Any]
    tools: list[FunctionTool]
    stream: bool
    store: bool
    previous_response_id: str | None
    conversation: str | None
    echo: dict[str, Any]  # request fields the response object repeats
    response_id: str = field(default_factory=lambda: new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))


def plan(
    request: Mapping[str, Any],
    agent_of: Callable[[Mapping[str, Any]], tuple[str, SupportsAgentRun]],
) -> Plan:
    """HS-20 .. HS-22, HS-25, HS-29: the request checked, or a 400 naming the problem."""
    for key, value in request.items():
        if key not in _OWN and key not in _FORWARDED and value is not None:
            raise bad_request(
                f"the parameter {key[:100]!r} is not supported by this server",
                "unsupported_parameter",
                key[:100],
            )
    name, agent = agent_of(request)
    messages = _input(request.get("input"))
    options: dict[str, Any] = {}
    for key, (option, types) in _FORWARDED.items():
        value = request.get(key)
        if value is None:
            continue
        wrong_bool = isinstance(value, bool) and bool not in types
        if wrong_bool or not isinstance(value, types):
            raise bad_request(f"{key!r} has the wrong type", "invalid_parameter", key)
        options[option] = value
    instructions = request.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise bad_request(
                "'instructions' must be a string", "invalid_parameter", "instructions"
            )
        options["instructions"] = instructions
    tools = _tools(request.get("tools"))
    refuse_name_clashes(agent, tools)
    choice = _tool_choice(request.get("tool_choice"), tools)
    if choice is not None:
        options["tool_choice"] = choice
    stream = _flag(request, "stream", False)
    store = _flag(request, "store", True)
    previous = request.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise bad_request(
            "'previous_response_id' must be a non-empty string",
            "invalid_parameter",
            "previous_response_id",
        )
    conversation = _conversation(request.get("conversation"))
    if previous is not None and conversation is not None:
        raise bad_request(
            "'previous_response_id' and 'conversation' cannot be used together",
            "invalid_parameter",
            "conversation",
        )
    metadata = request.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(v, str) for v in metadata.values())
    ):
        raise bad_request(
            "'metadata' must be an object of strings", "invalid_parameter", "metadata"
        )
    echo = {
        "instructions": instructions,
        "metadata": dict(metadata or {}),
        "tools": json.loads(json.dumps(request.get("tools") or [])),
        "tool_choice": request.get("tool_choice") or "auto",
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "max_output_tokens": request.get("max_output_tokens"),
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "user": request.get("user"),
    }
    return Plan(
        name,
        agent,
        messages,
        options,
        tools,
        stream,
        store,
        previous,
        conversation,
        echo,
    )


def _flag(request: Mapping[str, Any], key: str, default: bool) -> bool:
    value = request.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"{key!r} must be true or false", "invalid_parameter", key)
    return value


def _conversation(raw: Any) -> str | None:
    """HS-25: ``conversation`` is an id or ``{"id": ...}``."""
    if raw is None:
        return None
    value = raw.get("id") if isinstance(raw, dict) else raw
    if not isinstance(value, str) or not value:
        raise bad_request(
            "'conversation' must be a non-empty id or an object with one",
            "invalid_parameter",
            "conversation",
        )
    return value


def _text_of(content: Any, where: str, kinds: tuple[str, ...]) -> str:
    """A string, or an array of text parts of the given kinds (HS-21)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for index, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            text = part.get("text") if isinstance(part, dict) else None
            if kind not in kinds or not isinstance(text, str):
                raise bad_request(
                    f"{where}[{index}]: only {' and '.join(kinds)} parts are supported",
                    "unsupported_content",
                )
            texts.append(text)
        return "".join(texts)
    raise bad_request(
        f"{where} must be a string or an array of text parts", "invalid_input"
    )


_ROLES = {
    "user": "user",
    "system": "system",
    "developer": "system",
    "assistant": "assistant",
}


def _input(raw: Any) -> list[Message]:
    """HS-21: ``input`` as minagent messages. Consecutive ``function_call`` items are
    one assistant message; consecutive ``function_call_output`` items one tool
    message."""
    if isinstance(raw, str):
        return [Message("user", text=raw)]
    if not isinstance(raw, list) or not raw:
        raise bad_request(
            "'input' must be a string or a non-empty array of input items",
            "invalid_input",
        )
    out: list[Message] = []
    group: list[Content] = []
    group_role = ""

    def flush() -> None:
        nonlocal group
        if group:
            out.append(Message(group_role, group))
            group = []

    for index, item in enumerate(raw):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an object", "invalid_input")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            flush()
            role = _ROLES.get(item.get("role"))  # type: ignore[arg-type]
            if role is None:
                raise bad_request(
                    f"{where}.role must be user, system, developer or assistant",
                    "invalid_input",
                )
            kinds = (
                ("output_text", "input_text")
                if role == "assistant"
                else ("input_text",)
            )
            text = _text_of(item.get("content"), f"{where}.content", kinds)
            out.append(Message(role, text=text))
        elif kind in ("function_call", "function_call_output"):
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise bad_request(
                    f"{where}.call_id must be a non-empty string", "invalid_input"
                )
            role = "assistant" if kind == "function_call" else "tool"
            if group_role != role:
                flush()
                group_role = role
            if kind == "function_call":
                name, arguments = item.get("name"), item.get("arguments", "{}")
                if not isinstance(name, str) or not name:
                    raise bad_request(
                        f"{where}.name must be a non-empty string", "invalid_input"
                    )
                if not isinstance(arguments, str):
                    raise bad_request(
                        f"{where}.arguments must be a JSON string", "invalid_input"
                    )
                group.append(Content.from_function_call(call_id, name, arguments))
            else:
                output = _text_of(
                    item.get("output"), f"{where}.output", ("input_text", "output_text")
                )
                group.append(Content.from_function_result(call_id, result=output))
        else:
            raise bad_request(
                f"{where}: input items of type {kind!r} are not supported",
                "unsupported_input_item",
            )
    flush()
    return out


def _tools(raw: Any) -> list[FunctionTool]:
    """HS-29: the client's function tools; any other tool type is refused."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("'tools' must be an array", "invalid_tools")
    tools: list[FunctionTool] = []
    for index, item in enumerate(raw):
        where = f"tools[{index}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if kind != "function" or not isinstance(item, dict):
            raise bad_request(
                f"{where}: tools of type {kind!r} are not supported; only 'function'",
                "unsupported_tool",
            )
        strict = item.get("strict")
        if strict is not None and not isinstance(strict, bool):
            raise bad_request(f"{where}.strict must be true or false", "invalid_tools")
        tools.append(
            declared_tool(
                item.get("name"), item.get("description"), item.get("parameters"), where
            )
        )
    return tools


def _tool_choice(raw: Any, tools: list[FunctionTool]) -> Any:
    """HS-22: ``tool_choice`` as the run's option (None: the default, ``auto``)."""
    if raw is None or raw == "auto":
        return None
    if raw in ("none", "required"):
        return raw
    if isinstance(raw, dict) and raw.get("type") == "function":
        name = raw.get("name")
        if not isinstance(name, str) or name not in {t.name for t in tools}:
            raise bad_request(
                "'tool_choice' names no declared function",
                "invalid_parameter",
                "tool_choice",
            )
        return {"mode": "required", "required_function_name": name}
    raise bad_request(
        "'tool_choice' must be auto, none, required or a function",
        "unsupported_parameter",
        "tool_choice",
    )


# -- the response object (HS-23) --------------------------------------------------------


def response_body(
    plan: Plan,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": plan.response_id,
        "object": "response",
        "created_at": plan.created_at,
        "status": status,
        "error": error,
        "incomplete_details": None,
        "model": plan.agent_name,
        "output": output,
        "previous_response_id": plan.previous_response_id,
        "conversation": {"id": plan.conversation} if plan.conversation else None,
        "store": plan.store,
        "text": {"format": {"type": "text"}},
        "usage": usage,
        **plan.echo,
    }


def usage_of(details: Any) -> dict[str, Any]:
    """The Responses API's usage object from a run's `UsageDetails` (HS-23)."""
    counts = chat_usage(details)
    cached = getattr(details, "cache_read_input_token_count", None) if details else None
    return {
        "input_tokens": counts["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": int(cached or 0)},
        "output_tokens": counts["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts["total_tokens"],
    }


def message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [text_part(text)] if status == "completed" else [],
    }


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def call_item(
    item_id: str, call: Content, arguments: str, status: str
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call.call_id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


def output_items(final: Any, calls: list[Content]) -> list[dict[str, Any]]:
    """HS-23: the run's assistant text as message items (a run of text contents, one
    item; any other content ends it) and the calls handed back as function_call items,
    in transcript order. The agent's own calls and their results are not shown."""
    handed = {call.call_id for call in calls}
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        text = "".join(texts)
        texts.clear()
        if text:
            items.append(message_item(new_id("msg"), text, "completed"))

    for message in final.messages:
        if message.role == "assistant":
            for content in message.contents:
                if content.type == "text":
                    texts.append(content.text or "")
                    continue
                flush()
                if content.type == "function_call" and content.call_id in handed:
                    arguments = text_arguments(content.arguments)
                    items.append(
                        call_item(new_id("fc"), content, arguments, "completed")
                    )
        flush()
    return items
