"""The function-invocation loop: one driver for both modes (spec/loop.md).

Rules
-----
1. The driver decides nothing: where a request starts and which step follows an outcome
   come from `minagent._loop_table`; the driver runs the step the table names and
   records the answer.
2. The transcript (`minagent._transcript.Transcript`) is the only writer of the
   conversation; the loop appends through it.
3. Both modes run the same steps; streaming yields every update as it is produced,
   non-streaming drains the same generator (LP-2).

Theory of operation
-------------------
One `ToolLoop` serves one ``get_response`` call: the transcript, the counters (model
calls, calls made, failing batches in a row), the steps taken, and the call runner.
``drive()`` is an async generator: it looks the step up in ``STEPS`` and runs it, except
the model call, whose stream it lends to its reader (`Handoff`, ST-51), which reads it
in place. A step that produces its updates all at once (a resumed batch, a batch, a
pause) returns them with its outcome.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Awaitable,
    Callable,
    Sequence,
)
from dataclasses import replace
from typing import Any, Protocol

from . import _observe
from ._calls import CallRunner
from ._exceptions import ContentError
from ._fold import Fold
from ._loop_table import (
    NEXT_STEP,
    Outcome,
    Step,
    classify_batch,
    classify_response,
    limit_reached,
    next_step,
    start,
)
from ._middleware import ChatContext, MiddlewareFn, run_pipeline
from ._responses import ChatResponse, ChatResponseUpdate
from ._stream import Handoff, ResponseStream
from ._tools import FunctionInvocationConfiguration
from ._toolset import ToolSet, tool_map
from ._transcript import Transcript, approval_record, hosted, record_requests
from ._types import Content, Message, _message
from ._wire import UsageDetails, add_usage

__all__ = [
    "LIMIT_FALLBACK_TEXT",
    "NEXT_STEP",
    "PENDING_KEY",
    "Inbox",
    "Outcome",
    "Provider",
    "Step",
    "ToolLoop",
    "call_model",
]


class Provider(Protocol):
    """What the loop calls: a client's two provider hooks (`BaseChatClient` has them; a
    provider implements them, or upstream's single hook that the client adapts, UP-2).
    `call_model` is the one place they are called."""

    def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> Awaitable[ChatResponse]: ...

    def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterable[ChatResponseUpdate]: ...


# the logger of the client and its loop (OB-15)
logger = logging.getLogger("minagent.client")
DEBUG = logging.DEBUG

LIMIT_FALLBACK_TEXT = (
    "Function invocation limit reached before a final answer could be produced."
)
REJECTED_TEXT = "Error: Tool call invocation was rejected by user."
_NO_TOOLS = ToolSet.of(())
NOT_EXECUTED_TEXT = "Error: Function call limit reached; this call was not executed."


PENDING_KEY = "message_injection.pending_messages"
"""LP-32: where a session keeps the messages waiting for its next model call (upstream's key)."""
_SESSION_INBOXES = threading.Lock()


class Inbox:
    """A steering inbox: messages put here join the running conversation (design
    decision 3).

    ``put`` is safe from any task or OS thread. The loop drains the inbox before every
    model call; messages still here when the run ends stay here (LP-16).
    ``Inbox(session)`` keeps its messages in the session's state,
    ``state[PENDING_KEY]``, so they last as the session does (LP-32).
    """

    __slots__ = ("_lock", "_messages", "_session")

    def __init__(self, session: Any = None) -> None:
        self._messages: deque[Message] = deque()
        self._session = session
        self._lock = threading.Lock() if session is None else _SESSION_INBOXES

    def _queue(self) -> deque[Message] | list[Message]:
        state = self._session.state if self._session is not None else None
        return self._messages if state is None else state.setdefault(PENDING_KEY, [])

    def put(self, message: Message | str) -> None:
        if isinstance(message, str):
            message = Message("user", [message])
        elif not isinstance(message, Message):
            raise ContentError(
                f"Inbox.put takes a Message or a str, got {type(message).__name__}"
            )
        with self._lock:
            self._queue().append(message)

    def drain(self) -> list[Message]:
        with self._lock:
            if self._session is not None and not self._session.state.get(PENDING_KEY):
                return []
            queue = self._queue()
            drained = list(queue)
            queue.clear()
        return drained

    def __len__(self) -> int:
        if self._session is not None:
            return len(self._session.state.get(PENDING_KEY) or ())
        return len(self._messages)


class ToolLoop:
    """The state of one ``get_response`` call (see the module docstring)."""

    def __init__(
        self,
        client: Provider,
        messages: Sequence[Message],
        options: dict[str, Any],
        *,
        stream: bool,
        chat_middleware: Sequence[MiddlewareFn],
        function_middleware: Sequence[MiddlewareFn],
        config: FunctionInvocationConfiguration,
        inbox: Inbox | None,
        function_kwargs: dict[str, Any],
        client_kwargs: dict[str, Any],
        response_format: Any = None,
        session: Any = None,
    ) -> None:
        self.client = client
        # SO-9: decided once, by the client; read in final_response
        self.response_format = response_format
        self.transcript = Transcript(messages, session)
        self.options = options
        # the run's tool_choice mode (LP-7, LP-10): "auto" or {"mode": "auto"}
        choice = options.get("tool_choice")
        self.choice: str | None = (
            choice
            if type(choice) is str or not isinstance(choice, dict)
            else choice.get("mode")
        )
        self.choice = self.choice if isinstance(self.choice, str) else None
        self.stream = stream
        self.chat_middleware = chat_middleware
        self.config = config
        self.session = session
        # LP-32
        self.inbox = (
            inbox
            if inbox is not None or not hasattr(session, "state")
            else Inbox(session)
        )
        # FunctionInvocationContext.kwargs (LP-25)
        self.function_kwargs = function_kwargs
        # ChatContext.kwargs and the provider call (LP-25)
        self.client_kwargs = client_kwargs
        self.responses: list[ChatResponse] = []
        self.usage: UsageDetails | None = None
        self.model_calls = 0
        self.calls_made = 0
        self.errors_in_a_row = 0
        # this model call is the final one, with tool_choice "none"
        self.last_call = False
        self.calls: Sequence[Content] = ()  # the calls the next step acts on
        # the calls of the last recorded response, to act on (LP-4)
        self.asked: list[Content] = []
        # every (outcome, next step) of the run, in order
        self.steps: list[tuple[Outcome, Step]] = []
        tools = options.get("tools")
        # TL-12: normalised at the run's entry, read here
        toolset = ToolSet.of(tools) if tools else _NO_TOOLS
        if toolset:
            options["tools"] = toolset
        found = (
            tool_map(toolset, config.additional_tools)
            if toolset or config.additional_tools
            else {}
        )
        # LP-33: what a tool's add_tools / remove_tools change
        self.live_tools = list(toolset)
        # the runner's, made on first use
        self._tools_found, self._function_middleware = found, function_middleware
        # LP-13: the tools whose calls wait for approval
        self.approval_names = toolset.approval_names
        self.debug = logger.isEnabledFor(DEBUG)  # OB-15: asked once per request
        # OB-2: the wrap points, read once per request
        self.observer = observer = _observe.OBSERVER
        # OB-11: the hooks an observer has, None for the base class's, which do
        # nothing (LP-35: not called); found once per installed observer
        hooks = _HOOKS if _HOOKS[0] is observer else _observer_hooks(observer)
        self.on_turn, self.on_step = hooks[1], hooks[2]
        # OB-2: the base class's wrap is the leaf itself
        self.call_model = call_model if hooks[3] else observer.model_call(call_model)
        if chat_middleware:  # OB-31
            self.chat_middleware = observer.middleware("chat", chat_middleware)

    @functools.cached_property
    def runner(self) -> CallRunner:
        """The call runner, made for the first batch: a run that calls no tool never
        makes one."""
        found, middleware = self._tools_found, self._function_middleware
        return CallRunner(
            found,
            self.config,
            middleware,
            self.function_kwargs,
            self.live_tools,
            self.session,
        )

    # -- the driver -------------------------------------------------------------------------

    async def drive(self) -> AsyncGenerator[Any, None]:
        """Run the steps the table names until one finishes (LP-2): the whole control
        flow."""
        # non-streaming runs the same steps and yields nothing (LP-2)
        stream = self.stream
        step = start(self.transcript.resuming)
        while step is not Step.FINISH:
            if step is Step.CALL_MODEL or step is Step.LAST_CALL:
                last = step is Step.LAST_CALL
                if self.inbox is not None:
                    for message in self._drain_inbox():
                        if stream:
                            yield _as_update(message)
                no_tools = last or self.choice == "none"
                result = self._model_result(last)
                # (a stream opens on its first pull) MW-7: None is empty
                if not isinstance(result, ResponseStream):
                    result = (
                        ChatResponse() if (result := await result) is None else result
                    )
                # streaming: its reader relays each update as it comes (LP-2)
                if isinstance(result, ResponseStream):
                    model_stream = result
                    try:
                        # ST-51: read in place
                        yield Handoff(
                            model_stream, _without_calls if no_tools else None
                        )
                        result = await model_stream.get_final_response()
                    finally:  # LP-22: the model's stream is closed on early exit too
                        await model_stream.aclose()
                fallback = self._record(result, no_tools)
                if fallback is not None and stream:
                    yield _as_update(fallback)
                outcome, self.calls = classify_response(
                    self.asked,
                    enabled=self.config.enabled,
                    last=last,
                    steered=self.inbox is not None and len(self.inbox) > 0,
                    approval_names=self.approval_names,
                )
            else:
                updates, done = await STEPS[step](self)
                if stream:
                    for update in updates:
                        yield update
                if done is None:  # the pause ends the request
                    return
                outcome = done
            # the table's answer (LP-T): recorded in ``steps`` for tracing and tests
            step = next_step(outcome, self.config, self.model_calls)
            self.steps.append((outcome, step))
            if self.on_step is not None:
                # OB-11 (`_value_`: no descriptor call per step)
                self.on_step(outcome._value_, step._value_)

    def final_response(self) -> ChatResponse:
        """The run's response: every new message, the summed usage, and of each
        response-level field the last model response's value that is not None (LP-2)."""
        response = ChatResponse(self.transcript.new, usage_details=self.usage)
        stopped = (
            self.errors_in_a_row
            and self.errors_in_a_row >= self.config.max_consecutive_errors_per_request
        )
        if self.response_format is not None:
            # SO-9: `value` reads the run's format
            response._format = self.response_format
        for r in self.responses:
            if r.response_id is not None:
                response.response_id = r.response_id
            if r.conversation_id is not None:
                response.conversation_id = r.conversation_id
            if r.model is not None:
                response.model = r.model
            if r.created_at is not None:
                response.created_at = r.created_at
            if r.finish_reason is not None:
                response.finish_reason = r.finish_reason
            if r.additional_properties:
                response.additional_properties.update(r.additional_properties)
            # UP-5: of the last model response
            response.continuation_token = r.continuation_token
        # LP-8: a loop the error limit stopped gives no conversation to continue
        if stopped:
            response.conversation_id = None
        return response

    # -- step: call the model ----------------------------------------------------------------

    def _model_result(self, last: bool) -> Any:
        """One model call through the chat middleware pipeline: an awaitable of a
        ChatResponse (or of a stream of one); with no chat middleware the bare operation
        (MW-4): when streaming, the model's stream itself."""
        self.last_call = last
        self.model_calls += 1
        # LP-35: the run's options as they are, unless this call changes them; the
        # run replaces, never edits, a dict it has sent (LP-19, LP-33)
        options = self.options if not last else {**self.options, "tool_choice": "none"}
        if self.on_turn is not None:  # OB-11
            self.on_turn(self.model_calls, options.get("tool_choice"), last)
        if not self.chat_middleware:  # MW-4: the bare operation, no context to build
            messages = self.transcript.outgoing()
            # LP-28, HI-1: never a call without its result, or an orphan
            if "conversation_id" not in options:
                messages = self.transcript.sendable(messages, as_recorded=True)
            return self.call_model(
                self.client, messages, options, self.client_kwargs, self.stream
            )
        # LP-3: the containers middleware is likely to edit are this call's
        options = dict(options)
        for key, value in options.items():
            if isinstance(value, list | dict):
                options[key] = value.copy()
        context = ChatContext(
            self.client,
            self.transcript.outgoing(),
            options,
            stream=self.stream,
            kwargs=dict(self.client_kwargs),
            function_invocation_kwargs=dict(self.function_kwargs),
            # LP-3: middleware edits affect this call only (copied on first access)
            copy_messages=True,
            session=self.session,
        )
        # awaited by the driver
        return run_pipeline(self.chat_middleware, context, self._leaf)

    async def _leaf(self, context: ChatContext) -> Any:
        """The chat pipeline's operation: the provider call (a stream of it when
        streaming)."""
        messages, options = context.outgoing_messages(), context.options
        # LP-28, HI-1: never a call without its result, or an orphan
        if "conversation_id" not in options:
            messages = self.transcript.sendable(
                messages, as_recorded=context.messages_untouched
            )
        result = self.call_model(
            self.client, messages, options, context.kwargs, context.stream
        )
        return result if context.stream else await result

    def _record(self, response: Any, no_tools: bool) -> Message | None:
        """Take a model response into the transcript; return the limit's fallback
        message, if added."""
        if not isinstance(response, ChatResponse):
            raise TypeError(
                f"a model call must produce a ChatResponse, got {type(response).__name__}"
            )
        fallback = None
        if no_tools:
            response = _drop_calls(response)  # LP-9
            if self.last_call and not _visible(response):
                fallback = Message("assistant", [LIMIT_FALLBACK_TEXT])
                response = replace(response, messages=[*response.messages, fallback])
        response = self.transcript.take(response)  # LP-27, LP-26, LP-28
        self.asked = _calls_to_act_on(response)
        self.responses.append(response)
        # OB-15: counts and names only, never contents or keyword arguments
        if self.debug:
            logger.debug(
                "model call %d (model=%s, tool_choice=%s, stream=%s): finish_reason=%s, %d message(s)",
                self.model_calls,
                self.options.get("model"),
                "none" if self.last_call else self.choice,
                self.stream,
                response.finish_reason,
                len(response.messages),
            )
        if response.usage_details is not None:
            self.usage = add_usage(self.usage, response.usage_details)
        conversation_id = response.conversation_id or self.options.get(
            "conversation_id"
        )
        if (
            response.conversation_id
            and self.options.get("conversation_id") != response.conversation_id
        ):
            # LP-19 (a new dict: the one sent stays as it was, LP-35)
            self.options = {
                **self.options,
                "conversation_id": response.conversation_id,
            }
        if conversation_id:
            self.transcript.mark_sent()
        return fallback

    def _drain_inbox(self) -> list[Message]:
        drained = self.inbox.drain() if self.inbox is not None else []
        if drained:
            self.observer.injected(len(drained))  # OB-11
            self.transcript.append_foreign(drained)
        return drained

    # -- steps: resume, pause ------------------------------------------------------------------

    async def _resume(self) -> tuple[list[ChatResponseUpdate], Outcome]:
        """Run the batches that waited for approval, each right after its calls (LP-14).
        The step's outcome is the last batch's (or ran / limited when nothing was
        waiting)."""
        updates: list[ChatResponseUpdate] = []
        record = (
            None
            if self.config.disable_approval_response_binding
            else approval_record(self.session)
        )
        for waiting in self.transcript.resume(record, self.approval_names):
            with self.transcript.after(waiting.holder):
                produced, outcome = await self._run_batch(
                    waiting.calls,
                    runnable=waiting.runnable,
                    rejected=waiting.rejected,
                    forced=False,
                )
            updates.extend(produced)
            if outcome in (Outcome.TERMINATED, Outcome.PENDING):
                return updates, outcome
        limited = limit_reached(self.config, self.calls_made, self.errors_in_a_row)
        return updates, Outcome.LIMITED if limited else Outcome.RAN

    async def _pause(self) -> tuple[list[ChatResponseUpdate], None]:
        """Nothing in the batch runs; each call needing approval gets a request
        (LP-13)."""
        calls = self.calls
        requests = [
            Content.from_function_approval_request(c.call_id or "", c)
            for c in calls
            if getattr(self.runner.tool(c), "approval_mode", None) == "always_require"
        ]
        # LP-34: what an approval may answer, and the calls that ride along with it
        asked = {r.id for r in requests}
        record_requests(
            approval_record(self.session),
            requests,
            [c for c in calls if c.call_id not in asked],
        )
        holder = self.transcript.holding(calls[0], new_only=True)
        self.transcript.replace(
            holder, holder.with_contents([*holder.contents, *requests])
        )
        return [ChatResponseUpdate(requests, "assistant")], None

    # -- step: run a batch -------------------------------------------------------------------

    async def _run_batch(
        self,
        calls: Sequence[Content] | None = None,
        *,
        runnable: Sequence[Content] | None = None,
        rejected: set[str | None] | None = None,
        forced: bool | None = None,
    ) -> tuple[list[ChatResponseUpdate], Outcome]:
        """Run the calls, append one tool message in call order and what came in
        meanwhile, classify; ``calls`` None: the calls the table named."""
        if calls is None:
            calls = self.calls
        transcript = self.transcript
        # every: all, in order
        every, runnable = (
            runnable is None,
            list(calls if runnable is None else runnable),
        )
        budget = self.config.max_function_calls
        over: list[Content] = []
        if budget is not None:
            left = max(budget - self.calls_made, 0)
            runnable, over = runnable[:left], runnable[left:]
        # SE-53: the tools are lent copies of what the request was given
        batch = await self.runner.run(runnable, transcript.messages, transcript.lend)
        results: list[Content] = []
        pending: list[Content] = []
        terminated = False
        # the common batch: in call order
        ordered = batch.outcomes if every and not over else None
        by_id = (
            {id(c): o for c, o in zip(runnable, batch.outcomes, strict=True)}
            if ordered is None
            else {}
        )
        for at, call in enumerate(calls):
            if (
                outcome := ordered[at] if ordered is not None else by_id.get(id(call))
            ) is not None:
                result, stop = outcome
                terminated = terminated or stop
                if result is None:
                    pending.append(call)
                else:
                    results.append(result)
            elif rejected and call.call_id in rejected:
                results.append(
                    Content.from_function_result(
                        call.call_id or "", REJECTED_TEXT, exception="rejected"
                    )
                )
            elif any(call is o for o in over):
                results.append(
                    Content.from_function_result(
                        call.call_id or "", NOT_EXECUTED_TEXT, exception="limit"
                    )
                )
        self.calls_made += len(runnable)
        if self.live_tools != list(self.options.get("tools") or ()):
            self._retool()
        added: list[Message] = []
        if results:
            tool_message = _message("tool", results)
            transcript.append(tool_message)
            added.append(tool_message)
            failed = (
                results[0].exception
                if len(results) == 1
                else any(r.exception for r in results)
            )
            self.errors_in_a_row = self.errors_in_a_row + 1 if failed else 0
        if batch.arrived:
            # LP-15: after the results, never between a call and its result
            transcript.append_foreign(batch.arrived)
            added.extend(batch.arrived)
        updates = [_as_update(message) for message in added] if self.stream else []
        if pending:
            holder = transcript.holding(pending[0])
            marked = [
                replace(c, user_input_request=True)
                if any(c is p for p in pending)
                else c
                for c in holder.contents
            ]
            marked.extend(batch.surfaced)  # requests of sub-agents run as tools (AG-8)
            # LP-34: asked by the run
            record_requests(approval_record(self.session), batch.surfaced)
            transcript.replace(holder, holder.with_contents(marked))
        forced = self.choice == "required" if forced is None else forced
        limited = limit_reached(self.config, self.calls_made, self.errors_in_a_row)
        return updates, classify_batch(
            terminated=terminated, pending=bool(pending), forced=forced, limited=limited
        )

    def _retool(self) -> None:
        """LP-33: a tool changed the run's tools; the next model call and batch use the
        new list."""
        toolset = ToolSet.of(self.live_tools)
        # a new dict: the one sent stays as it was (LP-35)
        self.options = {**self.options, "tools": toolset}
        self.runner.tools = tool_map(toolset, self.config.additional_tools)
        self.approval_names = toolset.approval_names


# The steps that produce their updates all at once (the model call, whose stream the
# driver lends, is its own).
STEPS: dict[
    Step,
    Callable[[ToolLoop], Awaitable[tuple[list[ChatResponseUpdate], Outcome | None]]],
] = {
    Step.RESUME: ToolLoop._resume,
    Step.RUN_BATCH: ToolLoop._run_batch,
    Step.PAUSE: ToolLoop._pause,
}


def call_model(
    client: Provider,
    messages: list[Message],
    options: dict[str, Any],
    kwargs: dict[str, Any],
    stream: bool,
) -> Any:
    """The model-call leaf, the one place the provider is called: an awaitable
    `ChatResponse`, or when streaming a `ResponseStream` that folds the provider's
    updates as they pass (ST-14)."""
    if stream:
        updates = client._inner_get_streaming_response(
            messages=messages, options=options, **kwargs
        )
        return ResponseStream.over(updates, Fold(ChatResponse()))
    return client._inner_get_response(messages=messages, options=options, **kwargs)


# of the last observer a loop used: (the observer, its model_turn hook, its step hook,
# whether its model_call is the base class's)
_HOOKS: tuple[Any, Any, Any, bool] = (None, None, None, False)


def _observer_hooks(observer: _observe.Observer) -> tuple[Any, Any, Any, bool]:
    """``observer``'s model_turn and step hooks, each None when it is the base class's,
    which does nothing, and whether its model_call wrap is the base class's, which
    returns the leaf; kept for the next loop."""
    global _HOOKS

    def hook(bound: Callable[..., Any], base: Callable[..., Any]) -> Any:
        return None if getattr(bound, "__func__", None) is base else bound

    _HOOKS = (
        observer,
        hook(observer.model_turn, _observe.Observer.model_turn),
        hook(observer.step, _observe.Observer.step),
        hook(observer.model_call, _observe.Observer.model_call) is None,
    )
    return _HOOKS


def _calls_to_act_on(response: ChatResponse) -> list[Content]:
    """LP-4: the response's calls, neither informational nor answered in the response,
    once per id."""
    calls: dict[str | None, Content] = {}
    answered: set[str | None] = set()
    for m in response.messages:
        for c in m.contents:
            if c.type == "function_call":
                if not c.informational_only:
                    calls.setdefault(c.call_id, c)
            elif c.type == "function_result":
                answered.add(c.call_id)
    if not answered:
        return list(calls.values())
    return [c for call_id, c in calls.items() if call_id not in answered]


def _as_update(message: Message) -> ChatResponseUpdate:
    return ChatResponseUpdate(
        list(message.contents),
        message.role,
        author_name=message.author_name,
        message_id=message.message_id,
    )


def _is_call(c: Content) -> bool:
    """LP-9: what a call that must not run leaves behind: the call, or a request to
    approve it."""
    if c.type == "function_call":
        return not c.informational_only
    return c.type == "function_approval_request" and not hosted(c)


def _without_calls(update: ChatResponseUpdate) -> ChatResponseUpdate | None:
    """LP-9: the update without calls; an update left with nothing, no metadata either,
    is dropped."""
    if not any(_is_call(c) for c in update.contents):
        return update
    kept = [c for c in update.contents if not _is_call(c)]
    if (
        kept
        or update.additional_properties
        or any(v is not None for v in type(update)._scalar_values(update))
    ):
        return replace(update, contents=kept)
    return None


def _drop_calls(response: ChatResponse) -> ChatResponse:
    """tool_choice "none": calls the model emits anyway are dropped, not run (LP-9)."""
    if not any(_is_call(c) for m in response.messages for c in m.contents):
        return response
    messages = []
    for m in response.messages:
        kept = [c for c in m.contents if not _is_call(c)]
        if kept:
            messages.append(m.with_contents(kept))
    return replace(response, messages=messages)


def _visible(response: ChatResponse) -> bool:
    """LP-8: an answer the caller can read or act on: a text, a hosted approval request,
    ... (not a call, a result, reasoning or usage)."""
    hidden = ("function_call", "function_result", "text_reasoning", "usage")
    return any(
        c.type not in hidden and (c.type != "text" or c.text)
        for m in response.messages
        for c in m.contents
    )
