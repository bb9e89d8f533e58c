"""A thread-era context provider that asks the model itself for structured data: after
each run (`invoked`) it sends the conversation to the client with a `response_format`
and reads the parsed object from `response.value`; before each run (`invoking`) it tells
the agent what is still missing. The provider keeps its findings on itself; the
conversation is a thread.
"""

import asyncio
import json
import re
from typing import Any

from pydantic import BaseModel

from minagent import Agent, Context, ContextProvider
from minagent.testing import ScriptedChatClient


class TripPlan(BaseModel):
    destination: str | None = None
    month: str | None = None


class TripMemory(ContextProvider):
    def __init__(self, client) -> None:
        self.client = client
        self.plan = TripPlan()

    async def invoking(self, messages, **kwargs: Any) -> Context:
        missing = [
            field for field, value in self.plan.model_dump().items() if value is None
        ]
        if missing:
            return Context(
                instructions=f"Before suggesting anything, ask for: {', '.join(missing)}."
            )
        return Context(
            instructions=f"The user goes to {self.plan.destination} in {self.plan.month}."
        )

    async def invoked(
        self, request_messages, response_messages=None, **kwargs: Any
    ) -> None:
        response = await self.client.get_response(
            request_messages,
            options={
                "instructions": "Extract the trip details.",
                "response_format": TripPlan,
            },
        )
        found = response.value
        self.plan = TripPlan(
            destination=self.plan.destination or found.destination,
            month=self.plan.month or found.month,
        )


def travel_model(messages, options):
    """Answers the user, or, asked for a TripPlan, extracts one from the user's
    words."""
    said = " ".join(m.text for m in messages if m.role == "user")
    if "response_format" in options:
        destination = re.search(r"to ([A-Z]\w+)", said)
        month = re.search(r"in (January|April|July|October)", said)
        return json.dumps(
            {"destination": destination and destination[1], "month": month and month[1]}
        )
    instructions = options["instructions"].splitlines()[-1]
    if "ask for" in instructions:
        return (
            "Noted. I still need your "
            + instructions.split("ask for: ")[1].rstrip(".").replace(", ", " and ")
            + "."
        )
    return f"Pack light: {instructions.removeprefix('The user goes to ').rstrip('.')} is mild."


async def main() -> None:
    client = ScriptedChatClient([travel_model] * 8)
    memory = TripMemory(client)
    agent = Agent(
        client=client, instructions="You help plan trips.", context_providers=[memory]
    )
    thread = agent.get_new_thread()

    for text in (
        "Can you help me pack?",
        "I'm flying to Lisbon.",
        "I leave in April.",
        "So what should I pack?",
    ):
        print(f"User: {text}")
        print(f"Agent: {await agent.run(text, thread=thread)}")
    print(f"Trip plan: {memory.plan}")


if __name__ == "__main__":
    asyncio.run(main())
