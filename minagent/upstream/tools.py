"""Progressive tool exposure and direct-invocation checks, upstream's tool API on
minagent's (spec/loop.md LP-33, spec/tools.md TL-14).

`add_tools` / `remove_tools` are `FunctionInvocationContext.add_tools` /
``remove_tools``: they change the run's live tool list (``context.tools``), which the
loop reads after the batch, so the next model call sees the new tools. `check_arguments`
is what `FunctionTool.invoke` checks when a caller (not the loop, which validated
already) passes arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from minagent import Content, FunctionInvocationContext, FunctionTool, ToolError
from minagent._issues import describe_issues
from minagent._tools import result_value
from minagent._toolset import normalize_tools, tool_name

__all__ = [
    "ToolArgumentError",
    "add_tools",
    "check_arguments",
    "generated_form",
    "input_schema",
    "invoke_arguments",
    "parse_result",
    "remove_tools",
    "tool_from_dict",
]


def add_tools(context: FunctionInvocationContext, tools: Any) -> None:
    """LP-33: the same tool again is nothing new; another tool with a name already there
    is a `ValueError`, and then none of ``tools`` is added."""
    live = _live(context, "add")
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


def remove_tools(context: FunctionInvocationContext, tools: Any) -> None:
    """LP-33: by name, tool or function; a name that is not there is ignored."""
    items = (
        [tools]
        if isinstance(tools, str) or not isinstance(tools, list | tuple)
        else tools
    )
    gone = {
        i if isinstance(i, str) else tool_name(i) or getattr(i, "__name__", None)
        for i in items
    }
    live = _live(context, "remove")
    live[:] = [
        t
        for t in live
        if tool_name(t) not in gone and getattr(t, "func", None) not in items
    ]


def _live(context: FunctionInvocationContext, verb: str) -> list[Any]:
    if context.tools is None:
        raise RuntimeError(
            f"Cannot {verb} tools: this FunctionInvocationContext is not bound to a live agent run "
            "(only a tool called by the function-invocation loop can change the run's tools)"
        )
    return context.tools


class ToolArgumentError(ToolError, TypeError):
    """`FunctionTool.invoke` was given arguments its schema rejects (TL-14)."""


_JSON_TYPES = frozenset({str, int, float, bool, type(None), list, dict})


def check_arguments(tool: FunctionTool, arguments: Mapping[str, Any]) -> None:
    """TL-14: arguments a caller passes to `invoke`, checked against the schema,
    upstream's words first; Python values that have no JSON form (a caller's own
    objects) are not checked."""
    if not all(type(v) in _JSON_TYPES for v in arguments.values()):
        return
    issues = tool.validate_arguments(dict(arguments))
    if not issues:
        return
    first = issues[0]
    missing = [
        i.path[2:]
        for i in issues
        if i.problem.startswith("required property is missing")
    ]
    if missing:
        head = f"Missing required argument(s) for {tool.name!r}: {', '.join(missing)}"
    elif first.problem.startswith("unexpected property"):
        head = f"Unexpected argument(s) for {tool.name!r}: {first.path[2:]}"
    else:
        kind = "value" if first.problem.startswith("expected one of") else "type"
        head = f"Invalid {kind} for {first.path[2:]!r} in {tool.name!r}"
    raise ToolArgumentError(f"{head}\n{describe_issues(issues)}")


def tool_from_dict(
    data: Mapping[str, Any], dependencies: Mapping[str, Any] | None
) -> FunctionTool:
    """TL-16: a tool from its dict form, upstream's ``"function_tool"``
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
    return FunctionTool(**kwargs)


def input_schema(name: str, model: Any, parameters: Any) -> Mapping[str, Any]:
    """TL-14: upstream's explicit schema, ``input_model=`` (``@tool(schema=...)``): a
    JSON schema dict, or a class with ``model_json_schema()`` (a pydantic model)."""
    if parameters is not None:
        raise ToolError(f"tool {name!r}: give parameters= or input_model=, not both")
    schema_of = getattr(model, "model_json_schema", None)
    if isinstance(model, Mapping):
        return model
    if callable(schema_of):
        return schema_of()  # type: ignore[no-any-return]
    raise ToolError(
        f"tool {name!r}: input_model must be a JSON schema dict or a class with model_json_schema()"
    )


def invoke_arguments(
    tool: FunctionTool, arguments: Any, context: Any, values: dict[str, Any]
) -> Mapping[str, Any]:
    """TL-14: what `invoke` was given as the arguments: ``arguments`` (a mapping, or a
    model with ``model_dump()``), else the parameters as keywords, else
    ``context.arguments``; checked."""
    if values:
        unknown = sorted(set(values) - set(tool.parameters.get("properties", ())))
        if unknown or arguments is not None:
            raise TypeError(
                f"Unexpected keyword argument(s) for tool {tool.name!r}: {', '.join(unknown or sorted(values))}; "
                "pass the arguments as arguments={...} and runtime data through the FunctionInvocationContext"
            )
        arguments = values
    if arguments is None:
        arguments = context.arguments if context is not None else {}
    dump = getattr(arguments, "model_dump", None)
    if callable(dump) and not isinstance(arguments, Mapping):
        arguments = dump(exclude_unset=True)
    check_arguments(tool, arguments)
    return arguments  # type: ignore[no-any-return]


def parse_result(result: Any) -> list[Content]:
    """TL-14: a tool's value as contents: a str (None: "") is a text, a `Content` or a
    list holding contents is kept (its other items as JSON text), anything else its JSON
    text."""
    if result is None or isinstance(result, str):
        return [Content.from_text(result or "")]
    if isinstance(result, Content):
        return [result]
    if isinstance(result, list) and any(isinstance(item, Content) for item in result):
        return [
            item if isinstance(item, Content) else parse_result(item)[0]
            for item in result
        ]
    value = result_value(result)
    return [Content.from_text(value if isinstance(value, str) else json.dumps(value))]


def generated_form(parameters: Mapping[str, Any], tool_name: str) -> dict[str, Any]:
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
