"""Request half of the sans-I/O Converse codec (spec/bedrock.md BR-1 .. BR-8).

Theory of operation
-------------------
``build_request(messages, options)`` renders minagent messages and options as the JSON
body of ``POST /model/{modelId}/converse`` (and ``converse-stream``: the same body). The
model is in the path, not the body (BR-1). It holds no state and never mutates its
inputs (PV-2). System and developer texts go to ``system`` (BR-2); function results
become ``toolResult`` blocks of a ``user`` turn, placed first (BR-3); consecutive turns of
one role are merged, as Converse requires alternating roles.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._minagent import Content, Message, ResponseFormat, ToolSpec, tool_specs

__all__ = ["build_request"]

_NOT_SENT_TYPES = frozenset(
    {
        "usage",
        "error",
        "text_reasoning",
        "function_approval_request",
        "function_approval_response",
    }
)
_SYSTEM_ROLES = frozenset({"system", "developer"})
_USER_ROLES = frozenset({"user", "tool"})
# BR-5: minagent's option name -> inferenceConfig's
_INFERENCE = {
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "stop": "stopSequences",
}
# BR-5: options passed through under their Converse name
_PASS_THROUGH = (
    "additionalModelRequestFields",
    "additionalModelResponseFieldPaths",
    "guardrailConfig",
    "performanceConfig",
    "promptVariables",
    "requestMetadata",
    "serviceTier",
)
# BR-8: options that Converse has no place for; each refused with a clear error
_REFUSED = {
    "frequency_penalty": "Converse has no frequency penalty",
    "presence_penalty": "Converse has no presence penalty",
    "seed": "Converse has no seed",
    "logit_bias": "Converse has no logit bias",
    "top_k": "Converse has no top_k: pass it in "
    "options['additionalModelRequestFields'] for a model that takes it",
}


def build_request(
    messages: Sequence[Message],
    options: Mapping[str, Any] | None = None,
    *,
    model: str,
) -> dict[str, Any]:
    """The JSON body of a Converse request for these messages and options (BR-1)."""
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    chosen = opts.get("model")
    if chosen is not None and chosen != model:
        raise ValueError(
            f"options['model']={chosen!r} differs from the client's model {model!r}: "
            "Bedrock names the model in the URL; create a client for that model"
        )
    for key, why in _REFUSED.items():
        if key in opts:
            raise ValueError(f"option {key!r} cannot be sent: {why}")
    system, turns = _render(messages, opts.get("instructions"))
    body: dict[str, Any] = {"messages": turns}
    if system:
        body["system"] = system
    inference: dict[str, Any] = {}
    for ours, theirs in _INFERENCE.items():
        if ours in opts:
            inference[theirs] = _plain(opts[ours], ours)
    if "max_completion_tokens" in opts and "maxTokens" not in inference:
        inference["maxTokens"] = opts["max_completion_tokens"]
    if isinstance(inference.get("stopSequences"), str):
        inference["stopSequences"] = [inference["stopSequences"]]
    limit = inference.get("maxTokens")
    if limit is not None and (
        not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
    ):
        raise ValueError(f"max_tokens must be a positive int, got {limit!r}")
    if inference:
        body["inferenceConfig"] = inference
    tool_config = _tool_config(opts, _has_tool_blocks(turns))
    if tool_config:
        body["toolConfig"] = tool_config
    output = _output_config(opts)
    if output:
        body["outputConfig"] = output
    for key in _PASS_THROUGH:
        if key in opts:
            body[key] = _plain(opts[key], key)
    extra = opts.get("extra_body")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise TypeError(
                f"options['extra_body'] must be a dict, got {type(extra).__name__}"
            )
        for key, value in _plain(dict(extra), "extra_body").items():
            if value is None:
                body.pop(key, None)  # PV-3
            else:
                body[key] = value
    return body


def _plain(value: Any, where: str) -> Any:
    """``value`` deep-copied as plain JSON data (PV-2); non-finite floats refused."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"option {where!r} is not JSON data: {exc}") from None


# --------------------------------------------------------------------------------------------
# Structured output (BR-7)


def _output_config(opts: Mapping[str, Any]) -> dict[str, Any]:
    if "response_format" not in opts:
        return {}
    fmt = ResponseFormat.of(opts["response_format"])
    if fmt.kind == "json":
        raise ValueError(
            "Converse has no free-form JSON mode, so response_format 'json' cannot be "
            "sent: give a schema instead (a dataclass, a TypedDict, a pydantic model or "
            "a JSON schema dict)"
        )
    if fmt.kind != "json_schema":
        return {}
    wire = fmt.wire["json_schema"]
    definition: dict[str, Any] = {
        "schema": json.dumps(wire["schema"], separators=(",", ":"))
    }
    if wire.get("name"):
        definition["name"] = wire["name"]
    if wire.get("description"):
        definition["description"] = wire["description"]
    return {
        "textFormat": {"type": "json_schema", "structure": {"jsonSchema": definition}}
    }


# --------------------------------------------------------------------------------------------
# Messages (BR-2 .. BR-4)

Turn = tuple[str, list[dict[str, Any]]]


def _render(
    messages: Sequence[Message], instructions: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    system: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        first = messages[0] if messages else None
        if not (
            first is not None and first.role == "system" and first.text == instructions
        ):
            system.append({"text": instructions})
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        if message.role in _SYSTEM_ROLES:
            for content in message.contents:
                if content.type in _NOT_SENT_TYPES:
                    continue
                if content.type != "text":
                    raise ValueError(
                        f"messages[{index}]: a {message.role} message can only hold "
                        f"text, not {content.type!r}"
                    )
                if content.text:
                    system.append({"text": content.text})
        else:
            turns.extend(_turns(message, index))
    merged: list[Turn] = []
    for role, blocks in turns:
        if merged and merged[-1][0] == role:
            merged[-1][1].extend(blocks)
        else:
            merged.append((role, list(blocks)))
    for role, blocks in merged:
        if role == "user":
            blocks.sort(key=lambda b: "toolResult" not in b)  # stable (BR-3)
    return system, [{"role": role, "content": blocks} for role, blocks in merged]


def _turns(message: Message, index: int) -> list[Turn]:
    role = message.role
    if role == "assistant":
        wire_role = "assistant"
    elif role in _USER_ROLES:
        wire_role = "user"
    else:
        raise ValueError(
            f"messages[{index}]: role {role!r} cannot be sent to Converse "
            "(use 'user', 'assistant', 'tool', 'system' or 'developer')"
        )
    results: list[dict[str, Any]] = []
    blocks: list[dict[str, Any]] = []
    for content in message.contents:
        kind = content.type
        if kind in _NOT_SENT_TYPES:
            continue
        if kind == "function_result":
            results.append(_tool_result(content, index))
        elif kind == "function_call":
            if content.informational_only:
                continue
            if wire_role != "assistant":
                raise ValueError(
                    f"messages[{index}]: function_call contents belong in an "
                    f"assistant message, not {role!r}"
                )
            blocks.append(_tool_use(content, index))
        elif kind == "text":
            if content.text:
                blocks.append({"text": content.text})
        else:
            # BR-8: images, documents and video are not mapped yet
            raise ValueError(
                f"messages[{index}]: content type {kind!r} cannot be sent to Converse "
                "by minagent-bedrock yet (text, tool calls and tool results are mapped)"
            )
    out: list[Turn] = []
    if results:
        out.append(("user", results))
    if blocks:
        out.append((wire_role, blocks))
    return out


def _tool_use(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id or not content.name:
        raise ValueError(
            f"messages[{index}]: a function_call needs a call_id and a name, "
            f"got {content!r}"
        )
    args = content.arguments
    arguments: Any
    if args is None or args == "":
        arguments = {}
    elif isinstance(args, dict):
        arguments = _plain(args, f"messages[{index}] arguments")
    else:
        try:
            arguments = json.loads(args)
        except (ValueError, RecursionError):
            arguments = None
    if not isinstance(arguments, dict):
        # a call cut off by maxTokens: the loop answered it with an error result
        arguments = {}
    return {
        "toolUse": {
            "toolUseId": content.call_id,
            "name": content.name,
            "input": arguments,
        }
    }


def _tool_result(content: Content, index: int) -> dict[str, Any]:
    """BR-3: a str as text, a dict as json, anything else as its JSON text."""
    if not content.call_id:
        raise ValueError(f"messages[{index}]: a function_result needs a call_id")
    result = content.result
    block: dict[str, Any]
    if isinstance(result, str):
        block = {"text": result}
    elif result is None:
        block = {"text": content.exception or ""}
    elif isinstance(result, Mapping):
        block = {"json": json.loads(json.dumps(result, default=_json_default))}
    else:
        block = {"text": json.dumps(result, default=_json_default)}
    out: dict[str, Any] = {"toolUseId": content.call_id, "content": [block]}
    if content.exception is not None:
        out["status"] = "error"
    return {"toolResult": out}


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return str(value)


# --------------------------------------------------------------------------------------------
# Tools (BR-6)


def _has_tool_blocks(turns: list[dict[str, Any]]) -> bool:
    return any(
        "toolUse" in block or "toolResult" in block
        for turn in turns
        for block in turn["content"]
    )


def _tool_config(opts: Mapping[str, Any], has_tool_blocks: bool) -> dict[str, Any]:
    """BR-6. Converse has no tool choice "none" (the loop's last call sends it, LP-7):
    the tools are then not declared, unless the conversation holds tool blocks, which
    Converse accepts only with a toolConfig; then they are declared without a
    toolChoice, and any call the model still makes is dropped by the loop (LP-9)."""
    if _is_none_choice(opts.get("tool_choice")) and not has_tool_blocks:
        return {}
    value = opts.get("tools")
    if value is None:
        specs: list[ToolSpec] = []
    else:
        if isinstance(value, Mapping | str | bytes) or not isinstance(value, Iterable):
            value = [value]
        specs = list(tool_specs(value))
    if not specs:
        return {}
    config: dict[str, Any] = {"tools": [_tool(spec) for spec in specs]}
    if "tool_choice" in opts:
        choice = _tool_choice(opts["tool_choice"])
        if choice is not None:
            config["toolChoice"] = choice
    return config


def _tool(spec: ToolSpec) -> dict[str, Any]:
    declared = spec.declaration
    if declared is not None and "toolSpec" in declared:
        return dict(_plain(dict(declared), "tools"))  # a wire declaration, as it is
    if not spec.name:
        raise TypeError(f"cannot declare tool {spec.tool!r}: it has no name")
    out: dict[str, Any] = {"name": spec.name}
    if spec.description:
        out["description"] = spec.description
    schema = (
        _plain(spec.parameters, f"tools[{spec.name}].parameters")
        if spec.parameters is not None
        else {"type": "object", "properties": {}}
    )
    out["inputSchema"] = {"json": schema}
    return {"toolSpec": out}


def _is_none_choice(value: Any) -> bool:
    return value == "none" or (
        isinstance(value, Mapping) and value.get("mode") == "none"
    )


def _tool_choice(value: Any) -> dict[str, Any] | None:
    """BR-6: auto, required (any) and one named tool; 'none' has no Converse form."""
    mode, name = value, None
    if isinstance(value, Mapping):
        if set(value) <= {"auto", "any", "tool"} and len(value) == 1:
            return dict(_plain(dict(value), "tool_choice"))  # a wire choice
        mode, name = value.get("mode"), value.get("required_function_name")
    if mode == "auto":
        return {"auto": {}}
    if mode == "required":
        return {"tool": {"name": name}} if name else {"any": {}}
    if mode == "none":
        return None  # BR-6: no toolChoice (see _tool_config)
    raise ValueError(
        f"unsupported tool_choice {value!r}: expected 'auto', 'required', "
        "{'mode': 'required', 'required_function_name': name} or a Converse toolChoice"
    )
