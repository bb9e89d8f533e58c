"""Upstream's helper functions, written on minagent's public names (spec/upstream.md
UP-7).

Each helper does what upstream's function of the same name does, so code written for
upstream keeps working after its imports change; minagent's own code does not need them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

from minagent import (
    AgentResponseUpdate,
    ChatResponseUpdate,
    ContentError,
    FunctionInvocationConfiguration,
    Message,
    UsageDetails,
)

__all__ = [
    "Annotation",
    "TextSpanRegion",
    "ToolMode",
    "add_usage_details",
    "detect_media_type_from_base64",
    "map_chat_to_agent_update",
    "normalize_function_invocation_configuration",
    "prepend_instructions_to_messages",
    "validate_tool_mode",
]


class TextSpanRegion(TypedDict, total=False):
    """Where an annotation applies in a text: upstream's ``{"type": "text_span", ...}``
    dict."""

    type: Literal["text_span"]
    start_index: int
    end_index: int


class Annotation(TypedDict, total=False):
    """An annotation of a content (a citation): upstream's dict, kept in
    ``Content.annotations``."""

    type: Literal["citation"]
    title: str
    url: str
    file_id: str
    tool_name: str
    snippet: str
    annotated_regions: Sequence[TextSpanRegion]
    additional_properties: dict[str, Any]
    raw_representation: Any


class ToolMode(TypedDict, total=False):
    """``options["tool_choice"]`` as a dict: a mode, and the function a ``"required"``
    mode names."""

    mode: Literal["auto", "required", "none"]
    required_function_name: str
    allowed_tools: list[str]


def prepend_instructions_to_messages(
    messages: list[Message],
    instructions: str | Sequence[str] | None,
    role: str = "system",
) -> list[Message]:
    """UP-7: a new list with a message of ``role`` per instruction before ``messages``;
    an instruction that is already the message at its place (same role and text) is not
    added again."""
    if instructions is None:
        return messages
    texts = [instructions] if isinstance(instructions, str) else list(instructions)
    new = [
        text
        for i, text in enumerate(texts)
        if not (
            i < len(messages) and messages[i].role == role and messages[i].text == text
        )
    ]
    return [*(Message(role, [text]) for text in new), *messages] if new else messages


def add_usage_details(
    first: Mapping[str, Any] | None, second: Mapping[str, Any] | None
) -> UsageDetails:
    """UP-7: the key-by-key sum of two usages; a key whose value is not an int in either
    is dropped, and None is the other usage (or an empty one)."""
    if first is None or second is None:
        only = second if first is None else first
        return UsageDetails(**only) if only is not None else UsageDetails()
    keys = [*first, *(k for k in second if k not in first)]
    out = UsageDetails()
    for key in keys:
        a, b = first.get(key), second.get(key)
        if any(
            v is not None and (not isinstance(v, int) or isinstance(v, bool))
            for v in (a, b)
        ):
            continue
        if a is not None or b is not None:
            out[key] = (a or 0) + (b or 0)
    return out


def map_chat_to_agent_update(
    update: ChatResponseUpdate, agent_name: str | None
) -> AgentResponseUpdate:
    """UP-7: the agent's view of a chat update, authored by ``agent_name`` unless it
    names its author."""
    return AgentResponseUpdate.from_chat_update(update, author_name=agent_name)


def validate_tool_mode(tool_choice: str | Mapping[str, Any] | None) -> ToolMode | None:
    """UP-7: ``tool_choice`` as a `ToolMode` dict; a mode other than auto, required and
    none, or a dict that combines keys upstream does not allow together, is a
    `ContentError`."""
    if tool_choice is None:
        return None
    choice: dict[str, Any] = (
        {"mode": tool_choice} if isinstance(tool_choice, str) else dict(tool_choice)
    )
    mode = choice.get("mode")
    if mode not in ("auto", "required", "none"):
        raise ContentError(
            "tool_choice dict must contain 'mode' key"
            if "mode" not in choice
            else f"Invalid tool choice: {mode}"
        )
    if mode != "required" and "required_function_name" in choice:
        raise ContentError(
            "tool_choice with mode other than 'required' cannot have 'required_function_name'"
        )
    if "allowed_tools" in choice:
        allowed = choice["allowed_tools"]
        if mode == "none":
            raise ContentError(
                "tool_choice 'allowed_tools' is only valid when mode is 'auto' or 'required'"
            )
        if (
            isinstance(allowed, str)
            or not isinstance(allowed, Sequence)
            or not all(isinstance(n, str) for n in allowed)
        ):
            raise ContentError(
                "tool_choice 'allowed_tools' must be a non-string sequence of strings"
            )
        choice["allowed_tools"] = list(allowed)
    return choice  # type: ignore[return-value]


def normalize_function_invocation_configuration(
    config: FunctionInvocationConfiguration | Mapping[str, Any] | None,
) -> FunctionInvocationConfiguration:
    """UP-7: a configuration from None, a configuration or a dict, each value checked
    (LP-24)."""
    return FunctionInvocationConfiguration.coerce(config)


# Magic bytes of the formats upstream recognises, in the order it tries them.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"<svg", "image/svg+xml"),
    (b"<?xml", "image/svg+xml"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


def detect_media_type_from_base64(
    *,
    data_bytes: bytes | None = None,
    data_str: str | None = None,
    data_uri: str | None = None,
) -> str | None:
    """UP-7: the media type the data's first bytes announce (None when unknown); exactly
    one of the three is given, else a `ValueError`."""
    if sum(x is not None for x in (data_bytes, data_str, data_uri)) != 1:
        raise ValueError("Provide exactly one of data_bytes, data_str, or data_uri.")
    if data_uri is not None:
        header, comma, data_str = data_uri.partition(",")
        if not data_uri.startswith("data:") or not comma:
            raise ValueError("Invalid data URI format.")
        if not header.endswith(";base64"):
            raise ValueError("Data URI must use base64 encoding.")
    if data_str is not None:
        try:
            data_bytes = base64.b64decode(data_str, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("Invalid base64 data provided.") from exc
    data = data_bytes or b""
    if data.startswith(b"RIFF") and len(data) > 11:
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(data[8:12])
    return next((media for magic, media in _SIGNATURES if data.startswith(magic)), None)
