"""Request half of the sans-I/O Messages API codec (spec/anthropic.md, AN-1 .. AN-12).

Theory of operation
-------------------
``build_request(messages, options, *, model, stream)`` renders minagent messages and
options as the JSON body of ``POST /v1/messages``. It holds no state and never mutates
its inputs (PV-2). Rendering runs in three steps:

1. every minagent message becomes zero or more *turns* ``(role, blocks)``: system texts
   are collected for the top-level ``system`` field (AN-2), function results become a
   ``user`` turn of ``tool_result`` blocks placed before the message's other blocks
   (AN-3, AN-7);
2. consecutive turns of the same role are merged, tool results first in a user turn
   (AN-3);
3. each turn becomes ``{"role", "content"}`` with a string content when it is a single
   plain text block.

Tool-call ids pass through ``wire_tool_id`` (AN-8) on the way out, in ``tool_use`` and
``tool_result`` alike, so a pair always matches; ``wire_tool_ids(messages)`` gives the
map back.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._minagent import Content, Message, ResponseFormat, ToolSpec, tool_specs

__all__ = [
    "API_VERSION",
    "DEFAULT_MAX_TOKENS",
    "build_request",
    "output_schema",
    "wire_tool_id",
    "wire_tool_ids",
]

# AN-1: the API requires max_tokens; this is sent when none is given
DEFAULT_MAX_TOKENS = 4096
# AN-19: the current anthropic-version, the official SDK's default
API_VERSION = "2026-10-21"
# AN-12: from this API version on, sampling options are a 400
SAMPLING_REMOVED_IN = "2026-10-21"
_SAMPLING = ("temperature", "top_p", "top_k")

# Options sent under the same name when set (AN-12).
_PASS_THROUGH: tuple[str, ...] = (
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "metadata",
    "thinking",
    "service_tier",
    "cache_control",
)
_NOT_SENT_TYPES = frozenset(
    {"usage", "error", "function_approval_request", "function_approval_response"}
)
_SYSTEM_ROLES = frozenset({"system", "developer"})
_USER_ROLES = frozenset({"user", "tool"})
_BASE64_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_INVALID_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


# --------------------------------------------------------------------------------------------
# Tool-call ids (AN-8)


def wire_tool_id(call_id: str) -> str:
    """The id the API accepts for ``call_id``: unchanged when valid, else a
    deterministic form."""
    if _VALID_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:10]
    return f"{_INVALID_ID_CHARS.sub('_', call_id)[:53]}_{digest}"


def wire_tool_ids(messages: Sequence[Message]) -> dict[str, str]:
    """``{wire id: original id}`` for every call or result id of ``messages`` that AN-8
    changes."""
    out: dict[str, str] = {}
    for message in messages:
        for content in message.contents:
            if content.type in ("function_call", "function_result") and content.call_id:
                wire = wire_tool_id(content.call_id)
                if wire != content.call_id:
                    out[wire] = content.call_id
    return out


# --------------------------------------------------------------------------------------------
# The body (AN-1, AN-12)


def build_request(
    messages: Sequence[Message],
    options: Mapping[str, Any] | None = None,
    *,
    model: str,
    stream: bool,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    api_version: str = API_VERSION,
) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` for these messages and options.

    ``model`` is the client's default, used when ``options`` has no ``model``;
    ``max_tokens`` is sent when the options name none (AN-1). ``api_version`` is the
    ``anthropic-version`` the body is for: from 2026-10-21 on, sampling options are
    refused (AN-12).
    """
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    sampling = [k for k in _SAMPLING if k in opts]
    if sampling and api_version >= SAMPLING_REMOVED_IN:
        raise ValueError(
            f"option(s) {', '.join(sampling)} are not accepted by anthropic-version {api_version} (the API "
            "answers 400): remove them, or create the client with anthropic_version='2023-06-01' for a model "
            "that still accepts sampling parameters"
        )
    chosen = opts.get("model") or model
    if not chosen or not isinstance(chosen, str):
        raise ValueError(
            "build_request needs a model: pass model=... or options['model']"
        )
    limit = opts.get("max_tokens", opts.get("max_completion_tokens", max_tokens))
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"max_tokens must be a positive int, got {limit!r}")
    system, turns = _render(messages, opts.get("instructions"))
    body: dict[str, Any] = {"model": chosen, "max_tokens": limit, "messages": turns}
    if system is not None:
        body["system"] = system
    for key in _PASS_THROUGH:
        if key in opts:
            body[key] = _plain(opts[key], key)
    if "stop" in opts and "stop_sequences" not in body:
        stop = opts["stop"]
        body["stop_sequences"] = (
            [stop] if isinstance(stop, str) else _plain(list(stop), "stop")
        )
    if "user" in opts:
        metadata = dict(body.get("metadata") or {})
        metadata.setdefault("user_id", opts["user"])
        body["metadata"] = metadata
    output_config = _output_config(opts)
    if output_config:
        body["output_config"] = output_config
    tools = _tools(opts.get("tools"))
    if tools:
        body["tools"] = tools
        choice = _tool_choice(opts["tool_choice"]) if "tool_choice" in opts else None
        if opts.get("parallel_tool_calls") is False:
            choice = choice or {"type": "auto"}
            if choice.get("type") != "none":
                choice["disable_parallel_tool_use"] = True
        if choice is not None:
            body["tool_choice"] = choice
    if stream:
        body["stream"] = True
    extra = opts.get("extra_body")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise TypeError(
                f"options['extra_body'] must be a dict, got {type(extra).__name__}"
            )
        for key, value in _plain(dict(extra), "extra_body").items():
            if value is None:
                # PV-3: None removes a computed field instead of sending null
                body.pop(key, None)
            else:
                body[key] = value
    return body


def _plain(value: Any, where: str) -> Any:
    """``value`` deep-copied as plain JSON data: the body shares nothing with the
    options (PV-2).

    Non-finite floats are refused: they are not JSON, and the body must survive a round
    trip.
    """
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"option {where!r} is not JSON data: {exc}") from None


def _output_config(opts: Mapping[str, Any]) -> dict[str, Any]:
    """AN-23: ``output_config`` (a dict), with ``response_format`` as its ``format``."""
    given = opts.get("output_config")
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(
            f"options['output_config'] must be a dict, got {type(given).__name__}"
        )
    config: dict[str, Any] = _plain(dict(given), "output_config") if given else {}
    if "response_format" not in opts:
        return config
    fmt = ResponseFormat.of(opts["response_format"])
    if fmt.kind == "json":
        raise ValueError(
            "the Messages API has no free-form JSON mode, so response_format 'json' cannot be sent: "
            "give a schema instead (a dataclass, a TypedDict, a pydantic model or a JSON schema dict)"
        )
    if fmt.kind == "json_schema":
        wanted = {
            "type": "json_schema",
            "schema": output_schema(fmt.wire["json_schema"]["schema"]),
        }
        if "format" in config and config["format"] != wanted:
            raise ValueError(
                "options['response_format'] and options['output_config']['format'] disagree; set only one of them"
            )
        config["format"] = wanted
    return config


# AN-24: what the structured-outputs schema subset keeps; everything else goes into the
# description
_STRING_FORMATS = frozenset(
    {
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    }
)
_SCALARS = (str, int, float, bool, type(None))


def output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """AN-24: ``schema`` in the subset the API's structured outputs accept, as the
    official SDK writes it.

    ``$defs`` are rewritten; a ``$ref`` stands alone; ``oneOf`` becomes ``anyOf``; an
    ``enum`` of scalars or a scalar ``const`` replaces ``type``; objects get
    ``additionalProperties: false``; string ``format``s outside the supported list,
    ``minItems`` other than 0 or 1 and every other keyword (``minimum``, ``pattern``,
    ...) are appended to the description as ``{key: value, ...}`` so the model still
    reads them. Raises `ValueError` for a schema without a type or alternatives.
    """
    rest = dict(schema)
    out: dict[str, Any] = {}
    defs = rest.pop("$defs", None)
    if defs is not None:
        out["$defs"] = {name: output_schema(d) for name, d in defs.items()}
    ref = rest.pop("$ref", None)
    if ref is not None:
        out["$ref"] = ref
        return out
    kind = rest.pop("type", None)
    any_of, one_of, all_of = (
        rest.pop("anyOf", None),
        rest.pop("oneOf", None),
        rest.pop("allOf", None),
    )
    enum = rest.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, _SCALARS) for v in enum):
        out["enum"] = list(rest.pop("enum"))
    if "const" in rest and isinstance(rest["const"], _SCALARS):
        out["const"] = rest.pop("const")
    literal = "enum" in out or "const" in out
    if literal:
        kind = None
    if isinstance(any_of, list):
        out["anyOf"] = [output_schema(s) for s in any_of]
    elif isinstance(one_of, list):
        out["anyOf"] = [output_schema(s) for s in one_of]
    elif isinstance(all_of, list):
        out["allOf"] = [output_schema(s) for s in all_of]
    elif not literal:
        if kind is None:
            raise ValueError(
                f"response_format schema {dict(schema)!r:.200} has no 'type', 'anyOf', 'oneOf', 'allOf', "
                "'const' or 'enum': the Messages API's structured outputs need one"
            )
        out["type"] = kind
    for key in ("description", "title"):
        if key in rest:
            out[key] = rest.pop(key)
    if kind == "object":
        out["properties"] = {
            name: output_schema(s) for name, s in rest.pop("properties", {}).items()
        }
        rest.pop("additionalProperties", None)
        out["additionalProperties"] = False
        if "required" in rest:
            out["required"] = list(rest.pop("required"))
    elif kind == "string":
        if rest.get("format") in _STRING_FORMATS:
            out["format"] = rest.pop("format")
    elif kind == "array":
        if "items" in rest:
            out["items"] = output_schema(rest.pop("items"))
        if rest.get("minItems") in (0, 1) and not isinstance(
            rest.get("minItems"), bool
        ):
            out["minItems"] = rest.pop("minItems")
    if rest:
        described = out.get("description")
        note = "{" + ", ".join(f"{key}: {value}" for key, value in rest.items()) + "}"
        out["description"] = note if described is None else f"{described}\n\n{note}"
    return out


# --------------------------------------------------------------------------------------------
# Messages (AN-2 .. AN-9)

Turn = tuple[str, list[dict[str, Any]]]


def _render(
    messages: Sequence[Message], instructions: Any
) -> tuple[Any, list[dict[str, Any]]]:
    """``(system field or None, messages)``."""
    system: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        first = messages[0] if messages else None
        if not (
            first is not None and first.role == "system" and first.text == instructions
        ):
            system.append({"type": "text", "text": instructions})
    skipped = {
        c.call_id
        for m in messages
        for c in m.contents
        if c.type == "function_call" and c.informational_only and c.call_id
    }
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        if message.role in _SYSTEM_ROLES:
            system.extend(_system_blocks(message, index))
        else:
            turns.extend(_turns(message, index, skipped))
    return _system_field(system), [
        _message(role, blocks) for role, blocks in _merge(turns)
    ]


def _system_blocks(message: Message, index: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type in _NOT_SENT_TYPES or content.type == "text_reasoning":
            continue
        if content.type != "text":
            raise ValueError(
                f"messages[{index}]: a {message.role} message can only hold text, not {content.type!r} "
                "(the Messages API sends system text in the top-level 'system' field)"
            )
        if content.text:
            blocks.append(
                _with_cache_control({"type": "text", "text": content.text}, content)
            )
    return blocks


def _system_field(blocks: list[dict[str, Any]]) -> Any:
    if not blocks:
        return None
    if any("cache_control" in b for b in blocks):
        return blocks
    return "\n\n".join(b["text"] for b in blocks)


def _turns(message: Message, index: int, skipped: set[str]) -> list[Turn]:
    role = message.role
    if role == "assistant":
        wire_role = "assistant"
    elif role in _USER_ROLES:
        wire_role = "user"
    else:
        raise ValueError(
            f"messages[{index}]: role {role!r} cannot be sent to the Messages API "
            "(use 'user', 'assistant', 'tool', 'system' or 'developer')"
        )
    results: list[dict[str, Any]] = []
    blocks: list[dict[str, Any]] = []
    for content in message.contents:
        kind = content.type
        raw = content.additional_properties.get("anthropic_block")
        if isinstance(raw, Mapping) and wire_role == "assistant":
            blocks.append(_plain(dict(raw), f"messages[{index}] anthropic_block"))
        elif kind in _NOT_SENT_TYPES:
            continue
        elif kind == "function_result":
            if content.call_id not in skipped:
                results.append(_tool_result(content, index))
        elif kind == "function_call":
            if content.informational_only:
                continue
            if wire_role != "assistant":
                raise ValueError(
                    f"messages[{index}]: function_call contents belong in an assistant message, not {role!r}"
                )
            blocks.append(_tool_use(content, index))
        elif kind == "text_reasoning":
            block = _thinking(content) if wire_role == "assistant" else None
            if block is not None:
                blocks.append(block)
        elif kind == "text":
            if content.text:
                blocks.append(
                    _with_cache_control({"type": "text", "text": content.text}, content)
                )
        elif kind in ("data", "uri"):
            blocks.append(_with_cache_control(_media(content, role, index), content))
        else:
            raise ValueError(
                f"messages[{index}]: content type {kind!r} cannot be sent to the Messages API"
            )
    out: list[Turn] = []
    if results:
        out.append(("user", results))
    if blocks:
        out.append((wire_role, blocks))
    return out


def _merge(turns: Iterable[Turn]) -> list[Turn]:
    """Consecutive turns of one role as one; tool results first in a user turn
    (AN-3)."""
    merged: list[Turn] = []
    for role, blocks in turns:
        if merged and merged[-1][0] == role:
            merged[-1][1].extend(blocks)
        else:
            merged.append((role, list(blocks)))
    for role, blocks in merged:
        if role == "user" and any(b["type"] == "tool_result" for b in blocks):
            # stable: order kept within each kind
            blocks.sort(key=lambda b: b["type"] != "tool_result")
    return merged


def _message(role: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    if (
        len(blocks) == 1
        and blocks[0]["type"] == "text"
        and set(blocks[0]) == {"type", "text"}
    ):
        return {"role": role, "content": blocks[0]["text"]}
    return {"role": role, "content": blocks}


def _with_cache_control(block: dict[str, Any], content: Content) -> dict[str, Any]:
    marker = content.additional_properties.get("cache_control")
    if marker is not None:
        block["cache_control"] = _plain(marker, "cache_control")
    return block


def _media(content: Content, role: str, index: int) -> dict[str, Any]:
    media = (content.media_type or "").lower()
    if role not in _USER_ROLES:
        raise ValueError(
            f"messages[{index}]: media can only be sent in user messages, not {role!r}"
        )
    kind = (
        "image"
        if media.startswith("image/")
        else "document"
        if media == "application/pdf"
        else None
    )
    if kind is None or not content.uri:
        raise ValueError(
            f"messages[{index}]: {content.type} content with media type {content.media_type!r} cannot be "
            "sent to the Messages API (images jpeg/png/gif/webp and application/pdf are supported)"
        )
    if content.type == "uri":
        return {"type": kind, "source": {"type": "url", "url": content.uri}}
    if kind == "image" and media not in _BASE64_IMAGES:
        raise ValueError(
            f"messages[{index}]: image media type {content.media_type!r} is not supported by the Messages API "
            f"(use one of {sorted(_BASE64_IMAGES)})"
        )
    data = content.data or b""
    return {
        "type": kind,
        "source": {
            "type": "base64",
            "media_type": media,
            "data": base64.b64encode(data).decode("ascii"),
        },
    }


def _tool_use(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id or not content.name:
        raise ValueError(
            f"messages[{index}]: a function_call needs a call_id and a name, got {content!r}"
        )
    args = content.arguments
    if args is None or args == "":
        arguments: Any = {}
    elif isinstance(args, dict):
        arguments = _plain(args, f"messages[{index}] arguments")
    else:
        try:
            arguments = json.loads(args)
        except (ValueError, RecursionError):  # not JSON, too deep, too long an integer
            arguments = None
    if not isinstance(arguments, dict):
        # AN-25: a call the model could not finish (cut off by max_tokens); the loop
        # answered it with an error result, and the Messages API needs an object here
        arguments = {}
    block = {
        "type": "tool_use",
        "id": wire_tool_id(content.call_id),
        "name": content.name,
        "input": arguments,
    }
    return _with_cache_control(block, content)


def _tool_result(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id:
        raise ValueError(f"messages[{index}]: a function_result needs a call_id")
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": wire_tool_id(content.call_id),
        "content": _result_text(content),
    }
    if content.exception is not None:
        block["is_error"] = True
    return _with_cache_control(block, content)


def _result_text(content: Content) -> str:
    """PV-7: a str as is, None as the exception text (or ""), anything else as JSON."""
    result = content.result
    if isinstance(result, str):
        return result
    if result is None:
        return content.exception or ""
    return json.dumps(result, default=_json_default)


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return str(value)


def _thinking(content: Content) -> dict[str, Any] | None:
    """AN-9: Anthropic's own reasoning blocks go back unchanged; any other reasoning is
    not sent."""
    kind = content.additional_properties.get("anthropic_type")
    if kind == "thinking" and content.protected_data is not None:
        return {
            "type": "thinking",
            "thinking": content.text or "",
            "signature": content.protected_data,
        }
    if kind == "redacted_thinking" and content.protected_data is not None:
        return {"type": "redacted_thinking", "data": content.protected_data}
    return None


# --------------------------------------------------------------------------------------------
# Tools (AN-10, AN-11)


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, Mapping | str | bytes) or not isinstance(value, Iterable):
        value = [value]
    # TL-13: the run's records, read once
    return [_tool(spec) for spec in tool_specs(value)]


def _tool(spec: ToolSpec) -> dict[str, Any]:
    declared_as = spec.declaration
    if declared_as is not None and (
        "type" in declared_as or "input_schema" in declared_as
    ):
        # a wire declaration, sent as it is
        return dict(_plain(dict(declared_as), "tools"))
    name = spec.name
    if not name:
        raise TypeError(f"cannot declare tool {spec.tool!r}: it has no name")
    declared: dict[str, Any] = {"name": name}
    if spec.description:
        declared["description"] = spec.description
    declared["input_schema"] = (
        _plain(spec.parameters, f"tools[{name}].parameters")
        if spec.parameters is not None
        else {"type": "object", "properties": {}}
    )
    return declared


_CHOICES = {"auto": "auto", "required": "any", "none": "none"}


def _tool_choice(value: Any) -> dict[str, Any]:
    if isinstance(value, str) and value in _CHOICES:
        return {"type": _CHOICES[value]}
    if isinstance(value, Mapping):
        if "type" in value:
            return dict(_plain(dict(value), "tool_choice"))
        if value.get("allowed_tools"):
            raise ValueError(
                "tool_choice with allowed_tools has no Messages API equivalent: declare only those tools instead"
            )
        mode = value.get("mode")
        name = value.get("required_function_name")
        if mode == "required" and name:
            return {"type": "tool", "name": name}
        if isinstance(mode, str) and mode in _CHOICES:
            return {"type": _CHOICES[mode]}
    raise ValueError(
        f"unsupported tool_choice {value!r}: expected 'auto', 'required', 'none', "
        "{'mode': 'required', 'required_function_name': name} or a wire dict with 'type'"
    )
