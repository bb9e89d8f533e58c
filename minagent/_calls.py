"""Running one batch of tool calls (spec/loop.md LP-4 .. LP-6, LP-11, LP-15, LP-20,
LP-21, LP-27).

Rules
-----
1. A runner runs a batch and reports it; it never changes the loop's counters or decides
   the next step.
2. A call never fails the run by itself: what the tool raises becomes an error result
   (LP-6); only what function middleware raises reaches the caller (design decision 12).
3. Messages a call appends join the transcript after the batch, in call order (LP-15).

Theory of operation
-------------------
A `CallRunner` serves one request. It knows the tools of the request (name -> what
answers a call, `tool_map`), the loop's configuration, the function middleware and the
function kwargs. ``run(calls, transcript)`` runs one batch and reports it as a `Batch`;
it never touches the loop's counters or decides what happens next (that is the loop's
table):

    each call: look the tool up (unknown -> error result, LP-6 / LP-12), parse and
    validate its arguments (failure -> error result; arguments the tool's compiled check
    accepts are taken as they came, LP-35), run it through function middleware (LP-4,
    TL-4) with a `FunctionInvocationContext` whose ``messages`` is a `_CallView` of the
    transcript (LP-15) -- or, when no middleware is set and the tool's function takes no
    context, call the function directly, with no context (LP-35) -- and turn what
    happened into a result: a value, an error
    result (the tool raised, LP-6), a pending call (a declaration-only tool, LP-11), or
    an exception that ends the run (function middleware raised, LP-21) calls run
    concurrently, except ``sequential`` tools, which run alone, in call order (LP-5)
    messages the calls appended are collected per call and handed back in call order
    (LP-15)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableSequence, Sequence
from typing import Any, NamedTuple, overload

from . import _observe
from ._exceptions import ContentError, MiddlewareTermination, UserInputRequiredError
from ._middleware import FunctionInvocationContext, MiddlewareFn, run_pipeline
from ._tools import (
    FunctionInvocationConfiguration,
    FunctionTool,
    UnknownToolError,
    result_value,
)
from ._transcript import sendable_text
from ._types import Content, Message
from ._validate import shorten, validate

__all__ = ["Batch", "CallRunner"]

# the logger of floor 3, the client and its loop (OB-15)
logger = logging.getLogger("minagent.client")
DEBUG = logging.DEBUG


class _Pending(Exception):
    """A declaration-only call reached the missing function: return it unexecuted
    (LP-11)."""


class Batch(NamedTuple):
    """What one batch produced, in call order."""

    # per call: its result (None: pending) and whether it terminated
    outcomes: list[tuple[Content | None, bool]]
    arrived: list[Message]  # messages the calls appended, in call order (LP-15)
    surfaced: list[Content]  # user-input requests of sub-agents run as tools (AG-8)


class CallRunner:
    """Runs the tool calls of one request (see the module docstring)."""

    # one runner per request, read on every call: slots keep its attributes fixed and
    # their reads fast
    __slots__ = (
        "config",
        "debug",
        "function_kwargs",
        "function_middleware",
        "invoke",
        "live",
        "observer",
        "session",
        "surfaced",
        "tools",
    )

    def __init__(
        self,
        tools: Mapping[str, Any],
        config: FunctionInvocationConfiguration,
        function_middleware: Sequence[MiddlewareFn],
        function_kwargs: dict[str, Any],
        live: list[Any] | None = None,
        session: Any = None,
    ) -> None:
        self.tools = tools
        # LP-33: the run's tool list, which a tool may change through its context
        self.live = live
        # the agent run's session, FunctionInvocationContext.session (LP-25)
        self.session = session
        self.config = config
        self.function_middleware = function_middleware
        self.function_kwargs = function_kwargs
        self.surfaced: list[Content] = []
        # OB-15: asked once per request, not per call
        self.debug = logger.isEnabledFor(DEBUG)
        # OB-2: the wrap point of a tool call, read once per request
        self.observer = _observe.OBSERVER
        self.invoke = self.observer.tool_call(self._invoke, self.tool)
        if function_middleware:  # OB-31
            self.function_middleware = self.observer.middleware(
                "function", function_middleware
            )

    @property
    def _detail(self) -> str:
        """LP-6: upstream's marker of a detailed error; the problems are listed either
        way (decision 9)."""
        return "Exception: " if self.config.include_detailed_errors else ""

    def tool(self, call: Content) -> Any:
        return self.tools.get(call.name or "")

    async def run(
        self,
        calls: Sequence[Content],
        transcript: list[Message],
        lend: Callable[[int], Message] | None = None,
    ) -> Batch:
        """Run ``calls``; ``transcript`` is what their contexts see (LP-15), each of its
        messages read through ``lend`` (SE-53)."""
        self.surfaced = []
        views = (
            [_CallView(transcript, lend)]
            if len(calls) == 1
            else [_CallView(transcript, lend) for _ in calls]
        )
        mark = len(transcript)
        outcomes = (
            [await self.invoke(calls[0], views[0])]
            if len(calls) == 1
            else await self._execute(calls, views)
        )
        # in call order
        arrived = transcript[mark:]
        for view in views:
            if view.added:
                arrived.extend(view.added)
        del transcript[mark:]
        return Batch(outcomes, arrived, self.surfaced)

    async def _execute(
        self, calls: Sequence[Content], views: Sequence[_CallView]
    ) -> list[tuple[Content | None, bool]]:
        """Run calls concurrently, except `sequential` tools, which run alone, in call
        order (LP-5)."""
        # (one call, the common batch, is awaited in place by `run`: no task, no
        # grouping)
        invoke = self.invoke
        outcomes: list[tuple[Content | None, bool]] = []
        view = {id(call): v for call, v in zip(calls, views, strict=True)}
        group: list[Content] = []
        for call in [*calls, None]:
            alone = call is not None and getattr(
                self.tools.get(call.name or ""), "sequential", False
            )
            if call is None or alone:
                if group:
                    outcomes.extend(
                        await _gather([invoke(c, view[id(c)]) for c in group])
                    )
                    group = []
                if call is not None:
                    outcomes.append(await invoke(call, view[id(call)]))
            else:
                group.append(call)
        return outcomes

    async def _invoke(
        self, call: Content, view: _CallView
    ) -> tuple[Content | None, bool]:
        """One call: validate, run through function middleware, turn the outcome into a
        result."""
        name, call_id = call.name or "", call.call_id or ""
        if self.debug:
            # OB-15: never the arguments
            logger.debug("tool call %s [%s]", shorten(name, MAX_NAME_CHARS), call_id)
        tool = self.tools.get(name)
        if tool is None:
            if self.config.terminate_on_unknown_calls:
                raise UnknownToolError(name)
            available = ", ".join(sorted(self.tools)) or "none"
            shown = shorten(name, MAX_NAME_CHARS)  # LP-29
            text = f'Error: Requested function "{shown}" not found. Available functions: {available}.'
            return _error(call_id, text, f"unknown function {shown!r}"), False
        plain = type(tool) is FunctionTool
        # LP-35: arguments the tool's compiled check accepts are not walked again
        arguments: Any = tool._accepted_arguments(call.arguments) if plain else None
        accepted = arguments is not None
        if not accepted:
            try:
                arguments = call.parse_arguments() or {}
            except ContentError as exc:
                text = f"Error: Argument parsing failed. {self._detail}Invalid arguments for {name}: {exc}."
                return _error(call_id, text, "invalid arguments"), False
            # LP-6: every tool, FunctionTool or tool-like, the same way
            issues = (
                tool.validate_arguments(arguments)
                if plain
                else _validate(tool, arguments)
            )
            if issues:
                text = (
                    f"Error: Argument parsing failed. {self._detail}"
                    f"Invalid arguments for {name}:\n{_issue_text(issues)}"
                )
                return _error(call_id, text, "invalid arguments"), False
        if (
            plain
            and not self.function_middleware
            and tool.func is not None
            and tool._context_parameter is None
            and tool.result_parser is None
        ):
            # LP-35: nothing would see a context: the function runs directly, and
            # what the pipeline would make of its outcome is made here
            try:
                value = await tool._run(arguments, None, accepted)
            except MiddlewareTermination as stop:  # LP-20
                return self._result(name, call_id, stop.result), True
            except UserInputRequiredError as exc:
                return self._asked(call_id, exc, False)
            except Exception as exc:
                return self._failed(name, call_id, exc), False
            return self._result(name, call_id, value), False
        context = FunctionInvocationContext(
            function=tool,
            arguments=arguments,
            call_id=call_id,
            messages=view,
            kwargs=dict(self.function_kwargs),
            tools=self.live,
            session=self.session,
        )
        raised: list[BaseException] = []

        async def handler(ctx: FunctionInvocationContext) -> Any:
            function = ctx.function
            plain = type(function) is FunctionTool
            # a FunctionTool is asked without a property call (LP-11)
            if (
                function.func is None
                if plain
                else getattr(function, "declaration_only", False)
            ):
                raise _Pending
            try:
                if plain and function.result_parser is None:
                    # its `invoke` with no parser is `_run` (TL-14): called directly
                    return await function._run(ctx.arguments, ctx)
                # TL-14: the value, unless parsed
                return await function.invoke(ctx.arguments, context=ctx)
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
            return self._asked(call_id, exc, context.terminated)
        except Exception as exc:
            if not raised or exc is not raised[-1]:
                # design decision 12: middleware's own exceptions reach the caller
                raise
            return self._failed(name, call_id, exc), False
        return self._result(name, call_id, value), context.terminated

    def _asked(
        self, call_id: str, exc: UserInputRequiredError, terminated: bool
    ) -> tuple[Content | None, bool]:
        """LP-11: a call that needs user input: pending, with the requests surfaced."""
        # nothing to ask the user: the call is answered, the loop goes on
        if not exc.contents:
            text = "Error: the tool needed user input but asked for none."
            return _error(call_id, text, "user input required"), terminated
        self.surfaced.extend(exc.contents)
        return None, False

    def _failed(self, name: str, call_id: str, exc: Exception) -> Content:
        """LP-6: the error result of a tool that raised."""
        self.observer.tool_raised(exc)  # OB-7
        # OB-15: not its text
        logger.debug("tool call %s [%s] raised %s", name, call_id, type(exc).__name__)
        # OB-30: one WARNING, so that a failing tool is never silent; it names the
        # tool, the exception's type and the setting that shows the detail, never the
        # exception's text (it may hold secrets, OB-15, OB-16)
        logger.warning(
            "Function %r raised %s; returning an error result to the model. "
            "Set include_detailed_errors=True to show the model the detail.",
            name,
            type(exc).__name__,
        )
        # MCP-12
        visible = (
            self.config.include_detailed_errors
            or getattr(exc, "model_visible", False) is True
        )
        detail = f" Exception: {type(exc).__name__}: {exc}" if visible else ""
        return _error(
            call_id, f"Error: Function failed.{detail}", str(exc) or type(exc).__name__
        )

    def _result(self, name: str, call_id: str, value: Any) -> Content:
        """A tool's value as its function_result (TL-5, TL-11, TL-14, LP-27)."""
        kind = type(value)
        # LP-35: the plain values need none of the general conversion
        if kind is str:
            payload: Any = sendable_text(value)  # LP-27
        elif value is None or kind is bool:
            payload = value
        elif (
            isinstance(value, list)
            and value
            and all(isinstance(c, Content) for c in value)
        ):
            # TL-14: parsed contents
            return Content.from_function_result(call_id, value)
        else:
            try:
                payload = result_value(value)
            # the tool's own value failed to convert: still the tool's failure
            except Exception as exc:
                text = f"Error: the result of {name} could not be converted to JSON: {type(exc).__name__}: {exc}"
                return _error(call_id, text, str(exc) or type(exc).__name__)
            if isinstance(payload, str):
                payload = sendable_text(payload)  # LP-27
        return Content("function_result", call_id=call_id, result=payload)


class _CallView(MutableSequence[Message]):
    """`FunctionInvocationContext.messages` of one tool call: the live transcript
    followed by what this call appended (LP-15). Reads see both; appends stay with the
    call until the batch ends, so concurrent calls' messages join the transcript in call
    order, not in completion order. A message of the transcript is read through
    ``lend``: one the request was given is the run's own copy (SE-53)."""

    __slots__ = ("added", "base", "lend")

    def __init__(
        self, base: list[Message], lend: Callable[[int], Message] | None = None
    ) -> None:
        self.base = base
        self.lend = lend
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
            return [self[i] for i in range(len(self))[index]]
        where, at = self._locate(index)
        if where is self.base and self.lend is not None:
            return self.lend(at)
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


MAX_NAME_CHARS = 64  # LP-29: a name the model made up is shown at most this long
MAX_ISSUES_SHOWN = 20  # LP-29: validation problems listed per call
MAX_ISSUE_CHARS = 300  # LP-29: one problem's line


def _issue_text(issues: Sequence[Any]) -> str:
    """LP-29: at most MAX_ISSUES_SHOWN lines of at most MAX_ISSUE_CHARS, then how many
    more."""
    lines = [
        shorten(str(issue), MAX_ISSUE_CHARS) for issue in issues[:MAX_ISSUES_SHOWN]
    ]
    if len(issues) > MAX_ISSUES_SHOWN:
        lines.append(f"... and {len(issues) - MAX_ISSUES_SHOWN} more problems")
    return "\n".join(lines)


async def _gather(coros: Sequence[Awaitable[Any]]) -> list[Any]:
    """Run concurrently; on any failure or cancellation, cancel and await the rest (no
    leaks).

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
    parameters, name = getattr(tool, "parameters", None), str(getattr(tool, "name", ""))
    # SC-57
    return (
        validate(arguments, parameters, lenient_for=name)
        if isinstance(parameters, Mapping)
        else []
    )


def _error(call_id: str, text: str, exception: str) -> Content:
    return Content.from_function_result(call_id, text, exception=exception)
