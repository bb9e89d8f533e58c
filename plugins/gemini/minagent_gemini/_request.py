"""Requests of the Gemini API: the body of ``generateContent`` and
``streamGenerateContent`` (spec/gemini.md GM-1 .. GM-11).

Pure functions of the messages and options; nothing here touches a socket (PV-1). The
two methods take the same body; the model and the method are in the URL
(``model_path``, GM-1). Generation options go into ``generationConfig`` through one
table, ``_GENERATION``; an option the codec does not know is refused with what to write
instead (GM-11).
"""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._minagent import Content, Message, ResponseFormat, ToolSpec, tool_specs
from ._response import _snippet

__all__ = ["build_request", "call_id_seed", "model_path"]


# --------------------------------------------------------------------------------------------
# The model in the URL (GM-1)


def model_path(model: str) -> str:
    """The resource name of a model as the URL carries it: ``gemini-2.5-flash`` is
    ``models/gemini-2.5-flash``; a name with a collection (``models/...``,
    ``tunedModels/...``) is kept. Each segment is percent-encoded."""
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"the Gemini client needs a model name, got {model!r}")
    name = model.strip().strip("/")
    if "/" not in name:
        name = f"models/{name}"
    return "/".join(urllib.parse.quote(part, safe="-._~") for part in name.split("/"))


# --------------------------------------------------------------------------------------------
# Options (GM-9 .. GM-11)

# minagent option -> key of ``generationConfig`` (GM-9)
_GENERATION: dict[str, str] = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "response_mime_type": "responseMimeType",
    "thinking_config": "thinkingConfig",
}
# minagent option -> top-level key of the body, sent as given (GM-9)
_TOP_LEVEL: dict[str, str] = {
    "safety_settings": "safetySettings",
    "cached_content": "cachedContent",
}
_HANDLED = frozenset(
    {
        "model",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "response_schema",
        "conversation_id",
        "additional_function_arguments",
        "extra_body",
        *_GENERATION,
        *_TOP_LEVEL,
    }
)
# Options this codec does not send, and what to write instead (GM-11).
_REFUSED: dict[str, str] = {
    "stream": "call get_response(..., stream=True) instead",
    "messages": "pass the messages to get_response()",
    "timeout": "pass timeout= to the client",
    "extra_headers": "pass default_headers= to the client",
    "max_completion_tokens": "use options['max_tokens'] (sent as maxOutputTokens)",
    "candidate_count": "minagent reads one candidate; Gemini's candidateCount is not "
    "mapped (use options['extra_body'] = {'generationConfig': {'candidateCount': n}} "
    "and read raw_representation)",
    "n": "minagent reads one candidate; candidateCount is not mapped",
    "reasoning_effort": "Gemini's equivalent is options['thinking_config'] = "
    "{'thinkingBudget': n} or {'thinkingLevel': 'low'}",
    "logit_bias": "Gemini has no logit bias",
    "user": "Gemini has no end-user field",
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
_ROLES = {"user": "user", "assistant": "model", "tool": "user"}


def build_request(
    messages: Sequence[Message],
    options: Mapping[str, Any] | None = None,
    *,
    model: str,
) -> dict[str, Any]:
    """The JSON body of ``generateContent`` / ``streamGenerateContent`` (GM-2).

    ``model`` is the client's model: the model is in the URL, so an ``options["model"]``
    that names another one is a `ValueError` (GM-1).
    """
    opts = {
        k: v
        for k, v in (options or {}).items()
        if v is not None and not str(k).startswith("_")
    }
    _check_options(opts)
    chosen = opts.get("model")
    if chosen is not None and chosen != model:
        raise ValueError(
            f"options['model'] = {chosen!r} cannot be sent: the Gemini API takes the "
            f"model in the URL and this client calls {model!r}; create a "
            "GeminiChatClient for that model instead"
        )
    system, contents = _contents(messages, opts.get("instructions"))
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    tools = _tools(opts.get("tools"))
    if tools:
        body["tools"] = tools
        config = _tool_config(opts)
        if config is not None:
            body["toolConfig"] = config
    generation: dict[str, Any] = {}
    for key, wire in _GENERATION.items():
        if key in opts:
            generation[wire] = _plain(opts[key], key)
    if isinstance(generation.get("stopSequences"), str):
        generation["stopSequences"] = [generation["stopSequences"]]
    # an explicit response_mime_type wins over the one structured output implies
    for key, value in _structured(opts).items():
        generation.setdefault(key, value)
    if generation:
        body["generationConfig"] = generation
    for key, wire in _TOP_LEVEL.items():
        if key in opts:
            body[wire] = _plain(opts[key], key)
    _merge_extra(body, opts.get("extra_body"))
    return body


def _check_options(opts: Mapping[str, Any]) -> None:
    """GM-11: no option is dropped silently."""
    for key in opts:
        if key in _HANDLED:
            continue
        hint = _REFUSED.get(key) or (
            "the Gemini API has no such field; to send it anyway, use "
            f"options['extra_body'] = {{{key!r}: ...}}"
        )
        raise ValueError(f"option {key!r} cannot be sent to Gemini: {hint}")


def _plain(value: Any, where: str) -> Any:
    """``value`` deep-copied as plain JSON data: the body shares nothing with the
    options (PV-2)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"option {where!r} is not JSON data: {exc}") from None


def _merge_extra(body: dict[str, Any], extra: Any) -> None:
    """PV-3: ``extra_body`` keys replace the computed ones (None removes one); its
    ``generationConfig`` is merged key by key into the computed one."""
    if extra is None:
        return
    if not isinstance(extra, Mapping):
        raise TypeError(
            f"options['extra_body'] must be a dict, got {type(extra).__name__}"
        )
    extra = _plain(dict(extra), "extra_body")
    nested = (
        extra.pop("generationConfig", None)
        if isinstance(extra.get("generationConfig"), Mapping)
        else None
    )
    for key, value in extra.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    if nested is not None:
        merged = {**body.get("generationConfig", {}), **nested}
        body["generationConfig"] = {k: v for k, v in merged.items() if v is not None}


def _structured(opts: Mapping[str, Any]) -> dict[str, Any]:
    """GM-8: ``response_format`` as ``responseMimeType`` and ``responseJsonSchema``;
    ``response_schema`` (Gemini's OpenAPI-subset schema) as ``responseSchema``."""
    out: dict[str, Any] = {}
    if "response_schema" in opts:
        if not isinstance(opts["response_schema"], Mapping):
            raise TypeError(
                "options['response_schema'] must be a dict (Gemini's Schema object), "
                f"got {type(opts['response_schema']).__name__}"
            )
        if "response_format" in opts:
            raise ValueError(
                "options 'response_format' and 'response_schema' cannot both be set: "
                "response_format sends responseJsonSchema, response_schema sends "
                "responseSchema, and Gemini takes one"
            )
        out["responseMimeType"] = "application/json"
        out["responseSchema"] = _plain(opts["response_schema"], "response_schema")
    elif "response_format" in opts:
        fmt = ResponseFormat.of(opts["response_format"])
        if fmt.kind == "json":
            out["responseMimeType"] = "application/json"
        elif fmt.kind == "json_schema":
            out["responseMimeType"] = "application/json"
            out["responseJsonSchema"] = _plain(
                fmt.wire["json_schema"]["schema"], "response_format"
            )
    return out


# -- tools (GM-6, GM-7) -------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    """GM-6: one ``{"functionDeclarations": [...]}`` for our tools, then each hosted
    tool declaration (``{"googleSearch": {}}``, ...) as given."""
    if value is None:
        return []
    if isinstance(value, Mapping | str | bytes) or not isinstance(value, Iterable):
        value = [value]
    declarations: list[dict[str, Any]] = []
    hosted: list[dict[str, Any]] = []
    # TL-13: the run's records, read once
    for spec in tool_specs(value):
        if spec.name:
            declarations.append(_declaration(spec))
        elif spec.declaration is not None:
            hosted.append(dict(_plain(dict(spec.declaration), "tools")))
        else:
            raise TypeError(f"cannot declare tool {spec.tool!r}: it has no name")
    out: list[dict[str, Any]] = []
    if declarations:
        out.append({"functionDeclarations": declarations})
    return out + hosted


def _declaration(spec: ToolSpec) -> dict[str, Any]:
    """GM-6: the tool's JSON schema as ``parametersJsonSchema`` (all of JSON Schema, not
    the OpenAPI subset of ``parameters``)."""
    name = spec.name
    assert name is not None
    declaration: dict[str, Any] = {"name": name}
    if spec.description:
        declaration["description"] = spec.description
    declaration["parametersJsonSchema"] = (
        _plain(spec.parameters, f"tools[{name}].parameters")
        if spec.parameters is not None
        else {"type": "object", "properties": {}}
    )
    return declaration


def _tool_config(opts: Mapping[str, Any]) -> dict[str, Any] | None:
    """GM-7: ``tool_choice`` as ``toolConfig.functionCallingConfig``."""
    if opts.get("parallel_tool_calls") is False:
        raise ValueError(
            "parallel_tool_calls=False cannot be honoured by Gemini: the model may always "
            "return several calls; leave parallel_tool_calls unset (or True)"
        )
    choice = opts.get("tool_choice")
    if choice is None:
        return None
    names: list[str] = []
    if isinstance(choice, Mapping):
        mode = choice.get("mode")
        required = choice.get("required_function_name")
        allowed = choice.get("allowed_tools")
        if isinstance(required, str) and required:
            names = [required]
        elif allowed:
            if not isinstance(allowed, list | tuple) or not all(
                isinstance(n, str) and n for n in allowed
            ):
                raise ValueError(
                    f"tool_choice allowed_tools must be names: {allowed!r}"
                )
            names = list(allowed)
    else:
        mode = choice
    if mode not in ("auto", "none", "required"):
        raise ValueError(
            f"unsupported tool_choice {choice!r}: use 'auto', 'none', 'required' or "
            "{'mode': 'required', 'required_function_name': name}"
        )
    if names and mode != "required":
        raise ValueError(
            f"tool_choice {dict(choice) if isinstance(choice, Mapping) else choice!r}: "
            "Gemini restricts the callable functions only when a call is required "
            "(mode ANY); use {'mode': 'required', ...}"
        )
    config: dict[str, Any] = {"mode": {"auto": "AUTO", "none": "NONE"}.get(mode, "ANY")}
    if names:
        config["allowedFunctionNames"] = names
    return {"functionCallingConfig": config}


# -- contents (GM-2 .. GM-5) --------------------------------------------------------------


def _contents(
    messages: Sequence[Message], instructions: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The system parts (instructions first, then every system message's texts) and
    the contents (GM-2, GM-3)."""
    system: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        first = messages[0] if messages else None
        if not (
            first is not None and first.role == "system" and first.text == instructions
        ):
            system.append({"text": instructions})
    skipped: set[str] = set()
    names: dict[str, str] = {}
    for m in messages:
        for c in m.contents:
            if c.type == "function_call" and c.call_id:
                if c.informational_only:
                    skipped.add(c.call_id)
                elif c.name:
                    names.setdefault(c.call_id, c.name)
    contents: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            system.extend(_system_parts(message, index))
            continue
        rendered = _content(message, index, skipped, names)
        if rendered is not None:
            contents.append(rendered)
    return system, contents


def _system_parts(message: Message, index: int) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if content.type in _NOT_SENT_TYPES:
            continue
        if content.type != "text":
            raise ValueError(
                f"messages[{index}]: a system message can only hold text for Gemini's "
                f"systemInstruction, not {content.type!r}"
            )
        if content.text:
            parts.append({"text": content.text})
    return parts


def _content(
    message: Message, index: int, skipped: set[str], names: Mapping[str, str]
) -> dict[str, Any] | None:
    role = _ROLES.get(message.role)
    if role is None:
        raise ValueError(
            f"messages[{index}]: role {message.role!r} cannot be sent to Gemini "
            "(user, assistant, tool and system only)"
        )
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        kind = content.type
        if kind in _NOT_SENT_TYPES:
            continue
        if kind == "function_result":
            if content.call_id not in skipped:
                parts.append(_function_response(content, index, names))
        elif kind == "function_call":
            if content.informational_only:
                continue
            if message.role != "assistant":
                raise ValueError(
                    f"messages[{index}]: function_call contents belong in an assistant "
                    f"message, not {message.role!r}"
                )
            parts.append(_function_call(content, index))
        elif kind == "text":
            if content.text:
                parts.append(_with_signature({"text": content.text}, content))
        elif kind == "data":
            parts.append(_inline(content, index))
        elif kind == "uri":
            parts.append(_file(content, index))
        else:
            raise ValueError(
                f"messages[{index}]: content type {kind!r} cannot be sent to Gemini"
            )
    if not parts:
        return None
    return {"role": role, "parts": parts}


def _with_signature(part: dict[str, Any], content: Content) -> dict[str, Any]:
    """GM-13: a thought signature the answer carried goes back on the same part."""
    signature = content.additional_properties.get("thought_signature")
    if isinstance(signature, str) and signature:
        part["thoughtSignature"] = signature
    return part


def _inline(content: Content, index: int) -> dict[str, Any]:
    """GM-4: a ``data:`` URI as ``inlineData`` (base64)."""
    uri = content.uri or ""
    header, _, payload = uri.partition(",")
    mime = content.media_type or header.removeprefix("data:").split(";")[0]
    if not mime:
        raise ValueError(
            f"messages[{index}]: data content without a media type cannot be sent to "
            "Gemini"
        )
    if not header.lower().endswith(";base64"):
        payload = base64.b64encode(urllib.parse.unquote_to_bytes(payload)).decode(
            "ascii"
        )
    return {"inlineData": {"mimeType": mime, "data": payload}}


def _file(content: Content, index: int) -> dict[str, Any]:
    """GM-4: a URI (a Files API URI, a ``gs://`` or web URL) as ``fileData``."""
    data: dict[str, Any] = {"fileUri": content.uri}
    if content.media_type:
        data = {"mimeType": content.media_type, **data}
    return {"fileData": data}


def _function_call(content: Content, index: int) -> dict[str, Any]:
    """GM-5: ``args`` as a JSON object; the call id as ``id``."""
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
            f"messages[{index}]: the arguments of call {content.call_id!r} "
            f"({content.name}) are not a JSON object, which Gemini requires: "
            f"{_snippet(args)}"
        )
    call: dict[str, Any] = {"name": content.name, "args": arguments}
    if content.call_id:
        call = {"id": content.call_id, **call}
    return _with_signature({"functionCall": call}, content)


def _function_response(
    content: Content, index: int, names: Mapping[str, str]
) -> dict[str, Any]:
    """GM-5: ``{"functionResponse": {"id", "name", "response"}}``; the name is the
    call's, found through the call id; ``response`` is ``{"result": ...}``, or
    ``{"error": ...}`` for a failed call without a result."""
    if not content.call_id:
        raise ValueError(f"messages[{index}]: a function_result needs a call_id")
    name = names.get(content.call_id) or content.name
    if not name:
        raise ValueError(
            f"messages[{index}]: the function_result of call {content.call_id!r} has no "
            "name and no function_call with its id is being sent; Gemini requires the "
            "function's name"
        )
    result = content.result
    if result is None and content.exception:
        response: dict[str, Any] = {"error": content.exception}
    elif isinstance(result, str):
        response = {"result": result}
    elif result is None:
        response = {"result": ""}
    else:
        response = {"result": json.loads(json.dumps(result, default=_json_default))}
    return {
        "functionResponse": {"id": content.call_id, "name": name, "response": response}
    }


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return str(value)


# --------------------------------------------------------------------------------------------
# Function-call ids (GM-14)


def call_id_seed(body: Mapping[str, Any]) -> str:
    """A digest of a request body's contents: the seed of its answer's generated call
    ids (GM-14)."""
    basis = json.dumps(
        body.get("contents"), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]
