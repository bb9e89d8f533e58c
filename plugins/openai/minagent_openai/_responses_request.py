"""Requests of the OpenAI Responses API, ``POST /responses`` (spec/openai-responses.md
OR-1 .. OR-12).

Theory of operation
-------------------
Plain data in, plain data out; no socket, task or clock, and aiohttp is never imported
(PV-1). ``build_responses_request(messages, options, *, model, stream)`` renders
minagent messages as Responses input items (OR-2 .. OR-6) and the options as request
fields (OR-7 .. OR-12). Every option key is accounted for: sent (renamed when the API
names it differently), consumed by minagent, or an error naming it (OR-11). Nothing is
dropped silently.

The service keeps a thread when ``store`` is not False: the loop and `Agent` send the
thread's id back as ``options["conversation_id"]``, rendered as ``previous_response_id``
(OR-10).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._minagent import Content, Message, ResponseFormat, ToolSpec, tool_specs
from ._responses_response import ITEM_KEY

__all__ = ["build_responses_request"]

# --------------------------------------------------------------------------------------------
# Request (OR-1 .. OR-12)

# Options sent under the same name (OR-10).
_PASS_THROUGH: tuple[str, ...] = (
    "temperature",
    "top_p",
    "user",
    "metadata",
    "store",
    "service_tier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "prompt_cache_options",
    "safety_identifier",
    "include",
    "truncation",
    "max_output_tokens",
    "max_tool_calls",
    "top_logprobs",
    "background",
    "prompt",
    "conversation",
)
# Options minagent consumes or renders itself (OR-7 .. OR-10); never sent under their
# own name.
_RENDERED = frozenset(
    {
        "model",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "allow_multiple_tool_calls",
        "response_format",
        "text",
        "verbosity",
        "reasoning",
        "reasoning_effort",
        "max_tokens",
        "conversation_id",
        "previous_response_id",
        "extra_body",
        "stream_options",
        "additional_function_arguments",  # for the tools, never sent (LP-25)
    }
)
# Chat Completions options the Responses API has no field for (OR-11).
_UNSUPPORTED: dict[str, str] = {
    "stop": "the Responses API has no stop sequences",
    "seed": "the Responses API has no seed",
    "logit_bias": "the Responses API has no logit_bias",
    "frequency_penalty": "the Responses API has no frequency_penalty",
    "presence_penalty": "the Responses API has no presence_penalty",
    "n": "the Responses API returns one output",
    "logprobs": "ask for options['include'] = ['message.output_text.logprobs'] and top_logprobs",
    "max_completion_tokens": "use max_tokens or max_output_tokens",
    "modalities": "the Responses API has no modalities field",
    "audio": "the Responses API has no audio output field",
    "prediction": "the Responses API has no predicted outputs",
    "web_search_options": "declare a hosted tool {'type': 'web_search'} instead",
    "functions": "deprecated; pass tools instead",
    "function_call": "deprecated; pass tool_choice instead",
    "stream": "call get_response(..., stream=True) instead",
    "input": "pass the messages to get_response()",
    "messages": "pass the messages to get_response()",
    "extra_headers": "pass default_headers= to the client",
    "extra_query": "pass default_query= to the client",
    "timeout": "pass timeout= / total_timeout= to the client",
    "continuation_token": "minagent does not poll background responses; use the SDK for that",
}
_NOT_SENT = frozenset(
    {"usage", "error", "function_approval_request", "function_approval_response"}
)
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})


def build_responses_request(
    messages: Sequence[Message],
    options: Mapping[str, Any] | None = None,
    *,
    model: str,
    stream: bool,
) -> dict[str, Any]:
    """The JSON body of ``POST /responses`` for these messages and options (OR-1 ..
    OR-12)."""
    for key in options or {}:
        if not isinstance(key, str):
            raise TypeError(f"option keys must be str, got {key!r}")
    opts = {
        k: v
        for k, v in (options or {}).items()
        if v is not None and not k.startswith("_")
    }
    for key in opts:
        if key in _UNSUPPORTED:
            raise ValueError(
                f"option {key!r} cannot be sent to the Responses API: {_UNSUPPORTED[key]}"
            )
        if key not in _RENDERED and key not in _PASS_THROUGH:
            raise ValueError(
                f"unknown option {key!r} for the Responses API; to send a field minagent does not "
                f"know, put it under options['extra_body'] (e.g. extra_body={{{key!r}: ...}})"
            )
    chosen = opts.get("model") or model
    if not chosen or not isinstance(chosen, str):
        raise ValueError(
            "build_responses_request needs a model: pass model=... or options['model']"
        )
    body: dict[str, Any] = {"model": chosen}
    instructions = opts.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise TypeError(
            f"options['instructions'] must be a str, got {type(instructions).__name__}"
        )
    if instructions:
        body["instructions"] = instructions
    body["input"] = _input(messages, store=opts.get("store"))
    for key in _PASS_THROUGH:
        if key in opts:
            body[key] = _plain(opts[key], key)
    if "max_tokens" in opts and "max_output_tokens" not in body:
        body["max_output_tokens"] = _plain(opts["max_tokens"], "max_tokens")
    thread = opts.get("conversation_id")
    if thread is not None and not isinstance(thread, str):
        raise TypeError(
            f"options['conversation_id'] must be a str, got {type(thread).__name__}"
        )
    if thread:
        if thread.startswith("conv_"):
            body["conversation"] = thread
        else:
            body["previous_response_id"] = thread
    elif "previous_response_id" in opts:
        body["previous_response_id"] = opts["previous_response_id"]
    reasoning = _reasoning(opts)
    if reasoning:
        body["reasoning"] = reasoning
    text = _text(opts)
    if text:
        body["text"] = text
    tools = _tools(opts.get("tools"))
    if tools:
        body["tools"] = tools
        if "tool_choice" in opts:
            body["tool_choice"] = _tool_choice(opts["tool_choice"])
        parallel = opts.get(
            "parallel_tool_calls", opts.get("allow_multiple_tool_calls")
        )
        if parallel is not None:
            body["parallel_tool_calls"] = bool(parallel)
    if stream:
        body["stream"] = True
        if "stream_options" in opts:
            body["stream_options"] = _plain(opts["stream_options"], "stream_options")
    extra = opts.get("extra_body")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise TypeError(
                f"options['extra_body'] must be a dict, got {type(extra).__name__}"
            )
        for key, value in _plain(dict(extra), "extra_body").items():
            if value is None:
                # OR-12: None removes a computed field instead of sending null
                body.pop(key, None)
            else:
                body[key] = value
    return body


def _plain(value: Any, where: str) -> Any:
    """``value`` as a deep copy of plain JSON data (PV-2); NaN and infinities are
    refused."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"option {where!r} is not JSON data: {exc}") from None


def _reasoning(opts: Mapping[str, Any]) -> dict[str, Any]:
    """OR-10: ``reasoning`` (a dict) with ``reasoning_effort`` as its ``effort`` unless
    it has one."""
    given = opts.get("reasoning")
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(
            f"options['reasoning'] must be a dict, got {type(given).__name__}"
        )
    reasoning: dict[str, Any] = _plain(dict(given), "reasoning") if given else {}
    if "reasoning_effort" in opts:
        reasoning.setdefault(
            "effort", _plain(opts["reasoning_effort"], "reasoning_effort")
        )
    return reasoning


def _text(opts: Mapping[str, Any]) -> dict[str, Any]:
    """OR-9: ``text`` (a dict), ``response_format`` as ``text.format``,
    ``verbosity``."""
    given = opts.get("text")
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(f"options['text'] must be a dict, got {type(given).__name__}")
    text: dict[str, Any] = _plain(dict(given), "text") if given else {}
    if "response_format" in opts:
        fmt = _text_format(opts["response_format"])
        if "format" in text and text["format"] != fmt:
            raise ValueError(
                "options['response_format'] and options['text']['format'] disagree; set only one of them"
            )
        text["format"] = fmt
    if "verbosity" in opts:
        text.setdefault("verbosity", _plain(opts["verbosity"], "verbosity"))
    return text


def _text_format(value: Any) -> dict[str, Any]:
    """OR-9: the normalised wire form of SO-2, flattened into the Responses
    ``text.format``."""
    if (
        isinstance(value, Mapping)
        and value.get("type") == "json_schema"
        and "json_schema" not in value
    ):
        # already the Responses form
        return dict(_plain(dict(value), "response_format"))
    wire = ResponseFormat.of(value).wire
    if wire["type"] != "json_schema":
        return wire
    return {"type": "json_schema", **wire["json_schema"]}


# -- input items (OR-2 .. OR-6) -------------------------------------------------------------


def _input(messages: Sequence[Message], *, store: Any) -> list[dict[str, Any]]:
    skipped = {
        c.call_id
        for m in messages
        for c in m.contents
        if c.type == "function_call" and c.informational_only and c.call_id
    }
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        items.extend(_message_items(message, index, skipped, store))
    return items


def _message_items(
    message: Message, index: int, skipped: set[str], store: Any
) -> list[dict[str, Any]]:
    """A message's items in content order; adjacent texts and images share one message
    item."""
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []

    def flush() -> None:
        if parts:
            if message.role not in _MESSAGE_ROLES:
                raise ValueError(
                    f"messages[{index}]: role {message.role!r} cannot carry text or images in the Responses "
                    f"API (use one of {sorted(_MESSAGE_ROLES)})"
                )
            items.append(
                {"type": "message", "role": message.role, "content": list(parts)}
            )
            parts.clear()

    for content in message.contents:
        kind = content.type
        if kind in _NOT_SENT:
            continue
        if kind == "text":
            if content.text:
                part_type = (
                    "output_text" if message.role == "assistant" else "input_text"
                )
                part: dict[str, Any] = {"type": part_type, "text": content.text}
                if part_type == "output_text":
                    part["annotations"] = []
                parts.append(part)
        elif kind in ("data", "uri"):
            parts.append(_image_part(content, message.role, index))
        elif kind == "function_result":
            flush()
            if content.call_id not in skipped:
                items.append(_call_output(content, index))
        elif kind == "function_call":
            flush()
            if not content.informational_only:
                if message.role != "assistant":
                    raise ValueError(
                        f"messages[{index}]: function_call contents belong in an assistant message, "
                        f"not {message.role!r}"
                    )
                items.append(_call_item(content, index))
        elif kind == "text_reasoning":
            flush()
            reasoning = _reasoning_item(content, store)
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(content.additional_properties.get(ITEM_KEY), Mapping):
            flush()
            items.append(
                _plain(
                    dict(content.additional_properties[ITEM_KEY]),
                    f"messages[{index}] item",
                )
            )
        else:
            raise ValueError(
                f"messages[{index}]: content type {kind!r} cannot be sent to the Responses API"
            )
    flush()
    return items


def _image_part(content: Content, role: str, index: int) -> dict[str, Any]:
    media = (content.media_type or "").lower()
    if not media.startswith("image/") or not content.uri:
        raise ValueError(
            f"messages[{index}]: {content.type} content with media type {content.media_type!r} "
            "cannot be sent to the Responses API (only images are supported)"
        )
    if role not in ("user", "system", "developer"):
        raise ValueError(
            f"messages[{index}]: images can only be sent in user, system or developer messages, not {role!r}"
        )
    detail = content.additional_properties.get("detail")
    return {
        "type": "input_image",
        "image_url": content.uri,
        "detail": detail if isinstance(detail, str) else "auto",
    }


def _call_item(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id or not content.name:
        raise ValueError(
            f"messages[{index}]: a function_call needs a call_id and a name, got {content!r}"
        )
    args = content.arguments
    arguments = (
        "{}" if args is None else args if isinstance(args, str) else json.dumps(args)
    )
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": content.call_id,
        "name": content.name,
        "arguments": arguments,
    }
    if content.id:
        item["id"] = content.id
    return item


def _call_output(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id:
        raise ValueError(f"messages[{index}]: a function_result needs a call_id")
    result = content.result
    if isinstance(result, str):
        output = result
    elif result is None:
        output = content.exception or ""
    else:
        output = json.dumps(result, default=_json_default)
    return {
        "type": "function_call_output",
        "call_id": content.call_id,
        "output": output,
    }


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else str(value)


def _reasoning_item(content: Content, store: Any) -> dict[str, Any] | None:
    """OR-5: a reasoning item the service gave an id; None when it cannot be
    replayed."""
    if not content.id:
        return None
    if store is False and not content.protected_data:
        return None  # not stored and not encrypted: the service could not resolve it
    props = content.additional_properties
    summary = props.get("summary")
    if isinstance(summary, list) and all(isinstance(s, str) for s in summary):
        texts = list(summary)
    else:
        texts = (
            [content.text]
            if content.text and not isinstance(props.get("reasoning_text"), list)
            else []
        )
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": content.id,
        "summary": [{"type": "summary_text", "text": t} for t in texts],
    }
    reasoning_text = props.get("reasoning_text")
    if isinstance(reasoning_text, list) and reasoning_text:
        item["content"] = [
            {"type": "reasoning_text", "text": str(t)} for t in reasoning_text
        ]
    if content.protected_data:
        item["encrypted_content"] = content.protected_data
    return item


# -- tools (OR-8) ---------------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, Mapping | str | bytes) or not isinstance(value, Iterable):
        value = [value]
    # TL-13: the run's records, read once
    return [_tool(spec) for spec in tool_specs(value)]


def _tool(spec: ToolSpec) -> dict[str, Any]:
    wire = spec.wire
    if wire is not None and not (
        wire.get("type") == "function" and isinstance(wire.get("function"), Mapping)
    ):
        # a Responses declaration or a hosted tool, as it is
        return dict(_plain(dict(wire), "tools"))
    # a tool, a {name, description, parameters} dict, or the Chat Completions form
    name = spec.name
    if not name:
        raise TypeError(f"cannot declare tool {spec.tool!r}: it has no name")
    declaration: dict[str, Any] = {"type": "function", "name": name}
    if spec.description:
        declaration["description"] = spec.description
    declaration["parameters"] = (
        _plain(spec.parameters, f"tools[{name}].parameters")
        if spec.parameters is not None
        else {"type": "object", "properties": {}}
    )
    source = wire["function"] if wire is not None else spec.declaration
    strict = source.get("strict", False) if source is not None else False
    declaration["strict"] = strict if isinstance(strict, bool) else False
    return declaration


def _tool_choice(value: Any) -> Any:
    if isinstance(value, str):
        if value in ("auto", "none", "required"):
            return value
    elif isinstance(value, Mapping):
        if "type" in value:
            return _plain(dict(value), "tool_choice")
        mode = value.get("mode")
        name = value.get("required_function_name")
        allowed = value.get("allowed_tools")
        if mode == "required" and name:
            return {"type": "function", "name": name}
        if mode in ("auto", "required") and allowed:
            return {
                "type": "allowed_tools",
                "mode": mode,
                "tools": [{"type": "function", "name": n} for n in allowed],
            }
        if mode in ("auto", "none", "required") and not name and not allowed:
            return mode
    raise ValueError(f"unsupported tool_choice {value!r}")
