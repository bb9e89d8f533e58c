"""Tools: `FunctionTool`, the `@tool` decorator and `FunctionInvocationConfiguration`
(spec/tools.md)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import json
import math
import re
import types
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any, Final, Literal, Protocol, TypeAlias, overload, runtime_checkable

from . import _validate
from ._convert import ArgumentConverter
from ._exceptions import MinagentError
from ._schema import TwoContextsError, function_schema, names_context
from ._types import Content
from ._validate import (
    ValidationIssue,
    _Written,
    argument_limits,
    compile_fast_check,
    describe_issues,
    shorten,
    validate,
)

__all__ = [
    "SKIP_PARSING",
    "FunctionInvocationConfiguration",
    "FunctionTool",
    "ToolError",
    "UnknownToolError",
]
__all__ += ["ToolArgumentError", "result_value", "tool"]

ApprovalMode: TypeAlias = Literal["never_require", "always_require"]
_APPROVAL_MODES = ("never_require", "always_require")
_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
# JSON text to a value, as json.loads does with no options (LP-35)
_decode = json.JSONDecoder().decode


class ToolError(MinagentError):
    """A tool was declared or invoked incorrectly."""


class UnknownToolError(MinagentError, KeyError):
    """The model called a tool that does not exist and `terminate_on_unknown_calls` is
    set (LP-12)."""

    def __init__(self, name: str) -> None:
        shown = shorten(name, 64)  # LP-29: bounded; the full name stays in .name
        super().__init__(
            f'Error: Requested function "{shown}" not found: it is not among the tools of this run'
        )
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0])


class _SkipParsing:
    """`SKIP_PARSING`: ``result_parser=SKIP_PARSING`` makes `FunctionTool.invoke` return
    the raw value (TL-14)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SKIP_PARSING"


SKIP_PARSING: Final = _SkipParsing()


class Parameters(dict[str, Any]):
    """A tool's JSON schema: a dict that is also callable, ``tool.parameters()``
    (upstream's spelling) being the dict itself, or upstream's form of a generated one
    (TL-2, TL-60)."""

    __slots__ = ("tool_name",)
    tool_name: str  # set on a generated schema only

    def __call__(self) -> dict[str, Any]:
        tool_name = getattr(self, "tool_name", None)
        return self if tool_name is None else _generated_form(self, tool_name)


def _generated_form(parameters: Mapping[str, Any], tool_name: str) -> dict[str, Any]:
    """TL-60: upstream's ``parameters()`` of a generated schema, as its model generator
    writes it: the schema titled ``<tool>_input``, each property titled, no
    ``additionalProperties``, no empty ``required``. The ``parameters`` dict, which the
    model receives, is unchanged."""
    out = {k: v for k, v in parameters.items() if k != "additionalProperties"}
    if not out.get("required", True):
        del out["required"]
    props = out.get("properties")
    if isinstance(props, Mapping):
        out["properties"] = {
            k: {**v, "title": v.get("title", k.replace("_", " ").title())}
            if isinstance(v, Mapping)
            else v
            for k, v in props.items()
        }
    out["title"] = f"{tool_name}_input"
    return dict(sorted(out.items()))


class FunctionTool:
    """A tool the model can call: a name, a description, a JSON schema, and (usually) a
    function.

    ``FunctionTool(name=..., func=None, parameters={...})`` is declaration-only: the
    model can call it, and the call is returned to the caller (or answered by function
    middleware) (TL-6).
    """

    __slots__ = (
        "_async_of",
        "_context_parameter",
        "_converter",
        "_fast_check",
        "_parameters",
        "approval_mode",
        "description",
        "func",
        "input_model",
        "invocation_count",
        "invocation_exception_count",
        "max_invocation_exceptions",
        "max_invocations",
        "name",
        "result_parser",
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
        max_invocations: int | None = None,
        max_invocation_exceptions: int | None = None,
        input_model: Any = None,
        result_parser: Callable[[Any], Any] | _SkipParsing | None = None,
    ) -> None:
        # TL-14: upstream's explicit schema, a JSON schema or a pydantic-style class
        if input_model is not None:
            parameters = _input_schema(name, input_model, parameters)
        # compiled on first use
        if not isinstance(name, str) or not re.fullmatch(
            r"[A-Za-z0-9_.-]{1,128}", name
        ):
            raise ToolError(
                f"tool name must be 1-128 characters of letters, digits, '_', '.', '-', got {name!r}"
            )
        if approval_mode not in _APPROVAL_MODES:
            raise ToolError(
                f"tool {name!r}: approval_mode must be one of {_APPROVAL_MODES}, got {approval_mode!r}"
            )
        if func is not None and not callable(func):
            raise ToolError(
                f"tool {name!r}: func must be callable, got {type(func).__name__}"
            )
        for field_name, limit in (
            ("max_invocations", max_invocations),
            ("max_invocation_exceptions", max_invocation_exceptions),
        ):
            if limit is not None and (
                isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
            ):
                raise ToolError(
                    f"tool {name!r}: {field_name} must be None or an int >= 1, got {limit!r}"
                )
        self.name = name
        self.description = description
        self.func = func
        self.max_invocations = max_invocations
        self.max_invocation_exceptions = max_invocation_exceptions
        # TL-8: over the tool's lifetime, never reset by minagent
        self.invocation_count = 0
        self.invocation_exception_count = 0
        self.approval_mode: ApprovalMode = approval_mode
        self.sequential = sequential
        self.input_model = None if isinstance(input_model, Mapping) else input_model
        self.result_parser = result_parser
        self._context_parameter: str | None = None
        self._fast_check: _Compiled | None = None
        # (func, whether it is async), for the func in use
        self._async_of: tuple[Any, bool] | None = None
        # TL-10: only with a generated schema
        self._converter: ArgumentConverter | None = None
        if parameters is not None:
            if (
                not isinstance(parameters, Mapping)
                or parameters.get("type", "object") != "object"
            ):
                raise ToolError(
                    f"tool {name!r}: parameters must be a JSON schema of type 'object'"
                )
            self.parameters = parameters
            # no generation, but the context still reaches the function
            if func is not None:
                self._context_parameter = _find_context_parameter(func, self.parameters)
        elif func is not None:
            schema = function_schema(func)
            self.parameters = schema.parameters
            self._parameters.tool_name = name
            self._context_parameter = schema.context_parameter
            self.description = description or schema.description
            self._converter = ArgumentConverter(func, schema.context_parameter)
        else:
            self.parameters = dict(_EMPTY_OBJECT)

    @property
    def parameters(self) -> Parameters:
        """The JSON schema of the arguments, a dict that ``parameters()`` also returns
        (TL-2)."""
        return self._parameters

    @parameters.setter
    def parameters(self, value: Mapping[str, Any]) -> None:
        self._parameters = value if type(value) is Parameters else Parameters(value)

    def __get__(self, instance: Any, owner: type | None = None) -> FunctionTool:
        """TL-15: ``@tool`` on a method: read from an instance, the tool calls the
        method bound to it."""
        if instance is None or self.func is None or not _takes_self(self.func):
            return self
        bound = copy.copy(self)
        bound.func = types.MethodType(self.func, instance)
        return bound

    @staticmethod
    def parse_result(result: Any) -> list[Content]:
        """A tool's value as contents, as upstream's `invoke` returns it (TL-14): a str
        (None: "") is a text, a `Content` or a list holding contents is kept (its other
        items as JSON text), anything else its JSON text."""
        if result is None or isinstance(result, str):
            return [Content.from_text(result or "")]
        if isinstance(result, Content):
            return [result]
        if isinstance(result, list) and any(isinstance(i, Content) for i in result):
            return [
                item
                if isinstance(item, Content)
                else FunctionTool.parse_result(item)[0]
                for item in result
            ]
        value = result_value(result)
        return [
            Content.from_text(value if isinstance(value, str) else json.dumps(value))
        ]

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        /,
        *,
        dependencies: Mapping[str, Any] | None = None,
    ) -> FunctionTool:
        """A tool from its dict form (TL-16), upstream's ``"function_tool"``
        (``input_model``) or minagent's declaration (``parameters``), with what
        ``dependencies["function_tool"]`` injects: its entries for every tool, and a
        ``"<field>:<value>"`` entry's dict for the tool whose field has that value."""
        if not isinstance(data, Mapping):
            raise TypeError(
                f"FunctionTool.from_dict takes a dict, got {type(data).__name__}"
            )
        if data.get("type", "function_tool") != "function_tool":
            raise ValueError(
                f"Type mismatch: expected 'function_tool', got {data.get('type')!r}"
            )
        kwargs = {k: v for k, v in data.items() if k != "type"}
        for key, value in ((dependencies or {}).get("function_tool") or {}).items():
            field, colon, name = str(key).partition(":")
            if not colon:
                kwargs[key] = value
            elif kwargs.get(field) == name and isinstance(value, Mapping):
                kwargs.update(value)
        return cls(**kwargs)

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
            raise ToolError(
                f"tool {self.name!r} is declaration-only and has no function to call"
            )
        return self.func(*args, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The declaration a provider sends: name, description, parameters."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }

    def validate_arguments(self, arguments: Any) -> list[ValidationIssue]:
        """Check arguments against the tool's schema; every problem is reported (TL-7).

        The common schema (scalar properties, no constraints) has a compiled check that
        answers for valid arguments without the full validator (SC-55); it is made again
        when ``parameters`` is replaced."""
        check = self._compiled()[1]
        if check is not None and check(arguments):
            return []
        # SC-57: a schema never fails the run
        return validate(arguments, self._parameters, lenient_for=self.name)

    def _compiled(self) -> _Compiled:
        """SC-55: the compiled check of the parameters in use, made once, and again
        when ``parameters`` is replaced."""
        parameters = self._parameters
        fast = self._fast_check
        if fast is None or fast[0] is not parameters:
            check = compile_fast_check(parameters)
            fast = self._fast_check = (
                parameters,
                check,
                check is not None and _converts_nothing(self._converter, parameters),
            )
        return fast

    def _accepted_arguments(self, raw: Any) -> Any:
        """LP-35: a call's arguments as they came (a dict, or JSON text) when the
        compiled check accepts them, so nothing walks them again; None when it does not
        say so, and the full path (parse, limits, validate) decides and words the
        issues."""
        fast = self._fast_check
        if fast is None or fast[0] is not self._parameters:
            fast = self._compiled()
        check = fast[1]
        if check is None:
            return None
        if type(raw) is str:
            # SC-49: the length limit first, as parse_json_arguments
            if len(raw) > _validate._argument_limits.max_argument_chars:
                return None
            try:
                raw = _decode(raw)
            # any failure: the full path parses again and says what is wrong
            except Exception:
                return None
        return raw if check(raw) else None

    async def invoke(
        self,
        arguments: Mapping[str, Any] | Any = None,
        *,
        # a FunctionInvocationContext (below `_middleware`: not imported)
        context: Any = None,
        skip_parsing: bool = False,
        tool_call_id: str | None = None,
        **values: Any,
    ) -> Any:
        """Run the function (TL-4, TL-14) and return its value as contents
        (`parse_result`, or the tool's ``result_parser``), or the value itself with
        ``skip_parsing=True`` or ``result_parser=SKIP_PARSING``. The arguments:
        ``arguments`` (a mapping, or a model with ``model_dump()``), else the parameters
        as keywords, else ``context.arguments``."""
        # the loop's call (TL-14)
        loops = not values and context is not None and arguments is context.arguments
        if not loops:  # a caller's arguments: read and checked
            arguments = self._given_arguments(arguments, context, values)
        value = await self._run(arguments, context)
        parser = self.result_parser
        # the loop's: the value
        if skip_parsing or parser is SKIP_PARSING or (loops and not callable(parser)):
            return value
        parsed = parser(value) if callable(parser) else self.parse_result(value)
        return [Content.from_text(parsed)] if isinstance(parsed, str) else parsed

    def _given_arguments(
        self, arguments: Any, context: Any, values: dict[str, Any]
    ) -> Mapping[str, Any]:
        """TL-14: what `invoke` was given as the arguments: ``arguments`` (a mapping, or
        a model with ``model_dump()``), else the parameters as keywords, else
        ``context.arguments``; checked against the schema."""
        if values:
            unknown = sorted(set(values) - set(self.parameters.get("properties", ())))
            if unknown or arguments is not None:
                raise TypeError(
                    f"Unexpected keyword argument(s) for tool {self.name!r}: "
                    f"{', '.join(unknown or sorted(values))}; pass the arguments as "
                    "arguments={...} and runtime data through the FunctionInvocationContext"
                )
            arguments = values
        if arguments is None:
            arguments = context.arguments if context is not None else {}
        dump = getattr(arguments, "model_dump", None)
        if callable(dump) and not isinstance(arguments, Mapping):
            arguments = dump(exclude_unset=True)
        self._check_given(arguments)
        return arguments  # type: ignore[no-any-return]

    def _check_given(self, arguments: Mapping[str, Any]) -> None:
        """TL-14: arguments a caller passes to `invoke`, checked against the schema,
        upstream's words first; Python values that have no JSON form (a caller's own
        objects) are not checked."""
        if not all(type(v) in _JSON_TYPES for v in arguments.values()):
            return
        issues = self.validate_arguments(dict(arguments))
        if not issues:
            return
        first = issues[0]
        missing = [
            i.path[2:]
            for i in issues
            if i.problem.startswith("required property is missing")
        ]
        if missing:
            head = (
                f"Missing required argument(s) for {self.name!r}: {', '.join(missing)}"
            )
        elif first.problem.startswith("unexpected property"):
            head = f"Unexpected argument(s) for {self.name!r}: {first.path[2:]}"
        else:
            kind = "value" if first.problem.startswith("expected one of") else "type"
            head = f"Invalid {kind} for {first.path[2:]!r} in {self.name!r}"
        raise ToolArgumentError(f"{head}\n{describe_issues(issues)}")

    async def _run(
        self, arguments: Mapping[str, Any], context: Any, accepted: bool = False
    ) -> Any:
        """The function's own value (TL-4): async functions are awaited, sync ones run
        in a worker thread so they never block the event loop. ``accepted``: the
        compiled check accepted the arguments (LP-35), whose types may need no
        conversion then."""
        func = self.func
        if func is None:
            raise ToolError(
                f"tool {self.name!r} is declaration-only and cannot be invoked"
            )
        if (
            self.max_invocations is not None
            and self.invocation_count >= self.max_invocations
        ):
            raise ToolError(
                f"tool {self.name!r} has reached its maximum of {self.max_invocations} invocations"
            )
        limit = self.max_invocation_exceptions
        if limit is not None and self.invocation_exception_count >= limit:
            raise ToolError(
                f"tool {self.name!r} has failed {limit} times and can no longer be used"
            )
        # TL-10: JSON in, annotated types out; a failure names the argument and calls
        # nothing
        kwargs = (
            dict(arguments)
            if self._converter is None
            or (accepted and self._fast_check is not None and self._fast_check[2])
            else self._converter.convert(arguments)
        )
        if self._context_parameter is not None:
            kwargs[self._context_parameter] = context
        self.invocation_count += 1
        known = self._async_of
        # `func` may be replaced: asked again then
        if known is None or known[0] is not func:
            known = self._async_of = (func, _is_async(func))
        try:
            if known[1]:
                return await func(**kwargs)
            result = await asyncio.to_thread(_call_in_thread, func, kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result
        except Exception:
            self.invocation_exception_count += 1
            raise


# (the parameters it was made for, the compiled check or None, whether arguments the check
# accepts need no conversion: SC-55, LP-35)
_Compiled: TypeAlias = tuple[Any, Callable[[Any], bool] | None, bool]
# the JSON type whose values the compiled check takes exactly as a parameter's type
_EXACT_KIND = {int: "integer", str: "string", bool: "boolean"}


def _converts_nothing(
    converter: ArgumentConverter | None, parameters: Mapping[str, Any]
) -> bool:
    """LP-35: arguments the compiled check accepts convert to themselves: every
    parameter with a converter is annotated the exact type the schema asks for."""
    if converter is None:
        return True
    properties = parameters.get("properties") or {}
    for name in converter.converters:
        sub = properties.get(name)
        kind = sub.get("type") if isinstance(sub, Mapping) else None
        exact = converter.exact.get(name)
        if exact is None or _EXACT_KIND.get(exact) != kind:
            return False
    return True


class ToolArgumentError(ToolError, TypeError):
    """`FunctionTool.invoke` was given arguments its schema rejects (TL-14)."""


# the Python types of JSON values: only such arguments are checked (TL-14)
_JSON_TYPES = frozenset({str, int, float, bool, type(None), list, dict})


def _input_schema(name: str, model: Any, parameters: Any) -> Mapping[str, Any]:
    """TL-14: upstream's explicit schema, ``input_model=`` (``@tool(schema=...)``): a
    JSON schema dict, or a class with ``model_json_schema()`` (a pydantic model)."""
    if parameters is not None:
        raise ToolError(f"tool {name!r}: give parameters= or input_model=, not both")
    if isinstance(model, Mapping):
        return model
    schema_of = getattr(model, "model_json_schema", None)
    if callable(schema_of):
        return schema_of()  # type: ignore[no-any-return]
    raise ToolError(
        f"tool {name!r}: input_model must be a JSON schema dict or a class with model_json_schema()"
    )


class ToolStoppedIteration(ToolError):
    """A tool raised `StopIteration` or `StopAsyncIteration`, which cannot cross an
    executor future (the await would never end); it is re-raised as this error
    (TL-9)."""


def _call_in_thread(func: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    try:
        return func(**kwargs)
    except (StopIteration, StopAsyncIteration) as exc:
        raise ToolStoppedIteration(
            f"the tool raised {type(exc).__name__}: {exc}"
        ) from None


def _find_context_parameter(
    func: Callable[..., Any], parameters: Mapping[str, Any]
) -> str | None:
    """The parameter annotated `FunctionInvocationContext` (SC-5), found without
    generation, or with an explicit schema an un-annotated ``ctx`` the schema does not
    name (TL-14)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    names = frozenset({"FunctionInvocationContext"})
    found = [p.name for p in params if names_context(p.annotation, names)]
    if any(
        p.name == "ctx" and p.annotation is p.empty for p in params
    ) and "ctx" not in parameters.get("properties", ()):
        found.append("ctx")
    if len(found) > 1:  # SC-5: a ValueError, as upstream's
        raise TwoContextsError(
            f"tool function {func.__name__!r} has multiple FunctionInvocationContext parameters"
        )
    return found[0] if found else None


def _takes_self(func: Callable[..., Any]) -> bool:
    try:
        first = next(iter(inspect.signature(func).parameters), None)
    except (TypeError, ValueError):
        return False
    return first in ("self", "cls") and not inspect.ismethod(func)


def _is_async(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        type(func).__call__
    )


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    approval_mode: ApprovalMode = "never_require",
    sequential: bool = False,
    max_invocations: int | None = None,
    max_invocation_exceptions: int | None = None,
    schema: Any = None,
    result_parser: Callable[[Any], Any] | _SkipParsing | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    approval_mode: ApprovalMode = "never_require",
    sequential: bool = False,
    max_invocations: int | None = None,
    max_invocation_exceptions: int | None = None,
    schema: Any = None,
    result_parser: Callable[[Any], Any] | _SkipParsing | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a `FunctionTool`: ``@tool`` or ``@tool(name=..., ...)``
    (TL-1); ``schema`` is an explicit argument schema (a JSON schema, or a
    pydantic-style model), TL-14."""

    def make(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            name=name or str(getattr(f, "__name__", "")),
            description=description or "",
            func=f,
            approval_mode=approval_mode,
            sequential=sequential,
            max_invocations=max_invocations,
            max_invocation_exceptions=max_invocation_exceptions,
            input_model=schema,
            result_parser=result_parser,
        )

    return make(func) if func is not None else make


@runtime_checkable
class ToolProtocol(Protocol):
    """A tool the loop can call (TL-2): a name, a JSON schema of its parameters, and
    ``invoke``.

    `FunctionTool`, an agent's ``as_tool()`` and MCP tools have this shape; any object
    with it is a tool. A declaration dict or a declaration-only tool is declared to the
    model but not run (LP-11).
    """

    name: str
    parameters: Any

    async def invoke(
        self, arguments: Mapping[str, Any], context: Any = None
    ) -> Any: ...


def result_value(value: Any) -> Any:
    """A tool's return value as JSON data for a function_result (TL-5), strict JSON
    (TL-11)."""
    kind = type(value)
    if value is None or kind is str or kind is bool:
        return value
    if isinstance(value, str | bool):
        return value
    # TL-11: an integer too long for the next request becomes its digits
    if isinstance(value, int):
        # below 2**60: at most 19 digits, compared without a call
        short_enough = kind is int and -_TWO_60 < value < _TWO_60
        if short_enough and _validate._argument_limits.max_integer_digits >= 19:
            return value
        return value if _short(value) else str(value)
    if isinstance(value, float):  # TL-11: NaN and the infinities have no JSON form
        return value if math.isfinite(value) else _NON_FINITE[str(value)]
    if isinstance(value, Mapping):
        return {str(k): result_value(v) for k, v in value.items()}
    if isinstance(value, Sequence | Set) and not isinstance(
        value, bytes | bytearray | memoryview
    ):
        return [result_value(v) for v in value]
    # a class is "anything else", even with a to_dict method
    if isinstance(value, type):
        return str(value)
    # ours, or a pydantic model
    to_dict = getattr(value, "to_dict", None) or getattr(value, "model_dump", None)
    if callable(to_dict):
        return result_value(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return result_value(dataclasses.asdict(value))
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return str(value)


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_TWO_60 = 2**60
_LOG2_10 = math.log2(10)


def _short(value: int) -> bool:
    """TL-11: at most `ArgumentLimits.max_integer_digits` decimal digits."""
    limit = argument_limits().max_integer_digits
    # |value| < 10 ** (limit - 1): no need to print it
    if value.bit_length() <= (limit - 1) * _LOG2_10:
        return True
    try:
        return len(str(abs(value))) <= limit
    # beyond sys.get_int_max_str_digits(): str(value) raises, an error result
    except ValueError:
        return False


# repr and == from _Written: a cheaper import (PK-16)
@dataclasses.dataclass(repr=False, eq=False)
class FunctionInvocationConfiguration(_Written):
    """How the tool loop behaves (seed 000 defaults, plus `max_function_calls`) (LP-1).

    Every assignment is validated, by attribute (``config.max_iterations = 5``) or by
    item (``config["max_iterations"] = 5``, upstream's spelling); a bad value or an
    unknown key is an error naming the field, and the configuration keeps its old value
    (LP-24).
    """

    enabled: bool = True
    max_iterations: int = 40
    max_consecutive_errors_per_request: int = 3
    terminate_on_unknown_calls: bool = False
    additional_tools: list[Any] = dataclasses.field(default_factory=list)
    include_detailed_errors: bool = False
    max_function_calls: int | None = None
    # LP-34: upstream's switch; True trusts any approval
    disable_approval_response_binding: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        _check(_known(name, AttributeError), value)
        object.__setattr__(self, name, value)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, _known(key, KeyError))

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, _known(key, KeyError), value)

    def keys(self) -> list[str]:
        return list(_CONFIG)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in _CONFIG else default

    @classmethod
    def coerce(
        cls, value: FunctionInvocationConfiguration | Mapping[str, Any] | None
    ) -> FunctionInvocationConfiguration:
        """A configuration from None (the defaults), a configuration, or a mapping of
        its fields (LP-24)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls(**{_known(str(k), KeyError): v for k, v in value.items()})
        raise TypeError(
            f"function_invocation_configuration must be a FunctionInvocationConfiguration or a dict, "
            f"got {type(value).__name__}"
        )


# field -> (its type, its least value, whether None is allowed): what an assignment is
# checked against (LP-24)
_CONFIG: dict[str, tuple[type, int, bool]] = {
    "enabled": (bool, 0, False),
    "max_iterations": (int, 1, False),
    "max_consecutive_errors_per_request": (int, 0, False),
    "terminate_on_unknown_calls": (bool, 0, False),
    "additional_tools": (list, 0, False),
    "include_detailed_errors": (bool, 0, False),
    "max_function_calls": (int, 1, True),
    "disable_approval_response_binding": (bool, 0, False),
}


# LP-60: upstream's configuration keys minagent has not, and what to write instead
# (error text: upstream's spellings are answered by the core itself)
CONFIG_SPELLINGS = {
    "max_duration_seconds": "wrap the run in asyncio.timeout(seconds); cancelling a run closes what it opened",
    "allow_concurrent_invocation": "a batch's calls run concurrently; a tool made with sequential=True runs alone",
}


def _known(name: str, error: type[Exception]) -> str:
    """LP-24, LP-60: ``name`` when it is a field; else ``error`` listing the fields, and
    what to write instead when the key is upstream's."""
    if name not in _CONFIG:
        hint = CONFIG_SPELLINGS.get(name)
        instead = f"; {name} is upstream's: {hint}" if hint else ""
        raise error(
            f"FunctionInvocationConfiguration has no field {name!r}; fields: {', '.join(_CONFIG)}{instead}"
        )
    return name


def _check(name: str, value: Any) -> None:
    kind, low, optional = _CONFIG[name]
    enough = isinstance(value, int) and not isinstance(value, bool) and value >= low
    if (optional and value is None) or (
        isinstance(value, kind) and (kind is not int or enough)
    ):
        return
    if kind is not int:
        raise ValueError(f"{name} must be a {kind.__name__}, got {value!r}")
    # upstream's words first (LP-24)
    at_least = "0 or more" if low == 0 else f"at least {low}"
    raise ValueError(
        f"{name} must be {at_least}{' or None' if optional else ''} (an int), got {value!r}"
    )
