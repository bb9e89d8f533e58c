"""The OpenAI Responses API (spec/hosting.md HS-20 .. HS-31): ``POST /v1/responses``,
streamed and not, ``GET`` and ``DELETE /v1/responses/{id}``.

Theory of operation. A request is checked and turned into a `Plan` (the agent, the
messages, the run's options and the client's declaration-only tools) by
`responses_wire.py` before anything runs, so every malformed request is a 400 and
nothing is half-done. The plan's session
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
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

from minagent import AgentSession, Content, SupportsAgentRun

from .client_tools import handed_back, text_arguments
from .conversations import Conversations, conversation_key
from .openai_wire import HostingError, send_json
from .responses_wire import (
    Plan,
    call_item,
    message_item,
    new_id,
    output_items,
    response_body,
    text_part,
    usage_of,
)
from .responses_wire import plan as parse

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


class Host(Protocol):
    """What this module needs of the application (`HostingApp`), which it does not
    import (PK-8: the application imports this module)."""

    conversations: Conversations

    async def _read_json(self, receive: Receive) -> dict[str, Any]: ...

    def _agent(self, request: Mapping[str, Any]) -> tuple[str, SupportsAgentRun]: ...


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


# -- the session (HS-25, HS-26) ---------------------------------------------------------


async def _previous(app: Host, plan: Plan) -> AgentSession | None:
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
    app: Host, plan: Plan, previous: AgentSession | None
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


async def _keep(app: Host, plan: Plan, body: dict[str, Any]) -> None:
    """HS-26, HS-27: keep a finished response; drop the oldest beyond the bound, with
    their saved sessions."""
    if not plan.store:
        return
    for agent_name, old_id in records_of(app).add(
        plan.response_id, plan.agent_name, body
    ):
        await app.conversations.forget(agent_name, RESPONSE + old_id)


# -- the routes ------------------------------------------------------------------------


async def handle(app: Host, scope: Scope, receive: Receive, send: Send) -> int:
    """Route one request under ``/v1/responses`` (HS-20, HS-27); the HTTP status."""
    method, path = scope["method"], scope["path"]
    if path == "/v1/responses" and method == "POST":
        plan = parse(await app._read_json(receive), app._agent)
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


async def _run(app: Host, plan: Plan, previous: AgentSession | None) -> dict[str, Any]:
    """HS-23: the non-streamed answer, a completed response object."""
    async with _session(app, plan, previous) as session:
        final = await plan.agent.run(
            plan.messages,
            session=session,
            tools=plan.tools or None,
            options=plan.options or None,
        )
        calls = handed_back(final, plan.tools)
    usage = usage_of(getattr(final, "usage_details", None))
    body = response_body(plan, "completed", output_items(final, calls), usage)
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
            self.message = message_item(new_id("msg"), "", "in_progress")
            await self.emit(
                "response.output_item.added", output_index=index, item=self.message
            )
            await self.emit(
                "response.content_part.added",
                item_id=self.message["id"],
                output_index=index,
                content_index=0,
                part=text_part(""),
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
        await self.emit("response.content_part.done", **fields, part=text_part(text))
        item = message_item(item_id, text, "completed")
        await self.emit("response.output_item.done", output_index=index, item=item)
        self.output.append(item)

    async def call(self, call: Content, pieces: list[str]) -> None:
        """A handed-back call's item, its argument deltas as streamed (or the whole
        text, when the streamed pieces do not make it), and its done events."""
        index, item_id = len(self.output), new_id("fc")
        arguments = text_arguments(call.arguments)
        if "".join(pieces) != arguments:
            pieces = [arguments]
        added = call_item(item_id, call, "", "in_progress")
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
        item = call_item(item_id, call, arguments, "completed")
        await self.emit("response.output_item.done", output_index=index, item=item)
        self.output.append(item)


async def _stream(
    app: Host, plan: Plan, previous: AgentSession | None, send: Send
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
    await events.emit(
        "response.created", response=response_body(plan, "in_progress", [], None)
    )
    await events.emit(
        "response.in_progress", response=response_body(plan, "in_progress", [], None)
    )
    try:
        async with _session(app, plan, previous) as session:
            final, calls, pieces = await _relay(plan, session, events)
            await events.close_message()
            for call in calls:
                await events.call(call, pieces.get(call.call_id or "", []))
        usage = usage_of(getattr(final, "usage_details", None))
        body = response_body(plan, "completed", events.output, usage)
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


async def _failed(plan: Plan, events: _Events, error: HostingError) -> dict[str, Any]:
    await events.close_message()
    failure = {"code": error.code, "message": error.message}
    return response_body(plan, "failed", events.output, None, failure)


async def _relay(
    plan: Plan, session: AgentSession, events: _Events
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
