"""Answers of the OpenAI Responses API: whole ``response`` objects
(spec/openai-responses.md OR-13 .. OR-15).

Theory of operation
-------------------
Sans-I/O (PV-1). ``parse_responses_response(body, *, store=None)`` turns a whole
``response`` object into a `ChatResponse` (OR-13 .. OR-15). It builds one update from
the output items and merges it with ``ChatResponse.from_updates``, so a streamed
response (``_responses_stream``, which maps items with the same functions), merged the
same way, is equal (PV-9). Errors of non-2xx answers are read by the Chat Completions
``parse_error``: the error body is the same on both APIs. The response id (or the
``conversation`` object's) becomes ``conversation_id`` unless ``store`` is False
(OR-15).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ._minagent import ChatResponse, ChatResponseUpdate, Content, UsageDetails
from ._response import _MAX_CREATED, OpenAIProtocolError, OpenAIStreamError, _snippet

__all__ = ["ITEM_KEY", "parse_responses_response"]

# additional_properties key of an output item kept whole (OR-13)
ITEM_KEY = "openai_item"


def parse_responses_response(
    body: Mapping[str, Any], *, store: bool | None = None
) -> ChatResponse:
    """A whole ``response`` object as a `ChatResponse` (OR-13 .. OR-15).

    ``store`` is the request's ``store`` option: when it is False the response id is not
    a thread id (OR-15).
    """
    if not isinstance(body, Mapping):
        raise OpenAIProtocolError(
            f"response body is not a JSON object: {_snippet(body)}"
        )
    _raise_if_failed(body)
    output = body.get("output")
    if not isinstance(output, list):
        raise OpenAIProtocolError(
            f"response body has no output list: {_snippet(_dump(body))}"
        )
    contents: list[Content] = []
    for position, item in enumerate(output):
        if not isinstance(item, Mapping):
            raise OpenAIProtocolError(
                f"output[{position}] is not an object: {_snippet(_dump(item))}"
            )
        contents.extend(_item_contents(item))
    usage = _usage(body.get("usage"))
    if usage is not None:
        contents.append(Content.from_usage(usage))
    update = _update(
        contents, _meta(body, store), finish_reason=_finish_reason(body), raw=body
    )
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
    if (
        isinstance(created, int | float)
        and not isinstance(created, bool)
        and 0 < created < _MAX_CREATED
    ):
        created_at = (
            datetime.fromtimestamp(created, tz=UTC).isoformat().replace("+00:00", "Z")
        )
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
    contents: list[Content],
    meta: Mapping[str, Any],
    *,
    finish_reason: str | None = None,
    raw: Any = None,
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
    """OR-14: ``stop`` / ``tool_calls`` when completed, the incomplete reason, else
    None."""
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
        has_calls = any(
            isinstance(i, Mapping) and i.get("type") == "function_call" for i in items
        )
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
                out.append(
                    Content.from_text(text, additional_properties={"refusal": True})
                )
    return out


def _call(item: Mapping[str, Any], arguments: str) -> Content:
    call_id = _str_or_none(item.get("call_id")) or _str_or_none(item.get("id"))
    if call_id is None:
        raise OpenAIProtocolError(
            f"function_call item without call_id: {_snippet(_dump(item))}"
        )
    name = item.get("name")
    return Content.from_function_call(
        call_id,
        name if isinstance(name, str) else "",
        arguments,
        id=_str_or_none(item.get("id")),
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
        raise OpenAIProtocolError(
            f"output item without a type: {_snippet(_dump(item))}"
        )
    kept = json.loads(json.dumps(item))
    return [
        Content(
            kind,
            id=_str_or_none(item.get("id")),
            additional_properties={ITEM_KEY: kept},
        )
    ]


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
            code=code
            if isinstance(code, str | int) and not isinstance(code, bool)
            else None,
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
        raise OpenAIStreamError(
            "the response failed without an error object", body=response
        )
