"""`HookMiddleware` and the decorators, compiled onto the three pipelines
(spec/hooks.md).

Rules
-----
1. A hook middleware is a declaration, never a fourth mechanism: everything here ends as
   at most three plain middleware functions, one per layer, that `categorize_middleware`
   takes in the hook middleware's place in the list (HK-1, HK-2).
2. A hook the subclass does not override is not compiled in; a layer with no hook gets
   no middleware at all (HK-3).
3. What a ``before_*``, ``after_*`` or ``wrap_model_call`` hook returns is checked here
   before it is used, and so are seed 004's spellings when a subclass is defined: a
   wrong one is a `MiddlewareException` naming the hook, never ignored (HK-5, HK-7,
   HK-12).
4. The streaming bridge of ``wrap_model_call`` is not here: it lives in `streaming.py`.

Theory of operation
-------------------
``HookMiddleware.__minagent_middleware__()`` compiles the hooks the instance defines,
once, and keeps the result on the instance until its hooks, tools or name change (MW-3
caches each function's layer):

* agent layer — the contributed ``tools`` (HK-9), ``before_agent`` / ``after_agent``;
* chat layer  — ``before_model``, ``wrap_model_call``, ``after_model`` (one model call);
* function layer — ``wrap_tool_call`` (one tool call).

Each compiled function builds a `HookState` or a request (`requests.py`), calls the hook
(``def`` or ``async def``, HK-4), checks what it returned and applies it to the context.
When streaming, an ``after_*`` hook runs once the inner stream has finished and sees its
final response; the messages it adds are streamed after the inner updates (HK-6).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Literal

from .._exceptions import MiddlewareException
from .._middleware import (
    AgentContext,
    CallNext,
    ChatContext,
    FunctionInvocationContext,
    MiddlewareFn,
    agent_middleware,
    chat_middleware,
    function_middleware,
)
from .._responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
)
from .._stream import ResponseStream
from .._toolset import normalize_tools
from .._types import Content, Message
from .requests import Handler, HookState, ModelRequest, ToolCallRequest, _call
from .streaming import stream_wrap_model_call

__all__ = [
    "HookMiddleware",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
    "wrap_model_call",
    "wrap_tool_call",
]

# --------------------------------------------------------------------------------------------
# HookMiddleware


_HOOKS = (
    "before_agent",
    "after_agent",
    "before_model",
    "after_model",
    "wrap_model_call",
    "wrap_tool_call",
)


class HookMiddleware:
    """Seed 004's ``AgentMiddleware``: override the hooks you need (spec/hooks.md).

    Each hook may be ``def`` or ``async def``. ``before_*`` / ``after_*`` receive a
    `HookState` and return None or an update dict (HK-5); ``wrap_model_call(request,
    handler)`` returns the `ChatResponse` (HK-7, HK-8); ``wrap_tool_call(request,
    handler)`` returns the tool's result value (HK-10). ``tools`` are added to every run
    the middleware takes part in (HK-9).
    """

    tools: Sequence[Any] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Seed 004's spellings that have no meaning here are refused, never ignored
        (HK-12)."""
        super().__init_subclass__(**kwargs)
        for hook in _HOOKS:
            if f"a{hook}" in vars(cls):
                raise MiddlewareException(
                    f"{cls.__qualname__}.a{hook}: minagent has no async twins; write `async def {hook}(...)` instead"
                )
        if "state_schema" in vars(cls):
            raise MiddlewareException(
                f"{cls.__qualname__}.state_schema: minagent has no graph state; keep data on the middleware "
                "or pass it in the run's kwargs"
            )

    @property
    def name(self) -> str:
        """The class name, unless the instance was given another (decorators use the
        function's)."""
        return getattr(self, "_hook_name", None) or type(self).__name__

    def before_agent(self, state: HookState) -> Any:
        return None

    def after_agent(self, state: HookState) -> Any:
        return None

    def before_model(self, state: HookState) -> Any:
        return None

    def after_model(self, state: HookState) -> Any:
        return None

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        return handler(request)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        return handler(request)

    def overridden(self) -> frozenset[str]:
        """The hooks this middleware defines (the others are not compiled in, HK-3)."""
        cls = type(self)
        return frozenset(
            h
            for h in _HOOKS
            if getattr(cls, h) is not getattr(HookMiddleware, h) or h in vars(self)
        )

    def __minagent_middleware__(self) -> list[MiddlewareFn]:
        """The plain middleware this hook middleware compiles to, in layer order (HK-1,
        HK-3).

        Compiled once and kept on the instance (recompiled when its hooks, tools or name
        change), so categorising it on every run finds the same functions, whose layer
        is cached (MW-3).
        """
        raw_tools = tuple(self.tools or ())
        key = (self.overridden(), tuple(id(t) for t in raw_tools), self.name)
        cached = getattr(self, "_minagent_compiled", None)
        if cached is not None and cached[0] == key:
            return list(cached[1])
        compiled = self._compile(key[0], normalize_tools(list(raw_tools)))
        # an instance without __dict__ is compiled every time
        with contextlib.suppress(AttributeError):
            self._minagent_compiled = (key, tuple(compiled))
        return compiled

    def _compile(self, hooks: frozenset[str], tools: list[Any]) -> list[MiddlewareFn]:
        compiled: list[MiddlewareFn] = []
        if tools or hooks & {"before_agent", "after_agent"}:
            compiled.append(_compile_agent(self, hooks, tools))
        if hooks & {"before_model", "after_model", "wrap_model_call"}:
            compiled.append(_compile_chat(self, hooks))
        if "wrap_tool_call" in hooks:
            compiled.append(_compile_function(self))
        return compiled

    def __repr__(self) -> str:
        return f"<{self.name} hook middleware: {', '.join(sorted(self.overridden())) or 'no hooks'}>"


def _label(fn: Any, owner: HookMiddleware, text: str) -> None:
    fn.__qualname__ = fn.__name__ = f"{owner.name}.{text}"


# --------------------------------------------------------------------------------------------
# Updates returned by before_*/after_* hooks (HK-5)

_UPDATE_KEYS = frozenset({"messages", "options", "jump_to", "response"})


def _check_update(update: Any, where: str) -> Mapping[str, Any]:
    if update is None:
        return {}
    if not isinstance(update, Mapping):
        raise MiddlewareException(
            f"{where} must return None or a dict update, got {type(update).__name__}"
        )
    unknown = set(update) - _UPDATE_KEYS
    if unknown:
        raise MiddlewareException(
            f"{where} returned unknown update key(s) {sorted(unknown)}; allowed: {sorted(_UPDATE_KEYS)}"
        )
    jump = update.get("jump_to")
    if jump not in (None, "end", "tools", "model"):
        raise MiddlewareException(
            f"{where} returned jump_to={jump!r}; allowed: 'end', 'tools'"
        )
    if jump == "model":
        raise MiddlewareException(
            f"{where} returned jump_to='model': minagent's loop calls the model again by itself after tools; "
            "return jump_to='end' or 'tools' instead"
        )
    if "response" in update and jump is None:
        raise MiddlewareException(
            f"{where} returned a response without jump_to; say jump_to='end' or 'tools'"
        )
    options = update.get("options")
    if options is not None and not isinstance(options, Mapping):
        raise MiddlewareException(
            f"{where} returned options that are not a dict: {type(options).__name__}"
        )
    return update


def _messages_of(value: Any, where: str) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, Message | str):
        value = [value]
    out: list[Message] = []
    for item in value:
        if isinstance(item, str):
            out.append(Message("assistant", [item]))
        elif isinstance(item, Message):
            out.append(item)
        else:
            raise MiddlewareException(
                f"{where}: messages must be Message objects or str, got {type(item).__name__}"
            )
    return out


def _has_calls(messages: Sequence[Message]) -> bool:
    return any(
        c.type == "function_call" and not c.informational_only
        for m in messages
        for c in m.contents
    )


def _prepared(update: Mapping[str, Any], where: str) -> list[Message]:
    """The messages of a jump_to update: 'end' needs an answer without calls, 'tools'
    calls."""
    response = update.get("response")
    messages = (
        response.messages
        if isinstance(response, ChatResponse | AgentResponse)
        else _messages_of(response, where)
    )
    if update["jump_to"] == "end" and _has_calls(messages):
        raise MiddlewareException(
            f"{where}: jump_to='end' takes a final answer without function calls"
        )
    if update["jump_to"] == "tools" and not _has_calls(messages):
        raise MiddlewareException(
            f"{where}: jump_to='tools' needs a response with function calls to run"
        )
    return messages


# --------------------------------------------------------------------------------------------
# Streams: relay the inner updates, then what an after_* hook adds (HK-6)


def _stream_of(updates: Sequence[Any], final: Any) -> ResponseStream[Any, Any]:
    async def source() -> AsyncIterator[Any]:
        for update in updates:
            yield update

    return ResponseStream(source(), finalizer=lambda _u: final)


def _then(
    stream: ResponseStream[Any, Any],
    after: Callable[[Any], Awaitable[tuple[Any, list[Any]]]],
) -> ResponseStream[Any, Any]:
    final: list[Any] = []

    async def source() -> AsyncIterator[Any]:
        iterator = stream.__aiter__()
        try:
            async for update in iterator:
                yield update
        finally:
            await iterator.aclose()
        response, extra = await after(await stream.get_final_response())
        for update in extra:
            yield update
        final.append(response)

    return ResponseStream(source(), finalizer=lambda _u: final[0])


def _chat_update(message: Message) -> ChatResponseUpdate:
    return ChatResponseUpdate(
        list(message.contents), message.role, author_name=message.author_name
    )


def _agent_update(message: Message) -> AgentResponseUpdate:
    return AgentResponseUpdate(
        list(message.contents), message.role, author_name=message.author_name
    )


# --------------------------------------------------------------------------------------------
# The agent layer: tools, before_agent, after_agent


def _compile_agent(
    owner: HookMiddleware, hooks: frozenset[str], tools: list[Any]
) -> MiddlewareFn:
    where_before, where_after = (
        f"{owner.name}.before_agent",
        f"{owner.name}.after_agent",
    )

    async def hook_agent(context: AgentContext, call_next: CallNext) -> None:
        # HK-9: the middleware's tools join the run's tools (a copy: the caller's list
        # is not touched)
        if tools:
            current = context.tools
            items = (
                []
                if current is None
                else list(current)
                if isinstance(current, list | tuple)
                else [current]
            )
            context.tools = [
                *items,
                *(t for t in tools if not any(t is i for i in items)),
            ]
        ended = False
        if "before_agent" in hooks:
            state = HookState(
                tuple(context.messages),
                MappingProxyType(dict(context.options)),
                context.thread,
                MappingProxyType(dict(context.kwargs)),
            )
            update = _check_update(await _call(owner.before_agent, state), where_before)
            if "options" in update:
                context.options = {**context.options, **update["options"]}
            if update.get("jump_to") == "end":
                answer = [
                    *_messages_of(update.get("messages"), where_before),
                    *_prepared(update, where_before),
                ]
                response = AgentResponse(
                    answer, agent_id=getattr(context.agent, "id", None)
                )
                context.result = (
                    _stream_of([_agent_update(m) for m in answer], response)
                    if context.stream
                    else response
                )
                ended = True
            elif update.get("jump_to") == "tools":
                raise MiddlewareException(
                    f"{where_before}: jump_to='tools' is for before_model; use 'end'"
                )
            elif "messages" in update:
                context.messages = [
                    *context.messages,
                    *_messages_of(update["messages"], where_before),
                ]
        if not ended:
            await call_next()
        if "after_agent" not in hooks:
            return
        request_messages = tuple(context.messages)

        async def after(response: AgentResponse) -> tuple[AgentResponse, list[Any]]:
            state = HookState(
                (*request_messages, *response.messages),
                MappingProxyType(dict(context.options)),
                context.thread,
                MappingProxyType(dict(context.kwargs)),
                response,
            )
            update = _check_update(await _call(owner.after_agent, state), where_after)
            if update.get("jump_to") is not None:
                raise MiddlewareException(
                    f"{where_after}: the run has ended; jump_to is not available here"
                )
            added = _messages_of(update.get("messages"), where_after)
            if not added:
                return response, []
            return replace(response, messages=[*response.messages, *added]), [
                _agent_update(m) for m in added
            ]

        if context.stream:
            context.result = _then(context.result, after)
        else:
            context.result = (await after(context.result))[0]

    _label(hook_agent, owner, "agent hooks")
    return agent_middleware(hook_agent)


# --------------------------------------------------------------------------------------------
# The chat layer: before_model, wrap_model_call, after_model


def _compile_chat(owner: HookMiddleware, hooks: frozenset[str]) -> MiddlewareFn:
    where_before, where_after = (
        f"{owner.name}.before_model",
        f"{owner.name}.after_model",
    )

    async def hook_model(context: ChatContext, call_next: CallNext) -> None:
        prepared: list[Message] | None = None
        if "before_model" in hooks:
            update = _check_update(
                await _call(owner.before_model, _chat_state(context)), where_before
            )
            if "options" in update:
                context.options = {**context.options, **update["options"]}
            if update.get("jump_to") is not None:
                prepared = _prepared(update, where_before)
            elif "messages" in update:
                context.messages = [
                    *context.messages,
                    *_messages_of(update["messages"], where_before),
                ]
        # HK-5: the model call is skipped; this is its response
        if prepared is not None:
            response = ChatResponse(prepared)
            context.result = (
                _stream_of(response.as_updates(), response)
                if context.stream
                else response
            )
        elif "wrap_model_call" in hooks:
            await _wrap_model(owner, context, call_next)
        else:
            await call_next()
        if "after_model" not in hooks:
            return
        sent = tuple(context.messages)

        async def after(response: ChatResponse) -> tuple[ChatResponse, list[Any]]:
            state = HookState(
                (*sent, *response.messages),
                MappingProxyType(dict(context.options)),
                None,
                MappingProxyType(dict(context.kwargs)),
                response,
            )
            update = _check_update(await _call(owner.after_model, state), where_after)
            messages = list(response.messages)
            if update.get("jump_to") == "tools":
                raise MiddlewareException(
                    f"{where_after}: jump_to='tools' is for before_model; use 'end'"
                )
            # HK-5: the calls of this response are not run; the run ends
            if update.get("jump_to") == "end":
                messages = [
                    m.with_contents(
                        [c for c in m.contents if c.type != "function_call"]
                    )
                    for m in messages
                    if any(c.type != "function_call" for c in m.contents)
                ]
                if "response" in update:
                    messages = [*messages, *_prepared(update, where_after)]
            added = _messages_of(update.get("messages"), where_after)
            if not added and messages == response.messages:
                return response, []
            return replace(response, messages=[*messages, *added]), [
                _chat_update(m) for m in added
            ]

        if context.stream:
            context.result = _then(context.result, after)
        else:
            context.result = (await after(context.result))[0]

    _label(hook_model, owner, "model hooks")
    return chat_middleware(hook_model)


def _chat_state(context: ChatContext) -> HookState:
    return HookState(
        tuple(context.messages),
        MappingProxyType(dict(context.options)),
        None,
        MappingProxyType(dict(context.kwargs)),
    )


def _apply(context: ChatContext, request: ModelRequest) -> None:
    context.messages = list(request.messages)
    context.options = request.to_options()


async def _leaf(
    context: ChatContext, call_next: CallNext, request: ModelRequest
) -> Any:
    """The rest of the pipeline for ``request``; another client's provider call when
    overridden (HK-8)."""
    _apply(context, request)
    if request.client is context.client:
        await call_next()
        return context.result
    inner = getattr(
        request.client,
        "_inner_get_streaming_response" if context.stream else "_inner_get_response",
        None,
    )
    if inner is None:
        raise MiddlewareException(
            "ModelRequest.client must be a BaseChatClient (its provider call is used), "
            f"got {type(request.client).__name__}"
        )
    kwargs = dict(context.kwargs)
    if context.stream:
        return ResponseStream(
            inner(messages=list(request.messages), options=context.options, **kwargs),
            finalizer=ChatResponse.from_updates,
        )
    return await inner(
        messages=list(request.messages), options=context.options, **kwargs
    )


def _as_chat_response(value: Any, where: str) -> ChatResponse:
    if isinstance(value, ChatResponse):
        return value
    if isinstance(value, Message | str) or (
        isinstance(value, list) and all(isinstance(m, Message | str) for m in value)
    ):
        return ChatResponse(_messages_of(value, where))
    raise MiddlewareException(
        f"{where} must return a ChatResponse (what handler returned), got {type(value).__name__}"
    )


async def _wrap_model(
    owner: HookMiddleware, context: ChatContext, call_next: CallNext
) -> None:
    where = f"{owner.name}.wrap_model_call"
    request = ModelRequest._of(context, _chat_state(context))

    async def run(req: ModelRequest) -> Any:
        return await _leaf(context, call_next, req)

    def answer(value: Any) -> ChatResponse:
        return _as_chat_response(value, where)

    if context.stream:  # the hook runs as a task beside the consumer (HK-7, HK-13)
        context.result = stream_wrap_model_call(
            owner.wrap_model_call, request, run, answer, where
        )
        return
    context.result = answer(
        await _call(owner.wrap_model_call, request, Handler(run, where))
    )


# --------------------------------------------------------------------------------------------
# The function layer: wrap_tool_call


def _compile_function(owner: HookMiddleware) -> MiddlewareFn:
    where = f"{owner.name}.wrap_tool_call"

    async def hook_tool(
        context: FunctionInvocationContext, call_next: CallNext
    ) -> None:
        function = context.function
        declared = getattr(function, "declaration_only", False)
        arguments = dict(context.arguments)
        call = Content.from_function_call(
            context.call_id or "", getattr(function, "name", ""), arguments
        )
        messages = tuple(context.messages) if context.messages is not None else ()
        state = HookState(
            messages, MappingProxyType({}), None, MappingProxyType(dict(context.kwargs))
        )
        request = ToolCallRequest(
            call, None if declared else function, MappingProxyType(arguments), state
        )

        async def run(req: ToolCallRequest) -> Any:
            context.arguments = dict(req.arguments)
            if req.tool is not None:
                context.function = req.tool
            else:
                context.function = function
            await call_next()
            return context.result

        context.result = await _call(owner.wrap_tool_call, request, Handler(run, where))

    _label(hook_tool, owner, "wrap_tool_call")
    return function_middleware(hook_tool)


# --------------------------------------------------------------------------------------------
# Decorators: one function becomes a hook middleware (HK-11)

Hook = Literal[
    "before_agent",
    "after_agent",
    "before_model",
    "after_model",
    "wrap_model_call",
    "wrap_tool_call",
]


def _decorator(hook: Hook) -> Callable[[Callable[..., Any]], HookMiddleware]:
    def decorate(func: Callable[..., Any]) -> HookMiddleware:
        if not callable(func):
            raise TypeError(f"@{hook} decorates a function, got {type(func).__name__}")
        name = getattr(func, "__name__", hook)
        cls = type(
            name,
            (HookMiddleware,),
            {
                hook: staticmethod(func),
                "__doc__": func.__doc__,
                "__module__": getattr(func, "__module__", __name__),
            },
        )
        instance: HookMiddleware = cls()
        instance._hook_name = name  # type: ignore[attr-defined]
        return instance

    decorate.__name__ = hook
    decorate.__doc__ = (
        f"Turn one function into a `HookMiddleware` whose {hook} hook it is (HK-11)."
    )
    return decorate


before_agent = _decorator("before_agent")
after_agent = _decorator("after_agent")
before_model = _decorator("before_model")
after_model = _decorator("after_model")
wrap_model_call = _decorator("wrap_model_call")
wrap_tool_call = _decorator("wrap_tool_call")
