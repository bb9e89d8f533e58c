"""The sans-I/O codec of the OpenAI Responses API, ``POST /responses`` (spec/openai-responses.md).

Theory of operation
-------------------
Plain data in, plain data out; no socket, task or clock, and aiohttp is never imported (PV-1).

* ``build_responses_request(messages, options, *, model, stream)`` renders minagent messages as Responses
  input items (OR-2 .. OR-6) and the options as request fields (OR-7 .. OR-12). Every option key
  is accounted for: sent (renamed when the API names it differently), consumed by minagent, or
  an error naming it (OR-11). Nothing is dropped silently.
* ``parse_responses_response(body, *, store=None)`` turns a whole ``response`` object into a
  `ChatResponse` (OR-13 .. OR-15). It builds one update from the output items and merges it with
  ``ChatResponse.from_updates``, so a streamed response, merged the same way, is equal (PV-9).
* ``ResponsesStreamDecoder`` (in ``_responses_stream``) turns the bytes of a streamed answer
  into updates with the helpers defined here (OR-16 .. OR-19).
* Errors of non-2xx answers are parsed by the Chat Completions codec's ``parse_error``: the
  error body is the same on both APIs (OR-21).

The service keeps a thread when ``store`` is not False: the response id (or the id of the
``conversation`` object) becomes ``conversation_id`` (OR-15), which the tool loop and `Agent`
send back as ``options["conversation_id"]``, rendered as ``previous_response_id`` (OR-10).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from minagent import ChatResponse, ChatResponseUpdate, Content, Message, ResponseFormat, UsageDetails

from ._codec import OpenAIProtocolError, OpenAIStreamError, _snippet, parse_error

__all__ = [
    "build_responses_request",
    "parse_error",
    "parse_responses_response",
]

ITEM_KEY = "openai_item"  # additional_properties key of an output item kept whole (OR-13)

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
# Options minagent consumes or renders itself (OR-7 .. OR-10); never sent under their own name.
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
_NOT_SENT = frozenset({"usage", "error", "function_approval_request", "function_approval_response"})
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})


def build_responses_request(
    messages: Sequence[Message],
    options: Mapping[str, Any] | None = None,
    *,
    model: str,
    stream: bool,
) -> dict[str, Any]:
    """The JSON body of ``POST /responses`` for these messages and options (OR-1 .. OR-12)."""
    for key in options or {}:
        if not isinstance(key, str):
            raise TypeError(f"option keys must be str, got {key!r}")
    opts = {k: v for k, v in (options or {}).items() if v is not None and not k.startswith("_")}
    for key in opts:
        if key in _UNSUPPORTED:
            raise ValueError(f"option {key!r} cannot be sent to the Responses API: {_UNSUPPORTED[key]}")
        if key not in _RENDERED and key not in _PASS_THROUGH:
            raise ValueError(
                f"unknown option {key!r} for the Responses API; to send a field minagent does not "
                f"know, put it under options['extra_body'] (e.g. extra_body={{{key!r}: ...}})"
            )
    chosen = opts.get("model") or model
    if not chosen or not isinstance(chosen, str):
        raise ValueError("build_responses_request needs a model: pass model=... or options['model']")
    body: dict[str, Any] = {"model": chosen}
    instructions = opts.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise TypeError(f"options['instructions'] must be a str, got {type(instructions).__name__}")
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
        raise TypeError(f"options['conversation_id'] must be a str, got {type(thread).__name__}")
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
        parallel = opts.get("parallel_tool_calls", opts.get("allow_multiple_tool_calls"))
        if parallel is not None:
            body["parallel_tool_calls"] = bool(parallel)
    if stream:
        body["stream"] = True
        if "stream_options" in opts:
            body["stream_options"] = _plain(opts["stream_options"], "stream_options")
    extra = opts.get("extra_body")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise TypeError(f"options['extra_body'] must be a dict, got {type(extra).__name__}")
        for key, value in _plain(dict(extra), "extra_body").items():
            if value is None:
                body.pop(key, None)  # OR-12: None removes a computed field instead of sending null
            else:
                body[key] = value
    return body


def _plain(value: Any, where: str) -> Any:
    """``value`` as a deep copy of plain JSON data (PV-2); NaN and infinities are refused."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"option {where!r} is not JSON data: {exc}") from None


def _reasoning(opts: Mapping[str, Any]) -> dict[str, Any]:
    """OR-10: ``reasoning`` (a dict) with ``reasoning_effort`` as its ``effort`` unless it has one."""
    given = opts.get("reasoning")
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(f"options['reasoning'] must be a dict, got {type(given).__name__}")
    reasoning: dict[str, Any] = _plain(dict(given), "reasoning") if given else {}
    if "reasoning_effort" in opts:
        reasoning.setdefault("effort", _plain(opts["reasoning_effort"], "reasoning_effort"))
    return reasoning


def _text(opts: Mapping[str, Any]) -> dict[str, Any]:
    """OR-9: ``text`` (a dict), ``response_format`` as ``text.format``, ``verbosity``."""
    given = opts.get("text")
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(f"options['text'] must be a dict, got {type(given).__name__}")
    text: dict[str, Any] = _plain(dict(given), "text") if given else {}
    if "response_format" in opts:
        fmt = _text_format(opts["response_format"])
        if "format" in text and text["format"] != fmt:
            raise ValueError("options['response_format'] and options['text']['format'] disagree; set only one of them")
        text["format"] = fmt
    if "verbosity" in opts:
        text.setdefault("verbosity", _plain(opts["verbosity"], "verbosity"))
    return text


def _text_format(value: Any) -> dict[str, Any]:
    """OR-9: the normalised wire form of SO-2, flattened into the Responses ``text.format``."""
    if isinstance(value, Mapping) and value.get("type") == "json_schema" and "json_schema" not in value:
        return dict(_plain(dict(value), "response_format"))  # already the Responses form
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


def _message_items(message: Message, index: int, skipped: set[str], store: Any) -> list[dict[str, Any]]:
    """A message's items in content order; adjacent texts and images share one message item."""
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []

    def flush() -> None:
        if parts:
            if message.role not in _MESSAGE_ROLES:
                raise ValueError(
                    f"messages[{index}]: role {message.role!r} cannot carry text or images in the Responses "
                    f"API (use one of {sorted(_MESSAGE_ROLES)})"
                )
            items.append({"type": "message", "role": message.role, "content": list(parts)})
            parts.clear()

    for content in message.contents:
        kind = content.type
        if kind in _NOT_SENT:
            continue
        if kind == "text":
            if content.text:
                part_type = "output_text" if message.role == "assistant" else "input_text"
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
            items.append(_plain(dict(content.additional_properties[ITEM_KEY]), f"messages[{index}] item"))
        else:
            raise ValueError(f"messages[{index}]: content type {kind!r} cannot be sent to the Responses API")
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
    return {"type": "input_image", "image_url": content.uri, "detail": detail if isinstance(detail, str) else "auto"}


def _call_item(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id or not content.name:
        raise ValueError(f"messages[{index}]: a function_call needs a call_id and a name, got {content!r}")
    args = content.arguments
    arguments = "{}" if args is None else args if isinstance(args, str) else json.dumps(args)
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
    return {"type": "function_call_output", "call_id": content.call_id, "output": output}


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else str(value)


def _reasoning_item(content: Content, store: Any) -> dict[str, Any] | None:
    """OR-5: a reasoning item the service gave an id; None when it cannot be replayed."""
    if not content.id:
        return None
    if store is False and not content.protected_data:
        return None  # not stored and not encrypted: the service could not resolve it
    props = content.additional_properties
    summary = props.get("summary")
    if isinstance(summary, list) and all(isinstance(s, str) for s in summary):
        texts = list(summary)
    else:
        texts = [content.text] if content.text and not isinstance(props.get("reasoning_text"), list) else []
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": content.id,
        "summary": [{"type": "summary_text", "text": t} for t in texts],
    }
    reasoning_text = props.get("reasoning_text")
    if isinstance(reasoning_text, list) and reasoning_text:
        item["content"] = [{"type": "reasoning_text", "text": str(t)} for t in reasoning_text]
    if content.protected_data:
        item["encrypted_content"] = content.protected_data
    return item


# -- tools (OR-8) ---------------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, Mapping | str | bytes) or not isinstance(value, Iterable):
        value = [value]
    return [_tool(tool) for tool in value]


def _tool(tool: Any) -> dict[str, Any]:
    strict: Any = False
    if isinstance(tool, Mapping):
        function = tool.get("function")
        if tool.get("type") == "function" and isinstance(function, Mapping):  # Chat Completions form
            return _tool(dict(function))
        if "type" in tool:
            return dict(_plain(dict(tool), "tools"))  # a Responses declaration or a hosted tool
        name, description, parameters = tool.get("name"), tool.get("description"), tool.get("parameters")
        strict = tool.get("strict", False)
    elif all(hasattr(tool, attr) for attr in ("name", "description", "parameters")):
        name, description, parameters = tool.name, tool.description, tool.parameters
    else:
        raise TypeError(
            f"cannot declare tool {tool!r}: expected an object with name, description and parameters, "
            "a {'name', 'description', 'parameters'} dict or a declaration dict with 'type'"
        )
    if not isinstance(name, str) or not name:
        raise TypeError(f"cannot declare tool {tool!r}: it has no name")
    declaration: dict[str, Any] = {"type": "function", "name": name}
    if description:
        declaration["description"] = description
    declaration["parameters"] = (
        _plain(parameters, f"tools[{name}].parameters")
        if parameters is not None
        else {"type": "object", "properties": {}}
    )
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


# --------------------------------------------------------------------------------------------
# Response (OR-13 .. OR-15)


def parse_responses_response(body: Mapping[str, Any], *, store: bool | None = None) -> ChatResponse:
    """A whole ``response`` object as a `ChatResponse` (OR-13 .. OR-15).

    ``store`` is the request's ``store`` option: when it is False the response id is not a
    thread id (OR-15).
    """
    if not isinstance(body, Mapping):
        raise OpenAIProtocolError(f"response body is not a JSON object: {_snippet(body)}")
    _raise_if_failed(body)
    output = body.get("output")
    if not isinstance(output, list):
        raise OpenAIProtocolError(f"response body has no output list: {_snippet(_dump(body))}")
    contents: list[Content] = []
    for position, item in enumerate(output):
        if not isinstance(item, Mapping):
            raise OpenAIProtocolError(f"output[{position}] is not an object: {_snippet(_dump(item))}")
        contents.extend(_item_contents(item))
    usage = _usage(body.get("usage"))
    if usage is not None:
        contents.append(Content.from_usage(usage))
    update = _update(contents, _meta(body, store), finish_reason=_finish_reason(body), raw=body)
    response = ChatResponse.from_updates([update])
    response.raw_representation = body
    return response


def _dump(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _meta(response: Mapping[str, Any], store: bool | None) -> dict[str, Any]:
    created = response.get("created_at")
    created_at = None
    if isinstance(created, int | float) and not isinstance(created, bool) and created > 0:
        created_at = datetime.fromtimestamp(created, tz=UTC).isoformat().replace("+00:00", "Z")
    response_id = _str_or_none(response.get("id"))
    conversation = response.get("conversation")
    conversation_id = None
    if store is not False and response.get("store") is not False:
        if isinstance(conversation, Mapping) and _str_or_none(conversation.get("id")):
            conversation_id = conversation["id"]
        else:
            conversation_id = response_id
    return {
        "response_id": response_id,
        "conversation_id": conversation_id,
        "model": _str_or_none(response.get("model")),
        "created_at": created_at,
    }


def _update(
    contents: list[Content], meta: Mapping[str, Any], *, finish_reason: str | None = None, raw: Any = None
) -> ChatResponseUpdate:
    return ChatResponseUpdate(
        contents,
        "assistant",
        response_id=meta.get("response_id"),
        message_id=meta.get("response_id"),
        conversation_id=meta.get("conversation_id"),
        model=meta.get("model"),
        created_at=meta.get("created_at"),
        finish_reason=finish_reason,
        raw_representation=raw,
    )


def _finish_reason(response: Mapping[str, Any]) -> str | None:
    """OR-14: ``stop`` / ``tool_calls`` when completed, the incomplete reason, else None."""
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if reason == "max_output_tokens":
            return "length"
        return reason if isinstance(reason, str) and reason else "incomplete"
    if status == "completed":
        output = response.get("output")
        items = output if isinstance(output, list) else []
        has_calls = any(isinstance(i, Mapping) and i.get("type") == "function_call" for i in items)
        return "tool_calls" if has_calls else "stop"
    return None


def _message_texts(item: Mapping[str, Any]) -> list[Content]:
    out: list[Content] = []
    parts = item.get("content")
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "output_text":
            text = part.get("text")
            if isinstance(text, str) and text:
                out.append(Content.from_text(text))
        elif part.get("type") == "refusal":
            text = part.get("refusal")
            if isinstance(text, str) and text:
                out.append(Content.from_text(text, additional_properties={"refusal": True}))
    return out


def _call(item: Mapping[str, Any], arguments: str) -> Content:
    call_id = _str_or_none(item.get("call_id")) or _str_or_none(item.get("id"))
    if call_id is None:
        raise OpenAIProtocolError(f"function_call item without call_id: {_snippet(_dump(item))}")
    name = item.get("name")
    return Content.from_function_call(
        call_id, name if isinstance(name, str) else "", arguments, id=_str_or_none(item.get("id"))
    )


def _arguments(item: Mapping[str, Any]) -> str:
    args = item.get("arguments")
    if args is None:
        return ""
    return args if isinstance(args, str) else json.dumps(args)


def _reasoning_content(item: Mapping[str, Any]) -> Content:
    summary = [
        s["text"]
        for s in item.get("summary") or []
        if isinstance(s, Mapping) and isinstance(s.get("text"), str) and s["text"]
    ]
    reasoning_text = [
        c["text"]
        for c in item.get("content") or []
        if isinstance(c, Mapping) and isinstance(c.get("text"), str) and c["text"]
    ]
    props: dict[str, Any] = {}
    if summary:
        props["summary"] = summary
    if reasoning_text:
        props["reasoning_text"] = reasoning_text
    texts = summary or reasoning_text
    return Content.from_text_reasoning(
        "\n\n".join(texts) if texts else None,
        id=_str_or_none(item.get("id")),
        protected_data=_str_or_none(item.get("encrypted_content")),
        additional_properties=props,
    )


def _item_contents(item: Mapping[str, Any]) -> list[Content]:
    """OR-13: the contents of one whole output item."""
    kind = item.get("type")
    if kind == "message":
        return _message_texts(item)
    if kind == "function_call":
        return [_call(item, _arguments(item))]
    if kind == "reasoning":
        return [_reasoning_content(item)]
    if not isinstance(kind, str) or not kind:
        raise OpenAIProtocolError(f"output item without a type: {_snippet(_dump(item))}")
    kept = json.loads(json.dumps(item))
    return [Content(kind, id=_str_or_none(item.get("id")), additional_properties={ITEM_KEY: kept})]


def _usage(value: Any) -> UsageDetails | None:
    """OR-14: token counts, cached and reasoning tokens included."""
    if not isinstance(value, Mapping):
        return None
    inp = value.get("input_tokens_details")
    out = value.get("output_tokens_details")
    inp = inp if isinstance(inp, Mapping) else {}
    out = out if isinstance(out, Mapping) else {}
    mapped = {"cached_tokens", "cache_write_tokens", "reasoning_tokens"}
    extra: dict[str, int] = {}
    for key, details in (("input_tokens_details", inp), ("output_tokens_details", out)):
        for field, count in details.items():
            if field not in mapped and _count(count) is not None:
                extra[f"{key}.{field}"] = count
    return UsageDetails(
        input_token_count=_count(value.get("input_tokens")),
        output_token_count=_count(value.get("output_tokens")),
        total_token_count=_count(value.get("total_tokens")),
        cache_read_input_token_count=_count(inp.get("cached_tokens")),
        cache_creation_input_token_count=_count(inp.get("cache_write_tokens")),
        reasoning_output_token_count=_count(out.get("reasoning_tokens")),
        additional_counts=extra,
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _stream_error(error: Any, body: Any) -> OpenAIStreamError:
    if isinstance(error, Mapping):
        message = error.get("message")
        code = error.get("code")
        return OpenAIStreamError(
            message if isinstance(message, str) and message else _dump(error),
            type=_str_or_none(error.get("type")),
            code=code if isinstance(code, str | int) and not isinstance(code, bool) else None,
            param=_str_or_none(error.get("param")),
            body=body,
        )
    return OpenAIStreamError(str(error), body=body)


def _raise_if_failed(response: Mapping[str, Any]) -> None:
    """OR-13, OR-17: a failed response (or any response with an error object) raises."""
    error = response.get("error")
    if error is not None:
        raise _stream_error(error, response)
    if response.get("status") == "failed":
        raise OpenAIStreamError("the response failed without an error object", body=response)
