"""Upstream's other content kinds on minagent's `Content` (spec/types.md TY-15).

Upstream has content kinds minagent's own providers never produce (hosted files, code
interpreter, shell and MCP server tool calls, OAuth consent, ...). Each is a `Content`
of that ``type`` whose other fields live in ``extra`` and are read as attributes
(``content.file_id``); the factories (``Content.from_hosted_file(...)``) are made here
and reach `Content`'s class through the core's edge (``minagent._edge``), which this
folder fills when it is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minagent import Content
from minagent._types import CONTENT_LISTS, UPSTREAM_FIELDS

__all__ = ["KINDS", "factory"]

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
