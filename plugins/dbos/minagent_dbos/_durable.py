"""`DurableAgent`: an agent's run as a DBOS workflow (spec/dbos.md DU-1, DU-2, DU-5,
DU-6, DU-8, DU-9, DU-11 .. DU-14).

Rules
-----
1. The workflow's inputs and result are data: messages, session and response as our own
   ``to_dict`` data, options and keyword arguments as given (DBOS pickles them).
2. The caller's session changes once, when the recorded result arrives (all or nothing,
   DU-13).
3. Everything the workflow waits for from outside (approvals) is a DBOS message, so a
   replay receives the same answers (DU-8, DU-11).
4. Each agent run of the workflow names itself to the history providers with a key that
   every execution draws the same (``{workflow_id}:{n}``), so a store that already holds
   that run after a crash does not append it again (DU-13, DU-18); the key never leaves
   the workflow's copy of the session.

Theory of operation
-------------------
``DurableAgent(agent, name=...)`` registers ``minagent.run:{name}`` (`_workflow`). The
workflow restores the messages and the session, runs the agent with two innermost
run-level middleware (`DurableChat`, `DurableTool`: every model call and tool call a
step), and, while the run pauses for approvals, publishes the requests as an event,
waits for the answer message and runs the agent again with the answers (LP-14). Around
each agent run (`_keyed`) the run's key is the ``"run_key"`` item of every history
provider's state entry on the workflow's copy of the session, the ``state`` their saves
receive (SE-40). Streaming, it iterates the agent's stream and hands each update to the
consumer registered for its workflow id in this process (`_CONSUMERS`, a thread-safe
hand-off: a recovered workflow may run on DBOS's own event loop). The caller's side
starts (or attaches to) the workflow and restores the result.

With ``return_at_pause`` (spec/hosting.md HS-190 .. HS-192) the workflow also publishes
each pause (its requests, the response so far, the session) as the event
``minagent.pause``; the caller's side returns at whichever comes first, the result or a
pause it has not answered, and keeps the waiting workflow's id in the session, whose
next run sends its approval answers there instead of starting a new workflow.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
import time
import uuid
from asyncio import FIRST_COMPLETED
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from dbos import DBOS, DBOSClient, Queue, SetWorkflowID

from minagent import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    Content,
    HistoryProvider,
    Message,
    ResponseStream,
    UsageDetails,
    normalize_messages,
)

from ._steps import DurableChat, DurableTool, RunSteps, recorded
from ._version import definition_version, plugin_code, versioned_workflow

__all__ = [
    "APPROVALS_EVENT",
    "APPROVAL_TOPIC",
    "DurableAgent",
    "approve",
    "cancel",
    "enqueue",
    "pending_approvals",
    "recover",
    "result",
    "workflow_name",
]

APPROVALS_EVENT = "minagent.approvals"
APPROVAL_TOPIC = "minagent.approval"
# HS-190: a pause's requests, the response so far and the session, for a caller
# that returns at it
PAUSE_EVENT = "minagent.pause"
# HS-190: the session-state key naming the durable run that waits for the
# session's answer
PAUSED_KEY = "minagent_dbos.paused"
# HS-190: how often a caller that returns at pauses looks for a new pause (seconds)
_PAUSE_POLL = 0.2
SESSION_STEP = "minagent.session"
_LOG = logging.getLogger("minagent_dbos")
_WAIT_SLICE = 3600.0  # one recorded wait per hour of waiting for an approval
_REFUSED = ("tools", "middleware", "inbox", "thread")
# the item of a history provider's state entry that names the run (DU-18, SE-40)
RUN_KEY = "run_key"
_DONE = object()


def workflow_name(name: str) -> str:
    """The name of the DBOS workflow that runs the `DurableAgent` called ``name``,
    ``"minagent.run:{name}"`` (DU-1)."""
    return f"minagent.run:{name}"


class _Consumer:
    """Where a workflow's updates go in this process: a queue on the consumer's event
    loop."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    def push(self, item: Any) -> None:
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - workflows run on an event loop
            here = None
        if here is self.loop:
            self.queue.put_nowait(item)
        else:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)


_CONSUMERS: dict[str, _Consumer] = {}


def _durable_version(
    agent_version: str,
    name: str,
    wait_for_approvals: bool,
    approval_timeout: float | None,
    *,
    pinned: bool,
) -> str:
    """DU-20: a pinned version as given; otherwise the agent's definition's version
    combined with the `DurableAgent`'s own settings and the plugin's code."""
    if pinned:
        return agent_version
    settings = json.dumps(
        [
            agent_version,
            name,
            bool(wait_for_approvals),
            repr(approval_timeout),
            plugin_code(),
        ]
    )
    return hashlib.sha256(settings.encode()).hexdigest()[:32]


def _restore(data: Mapping[str, Any], session: AgentSession | None) -> AgentResponse:
    """The recorded result as a response; the caller's session takes the run's state
    (DU-13)."""
    if session is not None and data.get("session") is not None:
        state = AgentSession.from_dict(data["session"])
        session.state.clear()
        session.state.update(state.state)
        session.service_session_id = state.service_session_id
    return AgentResponse.from_dict(data["response"])


@contextmanager
def _keyed(agent: Any, session: AgentSession | None, key: str) -> Iterator[None]:
    """DU-18: ``key`` in every history provider's state entry while the agent runs, then
    taken out."""
    state = session.state if session is not None else {}
    # (source id, entry, made for the key)
    made: list[tuple[str, dict[str, Any], bool]] = []
    for provider in getattr(agent, "context_providers", None) or []:
        source_id = getattr(provider, "source_id", None) or type(provider).__name__
        entry = state.get(source_id)
        if (
            session is not None
            and isinstance(provider, HistoryProvider)
            and (entry is None or isinstance(entry, dict))
        ):
            made.append((source_id, state.setdefault(source_id, {}), entry is None))
    for _source_id, entry, _new in made:
        entry[RUN_KEY] = key
    try:
        yield
    finally:
        for source_id, entry, new in made:
            entry.pop(RUN_KEY, None)
            if new and not entry and state.get(source_id) is entry:
                del state[source_id]


def _combine(parts: list[AgentResponse]) -> AgentResponse:
    """DU-11: the parts of a run around its approval pauses as one response."""
    if len(parts) == 1:
        return parts[0]
    last = parts[-1]
    usage: UsageDetails | None = None
    for part in parts:
        if part.usage_details is not None:
            usage = part.usage_details if usage is None else usage + part.usage_details
    # the requests of every pause but the last part's were answered: they are
    # kept in the transcript but no longer reported as pending (issue 38)
    earlier = [_answered(m) for part in parts[:-1] for m in part.messages]
    return AgentResponse(
        [*earlier, *last.messages],
        response_id=last.response_id,
        agent_id=last.agent_id,
        created_at=last.created_at,
        finish_reason=last.finish_reason,
        usage_details=usage,
        additional_properties=dict(last.additional_properties),
    )


def _answered(message: Message) -> Message:
    """A copy of ``message`` whose user-input requests are no longer flagged as
    pending (the message itself is left unchanged)."""
    if not any(c.user_input_request for c in message.contents):
        return message
    answered = copy.copy(message)
    answered.contents = [
        replace(c, user_input_request=False) if c.user_input_request else c
        for c in message.contents
    ]
    return answered


class DurableAgent:
    """An agent whose runs are DBOS workflows: they survive a crash of the process.

    ``DurableAgent(agent, name=...)`` registers the DBOS workflow ``minagent.run:{name}``,
    so make it after ``DBOS(config=...)`` and before ``DBOS.launch()``, with the same
    ``name`` and the same agent in every process that may run or recover its runs.
    Each model call and each tool call of a run is a recorded step; after a crash,
    ``DBOS.launch()`` in a new process finishes the run without repeating the steps
    that completed.

    ``sessions`` is a session store the run's session is saved to at the end;
    ``wait_for_approvals`` makes a run that needs a human's approval wait for
    ``approve`` (from any process) instead of returning; ``approval_timeout`` rejects
    the pending calls after that many seconds; ``return_at_pause`` makes a run on a
    session return at each approval pause while the workflow waits on, the session's
    next run answering it (for serving it over HTTP, spec/hosting.md HS-190 ..
    HS-193). ``version`` pins the version that
    decides which processes may recover a run; by default the ``version`` attribute
    is a hash of the agent's definition, so a process whose agent differs leaves the
    run to one whose agent is the same (DU-1, DU-11, DU-13, DU-20).
    """

    def __init__(
        self,
        agent: Any,
        *,
        name: str,
        sessions: Any = None,
        wait_for_approvals: bool = True,
        approval_timeout: float | None = None,
        version: str | None = None,
        return_at_pause: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"DurableAgent needs a non-empty name, got {name!r}")
        if not callable(getattr(agent, "run", None)):
            raise TypeError(
                f"DurableAgent wraps an agent with a run method, got {type(agent).__name__}"
            )
        if approval_timeout is not None and not approval_timeout > 0:
            raise ValueError(
                f"approval_timeout must be a positive number of seconds, got {approval_timeout!r}"
            )
        if version is not None and (not isinstance(version, str) or not version):
            raise ValueError(
                f"DurableAgent's version pins the definition's version with a non-empty string, got {version!r}"
            )
        self.agent = agent
        self.name = name
        self.sessions = sessions
        self.wait_for_approvals = wait_for_approvals
        self.approval_timeout = approval_timeout
        # HS-190: the caller's side only (the workflow is the same), so not in the
        # version
        self.return_at_pause = bool(return_at_pause)
        # DU-20: what the workflow's path depends on; DBOS hashes it into the
        # application version through the workflow's source text
        self.version: str = _durable_version(
            version if version is not None else definition_version(agent),
            name,
            wait_for_approvals,
            approval_timeout,
            pinned=version is not None,
        )
        workflow = versioned_workflow(self, name, self.version)
        self._registered = DBOS.workflow(name=workflow_name(name))(workflow)

    # HS-194: what a host reads of the agent it serves (HS-51, HS-52, HS-29)
    @property
    def description(self) -> str | None:
        """The wrapped agent's description."""
        description = getattr(self.agent, "description", None)
        return description if isinstance(description, str) else None

    @property
    def default_options(self) -> Mapping[str, Any]:
        """The wrapped agent's default options (its tools among them), read only."""
        options = getattr(self.agent, "default_options", None)
        return MappingProxyType(dict(options or {}))

    # -- the caller's side ------------------------------------------------------------------------

    def run(
        self,
        messages: Any = None,
        *,
        stream: bool = False,
        workflow_id: str | None = None,
        session: AgentSession | None = None,
        options: Mapping[str, Any] | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the agent as a durable run, like ``Agent.run``.

        Awaiting it gives the `AgentResponse`; with ``stream=True`` it gives a
        `ResponseStream` of updates. ``workflow_id`` names the run (a new uuid when
        not given): starting an id that already finished returns its recorded
        response without running the agent again. ``session`` receives the run's
        new state once the run has finished (DU-2, DU-13).
        """
        if self.return_at_pause:
            return self._served(
                messages,
                stream,
                workflow_id,
                session,
                options,
                function_invocation_kwargs,
                client_kwargs,
                kwargs,
            )
        request = self._request(
            messages,
            stream,
            session,
            options,
            function_invocation_kwargs,
            client_kwargs,
            kwargs,
        )
        wid = workflow_id or str(uuid.uuid4())
        if not stream:
            return self._result(lambda: self._start(wid, request), session)
        return self._relay(wid, session, lambda: self._start(wid, request))

    def _served(
        self,
        messages: Any,
        stream: bool,
        workflow_id: str | None,
        session: AgentSession | None,
        options: Mapping[str, Any] | None,
        function_invocation_kwargs: Mapping[str, Any] | None,
        client_kwargs: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> Any:
        """HS-190 .. HS-192: a run that returns at each approval pause while its
        workflow waits on, recorded in ``session``; the session's next run answers
        that workflow when its messages are the answers, else cancels it and starts
        a new run."""
        if session is None:
            raise ValueError(
                "a DurableAgent with return_at_pause=True runs on a session: the "
                "session records the run waiting for an approval"
            )
        if not isinstance(session, AgentSession):
            raise TypeError(
                f"session must be an AgentSession, got {type(session).__name__}"
            )
        given = normalize_messages(messages)
        paused = _paused(session)
        answers = _approval_answers(given)
        if paused is not None and answers is not None:
            wid, requests = paused
            if not answers or not set(answers) <= set(requests):
                raise ValueError(
                    f"the approval answers name {sorted(answers)}, but the durable "
                    f"run {wid!r} waits for the requests {sorted(requests)}"
                )
            if workflow_id is not None and workflow_id != wid:
                raise ValueError(
                    f"the session's durable run is {wid!r}; its answer cannot start "
                    f"the run {workflow_id!r}"
                )
            # the answer goes to the waiting workflow: nothing else of the call
            # reaches it (its inputs were recorded when it started)
            self._request(
                None,
                stream,
                None,
                options,
                function_invocation_kwargs,
                client_kwargs,
                kwargs,
            )
            extra = [
                k
                for k, v in (
                    ("options", options),
                    ("function_invocation_kwargs", function_invocation_kwargs),
                    ("client_kwargs", client_kwargs),
                )
                if v
            ]
            if extra:
                raise ValueError(
                    f"an answer to the waiting durable run {wid!r} takes no "
                    f"{extra[0]}: the run's inputs were recorded when it started"
                )
            chosen = dict(answers)

            async def resume() -> Any:
                await approve(wid, chosen)
                return await DBOS.retrieve_workflow_async(wid)

            start: Callable[[], Awaitable[Any]] = resume
            answered = set(requests)
        else:
            # the new run starts from the session without the record of a waiting
            # run (the caller's session is not changed before the run's result)
            start_session = AgentSession.from_dict(session.to_dict())
            start_session.state.pop(PAUSED_KEY, None)
            request = self._request(
                given,
                stream,
                start_session,
                options,
                function_invocation_kwargs,
                client_kwargs,
                kwargs,
            )
            wid = workflow_id or str(uuid.uuid4())
            abandoned = paused[0] if paused is not None else None

            async def begin() -> Any:
                if abandoned is not None:
                    # the conversation went on without the answer (DU-12)
                    await cancel(abandoned)
                return await self._start(wid, request)

            start = begin
            answered = set()
        if not stream:
            return self._served_result(wid, start, session, answered)
        return self._relay(wid, session, start, answered=answered)

    async def _served_result(
        self,
        workflow_id: str,
        start: Callable[[], Awaitable[Any]],
        session: AgentSession,
        answered: set[str],
    ) -> AgentResponse:
        handle = await start()
        finished = asyncio.ensure_future(handle.get_result())
        pausing = asyncio.ensure_future(_next_pause(workflow_id, answered))
        try:
            await asyncio.wait({finished, pausing}, return_when=FIRST_COMPLETED)
        finally:
            for waiter in (finished, pausing):
                if not waiter.done():
                    waiter.cancel()
            await asyncio.gather(finished, pausing, return_exceptions=True)
        if finished.done() and not finished.cancelled():
            return _restore(finished.result(), session)
        return _restore_pause(workflow_id, pausing.result(), session)

    def attach(
        self, workflow_id: str, *, session: AgentSession | None = None
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]:
        """A stream of the updates of the run ``workflow_id``, running (or to be
        recovered) in this process; it finalises to the run's response. Its updates
        are kept from this call on, so attaching before ``DBOS.launch()`` sees a
        recovered run whole (DU-9)."""
        consumer = _CONSUMERS[workflow_id] = _Consumer()
        return self._relay(
            workflow_id,
            session,
            lambda: DBOS.retrieve_workflow_async(workflow_id),
            consumer,
        )

    async def enqueue(
        self,
        queue: Queue,
        messages: Any = None,
        *,
        workflow_id: str | None = None,
        session: AgentSession | None = None,
        options: Mapping[str, Any] | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> str:
        """Put a run on the DBOS ``queue``, for any process that made this agent and
        the queue to take; returns its workflow id, for ``result`` (DU-14)."""
        request = self._request(
            messages,
            False,
            session,
            options,
            function_invocation_kwargs,
            client_kwargs,
            {},
        )
        wid = workflow_id or str(uuid.uuid4())
        with SetWorkflowID(wid):
            await queue.enqueue_async(self._registered, request)
        return wid

    def _request(
        self,
        messages: Any,
        stream: bool,
        session: AgentSession | None,
        options: Mapping[str, Any] | None,
        function_invocation_kwargs: Mapping[str, Any] | None,
        client_kwargs: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> dict[str, Any]:
        refused = [k for k in kwargs if k in _REFUSED]
        if refused:
            raise TypeError(
                f"DurableAgent.run() takes no {refused[0]}=: a durable run's inputs are recorded, so tools and "
                "middleware belong to the agent, and the session is given as session="
            )
        if kwargs:
            raise TypeError(
                f"DurableAgent.run() got unexpected keyword arguments: {', '.join(sorted(kwargs))}"
            )
        if session is not None and not isinstance(session, AgentSession):
            raise TypeError(
                f"session must be an AgentSession, got {type(session).__name__}"
            )
        if options is not None and "tools" in options:
            raise TypeError(
                "a durable run takes no options['tools']: give the tools to the agent"
            )
        return {
            "messages": [m.to_dict() for m in normalize_messages(messages)],
            "stream": bool(stream),
            "session": session.to_dict() if session is not None else None,
            "options": dict(options) if options else {},
            "function_invocation_kwargs": dict(function_invocation_kwargs or {}),
            "client_kwargs": dict(client_kwargs or {}),
            "agent_id": getattr(self.agent, "id", None),
        }

    async def _start(self, workflow_id: str, request: dict[str, Any]) -> Any:
        with SetWorkflowID(workflow_id):
            return await DBOS.start_workflow_async(self._registered, request)

    async def _result(
        self, start: Callable[[], Awaitable[Any]], session: AgentSession | None
    ) -> AgentResponse:
        handle = await start()
        return _restore(await handle.get_result(), session)

    def _relay(
        self,
        workflow_id: str,
        session: AgentSession | None,
        start: Callable[[], Awaitable[Any]],
        attached: _Consumer | None = None,
        *,
        answered: set[str] | None = None,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]:
        final: list[AgentResponse] = []

        async def source() -> AsyncIterator[AgentResponseUpdate]:
            consumer = attached if attached is not None else _Consumer()
            _CONSUMERS[workflow_id] = consumer
            waiting: asyncio.Future[Any] | None = None
            # HS-190: with return_at_pause, a new pause also ends the stream
            pausing: asyncio.Future[Any] | None = None
            try:
                handle = await start()
                waiting = asyncio.ensure_future(handle.get_result())
                waiting.add_done_callback(lambda _f: consumer.queue.put_nowait(_DONE))
                if answered is not None:
                    pausing = asyncio.ensure_future(_next_pause(workflow_id, answered))
                    pausing.add_done_callback(
                        lambda _f: consumer.queue.put_nowait(_DONE)
                    )
                while (item := await consumer.queue.get()) is not _DONE:
                    yield item
                if waiting.done() or pausing is None:
                    data = waiting.result()
                    paused = None
                else:
                    paused = pausing.result()
            finally:
                if _CONSUMERS.get(workflow_id) is consumer:
                    del _CONSUMERS[workflow_id]
                for waiter in (waiting, pausing):
                    if waiter is not None and not waiter.done():
                        waiter.cancel()
                        await asyncio.gather(waiter, return_exceptions=True)
            if paused is not None and session is not None:
                final.append(_restore_pause(workflow_id, paused, session))
            else:
                final.append(_restore(data, session))

        return ResponseStream(source(), finalizer=lambda _updates: final[0])

    # -- the workflow -----------------------------------------------------------------------------

    async def _workflow(self, request: dict[str, Any]) -> dict[str, Any]:
        workflow_id = DBOS.workflow_id or ""
        steps = RunSteps(workflow_id)
        messages = [Message.from_dict(m) for m in request["messages"]]
        given = request["session"]
        session = AgentSession.from_dict(given) if given is not None else None
        run_session = session
        if run_session is None and getattr(self.agent, "context_providers", None):
            # DU-8
            run_session = AgentSession(
                session_id=await recorded(lambda: str(uuid.uuid4()))
            )
        parts: list[AgentResponse] = []
        while True:
            response = await self._once(
                messages, run_session, steps, request, len(parts)
            )
            parts.append(response)
            pending = [
                c
                for c in response.user_input_requests
                if c.type == "function_approval_request"
            ]
            if not pending or not self.wait_for_approvals:
                break
            # HS-190: what a caller that returns at the pause gives back
            await DBOS.set_event_async(
                PAUSE_EVENT,
                {
                    "requests": [c.id or "" for c in pending],
                    "response": _combine(parts).to_dict(),
                    "session": (
                        run_session.to_dict() if run_session is not None else None
                    ),
                },
            )
            answers = await self._answers(pending)
            reply = Message(
                "user",
                [
                    c.to_function_approval_response(answers.get(c.id or "") is True)
                    for c in pending
                ],
            )
            messages = (
                [reply]
                if run_session is not None
                else [*messages, *response.messages, reply]
            )
        final = _combine(parts)
        # DU-13: replaced whole, so once
        if session is not None and self.sessions is not None:
            stored = session

            async def store() -> None:
                await self.sessions.set(stored.session_id, stored)

            await DBOS.run_step_async({"name": SESSION_STEP}, store)
        return {
            "response": final.to_dict(),
            "session": session.to_dict() if session is not None else None,
        }

    async def _once(
        self,
        messages: list[Message],
        session: AgentSession | None,
        steps: RunSteps,
        request: dict[str, Any],
        part: int,
    ) -> AgentResponse:
        agent_id = request["agent_id"]
        # enqueued by a client: the first executor's agent id, recorded (DU-8)
        if agent_id is None:
            request["agent_id"] = agent_id = await recorded(
                lambda: getattr(self.agent, "id", None)
            )
        with _keyed(self.agent, session, f"{steps.workflow_id}:{part}"):  # DU-18
            return await self._run_agent(messages, session, steps, request, agent_id)

    async def _run_agent(
        self,
        messages: list[Message],
        session: AgentSession | None,
        steps: RunSteps,
        request: dict[str, Any],
        agent_id: Any,
    ) -> AgentResponse:
        run = self.agent.run(
            messages,
            stream=request["stream"],
            session=session,
            options=request["options"] or None,
            middleware=[DurableChat(steps), DurableTool(steps)],
            function_invocation_kwargs=request["function_invocation_kwargs"] or None,
            client_kwargs=request["client_kwargs"] or None,
        )
        if not request["stream"]:
            response: AgentResponse = await run
        else:
            async for update in run:
                if agent_id is not None:
                    update.agent_id = agent_id
                consumer = _CONSUMERS.get(steps.workflow_id)
                if consumer is not None:
                    consumer.push(update)
            response = await run.get_final_response()
        if agent_id is not None:
            # DU-8: the id of the agent that started the run
            response.agent_id = agent_id
        return response

    async def _answers(self, pending: list[Content]) -> dict[str, bool]:
        """Publish the pause's requests and wait for an answer to them (DU-11).

        The pause's identity is the call ids of its requests: a message that
        names no call of this pause, or a call of no request of it (a copy of an
        earlier answer delivered twice, a stray or malformed message) is logged
        and ignored, and the wait goes on. ``approval_timeout`` is a deadline
        from the start of the pause: the start and each ignored message's time
        are recorded steps, so ignored messages do not restart it and a replay
        waits for the same remaining time.
        """
        await DBOS.set_event_async(APPROVALS_EVENT, [c.to_dict() for c in pending])
        ids = {c.id or "" for c in pending}
        deadline: float | None = None
        if self.approval_timeout is not None:
            started = await recorded(time.time)
            deadline = started + self.approval_timeout
        left = self.approval_timeout
        answers: dict[str, bool] = {}
        while left is None or left > 0:
            wait = _WAIT_SLICE if left is None else min(left, _WAIT_SLICE)
            message = await DBOS.recv_async(APPROVAL_TOPIC, timeout_seconds=wait)
            named = _named_calls(message)
            if named is not None and named and set(named) <= ids:
                answers = named
                break
            # the cancel wake-up (DU-12) is expected, not a stray answer
            wake = isinstance(message, dict) and message.get("cancelled") is True
            if message is not None and not wake:
                _LOG.warning(
                    "durable run %s: ignored an approval message that does not "
                    "answer the pending requests %s: %r",
                    DBOS.workflow_id,
                    sorted(ids),
                    message,
                )
            if deadline is not None:
                left = deadline - await recorded(time.time)
        await DBOS.set_event_async(APPROVALS_EVENT, [])
        return answers


def _paused(session: AgentSession) -> tuple[str, list[str]] | None:
    """HS-190: the waiting durable run the session records, and its request ids."""
    record = session.state.get(PAUSED_KEY)
    if not isinstance(record, Mapping):
        return None
    wid, requests = record.get("workflow_id"), record.get("requests")
    if not isinstance(wid, str) or not isinstance(requests, list):
        return None
    return wid, [str(r) for r in requests]


def _approval_answers(messages: list[Message]) -> dict[str, bool] | None:
    """HS-190: ``{request id: approved}`` when the messages hold approval responses
    (LP-14); None when they hold none. Approval responses next to anything else
    are a ValueError: a waiting run takes only its answers."""
    contents = [c for m in messages for c in m.contents]
    answers = {
        c.id or "": c.approved is True
        for c in contents
        if c.type == "function_approval_response"
    }
    if not answers:
        return None
    if len(answers) != len(contents) or any(m.role != "user" for m in messages):
        raise ValueError(
            "approval answers to a waiting durable run come alone, in user "
            "messages: the run's other inputs were recorded when it started"
        )
    return answers


async def _next_pause(workflow_id: str, answered: set[str]) -> dict[str, Any]:
    """HS-190: the first pause of the run whose requests are none of ``answered``
    (the pause just answered stays published until the run pauses again)."""
    while True:
        data = await DBOS.get_event_async(workflow_id, PAUSE_EVENT, _PAUSE_POLL)
        if isinstance(data, dict) and not set(data.get("requests") or ()) & answered:
            return data
        if data is not None:
            await asyncio.sleep(_PAUSE_POLL)


def _restore_pause(
    workflow_id: str, pause: Mapping[str, Any], session: AgentSession
) -> AgentResponse:
    """HS-190: the response so far; the session takes the run's state at the pause and
    records the run that waits."""
    response = _restore(pause, session)
    session.state[PAUSED_KEY] = {
        "workflow_id": workflow_id,
        "requests": list(pause["requests"]),
    }
    return response


def _named_calls(message: Any) -> dict[str, bool] | None:
    """The ``{call_id: approved}`` an approval message carries, or None when it
    is not an approval message."""
    if not isinstance(message, dict):
        return None
    approvals = message.get("approvals")
    if not isinstance(approvals, dict):
        return None
    return {str(k): v is True for k, v in approvals.items()}


# -- from any process -----------------------------------------------------------------------------


async def approve(
    workflow_id: str, approvals: Mapping[str, bool], *, client: DBOSClient | None = None
) -> None:
    """Answer the approval requests a durable run is paused on.

    ``approvals`` maps the call id of each request (see ``pending_approvals``)
    to True (run the call) or False (reject it); a request of the pause not
    named is rejected. The answer is a DBOS message to the run; the run takes it
    only when every call it names is a request of its current pause, so a
    repeated or stale answer never answers a later pause (DU-11). ``client`` is
    a ``dbos.DBOSClient`` for a process where DBOS is not launched.
    """
    message = {"approvals": {str(k): v is True for k, v in approvals.items()}}
    if client is None:
        await DBOS.send_async(workflow_id, message, APPROVAL_TOPIC)
    else:
        await client.send_async(workflow_id, message, APPROVAL_TOPIC)


async def pending_approvals(
    workflow_id: str, *, client: DBOSClient | None = None, wait_seconds: float = 60.0
) -> list[Content]:
    """The approval requests the durable run ``workflow_id`` is paused on.

    Each is a ``function_approval_request`` content; answer them with ``approve``
    by their ``id``. Waits up to ``wait_seconds`` for the run to publish them and
    gives an empty list when the run is not paused. ``client`` is a
    ``dbos.DBOSClient(system_database_url=...)`` for a process where DBOS is not
    launched (DU-11).
    """
    if client is None:
        data = await DBOS.get_event_async(workflow_id, APPROVALS_EVENT, wait_seconds)
    else:
        data = await client.get_event_async(workflow_id, APPROVALS_EVENT, wait_seconds)
    return [Content.from_dict(item) for item in data or []]


async def cancel(workflow_id: str, *, client: DBOSClient | None = None) -> None:
    """Cancel the durable run ``workflow_id`` from any process, waking it at once
    if it waits for an approval; ``client`` as for ``approve`` (DU-12)."""
    wake = {"cancelled": True}
    if client is None:
        await DBOS.cancel_workflow_async(workflow_id)
        await DBOS.send_async(workflow_id, wake, APPROVAL_TOPIC)
    else:
        await client.cancel_workflow_async(workflow_id)
        await client.send_async(workflow_id, wake, APPROVAL_TOPIC)


async def result(
    workflow_id: str,
    *,
    session: AgentSession | None = None,
    client: DBOSClient | None = None,
) -> AgentResponse:
    """Wait for the durable run ``workflow_id`` to finish and return its response,
    from any process; ``session`` receives the run's new state. ``client`` as for
    ``approve`` (DU-13, DU-14)."""
    if client is None:
        handle: Any = await DBOS.retrieve_workflow_async(workflow_id)
    else:
        handle = await client.retrieve_workflow_async(workflow_id)
    return _restore(await handle.get_result(), session)


async def enqueue(
    client: DBOSClient,
    name: str,
    queue_name: str,
    messages: Any = None,
    *,
    workflow_id: str | None = None,
    session: AgentSession | None = None,
    options: Mapping[str, Any] | None = None,
) -> str:
    """Put a run of the `DurableAgent` called ``name`` on the queue ``queue_name``
    from a process that has only a ``dbos.DBOSClient`` (DBOS not launched); returns
    its workflow id (DU-14)."""
    wid = workflow_id or str(uuid.uuid4())
    request = {
        "messages": [m.to_dict() for m in normalize_messages(messages)],
        "stream": False,
        "session": session.to_dict() if session is not None else None,
        "options": dict(options) if options else {},
        "function_invocation_kwargs": {},
        "client_kwargs": {},
        "agent_id": None,
    }
    await client.enqueue_async(
        {
            "queue_name": queue_name,
            "workflow_name": workflow_name(name),
            "workflow_id": wid,
        },
        request,
    )
    return wid


async def recover(executor_ids: list[str]) -> list[str]:
    """Take over the unfinished runs of the given (dead) DBOS executors and finish
    them in this process; returns their workflow ids (DU-14)."""
    handles = await asyncio.to_thread(DBOS._recover_pending_workflows, executor_ids)
    return [h.get_workflow_id() for h in handles]
