"""Structured output: ``options={"response_format": T}`` and ``response.value``
(spec/structured.md).

Optional: the core loads this folder only when a run asks for a ``response_format`` (the
seam is `minagent.clients.response_format`, listed in spec/decisions.md).
"""

from .format import (
    ResponseFormat,
    StructuredOutputDecodeError,
    StructuredOutputError,
    StructuredOutputValidationError,
    strict_schema,
)

__all__ = [
    "ResponseFormat",
    "StructuredOutputDecodeError",
    "StructuredOutputError",
    "StructuredOutputValidationError",
    "strict_schema",
]
