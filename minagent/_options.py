"""Options merging (spec/options.md, OP-1 .. OP-7).

Options are plain dicts (``ChatOptions`` documents the well-known keys).
``merge_options`` is the one place where two layers of options meet: agent defaults,
context providers, run options.
"""

from collections.abc import Mapping
from typing import Any, Generic, TypedDict, TypeVar

from ._toolset import merge_tools

__all__ = ["ChatOptions", "FormatOptions", "Options", "merge_options"]
T = TypeVar("T")
Options = Mapping[str, Any] | None  # what ``options=`` of a run accepts


class _Options(TypedDict, total=False):
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
    metadata: dict[str, Any]
    user: str
    store: bool
    conversation_id: str
    parallel_tool_calls: bool
    extra_body: dict[str, Any]


class ChatOptions(_Options, total=False):
    """The option keys minagent itself understands; providers may accept more."""

    response_format: Any


class FormatOptions(_Options, Generic[T]):
    """Options whose ``response_format`` is a class: a run's ``.value`` is typed as it
    (SO-28)."""

    response_format: type[T]


_DICT_MERGED = frozenset({"metadata", "logit_bias"})


def merge_options(
    base: Mapping[str, Any] | None, override: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Merge ``override`` into ``base`` and return a new dict; neither input is changed.

    The rules, one per key (the table in spec/options.md):

    - a None value in ``override`` never replaces anything (OP-1), and the result holds
      no None (OP-2);
    - ``tools``: concatenated, de-duplicated by name (OP-3);
    - ``instructions``: joined with a newline when both are non-empty (OP-4);
    - ``metadata``, ``logit_bias``: dict-merged, override wins per key (OP-5);
    - every other key: the override wins (OP-6).
    """
    for argument, value in (("base", base), ("override", override)):
        if (
            value is not None
            and type(value) is not dict
            and not isinstance(value, Mapping)
        ):
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
        elif (
            key in _DICT_MERGED
            and isinstance(current, Mapping)
            and isinstance(value, Mapping)
        ):
            result[key] = {**current, **value}
        else:
            result[key] = (
                dict(value)
                if key in _DICT_MERGED and isinstance(value, Mapping)
                else value
            )
    return result
