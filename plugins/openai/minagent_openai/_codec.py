"""The sans-I/O codec of the OpenAI-compatible Chat Completions API (spec/providers.md).

Theory of operation
-------------------
Requests and responses are plain data on both sides; nothing here touches a socket, a task
or a clock, and aiohttp is never imported (PV-1).

* ``build_request(messages, options, *, model, stream)`` renders minagent messages and options
  as the JSON body of ``POST /chat/completions`` (OA-1 .. OA-10). Options are read through one
  table, ``_PASS_THROUGH``; anything not in it is not sent unless it is under
  ``options["extra_body"]`` (PV-3).
* ``parse_response(body)`` turns a non-streaming body into a ``ChatResponse`` (OA-11 .. OA-13).
* ``ChatCompletionsStreamDecoder`` turns the bytes of a streaming answer into
  ``ChatResponseUpdate``s: ``SSEDecoder`` gives events, each event's data is one JSON chunk,
  each chunk with a choice or usage gives one update (PV-16). Its only state besides the SSE
  decoder is the table of tool calls by ``index`` (OA-15), which lets every argument fragment
  carry its call's id, so ``ChatResponse.from_updates`` can merge by call id (PV-13).
* ``parse_error(status, body, headers)`` extracts the provider's message and request id from a
  non-2xx answer (PV-11, OA-19).

The delta of a streamed chunk and the message of a whole response have the same fields, so one
function (``_contents``) maps both; streaming and non-streaming therefore agree (PV-9).
"""

from __future__ import annotations

import http
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from minagent import (
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ProviderError,
    UsageDetails,
)

from ._sse import SSEDecoder, SSEEvent, SSELimitError

__all__ = [
    "DEFAULT_MAX_LINE_SIZE",
    "ChatCompletionsStreamDecoder",
    "OpenAIProtocolError",
    "OpenAIStreamError",
    "build_request",
    "decode_response",
    "encode_request",
    "loads",
    "parse_error",
    "parse_response",
]

_SNIPPET = 200  # characters of offending data quoted in an error (PV-10)
DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024  # characters of one SSE line or event (PV-36)
_MAX_CREATED = 253402300800  # 10000-01-01T00:00:00Z: a later ``created`` counts as absent (OA-13)
_ERROR_TEXT = 500  # characters of a plain-text error body kept (PV-11)


# --------------------------------------------------------------------------------------------
# Errors


class OpenAIStreamError(ProviderError):
    """The server reported an error object (inside a stream, or as a 2xx body) (PV-14, OA-18).

    A `ProviderError` with ``status`` None (OA-22). ``updates`` holds the updates decoded by
    the same ``feed()`` / ``close()`` call before the error; a transport yields them before
    raising.
    """

    def __init__(
        self,
        message: str,
        *,
        type: str | None = None,
        code: str | int | None = None,
        param: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message, provider="openai")
        self.type = type
        self.code = code
        self.param = param
        self.body = body
        self.updates: list[ChatResponseUpdate] = []


class OpenAIProtocolError(ProviderError, ValueError):
    """The server's answer is not what the protocol allows (PV-10): bad JSON, wrong shape.

    A `ProviderError` (OA-22) and a `ValueError`. ``updates``: as for `OpenAIStreamError`.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, provider="openai")
        self.updates: list[ChatResponseUpdate] = []


def _snippet(data: object, limit: int = _SNIPPET) -> str:
    if isinstance(data, bytes | bytearray):
        data = bytes(data[: limit * 4]).decode("utf-8", "replace")
    try:
        text = data if isinstance(data, str) else repr(data)
    except (RecursionError, ValueError):  # nested too deep, or an int too long to print
        text = f"<{type(data).__name__} that cannot be shown>"
    return repr(text if len(text) <= limit else text[:limit] + "...")


# A JSON escape of a UTF-16 surrogate: the only way wire JSON can carry an unpaired one (OA-34).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _repair(text: str) -> str:
    """Unpaired surrogates become U+FFFD; an escaped pair was already joined by ``json``."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _repaired(value: Any) -> Any:
    if isinstance(value, str):
        return _repair(value)
    if isinstance(value, dict):
        return {_repair(k): _repaired(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_repaired(v) for v in value]
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(data: bytes | bytearray | str, what: str) -> Any:
    """Strict JSON of wire data (PV-10, OA-28): anything that is not JSON, NaN and Infinity
    included, is an `OpenAIProtocolError` naming ``what``, never a bare ``ValueError``,
    ``RecursionError`` or ``UnicodeDecodeError``. Integers longer than the interpreter's
    digit limit and nesting deeper than its recursion limit are errors too.
    """
    problem: str | None = None
    if isinstance(data, bytes | bytearray):
        data = bytes(data).decode("utf-8", "replace")  # invalid bytes become U+FFFD (OA-34)
    try:
        value = json.loads(data, parse_constant=_no_constant)
        return _repaired(value) if _SURROGATE_ESCAPE.search(data) else value
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at position {exc.pos}"
    except RecursionError:
        problem = "nested too deeply"
    except ValueError as exc:  # NaN/Infinity, or an integer with too many digits
        problem = str(exc)[:200]
    raise OpenAIProtocolError(f"{what} is not valid JSON ({problem}): {_snippet(data)}")


# --------------------------------------------------------------------------------------------
# Request (OA-1 .. OA-10)

# Options sent under the same name when set (OA-10). ``parallel_tool_calls`` only with tools.
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
    {"text_reasoning", "usage", "error", "function_approval_request", "function_approval_response"}
)
_WIRE_RESPONSE_FORMATS = frozenset({"text", "json_object", "json_schema"})
_SCHEMA_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


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
        raise ValueError("build_request needs a model: pass model=... or options['model']")
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
            raise TypeError(f"options['extra_body'] must be a dict, got {type(extra).__name__}")
        for key, value in extra.items():
            if value is None:  # None removes a computed field (PV-3)
                body.pop(key, None)
            else:
                body[key] = _plain(value, f"extra_body[{key!r}]")
    return body


def _check_keys(opts: Mapping[str, Any]) -> None:
    """OA-26: every option key is read by the codec, internal (``_``), or an error naming it."""
    for key in opts:
        if not isinstance(key, str):
            raise TypeError(f"option keys must be str, got {key!r}")
        if key in _HANDLED or key.startswith("_"):
            continue
        hint = _REFUSED.get(key) or f"to send it as a request field, put it in options['extra_body'] = {{{key!r}: ...}}"
        raise ValueError(f"option {key!r} is not a Chat Completions option of minagent-openai: {hint}")


def _plain(value: Any, where: str) -> Any:
    """``value`` deep-copied as plain JSON data: the body shares nothing with the options (PV-2).

    A value that JSON cannot carry is a ``TypeError``; NaN or an infinity a ``ValueError``
    (not valid JSON, OA-27), both naming the option.
    """
    failure: Exception | None = None
    try:
        result = json.loads(json.dumps(value, allow_nan=False))
    except ValueError as exc:
        failure = ValueError(f"option {where!r} is not valid JSON (NaN and Infinity are not allowed): {exc}")
    except (TypeError, RecursionError) as exc:
        failure = TypeError(f"option {where!r} is not JSON data: {exc}")
    if failure is not None:
        raise failure
    return result


def encode_request(body: Mapping[str, Any]) -> bytes:
    """The request body as UTF 8 JSON bytes; NaN or Infinity anywhere is a ``ValueError`` (OA-27)."""
    failure: Exception | None = None
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as exc:
        failure = ValueError(f"the request is not valid JSON (NaN and Infinity are not allowed): {exc}")
    except (TypeError, RecursionError) as exc:
        failure = TypeError(f"the request is not JSON data: {exc}")
    raise failure


# -- messages (OA-2 .. OA-5) ------------------------------------------------------------------


def _messages(messages: Sequence[Message], instructions: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        first = messages[0] if messages else None
        if not (first is not None and first.role == "system" and first.text == instructions):
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


def _message(message: Message, index: int, skipped_calls: set[str]) -> list[dict[str, Any]]:
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
            raise ValueError(f"messages[{index}]: content type {kind!r} cannot be sent to Chat Completions")
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
        raise ValueError(f"messages[{index}]: images can only be sent in user messages, not {role!r}")
    image: dict[str, Any] = {"url": content.uri}
    detail = content.additional_properties.get("detail")
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def _tool_call(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id or not content.name:
        raise ValueError(f"messages[{index}]: a function_call needs a call_id and a name, got {content!r}")
    args = content.arguments
    if args is None:
        arguments = "{}"
    elif isinstance(args, str):
        arguments = args
    else:
        arguments = _plain_text(args, f"messages[{index}]: the arguments of call {content.call_id!r}")
    return {
        "id": content.call_id,
        "type": "function",
        "function": {"name": content.name, "arguments": arguments},
    }


def _tool_message(content: Content, index: int) -> dict[str, Any]:
    if not content.call_id:
        raise ValueError(f"messages[{index}]: a function_result needs a call_id")
    return {"role": "tool", "tool_call_id": content.call_id, "content": _result_text(content)}


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
        failure = ValueError(f"{where} are not valid JSON (NaN and Infinity are not allowed): {exc}")
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
    return [_tool(tool) for tool in value]


def _tool(tool: Any) -> dict[str, Any]:
    if isinstance(tool, Mapping):
        if "type" in tool:
            return dict(_plain(dict(tool), "tools"))
        name, description, parameters = (
            tool.get("name"),
            tool.get("description"),
            tool.get("parameters"),
        )
    elif all(hasattr(tool, attr) for attr in ("name", "description", "parameters")):
        name, description, parameters = tool.name, tool.description, tool.parameters
    else:
        raise TypeError(
            f"cannot declare tool {tool!r}: expected an object with name, description and "
            "parameters, "
            "a {'name', 'description', 'parameters'} dict or a wire declaration dict with 'type'"
        )
    if not isinstance(name, str) or not name:
        raise TypeError(f"cannot declare tool {tool!r}: it has no name")
    function: dict[str, Any] = {"name": name}
    if description:
        function["description"] = description
    function["parameters"] = (
        _plain(parameters, f"tools[{name}].parameters")
        if parameters is not None
        else {
            "type": "object",
            "properties": {},
        }
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
            return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}
        if mode in ("auto", "none", "required") and not name and not allowed:
            return mode
    raise ValueError(f"unsupported tool_choice {value!r}")


# -- response_format (OA-8) -------------------------------------------------------------------


def _response_format(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        if value in ("text", "json_object"):
            return {"type": value}
        raise ValueError(f"unsupported response_format {value!r}")
    if isinstance(value, Mapping):
        if value.get("type") in _WIRE_RESPONSE_FORMATS:
            return dict(_plain(dict(value), "response_format"))
        if "schema" in value:
            schema = value["schema"]
            name = value.get("name")
            strict = value.get("strict", False)
            description = value.get("description")
        else:
            schema, name, strict, description = value, None, False, None
    elif callable(getattr(value, "model_json_schema", None)):
        schema = value.model_json_schema()
        name, strict, description = getattr(value, "__name__", None), False, None
    else:
        raise TypeError(f"unsupported response_format {value!r}: expected a JSON schema dict or a str")
    if not isinstance(schema, Mapping):
        raise TypeError(f"response_format schema must be a dict, got {type(schema).__name__}")
    if not name:
        title = schema.get("title")
        name = title if isinstance(title, str) and title else "response"
    spec: dict[str, Any] = {
        "name": _SCHEMA_NAME_CHARS.sub("_", str(name))[:64],
        "schema": _plain(dict(schema), "response_format"),
        "strict": bool(strict),
    }
    if description:
        spec["description"] = description
    return {"type": "json_schema", "json_schema": spec}


# --------------------------------------------------------------------------------------------
# Response (OA-11 .. OA-13)


def decode_response(raw: bytes | bytearray | str) -> ChatResponse:
    """The bytes of a non-streaming answer as a `ChatResponse`: ``loads`` then ``parse_response``.

    Only `OpenAIProtocolError` and `OpenAIStreamError` come out of it, whatever the bytes (OA-28).
    """
    return parse_response(loads(raw, "response body"))


def parse_response(body: Mapping[str, Any]) -> ChatResponse:
    """A non-streaming Chat Completions body as a `ChatResponse` (PV-8, OA-11 .. OA-13)."""
    if not isinstance(body, Mapping):
        raise OpenAIProtocolError(f"response body is not a JSON object: {_snippet(body)}")
    _raise_if_error(body, None)
    choices = body.get("choices")
    choice = _choice_zero(choices) if isinstance(choices, list) else None
    if choice is None:
        raise OpenAIProtocolError(f"response body has no choice: {_snippet(_dump(body))}")
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise OpenAIProtocolError(f"choice has no message object: {_snippet(_dump(choice))}")
    meta = _meta(body)
    contents = _contents(message, _CallIds(meta["response_id"]), whole=True)
    usage = _usage(body.get("usage"))
    role = message.get("role")
    return ChatResponse(
        [
            Message(
                role if isinstance(role, str) and role else "assistant",
                contents,
                message_id=meta["response_id"],
            )
        ],
        response_id=meta["response_id"],
        model=meta["model"],
        created_at=meta["created_at"],
        finish_reason=_str_or_none(choice.get("finish_reason")),
        usage_details=usage,
        raw_representation=body,
    )


def _dump(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return _snippet(value)


def _choice_zero(choices: list[Any]) -> Mapping[str, Any] | None:
    """The choice whose ``index`` is 0 (a choice without an index counts as 0)."""
    for choice in choices:
        if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
            return choice
    return None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _meta(chunk: Mapping[str, Any]) -> dict[str, Any]:
    """Response-level fields; an empty id or model and ``created == 0`` count as absent (OA-13)."""
    created = chunk.get("created")
    created_at = None
    if isinstance(created, int | float) and not isinstance(created, bool) and 0 < created < _MAX_CREATED:
        created_at = datetime.fromtimestamp(created, tz=UTC).isoformat().replace("+00:00", "Z")
    return {
        "response_id": _str_or_none(chunk.get("id")),
        "model": _str_or_none(chunk.get("model")),
        "created_at": created_at,
    }


class _CallIds:
    """Call ids by ``index`` for one response, and ids for calls that arrive without one.

    OA-11, OA-15.
    """

    def __init__(self, response_id: str | None) -> None:
        self.response_id = response_id
        self.by_index: dict[int, str] = {}
        self.named: set[str] = set()
        self.order: dict[str, None] = {}  # every call id, in order of appearance
        self.last: int | None = None

    def seen(self, call_id: str) -> None:
        self.order.setdefault(call_id)

    def unnamed(self) -> list[str]:
        return [call_id for call_id in self.order if call_id not in self.named]

    def synthetic(self, index: int) -> str:
        return f"call_{index}_{self.response_id}" if self.response_id else f"call_{index}"

    def resolve(self, index: Any, call_id: Any) -> str:
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if not isinstance(index, int) or isinstance(index, bool):
            if call_id is not None:
                known = [i for i, c in self.by_index.items() if c == call_id]
                index = known[-1] if known else max(self.by_index, default=-1) + 1
            elif self.last is not None:
                index = self.last
            else:
                index = 0
        self.last = index
        if call_id is not None:
            self.by_index[index] = call_id
        elif index not in self.by_index:
            self.by_index[index] = self.synthetic(index)
        return self.by_index[index]

    def name_once(self, call_id: str, name: Any) -> str:
        """The name the first time a call shows one; ``""`` after that (PV-13)."""
        if call_id in self.named or not isinstance(name, str) or not name:
            return ""
        self.named.add(call_id)
        return name


def _contents(message: Mapping[str, Any], calls: _CallIds, *, whole: bool) -> list[Content]:
    """The contents of a whole message or of one streamed delta, in the order of OA-11.

    In a whole message a tool call without ``index`` is at its position in ``tool_calls``.
    """
    out: list[Content] = []
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str) or not reasoning:
        reasoning = message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        out.append(Content.from_text_reasoning(reasoning))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        out.append(Content.from_text(refusal, additional_properties={"refusal": True}))
    text = message.get("content")
    if isinstance(text, str) and text:
        out.append(Content.from_text(text))
    elif text is not None and not isinstance(text, str | list):
        raise OpenAIProtocolError(f"content must be a string, a list or null: {_snippet(_dump(text))}")
    elif isinstance(text, list):  # some compatible servers answer with content parts
        for part in text:
            if not isinstance(part, Mapping) or part.get("type") != "text":
                continue
            part_text = part.get("text")
            if isinstance(part_text, str) and part_text:
                out.append(Content.from_text(part_text))
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for position, call in enumerate(tool_calls):
            if not isinstance(call, Mapping):
                raise OpenAIProtocolError(f"tool_calls[{position}] is not an object: {_snippet(_dump(call))}")
            index = call.get("index", position) if whole else call.get("index")
            content = _call_content(call, index, calls)
            if whole and not content.name:
                raise OpenAIProtocolError(f"tool_calls[{position}] has no function name: {_snippet(_dump(call))}")
            out.append(content)
    elif tool_calls is not None:
        raise OpenAIProtocolError(f"tool_calls must be a list or null: {_snippet(_dump(tool_calls))}")
    return out


def _call_content(call: Mapping[str, Any], index: Any, calls: _CallIds) -> Content:
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    call_id = calls.resolve(index, call.get("id"))
    args = function.get("arguments")
    if args is None:
        arguments = ""
    elif isinstance(args, str):
        arguments = args
    else:
        arguments = _dump_arguments(args)
    calls.seen(call_id)
    return Content.from_function_call(call_id, calls.name_once(call_id, function.get("name")), arguments)


def _dump_arguments(args: Any) -> str:
    problem = ""
    try:
        return json.dumps(args, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        problem = f"{type(exc).__name__}: {str(exc)[:100]}"
    raise OpenAIProtocolError(f"tool call arguments cannot be sent on as JSON ({problem})")


def _usage(value: Any) -> UsageDetails | None:
    """OA-12."""
    if not isinstance(value, Mapping):
        return None
    prompt = value.get("prompt_tokens_details")
    completion = value.get("completion_tokens_details")
    prompt = prompt if isinstance(prompt, Mapping) else {}
    completion = completion if isinstance(completion, Mapping) else {}
    extra: dict[str, int] = {}
    for key, details, mapped in (
        ("prompt_tokens_details", prompt, "cached_tokens"),
        ("completion_tokens_details", completion, "reasoning_tokens"),
    ):
        for field, count in details.items():
            if field != mapped and _is_count(count):
                extra[f"{key}.{field}"] = count
    return UsageDetails(
        input_token_count=_count(value.get("prompt_tokens")),
        output_token_count=_count(value.get("completion_tokens")),
        total_token_count=_count(value.get("total_tokens")),
        cache_read_input_token_count=_count(prompt.get("cached_tokens")),
        reasoning_output_token_count=_count(completion.get("reasoning_tokens")),
        additional_counts=extra,
    )


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> int | None:
    return value if _is_count(value) else None


def _raise_if_error(chunk: Mapping[str, Any], event: SSEEvent | None) -> None:
    """OA-18: ``{"error": {...}}``, ``{"error": "text"}`` or ``{"object": "error", ...}``."""
    error: Any = chunk.get("error")
    if error is None and chunk.get("object") == "error":
        error = chunk
    if error is None and event is not None and event.event == "error":
        error = chunk
    if error is None:
        return
    if isinstance(error, Mapping):
        message = error.get("message")
        code = error.get("code")
        raise OpenAIStreamError(
            message if isinstance(message, str) and message else _dump(error),
            type=_str_or_none(error.get("type")),
            code=code if isinstance(code, str | int) and not isinstance(code, bool) else None,
            param=_str_or_none(error.get("param")),
            body=chunk,
        )
    raise OpenAIStreamError(str(error), body=chunk)


# --------------------------------------------------------------------------------------------
# Stream (PV-12 .. PV-16, OA-14 .. OA-18)


class ChatCompletionsStreamDecoder:
    """Bytes of a streaming Chat Completions answer in, `ChatResponseUpdate`s out.

    Feed every chunk the transport receives to ``feed()`` and yield what it returns; at end of
    input call ``close()`` and yield that too; then check ``done`` (PV-15). Errors raised by
    ``feed()`` / ``close()`` carry the updates decoded before them in ``.updates`` (PV-14).
    """

    def __init__(self, *, max_line_size: int | None = DEFAULT_MAX_LINE_SIZE) -> None:
        self._sse = SSEDecoder(max_line_size=max_line_size)
        self._calls = _CallIds(None)
        self._checked = False
        self.done = False

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ChatResponseUpdate]:
        return self._step(chunk)

    def close(self) -> list[ChatResponseUpdate]:
        updates = self._step(None)
        if not self._checked:
            self._check_names(updates)
        return updates

    def _step(self, chunk: bytes | bytearray | memoryview | None) -> list[ChatResponseUpdate]:
        limit: SSELimitError | None = None
        try:
            events = self._sse.feed(chunk) if chunk is not None else self._sse.close()
        except SSELimitError as exc:
            events, limit = exc.events, exc
        updates = self._decode(events)
        if limit is not None:
            error = OpenAIProtocolError(f"{limit} (PV-36)")
            error.updates = updates
            raise error
        return updates

    def _check_names(self, updates: list[ChatResponseUpdate]) -> None:
        """OA-28: by the end of the stream, every tool call has received its function name."""
        self._checked = True
        unnamed = self._calls.unnamed()
        if unnamed:
            error = OpenAIProtocolError(f"the stream ended with tool calls that have no function name: {unnamed[:5]}")
            error.updates = updates
            raise error

    def _decode(self, events: list[SSEEvent]) -> list[ChatResponseUpdate]:
        updates: list[ChatResponseUpdate] = []
        for event in events:
            if self.done:
                break
            try:
                update = self._event(event)
            except (OpenAIStreamError, OpenAIProtocolError) as exc:
                exc.updates = updates
                raise
            if update is not None:
                updates.append(update)
        return updates

    def _event(self, event: SSEEvent) -> ChatResponseUpdate | None:
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            self._check_names([])
            return None
        try:
            chunk = loads(data, "stream data")
        except OpenAIProtocolError as exc:
            if event.event != "error":
                raise
            chunk = exc  # an error event whose data is not JSON: its text is the message
        if isinstance(chunk, OpenAIProtocolError):
            raise OpenAIStreamError(data[:_ERROR_TEXT] if data else "error event without data", body=data)
        if not isinstance(chunk, Mapping):
            raise OpenAIProtocolError(f"stream chunk is not a JSON object: {_snippet(event.data)}")
        _raise_if_error(chunk, event)
        return self._chunk(chunk)

    def _chunk(self, chunk: Mapping[str, Any]) -> ChatResponseUpdate | None:
        choices = chunk.get("choices")
        choice = _choice_zero(choices) if isinstance(choices, list) else None
        usage = _usage(chunk.get("usage"))
        if choice is None and usage is None:
            return None
        meta = _meta(chunk)
        if self._calls.response_id is None:
            self._calls.response_id = meta["response_id"]
        elif meta["response_id"] is not None:  # OA-14: the stream's first id holds for all of it
            meta["response_id"] = self._calls.response_id
        contents: list[Content] = []
        finish_reason = None
        if choice is not None:
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                contents = _contents(delta, self._calls, whole=False)
            finish_reason = _str_or_none(choice.get("finish_reason"))
        if usage is not None:
            contents.append(Content.from_usage(usage))
        return ChatResponseUpdate(
            contents,
            "assistant",
            response_id=meta["response_id"],
            message_id=meta["response_id"],
            model=meta["model"],
            created_at=meta["created_at"],
            finish_reason=finish_reason,
            raw_representation=chunk,
        )


# --------------------------------------------------------------------------------------------
# Errors of non-2xx answers (PV-11, OA-19)


def parse_error(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(provider message, request id)`` of a non-2xx answer."""
    request_id = None
    if headers:
        lowered = {str(k).lower(): v for k, v in headers.items()}
        request_id = lowered.get("x-request-id") or lowered.get("request-id") or None
    data: Any = body
    text = ""
    if isinstance(body, bytes | bytearray):
        text = bytes(body).decode("utf-8", errors="replace")
    elif isinstance(body, str):
        text = body
    elif isinstance(body, Mapping):
        text = _dump(body)
    if text and not isinstance(body, Mapping):
        try:
            data = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError):  # not JSON, too deep, too long an integer (OA-28)
            data = None
    message = _error_message(data) if isinstance(data, Mapping) else None
    if message is not None:
        message = _repair(message)
    if message is None:
        message = text.strip()[:_ERROR_TEXT] if text.strip() else None
    if message is None:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        message = f"HTTP {status} {reason}".rstrip()
    return message, request_id


def _error_message(data: Mapping[str, Any]) -> str | None:
    error = data.get("error")
    if isinstance(error, Mapping):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message
    elif isinstance(error, str) and error:
        return error
    message = data.get("message")
    if isinstance(message, str) and message:
        return message
    return None
