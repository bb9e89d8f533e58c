"""Middleware: the three context types, type detection, and the one pipeline executor
(spec/middleware.md).

Rules
-----
1. One executor, `run_pipeline`, serves the three layers (MW-4); nothing else runs
   middleware.
2. The context is the only mutable object a pipeline shares; middleware changes the run
   only through it (MW-5 .. MW-8).
3. A pipeline always ends with a result of its layer's type, never None (design decision
   6).

Theory of operation (spec/middleware.md)
----------------------------------------
A pipeline is a list of middleware callables ``mw(context, call_next)`` around one final
handler (the operation: an agent run, a model call, a tool call). ``run_pipeline`` is
the whole execution model for all three layers:

* the first middleware is outermost; ``call_next()`` (or ``call_next(context)``) runs
  the rest of the chain and the operation, whose return value becomes
  ``context.result``; calling it again runs the rest again (MW-5);
* a middleware that returns lets its caller's code after ``call_next`` run; raising
  ``MiddlewareTermination`` unwinds the whole chain, skipping that code, and ends the
  pipeline normally; any other exception propagates unchanged (the control-flow table,
  MW-T1..MW-T7);
* the pipeline's result is ``context.result``, else the termination's ``result``, else
  the layer's empty result — never None for the agent and chat layers (MW-7);
* in streaming mode the result must be a ``ResponseStream`` and the context's stream
  hooks are attached to it last, so they apply to any replacement stream too (MW-9,
  MW-10).

The context is the only mutable object: middleware communicates through it.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import operator
import typing
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, MutableSequence, Sequence
from typing import Any, Literal, TypeAlias, TypeVar

from ._exceptions import MiddlewareException, MiddlewareTermination, type_name
from ._responses import AgentResponse, ChatResponse
from ._schema import secret_parameters
from ._stream import ResponseStream
from ._toolset import normalize_tools, tool_name
from ._types import Content, Message

__all__ = [
    "AgentContext",
    "AgentMiddleware",
    "CallNext",
    "CategorizedMiddleware",
    "ChatContext",
    "ChatMiddleware",
]
__all__ += [
    "FunctionInvocationContext",
    "FunctionMiddleware",
    "MiddlewareFn",
    "agent_middleware",
]
__all__ += [
    "categorize_middleware",
    "categorized",
    "chat_middleware",
    "function_middleware",
    "run_pipeline",
]

Layer: TypeAlias = Literal["agent", "chat", "function"]
CallNext: TypeAlias = Callable[..., Awaitable[None]]
MiddlewareFn: TypeAlias = Callable[[Any, CallNext], Awaitable[None]]


# -- Contexts (seed 001, "Layer Details") -----------------------------------------------------------
# Plain mutable objects; `metadata` is shared by the middleware of one pipeline run.


class _Context:
    """Shared by the three contexts: plain classes (not dataclasses) because one is
    built per model call and per tool call; `repr` lists the fields."""

    LAYER: typing.ClassVar[Layer]
    _FIELDS: typing.ClassVar[tuple[str, ...]]

    metadata: dict[str, Any]
    result: Any
    kwargs: dict[str, Any]

    def __repr__(self) -> str:
        """The fields, shortened; keyword-argument dicts show their keys only and secret
        tool arguments show as ``[secret]``, so a repr never carries a key or a password
        (OB-16)."""
        shown = ", ".join(f"{name}={_shown(self, name)!r:.80}" for name in self._FIELDS)
        return f"{type(self).__name__}({shown})"

    terminate = False  # MW-12: upstream's flag; once set, call_next() runs nothing more


_KWARG_FIELDS = frozenset({"kwargs", "function_invocation_kwargs", "client_kwargs"})


def _shown(context: Any, name: str) -> Any:
    value = getattr(context, name)
    if name in _KWARG_FIELDS and isinstance(value, dict):
        return sorted(value)  # the keys only: values may be headers or keys
    if name == "arguments" and isinstance(value, dict):
        secret = secret_parameters(getattr(context, "function", None))
        if secret:
            return {k: "[secret]" if k in secret else v for k, v in value.items()}
    return value


class _StreamingContext(_Context):
    stream: bool
    stream_transform_hooks: list[Callable[[Any], Any]]
    stream_result_hooks: list[Callable[[Any], Any]]
    stream_cleanup_hooks: list[Callable[[], Any]]

    def _init_hooks(
        self,
        transform: list[Callable[[Any], Any]] | None,
        result: list[Callable[[Any], Any]] | None,
        cleanup: list[Callable[[], Any]] | None,
    ) -> None:
        self.stream_transform_hooks = transform if transform is not None else []
        self.stream_result_hooks = result if result is not None else []
        self.stream_cleanup_hooks = cleanup if cleanup is not None else []


class AgentContext(_StreamingContext):
    """What agent middleware sees: one agent run."""

    LAYER = "agent"
    _FIELDS = (
        "agent",
        "messages",
        "thread",
        "options",
        "tools",
        "stream",
        "metadata",
        "result",
        "kwargs",
        "function_invocation_kwargs",
        "client_kwargs",
    )

    def __init__(
        self,
        agent: Any,
        messages: list[Message],
        thread: Any = None,
        options: dict[str, Any] | None = None,
        tools: list[Any] | None = None,
        stream: bool = False,
        metadata: dict[str, Any] | None = None,
        result: Any = None,
        kwargs: dict[str, Any] | None = None,
        *,
        function_invocation_kwargs: dict[str, Any] | None = None,
        client_kwargs: dict[str, Any] | None = None,
        stream_transform_hooks: list[Callable[[Any], Any]] | None = None,
        stream_result_hooks: list[Callable[[Any], Any]] | None = None,
        stream_cleanup_hooks: list[Callable[[], Any]] | None = None,
        session: Any = None,
    ) -> None:
        self.function_invocation_kwargs = (
            function_invocation_kwargs if function_invocation_kwargs is not None else {}
        )
        self.client_kwargs = client_kwargs if client_kwargs is not None else {}
        self.agent = agent
        self.messages = messages
        # one attribute, two spellings (SE-9)
        self.thread = session if session is not None else thread
        self.options = options if options is not None else {}
        self.tools = tools
        self.stream = stream
        self.metadata = metadata if metadata is not None else {}
        self.result = result
        self.kwargs = kwargs if kwargs is not None else {}
        self._init_hooks(
            stream_transform_hooks, stream_result_hooks, stream_cleanup_hooks
        )

    def empty_result(self) -> Any:
        return _empty_stream(AgentResponse) if self.stream else AgentResponse()

    @property
    def session(self) -> Any:
        """The run's session: upstream's name for `thread` (SE-9)."""
        return self.thread

    @session.setter
    def session(self, value: Any) -> None:
        self.thread = value


class ChatContext(_StreamingContext):
    """What chat middleware sees: one model call (inside the tool loop, once per
    call)."""

    LAYER = "chat"
    _FIELDS = (
        "client",
        "messages",
        "options",
        "stream",
        "metadata",
        "result",
        "kwargs",
        "function_invocation_kwargs",
    )

    def __init__(
        self,
        client: Any,
        messages: list[Message],
        options: dict[str, Any] | None = None,
        stream: bool = False,
        metadata: dict[str, Any] | None = None,
        result: Any = None,
        kwargs: dict[str, Any] | None = None,
        *,
        function_invocation_kwargs: dict[str, Any] | None = None,
        stream_transform_hooks: list[Callable[[Any], Any]] | None = None,
        stream_result_hooks: list[Callable[[Any], Any]] | None = None,
        stream_cleanup_hooks: list[Callable[[], Any]] | None = None,
        copy_messages: bool = False,
        session: Any = None,
    ) -> None:
        self.function_invocation_kwargs = (
            function_invocation_kwargs if function_invocation_kwargs is not None else {}
        )
        self.client = client
        self.session = session  # the agent run's session (LP-32)
        self._messages = messages
        # the tool loop's: copy the messages on first access (LP-3)
        self._copy_pending = copy_messages
        self.options = options if options is not None else {}
        self.stream = stream
        self.metadata = metadata if metadata is not None else {}
        self.result = result
        self.kwargs = kwargs if kwargs is not None else {}
        self.stream_transform_hooks = (
            stream_transform_hooks if stream_transform_hooks is not None else []
        )
        self.stream_result_hooks = (
            stream_result_hooks if stream_result_hooks is not None else []
        )
        self.stream_cleanup_hooks = (
            stream_cleanup_hooks if stream_cleanup_hooks is not None else []
        )

    @property
    def messages(self) -> list[Message]:
        """The messages of this model call. Inside the tool loop they are copies of the
        transcript's, down to each content and its `additional_properties`, made the
        first time middleware looks, so edits affect this call only (LP-3, SE-52)."""
        if self._copy_pending:
            self._copy_pending = False
            self._messages = [
                m.with_contents([_fresh(c) for c in m.contents]) for m in self._messages
            ]
        return self._messages

    @messages.setter
    def messages(self, value: list[Message]) -> None:
        self._copy_pending = False
        self._messages = value

    def outgoing_messages(self) -> list[Message]:
        """What the provider receives: the messages, copied or not (nobody else has seen
        them)."""
        return self._messages

    @property
    def messages_untouched(self) -> bool:
        """No middleware has read or replaced the messages since the tool loop made this
        context:
        they are still the transcript's own (LP-28)."""
        return self._copy_pending

    def empty_result(self) -> Any:
        return _empty_stream(ChatResponse) if self.stream else ChatResponse()


def _fresh(content: Content) -> Content:
    new = copy.copy(content)
    new.additional_properties = dict(content.additional_properties)
    return new


class FunctionInvocationContext(_Context):
    """What function middleware (and a tool that asks for it) sees: one tool call.

    ``messages`` is the live transcript of the run (design decision 2): the list the
    next model call receives. A message appended to it stays in the conversation
    (spec/loop.md). ``terminated`` is set by the pipeline when middleware raised
    `MiddlewareTermination`; the tool loop then stops without another model call (MW-8).
    """

    LAYER = "function"
    _FIELDS = (
        "function",
        "arguments",
        "call_id",
        "messages",
        "metadata",
        "result",
        "kwargs",
        "terminated",
        "tools",
    )

    def __init__(
        self,
        function: Any,  # the tool: a FunctionTool, or any tool-like object (TL-2)
        arguments: dict[str, Any],
        call_id: str | None = None,
        messages: MutableSequence[Message] | None = None,
        metadata: dict[str, Any] | None = None,
        result: Any = None,
        kwargs: dict[str, Any] | None = None,
        terminated: bool = False,
        *,
        tools: list[Any] | None = None,
        session: Any = None,
    ) -> None:
        self.function = function
        self.arguments = arguments
        self.call_id = call_id
        self.messages = messages
        self.metadata = metadata if metadata is not None else {}
        self.result = result
        self.kwargs = kwargs if kwargs is not None else {}
        self.terminated = terminated
        # LP-33: the run's live tool list, which the next model call is given
        self.tools = tools
        self.session = session

    def empty_result(self) -> Any:
        return None

    def add_tools(self, tools: Any) -> None:
        """LP-33: tools (or functions) for the rest of the run, from the next model call
        on. The same tool again is nothing new; another tool with a name already there
        is a `ValueError`, and then none of ``tools`` is added."""
        live = self._live_tools("add")
        names = {tool_name(t): t for t in live}
        added = []
        for item in normalize_tools(tools):
            known = names.get(tool_name(item))
            if known is not item and known is not None:
                raise ValueError(
                    f"a different tool named {tool_name(item)!r} is already among the run's tools"
                )
            if known is None:
                names[tool_name(item)] = item
                added.append(item)
        live.extend(added)

    def remove_tools(self, tools: Any) -> None:
        """LP-33: take tools out of the run from the next model call on (by name, tool
        or function); a name that is not there is ignored."""
        items = (
            [tools]
            if isinstance(tools, str) or not isinstance(tools, list | tuple)
            else tools
        )
        gone = {
            i if isinstance(i, str) else tool_name(i) or getattr(i, "__name__", None)
            for i in items
        }
        live = self._live_tools("remove")
        live[:] = [
            t
            for t in live
            if tool_name(t) not in gone and getattr(t, "func", None) not in items
        ]

    def _live_tools(self, verb: str) -> list[Any]:
        """The run's live tool list (LP-33); a context that no run made has none."""
        if self.tools is None:
            raise RuntimeError(
                f"Cannot {verb} tools: this FunctionInvocationContext is not bound to a live agent run "
                "(only a tool called by the function-invocation loop can change the run's tools)"
            )
        return self.tools


Context: TypeAlias = AgentContext | ChatContext | FunctionInvocationContext
C = TypeVar("C", AgentContext, ChatContext, FunctionInvocationContext)


async def _no_updates() -> typing.AsyncIterator[Any]:
    return
    yield  # pragma: no cover - makes this an async generator


def _empty_stream(
    kind: type[ChatResponse] | type[AgentResponse],
) -> ResponseStream[Any, Any]:
    return ResponseStream(_no_updates(), finalizer=kind.from_updates)


# -- Middleware classes, decorators, and type detection (MW-1 .. MW-3). ----------------------------


class AgentMiddleware(ABC):
    """Wraps a whole agent run."""

    @abstractmethod
    async def process(self, context: AgentContext, call_next: CallNext) -> None: ...


class ChatMiddleware(ABC):
    """Wraps one model call."""

    @abstractmethod
    async def process(self, context: ChatContext, call_next: CallNext) -> None: ...


class FunctionMiddleware(ABC):
    """Wraps one tool call."""

    @abstractmethod
    async def process(
        self, context: FunctionInvocationContext, call_next: CallNext
    ) -> None: ...


_MARK = "_middleware_type"
_BY_CLASS: dict[type, Layer] = {
    AgentMiddleware: "agent",
    ChatMiddleware: "chat",
    FunctionMiddleware: "function",
}
_BY_CONTEXT: dict[str, Layer] = {
    "AgentContext": "agent",
    "ChatContext": "chat",
    "FunctionInvocationContext": "function",
}
F = TypeVar("F", bound=Callable[..., Any])


def _marker(layer: Layer) -> Callable[[F], F]:
    def mark(func: F) -> F:
        setattr(func, _MARK, layer)
        return func

    mark.__name__ = f"{layer}_middleware"
    mark.__doc__ = f"Mark ``async def mw(context, call_next)`` as {layer} middleware."
    return mark


agent_middleware = _marker("agent")
chat_middleware = _marker("chat")
function_middleware = _marker("function")


_LAYERS: weakref.WeakKeyDictionary[Any, Layer] = weakref.WeakKeyDictionary()


def middleware_layer(item: object) -> Layer:
    """The layer a middleware object belongs to, or a `MiddlewareException` naming it
    (MW-2).

    The answer is cached per object, so re-categorising the same middleware on every run
    is cheap.
    """
    try:
        return _LAYERS[item]
    # not seen yet, or not weakly referenceable / hashable
    except (KeyError, TypeError):
        pass
    layer = _detect_layer(item)
    with contextlib.suppress(TypeError):  # not weakly referenceable: not cached
        _LAYERS[item] = layer
    return layer


def _detect_layer(item: object) -> Layer:
    if isinstance(item, type) and issubclass(item, tuple(_BY_CLASS)):
        raise MiddlewareException(
            f"{item.__qualname__} is a middleware class; pass an instance: {item.__qualname__}()"
        )
    owner = getattr(item, "__self__", None) if inspect.ismethod(item) else None
    for cls, layer in _BY_CLASS.items():
        if isinstance(item, cls) or (
            isinstance(owner, cls) and getattr(item, "__name__", "") == "process"
        ):
            return layer  # an instance, or the bound `process` of one (MW-2)
    func = getattr(item, "process", None) if not inspect.isroutine(item) else item
    # MW-60: a callable object
    func = (
        item if func is None and callable(item) and not isinstance(item, type) else func
    )
    if func is None or not callable(func):
        nested = "; it is a list inside the middleware list: pass its items, middleware=[*a, *b]"
        raise MiddlewareException(
            f"{item!r} is not middleware: expected an AgentMiddleware, ChatMiddleware or FunctionMiddleware "
            f"instance, or an async function (context, call_next), got {type_name(item)}"
            + (nested if isinstance(item, list | tuple) else "")
        )
    marked: Layer | None = getattr(item, _MARK, None) or getattr(func, _MARK, None)
    params = _positional_params(func)
    if params is None or len(params) < 2:
        raise MiddlewareException(
            f"middleware {_name(item)} must have at least 2 parameters (context, call_next)"
        )
    annotated = _annotated_layer(func, params[0])
    if marked and annotated and marked != annotated:
        raise MiddlewareException(
            f"MiddlewareTypes type mismatch: middleware {_name(item)} is decorated as {marked} middleware but "
            f"its context parameter is annotated for {annotated} middleware"
        )
    found = marked or annotated
    if found is None:
        raise MiddlewareException(
            f"Cannot determine middleware type of {_name(item)}: decorate it with "
            "@agent_middleware, @chat_middleware or @function_middleware, or annotate its first "
            "parameter as AgentContext, ChatContext or FunctionInvocationContext"
        )
    return found


def _positional_params(func: Callable[..., Any]) -> list[inspect.Parameter] | None:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p for p in sig.parameters.values() if p.kind in kinds]


def _annotated_layer(
    func: Callable[..., Any], param: inspect.Parameter
) -> Layer | None:
    """Read the context annotation, resolving string annotations (design decision
    10)."""
    annotation: Any = param.annotation
    if annotation is inspect.Parameter.empty:
        return None
    try:
        hints = typing.get_type_hints(inspect.unwrap(func))
        annotation = hints.get(param.name, annotation)
    except Exception:  # an unresolvable name: fall back to the annotation's text
        pass
    if isinstance(annotation, str):
        return _BY_CONTEXT.get(annotation.rsplit(".", 1)[-1].strip("'\""))
    return _BY_CONTEXT.get(getattr(annotation, "__name__", ""))


def _name(item: object) -> str:
    return getattr(item, "__qualname__", None) or repr(item)


class CategorizedMiddleware(typing.NamedTuple):
    """Middleware split by layer, each list in registration order."""

    agent: tuple[MiddlewareFn, ...] = ()
    chat: tuple[MiddlewareFn, ...] = ()
    function: tuple[MiddlewareFn, ...] = ()


_EMPTY = CategorizedMiddleware()


def categorized(owner: Any, items: Any) -> CategorizedMiddleware:
    """``categorize_middleware(items)`` for an agent's or a client's own list, kept on
    ``owner`` while the list holds the same objects (identity, in order): categorised
    once, re-read when the list was changed in place (MW-3). Middleware that compiles
    per call (HK-1) is categorised every time."""
    if not items:
        return _EMPTY
    snapshot = tuple(items) if isinstance(items, list | tuple) else (items,)
    known = owner.__dict__.get("_categorized") if hasattr(owner, "__dict__") else None
    if (
        known is not None
        and len(known[0]) == len(snapshot)
        and all(map(operator.is_, known[0], snapshot))
    ):
        return known[1]  # type: ignore[no-any-return]
    found = categorize_middleware(items)
    if hasattr(owner, "__dict__") and not any(
        hasattr(type(item), "__minagent_middleware__") for item in snapshot
    ):
        owner.__dict__["_categorized"] = (snapshot, found)
    return found


def categorize_middleware(*sources: object) -> CategorizedMiddleware:
    """Split middleware into agent, chat and function lists, keeping order (MW-3).

    Each source may be None, one middleware, a list or tuple of them, or an earlier
    `CategorizedMiddleware` (taken as it is: no detection again); sources are
    concatenated in order. Class instances are stored as their bound ``process`` method,
    and the layer is remembered with that callable, so forwarding it to a client
    categorises it the same (MW-2).
    """
    parts: list[CategorizedMiddleware] = []
    for source in sources:
        if source is None:
            continue
        if isinstance(source, CategorizedMiddleware):
            found = source
        elif isinstance(source, list | tuple):
            if not source:
                continue
            found = _categorize_items(tuple(source))
        else:
            found = _categorize_items((source,))
        if found.agent or found.chat or found.function:
            parts.append(found)
    if not parts:
        return _EMPTY
    if len(parts) == 1:
        return parts[0]
    return CategorizedMiddleware(
        *(tuple(fn for part in parts for fn in part[i]) for i in range(3))
    )


def _categorize_items(items: tuple[Any, ...]) -> CategorizedMiddleware:
    found: dict[Layer, list[MiddlewareFn]] = {"agent": [], "chat": [], "function": []}
    for item in items:
        # looked up on the type, as dunders are
        expand = getattr(type(item), "__minagent_middleware__", None)
        # HK-1: an object that compiles to middleware takes its place in the list
        if expand is not None:
            for key, fns in zip(
                found, categorize_middleware(expand(item)), strict=True
            ):
                found[key].extend(fns)
            continue
        layer = middleware_layer(item)
        # a function, or a callable object (MW-60)
        if inspect.isroutine(item) or not hasattr(item, "process"):
            fn = item
        else:
            fn = item.process
            with contextlib.suppress(TypeError):
                _LAYERS[fn] = layer  # lives as long as the list that holds `fn`
        found[layer].append(fn)
    return CategorizedMiddleware(
        tuple(found["agent"]), tuple(found["chat"]), tuple(found["function"])
    )


# -- The pipeline executor (MW-4 .. MW-10). --------------------------------------------------------


async def _call_next(
    run: tuple[Sequence[MiddlewareFn], Any, Callable[[Any], Awaitable[Any]]],
    index: int,
    ctx: Any = None,
) -> None:
    """The ``call_next`` a middleware at ``index - 1`` receives, bound with
    `functools.partial` (made in C, one per step): runs the middleware at ``index``, or
    the operation after the last."""
    middleware, context, handler = run
    if ctx is not None and ctx is not context:
        raise MiddlewareException(
            "call_next() takes no argument or the same context it was given"
        )
    if context.terminate:  # MW-12: the rest of the chain and the operation are skipped
        return
    if index == len(middleware):
        context.result = await handler(context)
    else:
        await middleware[index](context, functools.partial(_call_next, run, index + 1))


async def run_pipeline(
    middleware: Sequence[MiddlewareFn],
    context: C,
    handler: Callable[[C], Awaitable[Any]],
) -> Any:
    """Run ``middleware`` around ``handler`` with ``context`` and return the pipeline's
    result.

    The result is also left in ``context.result``.
    """
    try:
        if middleware:
            run = (middleware, context, handler)  # what every step's call_next reads
            await middleware[0](context, functools.partial(_call_next, run, 1))
        else:
            # the common case: no closure, no extra await
            context.result = await handler(context)
    except MiddlewareTermination as stop:
        if isinstance(context, FunctionInvocationContext):
            context.terminated = True
        if context.result is None:
            context.result = stop.result
    if context.terminate and isinstance(context, FunctionInvocationContext):
        context.terminated = True  # MW-12
    if context.result is None:
        context.result = context.empty_result()
    layer = context.LAYER
    if layer != "function":  # an AgentContext or a ChatContext
        if context.stream:
            _attach_stream_hooks(context)
        elif layer == "chat" and not isinstance(context.result, ChatResponse):
            raise MiddlewareException(  # MW-13: the tool loop consumes it
                f"chat pipeline is not streaming, so context.result must be a ChatResponse, got "
                f"{type(context.result).__name__}; wrap it: ChatResponse(messages=[Message('assistant', [text])])"
            )
    return context.result


def _attach_stream_hooks(context: AgentContext | ChatContext) -> None:
    stream = context.result
    if not isinstance(stream, ResponseStream):
        raise MiddlewareException(
            f"{context.LAYER} pipeline is streaming, so context.result must be a ResponseStream, "
            f"got {type(stream).__name__}; wrap a response with ResponseStream(...) or leave the result unset"
        )
    for transform in context.stream_transform_hooks:
        stream.with_transform_hook(transform)
    for on_result in context.stream_result_hooks:
        stream.with_result_hook(on_result)
    for cleanup in context.stream_cleanup_hooks:
        stream.with_cleanup_hook(cleanup)
