"""AG-UI over HTTP and server-sent events (spec/hosting.md HS-80 .. HS-98).

Rules
-----
1. One POST is one run: a `RunAgentInput` in, a ``text/event-stream`` of AG-UI events
   out. Input refused before the run starts is an HTTP error whose body is one
   ``RUN_ERROR`` event (HS-81); a failure after the stream opened is a ``RUN_ERROR``
   event in the stream, without the exception's text (HS-96).
2. ``threadId`` is the conversation: one `AgentSession` of ``app.conversations``
   (HS-140). The session's history is authoritative; of the input's messages only those
   whose ids the thread has not seen are new (HS-84).
3. The run always streams. Updates become text-message and tool-call events in the order
   they are produced; the run's own middleware (one per layer, run-level) marks the
   steps (HS-91) and reports the shared state after every tool call and model call
   (HS-92). A run that asks for the flow in detail (HS-98) also sends what the
   process's observer saw of it (`minagent.hosting.agui_flow`) as CUSTOM events.
4. What the run cannot finish alone ends it: a client tool's call is handed back without
   a result (success outcome with ``pendingToolCallIds``, HS-88); a tool that needs
   approval ends the run with the interrupt outcome, answered by the next input's
   ``resume`` entries (HS-89, HS-90).

Theory of operation
-------------------
`handle` checks the input (`minagent.hosting.agui_input`, no I/O), picks the agent,
takes the thread's session (which waits for the thread's running request, HS-142),
works out the run's new messages from the session's book (the ids the thread has seen
and its open interrupts, kept in ``session.state["ag-ui"]``), and only then opens the
stream. A
`_Run` then owns the stream: it sends every event, keeps what is open (the text
message, the tool calls, the steps) and closes it before ``RUN_FINISHED``. The session
is saved only when the run finished (HS-143): a run that failed raises out of the
session's block after its ``RUN_ERROR`` was sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from minagent import (
    AgentContext,
    ChatContext,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    SupportsAgentRun,
    agent_middleware,
    chat_middleware,
    function_middleware,
)

from .agui_flow import flow_run
from .agui_input import (
    BOOK_KEY,
    PROTOCOL_VERSION,
    AguiError,
    client_tools,
    parse_input,
    plan_messages,
)
from .conversations import Conversations

__all__ = ["PROTOCOL_VERSION", "STATE_KEY", "handle", "refuse", "state_patch"]

Send = Callable[[dict[str, Any]], Awaitable[None]]

_log = logging.getLogger("minagent.hosting")

# HS-92: where a thread's shared state lives in its session; a tool reads and changes it
# through its FunctionInvocationContext: ``context.session.state[STATE_KEY]``.
STATE_KEY = "ag-ui.state"

# HS-89: the answer an approval interrupt expects
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
    "additionalProperties": False,
}


class Host(Protocol):
    """What a run needs of the application: its agents by name and its conversations
    (`HostingApp`)."""

    agents: dict[str, SupportsAgentRun]
    conversations: Conversations


class _RunFailed(Exception):
    """The run failed after the stream opened; its RUN_ERROR was sent (HS-96)."""


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


# -- the request -----------------------------------------------------------------------


async def handle(
    app: Host, scope: Mapping[str, Any], request: dict[str, Any] | None, send: Send
) -> int:
    """Answer one AG-UI request (``POST /agui`` or ``POST /agui/{agent}``) whose body
    the application has read (None for a method other than POST); returns the HTTP
    status for the access log."""
    try:
        if scope["method"] != "POST" or request is None:
            raise AguiError(
                405, "AG-UI runs are started with POST", "method_not_allowed"
            )
        run_input = parse_input(request)
        name, agent = _pick_agent(app, scope["path"], run_input["forwardedProps"])
    except AguiError as error:
        return await _send_error(send, error)
    try:
        async with app.conversations.session(name, run_input["threadId"]) as session:
            # everything that can refuse the input happens before the stream opens
            messages, book = plan_messages(session, run_input)
            tools = client_tools(agent, run_input["tools"])
            run = _Run(send, run_input, session)
            await run.start()
            await run.execute(agent, messages, tools, book)
    except AguiError as error:
        return await _send_error(send, error)
    except _RunFailed:
        return 200
    return 200


def _pick_agent(app: Host, path: str, forwarded: Any) -> tuple[str, SupportsAgentRun]:
    """HS-83: the agent named by the path, else by ``forwardedProps.agent``, else the
    only one."""
    name = path[len("/agui") :].strip("/")
    if not name and isinstance(forwarded, Mapping) and "agent" in forwarded:
        if not isinstance(forwarded["agent"], str):
            raise AguiError(
                400, "forwardedProps.agent must be a string", "invalid_input"
            )
        name = forwarded["agent"]
    if not name:
        if len(app.agents) != 1:
            raise AguiError(
                400,
                "several agents are served: name one in the path (/agui/{agent}) "
                "or in forwardedProps.agent",
                "agent_required",
            )
        name = next(iter(app.agents))
    agent = app.agents.get(name)
    if agent is None:
        raise AguiError(404, f"no agent named {name!r}", "agent_not_found")
    return name, agent


async def refuse(send: Send, status: int, message: str, code: str) -> int:
    """HS-81: refuse a request before its run: ``status``, and one RUN_ERROR event as
    the JSON body (the application's own refusals of a body: HS-5, HS-6)."""
    return await _send_error(send, AguiError(status, message, code))


async def _send_error(send: Send, error: AguiError) -> int:
    """HS-81: the HTTP status, and one RUN_ERROR event as the JSON body."""
    data = json.dumps(
        {"type": "RUN_ERROR", "message": error.message, "code": error.code}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
    return error.status


# -- state -----------------------------------------------------------------------------


def _pointer(path: Sequence[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def state_patch(old: Any, new: Any) -> list[dict[str, Any]] | None:
    """HS-93: an RFC 6902 patch from ``old`` to ``new`` (JSON values whose roots are
    objects), or None when a root is not an object (a snapshot is sent instead).

    Objects are compared key by key (recursively); any other changed value is replaced
    whole."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None
    ops: list[dict[str, Any]] = []

    def walk(a: dict[str, Any], b: dict[str, Any], path: list[str]) -> None:
        for key in a:
            if key not in b:
                ops.append({"op": "remove", "path": _pointer([*path, key])})
        for key, value in b.items():
            if key not in a:
                ops.append(
                    {"op": "add", "path": _pointer([*path, key]), "value": value}
                )
            elif isinstance(a[key], dict) and isinstance(value, dict):
                walk(a[key], value, [*path, key])
            elif not _same(a[key], value):
                ops.append(
                    {"op": "replace", "path": _pointer([*path, key]), "value": value}
                )

    walk(old, new, [])
    return ops


# -- the run ---------------------------------------------------------------------------


class _Run:
    """One AG-UI run on the wire: sends the events and keeps what is open."""

    def __init__(self, send: Send, run_input: Mapping[str, Any], session: Any) -> None:
        self.send = send
        self.input = run_input
        self.thread_id: str = run_input["threadId"]
        self.run_id: str = run_input["runId"]
        self.session = session
        self.text_id: str | None = None  # the open text message
        self.assistant_id: str | None = None  # the model call's assistant message
        self.open_calls: list[str] = []  # started, not ended
        self.started_calls: list[str] = []
        self.answered: set[str] = set()
        self.last_call: str | None = None
        self.interrupts: dict[str, dict[str, Any]] = {}
        self.steps: list[str] = []
        self.emitted_ids: list[str] = []
        self.model_calls = 0
        self.state_seen: str = "null"
        self.gone = False  # a send failed: the client went away
        # HS-98: the flow in detail, when the input asks for it
        forwarded = run_input["forwardedProps"]
        self.flow = (
            isinstance(forwarded, Mapping) and forwarded.get("minagentFlow") is True
        )
        self.flow_events: list[dict[str, Any]] = []  # reported, not sent yet
        self.own_middleware: list[Any] = []

    # -- the flow in detail (HS-98): what the observer reports, sent before the next
    # event (a report is synchronous, a send is not)

    def own(self, middleware: Any) -> bool:
        return any(middleware is m for m in self.own_middleware)

    def middleware_done(
        self, layer: str, name: str, context: Any, milliseconds: float
    ) -> None:
        if layer == "agent":
            step = "agent"
        elif layer == "chat":
            step = f"model call {self.model_calls}"
        else:
            step = f"tool {context.function.name} ({context.call_id})"
        value = {"layer": layer, "name": name, "ms": round(milliseconds, 3)}
        self.flow_events.append(
            {
                "type": "CUSTOM",
                "name": "minagent.middleware",
                "value": {**value, "step": step},
            }
        )

    def decided(self, outcome: str, next_step: str) -> None:
        self.flow_events.append(
            {
                "type": "CUSTOM",
                "name": "minagent.loop",
                "value": {"outcome": outcome, "next": next_step},
            }
        )

    async def event(self, type_: str, **fields: Any) -> None:
        # HS-96: once a send failed the client is gone: the failure ends the run, and
        # what the run's closing sends after it (open text, calls, steps) goes nowhere
        if self.gone:
            return
        while self.flow_events:
            await self._send_event(self.flow_events.pop(0))
        await self._send_event(
            {"type": type_, **{k: v for k, v in fields.items() if v is not None}}
        )

    async def _send_event(self, body: dict[str, Any]) -> None:
        if self.gone:
            return
        data = b"data: " + json.dumps(body).encode() + b"\n\n"
        try:
            await self.send(
                {"type": "http.response.body", "body": data, "more_body": True}
            )
        except BaseException:
            self.gone = True
            raise

    async def start(self) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        await self.event(
            "RUN_STARTED",
            threadId=self.thread_id,
            runId=self.run_id,
            parentRunId=self.input["parentRunId"],
            protocolVersion=PROTOCOL_VERSION,
        )

    # -- steps and state (HS-91, HS-92) --

    async def step_start(self, name: str) -> None:
        self.steps.append(name)
        await self.event("STEP_STARTED", stepName=name)

    async def step_end(self, name: str) -> None:
        if name in self.steps:
            self.steps.remove(name)
            await self.event("STEP_FINISHED", stepName=name)

    def _state(self) -> Any:
        return self.session.state.get(STATE_KEY)

    async def report_state(self, snapshot: bool = False) -> None:
        """A STATE_DELTA (or snapshot) when the thread's state changed since it was last
        reported (HS-92, HS-93)."""
        state = self._state()
        text = json.dumps(state, sort_keys=True)
        if text == self.state_seen and not snapshot:
            return
        old = json.loads(self.state_seen)
        self.state_seen = text
        patch = None if snapshot else state_patch(old, state)
        if patch is None:
            await self.event("STATE_SNAPSHOT", snapshot=json.loads(text))
        else:
            # the texts differ, so some value differs: the patch is never empty
            await self.event("STATE_DELTA", delta=patch)

    # -- messages and calls --

    async def close_text(self) -> None:
        if self.text_id is not None:
            text_id, self.text_id = self.text_id, None
            await self.event("TEXT_MESSAGE_END", messageId=text_id)

    async def close_calls(self) -> None:
        while self.open_calls:
            await self.event("TOOL_CALL_END", toolCallId=self.open_calls.pop(0))

    async def new_model_call(self) -> str:
        await self.close_text()
        await self.close_calls()
        self.assistant_id = None
        self.last_call = None
        self.model_calls += 1
        return f"model call {self.model_calls}"

    def _assistant(self) -> str:
        if self.assistant_id is None:
            self.assistant_id = _new_id("msg")
            self.emitted_ids.append(self.assistant_id)
        return self.assistant_id

    async def start_call(self, call_id: str, name: str, arguments: str) -> None:
        await self.close_text()
        self.started_calls.append(call_id)
        self.open_calls.append(call_id)
        self.last_call = call_id
        await self.event(
            "TOOL_CALL_START",
            toolCallId=call_id,
            toolCallName=name,
            parentMessageId=self._assistant(),
        )
        if arguments:
            await self.event("TOOL_CALL_ARGS", toolCallId=call_id, delta=arguments)

    async def update(self, update: Any) -> None:
        """HS-86 .. HS-89: one update of the run as events."""
        for content in update.contents:
            kind = content.type
            if kind == "text" and content.text:
                if self.text_id is None:
                    self.text_id = self._assistant()
                    await self.event(
                        "TEXT_MESSAGE_START", messageId=self.text_id, role="assistant"
                    )
                await self.event(
                    "TEXT_MESSAGE_CONTENT", messageId=self.text_id, delta=content.text
                )
            elif kind == "function_call":
                arguments = content.arguments
                if arguments is not None and not isinstance(arguments, str):
                    arguments = json.dumps(arguments)
                call_id = content.call_id or ""
                if call_id and call_id not in self.started_calls:
                    await self.start_call(call_id, content.name or "", arguments or "")
                elif arguments and self.last_call in self.open_calls:
                    # a continuation chunk: more arguments of the call being streamed
                    await self.event(
                        "TOOL_CALL_ARGS", toolCallId=self.last_call, delta=arguments
                    )
            elif kind == "function_result":
                await self.close_text()
                await self.close_calls()
                self.answered.add(content.call_id)
                result = content.result
                text = result if isinstance(result, str) else json.dumps(result)
                message_id = _new_id("msg")
                self.emitted_ids.append(message_id)
                await self.event(
                    "TOOL_CALL_RESULT",
                    messageId=message_id,
                    toolCallId=content.call_id,
                    content=text if text is not None else "",
                    role="tool",
                )
            elif kind == "function_approval_request":
                call = content.function_call
                arguments = call.arguments
                if arguments is not None and not isinstance(arguments, str):
                    arguments = json.dumps(arguments)
                if call.call_id not in self.started_calls:
                    await self.start_call(
                        call.call_id, call.name or "", arguments or ""
                    )
                self.interrupts[content.id] = {
                    "callId": call.call_id,
                    "name": call.name,
                    "arguments": arguments or "{}",
                }

    # -- the whole run --

    def middleware(self) -> list[Any]:
        """HS-91, HS-92: the run-level middleware that marks the steps of each layer and
        reports the state."""
        run = self

        @agent_middleware
        async def agent_step(context: AgentContext, call_next: Any) -> None:
            await run.step_start("agent")
            context.stream_cleanup_hooks.append(lambda: run.step_end("agent"))
            await call_next()

        @chat_middleware
        async def model_step(context: ChatContext, call_next: Any) -> None:
            name = await run.new_model_call()
            await run.step_start(name)
            block = run.instructions()
            if block:
                base = context.options.get("instructions")
                context.options = {
                    **context.options,
                    "instructions": f"{base}\n{block}" if base else block,
                }

            async def finished() -> None:
                await run.close_text()
                await run.close_calls()
                await run.step_end(name)
                await run.report_state()

            context.stream_cleanup_hooks.append(finished)
            await call_next()

        @function_middleware
        async def tool_step(context: FunctionInvocationContext, call_next: Any) -> None:
            name = f"tool {context.function.name} ({context.call_id})"
            await run.step_start(name)
            try:
                await call_next()
            finally:
                await run.step_end(name)
            await run.report_state()

        return [agent_step, model_step, tool_step]

    def instructions(self) -> str:
        """HS-94: the input's context and the thread's current state, for the model."""
        parts: list[str] = []
        if self.input["context"]:
            lines = [
                f"- {c['description']}: {c['value']}" for c in self.input["context"]
            ]
            parts.append("Context from the application:\n" + "\n".join(lines))
        if STATE_KEY in self.session.state:
            parts.append(
                "The application's shared state (JSON): "
                + json.dumps(self.session.state[STATE_KEY], sort_keys=True)
            )
        return "\n\n".join(parts)

    async def execute(
        self,
        agent: SupportsAgentRun,
        messages: list[Message],
        tools: list[FunctionTool],
        book: dict[str, Any],
    ) -> None:
        stream: Any = None
        try:
            if self.input["hasState"]:
                self.session.state[STATE_KEY] = json.loads(
                    json.dumps(self.input["state"])
                )
            if STATE_KEY in self.session.state:
                await self.report_state(snapshot=True)
            self.own_middleware = self.middleware()
            with flow_run(self) if self.flow else contextlib.nullcontext():
                stream = agent.run(
                    messages,
                    stream=True,
                    session=self.session,
                    tools=tools or None,
                    middleware=self.own_middleware,
                    function_invocation_kwargs={
                        "forwarded_props": self.input["forwardedProps"]
                    },
                )
                async for update in stream:
                    await self.update(update)
                final = await stream.get_final_response()
            await self.close_text()
            await self.close_calls()
            for step in list(self.steps):
                await self.step_end(step)
            await self.report_state()
        except Exception as exc:
            # HS-96: the failure goes to the log; the stream gets a RUN_ERROR without it
            _log.exception("hosting: AG-UI run failed")
            if stream is not None:
                # The run's stream is closed first: its hooks end the open text, calls
                # and steps, which come before RUN_ERROR, never after it. A hook that
                # fails here (the state it reports cannot be sent) adds nothing to
                # the failure the run already has.
                closing, stream = stream, None
                try:
                    await closing.aclose()
                except Exception:
                    _log.warning(
                        "hosting: closing the failed AG-UI run's stream failed",
                        exc_info=True,
                    )
            if self.gone:
                _log.warning("hosting: the client left the AG-UI run; no RUN_ERROR")
            else:
                try:
                    await self.event(
                        "RUN_ERROR", message="the run failed", code="run_failed"
                    )
                    await self.send({"type": "http.response.body", "body": b""})
                except Exception:
                    _log.warning("hosting: the AG-UI run's RUN_ERROR could not be sent")
            raise _RunFailed() from exc
        finally:
            # a run left early (a failed send, a cancel) closes its stream: no tool or
            # model call is left running
            if stream is not None:
                await stream.aclose()
        book["seen"].extend(self.emitted_ids)
        book["interrupts"] = dict(self.interrupts)
        self.session.state[BOOK_KEY] = book
        await self.event(
            "RUN_FINISHED",
            threadId=self.thread_id,
            runId=self.run_id,
            outcome=self.outcome(),
            usage=_usage(getattr(final, "usage_details", None)),
        )
        await self.send({"type": "http.response.body", "body": b""})

    def outcome(self) -> dict[str, Any]:
        """HS-88, HS-89: an interrupt outcome when approvals wait, else success naming
        the calls left without a result."""
        if self.interrupts:
            return {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": interrupt_id,
                        "reason": "tool_approval",
                        "message": f"Approve the call of {call['name']} with "
                        f"{call['arguments']}?",
                        "toolCallId": call["callId"],
                        "responseSchema": APPROVAL_SCHEMA,
                    }
                    for interrupt_id, call in self.interrupts.items()
                ],
            }
        pending = [c for c in self.started_calls if c not in self.answered]
        outcome: dict[str, Any] = {"type": "success"}
        if pending:
            outcome["pendingToolCallIds"] = pending
        return outcome


def _usage(details: Any) -> list[dict[str, int]] | None:
    """HS-95: the run's usage as one TokenUsage entry; absent counts stay absent."""
    if details is None:
        return None
    entry: dict[str, int] = {}
    inputs = getattr(details, "input_token_count", None)
    outputs = getattr(details, "output_token_count", None)
    if inputs is not None:
        entry["inputTokens"] = int(inputs)
    if outputs is not None:
        entry["outputTokens"] = int(outputs)
    if inputs is not None and outputs is not None:
        entry["totalTokens"] = int(inputs) + int(outputs)
    return [entry] if entry else None
