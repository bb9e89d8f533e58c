"""Shared helpers of the session tests (both modes: tests/_support/modes.py)."""

from __future__ import annotations

from typing import Any


def texts(messages: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]
