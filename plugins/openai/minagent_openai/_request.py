"""Requests of the OpenAI-compatible Chat Completions codec (spec/providers.md, OA-1 ..
OA-10).

Pure functions, no state: ``build_request(messages, options, *, model, stream)`` renders
minagent messages and options as the JSON body of ``POST /chat/completions``, and
``encode_request`` turns it into bytes. Options are read through two tables:
``_PASS_THROUGH`` (sent as they are, OA-10) and ``_REFUSED`` (errors that say what to
write instead, OA-26); any other unknown key is an error that points to
``options["extra_body"]`` (PV-3). Nothing that is not valid JSON is ever returned
(OA-27).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._minagent import Content, Message, ResponseFormat, ToolSpec, tool_specs

__all__ = ["build_request", "encode_request"]

# Options sent under the same name when set (OA-10). ``parallel_tool_calls`` only with
# tools.
_PASS_THROUGH: tuple[str, ...] = (
    "temperature",
    "top_p",
    "stop",
    "seed",
    "logit_bias",
    "user",
    "metadata",
    "frequency_penalty",
    "presence_penalty",
    "store",
    "max_completion_tokens",
    "reasoning_effort",
    "service_tier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "logprobs",
    "top_logprobs",
    "modalities",
    "prediction",
    "verbosity",
    "audio",
    "web_search_options",
)
_TOOL_ONLY: tuple[str, ...] = ("parallel_tool_calls",)
# Options read by the codec itself (OA-1, OA-6 .. OA-9, PV-3, PV-4, OA-26).
_HANDLED = frozenset(
    {
        "model",
        "instructions",
        "tools",
        "tool_choice",
        "response_format",
        "max_tokens",
        "conversation_id",
        "additional_function_arguments",
        "extra_body",
        "n",
        *_PASS_THROUGH,
        *_TOOL_ONLY,
    }
)
# Options that are not request fields of this codec, and what to write instead (OA-26).
_REFUSED: dict[str, str] = {
    "stream": "call get_response(..., stream=True) instead",
    "stream_options": "the client sets it when streaming; use options['extra_body'] to change it",
    "functions": "deprecated by the API; pass tools instead",
    "function_call": "deprecated by the API; pass tool_choice instead",
    "extra_headers": "pass default_headers= to the client",
    "extra_query": "pass default_query= to the client",
    "timeout": "pass timeout= / total_timeout= to the client",
    "messages": "pass the messages to get_response()",
}
_NOT_SENT_TYPES = frozenset(
    {
        "text_reasoning",
        "usage",
        "error",
        "function_approval_request",
        "function_approval_response",
    }
)


def build_request(
    messages: Sequence[Message],
    options: Mapping[str, Any] | None = None,
    *,
    model: str,
    stream: bool,
    max_tokens_key: str = "max_completion_tokens",
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for these messages and options.

    ``model`` is the client's default, used when ``options`` has no ``model`` (OA-1).
    ``max_tokens_key`` names the field ``options["max_tokens"]`` is sent as (OA-9).
    """
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    _check_keys(opts)
    chosen = opts.get("model") or model
    if not chosen or not isinstance(chosen, str):
        raise ValueError(
            "build_request needs a model: pass model=... or options['model']"
        )
    body: dict[str, Any] = {
        "model": chosen,
        "messages": _messages(messages, opts.get("instructions")),
    }
    for key in _PASS_THROUGH:
        if key in opts:
            body[key] = _plain(opts[key], key)
    if "max_tokens" in opts and max_tokens_key not in body:
        body[max_tokens_key] = _plain(opts["max_tokens"], "max_tokens")
    if "n" in opts:
        if opts["n"] != 1 or isinstance(opts["n"], bool):
            raise ValueError(
                f"option 'n' = {opts['n']!r} is not supported: the codec decodes only choice 0; "
                "make n separate requests instead"
            )
        body["n"] = 1
    tools = _tools(opts.get("tools"))
    if tools:
        body["tools"] = tools
        if "tool_choice" in opts:
            body["tool_choice"] = _tool_choice(opts["tool_choice"])
        for key in _TOOL_ONLY:
            if key in opts:
                body[key] = _plain(opts[key], key)
    if "response_format" in opts:
        body["response_format"] = _response_format(opts["response_format"])
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    extra = opts.get("extra_body")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise TypeError(
                f"options['extra_body'] must be a dict, got {type(extra).__name__}"
            )
        for key, value in extra.items():
            if value is None:  # None removes a computed field (PV-3)
                body.pop(key, None)
            else:
                body[key] = _plain(value, f"extra_body[{key!r}]")
    return body


def _check_keys(opts: Mapping[str, Any]) -> None:
    """OA-26: every option key is read by the codec, internal (``_``), or an error
    naming it."""
    for key in opts:
        if not isinstance(key, str):
            raise TypeError(f"option keys must be str, got {key!r}")
        if key in _HANDLED or key.startswith("_"):
            continue
        hint = (
            _REFUSED.get(key)
            or f"to send it as a request field, put it in options['extra_body'] = {{{key!r}: ...}}"
        )
        raise ValueError(
            f"option {key!r} is not a Chat Completions option of minagent-openai: {hint}"
        )


def _plain(value: Any, where: str) -> Any:
    """``value`` deep-copied as plain JSON data: the body shares nothing with the
    options (PV-2).

    A value that JSON cannot carry is a ``TypeError``; NaN or an infinity a
    ``ValueError`` (not valid JSON, OA-27), both naming the option.
    """
    failure: Exception | None = None
    try:
        result = json.loads(json.dumps(value, allow_nan=False))
    except ValueError as exc:
        failure = ValueError(
            f"option {where!r} is not valid JSON (NaN and Infinity are not allowed): {exc}"
        )
    except (TypeError, RecursionError) as exc:
        failure = TypeError(f"option {where!r} is not JSON data: {exc}")
    if failure is not None:
        raise failure
    return result


def encode_request(body: Mapping[str, Any]) -> bytes:
    """The request body as UTF 8 JSON bytes; NaN or Infinity anywhere is a
    ``ValueError`` (OA-27)."""
    failure: Exception | None = None
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as exc:
        failure = ValueError(
            f"the request is not valid JSON (NaN and Infinity are not allowed): {exc}"
        )
    except (TypeError, RecursionError) as exc:
        failure = TypeError(f"the request is not JSON data: {exc}")
    raise failure


# -- messages (OA-2 .. OA-5) ------------------------------------------------------------------


def _messages(messages: Sequence[Message], instructions: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        first = messages[0] if messages else None
        if not (
            first is not None and first.role == "system" and first.text == instructions
        ):
            out.append({"role": "system", "content": instructions})
    skipped_calls = {
        c.call_id
        for m in messages
        for c in m.contents
        if c.type == "function_call" and c.informational_only and c.call_id
    }
    for index, message in enumerate(messages):
        out.extend(_message(message, index, skipped_calls))
    return out


def _message(
    message: Message, index: int, skipped_calls: set[str]
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for content in message.contents:
        kind = content.type
        if kind in _NOT_SENT_TYPES:
            continue
        if kind == "function_result":
            if content.call_id not in skipped_calls:
                results.append(_tool_message(content, index))
        elif kind == "function_call":
            if not content.informational_only:
                calls.append(_tool_call(content, index))
        elif kind == "text":
            if content.text:
                parts.append({"type": "text", "text": content.text})
        elif kind in ("data", "uri"):
            parts.append(_image_part(content, message.role, index))
        else:
            raise ValueError(
                f"messages[{index}]: content type {kind!r} cannot be sent to Chat Completions"
            )
    if calls and message.role != "assistant":
        raise ValueError(
            f"messages[{index}]: function_call contents belong in an assistant message, not {message.role!r}"
        )
    out = results
    if not parts and not calls:
        return out
    rendered: dict[str, Any] = {"role": message.role}
    if all(p["type"] == "text" for p in parts):
        rendered["content"] = "".join(p["text"] for p in parts) if parts else None
    else:
        rendered["content"] = parts
    if calls:
        rendered["tool_calls"] = calls
    out.append(rendered)
    return out


def _image_part(content: Content, role: str, index: int) -> dict[str, Any]:
    media = (content.media_type or "").lower()
    if not media.startswith("image/") or not content.uri:
        raise ValueError(
            f"messages[{index}]: {content.type} content with media type {content.media_type!r} "
            "cannot be sent to Chat Completions (only images are supported)"
        )
    if role != "user":
        raise ValueError(
            f"messages[{index}]: images can only be sent in user messages, not {role!r}"
        )
    image: dict[str, Any] = {"url": content.uri}
    detail = content.additional_properties.get("detail")
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def _tool_call(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id or not content.name:
        raise ValueError(
            f"messages[{index}]: a function_call needs a call_id and a name, got {content!r}"
        )
    args = content.arguments
    if args is None:
        arguments = "{}"
    elif isinstance(args, str):
        arguments = args
    else:
        arguments = _plain_text(
            args, f"messages[{index}]: the arguments of call {content.call_id!r}"
        )
    return {
        "id": content.call_id,
        "type": "function",
        "function": {"name": content.name, "arguments": arguments},
    }


def _tool_message(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id:
        raise ValueError(f"messages[{index}]: a function_result needs a call_id")
    return {
        "role": "tool",
        "tool_call_id": content.call_id,
        "content": _result_text(content),
    }


def _result_text(content: Content) -> str:
    """PV-7: a str as is, None as the exception text (or ""), anything else as JSON."""
    result = content.result
    if isinstance(result, str):
        return result
    if result is None:
        return content.exception or ""
    try:
        return json.dumps(result, default=_json_default, allow_nan=False)
    except ValueError:  # NaN or Infinity in a tool's result: named as strings (OA-27)
        return json.dumps(_finite(result), default=_json_default, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _finite(to_dict())
    return value


def _plain_text(value: Any, where: str) -> str:
    failure: Exception | None = None
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError as exc:
        failure = ValueError(
            f"{where} are not valid JSON (NaN and Infinity are not allowed): {exc}"
        )
    except (TypeError, RecursionError) as exc:
        failure = TypeError(f"{where} are not JSON data: {exc}")
    raise failure


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return str(value)


# -- tools (OA-6, OA-7) -----------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, Mapping | str | bytes) or not isinstance(value, Iterable):
        value = [value]
    # TL-13: the run's records, read once
    return [_tool(spec) for spec in tool_specs(value)]


def _tool(spec: ToolSpec) -> dict[str, Any]:
    if spec.wire is not None:  # a wire declaration, sent as it is
        return dict(_plain(dict(spec.wire), "tools"))
    name = spec.name
    if not name:
        raise TypeError(f"cannot declare tool {spec.tool!r}: it has no name")
    function: dict[str, Any] = {"name": name}
    if spec.description:
        function["description"] = spec.description
    function["parameters"] = (
        _plain(spec.parameters, f"tools[{name}].parameters")
        if spec.parameters is not None
        else {"type": "object", "properties": {}}
    )
    return {"type": "function", "function": function}


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
            return {"type": "function", "function": {"name": name}}
        if mode in ("auto", "required") and allowed:
            tools = [{"type": "function", "function": {"name": n}} for n in allowed]
            return {
                "type": "allowed_tools",
                "allowed_tools": {"mode": mode, "tools": tools},
            }
        if mode in ("auto", "none", "required") and not name and not allowed:
            return mode
    raise ValueError(f"unsupported tool_choice {value!r}")


# -- response_format (OA-8) -------------------------------------------------------------------


def _response_format(value: Any) -> dict[str, Any]:
    """OA-8: the normalised wire form of SO-2, which is this API's own
    ``response_format``."""
    return ResponseFormat.of(value).wire
