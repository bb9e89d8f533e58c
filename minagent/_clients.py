"""Chat clients: the `SupportsChatGetResponse` protocol and `BaseChatClient`
(spec/loop.md).

Rules
-----
1. ``get_response`` is the one route of a request in both modes: it decides the
   request's options once (the response format included, SO-7) and hands them to one
   `ToolLoop`.
2. A client never runs agent middleware (MW-3).
3. Structured output is reached through one seam, `response_format`, only when a run
   asks for it.

A provider subclasses `BaseChatClient` and implements ``_inner_get_response`` (and, for
real streaming, ``_inner_get_streaming_response``). ``get_response`` wraps both in the
tool loop, with chat middleware around every model call and function middleware around
every tool call.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, overload, runtime_checkable

from . import _edge
from ._compat import reject_spellings
from ._exceptions import MiddlewareException
from ._loop import Inbox, ToolLoop
from ._middleware import (
    _EMPTY,
    CategorizedMiddleware,
    categorize_middleware,
    categorized,
)
from ._options import ChatOptions, FormatOptions, Options, T
from ._responses import ChatResponse, ChatResponseUpdate, response_format
from ._stream import ResponseStream
from ._tools import FunctionInvocationConfiguration
from ._types import Message, MessageInput, normalize_messages

__all__ = ["BaseChatClient", "SupportsChatGetResponse", "response_format"]


# The agent floor sits above this one: `minagent._agents` registers `Agent` here when it
# loads, so `as_agent` needs no upward import.
_agent_factory: list[Callable[..., Any]] = []


@runtime_checkable
class SupportsChatGetResponse(Protocol):
    """Anything with a `get_response` like `BaseChatClient`'s is a chat client."""

    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[False] = False,
        options: FormatOptions[T],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse[T]]: ...
    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[False] = False,
        options: Options = None,
        **kwargs: Any,
    ) -> Awaitable[ChatResponse]: ...
    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[True],
        options: FormatOptions[T],
        **kwargs: Any,
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse[T]]: ...
    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[True],
        options: Options = None,
        **kwargs: Any,
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse]: ...


class BaseChatClient:
    """Base class of chat clients: the tool loop and the chat/function middleware
    layers."""

    # UP-1: upstream's `BaseChatClient[OptionsT]`
    __class_getitem__ = classmethod(lambda cls, _options: cls)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """UP-2: a provider written for upstream implements one hook,
        ``_inner_get_response(*, messages, stream, options)``; upstream's API, through
        the edge (UP-10), gives it minagent's two."""
        super().__init_subclass__(**kwargs)
        hook = cls.__dict__.get("_inner_get_response")
        if hook is not None and "stream" in inspect.signature(hook).parameters:
            _edge.current().adapt_single_hook(cls)

    def __init__(
        self,
        *,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration
        | Mapping[str, Any]
        | None = None,
    ) -> None:
        self.middleware = middleware
        self.function_invocation_configuration = function_invocation_configuration
        # fail at construction, not at the first call
        found = categorized(self, middleware)
        if found.agent:
            _reject_agent_layer(found)

    @property
    def function_invocation_configuration(self) -> FunctionInvocationConfiguration:
        """The tool loop's configuration; assigning a configuration or a dict validates
        it (LP-24)."""
        return self._function_invocation_configuration

    @function_invocation_configuration.setter
    def function_invocation_configuration(
        self, value: FunctionInvocationConfiguration | Mapping[str, Any] | None
    ) -> None:
        self._function_invocation_configuration = (
            FunctionInvocationConfiguration.coerce(value)
        )

    def as_agent(self, instructions: str | None = None, **agent_kwargs: Any) -> Any:
        """An `Agent` over this client: ``client.as_agent(name=..., instructions=...,
        tools=...)`` (AG-11)."""
        return _agent_factory[0](self, instructions, **agent_kwargs)

    # -- what a provider implements ---------------------------------------------------------

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        raise NotImplementedError(
            f"{type(self).__name__} must implement _inner_get_response"
        )

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Default: the non-streaming response as updates, one per message (LP-2)."""
        response = await self._inner_get_response(
            messages=messages, options=options, **kwargs
        )
        for update in response.as_updates():
            yield update

    # -- the public call --------------------------------------------------------------------

    # SO-28: a class as ``options["response_format"]`` types the answer's ``.value``.
    # The overloads name the stream mode and the options; every other keyword is the
    # implementation's.
    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[False] = False,
        options: FormatOptions[T],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse[T]]: ...
    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[False] = False,
        options: Options = None,
        **kwargs: Any,
    ) -> Awaitable[ChatResponse]: ...
    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[True],
        options: FormatOptions[T],
        **kwargs: Any,
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse[T]]: ...
    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: Literal[True],
        options: Options = None,
        **kwargs: Any,
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse]: ...

    def get_response(
        self,
        messages: MessageInput,
        *,
        stream: bool = False,
        options: Mapping[str, Any] | None = None,
        middleware: Any = None,
        inbox: Inbox | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
        session: Any = None,
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        """Get a response, running tools as the model asks (LP-1).

        Returns an awaitable of `ChatResponse`, or with ``stream=True`` a
        `ResponseStream` of updates that finalises to the same `ChatResponse` (LP-2).
        Nothing runs until it is awaited or iterated.

        ``function_invocation_kwargs`` reach every `FunctionInvocationContext.kwargs`
        (and ``options["additional_function_arguments"]``, which is never sent, over
        them); ``client_kwargs`` reach every `ChatContext.kwargs` and the provider call;
        other ``kwargs`` reach both (LP-25).
        """
        # (a dict is asked first: no ABC check for the common case)
        if (
            options is not None
            and type(options) is not dict
            and not isinstance(options, Mapping)
        ):
            raise TypeError(
                f"options must be a dict of chat options, got {type(options).__name__}"
            )
        # OP-60: never sent along unread
        if kwargs and kwargs.keys() & ChatOptions.__annotations__.keys():
            reject_spellings(kwargs, "run", f"{type(self).__name__}.get_response()")
        run_options = dict(options or {})
        extra = run_options.pop("additional_function_arguments", None)
        fmt = None
        # SO-7: normalised once, the wire form sent
        if run_options.get("response_format") is not None:
            fmt = response_format(run_options["response_format"])
            run_options["response_format"] = fmt.wire
        # MW-14: upstream's places
        if client_kwargs and (
            "middleware" in client_kwargs or "session" in client_kwargs
        ):
            middleware = categorize_middleware(
                middleware, client_kwargs.get("middleware")
            )
            session = session if session is not None else client_kwargs.get("session")
            client_kwargs = {
                k: v
                for k, v in client_kwargs.items()
                if k not in ("middleware", "session")
            }
        # MW-3: the client's, once
        found = categorized(self, self.middleware) if self.middleware else _EMPTY
        # taken as it is
        found = (
            categorize_middleware(found, middleware)
            if middleware is not None
            else found
        )
        if found.agent:
            _reject_agent_layer(found)
        loop = ToolLoop(
            self,
            normalize_messages(messages),
            run_options,
            stream=stream,
            chat_middleware=found.chat,
            function_middleware=found.function,
            config=self._function_invocation_configuration,
            inbox=inbox,
            function_kwargs={
                **kwargs,
                **(function_invocation_kwargs or {}),
                **(extra or {}),
            },
            client_kwargs={**kwargs, **(client_kwargs or {})},
            response_format=fmt,
            session=session,
        )
        if stream:  # ST-14: keeps no updates
            return ResponseStream.of_run(loop.drive(), loop.final_response)
        return _run_to_end(loop)


async def _run_to_end(loop: ToolLoop) -> ChatResponse:
    async for _ in loop.drive():
        pass
    return loop.final_response()


def _reject_agent_layer(found: CategorizedMiddleware) -> None:
    raise MiddlewareException(
        f"agent middleware cannot run in a chat client: {found.agent[0]!r}; pass it to an Agent instead"
    )
