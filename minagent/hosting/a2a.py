"""A2A, the Agent2Agent protocol, over its JSON-RPC 2.0 binding (spec/hosting.md
HS-50 .. HS-73), standard library only.

Theory of operation
-------------------
Each hosted agent has one endpoint, ``POST /a2a/{name}``, and one agent card at
``/a2a/{name}/.well-known/agent-card.json`` (the first agent's card is also at the
host's own well-known path). A client's message starts a *task* or continues one; the
task's ``contextId`` is the conversation, one `AgentSession` kept by the application's
`Conversations` (HS-140), so every task of a context continues the same history.

A task is a small state machine (HS-57)::

    submitted -> working -> completed | failed | canceled | input-required
    input-required -> working (the client's answer) | canceled

Every run is an asyncio task owned by its A2A task, not by the request that started it:
``message/send`` waits for it, ``message/stream`` and ``tasks/resubscribe`` follow its
events through a queue each, ``tasks/cancel`` cancels it. A run that asks for approval
ends with its session saved (the approval request is in the history and recorded,
LP-34) and the task ``input-required``; the client's next message on the task carries
the answer (HS-62) and starts the run that resumes it (LP-14). The session also records
which task waits (HS-70), so a worker that never saw the task can take the answer.

Parsing is separate from I/O: `minagent.hosting.a2a_wire` turns JSON into checked values
or raises `RpcError`, and builds the card; `A2AHost` holds the tasks and does the I/O.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from minagent import Content, ContentError, Message, SupportsAgentRun

from .a2a_v1 import METHODS, event_to_v1, is_v1_method, params_to_v03, result_to_v1
from .a2a_wire import (
    CONTENT_TYPE_NOT_SUPPORTED,
    EXTENDED_CARD_NOT_CONFIGURED,
    FINAL,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PUSH_NOT_SUPPORTED,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TERMINAL,
    UNSUPPORTED_OPERATION,
    Incoming,
    RpcError,
    agent_card,
    answers,
    check_version,
    history_length,
    parse_envelope,
    parse_message,
    request_part,
    text_part,
)
from .conversations import Conversations
from .openai_wire import send_json as _send_json

__all__ = ["A2AHost", "RpcError", "is_a2a_path"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_log = logging.getLogger("minagent.hosting")

CARD_NAMES = ("agent-card.json", "agent.json")
WELL_KNOWN = "/.well-known/"
PREFIX = "/a2a/"
# HS-68: the tasks one process keeps (oldest settled tasks are forgotten first).
MAX_TASKS = 10_000
# HS-70: the session state key of the task a conversation's approval requests belong to.
PENDING_KEY = "minagent.a2a.pending"


def is_a2a_path(path: str) -> bool:
    """Whether the application routes ``path`` here (HS-51, HS-53)."""
    return path.startswith(PREFIX) or path in {WELL_KNOWN + n for n in CARD_NAMES}


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _new_id() -> str:
    return uuid.uuid4().hex


# --------------------------------------------------------------------------------------
# Tasks


@dataclass
class _Task:
    """One A2A task: its wire fields and what the host needs to run it (HS-56)."""

    id: str
    context_id: str
    agent_name: str
    state: str = "submitted"
    timestamp: str = field(default_factory=_now)
    status_message: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    # HS-61: the approval requests the task waits for, by request id
    pending: dict[str, Content] = field(default_factory=dict)
    run: asyncio.Task[None] | None = None
    subscribers: list[asyncio.Queue[dict[str, Any] | None]] = field(
        default_factory=list
    )

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "timestamp": self.timestamp}
        if self.status_message is not None:
            out["message"] = self.status_message
        return out

    def snapshot(self, history_length: int | None = None) -> dict[str, Any]:
        """The task as A2A's `Task` object (HS-64)."""
        history = self.history
        if history_length is not None:
            history = history[len(history) - history_length :] if history_length else []
        return {
            "kind": "task",
            "id": self.id,
            "contextId": self.context_id,
            "status": self.status(),
            "history": list(history),
            "artifacts": list(self.artifacts),
        }


def _agent_message(task: _Task, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "message",
        "role": "agent",
        "messageId": _new_id(),
        "taskId": task.id,
        "contextId": task.context_id,
        "parts": parts,
    }


# --------------------------------------------------------------------------------------
# The host


class A2AHost:
    """The A2A face of a `HostingApp`: cards, the JSON-RPC endpoints and the tasks."""

    def __init__(
        self,
        agents: Mapping[str, SupportsAgentRun],
        conversations: Conversations,
        *,
        max_body: int,
        max_tasks: int = MAX_TASKS,
    ) -> None:
        self.agents = agents
        self.conversations = conversations
        self.max_body = max_body
        self.max_tasks = max_tasks
        self.tasks: OrderedDict[str, _Task] = OrderedDict()

    # -- routing -----------------------------------------------------------------------

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> int:
        """Answer one HTTP request under an A2A path; returns the status sent."""
        method, path = scope["method"], scope["path"]
        name, rest = self._split(path)
        if name is None or name not in self.agents:
            shown = "" if name is None else f" named {name!r}"
            return await _send_rpc_error(
                send, 404, None, RpcError(INVALID_REQUEST, f"no A2A agent{shown}")
            )
        if rest in {WELL_KNOWN + n for n in CARD_NAMES}:
            if method != "GET":
                return await _send_rpc_error(
                    send, 405, None, RpcError(INVALID_REQUEST, "the card is GET only")
                )
            return await _send_json(send, 200, self.card(name, scope))
        if rest not in ("", "/"):
            return await _send_rpc_error(
                send, 404, None, RpcError(INVALID_REQUEST, f"no A2A route {path}")
            )
        if method != "POST":
            return await _send_rpc_error(
                send,
                405,
                None,
                RpcError(INVALID_REQUEST, "the A2A endpoint takes POST requests"),
            )
        return await self._rpc(name, scope, receive, send)

    def _split(self, path: str) -> tuple[str | None, str]:
        if not path.startswith(PREFIX):
            # HS-51: the host's own well-known path is the first agent's card.
            return next(iter(self.agents), None), path
        name, slash, rest = path[len(PREFIX) :].partition("/")
        return unquote(name), slash + rest

    # -- the card ----------------------------------------------------------------------

    def card(self, name: str, scope: Scope) -> dict[str, Any]:
        """HS-51: the agent card of ``name``, its url built from the request."""
        url = _base_url(scope) + PREFIX + quote(name, safe="")
        return agent_card(name, self.agents[name], url)

    # -- JSON-RPC ----------------------------------------------------------------------

    async def _rpc(self, name: str, scope: Scope, receive: Receive, send: Send) -> int:
        body = await _read_body(receive, self.max_body)
        if body is None:
            return await _send_rpc_error(
                send,
                413,
                None,
                RpcError(INVALID_REQUEST, f"request body over {self.max_body} bytes"),
            )
        parsed = parse_envelope(body)
        if isinstance(parsed, tuple):
            return await _send_rpc_error(send, 200, *parsed)
        rid = parsed.id
        v1 = is_v1_method(parsed.method)
        stream: tuple[_Task, asyncio.Queue[dict[str, Any] | None], int | None]
        try:
            check_version(_header(scope, b"a2a-version"), "1.0" if v1 else "0.3")
            # HS-71: a 1.0 method is its 0.3 twin, translated both ways
            method = METHODS.get(parsed.method, parsed.method)
            params = (
                params_to_v03(parsed.method, parsed.params) if v1 else parsed.params
            )
            if method == "message/send":
                result = await self._send_message(name, params)
            elif method == "message/stream":
                stream = await self._start_stream(name, params)
            elif method == "tasks/resubscribe":
                stream = (*self._resubscribe(name, params), None)
            elif method == "tasks/get":
                task = self._task(name, params)
                result = task.snapshot(history_length(params, "params"))
            elif method == "tasks/cancel":
                result = await self._cancel(name, params)
            elif method.startswith("tasks/pushNotificationConfig/"):
                raise RpcError(
                    PUSH_NOT_SUPPORTED, "push notifications are not supported"
                )
            elif method == "agent/getAuthenticatedExtendedCard":
                raise RpcError(
                    EXTENDED_CARD_NOT_CONFIGURED,
                    "there is no authenticated extended card",
                )
            else:
                raise RpcError(METHOD_NOT_FOUND, f"no method {method!r}")
            if v1 and method not in ("message/stream", "tasks/resubscribe"):
                result = result_to_v1(parsed.method, result)
        except RpcError as error:
            return await _send_rpc_error(send, 200, rid, error)
        except Exception:
            # HS-69: the traceback goes to the log, never into the answer.
            _log.exception("hosting: A2A request failed")
            internal = RpcError(INTERNAL_ERROR, "internal error")
            return await _send_rpc_error(send, 200, rid, internal)
        if method in ("message/stream", "tasks/resubscribe"):
            encode = event_to_v1 if v1 else dict
            return await self._stream(send, rid, *stream, encode)
        return await _send_json(
            send, 200, {"jsonrpc": "2.0", "id": rid, "result": result}
        )

    def _task(self, name: str, params: Mapping[str, Any]) -> _Task:
        task_id = params.get("id")
        if not isinstance(task_id, str) or not task_id:
            raise RpcError(INVALID_PARAMS, "params.id must be a non-empty string")
        return self._find(name, task_id)

    def _find(self, name: str, task_id: str) -> _Task:
        task = self.tasks.get(task_id)
        # HS-56: a task is found only at its own agent's endpoint.
        if task is None or task.agent_name != name:
            raise RpcError(TASK_NOT_FOUND, f"no task {task_id!r}")
        return task

    # -- message/send and message/stream -----------------------------------------------

    async def _begin(
        self, name: str, params: Mapping[str, Any]
    ) -> tuple[_Task, Incoming, SupportsAgentRun, list[Message]]:
        """HS-55, HS-56, HS-63: check a message, then start or continue its task and
        start the run. Nothing is changed before every check has passed: the one await
        (reading the conversation's pending record, HS-70) comes before the checks, so
        everything from the checks on happens in one step of the event loop."""
        incoming = parse_message(params)
        agent = self.agents[name]
        if incoming.task_id is None:
            if incoming.data:
                raise RpcError(
                    CONTENT_TYPE_NOT_SUPPORTED,
                    "data parts are taken only as approval answers to a task in "
                    "input-required",
                )
            task = _Task(
                id=_new_id(),
                context_id=incoming.context_id or _new_id(),
                agent_name=name,
            )
            self._remember(task)
            contents: list[Content | str] = ["".join(incoming.texts)]
        else:
            task = await self._continued(name, incoming.task_id, incoming.context_id)
            replies = answers(task.id, task.pending, incoming)
            text = "".join(incoming.texts) if incoming.data else ""
            contents = [*replies, *([text] if text else [])]
            task.pending = {}
            if task.id not in self.tasks:
                self._remember(task)
            # taken at once, so a second answer racing this one finds it working
            self._set_state(task, "working")
        task.history.append(
            {**incoming.message, "taskId": task.id, "contextId": task.context_id}
        )
        task.status_message = None
        return task, incoming, agent, [Message("user", contents)]

    async def _continued(
        self, name: str, task_id: str, context_id: str | None
    ) -> _Task:
        """HS-63, HS-70: the input-required task a message continues: this process's
        own, or one another worker left waiting, rebuilt from the conversation's pending
        record. Nothing is changed here."""
        local = self.tasks.get(task_id)
        if local is not None and local.agent_name == name:
            context_id = context_id or local.context_id
        record: Mapping[str, Any] | None = None
        if context_id is not None:
            session = await self.conversations.get(name, context_id)
            found = session.state.get(PENDING_KEY) if session is not None else None
            if isinstance(found, Mapping) and found.get("task") == task_id:
                record = found
        # from here on no await: the checks and the caller's changes are one step
        task = self.tasks.get(task_id)
        if task is not None and task.agent_name != name:
            task = None
        if task is None:
            pending = _pending_from(record)
            if record is None or context_id is None or pending is None:
                raise RpcError(TASK_NOT_FOUND, f"no task {task_id!r}")
            return _Task(
                id=task_id,
                context_id=context_id,
                agent_name=name,
                state="input-required",
                pending=pending,
            )
        if context_id != task.context_id:
            raise RpcError(
                INVALID_PARAMS, f"task {task.id!r} belongs to another contextId"
            )
        if task.state != "input-required":
            raise RpcError(
                UNSUPPORTED_OPERATION,
                f"task {task.id!r} is {task.state}; only a task in "
                "input-required takes another message",
            )
        if record is None:
            raise RpcError(
                UNSUPPORTED_OPERATION,
                f"task {task.id!r} no longer waits: its conversation went on "
                "without it (another task, or another worker, continued it)",
            )
        return task

    async def _send_message(
        self, name: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        task, incoming, agent, messages = await self._begin(name, params)
        run = self._start_run(task, agent, messages, stream=False)
        if incoming.blocking:
            # HS-58: wait for the run, not raising if it was cancelled
            await asyncio.wait({run})
        return task.snapshot(incoming.history_length)

    async def _start_stream(
        self, name: str, params: Mapping[str, Any]
    ) -> tuple[_Task, asyncio.Queue[dict[str, Any] | None], int | None]:
        task, incoming, agent, messages = await self._begin(name, params)
        queue = self._subscribe(task)
        self._start_run(task, agent, messages, stream=True)
        return task, queue, incoming.history_length

    def _resubscribe(
        self, name: str, params: Mapping[str, Any]
    ) -> tuple[_Task, asyncio.Queue[dict[str, Any] | None]]:
        task = self._task(name, params)
        if task.state in TERMINAL:
            raise RpcError(
                UNSUPPORTED_OPERATION,
                f"task {task.id!r} is {task.state}; there is nothing to follow",
            )
        queue = self._subscribe(task)
        if task.run is None:
            # HS-66: nothing runs (input-required): the stream is the snapshot only
            queue.put_nowait(None)
        return task, queue

    def _subscribe(self, task: _Task) -> asyncio.Queue[dict[str, Any] | None]:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        task.subscribers.append(queue)
        return queue

    async def _stream(
        self,
        send: Send,
        rid: str | int,
        task: _Task,
        queue: asyncio.Queue[dict[str, Any] | None],
        history_length: int | None,
        encode: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> int:
        """HS-60: the task, then its events, each one SSE ``data:`` event holding a
        JSON-RPC response, until the task settles. HS-68: a client that leaves stops
        following; the run goes on. ``encode`` turns a 0.3 event into the dialect
        spoken (HS-71)."""

        async def emit(event: dict[str, Any]) -> None:
            result = encode(event)
            data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})
            await send(
                {
                    "type": "http.response.body",
                    "body": b"data: " + data.encode() + b"\n\n",
                    "more_body": True,
                }
            )

        try:
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
            await emit(task.snapshot(history_length))
            while (event := await queue.get()) is not None:
                await emit(event)
            await send({"type": "http.response.body", "body": b""})
        except OSError:
            # The connection is gone: nobody is left to answer. The task is not the
            # connection's (HS-68), so it runs on for `tasks/resubscribe`.
            _log.info("hosting: a client left the stream of A2A task %s", task.id)
        finally:
            if queue in task.subscribers:
                task.subscribers.remove(queue)
        return 200

    # -- runs --------------------------------------------------------------------------

    def _start_run(
        self,
        task: _Task,
        agent: SupportsAgentRun,
        messages: list[Message],
        *,
        stream: bool,
    ) -> asyncio.Task[None]:
        run = asyncio.get_running_loop().create_task(
            self._run(task, agent, messages, stream=stream)
        )
        task.run = run
        return run

    async def _run(
        self,
        task: _Task,
        agent: SupportsAgentRun,
        messages: list[Message],
        *,
        stream: bool,
    ) -> None:
        """HS-57: one run of a task. The task settles only after the session is saved
        (HS-143), so a client that sees the final state can read the next turn."""
        artifact_id = _new_id()
        chunks = 0
        try:
            async with self.conversations.session(
                task.agent_name, task.context_id
            ) as session:
                if task.state != "working":
                    self._set_state(task, "working")
                if stream:
                    running = agent.run(messages, stream=True, session=session)
                    async for update in running:
                        text = update.text
                        if text:
                            self._publish(
                                task,
                                _artifact_event(task, artifact_id, text, chunks > 0),
                            )
                            chunks += 1
                    response = await running.get_final_response()
                else:
                    response = await agent.run(messages, session=session)
                # HS-70: saved with the session, for whichever worker gets the answer
                _record_pending(session.state, task.id, response)
        except asyncio.CancelledError:
            self._settle(task, "canceled", None)
            raise
        except Exception:
            # HS-69: the exception goes to the log; the client learns the run failed.
            _log.exception("hosting: A2A run of task %s failed", task.id)
            self._settle(task, "failed", [text_part("The agent's run failed.")])
            return
        finally:
            task.run = None
        self._finish(task, response, artifact_id, chunks)

    def _finish(
        self, task: _Task, response: Any, artifact_id: str, chunks: int
    ) -> None:
        approvals = _approvals(response)
        text = getattr(response, "text", "") or ""
        if approvals is None:
            # HS-61: a declaration-only call has no A2A answer; the task fails.
            self._settle(
                task,
                "failed",
                [
                    text_part(
                        "The agent asked for a client-side tool call, "
                        "which A2A cannot carry."
                    )
                ],
            )
            return
        if approvals:
            task.pending = {str(r.id): r for r in approvals}
            parts = [text_part(text)] if text else []
            parts += [request_part(r) for r in approvals]
            self._settle(task, "input-required", parts)
            return
        # HS-59: the answer is the task's artifact
        artifact = {
            "artifactId": artifact_id,
            "name": "answer",
            "parts": [text_part(text)],
        }
        task.artifacts.append(artifact)
        if chunks:
            self._publish(task, _artifact_event(task, artifact_id, "", True, last=True))
        else:
            self._publish(
                task,
                {
                    "kind": "artifact-update",
                    "taskId": task.id,
                    "contextId": task.context_id,
                    "artifact": artifact,
                    "append": False,
                    "lastChunk": True,
                },
            )
        self._settle(task, "completed", None)

    def _set_state(self, task: _Task, state: str) -> None:
        task.state = state
        task.timestamp = _now()
        self._publish(
            task,
            {
                "kind": "status-update",
                "taskId": task.id,
                "contextId": task.context_id,
                "status": task.status(),
                "final": state in FINAL,
            },
        )

    def _settle(
        self, task: _Task, state: str, parts: list[dict[str, Any]] | None
    ) -> None:
        """The task's last status of this run, then the end of every subscriber's
        stream."""
        if parts is not None:
            message = _agent_message(task, parts)
            task.status_message = message
            task.history.append(message)
        self._set_state(task, state)
        for queue in task.subscribers:
            queue.put_nowait(None)
        task.subscribers.clear()

    def _publish(self, task: _Task, event: dict[str, Any]) -> None:
        for queue in task.subscribers:
            queue.put_nowait(event)

    def _remember(self, task: _Task) -> None:
        """HS-68: keep at most ``max_tasks``; the oldest idle ones go first."""
        self.tasks[task.id] = task
        if len(self.tasks) <= self.max_tasks:
            return
        for task_id, old in list(self.tasks.items()):
            if len(self.tasks) <= self.max_tasks:
                break
            if old.run is None and old is not task:
                del self.tasks[task_id]

    # -- tasks/cancel ------------------------------------------------------------------

    async def _cancel(self, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """HS-65: cancel a task that has not settled."""
        task = self._task(name, params)
        if task.state == "input-required" and task.run is None:
            # HS-70: the conversation stops waiting for it, on every worker. The
            # state is checked again under the conversation's lock: an answer may
            # have taken the task meanwhile.
            async with self.conversations.session(name, task.context_id) as session:
                waiting = task.state == "input-required" and task.run is None
                if waiting:
                    record = session.state.get(PENDING_KEY)
                    if isinstance(record, Mapping) and record.get("task") == task.id:
                        del session.state[PENDING_KEY]
                    task.pending = {}
            if waiting:
                self._settle(task, "canceled", None)
                return task.snapshot()
        if task.state in TERMINAL:
            raise RpcError(TASK_NOT_CANCELABLE, f"task {task.id!r} is {task.state}")
        run = task.run
        if run is not None:
            run.cancel()
            await asyncio.wait({run})
            self._settle_unstarted(task, run)
        if task.state != "canceled":
            raise RpcError(
                TASK_NOT_CANCELABLE,
                f"task {task.id!r} became {task.state} before it could be cancelled",
            )
        return task.snapshot()

    async def aclose(self) -> None:
        """HS-68: cancel every run still going (the application's shutdown)."""
        running = [(t, t.run) for t in self.tasks.values() if t.run is not None]
        for _, run in running:
            run.cancel()
        if running:
            await asyncio.wait([run for _, run in running])
        for task, run in running:
            self._settle_unstarted(task, run)

    def _settle_unstarted(self, task: _Task, run: asyncio.Task[None]) -> None:
        # A run cancelled before its first step never enters `_run`, so nothing
        # settled its task: do it here.
        if run.cancelled() and task.run is run:
            task.run = None
            self._settle(task, "canceled", None)


def _approvals(response: Any) -> list[Content] | None:
    """The approval requests a run ended with; None when it also waits for something
    A2A cannot carry (HS-61)."""
    requests = list(getattr(response, "user_input_requests", []))
    approvals = [r for r in requests if r.type == "function_approval_request"]
    return approvals if len(approvals) == len(requests) else None


def _record_pending(state: dict[str, Any], task_id: str, response: Any) -> None:
    """HS-70: the conversation's pending record names the task and its requests while
    it waits, and is gone once a run of the conversation ends any other way."""
    approvals = _approvals(response)
    if approvals:
        state[PENDING_KEY] = {
            "task": task_id,
            "requests": [r.to_dict() for r in approvals],
        }
    else:
        state.pop(PENDING_KEY, None)


def _pending_from(record: Mapping[str, Any] | None) -> dict[str, Content] | None:
    """The approval requests of a pending record, or None when it is not one."""
    if record is None or not isinstance(record.get("requests"), list):
        return None
    try:
        requests = [Content.from_dict(r) for r in record["requests"]]
    except (ContentError, TypeError, ValueError):
        return None
    # each request must name the call it asks about: an answer approves that call
    if not requests or any(
        r.type != "function_approval_request" or r.function_call is None
        for r in requests
    ):
        return None
    return {str(r.id): r for r in requests}


def _artifact_event(
    task: _Task, artifact_id: str, text: str, append: bool, *, last: bool = False
) -> dict[str, Any]:
    return {
        "kind": "artifact-update",
        "taskId": task.id,
        "contextId": task.context_id,
        "artifact": {
            "artifactId": artifact_id,
            "name": "answer",
            "parts": [text_part(text)],
        },
        "append": append,
        "lastChunk": last,
    }


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _base_url(scope: Scope) -> str:
    """HS-51: scheme, host and the ASGI root path of the request."""
    host = _header(scope, b"host")
    if not host:
        # ASGI's `server` is [host, port], or [path, None] for a Unix socket, whose
        # path is no host a client could use
        server = scope.get("server") or ("localhost", None)
        port = server[1]
        host = "localhost" if port is None else f"{server[0]}:{port}"
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}"


async def _read_body(receive: Receive, cap: int) -> bytes | None:
    """The request body, or None once it passes ``cap`` bytes (HS-53)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _send_rpc_error(
    send: Send, status: int, rid: str | int | None, error: RpcError
) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "error": {"code": error.code, "message": error.message},
    }
    return await _send_json(send, status, body)
