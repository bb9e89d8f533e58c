"""Upstream's provider class bases on minagent's client (spec/upstream.md UP-1 .. UP-4).

A provider written for upstream subclasses ``FunctionInvocationLayer``,
``ChatMiddlewareLayer``, ``ChatTelemetryLayer`` and ``BaseChatClient`` and implements
one hook, ``_inner_get_response(*, messages, stream, options, **kwargs)``. Here each
layer is a name for the same minagent client: the tool loop and both middleware layers
are `BaseChatClient`'s own, telemetry is minagent's observer (spec/observability.md).
The layers only add upstream's spellings: subscripting
(``FunctionInvocationLayer[OptionsT]``), the ``chat_middleware`` /
``function_middleware`` lists (UP-3), and, for a layer put in front of a class that has
its own ``get_response`` (not a `BaseChatClient`), that ``get_response`` as the model
call (UP-2).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, TypeVar

from minagent import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    ResponseStream,
    categorize_middleware,
)

__all__ = [
    "ChatMiddlewareLayer",
    "ChatTelemetryLayer",
    "FunctionInvocationLayer",
    "OptionsCoT",
    "adapt_single_hook",
]

OptionsCoT = TypeVar("OptionsCoT", covariant=True)
"""Upstream's type variable of a client's options; minagent's clients are not generic (UP-1)."""


def adapt_single_hook(cls: type) -> None:
    """UP-2: a class whose ``_inner_get_response`` takes ``stream`` (upstream's one
    hook) gets minagent's two hooks calling it."""
    hook = cls.__dict__.get("_inner_get_response")
    if hook is None or getattr(hook, "__minagent_single_hook__", False):
        return
    try:
        parameters = inspect.signature(hook).parameters
    except (TypeError, ValueError):
        return
    if "stream" not in parameters:
        return

    def _inner_get_response(
        self: Any, *, messages: Any, options: Any, stream: bool = False, **kwargs: Any
    ) -> Any:
        return hook(self, messages=messages, stream=stream, options=options, **kwargs)

    async def _inner_get_streaming_response(
        self: Any, *, messages: Any, options: Any, **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        relay = _relay(
            self._inner_get_response(
                messages=messages, options=options, stream=True, **kwargs
            )
        )
        # LP-22: closing the call closes the provider's stream at once
        async with contextlib.aclosing(relay):
            async for update in relay:
                yield update

    _inner_get_response.__minagent_single_hook__ = True  # type: ignore[attr-defined]
    _inner_get_response.__doc__ = hook.__doc__
    cls._inner_get_response = _inner_get_response  # type: ignore[attr-defined]
    if "_inner_get_streaming_response" not in cls.__dict__:
        cls._inner_get_streaming_response = _inner_get_streaming_response  # type: ignore[attr-defined]


async def _relay(result: Any) -> AsyncGenerator[ChatResponseUpdate, None]:
    """The updates of what a streaming hook returned: a stream (closed when left early),
    an awaitable of one, or a whole response (its updates)."""
    if inspect.isawaitable(result) and not hasattr(result, "__aiter__"):
        result = await result
    if isinstance(result, ChatResponse):
        for update in result.as_updates():
            yield update
        return
    if isinstance(result, Mapping) or not hasattr(result, "__aiter__"):
        raise TypeError(
            f"a streaming model call must give an async iterable of updates, got {type(result).__name__}"
        )
    iterator = aiter(result)
    ids: set[Any] = set()
    try:
        async for update in iterator:
            ids.update((update.conversation_id, update.response_id))
            yield update
    finally:
        close = getattr(iterator, "aclose", None) or getattr(result, "aclose", None)
        if close is not None:
            await close()
    # PV-60: what the provider's finalizer adds reaches the response
    if isinstance(result, ResponseStream):
        final = await result.get_final_response()
        if {final.conversation_id, final.response_id} - ids - {None}:
            yield ChatResponseUpdate(
                [],
                "assistant",
                conversation_id=final.conversation_id,
                response_id=final.response_id,
            )


class _Layer(BaseChatClient):
    """What the three layers share: they are minagent clients (UP-1)."""

    def __init__(self, *, middleware: Any = None, **kwargs: Any) -> None:
        config = kwargs.pop("function_invocation_configuration", None)
        BaseChatClient.__init__(
            self, middleware=middleware, function_invocation_configuration=config
        )
        mro = type(self).__mro__
        if any("__init__" in vars(c) for c in mro[mro.index(BaseChatClient) + 1 : -1]):
            # UP-2: a class after the client in the MRO
            super(BaseChatClient, self).__init__(**kwargs)
        elif kwargs:
            raise TypeError(
                f"{type(self).__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}"
            )

    @property
    def middleware(self) -> list[Any]:
        """UP-3: the client's chat middleware, then its function middleware."""
        return [
            *self.__dict__.get("chat_middleware", ()),
            *self.__dict__.get("function_middleware", ()),
        ]

    @middleware.setter
    def middleware(self, value: Any) -> None:
        items = (
            value
            if isinstance(value, list | tuple)
            else []
            if value is None
            else [value]
        )
        layers = [categorize_middleware(item) for item in items]
        self.__dict__["chat_middleware"] = [
            item for item, found in zip(items, layers, strict=True) if found.chat
        ]
        self.__dict__["function_middleware"] = [
            i for i, found in zip(items, layers, strict=True) if found.function
        ]

    # -- UP-2: a class with its own get_response behind the layer -------------------------------

    def _next_get_response(self) -> Any:
        return getattr(super(BaseChatClient, self), "get_response", None)

    async def _inner_get_response(
        self, *, messages: list[Any], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        nxt = self._next_get_response()
        if nxt is None:
            return await BaseChatClient._inner_get_response(
                self, messages=messages, options=options, **kwargs
            )
        result = nxt(messages, stream=False, options=options, **kwargs)
        return await result if inspect.isawaitable(result) else result  # type: ignore[no-any-return]

    async def _inner_get_streaming_response(
        self, *, messages: list[Any], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        nxt = self._next_get_response()
        if nxt is None:
            async for update in BaseChatClient._inner_get_streaming_response(
                self, messages=messages, options=options, **kwargs
            ):
                yield update
            return
        async for update in _relay(
            nxt(messages, stream=True, options=options, **kwargs)
        ):
            yield update


class FunctionInvocationLayer(_Layer):
    """Upstream's tool-loop layer: minagent's `BaseChatClient` runs the loop (UP-1)."""

    def __class_getitem__(cls, item: Any) -> Any:
        return cls


class ChatMiddlewareLayer(_Layer):
    """Upstream's chat-middleware layer: minagent's `BaseChatClient` runs chat
    middleware (UP-1)."""

    def __class_getitem__(cls, item: Any) -> Any:
        return cls


class ChatTelemetryLayer(_Layer):
    """Upstream's telemetry layer: minagent's observer traces every client (UP-1)."""

    def __class_getitem__(cls, item: Any) -> Any:
        return cls
