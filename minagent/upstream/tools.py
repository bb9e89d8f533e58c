"""Progressive tool exposure and direct-invocation checks, upstream's tool API on minagent's
(spec/loop.md LP-30, spec/tools.md TL-14).

`add_tools` / `remove_tools` are `FunctionInvocationContext.add_tools` / ``remove_tools``: they
change the run's live tool list (``context.tools``), which the loop reads after the batch, so the
next model call sees the new tools. `check_arguments` is what `FunctionTool.invoke` checks when a
caller (not the loop, which validated already) passes arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minagent import FunctionInvocationContext, FunctionTool, ToolError
from minagent._issues import describe_issues
from minagent._toolset import normalize_tools, tool_name

__all__ = ["ToolArgumentError", "add_tools", "check_arguments", "remove_tools"]


def add_tools(context: FunctionInvocationContext, tools: Any) -> None:
    """LP-30: the same tool again is nothing new; another tool with a name already there is a
    `ValueError`, and then none of ``tools`` is added."""
    live = _live(context, "add")
    names = {tool_name(t): t for t in live}
    added = []
    for item in normalize_tools(tools):
        known = names.get(tool_name(item))
        if known is not item and known is not None:
            raise ValueError(f"a different tool named {tool_name(item)!r} is already among the run's tools")
        if known is None:
            names[tool_name(item)] = item
            added.append(item)
    live.extend(added)


def remove_tools(context: FunctionInvocationContext, tools: Any) -> None:
    """LP-30: by name, tool or function; a name that is not there is ignored."""
    items = [tools] if isinstance(tools, str) or not isinstance(tools, list | tuple) else tools
    gone = {i if isinstance(i, str) else tool_name(i) or getattr(i, "__name__", None) for i in items}
    live = _live(context, "remove")
    live[:] = [t for t in live if tool_name(t) not in gone and getattr(t, "func", None) not in items]


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
    """TL-14: arguments a caller passes to `invoke`, checked against the schema, upstream's words
    first; Python values that have no JSON form (a caller's own objects) are not checked."""
    if not all(type(v) in _JSON_TYPES for v in arguments.values()):
        return
    issues = tool.validate_arguments(dict(arguments))
    if not issues:
        return
    first = issues[0]
    missing = [i.path[2:] for i in issues if i.problem.startswith("required property is missing")]
    if missing:
        head = f"Missing required argument(s) for {tool.name!r}: {', '.join(missing)}"
    elif first.problem.startswith("unexpected property"):
        head = f"Unexpected argument(s) for {tool.name!r}: {first.path[2:]}"
    else:
        kind = "value" if first.problem.startswith("expected one of") else "type"
        head = f"Invalid {kind} for {first.path[2:]!r} in {tool.name!r}"
    raise ToolArgumentError(f"{head}\n{describe_issues(issues)}")
