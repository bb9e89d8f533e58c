"""The steps of a durable run: the model call and the tool call as DBOS steps
(spec/dbos.md DU-3, DU-4, DU-7, DU-8, DU-10).

Rules
-----
1. A step holds only the operation: the provider call (inside the chat pipeline's
   innermost middleware) or the tool's ``invoke`` (inside the function pipeline's).
   Middleware runs outside, so a replay runs it again exactly as the first execution
   did.
2. The loop never sees an object the step produced directly: a model response is
   recorded as ``to_dict`` data and restored with ``from_dict`` on the first execution
   and on a replay alike.
3. The steps of the tool calls of one model response are drawn in call order right after
   that response (``DBOS.reserve_step``), so concurrent calls map to the same steps in
   every execution.

Theory of operation
-------------------
`RunSteps` is one workflow execution's bookkeeping: its id and the reserved steps by
call id. `DurableChat` is a chat middleware: non-streaming, it runs ``call_next`` in the
step and sets ``context.result`` to the restored response; streaming, it sets
``context.result`` to a stream whose source runs the step in a task that consumes the
provider's stream, relaying each update as it comes, and whose final response is the
recorded one (a replayed step relays the recorded response's updates instead).
`DurableTool` is a function middleware that swaps ``context.function`` for a `_StepTool`
around ``call_next`` (restored after), so the pipeline's own operation calls the tool
through the step and a replayed exception is the tool's exception.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from dbos import DBOS

from minagent import (
    CallNext,
    ChatContext,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationContext,
    FunctionMiddleware,
    MiddlewareException,
    ResponseStream,
)

__all__ = [
    "MODEL_STEP",
    "TOOL_STEP",
    "DurableChat",
    "DurableTool",
    "RunSteps",
    "idempotency_key",
    "recorded",
]

MODEL_STEP = "minagent.model"
TOOL_STEP = "minagent.tool"
RECORDED_STEP = "minagent.recorded"

_key: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "minagent_dbos_idempotency_key", default=None
)
_DONE = object()
T = TypeVar("T")


def idempotency_key() -> str:
    """The idempotency key of the tool call running now, ``"{workflow_id}:{call_id}"``.

    It is the same when the call runs again after a crash, so a tool with side effects
    (a payment, an email) can pass it to the service it calls and act once. Outside a
    tool call of a durable run it is a `LookupError` (DU-7).
    """
    key = _key.get()
    if key is None:
        raise LookupError(
            "idempotency_key() is only available inside a tool call of a durable run"
        )
    return key


async def recorded(fn: Callable[..., T | Awaitable[T]], *args: Any) -> T:
    """Call ``fn(*args)`` (awaiting its value if it is awaitable) once per durable run.

    Inside a durable run the call is a step: its value is recorded, and when the run
    is replayed after a crash the recorded value is returned instead of calling ``fn``
    again. Middleware and providers use it for choices that must not change on a
    replay (a time, a random number). Outside a durable run it just calls ``fn``
    (DU-8).
    """

    async def step() -> T:
        value = fn(*args)
        return await value if isinstance(value, Awaitable) else value

    if DBOS.workflow_id is None:
        return await step()
    result: T = await DBOS.run_step_async({"name": RECORDED_STEP}, step)
    return result


class RunSteps:
    """One workflow execution's steps: its id and the steps reserved for tool calls, by
    call id."""

    __slots__ = ("reserved", "workflow_id")

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        self.reserved: dict[str, Any] = {}

    def reserve(self, response: ChatResponse) -> None:
        """Rule 3: one step per function call of ``response``, drawn in call order."""
        for message in response.messages:
            for content in message.contents:
                if content.type == "function_call" and content.call_id:
                    self.reserved[content.call_id] = DBOS.reserve_step()


def _chat_response(result: Any) -> ChatResponse:
    if not isinstance(result, ChatResponse):
        raise MiddlewareException(
            f"the chat pipeline of a durable model call produced {type(result).__name__}"
        )
    return result


class DurableChat(ChatMiddleware):
    """DU-3: the innermost chat middleware of a durable run; the provider call is a
    step."""

    def __init__(self, steps: RunSteps) -> None:
        self.steps = steps

    async def process(self, context: ChatContext, call_next: CallNext) -> None:
        if context.stream:
            context.result = self._stream(context, call_next)
            return

        async def step() -> dict[str, Any]:
            await call_next()
            return _chat_response(context.result).to_dict()

        data: dict[str, Any] = await DBOS.run_step_async({"name": MODEL_STEP}, step)
        response = ChatResponse.from_dict(data)
        self.steps.reserve(response)
        context.result = response

    def _stream(
        self, context: ChatContext, call_next: CallNext
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse]:
        final: list[ChatResponse] = []

        async def source() -> AsyncIterator[ChatResponseUpdate]:
            live: asyncio.Queue[Any] = asyncio.Queue()
            ran = False

            async def step() -> dict[str, Any]:
                nonlocal ran
                ran = True
                await call_next()
                inner = context.result
                if not isinstance(inner, ResponseStream):
                    raise MiddlewareException(
                        f"a durable streamed model call produced {type(inner).__name__}"
                    )
                try:
                    async for update in inner:
                        live.put_nowait(update)
                    response = _chat_response(await inner.get_final_response())
                finally:
                    await inner.aclose()
                return response.to_dict()

            task = asyncio.ensure_future(
                DBOS.run_step_async({"name": MODEL_STEP}, step)
            )
            task.add_done_callback(lambda _task: live.put_nowait(_DONE))
            try:
                while (item := await live.get()) is not _DONE:
                    yield item
                data: dict[str, Any] = task.result()
            finally:
                if not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            response = ChatResponse.from_dict(data)
            if not ran:  # DU-10: a recorded call replays as its response's updates
                for update in response.as_updates():
                    yield update
            self.steps.reserve(response)
            final.append(response)

        return ResponseStream(source(), finalizer=lambda _updates: final[0])


class _StepTool:
    """The tool as the function pipeline's operation sees it: ``invoke`` runs in a step
    (DU-4)."""

    def __init__(self, tool: Any, key: str, reservation: Any) -> None:
        self.tool = tool
        self.key = key
        self.reservation = reservation

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tool, name)

    async def invoke(self, arguments: Mapping[str, Any], *, context: Any = None) -> Any:
        tool, key = self.tool, self.key

        async def step() -> Any:
            token = _key.set(key)
            try:
                return await tool.invoke(arguments, context=context)
            finally:
                _key.reset(token)

        options: Any = {"name": f"{TOOL_STEP}:{getattr(tool, 'name', '')}"}
        if self.reservation is not None:
            return await self.reservation.run_async(options, step)
        return await DBOS.run_step_async(options, step)


class DurableTool(FunctionMiddleware):
    """DU-4, DU-7: the innermost function middleware of a durable run; the tool call is
    a step."""

    def __init__(self, steps: RunSteps) -> None:
        self.steps = steps

    async def process(
        self, context: FunctionInvocationContext, call_next: CallNext
    ) -> None:
        tool = context.function
        # LP-11: nothing runs, nothing to record
        if getattr(tool, "declaration_only", False):
            await call_next()
            return
        call_id = context.call_id or ""
        key = f"{self.steps.workflow_id}:{call_id}"
        context.kwargs["idempotency_key"] = key
        context.function = _StepTool(tool, key, self.steps.reserved.pop(call_id, None))
        try:
            await call_next()
        finally:
            context.function = tool
