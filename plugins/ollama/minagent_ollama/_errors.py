"""Errors of the Ollama plugin and the reading of non-2xx answers (spec/ollama.md OL-14, OL-18 .. OL-20)."""

from __future__ import annotations

import http
import json
import re
from collections.abc import Mapping
from typing import Any

from minagent import ChatResponseUpdate, NotFoundError, ProviderError
from minagent.providers import describe, error_for_status

__all__ = [
    "OllamaModelNotFoundError",
    "OllamaProtocolError",
    "OllamaStreamError",
    "error_for_answer",
    "parse_error",
]

PROVIDER = "ollama"
_SNIPPET = 200  # characters of offending data quoted in an error (PV-10)
_ERROR_TEXT = 500  # characters of a plain-text error body kept (PV-11)


class OllamaStreamError(ProviderError):
    """Ollama reported an error object, inside a stream or as a 2xx body (PV-14, OL-18).

    ``updates`` holds the updates decoded by the same ``feed()`` / ``close()`` call before the
    error; a transport yields them before raising.
    """

    def __init__(self, message: str, *, body: Any = None) -> None:
        super().__init__(message, provider=PROVIDER)
        self.body = body
        self.updates: list[ChatResponseUpdate] = []


class OllamaProtocolError(ProviderError, ValueError):
    """Ollama's answer is not what the protocol allows (PV-10): bad JSON, wrong shape."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider=PROVIDER)
        self.updates: list[ChatResponseUpdate] = []


class OllamaModelNotFoundError(NotFoundError):
    """HTTP 404: the model is not pulled on this Ollama server (OL-20). ``model`` names it."""

    def __init__(self, message: str, *, model: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.model = model


def _snippet(data: object, limit: int = _SNIPPET) -> str:
    text = data if isinstance(data, str) else repr(data)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


# --------------------------------------------------------------------------------------------
# Errors of non-2xx answers (OL-19, OL-20)


def parse_error(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(provider message, request id)`` of a non-2xx answer (PV-11, OL-19)."""
    request_id = None
    if headers:
        lowered = {str(k).lower(): v for k, v in headers.items()}
        request_id = lowered.get("x-request-id") or lowered.get("request-id") or None
    data: Any = body
    text = ""
    if isinstance(body, bytes | bytearray):
        text = bytes(body).decode("utf-8", errors="replace")
    elif isinstance(body, str):
        text = body
    elif isinstance(body, Mapping):
        text = _dump(body)
    if text and not isinstance(body, Mapping):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
    message = _error_message(data) if isinstance(data, Mapping) else None
    if message is None:
        message = text.strip()[:_ERROR_TEXT] if text.strip() else None
    if message is None:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        message = f"HTTP {status} {reason}".rstrip()
    return message, request_id


def _error_message(data: Mapping[str, Any]) -> str | None:
    error = data.get("error")
    if isinstance(error, Mapping):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message
    elif isinstance(error, str) and error:
        return error
    message = data.get("message")
    if isinstance(message, str) and message:
        return message
    return None


_NOT_PULLED = re.compile(r"model\s+[\"'`]?(?P<model>[^\"'`\s]+)[\"'`]?\s+not found", re.IGNORECASE)


def error_for_answer(
    status: int,
    message: str,
    request_id: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The typed error of a non-2xx answer: PV-23's class, or OL-20's for a model not pulled."""
    match = _NOT_PULLED.search(message) if status == 404 else None
    if match is None:
        return error_for_status(status, message, request_id, provider=PROVIDER, headers=headers)
    model = match.group("model")
    return OllamaModelNotFoundError(
        describe(status, f"{message} (run: ollama pull {model})", request_id, provider=PROVIDER),
        model=model,
        status=status,
        provider_message=message,
        request_id=request_id,
        retryable=False,
        provider=PROVIDER,
        headers=headers,
    )
