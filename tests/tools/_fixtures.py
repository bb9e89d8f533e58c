"""Tool functions written under `from __future__ import annotations` (every annotation
is a string).

Used by tests/tools/test_tools.py for TL-1 and TL-4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, TypedDict

from minagent._middleware import FunctionInvocationContext

# never imported at run time: the (dotted) string annotation must be enough
if TYPE_CHECKING:
    from minagent import _middleware


class Item(TypedDict):
    sku: str
    qty: int


@dataclass
class Where:
    city: str
    zip_code: Annotated[str, "postal code"] = "00000"


def order(items: list[Item], ship_to: Where | None = None) -> str:
    """Place an order."""
    return f"{len(items)} item(s) to {ship_to.city if ship_to else 'nowhere'}"


def with_context(query: str, context: FunctionInvocationContext) -> dict[str, object]:
    """Search, using the run's context."""
    return {"query": query, "call_id": context.call_id}


async def with_late_context(
    query: str, ctx: _middleware.FunctionInvocationContext
) -> dict[str, object]:
    """The context type's module is imported only for type checkers."""
    return {"query": query, "call_id": ctx.call_id}
