"""The stream decoder of the OpenAI Responses API (spec/openai-responses.md, OR-16 ..
OR-19).

Theory of operation
-------------------
Sans-I/O, like the rest of the codec (PV-1). Bytes go through `SSEDecoder`; each event's
data is one JSON event, dispatched on its ``type``. The decoder's state is small: the
response's id, model and creation time (from ``response.created``) and, per output item,
what its deltas delivered so far, so that ``response.output_item.done`` supplies
whatever the deltas did not (a server that sends no deltas loses nothing) and refuses a
whole item that contradicts them. Reasoning and hosted-tool items are given whole at
``response.output_item.done``, mapped by the same functions as a whole body, so the
merged stream equals the parsed body (PV-9).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._minagent import (
    WIRE_ERRORS,
    ChatResponseUpdate,
    Content,
    SSEDecoder,
    SSEEvent,
    SSELimitError,
    unreadable,
)
from ._response import OpenAIProtocolError, OpenAIStreamError, _snippet, loads
from ._responses_response import (
    _arguments,
    _call,
    _dump,
    _finish_reason,
    _item_contents,
    _message_texts,
    _meta,
    _raise_if_failed,
    _stream_error,
    _update,
    _usage,
)
from ._stream import DEFAULT_MAX_LINE_SIZE

__all__ = ["IGNORED_EVENTS", "ResponsesStreamDecoder"]

# Events that carry nothing the decoder needs (OR-19): their content arrives again,
# whole, in ``response.output_item.done`` or ``response.completed``, or it is
# hosted-tool progress.
IGNORED_EVENTS = frozenset(
    {
        "response.queued",
        "response.in_progress",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.done",
        "response.function_call_arguments.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.audio.delta",
        "response.audio.done",
        "response.audio.transcript.delta",
        "response.audio.transcript.done",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.partial_image",
        "response.image_generation_call.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.shell_call_command.added",
        "response.shell_call_command.delta",
        "response.shell_call_command.done",
        "response.shell_call_output_content.delta",
        "response.shell_call_output_content.done",
    }
)
_TERMINAL = frozenset({"response.completed", "response.incomplete"})


class ResponsesStreamDecoder:
    """Bytes of a streamed Responses answer in, `ChatResponseUpdate`s out (OR-16 ..
    OR-19).

    Use it like the Chat Completions decoder: ``feed()`` every chunk, ``close()`` at the
    end, then look at ``done`` (PV-15). Errors carry the updates decoded before them
    (PV-14). ``store`` is the request's ``store`` option (OR-15).
    """

    def __init__(
        self,
        *,
        store: bool | None = None,
        max_line_size: int | None = DEFAULT_MAX_LINE_SIZE,
    ) -> None:
        self._sse = SSEDecoder(max_line_size=max_line_size)
        self._store = store
        self._meta: dict[str, Any] = {}
        self._texts: dict[str, str] = {}  # message item id -> text its deltas delivered
        self._refusals: dict[str, str] = {}
        # function_call item id -> the call as announced
        self._calls: dict[str, Content] = {}
        # function_call item id -> argument text delivered
        self._arguments: dict[str, str] = {}
        self.done = False

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ChatResponseUpdate]:
        return self._step(chunk)

    def close(self) -> list[ChatResponseUpdate]:
        return self._step(None)

    def _step(
        self, chunk: bytes | bytearray | memoryview | None
    ) -> list[ChatResponseUpdate]:
        """PV-36: an overlong line is a protocol error after the events completed before
        it."""
        limit: SSELimitError | None = None
        try:
            events = self._sse.feed(chunk) if chunk is not None else self._sse.close()
        except SSELimitError as exc:
            events, limit = exc.events, exc
        updates = self._decode(events)
        if limit is not None:
            error = OpenAIProtocolError(str(limit))
            error.updates = updates
            raise error
        return updates

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
            # PV-49: hostile values where the protocol has others
            except WIRE_ERRORS as exc:
                error = OpenAIProtocolError(unreadable("a stream event", exc))
                error.updates = updates
                raise error from None
            if update is not None:
                updates.append(update)
        return updates

    def _event(self, event: SSEEvent) -> ChatResponseUpdate | None:
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            return None
        try:
            # strict JSON: no NaN or Infinity (PV-10)
            payload = loads(data, "stream event data")
        except OpenAIProtocolError:
            if event.event == "error":
                raise OpenAIStreamError(
                    data or "error event without data", body=data
                ) from None
            raise
        if not isinstance(payload, Mapping):
            raise OpenAIProtocolError(
                f"stream event is not a JSON object: {_snippet(event.data)}"
            )
        kind = payload.get("type")
        if not isinstance(kind, str) or not kind:
            kind = event.event
        return self._dispatch(kind, payload)

    def _dispatch(
        self, kind: str, event: Mapping[str, Any]
    ) -> ChatResponseUpdate | None:
        if kind == "error":
            raise _stream_error(event.get("error", event), event)
        if kind in ("response.created", "response.in_progress", "response.queued"):
            self._remember(event)
            return None
        if kind in IGNORED_EVENTS:
            return None
        if kind == "response.output_text.delta":
            return self._text_delta(event, self._texts, refusal=False)
        if kind == "response.refusal.delta":
            return self._text_delta(event, self._refusals, refusal=True)
        if kind == "response.function_call_arguments.delta":
            return self._arguments_delta(event)
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind == "response.failed":
            response = event.get("response")
            if isinstance(response, Mapping):
                _raise_if_failed(response)
            raise OpenAIStreamError("the response failed", body=event)
        if kind in _TERMINAL:
            self.done = True
            return self._finish(event)
        # OR-19: an event type this codec does not know carries nothing it needs
        return None

    # -- events -------------------------------------------------------------------------------

    def _remember(self, event: Mapping[str, Any]) -> None:
        response = event.get("response")
        if isinstance(response, Mapping):
            meta = _meta(response, self._store)
            self._meta.update({k: v for k, v in meta.items() if v is not None})

    def _text_delta(
        self, event: Mapping[str, Any], seen: dict[str, str], *, refusal: bool
    ) -> ChatResponseUpdate | None:
        delta = event.get("delta")
        if not isinstance(delta, str) or not delta:
            return None
        item_id = str(event.get("item_id") or "")
        seen[item_id] = seen.get(item_id, "") + delta
        props = {"refusal": True} if refusal else {}
        return _update(
            [Content.from_text(delta, additional_properties=props)],
            self._meta,
            raw=event,
        )

    def _arguments_delta(self, event: Mapping[str, Any]) -> ChatResponseUpdate | None:
        delta = event.get("delta")
        if not isinstance(delta, str) or not delta:
            return None
        item_id = str(event.get("item_id") or "")
        call = self._calls.get(item_id)
        if call is None:
            raise OpenAIProtocolError(
                f"function_call_arguments.delta for unknown item {item_id!r}: {_snippet(_dump(event))}"
            )
        self._arguments[item_id] = self._arguments.get(item_id, "") + delta
        content = Content.from_function_call(call.call_id or "", "", delta, id=call.id)
        return _update([content], self._meta, raw=event)

    def _item(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        item = event.get("item")
        if not isinstance(item, Mapping):
            raise OpenAIProtocolError(
                f"{event.get('type')} without an item object: {_snippet(_dump(event))}"
            )
        return item

    def _item_added(self, event: Mapping[str, Any]) -> ChatResponseUpdate | None:
        item = self._item(event)
        if item.get("type") != "function_call":
            # messages and reasoning arrive as deltas or whole at done (OR-17)
            return None
        arguments = _arguments(item)
        call = _call(item, arguments)
        key = str(item.get("id") or call.call_id)
        self._calls[key] = call
        self._arguments[key] = arguments
        return _update([call], self._meta, raw=event)

    def _item_done(self, event: Mapping[str, Any]) -> ChatResponseUpdate | None:
        item = self._item(event)
        kind = item.get("type")
        item_id = str(item.get("id") or "")
        contents: list[Content]
        if kind == "message":
            contents = []
            whole = _message_texts(item)
            texts = "".join(c.text or "" for c in whole if not c.additional_properties)
            refusals = "".join(c.text or "" for c in whole if c.additional_properties)
            for final, seen, props in (
                (texts, self._texts, {}),
                (refusals, self._refusals, {"refusal": True}),
            ):
                rest = _remainder(
                    final, seen.pop(item_id, ""), f"text of item {item_id!r}"
                )
                if rest:
                    contents.append(
                        Content.from_text(rest, additional_properties=dict(props))
                    )
        elif kind == "function_call":
            key = item_id or str(item.get("call_id") or "")
            final = _arguments(item)
            if key not in self._calls:  # never announced: the whole call now
                contents = [_call(item, final)]
            else:
                call = self._calls.pop(key)
                rest = _remainder(
                    final,
                    self._arguments.pop(key, ""),
                    f"arguments of call {call.call_id!r}",
                )
                contents = (
                    [
                        Content.from_function_call(
                            call.call_id or "", "", rest, id=call.id
                        )
                    ]
                    if rest
                    else []
                )
        else:
            contents = _item_contents(item)
        return _update(contents, self._meta, raw=event) if contents else None

    def _finish(self, event: Mapping[str, Any]) -> ChatResponseUpdate:
        response = event.get("response")
        if not isinstance(response, Mapping):
            raise OpenAIProtocolError(
                f"{event.get('type')} without a response object: {_snippet(_dump(event))}"
            )
        _raise_if_failed(response)
        self._remember(event)
        contents: list[Content] = []
        usage = _usage(response.get("usage"))
        if usage is not None:
            contents.append(Content.from_usage(usage))
        return _update(
            contents, self._meta, finish_reason=_finish_reason(response), raw=event
        )


def _remainder(final: str, seen: str, what: str) -> str:
    """What ``output_item.done`` adds to what the deltas delivered (OR-17)."""
    if final.startswith(seen):
        return final[len(seen) :]
    if not final:
        return ""  # a done item without the text: the deltas stand
    raise OpenAIProtocolError(
        f"the {what} in output_item.done differs from its deltas: {_snippet(final)}"
    )
