"""Tool lists, normalised once per run: `ToolSpec` and `ToolSet` (spec/tools.md TL-2,
TL-12; spec/options.md OP-3; spec/loop.md LP-11, LP-13; spec/mcp.md MCP-20, MCP-21).

Rules
-----
1. A tool list is normalised here and nowhere else: a function becomes a `FunctionTool`,
   one function given at several levels is one tool, a name belongs to one tool (OP-3,
   MCP-21), and a tool set (a connected MCP server) stands for its tools (MCP-20).
2. A run's tools are normalised once, at its entry. A `ToolSet` is that result: the
   tools in order (it is the list a provider receives as ``options["tools"]``) with one
   `ToolSpec` per tool, so every later reader — the call runner, the approval check, a
   provider's codec — takes the records as they are and never normalises again.
3. A tool given as a dict is declared, never run (LP-11): its record says so
   (``runnable`` None).

Theory of operation
-------------------
`ToolSpec.of(item)` reads any tool once: its name, description and JSON schema, what
answers a call (the tool itself, or nothing for a declaration), whether a call needs
approval (LP-13) and whether it runs alone (LP-5). A dict that declares no function (a
provider's hosted tool) gets a record with ``name`` None and is passed to the provider
as it is.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ._tools import FunctionTool, ToolError, tool

__all__ = [
    "ToolSet",
    "ToolSpec",
    "expand_tool_sets",
    "is_tool",
    "is_tool_set",
    "merge_tools",
    "normalize_tools",
]
__all__ += ["tool_map", "tool_name", "tool_specs"]


class ToolSpec(NamedTuple):
    """One tool, read once (see the module docstring)."""

    name: str | None  # None: a provider's hosted tool, declared as it is
    description: str
    parameters: Mapping[str, Any] | None
    tool: Any  # the object as given: a FunctionTool, a tool-like, a declaration dict
    runnable: Any  # what answers a call: the tool, or None for a declaration (LP-11)
    approval: bool  # a call waits for the caller's approval (LP-13)
    sequential: bool  # a call runs alone (LP-5)
    # the dict, when the tool was given as one
    declaration: Mapping[str, Any] | None = None

    @property
    def wire(self) -> Mapping[str, Any] | None:
        """A dict with a ``type`` is a provider's own declaration, sent as it is; else
        None."""
        declaration = self.declaration
        return (
            declaration if declaration is not None and "type" in declaration else None
        )

    @classmethod
    def of(cls, item: Any) -> "ToolSpec":
        name = tool_name(item)
        if isinstance(item, Mapping):
            declared = item.get("function", item)
            declared = declared if isinstance(declared, Mapping) else {}
            parameters = declared.get("parameters")
            description = declared.get("description")
            return cls(
                name,
                description if isinstance(description, str) else "",
                parameters if isinstance(parameters, Mapping) else None,
                item,
                None,
                False,
                False,
                item,
            )
        parameters = getattr(item, "parameters", None)
        runnable = (
            item
            if hasattr(item, "invoke") and not getattr(item, "declaration_only", False)
            else None
        )
        return cls(
            name,
            str(getattr(item, "description", "") or ""),
            parameters if isinstance(parameters, Mapping) else None,
            item,
            runnable,
            getattr(item, "approval_mode", None) == "always_require",
            bool(getattr(item, "sequential", False)),
        )


class ToolSet(list[Any]):
    """The tools of a run, normalised once: the tools in order, and their `ToolSpec`
    records."""

    __slots__ = ("approval_names", "specs")

    specs: tuple[ToolSpec, ...]
    # LP-13: the names of the tools whose calls wait for approval
    approval_names: frozenset[str]

    @classmethod
    def of(cls, tools: Any, known: list[Any] | None = None) -> "ToolSet":
        """``tools`` normalised (TL-2, OP-3): a `ToolSet` is taken as it is."""
        if type(tools) is ToolSet and tools.current():
            return tools
        made = cls(
            merge_tools(normalize_tools(tools, [] if known is None else known), None)
        )
        made.specs = specs = tuple(ToolSpec.of(item) for item in made)
        made.approval_names = frozenset(
            s.name for s in specs if s.approval and s.name is not None
        )
        return made

    def copy(self) -> "ToolSet":
        """A new list of the same tools, sharing the records (a run's own copy,
        LP-3)."""
        made = ToolSet(self)
        made.specs, made.approval_names = self.specs, self.approval_names
        return made

    def current(self) -> bool:
        """Whether the records still describe the list (it is a list: someone may have
        edited it)."""
        specs = self.specs
        return len(specs) == len(self) and all(
            s.tool is item for s, item in zip(specs, self, strict=True)
        )


def tool_specs(tools: Iterable[Any] | None) -> tuple[ToolSpec, ...]:
    """The records of a tool list (what a provider's codec reads): a `ToolSet`'s own, or
    read now."""
    if tools is None:
        return ()
    if type(tools) is ToolSet and tools.current():
        return tools.specs
    return tuple(ToolSpec.of(item) for item in tools)


def tool_name(tool: Any) -> str | None:
    """The name of a tool object or of a raw tool declaration dict (``{"name"}`` or
    ``{"function": {"name"}}``)."""
    if isinstance(tool, Mapping):
        name = tool.get("name")
        if name is None and isinstance(tool.get("function"), Mapping):
            name = tool["function"].get("name")
        return name if isinstance(name, str) else None
    name = getattr(tool, "name", None)
    return name if isinstance(name, str) else None


def _tool_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return [value]


def merge_tools(base: Any, override: Any) -> list[Any]:
    """Concatenate two tool lists keeping the first occurrence of each name (OP-3).

    The same object twice is kept once; two different objects with one name are an
    error.
    """
    out: list[Any] = []
    seen: dict[str, Any] = {}
    for item in (*_tool_list(base), *_tool_list(override)):
        name = tool_name(item)
        if name is None:
            out.append(item)
            continue
        known = seen.get(name)
        if known is None:
            seen[name] = item
            out.append(item)
        elif known is not item and not _equal_declarations(known, item):
            raise ValueError(
                f"duplicate tool name {name!r}: two different tools are registered under it"
            )
    return out


def _equal_declarations(a: Any, b: Any) -> bool:
    """Equal declaration dicts are one tool; any other object is only the same as itself
    (OP-3)."""
    return isinstance(a, Mapping) and isinstance(b, Mapping) and a == b


def normalize_tools(tools: Any, known: list[Any] | None = None) -> list[Any]:
    """A tool list from None, one tool, a function, or a sequence of those (TL-2): the
    one normaliser.

    A plain function becomes a `FunctionTool`; with ``known`` (the tools of the levels
    before, which this call extends), a function an earlier level already wrapped is
    that same tool, so one function given at several levels is one object, kept once
    (OP-3, AG-5).
    """
    if tools is None:
        return []
    items = tools if type(tools) is list or type(tools) is tuple else _as_items(tools)
    out: list[Any] = []
    for item in items:
        if (
            type(item) is FunctionTool
            or is_tool(item)
            or (isinstance(item, Mapping) and not hasattr(item, "tools"))
        ):
            out.append(item)
        elif hasattr(item, "tools") or (
            isinstance(item, Iterable) and not isinstance(item, str | bytes)
        ):
            # TL-12, TL-61
            out.extend(
                normalize_tools(
                    list(item.tools if hasattr(item, "tools") else item), known
                )
            )
            continue
        elif callable(item):
            made = None
            if known:
                made = next(
                    (
                        t
                        for t in known
                        if isinstance(t, FunctionTool) and t.func is item
                    ),
                    None,
                )
            out.append(made or tool(item))
        else:
            raise ToolError(
                f"{item!r} is not a tool: expected a FunctionTool, a function or a declaration dict"
            )
        if known is not None:
            known.append(out[-1])
    return out


def _as_items(tools: Any) -> list[Any]:
    return (
        list(tools)
        if isinstance(tools, Sequence) and not isinstance(tools, str)
        else [tools]
    )


def is_tool(item: object) -> bool:
    """Whether ``item`` is a tool as it is: tool-like (`ToolProtocol`), or a tool set
    that stands for several tools once connected (an MCP server, MCP-20)."""
    return _is_tool_like(item) or is_tool_set(item)


def is_tool_set(item: object) -> bool:
    """An object that stands for several tools once connected: an async context manager
    with ``functions`` (an MCP server, MCP-20); `expand_tool_sets` replaces it by those
    tools."""
    return (
        hasattr(type(item), "functions")
        and hasattr(item, "__aenter__")
        and not hasattr(item, "invoke")
    )


def expand_tool_sets(tools: Sequence[Any]) -> list[Any]:
    """Each tool set replaced by its (connected) ``functions``; a name given twice is an
    error (MCP-21)."""
    if not any(is_tool_set(t) for t in tools):
        return list(tools)
    out: list[Any] = []
    source: dict[str, Any] = {}
    for item in tools:
        group = list(item.functions) if is_tool_set(item) else [item]
        for member in group:
            name = (
                getattr(member, "name", None)
                if not isinstance(member, Mapping)
                else member.get("name")
            )
            if (
                isinstance(name, str)
                and name in source
                and (source[name] is not item or is_tool_set(item))
            ):
                first, other = (
                    getattr(source[name], "name", "?"),
                    getattr(item, "name", "?"),
                )
                raise ToolError(
                    f"tool name {name!r} is provided by both {first!r} and {other!r}: give one of them "
                    f"tool_name_prefix=..., e.g. tool_name_prefix='{other}_'"
                )
            if isinstance(name, str):
                source[name] = item
            out.append(member)
    return out


def _is_tool_like(item: object) -> bool:
    """Objects that behave as tools without being FunctionTool (an agent's as_tool, MCP
    tools)."""
    return (
        isinstance(getattr(item, "name", None), str)
        and hasattr(item, "invoke")
        and hasattr(item, "parameters")
    )


def tool_map(tools: ToolSet, additional: Sequence[Any]) -> dict[str, Any]:
    """Tool name -> what answers a call to it: the tool, or a declaration-only stand-in
    for declaration dicts, declaration-only tools and ``additional_tools`` (LP-11)."""
    found: dict[str, Any] = {}
    for spec in (*tools.specs, *(ToolSpec.of(item) for item in additional)):
        if spec.name is None:
            continue
        extra = any(spec.tool is item for item in additional)
        if spec.runnable is not None and not extra:
            found[spec.name] = spec.runnable
        else:
            found[spec.name] = FunctionTool(name=spec.name, parameters=spec.parameters)
    return found
