"""Requests of Ollama's native chat API: the body of ``POST /api/chat`` (spec/ollama.md
OL-1 .. OL-10, OL-21, OL-24).

Pure functions of the messages and options; nothing here touches a socket (PV-1).
Sampling options go into Ollama's nested ``options`` object through one table,
``_MODEL_OPTIONS``; an option the codec does not know is refused with what to write
instead (OL-24).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._minagent import Content, Message, ResponseFormat, ToolSpec, tool_specs
from ._response import _snippet

__all__ = ["DEFAULT_HOST", "build_request", "call_id_seed", "parse_host"]

DEFAULT_HOST = "http://127.0.0.1:11434"


# --------------------------------------------------------------------------------------------
# Host (OL-21)


def parse_host(host: str | None) -> str:
    """The base URL for an ``OLLAMA_HOST`` value, as the official SDK reads it (OL-21).

    ``None`` or ``""`` is ``http://127.0.0.1:11434``; a missing scheme is ``http``; a
    missing port is 11434, or 80 / 443 when the scheme was written; a path is kept
    without its trailing ``/``.
    """
    text, port = (host or "").strip(), 11434
    scheme, _, hostport = text.partition("://")
    if not hostport:
        scheme, hostport = "http", text
    elif scheme == "http":
        port = 80
    elif scheme == "https":
        port = 443
    split = urllib.parse.urlsplit(f"{scheme}://{hostport}")
    name = split.hostname or "127.0.0.1"
    try:
        explicit = split.port
    except ValueError:
        raise ValueError(
            f"OLLAMA_HOST / base_url has an invalid port: {host!r}"
        ) from None
    try:
        if isinstance(ipaddress.ip_address(name), ipaddress.IPv6Address):
            name = f"[{name}]"
    except ValueError:
        pass
    base = f"{scheme}://{name}:{explicit or port}"
    path = split.path.strip("/")
    return f"{base}/{path}" if path else base


# --------------------------------------------------------------------------------------------
# Request (OL-1 .. OL-10)

# Minagent option -> key in Ollama's ``options`` object (OL-8).
_MODEL_OPTIONS: dict[str, str] = {
    name: name
    for name in (
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "typical_p",
        "seed",
        "stop",
        "frequency_penalty",
        "presence_penalty",
        "repeat_penalty",
        "repeat_last_n",
        "num_ctx",
        "num_keep",
        "num_batch",
        "num_gpu",
        "main_gpu",
        "num_thread",
        "mirostat",
        "mirostat_tau",
        "mirostat_eta",
        "penalize_newline",
        "low_vram",
        "use_mmap",
        "use_mlock",
        "numa",
        "num_predict",
    )
}
# sent unchanged (OL-10)
_TOP_LEVEL: tuple[str, ...] = ("keep_alive", "think", "logprobs", "top_logprobs")
_HANDLED = frozenset(
    {
        "model",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "format",
        "max_tokens",
        "conversation_id",
        "additional_function_arguments",
        "extra_body",
        *_TOP_LEVEL,
        *_MODEL_OPTIONS,
    }
)
# Options this codec does not send, and what to write instead (OL-24).
_REFUSED: dict[str, str] = {
    "stream": "call get_response(..., stream=True) instead",
    "messages": "pass the messages to get_response()",
    "options": "write model options as options (e.g. options['num_ctx'] = 8192), or use "
    "options['extra_body'] = {'options': {...}}",
    "timeout": "pass timeout= to the client",
    "extra_headers": "pass default_headers= to the client",
    "reasoning_effort": "Ollama's equivalent is options['think'] (True, False or a level such as 'low' or 'high')",
    "max_completion_tokens": "use options['max_tokens'] (sent as options.num_predict)",
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
) -> dict[str, Any]:
    """The JSON body of ``POST /api/chat`` for these messages and options (OL-1).

    ``model`` is the client's default, used when ``options`` has no ``model``.
    """
    opts = {
        k: v
        for k, v in (options or {}).items()
        if v is not None and not str(k).startswith("_")
    }
    _check_options(opts)
    chosen = opts.get("model") or model
    if not chosen or not isinstance(chosen, str):
        raise ValueError(
            "build_request needs a model: pass model=... or options['model']"
        )
    body: dict[str, Any] = {
        "model": chosen,
        "messages": _messages(messages, opts.get("instructions")),
    }
    tools = _tools(opts.get("tools"))
    if tools and _tools_wanted(opts):
        body["tools"] = tools
    model_options: dict[str, Any] = {}
    for key, wire in _MODEL_OPTIONS.items():
        if key in opts:
            model_options[wire] = _plain(opts[key], key)
    if "max_tokens" in opts and "num_predict" not in model_options:
        model_options["num_predict"] = opts["max_tokens"]
    if isinstance(model_options.get("stop"), str):
        model_options["stop"] = [model_options["stop"]]
    if model_options:
        body["options"] = model_options
    if "format" in opts:
        body["format"] = _explicit_format(opts["format"])
    elif "response_format" in opts:
        fmt = _response_format(opts["response_format"])
        if fmt is not None:
            body["format"] = fmt
    for key in _TOP_LEVEL:
        if key in opts:
            body[key] = _plain(opts[key], key)
    body["stream"] = bool(stream)
    extra = opts.get("extra_body")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise TypeError(
                f"options['extra_body'] must be a dict, got {type(extra).__name__}"
            )
        extra = _plain(dict(extra), "extra_body")
        nested = (
            extra.pop("options", None)
            if isinstance(extra.get("options"), Mapping)
            else None
        )
        for key, value in extra.items():
            if value is None:  # PV-3: None removes a computed key
                body.pop(key, None)
            else:
                body[key] = value
        if nested is not None:
            merged = {**body.get("options", {}), **nested}
            body["options"] = {k: v for k, v in merged.items() if v is not None}
    return body


def _check_options(opts: Mapping[str, Any]) -> None:
    """OL-24: no option is dropped silently."""
    for key in opts:
        if key in _HANDLED:
            continue
        hint = _REFUSED.get(key) or (
            f"Ollama's /api/chat has no such field; to send it anyway, use options['extra_body'] = {{{key!r}: ...}}"
        )
        raise ValueError(f"option {key!r} cannot be sent to Ollama: {hint}")


def _plain(value: Any, where: str) -> Any:
    """``value`` deep-copied as plain JSON data: the body shares nothing with the
    options (PV-2)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"option {where!r} is not JSON data: {exc}") from None


def _tools_wanted(opts: Mapping[str, Any]) -> bool:
    """OL-7: what ``tool_choice`` / ``parallel_tool_calls`` ask, as far as Ollama can do
    it."""
    choice = opts.get("tool_choice")
    mode: Any = choice
    if isinstance(choice, Mapping):
        if "type" in choice:
            raise ValueError(
                f"tool_choice {choice!r} cannot be sent to Ollama: the native API has no tool_choice; "
                "use 'auto' (the model decides) or 'none' (tools are not declared)"
            )
        mode = choice.get("mode")
        if choice.get("required_function_name") or choice.get("allowed_tools"):
            raise ValueError(
                f"tool_choice {dict(choice)!r} cannot be honoured by Ollama: the native API cannot force "
                "or restrict tool calls; use 'auto' (and declare only the tools you allow) or 'none'"
            )
    if choice is not None and mode not in ("auto", "none", "required"):
        raise ValueError(f"unsupported tool_choice {choice!r}")
    if mode == "required":
        raise ValueError(
            "tool_choice 'required' cannot be honoured by Ollama: the native API cannot force a tool "
            "call; use 'auto' or 'none'"
        )
    if opts.get("parallel_tool_calls") is False:
        raise ValueError(
            "parallel_tool_calls=False cannot be honoured by Ollama: the model may always return several "
            "calls; leave parallel_tool_calls unset (or True)"
        )
    return bool(mode != "none")


# -- messages (OL-2 .. OL-5) ------------------------------------------------------------------


def _messages(messages: Sequence[Message], instructions: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        first = messages[0] if messages else None
        if not (
            first is not None and first.role == "system" and first.text == instructions
        ):
            out.append({"role": "system", "content": instructions})
    skipped: set[str] = set()
    names: dict[str, str] = {}
    for m in messages:
        for c in m.contents:
            if c.type == "function_call" and c.call_id:
                if c.informational_only:
                    skipped.add(c.call_id)
                elif c.name:
                    names.setdefault(c.call_id, c.name)
    for index, message in enumerate(messages):
        out.extend(_message(message, index, skipped, names))
    return out


def _message(
    message: Message, index: int, skipped: set[str], names: Mapping[str, str]
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    texts: list[str] = []
    images: list[str] = []
    calls: list[dict[str, Any]] = []
    for content in message.contents:
        kind = content.type
        if kind in _NOT_SENT_TYPES:
            continue
        if kind == "function_result":
            if content.call_id not in skipped:
                results.append(_tool_message(content, index, names))
        elif kind == "function_call":
            if not content.informational_only:
                calls.append(_tool_call(content, index))
        elif kind == "text":
            if content.text:
                texts.append(content.text)
        elif kind in ("data", "uri"):
            images.append(_image(content, message.role, index))
        else:
            raise ValueError(
                f"messages[{index}]: content type {kind!r} cannot be sent to Ollama"
            )
    if calls and message.role != "assistant":
        raise ValueError(
            f"messages[{index}]: function_call contents belong in an assistant message, not {message.role!r}"
        )
    out = results
    if not texts and not images and not calls:
        return out
    rendered: dict[str, Any] = {"role": message.role}
    text = "".join(texts)
    if text:
        rendered["content"] = text
    if images:
        rendered["images"] = images
    if calls:
        rendered["tool_calls"] = calls
    out.append(rendered)
    return out


def _image(content: Content, role: str, index: int) -> str:
    """OL-3: the base64 payload of an image ``data:`` URI."""
    media = (content.media_type or "").lower()
    if content.type == "uri":
        raise ValueError(
            f"messages[{index}]: uri content {content.uri!r} cannot be sent to Ollama, which takes images "
            "only as base64 data: download it and pass Content.from_data(bytes, media_type)"
        )
    if not media.startswith("image/") or not content.uri:
        raise ValueError(
            f"messages[{index}]: data content with media type {content.media_type!r} cannot be sent to "
            "Ollama (only images are supported)"
        )
    if role != "user":
        raise ValueError(
            f"messages[{index}]: images can only be sent in user messages, not {role!r}"
        )
    header, _, payload = content.uri.partition(",")
    if header.lower().endswith(";base64"):
        return payload
    return base64.b64encode(urllib.parse.unquote_to_bytes(payload)).decode("ascii")


def _tool_call(content: Content, index: int) -> dict[str, Any]:
    """OL-4: arguments as a JSON object; the call id as ``id``."""
    if not content.name:
        raise ValueError(
            f"messages[{index}]: a function_call needs a name, got {content!r}"
        )
    args = content.arguments
    if args is None or args == "":
        arguments: Any = {}
    elif isinstance(args, str):
        try:
            arguments = json.loads(args)
        except json.JSONDecodeError:
            arguments = None
    else:
        arguments = _plain(args, f"arguments of {content.name}")
    if not isinstance(arguments, dict):
        raise ValueError(
            f"messages[{index}]: the arguments of call {content.call_id!r} ({content.name}) are not a JSON "
            f"object, which Ollama requires: {_snippet(args)}"
        )
    call: dict[str, Any] = {"function": {"name": content.name, "arguments": arguments}}
    if content.call_id:
        call = {"id": content.call_id, **call}
    return call


def _tool_message(
    content: Content, index: int, names: Mapping[str, str]
) -> dict[str, Any]:
    """OL-5: one tool message per result; ``tool_name`` found through the call id."""
    if not content.call_id:
        raise ValueError(f"messages[{index}]: a function_result needs a call_id")
    out: dict[str, Any] = {"role": "tool", "content": _result_text(content)}
    name = names.get(content.call_id) or content.name
    if name:
        out["tool_name"] = name
    out["tool_call_id"] = content.call_id
    return out


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


# -- tools (OL-6) -----------------------------------------------------------------------------


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


# -- format (OL-9) ----------------------------------------------------------------------------


def _explicit_format(value: Any) -> Any:
    if value == "json" or isinstance(value, Mapping):
        return _plain(value, "format")
    raise ValueError(
        f"unsupported format {value!r}: Ollama takes 'json' or a JSON schema dict"
    )


def _response_format(value: Any) -> Any:
    """OL-9: the normalised form of SO-2 as Ollama's ``format``: "json", the schema, or
    nothing."""
    fmt = ResponseFormat.of(value)
    if fmt.kind == "text":
        return None
    if fmt.kind == "json":
        return "json"
    return fmt.wire["json_schema"]["schema"]


# --------------------------------------------------------------------------------------------
# Tool-call ids (OL-15)


def call_id_seed(body: Mapping[str, Any]) -> str:
    """A digest of a request body's model and messages: the seed of its calls' ids
    (OL-15)."""
    basis = json.dumps(
        [body.get("model"), body.get("messages")],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]
