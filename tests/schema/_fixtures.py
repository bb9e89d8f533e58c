"""Tools and types written under `from __future__ import annotations`: annotations are
strings.

Used by tests/schema/test_generation.py for SC-2, SC-5, SC-15 and SC-17.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal, NotRequired, Required, TypedDict

if TYPE_CHECKING:  # never imported at run time: the annotation below cannot be resolved
    from minagent._middleware import FunctionInvocationContext


class Address(TypedDict):
    street: str
    zip_code: Annotated[str, "postal code"]


class Contact(TypedDict):
    name: str
    nickname: NotRequired[str]


class Draft(TypedDict, total=False):
    title: Required[str]
    body: str


class Node(TypedDict):
    value: int
    children: list[Node]


@dataclass
class Tree:
    value: int
    left: Tree | None = None
    right: Tree | None = None


class Ping(TypedDict):
    pong: Pong | None


class Pong(TypedDict):
    ping: Ping


@dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list[str] = field(default_factory=list)


def send_letter(to: Address, urgent: bool = False) -> None:
    """Send a letter."""


def add_contact(contact: Contact, draft: Draft) -> None:
    """Add a contact."""


def get_weather(
    city: str,
    context: FunctionInvocationContext,
    units: Literal["metric", "imperial"] = "metric",
) -> str:
    """Get the weather.

    Args:
        city: The city.
        units: The unit system.
    """
    return city


def plant(tree: Tree, root: Node) -> None:
    """Plant a tree."""


def bounce(ping: Ping) -> None:
    """Two TypedDicts that refer to each other."""


def move(to: Point) -> None:
    """Move."""


class Unreadable(TypedDict):
    field: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


def unreadable(ok: int, nested: Unreadable) -> None:
    """The TypedDict of the second parameter has an annotation that cannot be
    resolved."""


def broken(ok: int, bad: DoesNotExist) -> None:  # type: ignore[name-defined]  # noqa: F821
    """The second annotation cannot be resolved."""
