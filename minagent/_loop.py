"""The function-invocation loop: one algorithm for streaming and non-streaming (spec/loop.md).

Theory of operation
-------------------
One `ToolLoop` object serves one ``get_response`` call. It owns the run's **transcript**: the
list of messages the next model call receives, shared with every
``FunctionInvocationContext.messages`` (design decision 2). Everything the run adds to the
conversation — model responses, tool results, injected messages — is appended to the transcript
and to ``new_messages``, which becomes the returned response (design decision 7).

``ToolLoop.updates()`` is an async generator. In streaming mode it yields every update as it is
produced (the model's updates, then a tool update per batch, approval requests, injected
messages); in non-streaming mode it yields nothing and is simply run to its end. Both modes run
the same steps, so they build the same final response (LP-2):

    resume answered approvals (LP-14)
    repeat, at most max_iterations tool rounds, then one final call without tools (LP-7):
        drain the inbox into the transcript (LP-16)
        call the model through the chat middleware pipeline (LP-3)
        no actionable calls -> done, unless the inbox received messages meanwhile (LP-17)
        approval needed -> return the requests (LP-13)
        run the batch concurrently through function middleware (LP-4, LP-5)
        append ONE tool message in call order, then messages added during the batch (LP-15)
        termination / pending declaration-only call / tool_choice "required" -> done (LP-10, LP-11)
        error or call limit reached -> the next call is the last, with tool_choice "none" (LP-8)
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Mapping, MutableSequence, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, overload

from ._exceptions import ContentError, MiddlewareTermination, UserInputRequiredError
from ._middleware import ChatContext, FunctionInvocationContext, MiddlewareFn, run_pipeline
from ._options import tool_name
from ._responses import ChatResponse, ChatResponseUpdate
from ._schema import describe_issues, validate
from ._stream import ResponseStream
from ._tools import (
    FunctionInvocationConfiguration,
    FunctionTool,
    UnknownToolError,
    normalize_tools,
    result_value,
)
from ._types import Content, Message, UsageDetails, add_usage

if TYPE_CHECKING:
    from ._clients import BaseChatClient

__all__ = ["LIMIT_FALLBACK_TEXT", "Inbox", "ToolLoop"]

LIMIT_FALLBACK_TEXT = "Function invocation limit reached before a final answer could be produced."
REJECTED_TEXT = "Error: Tool call invocation was rejected by user."
NOT_EXECUTED_TEXT = "Error: Function call limit reached; this call was not executed."
_APPROVAL_KINDS = ("function_approval_request", "function_approval_response")


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


class _Pending(Exception):
    """A declaration-only call reached the missing function: return it unexecuted (LP-11)."""


def tool_choice_mode(choice: Any) -> str | None:
    if isinstance(choice, dict):
        mode = choice.get("mode")
        return mode if isinstance(mode, str) else None
    return choice if isinstance(choice, str) else None


class ToolLoop:
    """The state of one ``get_response`` call (see the module docstring)."""

    def __init__(
        self,
        client: BaseChatClient,
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
        self.stream = stream
        self.chat_middleware = chat_middleware
        self.function_middleware = function_middleware
        self.config = config
        self.inbox = inbox
        self.function_kwargs = function_kwargs  # FunctionInvocationContext.kwargs (LP-25)
        self.client_kwargs = client_kwargs  # ChatContext.kwargs and the provider call (LP-25)
        self.responses: list[ChatResponse] = []
        self.usage: UsageDetails | None = None
        self.sent = 0  # with a conversation_id, transcript[:sent] is already held by the service
        self.calls_made = 0
        self.errors_in_a_row = 0
        self.last_call = False  # the next model call is the final one, with tool_choice "none"
        self.done = False
        self.surfaced: list[Content] = []
        tools = normalize_tools(options.get("tools"))
        if tools:
            options["tools"] = tools
        self.tools = _tool_map(tools, config.additional_tools)

    # -- the loop ---------------------------------------------------------------------------

    async def updates(self) -> AsyncGenerator[ChatResponseUpdate, None]:
        if any(c.type in _APPROVAL_KINDS for m in self.transcript for c in m.contents):
            async for update in self._resume_approvals():
                yield update
            if self.done:
                return
        enabled = self.config.enabled
        rounds = self.config.max_iterations
        for number in range(1, rounds + 2):
            if number == rounds + 1 and enabled:
                self.last_call = True  # LP-7: after max_iterations tool rounds, one final call without tools
            for message in self._drain_inbox():
                yield _as_update(message)
            no_tools = self.last_call or tool_choice_mode(self.options.get("tool_choice")) == "none"
            result = await self._call_model(no_tools)
            if not isinstance(result, ChatResponse):  # a stream: relay each update as it comes (LP-2)
                stream = result if isinstance(result, ResponseStream) else None
                raw: list[ChatResponseUpdate] = []
                iterator = aiter(result)
                try:
                    async for update in iterator:
                        if stream is None:
                            raw.append(update)
                        if no_tools and (update := _without_calls(update)) is None:  # type: ignore[assignment]
                            continue
                        yield update
                finally:  # LP-22: the model's stream is closed on early exit too
                    if (close := getattr(iterator, "aclose", None)) is not None:
                        await close()
                result = ChatResponse.from_updates(raw) if stream is None else await stream.get_final_response()
            fallback = self._record(result, no_tools)
            if fallback is not None and self.stream:
                yield _as_update(fallback)
            calls = self._actionable_calls() if enabled and not self.last_call else []
            if not calls:  # LP-1: with enabled=False the calls are returned unexecuted
                if enabled and not self.last_call and self.inbox is not None and len(self.inbox):
                    continue  # LP-17: a message arrived while the model answered: one more call
                return
            if self._needs_approval(calls):
                yield self._request_approvals(calls)
                return
            async for update in self._run_batch(calls):  # holds no resource at its yields
                yield update
            if self.done:
                return
            if tool_choice_mode(self.options.get("tool_choice")) == "required":
                return  # LP-10: forced calls return right after they ran
            if self._limit_reached():
                self.last_call = True

    def final_response(self) -> ChatResponse:
        response = ChatResponse(self.new_messages, usage_details=self.usage)
        for r in self.responses:
            for name in ("response_id", "conversation_id", "model", "created_at", "finish_reason"):
                value = getattr(r, name)
                if value is not None:
                    setattr(response, name, value)
            response.additional_properties.update(r.additional_properties)
        return response

    # -- model calls ------------------------------------------------------------------------

    async def _call_model(self, no_tools: bool) -> Any:
        """One model call through the chat middleware pipeline: a ChatResponse, or a stream of one."""
        options = dict(self.options)
        if self.last_call:
            options["tool_choice"] = "none"
        if self.chat_middleware:  # LP-3: the containers middleware is likely to edit are this call's own
            options.update({k: v.copy() for k, v in options.items() if isinstance(v, list | dict)})
        context = ChatContext(
            self.client,
            self.transcript[self.sent :],
            options,
            stream=self.stream,
            kwargs=dict(self.client_kwargs),
            function_invocation_kwargs=dict(self.function_kwargs),
        )
        context._copy_pending = bool(self.chat_middleware)  # LP-3: middleware edits affect this call only
        if not self.chat_middleware:  # nothing can observe the pipeline: the provider's own updates
            return self._leaf_updates(context) if self.stream else await self._leaf(context)
        return await run_pipeline(self.chat_middleware, context, self._leaf)

    def _leaf_updates(self, context: ChatContext) -> AsyncIterable[ChatResponseUpdate]:
        return self.client._inner_get_streaming_response(
            messages=context.outgoing_messages(), options=context.options, **context.kwargs
        )

    async def _leaf(self, context: ChatContext) -> Any:
        """The chat pipeline's operation: the provider call (a stream of it when streaming)."""
        if context.stream:
            return ResponseStream(self._leaf_updates(context), finalizer=ChatResponse.from_updates)
        return await self.client._inner_get_response(
            messages=context.outgoing_messages(), options=context.options, **context.kwargs
        )

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
        response = _unique_call_ids(_sendable_response(response), self.transcript)  # LP-27, LP-26
        self.responses.append(response)
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
        self._append(*drained)
        return drained

    def _actionable_calls(self) -> list[Content]:
        """Calls of the last response that are neither informational nor already answered (LP-4)."""
        response = self.responses[-1]
        answered = {c.call_id for m in response.messages for c in m.contents if c.type == "function_result"}
        calls: dict[str | None, Content] = {}
        for m in response.messages:
            for c in m.contents:
                if c.type == "function_call" and not c.informational_only and c.call_id not in answered:
                    calls.setdefault(c.call_id, c)
        return list(calls.values())

    def _limit_reached(self) -> bool:
        cfg = self.config
        if cfg.max_function_calls is not None and self.calls_made >= cfg.max_function_calls:
            return True
        return self.errors_in_a_row > 0 and self.errors_in_a_row >= cfg.max_consecutive_errors_per_request

    # -- approvals --------------------------------------------------------------------------

    def _needs_approval(self, calls: Sequence[Content]) -> bool:
        return any(getattr(self.tools.get(c.name or ""), "approval_mode", None) == "always_require" for c in calls)

    def _request_approvals(self, calls: Sequence[Content]) -> ChatResponseUpdate:
        """Pause: nothing in the batch runs; each call needing approval gets a request (LP-13)."""
        requests = [
            Content.from_function_approval_request(c.call_id or "", c)
            for c in calls
            if getattr(self.tools.get(c.name or ""), "approval_mode", None) == "always_require"
        ]
        holder = _message_holding(self.new_messages, calls[0])
        self._replace(holder, holder.with_contents([*holder.contents, *requests]))
        self.done = True
        return ChatResponseUpdate(requests, "assistant")

    async def _resume_approvals(self) -> AsyncGenerator[ChatResponseUpdate, None]:
        """Answer approval requests from the conversation, then clean the transcript (LP-14)."""
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
        for holder, calls, requests in waiting:
            approved = {r.function_call.call_id for r in requests if r.function_call and decisions.get(r.id or "")}
            needs = {r.function_call.call_id for r in requests if r.function_call}
            runnable = [c for c in calls if c.call_id not in needs or c.call_id in approved]
            rejected = {c.call_id for c in calls if c.call_id in needs and c.call_id not in approved}
            at = self.transcript.index(holder) + 1 if holder in self.transcript else len(self.transcript)
            self.sent = min(self.sent, at)
            tail = self.transcript[at:]
            del self.transcript[at:]
            async for update in self._run_batch(calls, runnable=runnable, rejected=rejected):
                yield update
            self.transcript.extend(tail)
            if self.done:
                return
        if self._limit_reached():
            self.last_call = True

    # -- running a batch --------------------------------------------------------------------

    async def _run_batch(
        self,
        calls: Sequence[Content],
        *,
        runnable: Sequence[Content] | None = None,
        rejected: set[str | None] | None = None,
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        """Run the calls, then append one tool message in call order and what came in meanwhile."""
        runnable = list(calls if runnable is None else runnable)
        budget = self.config.max_function_calls
        if budget is not None:
            over = runnable[max(budget - self.calls_made, 0) :]
            runnable = runnable[: max(budget - self.calls_made, 0)]
        else:
            over = []
        mark = len(self.transcript)
        views = [_CallView(self.transcript) for _ in runnable]  # LP-15: what each call appends, kept apart
        outcomes = await self._execute(runnable, views)
        arrived = [*self.transcript[mark:], *(m for view in views for m in view.added)]  # in call order
        del self.transcript[mark:]
        results: list[Content] = []
        pending: list[Content] = []
        terminated = False
        by_id = {id(call): outcome for call, outcome in zip(runnable, outcomes, strict=True)}
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
        if results:
            tool_message = Message("tool", results)
            self._append(tool_message)
            yield _as_update(tool_message)
            self.errors_in_a_row = self.errors_in_a_row + 1 if any(r.exception for r in results) else 0
        for message in arrived:  # LP-15: after the results, never between a call and its result
            self._append(message)
            yield _as_update(message)
        if pending:
            self._mark_pending(pending)
        self.done = terminated or bool(pending)

    def _mark_pending(self, pending: Sequence[Content]) -> None:
        holder = _message_holding(self.transcript, pending[0])
        marked = [replace(c, user_input_request=True) if any(c is p for p in pending) else c for c in holder.contents]
        marked.extend(self.surfaced)  # requests of sub-agents run as tools (AG-8)
        self._replace(holder, holder.with_contents(marked))

    async def _execute(self, calls: Sequence[Content], views: Sequence[_CallView]) -> list[tuple[Content | None, bool]]:
        """Run calls concurrently, except `sequential` tools, which run alone, in call order (LP-5)."""
        outcomes: list[tuple[Content | None, bool]] = []
        view = {id(call): v for call, v in zip(calls, views, strict=True)}
        group: list[Content] = []
        for call in [*calls, None]:
            alone = call is not None and getattr(self.tools.get(call.name or ""), "sequential", False)
            if call is None or alone:
                if group:
                    outcomes.extend(await _gather([self._invoke(c, view[id(c)]) for c in group]))
                    group = []
                if call is not None:
                    outcomes.append(await self._invoke(call, view[id(call)]))
            else:
                group.append(call)
        return outcomes

    async def _invoke(self, call: Content, view: _CallView) -> tuple[Content | None, bool]:
        """One call: validate, run through function middleware, turn the outcome into a result."""
        name, call_id = call.name or "", call.call_id or ""
        tool = self.tools.get(name)
        if tool is None:
            if self.config.terminate_on_unknown_calls:
                raise UnknownToolError(name)
            available = ", ".join(sorted(self.tools)) or "none"
            text = f'Error: Requested function "{name}" not found. Available functions: {available}.'
            return _error(call_id, text, f"unknown function {name!r}"), False
        try:
            arguments = call.parse_arguments() or {}
        except ContentError as exc:
            return _error(call_id, f"Error: Invalid arguments for {name}: {exc}.", "invalid arguments"), False
        issues = _validate(tool, arguments)  # LP-6: every tool, FunctionTool or tool-like, the same way
        if issues:
            text = f"Error: Invalid arguments for {name}:\n{describe_issues(issues)}"
            return _error(call_id, text, "invalid arguments"), False
        context = FunctionInvocationContext(
            function=tool,
            arguments=arguments,
            call_id=call_id,
            messages=view,
            kwargs=dict(self.function_kwargs),
        )
        raised: list[BaseException] = []

        async def handler(ctx: FunctionInvocationContext) -> Any:
            if getattr(ctx.function, "declaration_only", False):
                raise _Pending
            try:
                return await ctx.function.invoke(ctx.arguments, context=ctx)
            except MiddlewareTermination:
                raise  # a tool may end the loop too (MW-6, LP-20)
            except Exception as exc:
                raised.append(exc)
                raise

        try:
            value = await run_pipeline(self.function_middleware, context, handler)
        except _Pending:
            return None, False
        except UserInputRequiredError as exc:
            self.surfaced.extend(exc.contents)
            return None, False
        except Exception as exc:
            if not raised or exc is not raised[-1]:
                raise  # design decision 12: middleware's own exceptions reach the caller
            visible = self.config.include_detailed_errors or getattr(exc, "model_visible", False) is True  # MCP-12
            detail = f" Exception: {type(exc).__name__}: {exc}" if visible else ""
            return _error(call_id, f"Error: Function failed.{detail}", str(exc) or type(exc).__name__), False
        try:
            payload = result_value(value)
        except Exception as exc:  # the tool's own value failed to convert: still the tool's failure
            text = f"Error: the result of {name} could not be converted to JSON: {type(exc).__name__}: {exc}"
            return _error(call_id, text, str(exc) or type(exc).__name__), context.terminated
        if isinstance(payload, str):
            payload = sendable_text(payload)  # LP-27
        return Content.from_function_result(call_id, payload), context.terminated


class _CallView(MutableSequence[Message]):
    """`FunctionInvocationContext.messages` of one tool call: the live transcript followed by what
    this call appended (LP-15). Reads see both; appends stay with the call until the batch ends, so
    concurrent calls' messages join the transcript in call order, not in completion order."""

    __slots__ = ("added", "base")

    def __init__(self, base: list[Message]) -> None:
        self.base = base
        self.added: list[Message] = []

    def __len__(self) -> int:
        return len(self.base) + len(self.added)

    def _locate(self, index: int) -> tuple[list[Message], int]:
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("transcript index out of range")
        n = len(self.base)
        return (self.base, index) if index < n else (self.added, index - n)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [*self.base, *self.added][index]
        where, at = self._locate(index)
        return where[at]

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            raise TypeError("the transcript does not support slice assignment")
        where, at = self._locate(index)
        where[at] = value

    def __delitem__(self, index: Any) -> None:
        if isinstance(index, slice):
            raise TypeError("the transcript does not support slice deletion")
        where, at = self._locate(index)
        del where[at]

    def insert(self, index: int, value: Message) -> None:
        n = len(self.base)
        if index < 0:
            index = max(len(self) + index, 0)
        if index < n:
            self.base.insert(index, value)
        else:
            self.added.insert(index - n, value)

    def __repr__(self) -> str:
        return repr([*self.base, *self.added])


def _tool_map(tools: Sequence[Any], additional: Sequence[Any]) -> dict[str, Any]:
    """Tool name -> what answers a call to it: the tool, or a declaration-only stand-in for
    declaration dicts, declaration-only tools and ``additional_tools`` (LP-11)."""
    found: dict[str, Any] = {}
    for item in (*tools, *additional):
        name = tool_name(item)
        if name is None:
            continue
        runnable = (
            not isinstance(item, Mapping)
            and hasattr(item, "invoke")
            and not getattr(item, "declaration_only", False)
            and not any(item is extra for extra in additional)
        )
        if runnable:
            found[name] = item
        else:
            declared = item.get("function", item) if isinstance(item, Mapping) else item
            params = declared.get("parameters") if isinstance(declared, Mapping) else getattr(item, "parameters", None)
            found[name] = FunctionTool(name=name, parameters=params if isinstance(params, Mapping) else None)
    return found


async def _gather(coros: Sequence[Awaitable[Any]]) -> list[Any]:
    """Run concurrently; on any failure or cancellation, cancel and await the rest (no leaks).

    A single call is awaited in place: no task, no extra trips through the event loop.
    """
    if len(coros) == 1:
        return [await coros[0]]
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _validate(tool: Any, arguments: Any) -> list[Any]:
    check = getattr(tool, "validate_arguments", None)
    if callable(check):
        return list(check(arguments))
    parameters = getattr(tool, "parameters", None)
    return validate(arguments, parameters) if isinstance(parameters, Mapping) else []


def _error(call_id: str, text: str, exception: str) -> Content:
    return Content.from_function_result(call_id, text, exception=exception)


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


def sendable_text(text: str) -> str:
    """LP-27: ``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD, so it can
    be encoded as UTF-8 (JSON escapes such as ``"\\ud83d"`` decode to lone surrogates)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _sendable_content(c: Content) -> Content:
    if c.text is not None and (text := sendable_text(c.text)) is not c.text:
        c = replace(c, text=text)
    if isinstance(c.arguments, str) and (arguments := sendable_text(c.arguments)) is not c.arguments:
        c = replace(c, arguments=arguments)
    if isinstance(c.result, str) and (result := sendable_text(c.result)) is not c.result:
        c = replace(c, result=result)
    return c


def _sendable_response(response: ChatResponse) -> ChatResponse:
    """LP-27: a copy of the response with every text repaired, or the response itself."""
    messages = []
    changed = False
    for m in response.messages:
        contents = [_sendable_content(c) for c in m.contents]
        if any(new is not old for new, old in zip(contents, m.contents, strict=True)):
            changed = True
            m = m.with_contents(contents)
        messages.append(m)
    return replace(response, messages=messages) if changed else response


def _unique_call_ids(response: ChatResponse, transcript: Sequence[Message]) -> ChatResponse:
    """LP-26: a call whose id an earlier call of this response (or of the transcript) already has
    gets the id ``<id>~<n>``, so every call gets its own result in both modes."""
    seen = {c.call_id for m in transcript for c in m.contents if c.type == "function_call"}
    changed = False
    messages: list[Message] = []
    for m in response.messages:
        contents: list[Content] = []
        for c in m.contents:
            if _is_call(c) and c.call_id is not None:
                if c.call_id in seen:
                    n = 2
                    while f"{c.call_id}~{n}" in seen:
                        n += 1
                    c = replace(c, call_id=f"{c.call_id}~{n}")
                    changed = True
                seen.add(c.call_id)
            contents.append(c)
        messages.append(m.with_contents(contents) if changed and contents != m.contents else m)
    return replace(response, messages=messages) if changed else response


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
