"""Upstream's other content kinds and content algebra on minagent's `Content`
(spec/types.md TY-15, TY-16).

Upstream has content kinds minagent's own providers never produce (hosted files, code
interpreter, shell and MCP server tool calls, OAuth consent, ...). Each is a `Content`
of that ``type`` whose other fields live in ``extra`` and are read as attributes
(``content.file_id``); the factories (``Content.from_hosted_file(...)``) are found here
through the seam on Content's class. `add` is ``Content + Content``: two chunks merged
as upstream merges them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from minagent import Content, ContentError, UsageDetails
from minagent._exceptions import AdditionItemMismatch
from minagent._types import CONTENT_LISTS, UPSTREAM_FIELDS
from minagent._wire import add_usage

__all__ = ["KINDS", "add", "factory"]

# factory name -> (kind, its parameters in upstream's order, fields it always sets)
KINDS: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {
    "from_hosted_file": ("hosted_file", ("file_id", "media_type", "name"), {}),
    "from_hosted_vector_store": ("hosted_vector_store", ("vector_store_id",), {}),
    "from_code_interpreter_tool_call": (
        "code_interpreter_tool_call",
        ("call_id", "inputs"),
        {},
    ),
    "from_code_interpreter_tool_result": (
        "code_interpreter_tool_result",
        ("call_id", "outputs"),
        {},
    ),
    "from_image_generation_tool_call": (
        "image_generation_tool_call",
        ("image_id",),
        {},
    ),
    "from_image_generation_tool_result": (
        "image_generation_tool_result",
        ("image_id", "outputs"),
        {},
    ),
    "from_shell_tool_call": (
        "shell_tool_call",
        ("call_id", "commands", "timeout_ms", "max_output_length", "status"),
        {},
    ),
    "from_shell_tool_result": (
        "shell_tool_result",
        ("call_id", "outputs", "max_output_length", "status"),
        {},
    ),
    "from_shell_command_output": (
        "shell_command_output",
        ("stdout", "stderr", "exit_code", "timed_out"),
        {},
    ),
    "from_mcp_server_tool_call": (
        "mcp_server_tool_call",
        ("call_id", "tool_name", "server_name", "arguments"),
        {"informational_only": True},
    ),
    "from_mcp_server_tool_result": (
        "mcp_server_tool_result",
        ("call_id", "output"),
        {},
    ),
    "from_search_tool_call": (
        "search_tool_call",
        ("call_id", "tool_name", "arguments", "status"),
        {},
    ),
    "from_search_tool_result": (
        "search_tool_result",
        ("call_id", "tool_name", "result", "items", "status"),
        {},
    ),
    "from_oauth_consent_request": (
        "oauth_consent_request",
        ("consent_link",),
        {"user_input_request": True},
    ),
}
_OWN = frozenset(f.name for f in Content.__dataclass_fields__.values())


def factory(cls: type[Content], name: str) -> Callable[..., Content]:
    """TY-15: ``Content.<name>`` for one of upstream's other kinds; its upstream-only
    fields go to ``extra``."""
    if name not in KINDS:
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")
    kind, names, always = KINDS[name]

    def make(*args: Any, **fields: Any) -> Content:
        fields.update(zip(names, args, strict=False))
        fields.update(always)
        if "error_details" in fields:
            fields["details"] = fields.pop("error_details")
        unknown = sorted(set(fields) - _OWN - UPSTREAM_FIELDS)
        if unknown:
            raise TypeError(
                f"Content.{name}() got an unexpected keyword argument {unknown[0]!r}"
            )
        extra = {
            k: list(v) if k in CONTENT_LISTS else v
            for k, v in fields.items()
            if k not in _OWN and v is not None
        }
        return cls(kind, **{k: v for k, v in fields.items() if k in _OWN}, extra=extra)

    make.__name__ = name
    make.__doc__ = (
        f"Upstream's ``{kind}`` content (TY-15); its fields are read as attributes."
    )
    return make


def add(first: Content, other: Content) -> Content:
    """TY-16: ``first + other`` for two chunks of one content of the same kind."""
    if not isinstance(other, Content):
        raise TypeError(
            f"Incompatible type: cannot add Content and {type(other).__name__}"
        )
    if first.type != other.type:
        raise TypeError(f"Cannot add Content of type {first.type!r} and {other.type!r}")
    common: dict[str, Any] = {
        "additional_properties": {
            **other.additional_properties,
            **first.additional_properties,
        },
        "raw_representation": _combined(
            first.raw_representation, other.raw_representation
        ),
    }
    if first.type in ("text", "text_reasoning"):
        if (
            first.type == "text_reasoning"
            and first.id
            and other.id
            and first.id != other.id
        ):
            raise AdditionItemMismatch(
                f"cannot add text_reasoning contents with different ids: {first.id!r} != {other.id!r}"
            )
        texts = [t for t in (first.text, other.text) if t is not None]
        return replace(
            first,
            text="".join(texts) if texts else None,
            id=first.id or other.id,
            protected_data=other.protected_data or first.protected_data,
            annotations=_combined(first.annotations, other.annotations),
            extra={**other.extra, **first.extra},
            **common,
        )
    if first.type == "usage":
        summed = add_usage(_usage(first.usage_details), _usage(other.usage_details))
        usage = UsageDetails()
        usage.update(
            (k, v)
            for k, v in (summed or {}).items()
            if isinstance(v, int) and not isinstance(v, bool)
        )
        return replace(first, usage_details=usage, **common)
    if first.type == "function_call":
        if other.call_id and first.call_id != other.call_id:
            raise ContentError("Cannot add function calls with different call_ids")
        return replace(
            first,
            name=first.name or other.name,
            arguments=_arguments(first.arguments, other.arguments),
            id=first.id or other.id,
            exception=first.exception or other.exception,
            informational_only=first.informational_only or other.informational_only,
            user_input_request=first.user_input_request or other.user_input_request,
            extra={**other.extra, **first.extra},
            **common,
        )
    raise ContentError(f"Addition not supported for content type: {first.type}")


def _usage(value: Any) -> UsageDetails | None:
    if value is None or isinstance(value, UsageDetails):
        return value
    usage = UsageDetails()
    usage.update(value)
    return usage


def _combined(a: Any, b: Any) -> Any:
    """Upstream's merge of two raw representations (or annotation lists): one, or both
    in a list."""
    if a is None or b is None:
        return b if a is None else a
    return [*(a if isinstance(a, list) else [a]), *(b if isinstance(b, list) else [b])]


def _arguments(a: Any, b: Any) -> Any:
    if not a or not b:
        return a or b
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **b}
    raise TypeError(
        f"Incompatible argument types: {type(a).__name__} and {type(b).__name__}"
    )
