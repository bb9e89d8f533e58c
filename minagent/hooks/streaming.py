"""``wrap_model_call`` while streaming: the hook runs as a task beside the consumer
(spec/hooks.md).

Rules
-----
1. This is the only place where a hook runs in a task of its own, and the only queue in
   the hooks: everything else runs in the frame of whoever awaits or iterates.
2. The hook sees what it sees without streaming: ``await handler(request)`` returns the
   finished `ChatResponse`, and the hook's return value is the call's final response
   (HK-7).
3. Nothing outlives the stream: however the consumer stops, the hook's task is done, or
   cancelled and awaited, before the stream's ``aclose()`` returns (HK-7).

Theory of operation
-------------------
A streaming consumer pulls updates; a wrap hook wants to await one finished response.
The bridge gives each side its shape. When the consumer first reads, the hook starts as
a task. ``handler(request)`` runs the rest of the chat pipeline in that task and reads
the model's stream there; each update goes into a queue, and ``handler`` waits until the
consumer has taken it (``queue.join()``), so the provider is read no faster than the
consumer reads. When the hook returns, a sentinel ends the relay; the hook's value
becomes the final response, and if the hook never relayed anything (it answered without
the model) that answer is streamed as updates.

    consumer  --reads-->  queue  <--put, then join--  handler  <--awaited by--  hook
    task

Limitations (HK-13)
-------------------
The task copies the context when the consumer first reads. Context variables the hook
sets — or anything inside ``handler`` sets: inner chat middleware, the provider call —
are seen in that task only. The consumer, the outer middleware's code after
``call_next``, ``after_model`` hooks, the tools and later model calls do not see them.
This is starlette's ``BaseHTTPMiddleware`` limitation, for the same reason. Without
streaming there is no task and the hook runs in the caller's frame, as any middleware
does. To pass a value outward in both modes, set a mutable holder (a dict) in the
variable before the run and change what it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .._exceptions import MiddlewareException
from .._responses import ChatResponse, ChatResponseUpdate
from .._stream import ResponseStream
from .requests import Handler, ModelRequest, _call

__all__ = ["stream_wrap_model_call"]

_DONE = object()


def stream_wrap_model_call(
    hook: Callable[[ModelRequest, Handler], Any],
    request: ModelRequest,
    call: Callable[[ModelRequest], Awaitable[Any]],
    answer: Callable[[Any], ChatResponse],
    where: str,
) -> ResponseStream[ChatResponseUpdate, ChatResponse]:
    """The stream of one model call wrapped by ``hook`` (HK-7).

    ``call(request)`` runs the rest of the chat pipeline for a request and returns its
    `ResponseStream`; ``answer(value)`` turns the hook's return value into the call's
    response.
    """
    final: list[ChatResponse] = []

    async def source() -> AsyncIterator[ChatResponseUpdate]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        handler: Handler

        async def run(req: ModelRequest) -> ChatResponse:
            stream = await call(req)
            if not isinstance(stream, ResponseStream):
                raise MiddlewareException(
                    f"{where}: the model call did not produce a ResponseStream while streaming"
                )
            iterator = stream.__aiter__()
            try:
                async for update in iterator:
                    handler.streamed += 1
                    queue.put_nowait(update)
                    await queue.join()  # back-pressure: one update at a time (HK-7)
            finally:
                await iterator.aclose()
            final_response: ChatResponse = await stream.get_final_response()
            return final_response

        handler = Handler(run, where)

        async def drive() -> Any:
            try:
                return await _call(hook, request, handler)
            finally:
                queue.put_nowait(_DONE)

        task = asyncio.ensure_future(drive())  # the context is copied here: HK-13
        try:
            while (item := await queue.get()) is not _DONE:
                yield item
                queue.task_done()
            response = answer(task.result())
            # the hook answered without the model: stream its answer
            if handler.streamed == 0:
                for update in response.as_updates():
                    yield update
            final.append(response)
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    return ResponseStream(source(), finalizer=lambda _u: final[0])
