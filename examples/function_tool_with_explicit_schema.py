"""Tools whose parameter schema is written out rather than read from the function's
signature:
`@tool(schema=...)` with a pydantic model, or with a JSON schema dict.
"""

import asyncio

from pydantic import BaseModel, Field

from minagent import Agent, tool
from minagent.testing import ScriptedChatClient, call


class Seat(BaseModel):
    flight: str = Field(description="Flight number, e.g. KL1234.")
    seat: str = Field(description="Seat, e.g. 14C.")


@tool(schema=Seat)
def reserve_seat(flight: str, seat: str) -> str:
    """Reserve a seat on a flight."""
    return f"{seat} reserved on {flight}"


BAGGAGE_SCHEMA = {
    "type": "object",
    "properties": {
        "pieces": {"type": "integer", "minimum": 0, "description": "Checked bags."}
    },
    "required": ["pieces"],
}


@tool(schema=BAGGAGE_SCHEMA, description="Add checked baggage to the booking.")
def add_baggage(pieces: int) -> str:
    return f"{pieces} bag(s) added"


def airline_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return "Done: " + ", ".join(str(c.result) for c in last.contents) + "."
    return [
        call("reserve_seat", {"flight": "KL1234", "seat": "14C"}),
        call("add_baggage", {"pieces": 1}),
    ]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([airline_model] * 2),
        name="CheckIn",
        instructions="Handle seat and baggage requests.",
        tools=[reserve_seat, add_baggage],
    )
    print(
        f"CheckIn: {await agent.run('Seat 14C on KL1234 and one checked bag, please.')}"
    )


if __name__ == "__main__":
    asyncio.run(main())
