"""The function-invocation loop: outcomes, one table, one driver for both modes (spec/loop.md).

Theory of operation
-------------------
One `ToolLoop` object serves one ``get_response`` call. It owns the run's **transcript**: the
list of messages the next model call receives, which every ``FunctionInvocationContext.messages``
reads (design decision 2). Everything the run adds to the conversation — model responses, tool
results, injected messages — is appended to the transcript and to ``new_messages``, which becomes
the returned response (design decision 7).

The control flow is data. Each step ends in an `Outcome`; `NEXT_STEP` maps the outcome, and
whether the call budget of ``max_iterations`` has room for another tool round, to the next
`Step` (the table "The loop as a table" in spec/loop.md, which a test reads):

    step         what it does, in this order                                     outcomes
    resume       run the calls the caller approved or rejected (LP-14)           ran, limited, terminated,
                                                                                 pending
    call model   drain the inbox (LP-16); call the model through chat            answered, steered, calls,
                 middleware (LP-3); record the response (LP-9, LP-26, LP-27)     approval
    last call    the same with tool_choice "none" (LP-7, LP-8)                   answered
    run batch    run the calls (`_calls.CallRunner`); append ONE tool message    ran, limited, terminated,
                 in call order, then what the calls appended (LP-4, LP-15)       pending, forced
    pause        add the approval requests and end (LP-13)                       -
    finish       end                                                             -

`ToolLoop.drive()` is the only driver. It is an async generator: streaming yields every update as
it is produced (the model's updates, one tool update per batch, approval requests, injected
messages); non-streaming drains it. Both modes run the same steps, so they build the same final
response (LP-2).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from . import _observe
from ._calls import CallRunner, sendable_text, tool_map
from ._exceptions import ContentError
from ._history import repair_history
from ._middleware import ChatContext, MiddlewareFn, run_pipeline
from ._responses import ChatResponse, ChatResponseUpdate, Fold
from ._stream import ResponseStream
from ._tools import FunctionInvocationConfiguration, normalize_tools
from ._types import Content, Message, UsageDetails, _message, add_usage


class Provider(Protocol):
    """What the loop calls: a client's provider methods (`BaseChatClient` has them)."""

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse: ...

    def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterable[ChatResponseUpdate]: ...


__all__ = ["LIMIT_FALLBACK_TEXT", "NEXT_STEP", "Inbox", "Outcome", "Step", "ToolLoop"]

logger = logging.getLogger("minagent.client")  # the logger of floor 3, the client and its loop (OB-15)
DEBUG = logging.DEBUG

LIMIT_FALLBACK_TEXT = "Function invocation limit reached before a final answer could be produced."
REJECTED_TEXT = "Error: Tool call invocation was rejected by user."
NOT_EXECUTED_TEXT = "Error: Function call limit reached; this call was not executed."
_APPROVAL_KINDS = ("function_approval_request", "function_approval_response")
_PAIRED_KINDS = frozenset({"function_call", "function_result", *_APPROVAL_KINDS})


class Outcome(enum.Enum):
    """How a step ended (spec/loop.md, "The loop as a table")."""

    __hash__ = object.__hash__  # members are singletons: identity hashing, no Python frame per lookup

    ANSWERED = "answered"  # the model's response has no call to act on
    STEERED = "steered"  # ... but the inbox received messages while the model answered (LP-17)
    CALLS = "calls"  # the response has calls to run (LP-4)
    APPROVAL = "approval"  # a call needs the caller's approval (LP-13)
    RAN = "ran"  # the batch ran and nothing stops the loop
    LIMITED = "limited"  # the error or call limit is reached (LP-8)
    TERMINATED = "terminated"  # a call raised MiddlewareTermination (LP-20)
    PENDING = "pending"  # a declaration-only call reached the missing function (LP-11)
    FORCED = "forced"  # the batch was forced by tool_choice "required" (LP-10)


class Step(enum.Enum):
    __hash__ = object.__hash__
    CALL_MODEL = "call model"
    LAST_CALL = "last call"
    RUN_BATCH = "run batch"
    PAUSE = "pause"
    FINISH = "finish"


# (outcome, room for another tool round) -> the next step. The only place where the loop decides.
NEXT_STEP: dict[tuple[Outcome, bool], Step] = {
    (Outcome.ANSWERED, True): Step.FINISH,
    (Outcome.ANSWERED, False): Step.FINISH,
    (Outcome.STEERED, True): Step.CALL_MODEL,
    (Outcome.STEERED, False): Step.LAST_CALL,
    (Outcome.CALLS, True): Step.RUN_BATCH,
    (Outcome.CALLS, False): Step.RUN_BATCH,
    (Outcome.APPROVAL, True): Step.PAUSE,
    (Outcome.APPROVAL, False): Step.PAUSE,
    (Outcome.RAN, True): Step.CALL_MODEL,
    (Outcome.RAN, False): Step.LAST_CALL,
    (Outcome.LIMITED, True): Step.LAST_CALL,
    (Outcome.LIMITED, False): Step.LAST_CALL,
    (Outcome.TERMINATED, True): Step.FINISH,
    (Outcome.TERMINATED, False): Step.FINISH,
    (Outcome.PENDING, True): Step.FINISH,
    (Outcome.PENDING, False): Step.FINISH,
    (Outcome.FORCED, True): Step.FINISH,
    (Outcome.FORCED, False): Step.FINISH,
}


class Inbox:
    """A steering inbox: messages put here join the running conversation (design decision 3).

    ``put`` is safe from any task or OS thread. The loop drains the inbox before every model
    call; messages still here when the run ends stay here (LP-16).
    """

    __slots__ = ("_lock", "_messages")

    def __init__(self) -> None:
        self._messages: deque[Message] = deque()
        self._lock = threading.Lock()

    def put(self, message: Message | str) -> None:
        if isinstance(message, str):
            message = Message("user", [message])
        elif not isinstance(message, Message):
            raise ContentError(f"Inbox.put takes a Message or a str, got {type(message).__name__}")
        with self._lock:
            self._messages.append(message)

    def drain(self) -> list[Message]:
        with self._lock:
            drained = list(self._messages)
            self._messages.clear()
        return drained

    def __len__(self) -> int:
        return len(self._messages)


def tool_choice_mode(choice: Any) -> str | None:
    if isinstance(choice, dict):
        mode = choice.get("mode")
        return mode if isinstance(mode, str) else None
    return choice if isinstance(choice, str) else None


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
    ) -> None:
        self.client = client
        self.transcript: list[Message] = list(messages)
        self.new_messages: list[Message] = []
        self.options = options
        self.choice = tool_choice_mode(options.get("tool_choice"))  # the run's tool_choice mode (LP-7, LP-10)
        self.stream = stream
        self.chat_middleware = chat_middleware
        self.config = config
        self.inbox = inbox
        self.function_kwargs = function_kwargs  # FunctionInvocationContext.kwargs (LP-25)
        self.client_kwargs = client_kwargs  # ChatContext.kwargs and the provider call (LP-25)
        self.responses: list[ChatResponse] = []
        self.usage: UsageDetails | None = None
        self.sent = 0  # with a conversation_id, transcript[:sent] is already held by the service
        self.model_calls = 0
        self.calls_made = 0
        self.errors_in_a_row = 0
        self.last_call = False  # this model call is the final one, with tool_choice "none"
        self.calls: list[Content] = []  # the calls the last model step asks for
        self.asked: list[Content] = []  # the calls of the last recorded response, to act on (LP-4)
        # LP-28: the history is checked before a model call unless it is known valid: the loop's own
        # appends (a response's calls, then their results) keep a valid history valid, so only a
        # chat middleware's edits or a foreign message with calls or results make it unknown again.
        self.steps: list[tuple[Outcome, Step]] = []  # every (outcome, next step) of the run, in order
        self.call_ids: set[str | None] = set()  # LP-26: the call ids of the run so far
        self.resuming = False  # the given messages hold approval requests or answers (LP-14)
        paired = False  # the given messages hold calls, results or approvals: the history is checked
        for m in self.transcript:
            for c in m.contents:
                kind = c.type
                if kind == "function_call":
                    self.call_ids.add(c.call_id)
                    paired = True
                elif kind in _PAIRED_KINDS:
                    paired = True
                    self.resuming = self.resuming or kind in _APPROVAL_KINDS
        self.history_ok = not paired  # LP-28: a history without calls and results is valid (HI-1)
        tools = normalize_tools(options["tools"]) if options.get("tools") else []
        if tools:
            options["tools"] = tools
        found = tool_map(tools, config.additional_tools) if tools or config.additional_tools else {}
        self.runner = CallRunner(found, config, function_middleware, function_kwargs)
        self.approval_names = {  # LP-13: the tools whose calls wait for the caller's approval
            name for name, t in self.runner.tools.items() if getattr(t, "approval_mode", None) == "always_require"
        }
        self.debug = logger.isEnabledFor(DEBUG)  # OB-15: asked once per request
        self.observer = observer = _observe.OBSERVER  # OB-2: the wrap points, read once per request
        self.call_model = observer.model_call(call_model)

    # -- the driver -------------------------------------------------------------------------

    async def drive(self) -> AsyncGenerator[ChatResponseUpdate, None]:
        """Run the steps the table names until one finishes (LP-2): the whole control flow.

        Steps that produce updates all at once return them; only the model's stream is relayed
        update by update, here, so an update crosses one generator between provider and caller."""
        stream = self.stream  # non-streaming runs the same steps and yields nothing (LP-2)
        step = Step.CALL_MODEL
        if self.resuming:
            updates, outcome = await self._resume_approvals()
            for update in updates:
                yield update
            step = self._next(outcome)
        while step is not Step.FINISH:
            if step is Step.PAUSE:
                paused = self._request_approvals(self.calls)
                if stream:
                    yield paused
                return
            if step is Step.RUN_BATCH:
                updates, outcome = await self._run_batch(self.calls)
                for update in updates:
                    yield update
            else:  # call the model: drain the inbox, call, relay, record, classify
                last = step is Step.LAST_CALL
                if self.inbox is not None:
                    for message in self._drain_inbox():
                        if stream:
                            yield _as_update(message)
                no_tools = last or self.choice == "none"
                result = await self._model_result(last)
                if isinstance(result, ResponseStream):  # streaming: relay each update as it comes (LP-2)
                    model_stream, lent = result, result._lend()  # ST-16: read here, into the stream's fold
                    try:
                        if lent is None:
                            async for update in model_stream:
                                if no_tools and (update := _without_calls(update)) is None:  # type: ignore[assignment]
                                    continue
                                yield update
                        else:
                            provider_updates, record = lent
                            try:
                                async for update in provider_updates:
                                    record(update)
                                    if no_tools and (update := _without_calls(update)) is None:  # type: ignore[assignment]
                                        continue
                                    yield update
                            except Exception as exc:  # the provider's stream failed: so does the model's stream
                                await model_stream._fail(exc)
                                raise
                        result = await model_stream.get_final_response()
                    finally:  # LP-22: the model's stream is closed on early exit too
                        await model_stream.aclose()
                fallback = self._record(result, no_tools)
                if fallback is not None and self.stream:
                    yield _as_update(fallback)
                outcome = self._classify_response(last)
            step = self._next(outcome)

    def _next(self, outcome: Outcome) -> Step:
        """The table's answer (LP-T): recorded in ``steps`` for tracing and tests."""
        config = self.config  # room for another tool round: fewer than max_iterations model calls (LP-7)
        step = NEXT_STEP[outcome, config.enabled and self.model_calls < config.max_iterations]
        self.steps.append((outcome, step))
        self.observer.step(outcome.value, step.value)  # OB-11
        return step

    def final_response(self) -> ChatResponse:
        """The run's response: every new message, the summed usage, and of each response-level
        field the last model response's value that is not None (LP-2)."""
        response = ChatResponse(self.new_messages, usage_details=self.usage)
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
        return response

    # -- step: call the model ----------------------------------------------------------------

    def _classify_response(self, last: bool) -> Outcome:
        calls = self.asked if self.config.enabled and not last else []
        self.calls = calls
        if not calls:  # LP-1: with enabled=False the calls are returned unexecuted
            steered = not last and self.config.enabled and self.inbox is not None and len(self.inbox) > 0
            return Outcome.STEERED if steered else Outcome.ANSWERED
        if self._needs_approval(calls):
            return Outcome.APPROVAL
        return Outcome.CALLS

    def _model_result(self, last: bool) -> Awaitable[Any]:
        """One model call through the chat middleware pipeline: a ChatResponse, or a stream of one.

        With no chat middleware the pipeline is the bare operation (MW-4): nothing is routed
        around it, there is just nothing to run before it."""
        self.last_call = last
        self.model_calls += 1
        options = dict(self.options)
        if last:
            options["tool_choice"] = "none"
        self.observer.model_turn(self.model_calls, options.get("tool_choice"), last)  # OB-11
        client_kwargs, function_kwargs = self.client_kwargs, self.function_kwargs
        if self.chat_middleware:  # LP-3: the containers middleware is likely to edit are this call's own
            options.update({k: v.copy() for k, v in options.items() if isinstance(v, list | dict)})
            client_kwargs, function_kwargs = dict(client_kwargs), dict(function_kwargs)
        context = ChatContext(
            self.client,
            self.transcript[self.sent :],
            options,
            stream=self.stream,
            kwargs=client_kwargs,
            function_invocation_kwargs=function_kwargs,
        )
        context._copy_pending = True  # LP-3: middleware edits affect this call only (copied on first access)
        return run_pipeline(self.chat_middleware, context, self._leaf)  # awaited by the driver

    async def _leaf(self, context: ChatContext) -> Any:
        """The chat pipeline's operation: the provider call (a stream of it when streaming)."""
        messages, options = context._messages, context.options  # the outgoing messages, copied or not
        as_recorded = context._copy_pending  # no chat middleware looked at the messages: the transcript's
        if "conversation_id" not in options and not (self.history_ok and as_recorded):
            checked = repair_history(messages)  # LP-28, HI-1: never a call without its result, or an orphan
            self.history_ok = (
                as_recorded
                and len(checked) == len(messages)
                and all(a is b for a, b in zip(checked, messages, strict=True))
            )
            messages = checked
        result = self.call_model(self.client, messages, options, context.kwargs, context.stream)
        return result if context.stream else await result

    def _record(self, response: Any, no_tools: bool) -> Message | None:
        """Take a model response into the transcript; return the limit's fallback message, if added."""
        if not isinstance(response, ChatResponse):
            raise TypeError(f"a model call must produce a ChatResponse, got {type(response).__name__}")
        fallback = None
        if no_tools:
            response = _drop_calls(response)  # LP-9
            if self.last_call and not _visible(response):
                fallback = Message("assistant", [LIMIT_FALLBACK_TEXT])
                response = replace(response, messages=[*response.messages, fallback])
        response = _checked_response(response, self.call_ids)  # LP-27, LP-26
        calls: dict[str | None, Content] = {}
        answered: set[str | None] = set()
        for m in response.messages:
            for c in m.contents:
                if c.type == "function_call":
                    if not c.informational_only:
                        calls.setdefault(c.call_id, c)
                elif c.type == "function_result":
                    answered.add(c.call_id)
        if answered:
            self.history_ok = False  # results in a model's own response: check again (LP-28)
        # LP-4: the calls to act on, neither informational nor already answered in the response
        self.asked = [c for call_id, c in calls.items() if call_id not in answered] if calls else []
        self.responses.append(response)
        if self.debug:  # OB-15: counts and names only, never contents or keyword arguments
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
        self._append(*response.messages)
        conversation_id = response.conversation_id or self.options.get("conversation_id")
        if response.conversation_id:
            self.options["conversation_id"] = response.conversation_id  # LP-19
        if conversation_id:
            self.sent = len(self.transcript)
        return fallback

    def _append(self, *messages: Message) -> None:
        self.transcript.extend(messages)
        self.new_messages.extend(messages)

    def _replace(self, old: Message, new: Message) -> None:
        for messages in (self.transcript, self.new_messages):
            for i, m in enumerate(messages):
                if m is old:
                    messages[i] = new

    def _drain_inbox(self) -> list[Message]:
        drained = self.inbox.drain() if self.inbox is not None else []
        if drained:
            self.observer.injected(len(drained))  # OB-11
        self._append_foreign(drained)
        return drained

    def _append_foreign(self, messages: Sequence[Message]) -> None:
        """Messages the loop did not make (the inbox, a tool's or middleware's): a call or a result
        among them makes the history unknown again (LP-28)."""
        if any(c.type in _PAIRED_KINDS for m in messages for c in m.contents):
            self.history_ok = False
        self._append(*messages)

    def _limit_reached(self) -> bool:
        cfg = self.config
        if cfg.max_function_calls is not None and self.calls_made >= cfg.max_function_calls:
            return True
        return self.errors_in_a_row > 0 and self.errors_in_a_row >= cfg.max_consecutive_errors_per_request

    # -- approvals --------------------------------------------------------------------------

    def _needs_approval(self, calls: Sequence[Content]) -> bool:
        return bool(self.approval_names) and any(c.name in self.approval_names for c in calls)

    def _request_approvals(self, calls: Sequence[Content]) -> ChatResponseUpdate:
        """Pause: nothing in the batch runs; each call needing approval gets a request (LP-13)."""
        requests = [
            Content.from_function_approval_request(c.call_id or "", c)
            for c in calls
            if getattr(self.runner.tool(c), "approval_mode", None) == "always_require"
        ]
        holder = _message_holding(self.new_messages, calls[0])
        self._replace(holder, holder.with_contents([*holder.contents, *requests]))
        return ChatResponseUpdate(requests, "assistant")

    async def _resume_approvals(self) -> tuple[list[ChatResponseUpdate], Outcome]:
        """Answer approval requests from the conversation, then clean the transcript (LP-14).

        The step's outcome is the last batch's (or RAN / LIMITED when nothing was waiting)."""
        updates: list[ChatResponseUpdate] = []
        decisions = {
            c.id: bool(c.approved)
            for m in self.transcript
            for c in m.contents
            if c.type == "function_approval_response" and c.id is not None
        }
        answered = {c.call_id for m in self.transcript for c in m.contents if c.type == "function_result"}
        present = {c.call_id for m in self.transcript for c in m.contents if c.type == "function_call"}
        cleaned: list[Message] = []
        waiting: list[tuple[Message, list[Content], list[Content]]] = []
        for m in self.transcript:
            if not any(c.type in _APPROVAL_KINDS for c in m.contents):
                cleaned.append(m)
                continue
            kept = [c for c in m.contents if c.type not in _APPROVAL_KINDS]
            requests = [
                c
                for c in m.contents
                if c.type == "function_approval_request" and c.function_call and c.function_call.call_id not in answered
            ]
            for request in requests:  # LP-14: only the request came back (no thread): its call takes its place
                call = request.function_call
                if call is not None and call.call_id not in present:
                    kept.append(call)
                    present.add(call.call_id)
            if kept:
                m = m.with_contents(kept)
                cleaned.append(m)
            if requests:
                calls = [c for c in kept if c.type == "function_call" and c.call_id not in answered]
                waiting.append((m, calls, requests))
        self.transcript[:] = cleaned
        self.call_ids |= {c.call_id for m in cleaned for c in m.contents if c.type == "function_call"}
        for holder, calls, requests in waiting:
            approved = {r.function_call.call_id for r in requests if r.function_call and decisions.get(r.id or "")}
            needs = {r.function_call.call_id for r in requests if r.function_call}
            runnable = [c for c in calls if c.call_id not in needs or c.call_id in approved]
            rejected = {c.call_id for c in calls if c.call_id in needs and c.call_id not in approved}
            at = self.transcript.index(holder) + 1 if holder in self.transcript else len(self.transcript)
            self.sent = min(self.sent, at)
            tail = self.transcript[at:]
            del self.transcript[at:]
            produced, outcome = await self._run_batch(calls, runnable=runnable, rejected=rejected, forced=False)
            updates.extend(produced)
            self.transcript.extend(tail)
            if outcome in (Outcome.TERMINATED, Outcome.PENDING):
                return updates, outcome
        return updates, Outcome.LIMITED if self._limit_reached() else Outcome.RAN

    # -- step: run a batch -------------------------------------------------------------------

    async def _run_batch(
        self,
        calls: Sequence[Content],
        *,
        runnable: Sequence[Content] | None = None,
        rejected: set[str | None] | None = None,
        forced: bool | None = None,
    ) -> tuple[list[ChatResponseUpdate], Outcome]:
        """Run the calls, append one tool message in call order and what came in meanwhile, classify."""
        runnable = list(calls if runnable is None else runnable)
        budget = self.config.max_function_calls
        over: list[Content] = []
        if budget is not None:
            left = max(budget - self.calls_made, 0)
            runnable, over = runnable[:left], runnable[left:]
        batch = await self.runner.run(runnable, self.transcript)
        results: list[Content] = []
        pending: list[Content] = []
        terminated = False
        by_id = {id(call): outcome for call, outcome in zip(runnable, batch.outcomes, strict=True)}
        for call in calls:
            if id(call) in by_id:
                result, stop = by_id[id(call)]
                terminated = terminated or stop
                if result is None:
                    pending.append(call)
                else:
                    results.append(result)
            elif rejected and call.call_id in rejected:
                results.append(Content.from_function_result(call.call_id or "", REJECTED_TEXT, exception="rejected"))
            elif any(call is o for o in over):
                results.append(Content.from_function_result(call.call_id or "", NOT_EXECUTED_TEXT, exception="limit"))
        self.calls_made += len(runnable)
        added: list[Message] = []
        if results:
            tool_message = _message("tool", results)
            self._append(tool_message)
            added.append(tool_message)
            self.errors_in_a_row = self.errors_in_a_row + 1 if any(r.exception for r in results) else 0
        if batch.arrived:
            self._append_foreign(batch.arrived)  # LP-15: after the results, never between a call and its result
            added.extend(batch.arrived)
        updates = [_as_update(message) for message in added] if self.stream else []
        if pending:
            self._mark_pending(pending, batch.surfaced)
        if forced is None:
            forced = self.choice == "required"
        return updates, _classify_batch(terminated, bool(pending), forced, self._limit_reached())

    def _mark_pending(self, pending: Sequence[Content], surfaced: Sequence[Content]) -> None:
        holder = _message_holding(self.transcript, pending[0])
        marked = [replace(c, user_input_request=True) if any(c is p for p in pending) else c for c in holder.contents]
        marked.extend(surfaced)  # requests of sub-agents run as tools (AG-8)
        self._replace(holder, holder.with_contents(marked))


def call_model(
    client: Provider, messages: list[Message], options: dict[str, Any], kwargs: dict[str, Any], stream: bool
) -> Any:
    """The model-call leaf, the one place the provider is called: an awaitable `ChatResponse`, or
    when streaming a `ResponseStream` that folds the provider's updates as they pass (ST-14)."""
    if stream:
        updates = client._inner_get_streaming_response(messages=messages, options=options, **kwargs)
        return ResponseStream.over(updates, Fold(ChatResponse()))
    return client._inner_get_response(messages=messages, options=options, **kwargs)


def _classify_batch(terminated: bool, pending: bool, forced: bool, limited: bool) -> Outcome:
    if terminated:
        return Outcome.TERMINATED
    if pending:
        return Outcome.PENDING
    if forced:
        return Outcome.FORCED
    return Outcome.LIMITED if limited else Outcome.RAN


def _as_update(message: Message) -> ChatResponseUpdate:
    return ChatResponseUpdate(
        list(message.contents),
        message.role,
        author_name=message.author_name,
        message_id=message.message_id,
    )


def _message_holding(messages: Sequence[Message], content: Content) -> Message:
    for m in reversed(messages):
        if any(c is content for c in m.contents):
            return m
    raise LookupError("internal error: the call is not in the transcript")  # pragma: no cover


def _is_call(c: Content) -> bool:
    return c.type == "function_call" and not c.informational_only


def _without_calls(update: ChatResponseUpdate) -> ChatResponseUpdate | None:
    if not any(_is_call(c) for c in update.contents):
        return update
    kept = [c for c in update.contents if not _is_call(c)]
    return replace(update, contents=kept) if kept else None


def _sendable_content(c: Content) -> Content:
    if c.text is not None and (text := sendable_text(c.text)) is not c.text:
        c = replace(c, text=text)
    if isinstance(c.arguments, str) and (arguments := sendable_text(c.arguments)) is not c.arguments:
        c = replace(c, arguments=arguments)
    if isinstance(c.result, str) and (result := sendable_text(c.result)) is not c.result:
        c = replace(c, result=result)
    return c


def _checked_response(response: ChatResponse, seen: set[str | None]) -> ChatResponse:
    """The response as the transcript takes it, in one pass; the response itself when nothing changes.

    LP-27: every text, arguments and result string repaired (`sendable_text`). LP-26: a call whose id
    an earlier call of this response or of the run (``seen``, which is updated) already has gets the
    id ``<id>~<n>``, so every call gets its own result in both modes."""
    messages: list[Message] | None = None
    for i, m in enumerate(response.messages):
        contents: list[Content] | None = None
        for k, c in enumerate(m.contents):
            new = c
            text, arguments, result = c.text, c.arguments, c.result
            if not (
                (text is None or text.isascii())
                and (type(arguments) is not str or arguments.isascii())
                and (type(result) is not str or result.isascii())
            ):
                new = _sendable_content(c)
            if new.type == "function_call" and not new.informational_only and new.call_id is not None:
                if new.call_id in seen:
                    n = 2
                    while f"{new.call_id}~{n}" in seen:
                        n += 1
                    new = replace(new, call_id=f"{new.call_id}~{n}")
                seen.add(new.call_id)
            if new is not c:
                if contents is None:
                    contents = list(m.contents)
                contents[k] = new
        if contents is not None:
            if messages is None:
                messages = list(response.messages)
            messages[i] = m.with_contents(contents)
    return response if messages is None else replace(response, messages=messages)


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
    hidden = ("function_call", "text_reasoning", "usage")
    return any(c.type not in hidden and (c.type != "text" or c.text) for m in response.messages for c in m.contents)
