"""The middleware library: retries, fallback, limits, approval, history processing, redaction.

Each class is one page, written on the public hook API (`minagent.hooks`) or as plain chat
middleware, and each rule is in spec/middleware-library.md (ML-*). Nothing here is imported by
``import minagent``; import ``minagent.middleware`` when you need it.

Theory of operation (state)
---------------------------
The limits and `HumanApproval` keep per-run state in a context variable that their
``before_agent`` hook sets and their ``after_agent`` hook restores, so concurrent runs (each in
its own task) never see each other's counts; per-thread counts live in the middleware instance,
keyed weakly by the thread object. `Summarizer` caches summaries by the content of the
messages it summarised. Everything else is stateless.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .._exceptions import MiddlewareTermination, MinagentError, UserInputRequiredError
from .._middleware import AgentContext, CallNext, ChatContext, ChatMiddleware, MiddlewareFn, agent_middleware
from .._responses import ChatResponse, ChatResponseUpdate
from .._stream import ResponseStream
from .._types import Content, Message
from ..hooks import Handler, HookMiddleware, HookState, ModelRequest, ToolCallRequest

__all__ = [
    "Approve",
    "CallLimitExceededError",
    "Edit",
    "FallbackExhaustedError",
    "HistoryTrimmer",
    "HumanApproval",
    "ModelCallLimit",
    "ModelFallback",
    "ModelRetry",
    "Redact",
    "Reject",
    "Summarizer",
    "ToolCallLimit",
    "ToolRetry",
    "approx_tokens",
]

logger = logging.getLogger("minagent.middleware")
Sleep = Callable[[float], Awaitable[Any]]


class CallLimitExceededError(MinagentError):
    """A `ModelCallLimit` or `ToolCallLimit` with ``exit_behavior="error"`` was reached (ML-5, ML-6)."""

    def __init__(self, message: str, *, kind: str, count: int, limit: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.count = count
        self.limit = limit


class FallbackExhaustedError(MinagentError):
    """Every client of a `ModelFallback` failed; ``errors`` holds each failure in order (ML-4)."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        super().__init__(f"all {len(errors)} model clients failed; last: {type(errors[-1]).__name__}: {errors[-1]}")
        self.errors = list(errors)


def _positive(name: str, value: int | None, *, allow_none: bool = True, minimum: int = 1) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


def _default_retryable(exc: BaseException) -> bool:
    """Provider errors say whether a retry can help (``retryable``); connection and timeout errors can."""
    flag = getattr(exc, "retryable", None)
    if isinstance(flag, bool):
        return flag
    return isinstance(exc, ConnectionError | TimeoutError)


def _predicate(retry_on: Any) -> Callable[[BaseException], bool]:
    if retry_on is None:
        return _default_retryable
    if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
        retry_on = (retry_on,)
    if isinstance(retry_on, tuple):
        kinds = retry_on
        return lambda exc: isinstance(exc, kinds)
    if callable(retry_on):
        return retry_on  # type: ignore[no-any-return]
    raise TypeError(f"retry_on must be an exception class, a tuple of them or a predicate, got {retry_on!r}")


@dataclass
class _Backoff:
    initial_delay: float = 1.0
    backoff_factor: float = 2.0
    max_delay: float = 60.0
    jitter: bool = True

    def __post_init__(self) -> None:
        for name in ("initial_delay", "backoff_factor", "max_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")

    def delay(self, retry: int, exc: BaseException | None = None) -> float:
        """Seconds before retry number ``retry`` (1 first): the error's ``retry_after`` hint when it has one,
        else exponential backoff with equal jitter; both capped at ``max_delay`` (ML-1)."""
        hint = getattr(exc, "retry_after", None)
        if isinstance(hint, int | float) and not isinstance(hint, bool) and hint >= 0:
            return float(min(hint, self.max_delay))
        base = min(self.initial_delay * self.backoff_factor ** (retry - 1), self.max_delay)
        return base / 2 + random.uniform(0, base / 2) if self.jitter else base


# --------------------------------------------------------------------------------------------
# Model calls: retry and fallback


class ModelRetry(HookMiddleware):
    """Retry a failed model call with exponential backoff and jitter (ML-1, ML-2)."""

    def __init__(
        self,
        max_retries: int = 2,
        *,
        retry_on: Any = None,
        initial_delay: float = 1.0,
        backoff_factor: float = 2.0,
        max_delay: float = 60.0,
        jitter: bool = True,
        on_failure: Literal["raise", "answer"] = "raise",
        give_up_after: float | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        _positive("max_retries", max_retries, allow_none=False, minimum=0)
        _choice("on_failure", on_failure, ("raise", "answer"))
        if give_up_after is not None and (
            isinstance(give_up_after, bool) or not isinstance(give_up_after, int | float) or give_up_after < 0
        ):
            raise ValueError(f"give_up_after must be a number >= 0 or None, got {give_up_after!r}")
        self.max_retries = max_retries
        self.should_retry = _predicate(retry_on)
        self.backoff = _Backoff(initial_delay, backoff_factor, max_delay, jitter)
        self.on_failure = on_failure
        self.give_up_after = give_up_after
        self.sleep = sleep

    def _hint_too_long(self, exc: BaseException) -> bool:
        """The server asks to wait longer than ``give_up_after``: fail fast, e.g. for a fallback (ML-1)."""
        hint = getattr(exc, "retry_after", None)
        return (
            self.give_up_after is not None
            and isinstance(hint, int | float)
            and not isinstance(hint, bool)
            and hint > self.give_up_after
        )

    async def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        retry = 0
        while True:
            try:
                return await handler(request)
            except Exception as exc:
                stop = retry >= self.max_retries or not self.should_retry(exc) or self._hint_too_long(exc)
                if handler.streamed or stop:
                    if self.on_failure == "answer" and not handler.streamed:
                        text = f"The model call failed after {retry + 1} attempt(s): {type(exc).__name__}: {exc}"
                        return ChatResponse([Message("assistant", [text])], finish_reason="error")
                    raise
                retry += 1
                wait = self.backoff.delay(retry, exc)
                logger.debug("ModelRetry: %s; retry %d in %.2fs", type(exc).__name__, retry, wait)
                await self.sleep(wait)


class ModelFallback(HookMiddleware):
    """On failure, send the call to the next client in turn (ML-3, ML-4)."""

    def __init__(self, *clients: Any, retry_on: Any = None) -> None:
        if not clients:
            raise ValueError("ModelFallback needs at least one fallback client")
        for client in clients:
            if not callable(getattr(client, "_inner_get_response", None)):
                raise TypeError(f"ModelFallback clients must be BaseChatClient instances, got {type(client).__name__}")
        self.clients = list(clients)
        self.should_fall_back = _predicate(retry_on) if retry_on is not None else (lambda exc: True)

    async def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        errors: list[BaseException] = []
        for client in [None, *self.clients]:
            try:
                return await handler(request if client is None else request.override(client=client))
            except Exception as exc:
                errors.append(exc)
                if handler.streamed or not self.should_fall_back(exc):
                    raise
                logger.debug("ModelFallback: %s; trying the next client", type(exc).__name__)
        raise FallbackExhaustedError(errors) from errors[-1]


# --------------------------------------------------------------------------------------------
# Limits


@dataclass
class _RunCounts:
    thread: Any = None
    model: int = 0
    tools: int = 0
    ended: bool = False
    approvals: dict[str, Content] = field(default_factory=dict)


_RUN: contextvars.ContextVar[dict[int, _RunCounts]] = contextvars.ContextVar("minagent_middleware_run")


class _PerRun(HookMiddleware):
    """Per-run state in a context variable (see the module docstring); per-thread counts in
    ``thread.state`` (so they travel with a serialised thread, TH-2)."""

    def _counts(self) -> _RunCounts:
        counts = _RUN.get({}).get(id(self))
        if counts is None:  # pragma: no cover - run_scope is compiled in with every hook of these classes
            raise MinagentError(f"{type(self).__name__} needs an Agent run: pass it to Agent(middleware=[...])")
        return counts

    def _compile(self, hooks: frozenset[str], tools: list[Any]) -> list[MiddlewareFn]:
        """The run scope first (outermost of this middleware's parts), then the hooks (HK-1)."""
        owner = self

        async def run_scope(context: AgentContext, call_next: CallNext) -> None:
            """Fresh counts for this run; the previous value is restored however the run ends, also
            when it fails, so nothing outlives the run (a stream restores it in its cleanup, ST-6)."""
            previous = _RUN.get({})
            _RUN.set({**previous, id(owner): _RunCounts(context.thread)})
            if context.stream:
                context.stream_cleanup_hooks.append(lambda: _RUN.set(previous))
                await call_next()
                return
            try:
                await call_next()
            finally:
                _RUN.set(previous)

        run_scope.__qualname__ = run_scope.__name__ = f"{self.name}.run_scope"
        return [agent_middleware(run_scope), *super()._compile(hooks, tools)]

    def _thread_key(self) -> str:
        return f"minagent.middleware.{type(self).__name__}"

    def _thread_count(self, thread: Any) -> int:
        count = thread.state.get(self._thread_key(), 0) if thread is not None else 0
        return count if isinstance(count, int) else 0

    def _bump_thread(self, thread: Any) -> None:
        if thread is not None:
            thread.state[self._thread_key()] = self._thread_count(thread) + 1


class ModelCallLimit(_PerRun):
    """At most ``run_limit`` model calls per run and ``thread_limit`` per thread (ML-5)."""

    TEXT = "Model call limit reached; the run ended before a final answer."

    def __init__(
        self,
        *,
        run_limit: int | None = None,
        thread_limit: int | None = None,
        exit_behavior: Literal["end", "final_answer", "error"] = "end",
    ) -> None:
        _positive("run_limit", run_limit)
        _positive("thread_limit", thread_limit)
        if run_limit is None and thread_limit is None:
            raise ValueError("ModelCallLimit needs run_limit or thread_limit")
        _choice("exit_behavior", exit_behavior, ("end", "final_answer", "error"))
        self.run_limit = run_limit
        self.thread_limit = thread_limit
        self.exit_behavior = exit_behavior

    def before_model(self, state: HookState) -> Any:
        counts = self._counts()
        thread = counts.thread
        used = [(counts.model, self.run_limit, "run"), (self._thread_count(thread), self.thread_limit, "thread")]
        over = [(n, limit, scope) for n, limit, scope in used if limit is not None and n >= limit]
        if over:
            n, limit, scope = over[0]
            if self.exit_behavior == "error":
                raise CallLimitExceededError(
                    f"model call limit of {limit} per {scope} reached", kind="model", count=n, limit=limit
                )
            return {"jump_to": "end", "response": self.TEXT}
        counts.model += 1
        self._bump_thread(thread)
        last = any(limit is not None and n + 1 >= limit for n, limit, _ in used)
        if last and self.exit_behavior == "final_answer":
            return {"options": {"tool_choice": "none"}}  # the last call allowed: no tools (as LP-7)
        return None


class ToolCallLimit(_PerRun):
    """At most ``run_limit`` tool calls per run and ``thread_limit`` per thread, counted before a call runs (ML-6)."""

    TEXT = "Error: tool call limit reached; this call was not executed."
    END_TEXT = "Tool call limit reached; the run ended."

    def __init__(
        self,
        *,
        tool_name: str | None = None,
        run_limit: int | None = None,
        thread_limit: int | None = None,
        exit_behavior: Literal["continue", "end", "error"] = "continue",
    ) -> None:
        _positive("run_limit", run_limit)
        _positive("thread_limit", thread_limit)
        if run_limit is None and thread_limit is None:
            raise ValueError("ToolCallLimit needs run_limit or thread_limit")
        _choice("exit_behavior", exit_behavior, ("continue", "end", "error"))
        self.tool_name = tool_name
        self.run_limit = run_limit
        self.thread_limit = thread_limit
        self.exit_behavior = exit_behavior

    async def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        if self.tool_name is not None and request.tool_call.name != self.tool_name:
            return await handler(request)
        counts = self._counts()
        thread = counts.thread
        used = [(counts.tools, self.run_limit, "run"), (self._thread_count(thread), self.thread_limit, "thread")]
        over = [(n, limit, scope) for n, limit, scope in used if limit is not None and n >= limit]
        if not over:
            counts.tools += 1
            self._bump_thread(thread)
            return await handler(request)
        n, limit, scope = over[0]
        if self.exit_behavior == "error":
            raise CallLimitExceededError(
                f"tool call limit of {limit} per {scope} reached", kind="tool", count=n, limit=limit
            )
        if self.exit_behavior == "end":
            counts.ended = True
            raise MiddlewareTermination(result=self.TEXT)
        return self.TEXT

    def after_agent(self, state: HookState) -> Any:
        return {"messages": [Message("assistant", [self.END_TEXT])]} if self._counts().ended else None


class ToolRetry(HookMiddleware):
    """Retry a failing tool (ML-7)."""

    def __init__(
        self,
        max_retries: int = 2,
        *,
        tool_names: Sequence[str] | None = None,
        retry_on: Any = Exception,
        initial_delay: float = 0.5,
        backoff_factor: float = 2.0,
        max_delay: float = 30.0,
        jitter: bool = True,
        on_failure: Literal["error", "message"] = "error",
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        _positive("max_retries", max_retries, allow_none=False, minimum=0)
        _choice("on_failure", on_failure, ("error", "message"))
        self.max_retries = max_retries
        self.tool_names = None if tool_names is None else frozenset(tool_names)
        self.should_retry = _predicate(retry_on)
        self.backoff = _Backoff(initial_delay, backoff_factor, max_delay, jitter)
        self.on_failure = on_failure
        self.sleep = sleep

    async def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        name = request.tool_call.name or ""
        if request.tool is None or (self.tool_names is not None and name not in self.tool_names):
            return await handler(request)
        retry = 0
        while True:
            try:
                return await handler(request)
            except (MiddlewareTermination, UserInputRequiredError):
                raise  # control flow, not failures
            except Exception as exc:
                if retry >= self.max_retries or not self.should_retry(exc):
                    if self.on_failure == "message":
                        return f"Error: {name} failed after {retry + 1} attempt(s): {type(exc).__name__}: {exc}"
                    raise
                retry += 1
                await self.sleep(self.backoff.delay(retry))


# --------------------------------------------------------------------------------------------
# Human approval


@dataclass(frozen=True)
class Approve:
    """Run the call as the model asked."""


@dataclass(frozen=True)
class Edit:
    """Run the call with these arguments instead."""

    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Reject:
    """Do not run the call; the model receives ``message`` as its result."""

    message: str = "Error: Tool call invocation was rejected by user."


Decision = Approve | Edit | Reject
Decider = Callable[[ToolCallRequest], "Decision | Awaitable[Decision | None] | None"]


class HumanApproval(_PerRun):
    """A review policy per tool: a decider in process, or a pause for the caller's answer (ML-8).

    ``policy`` maps a tool name to ``"always"`` (pause for the caller), ``"never"``, or a decider
    ``(request) -> Approve() | Edit(arguments) | Reject(message) | None`` (``def`` or ``async def``;
    None pauses for the caller). Tools not named follow ``default``.
    """

    def __init__(self, policy: Mapping[str, Any], *, default: Any = "never") -> None:
        for name, rule in {**policy, "<default>": default}.items():
            if rule not in ("always", "never") and not callable(rule):
                raise ValueError(
                    f"HumanApproval policy for {name!r} must be 'always', 'never' or a decider, got {rule!r}"
                )
        self.policy = dict(policy)
        self.default = default

    def before_agent(self, state: HookState) -> Any:
        answers = self._counts().approvals
        for message in state.messages:
            for c in message.contents:
                if c.type == "function_approval_response" and c.function_call is not None:
                    answers[c.function_call.call_id or c.id or ""] = c
        return None

    async def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        name = request.tool_call.name or ""
        rule = self.policy.get(name, self.default)
        if rule == "never":
            return await handler(request)
        answer = self._counts().approvals.get(request.tool_call.call_id or "")
        decision: Any = None
        if answer is not None:  # the caller answered a pause (LP-14 lets approved calls through)
            edited = answer.function_call.parse_arguments() if answer.function_call is not None else None
            decision = Edit(edited) if edited is not None and edited != dict(request.arguments) else Approve()
        elif callable(rule):
            decision = rule(request)
            while inspect.isawaitable(decision):
                decision = await decision
        if decision is None:  # pause: the call comes back with an approval request (LP-13's contents)
            raise UserInputRequiredError(
                [Content.from_function_approval_request(request.tool_call.call_id or "", request.tool_call)]
            )
        if isinstance(decision, Approve):
            return await handler(request)
        if isinstance(decision, Edit):
            return await handler(request.override(arguments=dict(decision.arguments)))
        if isinstance(decision, Reject):
            return decision.message
        raise TypeError(
            f"a HumanApproval decider must return Approve(), Edit(...), Reject(...) or None, got {decision!r}"
        )


# --------------------------------------------------------------------------------------------
# History processing


def approx_tokens(message: Message) -> int:
    """A rough token count: four characters per token, plus four per message (ML-9's default counter)."""
    size = 0
    for c in message.contents:
        if c.text:
            size += len(c.text)
        elif c.type in ("function_call", "function_result"):
            payload = c.arguments if c.type == "function_call" else c.result
            size += len(payload if isinstance(payload, str) else json.dumps(payload, default=str))
    return 4 + size // 4


def _answers(messages: Sequence[Message]) -> list[set[str]]:
    return [{c.call_id or "" for c in m.contents if c.type == "function_result"} for m in messages]


def _calls(messages: Sequence[Message]) -> list[set[str]]:
    return [
        {c.call_id or "" for c in m.contents if c.type == "function_call" and not c.informational_only}
        for m in messages
    ]


def _clean_cut(messages: Sequence[Message], cut: int) -> bool:
    """Keeping ``messages[cut:]`` splits no call from its result (ML-9)."""
    before = set().union(*_calls(messages[:cut])) if cut else set()
    after_answers = set().union(*_answers(messages[cut:])) if cut < len(messages) else set()
    after_calls = set().union(*_calls(messages[cut:])) if cut < len(messages) else set()
    before_answers = set().union(*_answers(messages[:cut])) if cut else set()
    return not (before & after_answers) and not (after_calls & before_answers)


def clean_cut(messages: Sequence[Message], wanted: int) -> int:
    """The cut nearest ``wanted`` that keeps call/result pairs together: forward (keep fewer) when
    that leaves something, else backward (keep more) (ML-9)."""
    for cut in range(wanted, len(messages)):
        if _clean_cut(messages, cut):
            return cut
    for cut in range(wanted, 0, -1):
        if _clean_cut(messages, cut):
            return cut
    return 0  # keeping everything is always clean


def _split_system(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    return [m for m in messages if m.role == "system"], [m for m in messages if m.role != "system"]


class HistoryTrimmer(HookMiddleware):
    """Send each model call only the last messages: ``max_messages`` and/or ``max_tokens`` (ML-9)."""

    def __init__(
        self,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        counter: Callable[[Message], int] = approx_tokens,
    ) -> None:
        _positive("max_messages", max_messages)
        _positive("max_tokens", max_tokens)
        if max_messages is None and max_tokens is None:
            raise ValueError("HistoryTrimmer needs max_messages or max_tokens")
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.counter = counter

    def trim(self, messages: Sequence[Message]) -> list[Message]:
        system, rest = _split_system(messages)
        wanted = 0
        if self.max_messages is not None:
            wanted = max(wanted, len(rest) - self.max_messages)
        if self.max_tokens is not None:
            budget = self.max_tokens - sum(self.counter(m) for m in system)
            total, cut = 0, len(rest)
            while cut > 0 and total + self.counter(rest[cut - 1]) <= budget:
                cut -= 1
                total += self.counter(rest[cut])
            wanted = max(wanted, cut)
        if wanted == 0:
            return list(messages)
        cut = clean_cut(rest, min(wanted, len(rest) - 1))  # never nothing: at least the last clean suffix
        return [*system, *rest[cut:]]

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        trimmed = self.trim(request.messages)
        if len(trimmed) == len(request.messages):
            return handler(request)
        return handler(request.override(messages=trimmed))


class Summarizer(HookMiddleware):
    """Replace older turns by a summary written by ``client`` once there are more than ``trigger_messages``
    messages, keeping the last ``keep_last`` (ML-10)."""

    PROMPT = (
        "Summarize the conversation below for the assistant who continues it. Keep facts, decisions, "
        "open questions and tool results that matter. Answer with the summary only.\n\n"
    )
    PREFIX = "Summary of the earlier conversation:\n"

    def __init__(
        self, client: Any, *, trigger_messages: int = 40, keep_last: int = 10, prompt: str | None = None
    ) -> None:
        _positive("trigger_messages", trigger_messages, allow_none=False)
        _positive("keep_last", keep_last, allow_none=False, minimum=0)
        if keep_last >= trigger_messages:
            raise ValueError("keep_last must be smaller than trigger_messages")
        if not callable(getattr(client, "get_response", None)):
            raise TypeError(f"Summarizer needs a chat client, got {type(client).__name__}")
        self.client = client
        self.trigger_messages = trigger_messages
        self.keep_last = keep_last
        self.prompt = self.PROMPT if prompt is None else prompt
        self._cache: dict[str, str] = {}

    async def summarize(self, messages: Sequence[Message]) -> str:
        key = json.dumps([m.to_dict() for m in messages], sort_keys=True, default=str)
        if key not in self._cache:
            lines = [f"{m.role}: {_describe(m)}" for m in messages]
            # A separate, non-streaming request: its tokens never reach the run's stream (pain point 3).
            response = await self.client.get_response([Message("user", [self.prompt + "\n".join(lines)])])
            self._cache[key] = response.text
        return self._cache[key]

    async def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        system, rest = _split_system(request.messages)
        if len(rest) <= self.trigger_messages:
            return await handler(request)
        cut = clean_cut(rest, len(rest) - self.keep_last)
        if cut == 0:
            return await handler(request)
        summary = await self.summarize(rest[:cut])
        note = Message("user", [self.PREFIX + summary])
        return await handler(request.override(messages=[*system, note, *rest[cut:]]))


def _describe(message: Message) -> str:
    parts = []
    for c in message.contents:
        if c.type == "text" and c.text:
            parts.append(c.text)
        elif c.type == "function_call":
            parts.append(
                f"[called {c.name}({c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)})]"
            )
        elif c.type == "function_result":
            parts.append(f"[result: {c.result if isinstance(c.result, str) else json.dumps(c.result, default=str)}]")
    return " ".join(parts)


# --------------------------------------------------------------------------------------------
# Redaction


class Redact(ChatMiddleware):
    """Replace secrets matching ``patterns`` in model output — streamed or not — and, with ``inputs=True``,
    in what the model receives (ML-11, ML-12).

    Streaming holds back the last ``max_secret_length - 1`` characters of text until the next chunk
    shows whether they start a secret, so a secret split across chunk boundaries is still caught.
    """

    # Ready-made patterns (ML-11); combine them with your own: Redact([Redact.EMAIL, r"acct-\d{8}"]).
    EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
    IPV4 = r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"
    CREDIT_CARD = r"\b(?:\d[ -]?){12,18}\d\b"
    API_KEY = r"\b(?:sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36})\b"

    def __init__(
        self,
        patterns: Sequence[str | re.Pattern[str]],
        *,
        replacement: str = "[REDACTED]",
        inputs: bool = False,
        max_secret_length: int = 200,
    ) -> None:
        if isinstance(patterns, str | re.Pattern) or not patterns:
            raise ValueError("Redact needs a non-empty list of patterns")
        _positive("max_secret_length", max_secret_length, allow_none=False)
        compiled = [p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns]
        self.pattern = re.compile("|".join(f"(?:{p.pattern})" for p in compiled))
        if self.pattern.search(""):
            raise ValueError("a Redact pattern matches the empty string")
        self.replacement = replacement
        self.inputs = inputs
        self.max_secret_length = max_secret_length

    def redact(self, text: str) -> str:
        return self.pattern.sub(self.replacement, text)

    def _message(self, message: Message) -> Message:
        changed = False
        contents = []
        for c in message.contents:
            if c.type == "text" and c.text:
                new = self.redact(c.text)
                if new != c.text:
                    c, changed = replace(c, text=new), True
            elif c.type == "function_result" and isinstance(c.result, str):
                new = self.redact(c.result)
                if new != c.result:
                    c, changed = replace(c, result=new), True
            contents.append(c)
        return message.with_contents(contents) if changed else message

    async def process(self, context: ChatContext, call_next: CallNext) -> None:
        if self.inputs:
            context.messages = [self._message(m) for m in context.messages]
        await call_next()
        if not context.stream:
            response: ChatResponse = context.result
            messages = [self._message(m) for m in response.messages]
            if any(a is not b for a, b in zip(messages, response.messages, strict=True)):
                context.result = replace(response, messages=messages)
            return
        context.result = ResponseStream(self._redacted(context.result), finalizer=ChatResponse.from_updates)

    async def _redacted(self, stream: ResponseStream[Any, Any]) -> AsyncIterator[ChatResponseUpdate]:
        pending = ""
        hold = self.max_secret_length - 1
        iterator = stream.__aiter__()
        try:
            async for update in iterator:
                contents: list[Content] = []
                for c in update.contents:
                    if c.type == "text" and c.text is not None:
                        pending += c.text
                        emitted, pending = self._safe_prefix(pending, hold)
                        if emitted:
                            contents.append(replace(c, text=emitted))
                        continue
                    if pending:  # anything else ends the text run: flush it first, fully redacted
                        contents.append(Content.from_text(self.redact(pending)))
                        pending = ""
                    contents.append(c)
                yield replace(update, contents=contents)
        finally:
            await iterator.aclose()
        if pending:
            yield ChatResponseUpdate([Content.from_text(self.redact(pending))], "assistant")

    def _safe_prefix(self, text: str, hold: int) -> tuple[str, str]:
        """Split ``text`` into a redacted part safe to send now and the rest to hold back (ML-12)."""
        cut = max(0, len(text) - hold)
        out: list[str] = []
        at = 0
        for match in self.pattern.finditer(text):
            if match.start() >= cut:
                break
            out.append(text[at : match.start()])
            out.append(self.replacement)
            at = match.end()
            cut = max(cut, at)
        out.append(text[at:cut])
        return "".join(out), text[cut:]
