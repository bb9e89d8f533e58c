"""Agents built from a small definition, for the version tests (spec/dbos.md DU-20).

    python -m tests.dbos._definition [--main]   print the version of `agent()`'s
                                                definition (--main: of this script's own
                                                agent, its functions in __main__)

`build(definition, noise)` makes a fresh agent: the definition's fields count for the
version, the noise's (the agent's id and description, the client's model and script, a
middleware object's state) do not.
"""

from __future__ import annotations

from typing import Any

from minagent import (
    Agent,
    AgentContext,
    AgentMiddleware,
    ContextProvider,
    FunctionInvocationContext,
    agent_middleware,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    # a set literal: a frozenset constant, whose order follows the hash seed
    if city in {"Paris", "Lyon", "Nice", "Lille"}:
        return "France"
    return "elsewhere"


@tool
def weather(city: str, days: int = 1) -> str:
    """The weather of a city."""
    return f"sunny in {city} for {days} days"


@tool(approval_mode="always_require")
def book(city: str) -> str:
    """Book a trip (after a human approved)."""
    return f"booked {city}"


TOOLS = {"lookup": lookup, "weather": weather, "book": book}


@agent_middleware
async def audit(context: AgentContext, call_next: Any) -> None:
    await call_next()


@chat_middleware
async def trace(context: Any, call_next: Any) -> None:
    await call_next()


@function_middleware
async def guard(context: FunctionInvocationContext, call_next: Any) -> None:
    await call_next()


class Limit(AgentMiddleware):
    """A class-based agent middleware with state (its state does not count)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    async def process(self, context: AgentContext, call_next: Any) -> None:
        await call_next()


MIDDLEWARE = {"audit": audit, "trace": trace, "guard": guard, "limit": Limit}


class Notes(ContextProvider):
    """A context provider of the definition."""


class Profile(ContextProvider):
    """Another."""


PROVIDERS = {"notes": Notes, "profile": Profile}


def build(definition: dict[str, Any], noise: dict[str, Any]) -> Agent:
    """A fresh agent of ``definition`` (fields: name, instructions, tools, middleware,
    providers, client_middleware, max_iterations), varied by ``noise`` (id,
    description, model, limit)."""
    middleware = [
        Limit(noise["limit"]) if m == "limit" else MIDDLEWARE[m]
        for m in definition["middleware"]
    ]
    client = ScriptedChatClient(
        ["an answer"] * noise["limit"],
        model=noise["model"],
        middleware=[MIDDLEWARE[m] for m in definition["client_middleware"]],
        function_invocation_configuration=None
        if definition["max_iterations"] is None
        else {"max_iterations": definition["max_iterations"]},
    )
    return Agent(
        client,
        definition["instructions"],
        id=noise["id"],
        name=definition["name"],
        description=noise["description"],
        tools=[TOOLS[t] for t in definition["tools"]] or None,
        middleware=middleware or None,
        context_providers=[PROVIDERS[p]() for p in definition["providers"]],
    )


BASE: dict[str, Any] = {
    "name": "planner",
    "instructions": "Plan trips.",
    "tools": ["lookup", "weather", "book"],
    "middleware": ["audit", "limit", "guard"],
    "providers": ["notes"],
    "client_middleware": ["trace"],
    "max_iterations": None,
}
NOISE: dict[str, Any] = {
    "id": "agent-1",
    "description": "plans trips",
    "model": "scripted",
    "limit": 3,
}


def agent() -> Agent:
    return build(BASE, NOISE)


if __name__ == "__main__":
    import sys

    from minagent_dbos import definition_version

    # by its module's name, as an application imports it; with --main, this script's
    # own agent, whose functions are __main__'s (another module)
    from tests.dbos import _definition

    made = agent() if "--main" in sys.argv else _definition.agent()
    print(definition_version(made))
