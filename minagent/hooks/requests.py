"""What hooks receive: `HookState`, `ModelRequest`, `ToolCallRequest` and ``handler``
(spec/hooks.md).

Rules
-----
1. Everything a hook is handed is defined here. States and requests are frozen: a hook
   changes a request only through ``override()``, which returns a copy (HK-5, HK-8,
   HK-10).
2. Nothing here runs a pipeline. `Handler` only counts calls and hands the work to the
   function it was built with; the compilers (`compile.py`, `streaming.py`) decide what
   that work is.
3. ``handler(request)`` never starts work on its own: the awaitable it returns does,
   when awaited (HK-4).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .._middleware import ChatContext
from .._toolset import normalize_tools
from .._types import Content, Message

__all__ = ["Handler", "HookState", "ModelRequest", "ToolCallRequest"]


@dataclass(frozen=True)
class HookState:
    """What a ``before_*`` / ``after_*`` hook sees (HK-5). Read-only: return an update
    instead.

    ``messages`` are the messages as they stand at this point (for ``before_model``: as
    this model call will send them); ``options`` the run's (or this call's) options;
    ``thread`` the run's thread (None in the model hooks and outside an agent);
    ``kwargs`` the run's keyword arguments; ``response`` the finished response
    (``after_model``: the `ChatResponse` of the call; ``after_agent``: the
    `AgentResponse`), else None.
    """

    messages: tuple[Message, ...]
    options: Mapping[str, Any]
    thread: Any = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    response: Any = None


_OPTION_FIELDS = ("instructions", "tools", "tool_choice", "response_format")


@dataclass(frozen=True)
class ModelRequest:
    """One model call as ``wrap_model_call`` sees it (HK-8). Immutable: use `override`.

    ``instructions``, ``tools``, ``tool_choice`` and ``response_format`` are the options
    of those names taken out; ``options`` holds the rest (model settings). ``client`` is
    the client the call goes to; overriding it sends this call to another client's
    provider call directly.
    """

    messages: tuple[Message, ...]
    instructions: str | None
    tools: tuple[Any, ...]
    tool_choice: Any
    response_format: Any
    options: Mapping[str, Any]
    client: Any
    state: HookState

    @property
    def system_prompt(self) -> str | None:
        """Seed 004's name for the instructions."""
        return self.instructions

    def override(self, **changes: Any) -> ModelRequest:
        """A copy with ``changes`` (any field name; ``system_prompt`` means
        ``instructions``)."""
        if "system_prompt" in changes:
            changes["instructions"] = changes.pop("system_prompt")
        unknown = set(changes) - set(self.__dataclass_fields__)
        if unknown:
            raise TypeError(
                f"ModelRequest.override() got unknown field(s) {sorted(unknown)}; fields are "
                f"{sorted(self.__dataclass_fields__)}"
            )
        if "messages" in changes:
            changes["messages"] = tuple(changes["messages"])
        if "tools" in changes:
            changes["tools"] = tuple(normalize_tools(changes["tools"]))
            if (
                not changes["tools"]
                and "tool_choice" not in changes
                and self.tool_choice in ("auto", "required")
            ):
                # no tools left: providers refuse a tool choice (HK-8)
                changes["tool_choice"] = None
        if "options" in changes:
            bad = [k for k in changes["options"] if k in _OPTION_FIELDS]
            if bad:
                raise TypeError(
                    f"ModelRequest.override(options=...) may not hold {bad}; override those fields"
                )
            changes["options"] = MappingProxyType(dict(changes["options"]))
        return replace(self, **changes)

    def to_options(self) -> dict[str, Any]:
        """The chat options this request stands for (what the provider receives)."""
        options = dict(self.options)
        for name in _OPTION_FIELDS:
            value = list(self.tools) if name == "tools" else getattr(self, name)
            if value is not None and value != []:
                options[name] = value
        return options

    @classmethod
    def _of(cls, context: ChatContext, state: HookState) -> ModelRequest:
        options = dict(context.options)
        picked = {name: options.pop(name, None) for name in _OPTION_FIELDS}
        return cls(
            messages=tuple(context.messages),
            instructions=picked["instructions"],
            tools=tuple(normalize_tools(picked["tools"])),
            tool_choice=picked["tool_choice"],
            response_format=picked["response_format"],
            options=MappingProxyType(options),
            client=context.client,
            state=state,
        )


@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call as ``wrap_tool_call`` sees it (HK-10). Immutable: use `override`.

    ``tool_call`` is the model's ``function_call`` `Content`; ``tool`` the tool that
    runs it, or None for a declaration-only tool (a dict or a tool without a function,
    LP-11); ``arguments`` the validated argument dict; ``state`` the run's messages and
    kwargs.
    """

    tool_call: Content
    tool: Any
    arguments: Mapping[str, Any]
    state: HookState

    def override(self, **changes: Any) -> ToolCallRequest:
        """A copy with ``changes``; a new ``tool_call`` without ``arguments`` brings its
        own arguments."""
        unknown = set(changes) - set(self.__dataclass_fields__)
        if unknown:
            raise TypeError(
                f"ToolCallRequest.override() got unknown field(s) {sorted(unknown)}; fields are "
                f"{sorted(self.__dataclass_fields__)}"
            )
        if "tool_call" in changes and "arguments" not in changes:
            changes["arguments"] = changes["tool_call"].parse_arguments() or {}
        if "arguments" in changes:
            changes["arguments"] = MappingProxyType(dict(changes["arguments"]))
        return replace(self, **changes)


# --------------------------------------------------------------------------------------------
# The handler given to wrap hooks


class _HandlerCall:
    """The awaitable ``handler(request)`` returns; the work starts when it is awaited
    (HK-4)."""

    __slots__ = ("_factory", "_name")

    def __init__(self, factory: Callable[[], Awaitable[Any]], name: str) -> None:
        self._factory = factory
        self._name = name

    def __await__(self) -> Any:
        return self._factory().__await__()

    def __getattr__(self, attribute: str) -> Any:
        raise AttributeError(
            f"handler(request) returns an awaitable, not the result (no attribute {attribute!r}): "
            f"write {self._name} as `async def` and use `await handler(request)`"
        )


class Handler:
    """``handler`` of a wrap hook: ``await handler(request)`` runs the rest of the
    pipeline.

    ``streamed`` counts the model updates already relayed to a streaming consumer by
    this handler (always 0 when not streaming): a retry after that would repeat them
    (ML-2).
    """

    __slots__ = ("_run", "_where", "calls", "streamed")

    def __init__(self, run: Callable[[Any], Awaitable[Any]], where: str) -> None:
        self._run = run
        self._where = where
        self.calls = 0
        self.streamed = 0

    def __call__(self, request: Any) -> _HandlerCall:
        self.calls += 1
        return _HandlerCall(lambda: self._run(request), self._where)


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a hook written ``def`` or ``async def``: an awaitable result is awaited
    (HK-4)."""
    value = fn(*args)
    while inspect.isawaitable(value):
        value = await value
    return value
