"""The OpenAI Responses API (spec/hosting.md HS-20 .. HS-31): ``POST /v1/responses``,
streamed and not, ``GET`` and ``DELETE /v1/responses/{id}``.

Theory of operation. A request is checked and turned into a `_Plan` (the agent, the
messages, the run's options and the client's declaration-only tools) before anything
runs, so every malformed request is a 400 and nothing is half-done. The plan's session
comes from one of three places (HS-25):

- ``conversation``: the conversation's session, held for the run (HS-142) and saved
  when the run ends cleanly (HS-143);
- ``previous_response_id``: a copy of the session saved with that response; the copy is
  the new response's session, so any earlier response can be continued (a branch), on any
  worker that shares the store;
- neither: a new session.

A response kept (``store``, HS-26) saves its session under its own id, the
``previous_response_id`` of the next request, and its body in this process's bounded
record (HS-27), which ``GET`` reads.

Streaming (HS-24) turns the run's updates into the Responses event sequence as they
come: text opens a ``message`` item and is sent as ``output_text`` deltas; any other
content closes that item. The calls handed back to the client (HS-28) are only known
when the run has ended (a call whose arguments fail the tool's schema goes back to the
model instead, spec/loop.md LP-6), so their items are sent then, with the argument text
as it was streamed.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from minagent import AgentSession, Content, FunctionTool, Message, SupportsAgentRun

from .client_tools import (
    declared_tool,
    handed_back,
    refuse_name_clashes,
    text_arguments,
)
from .conversations import Conversations, conversation_key
from .openai_wire import HostingError, bad_request, send_json
from .openai_wire import usage as chat_usage

__all__ = ["MAX_STORED_RESPONSES", "ResponseRecords", "handle", "records_of"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_log = logging.getLogger("minagent.hosting")

# HS-27: how many finished responses one application keeps, newest first.
MAX_STORED_RESPONSES = 1000

# HS-25: the two kinds of conversation id this protocol has, as keys of one store
RESPONSE = "response:"
CONVERSATION = "conversation:"

# HS-22: request parameters read here; every other one with a value is refused
_OWN = frozenset(
    {
        "model",
        "input",
        "instructions",
        "stream",
        "store",
        "previous_response_id",
        "conversation",
        "tools",
        "tool_choice",
        "metadata",
    }
)
# HS-22: request parameter -> the run option it becomes, and the type it must have
_FORWARDED: dict[str, tuple[str, tuple[type, ...]]] = {
    "temperature": ("temperature", (int, float)),
    "top_p": ("top_p", (int, float)),
    "max_output_tokens": ("max_tokens", (int,)),
    "parallel_tool_calls": ("parallel_tool_calls", (bool,)),
    "user": ("user", (str,)),
}


class Host(Protocol):
    """What this module needs of the application (`HostingApp`), which it does not
    import (PK-8: the application imports this module)."""

    conversations: Conversations

    async def _read_json(self, receive: Receive) -> dict[str, Any]: ...

    def _agent(self, request: Mapping[str, Any]) -> tuple[str, SupportsAgentRun]: ...


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


# -- the record of finished responses (HS-27) -------------------------------------------


class ResponseRecords:
    """The finished responses one application keeps: at most ``max_stored``, the oldest
    dropped first together with its saved session (HS-27)."""

    def __init__(self, max_stored: int = MAX_STORED_RESPONSES) -> None:
        self.max_stored = max_stored
        # response id -> (agent name, response body)
        self._kept: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, response_id: str) -> tuple[str, dict[str, Any]] | None:
        return self._kept.get(response_id)

    def add(
        self, response_id: str, agent_name: str, body: dict[str, Any]
    ) -> list[tuple[str, str]]:
        """Keep a response; the (agent, id) pairs dropped to stay within the bound."""
        self._kept[response_id] = (agent_name, body)
        dropped: list[tuple[str, str]] = []
        while len(self._kept) > max(self.max_stored, 0):
            old_id, (old_agent, _) = self._kept.popitem(last=False)
            dropped.append((old_agent, old_id))
        return dropped

    def pop(self, response_id: str) -> tuple[str, dict[str, Any]] | None:
        return self._kept.pop(response_id, None)


_RECORDS: weakref.WeakKeyDictionary[Host, ResponseRecords] = weakref.WeakKeyDictionary()


def records_of(app: Host) -> ResponseRecords:
    """The application's record of finished responses (HS-27); its ``max_stored`` may
    be changed."""
    records = _RECORDS.get(app)
    if records is None:
        records = _RECORDS[app] = ResponseRecords()
    return records


# -- the request -------------------------------------------------------------------------


@dataclass
class _Plan:
    """A checked request: everything the run needs, decided before it starts."""

    agent_name: str
    agent: SupportsAgentRun
    messages: list[Message]
    options: dict[str, Any]
    tools: list[FunctionTool]
    stream: bool
    store: bool
    previous_response_id: str | None
    conversation: str | None
    echo: dict[str, Any]  # request fields the response object repeats
    response_id: str = field(default_factory=lambda: _new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))


def _plan(app: Host, request: Mapping[str, Any]) -> _Plan:
    """HS-20 .. HS-22, HS-25, HS-29: the request checked, or a 400 naming the problem."""
    for key, value in request.items():
        if key not in _OWN and key not in _FORWARDED and value is not None:
            raise bad_request(
                f"the parameter {key[:100]!r} is not supported by this server",
                "unsupported_parameter",
                key[:100],
            )
    name, agent = app._agent(request)
    messages = _input(request.get("input"))
    options: dict[str, Any] = {}
    for key, (option, types) in _FORWARDED.items():
        value = request.get(key)
        if value is None:
            continue
        wrong_bool = isinstance(value, bool) and bool not in types
        if wrong_bool or not isinstance(value, types):
            raise bad_request(f"{key!r} has the wrong type", "invalid_parameter", key)
        options[option] = value
    instructions = request.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise bad_request(
                "'instructions' must be a string", "invalid_parameter", "instructions"
            )
        options["instructions"] = instructions
    tools = _tools(request.get("tools"))
    refuse_name_clashes(agent, tools)
    choice = _tool_choice(request.get("tool_choice"), tools)
    if choice is not None:
        options["tool_choice"] = choice
    stream = _flag(request, "stream", False)
    store = _flag(request, "store", True)
    previous = request.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise bad_request(
            "'previous_response_id' must be a non-empty string",
            "invalid_parameter",
            "previous_response_id",
        )
    conversation = _conversation(request.get("conversation"))
    if previous is not None and conversation is not None:
        raise bad_request(
            "'previous_response_id' and 'conversation' cannot be used together",
            "invalid_parameter",
            "conversation",
        )
    metadata = request.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(v, str) for v in metadata.values())
    ):
        raise bad_request(
            "'metadata' must be an object of strings", "invalid_parameter", "metadata"
        )
    echo = {
        "instructions": instructions,
        "metadata": dict(metadata or {}),
        "tools": json.loads(json.dumps(request.get("tools") or [])),
        "tool_choice": request.get("tool_choice") or "auto",
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "max_output_tokens": request.get("max_output_tokens"),
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "user": request.get("user"),
    }
    return _Plan(
        name,
        agent,
        messages,
        options,
        tools,
        stream,
        store,
        previous,
        conversation,
        echo,
    )


def _flag(request: Mapping[str, Any], key: str, default: bool) -> bool:
    value = request.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"{key!r} must be true or false", "invalid_parameter", key)
    return value


def _conversation(raw: Any) -> str | None:
    """HS-25: ``conversation`` is an id or ``{"id": ...}``."""
    if raw is None:
        return None
    value = raw.get("id") if isinstance(raw, dict) else raw
    if not isinstance(value, str) or not value:
        raise bad_request(
            "'conversation' must be a non-empty id or an object with one",
            "invalid_parameter",
            "conversation",
        )
    return value


def _text_of(content: Any, where: str, kinds: tuple[str, ...]) -> str:
    """A string, or an array of text parts of the given kinds (HS-21)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for index, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            text = part.get("text") if isinstance(part, dict) else None
            if kind not in kinds or not isinstance(text, str):
                raise bad_request(
                    f"{where}[{index}]: only {' and '.join(kinds)} parts are supported",
                    "unsupported_content",
                )
            texts.append(text)
        return "".join(texts)
    raise bad_request(
        f"{where} must be a string or an array of text parts", "invalid_input"
    )


_ROLES = {
    "user": "user",
    "system": "system",
    "developer": "system",
    "assistant": "assistant",
}


def _input(raw: Any) -> list[Message]:
    """HS-21: ``input`` as minagent messages. Consecutive ``function_call`` items are
    one assistant message; consecutive ``function_call_output`` items one tool
    message."""
    if isinstance(raw, str):
        return [Message("user", text=raw)]
    if not isinstance(raw, list) or not raw:
        raise bad_request(
            "'input' must be a string or a non-empty array of input items",
            "invalid_input",
        )
    out: list[Message] = []
    group: list[Content] = []
    group_role = ""

    def flush() -> None:
        nonlocal group
        if group:
            out.append(Message(group_role, group))
            group = []

    for index, item in enumerate(raw):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an object", "invalid_input")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            flush()
            role = _ROLES.get(item.get("role"))  # type: ignore[arg-type]
            if role is None:
                raise bad_request(
                    f"{where}.role must be user, system, developer or assistant",
                    "invalid_input",
                )
            kinds = (
                ("output_text", "input_text")
                if role == "assistant"
                else ("input_text",)
            )
            text = _text_of(item.get("content"), f"{where}.content", kinds)
            out.append(Message(role, text=text))
        elif kind in ("function_call", "function_call_output"):
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise bad_request(
                    f"{where}.call_id must be a non-empty string", "invalid_input"
                )
            role = "assistant" if kind == "function_call" else "tool"
            if group_role != role:
                flush()
                group_role = role
            if kind == "function_call":
                name, arguments = item.get("name"), item.get("arguments", "{}")
                if not isinstance(name, str) or not name:
                    raise bad_request(
                        f"{where}.name must be a non-empty string", "invalid_input"
                    )
                if not isinstance(arguments, str):
                    raise bad_request(
                        f"{where}.arguments must be a JSON string", "invalid_input"
                    )
                group.append(Content.from_function_call(call_id, name, arguments))
            else:
                output = _text_of(
                    item.get("output"), f"{where}.output", ("input_text", "output_text")
                )
                group.append(Content.from_function_result(call_id, result=output))
        else:
            raise bad_request(
                f"{where}: input items of type {kind!r} are not supported",
                "unsupported_input_item",
            )
    flush()
    return out


def _tools(raw: Any) -> list[FunctionTool]:
    """HS-29: the client's function tools; any other tool type is refused."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("'tools' must be an array", "invalid_tools")
    tools: list[FunctionTool] = []
    for index, item in enumerate(raw):
        where = f"tools[{index}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if kind != "function" or not isinstance(item, dict):
            raise bad_request(
                f"{where}: tools of type {kind!r} are not supported; only 'function'",
                "unsupported_tool",
            )
        strict = item.get("strict")
        if strict is not None and not isinstance(strict, bool):
            raise bad_request(f"{where}.strict must be true or false", "invalid_tools")
        tools.append(
            declared_tool(
                item.get("name"), item.get("description"), item.get("parameters"), where
            )
        )
    return tools


def _tool_choice(raw: Any, tools: list[FunctionTool]) -> Any:
    """HS-22: ``tool_choice`` as the run's option (None: the default, ``auto``)."""
    if raw is None or raw == "auto":
        return None
    if raw in ("none", "required"):
        return raw
    if isinstance(raw, dict) and raw.get("type") == "function":
        name = raw.get("name")
        if not isinstance(name, str) or name not in {t.name for t in tools}:
            raise bad_request(
                "'tool_choice' names no declared function",
                "invalid_parameter",
                "tool_choice",
            )
        return {"mode": "required", "required_function_name": name}
    raise bad_request(
        "'tool_choice' must be auto, none, required or a function",
        "unsupported_parameter",
        "tool_choice",
    )


# -- the session (HS-25, HS-26) ---------------------------------------------------------


async def _previous(app: Host, plan: _Plan) -> AgentSession | None:
    """HS-25: the session saved with ``previous_response_id`` (None without one); an
    unknown id is a 404, before anything is sent."""
    if plan.previous_response_id is None:
        return None
    previous = await app.conversations.get(
        plan.agent_name, RESPONSE + plan.previous_response_id
    )
    if previous is None:
        raise HostingError(
            404,
            f"previous response with id {plan.previous_response_id!r} not found",
            "invalid_request_error",
            "previous_response_not_found",
            "previous_response_id",
        )
    return previous


@asynccontextmanager
async def _session(
    app: Host, plan: _Plan, previous: AgentSession | None
) -> AsyncIterator[AgentSession]:
    """The run's session, saved only when the block ends without an exception
    (HS-143): under the conversation, and under the response's id when it is kept."""
    conversations = app.conversations
    own_key = conversation_key(plan.agent_name, RESPONSE + plan.response_id)
    if plan.conversation is not None:
        async with conversations.session(
            plan.agent_name, CONVERSATION + plan.conversation
        ) as session:
            yield session
            if plan.store:
                await conversations.store.set(own_key, _copy(session, own_key))
        return
    session = (
        AgentSession(session_id=own_key)
        if previous is None
        else _copy(previous, own_key)
    )
    yield session
    if plan.store:
        await conversations.store.set(own_key, session)


def _copy(session: AgentSession, session_id: str) -> AgentSession:
    """A session equal to ``session`` under another id, sharing nothing with it."""
    return AgentSession.from_dict({**session.to_dict(), "session_id": session_id})


async def _keep(app: Host, plan: _Plan, body: dict[str, Any]) -> None:
    """HS-26, HS-27: keep a finished response; drop the oldest beyond the bound, with
    their saved sessions."""
    if not plan.store:
        return
    for agent_name, old_id in records_of(app).add(
        plan.response_id, plan.agent_name, body
    ):
        await app.conversations.forget(agent_name, RESPONSE + old_id)


# -- the response object (HS-23) --------------------------------------------------------


def _body(
    plan: _Plan,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": plan.response_id,
        "object": "response",
        "created_at": plan.created_at,
        "status": status,
        "error": error,
        "incomplete_details": None,
        "model": plan.agent_name,
        "output": output,
        "previous_response_id": plan.previous_response_id,
        "conversation": {"id": plan.conversation} if plan.conversation else None,
        "store": plan.store,
        "text": {"format": {"type": "text"}},
        "usage": usage,
        **plan.echo,
    }


def _usage_of(details: Any) -> dict[str, Any]:
    """The Responses API's usage object from a run's `UsageDetails` (HS-23)."""
    counts = chat_usage(details)
    cached = getattr(details, "cache_read_input_token_count", None) if details else None
    return {
        "input_tokens": counts["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": int(cached or 0)},
        "output_tokens": counts["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts["total_tokens"],
    }


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [_text_part(text)] if status == "completed" else [],
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _call_item(
    item_id: str, call: Content, arguments: str, status: str
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call.call_id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


def _output(final: Any, calls: list[Content]) -> list[dict[str, Any]]:
    """HS-23: the run's assistant text as message items (a run of text contents, one
    item; any other content ends it) and the calls handed back as function_call items,
    in transcript order. The agent's own calls and their results are not shown."""
    handed = {call.call_id for call in calls}
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        text = "".join(texts)
        texts.clear()
        if text:
            items.append(_message_item(_new_id("msg"), text, "completed"))

    for message in final.messages:
        if message.role == "assistant":
            for content in message.contents:
                if content.type == "text":
                    texts.append(content.text or "")
                    continue
                flush()
                if content.type == "function_call" and content.call_id in handed:
                    arguments = text_arguments(content.arguments)
                    items.append(
                        _call_item(_new_id("fc"), content, arguments, "completed")
                    )
        flush()
    return items


# -- the routes ------------------------------------------------------------------------


async def handle(app: Host, scope: Scope, receive: Receive, send: Send) -> int:
    """Route one request under ``/v1/responses`` (HS-20, HS-27); the HTTP status."""
    method, path = scope["method"], scope["path"]
    if path == "/v1/responses" and method == "POST":
        plan = _plan(app, await app._read_json(receive))
        previous = await _previous(app, plan)
        if plan.stream:
            return await _stream(app, plan, previous, send)
        return await send_json(send, 200, await _run(app, plan, previous))
    response_id = path.removeprefix("/v1/responses/")
    if response_id and "/" not in response_id and method in ("GET", "DELETE"):
        records = records_of(app)
        kept = records.get(response_id)
        if kept is None:
            raise HostingError(
                404,
                f"response with id {response_id!r} not found",
                "invalid_request_error",
                "response_not_found",
            )
        if method == "GET":
            return await send_json(send, 200, kept[1])
        records.pop(response_id)
        await app.conversations.forget(kept[0], RESPONSE + response_id)
        body = {"id": response_id, "object": "response", "deleted": True}
        return await send_json(send, 200, body)
    raise HostingError(
        404, f"no route {method} {path}", "invalid_request_error", "not_found"
    )


async def _run(app: Host, plan: _Plan, previous: AgentSession | None) -> dict[str, Any]:
    """HS-23: the non-streamed answer, a completed response object."""
    async with _session(app, plan, previous) as session:
        final = await plan.agent.run(
            plan.messages,
            session=session,
            tools=plan.tools or None,
            options=plan.options or None,
        )
        calls = handed_back(final, plan.tools)
    usage = _usage_of(getattr(final, "usage_details", None))
    body = _body(plan, "completed", _output(final, calls), usage)
    await _keep(app, plan, body)
    return body


class _Events:
    """The SSE side of one streamed response (HS-24): sequence numbers, output
    indexes, and the one message item open at a time."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self.message: dict[str, Any] | None = None  # the open message item
        self.text: list[str] = []  # its text so far

    async def emit(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        line = f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()
        await self.send({"type": "http.response.body", "body": line, "more_body": True})

    async def text_delta(self, delta: str) -> None:
        index = len(self.output)
        if self.message is None:
            self.message = _message_item(_new_id("msg"), "", "in_progress")
            await self.emit(
                "response.output_item.added", output_index=index, item=self.message
            )
            await self.emit(
                "response.content_part.added",
                item_id=self.message["id"],
                output_index=index,
                content_index=0,
                part=_text_part(""),
            )
        self.text.append(delta)
        await self.emit(
            "response.output_text.delta",
            item_id=self.message["id"],
            output_index=index,
            content_index=0,
            delta=delta,
            logprobs=[],
        )

    async def close_message(self) -> None:
        if self.message is None:
            return
        index, item_id, text = len(self.output), self.message["id"], "".join(self.text)
        self.message, self.text = None, []
        fields = {"item_id": item_id, "output_index": index, "content_index": 0}
        await self.emit("response.output_text.done", **fields, text=text, logprobs=[])
        await self.emit("response.content_part.done", **fields, part=_text_part(text))
        item = _message_item(item_id, text, "completed")
        await self.emit("response.output_item.done", output_index=index, item=item)
        self.output.append(item)

    async def call(self, call: Content, pieces: list[str]) -> None:
        """A handed-back call's item, its argument deltas as streamed (or the whole
        text, when the streamed pieces do not make it), and its done events."""
        index, item_id = len(self.output), _new_id("fc")
        arguments = text_arguments(call.arguments)
        if "".join(pieces) != arguments:
            pieces = [arguments]
        added = _call_item(item_id, call, "", "in_progress")
        await self.emit("response.output_item.added", output_index=index, item=added)
        for piece in pieces:
            await self.emit(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=piece,
            )
        await self.emit(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            name=call.name,
            arguments=arguments,
        )
        item = _call_item(item_id, call, arguments, "completed")
        await self.emit("response.output_item.done", output_index=index, item=item)
        self.output.append(item)


async def _stream(
    app: Host, plan: _Plan, previous: AgentSession | None, send: Send
) -> int:
    """HS-24: the streamed answer. A failure once the stream has started is a
    ``response.failed`` event (HS-31)."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
            ],
        }
    )
    events = _Events(send)
    await events.emit("response.created", response=_body(plan, "in_progress", [], None))
    await events.emit(
        "response.in_progress", response=_body(plan, "in_progress", [], None)
    )
    try:
        async with _session(app, plan, previous) as session:
            final, calls, pieces = await _relay(plan, session, events)
            await events.close_message()
            for call in calls:
                await events.call(call, pieces.get(call.call_id or "", []))
        usage = _usage_of(getattr(final, "usage_details", None))
        body = _body(plan, "completed", events.output, usage)
        kind = "response.completed"
    except Exception as exc:
        failure = exc if isinstance(exc, HostingError) else None
        if failure is None:
            # HS-31: the exception goes to the log, never into the stream
            _log.exception("hosting: streamed response failed")
            failure = HostingError(
                500, "internal server error", "server_error", "server_error"
            )
        body = await _failed(plan, events, failure)
        kind = "response.failed"
    await events.emit(kind, response=body)
    await send({"type": "http.response.body", "body": b""})
    await _keep(app, plan, body)
    return 200


async def _failed(plan: _Plan, events: _Events, error: HostingError) -> dict[str, Any]:
    await events.close_message()
    failure = {"code": error.code, "message": error.message}
    return _body(plan, "failed", events.output, None, failure)


async def _relay(
    plan: _Plan, session: AgentSession, events: _Events
) -> tuple[Any, list[Content], dict[str, list[str]]]:
    """Run the agent streamed, sending its text as it comes; the final response, the
    calls handed back, and each call's streamed argument pieces by call id."""
    stream = plan.agent.run(
        plan.messages,
        stream=True,
        session=session,
        tools=plan.tools or None,
        options=plan.options or None,
    )
    pieces: dict[str, list[str]] = {}
    last_call = ""
    message_id: str | None = None
    async with stream:
        async for update in stream:
            # a new message of the transcript ends the open item
            current = getattr(update, "message_id", None)
            if current is not None and message_id is not None and current != message_id:
                await events.close_message()
            message_id = current or message_id
            assistant = update.role in (None, "assistant")
            for content in update.contents:
                if content.type == "text" and assistant:
                    if content.text:
                        await events.text_delta(content.text)
                    continue
                if content.type == "usage":
                    continue
                await events.close_message()
                if content.type == "function_call":
                    last_call = content.call_id or last_call
                    arguments = content.arguments
                    if arguments:
                        pieces.setdefault(last_call, []).append(
                            text_arguments(arguments)
                        )
        final = await stream.get_final_response()
    return final, handed_back(final, plan.tools), pieces
