"""Tools: `FunctionTool`, the `@tool` decorator and `FunctionInvocationConfiguration` (spec/tools.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

from ._exceptions import MinagentError
from ._schema import ValidationIssue, _names_context, function_schema, validate

if TYPE_CHECKING:
    from ._middleware import FunctionInvocationContext

__all__ = [
    "FunctionInvocationConfiguration",
    "FunctionTool",
    "ToolError",
    "UnknownToolError",
    "tool",
]

ApprovalMode: TypeAlias = Literal["never_require", "always_require"]
_APPROVAL_MODES = ("never_require", "always_require")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


class ToolError(MinagentError):
    """A tool was declared or invoked incorrectly."""


class UnknownToolError(MinagentError, KeyError):
    """The model called a tool that does not exist and `terminate_on_unknown_calls` is set (LP-12)."""

    def __init__(self, name: str) -> None:
        super().__init__(f'the model requested function "{name}", which is not among the tools of this run')
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0])


class FunctionTool:
    """A tool the model can call: a name, a description, a JSON schema, and (usually) a function.

    ``FunctionTool(name=..., func=None, parameters={...})`` is declaration-only: the model can call
    it, and the call is returned to the caller (or answered by function middleware) (TL-6).
    """

    __slots__ = (
        "_context_parameter",
        "approval_mode",
        "description",
        "func",
        "name",
        "parameters",
        "sequential",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        func: Callable[..., Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        approval_mode: ApprovalMode = "never_require",
        sequential: bool = False,
    ) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ToolError(f"tool name must be 1-128 characters of letters, digits, '_', '.', '-', got {name!r}")
        if approval_mode not in _APPROVAL_MODES:
            raise ToolError(f"tool {name!r}: approval_mode must be one of {_APPROVAL_MODES}, got {approval_mode!r}")
        if func is not None and not callable(func):
            raise ToolError(f"tool {name!r}: func must be callable, got {type(func).__name__}")
        self.name = name
        self.description = description
        self.func = func
        self.approval_mode: ApprovalMode = approval_mode
        self.sequential = sequential
        self._context_parameter: str | None = None
        if parameters is not None:
            if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
                raise ToolError(f"tool {name!r}: parameters must be a JSON schema of type 'object'")
            self.parameters: dict[str, Any] = dict(parameters)
            if func is not None:  # no generation, but the context still reaches the function
                self._context_parameter = _find_context_parameter(func)
        elif func is not None:
            schema = function_schema(func)
            self.parameters = schema.parameters
            self._context_parameter = schema.context_parameter
            self.description = description or schema.description
        else:
            self.parameters = dict(_EMPTY_OBJECT)

    @property
    def declaration_only(self) -> bool:
        """True when there is no function to run (TL-6)."""
        return self.func is None

    def __repr__(self) -> str:
        kind = "declaration-only " if self.func is None else ""
        return f"<{kind}FunctionTool {self.name!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly, as if it were not a tool."""
        if self.func is None:
            raise ToolError(f"tool {self.name!r} is declaration-only and has no function to call")
        return self.func(*args, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The declaration a provider sends: name, description, parameters."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def validate_arguments(self, arguments: Any) -> list[ValidationIssue]:
        """Check arguments against the tool's schema; every problem is reported (TL-7)."""
        return validate(arguments, self.parameters)

    async def invoke(self, arguments: Mapping[str, Any], *, context: FunctionInvocationContext | None = None) -> Any:
        """Run the function with ``arguments`` (TL-4): async functions are awaited, sync ones run in
        a worker thread so they never block the event loop."""
        func = self.func
        if func is None:
            raise ToolError(f"tool {self.name!r} is declaration-only and cannot be invoked")
        kwargs = dict(arguments)
        if self._context_parameter is not None:
            kwargs[self._context_parameter] = context
        if _is_async(func):
            return await func(**kwargs)
        result = await asyncio.to_thread(functools.partial(func, **kwargs))
        if inspect.isawaitable(result):
            result = await result
        return result


def _find_context_parameter(func: Callable[..., Any]) -> str | None:
    """The parameter annotated `FunctionInvocationContext` (SC-5), found without generation."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    names = frozenset({"FunctionInvocationContext"})
    return next((p.name for p in params if _names_context(p.annotation, names)), None)


def _is_async(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    approval_mode: ApprovalMode = "never_require",
    sequential: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    approval_mode: ApprovalMode = "never_require",
    sequential: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a `FunctionTool`: ``@tool`` or ``@tool(name=..., ...)`` (TL-1)."""

    def make(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            name=name or str(getattr(f, "__name__", "")),
            description=description or "",
            func=f,
            approval_mode=approval_mode,
            sequential=sequential,
        )

    return make(func) if func is not None else make


def normalize_tools(tools: Any) -> list[Any]:
    """A tool list from None, one tool, a function, or a sequence of those (TL-2)."""
    if tools is None:
        return []
    items = list(tools) if isinstance(tools, Sequence) and not isinstance(tools, str) else [tools]
    out: list[Any] = []
    for item in items:
        if isinstance(item, FunctionTool | Mapping) or _is_tool_like(item):
            out.append(item)
        elif callable(item):
            out.append(tool(item))
        else:
            raise ToolError(f"{item!r} is not a tool: expected a FunctionTool, a function or a declaration dict")
    return out


def _is_tool_like(item: object) -> bool:
    """Objects that behave as tools without being FunctionTool (an agent's as_tool, MCP tools)."""
    return isinstance(getattr(item, "name", None), str) and hasattr(item, "invoke") and hasattr(item, "parameters")


def result_value(value: Any) -> Any:
    """A tool's return value as JSON data for a function_result (TL-5)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): result_value(v) for k, v in value.items()}
    if isinstance(value, Sequence | Set) and not isinstance(value, bytes | bytearray | memoryview):
        return [result_value(v) for v in value]
    if isinstance(value, type):  # a class is "anything else", even with a to_dict method
        return str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return result_value(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return result_value(dataclasses.asdict(value))
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return str(value)


@dataclasses.dataclass
class FunctionInvocationConfiguration:
    """How the tool loop behaves (seed 000 defaults, plus `max_function_calls`) (LP-1)."""

    enabled: bool = True
    max_iterations: int = 40
    max_consecutive_errors_per_request: int = 3
    terminate_on_unknown_calls: bool = False
    additional_tools: list[Any] = dataclasses.field(default_factory=list)
    include_detailed_errors: bool = False
    max_function_calls: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_iterations, int) or self.max_iterations < 1:
            raise ValueError(f"max_iterations must be an int >= 1, got {self.max_iterations!r}")
        if not isinstance(self.max_consecutive_errors_per_request, int) or self.max_consecutive_errors_per_request < 0:
            value = self.max_consecutive_errors_per_request
            raise ValueError(f"max_consecutive_errors_per_request must be an int >= 0, got {value!r}")
        if self.max_function_calls is not None and (
            not isinstance(self.max_function_calls, int) or self.max_function_calls < 1
        ):
            raise ValueError(f"max_function_calls must be None or an int >= 1, got {self.max_function_calls!r}")
