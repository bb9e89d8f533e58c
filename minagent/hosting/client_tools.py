"""Tools declared by the client (spec/hosting.md HS-28 .. HS-30, HS-32).

A tool a request declares is the client's: the agent's model may call it, but the
function lives with the client. Each such tool becomes a declaration-only
`FunctionTool` (``func=None``) for that one run, so the tool loop hands a call of it
back unexecuted and ends the run after the batch (spec/loop.md LP-11): the call comes
back flagged as a user-input request. The protocol module then answers with the call
(a Responses ``function_call`` item, a Chat Completions ``tool_calls`` entry), and the
client's next request carries the result.

What a run may ask that neither OpenAI protocol can carry (an approval request, or a
call of one of the agent's own declaration-only tools) is refused as a whole (HS-30):
the client could neither see nor answer it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from minagent import Content, FunctionTool, Message, SupportsAgentRun

from .openai_wire import HostingError, bad_request

__all__ = [
    "agent_tool_names",
    "chat_message",
    "chat_tools",
    "declared_tool",
    "handed_back",
    "refuse_name_clashes",
    "text_arguments",
    "tool_calls",
]


def declared_tool(
    name: Any, description: Any, parameters: Any, where: str
) -> FunctionTool:
    """A declaration-only tool from a client's declaration (HS-29); bad fields are a 400
    naming ``where``."""
    if not isinstance(name, str) or not name:
        raise bad_request(f"{where}.name must be a non-empty string", "invalid_tools")
    if description is not None and not isinstance(description, str):
        raise bad_request(f"{where}.description must be a string", "invalid_tools")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise bad_request(
            f"{where}.parameters must be a JSON schema object", "invalid_tools"
        )
    # the request's dict is copied: the run never holds what the client sent
    return FunctionTool(
        name=name,
        description=description or "",
        func=None,
        parameters=json.loads(json.dumps(parameters)),
    )


def agent_tool_names(agent: SupportsAgentRun) -> set[str]:
    """The names of the agent's own tools, as far as the agent shows them."""
    options = getattr(agent, "default_options", None)
    tools = options.get("tools") if isinstance(options, Mapping) else None
    names: set[str] = set()
    for item in tools or ():
        if isinstance(item, Mapping):
            function = item.get("function")
            name = function.get("name") if isinstance(function, Mapping) else None
            name = name or item.get("name")
        else:
            name = getattr(item, "name", None) or getattr(item, "__name__", None)
        if isinstance(name, str):
            names.add(name)
    return names


def refuse_name_clashes(agent: SupportsAgentRun, tools: Sequence[FunctionTool]) -> None:
    """HS-29: a client tool named like one of the agent's own tools is a 400 (the run
    could not tell whose call it is); two client tools of one name are too."""
    own = agent_tool_names(agent)
    seen: set[str] = set()
    for item in tools:
        if item.name in own:
            raise bad_request(
                f"the tool {item.name!r} is already one of the agent's own tools",
                "invalid_tools",
            )
        if item.name in seen:
            raise bad_request(f"two tools are named {item.name!r}", "invalid_tools")
        seen.add(item.name)


def text_arguments(arguments: Any) -> str:
    """A call's arguments as the JSON text both protocols carry."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments)


def handed_back(response: Any, tools: Sequence[FunctionTool]) -> list[Content]:
    """The client's calls the run handed back, in order (HS-28); anything else the
    run asks is refused (HS-30)."""
    names = {item.name for item in tools}
    calls: list[Content] = []
    for request in getattr(response, "user_input_requests", None) or ():
        if request.type == "function_call" and request.name in names:
            calls.append(request)
            continue
        # HS-30: an approval request or a call of the agent's own declaration-only
        # tool: neither OpenAI protocol has a way to ask it or to answer it.
        what = (
            "an approval"
            if request.type == "function_approval_request"
            else f"input through its own tool {getattr(request, 'name', None)!r}"
        )
        raise HostingError(
            501,
            f"the agent asked for {what}, which this protocol cannot carry; "
            "serve the agent over A2A or AG-UI for runs that pause",
            "server_error",
            "unsupported_agent_request",
        )
    return calls


# -- Chat Completions (HS-32) -------------------------------------------------------------


def chat_tools(agent: SupportsAgentRun, raw: Any) -> list[FunctionTool]:
    """HS-32: a Chat Completions ``tools`` array as declaration-only tools; only the
    ``function`` type."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("'tools' must be an array", "invalid_tools")
    tools: list[FunctionTool] = []
    for index, item in enumerate(raw):
        where = f"tools[{index}]"
        kind = item.get("type") if isinstance(item, dict) else None
        function = item.get("function") if isinstance(item, dict) else None
        if kind != "function" or not isinstance(function, dict):
            raise bad_request(
                f"{where}: only tools of type 'function' with a 'function' object "
                "are supported",
                "unsupported_tool",
            )
        tools.append(
            declared_tool(
                function.get("name"),
                function.get("description"),
                function.get("parameters"),
                f"{where}.function",
            )
        )
    refuse_name_clashes(agent, tools)
    return tools


def chat_message(item: Mapping[str, Any], index: int) -> Message:
    """HS-32: an assistant message with ``tool_calls``, or a ``tool`` message, as a
    minagent message."""
    where = f"messages[{index}]"
    if item.get("role") == "tool":
        call_id = item.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise bad_request(
                f"{where}.tool_call_id must be a non-empty string", "invalid_messages"
            )
        result = _text(item.get("content"), f"{where}.content")
        return Message("tool", [Content.from_function_result(call_id, result=result)])
    contents: list[Content] = []
    text = item.get("content")
    if text is not None:
        text = _text(text, f"{where}.content")
        if text:
            contents.append(Content.from_text(text))
    calls = item.get("tool_calls")
    if not isinstance(calls, list):
        raise bad_request(f"{where}.tool_calls must be an array", "invalid_messages")
    for number, entry in enumerate(calls):
        spot = f"{where}.tool_calls[{number}]"
        function = entry.get("function") if isinstance(entry, dict) else None
        call_id = entry.get("id") if isinstance(entry, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(call_id, str)
            or not call_id
        ):
            raise bad_request(
                f"{spot} must have an 'id' and a 'function'", "invalid_messages"
            )
        name, arguments = function.get("name"), function.get("arguments", "{}")
        if not isinstance(name, str) or not name or not isinstance(arguments, str):
            raise bad_request(
                f"{spot}.function needs a name and arguments as a JSON string",
                "invalid_messages",
            )
        contents.append(Content.from_function_call(call_id, name, arguments))
    return Message("assistant", contents)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict)
        and p.get("type") == "text"
        and isinstance(p.get("text"), str)
        for p in content
    ):
        return "".join(p["text"] for p in content)
    raise bad_request(
        f"{where} must be a string or an array of text parts", "invalid_messages"
    )


def tool_calls(calls: Sequence[Content]) -> list[dict[str, Any]]:
    """HS-32: the calls handed back as a Chat Completions ``tool_calls`` array."""
    return [
        {
            "id": call.call_id,
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": text_arguments(call.arguments),
            },
        }
        for call in calls
    ]
