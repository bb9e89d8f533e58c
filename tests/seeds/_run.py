"""Helpers shared by the seed tests (both modes: tests/_support/modes.py).

The seed examples themselves are written as the seeds write them (no annotations where
the seed has none); these helpers are ours.
"""

from __future__ import annotations

from typing import Any


def kinds(response: Any) -> list[tuple[str, list[str]]]:
    """Each message as (role, [content types])."""
    return [(m.role, [c.type for c in m.contents]) for m in response.messages]
