"""Options merging (spec/options.md, OP-1 .. OP-7).

Options are plain dicts (``ChatOptions`` documents the well-known keys). ``merge_options`` is
the one place where two layers of options meet: agent defaults, context providers, run options.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

__all__ = ["ChatOptions", "merge_options", "tool_name"]


class ChatOptions(TypedDict, total=False):
    """The option keys minagent itself understands; providers may accept more."""

    model: str
    instructions: str
    tools: list[Any]
    tool_choice: str | dict[str, Any]
    temperature: float
    top_p: float
    max_tokens: int
    stop: str | list[str]
    seed: int
    logit_bias: dict[str, float]
    frequency_penalty: float
    presence_penalty: float
    response_format: Any
    metadata: dict[str, Any]
    user: str
    store: bool
    conversation_id: str
    parallel_tool_calls: bool


_DICT_MERGED = frozenset({"metadata", "logit_bias"})


def tool_name(tool: Any) -> str | None:
    """The name of a tool object or of a raw tool declaration dict (``{"name"}`` or ``{"function": {"name"}}``)."""
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

    The same object twice is kept once; two different objects with one name are an error.
    """
    out: list[Any] = []
    seen: dict[str, Any] = {}
    for tool in (*_tool_list(base), *_tool_list(override)):
        name = tool_name(tool)
        if name is None:
            out.append(tool)
            continue
        known = seen.get(name)
        if known is None:
            seen[name] = tool
            out.append(tool)
        elif known is not tool and not _equal_declarations(known, tool):
            raise ValueError(f"duplicate tool name {name!r}: two different tools are registered under it")
    return out


def _equal_declarations(a: Any, b: Any) -> bool:
    """Equal declaration dicts are one tool; any other object is only the same as itself (OP-3)."""
    return isinstance(a, Mapping) and isinstance(b, Mapping) and a == b


def merge_options(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge ``override`` into ``base`` and return a new dict; neither input is changed.

    The rules, one per key (the table in spec/options.md):

    - a None value in ``override`` never replaces anything (OP-1), and the result holds no None (OP-2);
    - ``tools``: concatenated, de-duplicated by name (OP-3);
    - ``instructions``: joined with a newline when both are non-empty (OP-4);
    - ``metadata``, ``logit_bias``: dict-merged, override wins per key (OP-5);
    - every other key: the override wins (OP-6).
    """
    for argument, value in (("base", base), ("override", override)):
        if value is not None and type(value) is not dict and not isinstance(value, Mapping):
            raise TypeError(
                f"merge_options: {argument} must be a mapping of options or None, got {type(value).__name__}"
            )
    result: dict[str, Any] = {k: v for k, v in (base or {}).items() if v is not None}
    if "tools" in result:
        result["tools"] = merge_tools(result["tools"], None)
    for key, value in (override or {}).items():
        if value is None:
            continue
        current = result.get(key)
        if key == "tools":
            result[key] = merge_tools(current, value)
        elif key == "instructions":
            result[key] = "\n".join(part for part in (current, value) if part)
        elif key in _DICT_MERGED and isinstance(current, Mapping) and isinstance(value, Mapping):
            result[key] = {**current, **value}
        else:
            result[key] = dict(value) if key in _DICT_MERGED and isinstance(value, Mapping) else value
    return result
