"""An agent with one function tool: the model asks for the tool, the agent runs it, the
model uses its result. Asked twice, once for a whole answer and once streamed.
"""

import asyncio
import json
from typing import Annotated

from pydantic import Field

from minagent import Agent, tool
from minagent.testing import ScriptedChatClient, call

TIMETABLE = {
    ("Utrecht", "Leiden"): ["07:48", "08:18", "08:48"],
    ("Leiden", "Delft"): ["09:05", "09:35"],
}


@tool(approval_mode="never_require")
def departures(
    origin: Annotated[str, Field(description="Station the journey starts from.")],
    destination: Annotated[str, Field(description="Station the journey ends at.")],
) -> str:
    """List the next direct trains between two stations."""
    times = TIMETABLE.get((origin, destination))
    if not times:
        return f"No direct trains from {origin} to {destination}."
    return f"Direct trains from {origin} to {destination}: {', '.join(times)}."


def rail_model(messages, options):
    """Asks for the tool with the stations named in the question, then reads its answer
    back."""
    last = messages[-1]
    if last.role == "tool":
        return f"Here you go. {last.contents[0].result}"
    offered = [t.name for t in options.get("tools", [])]
    words = last.text.rstrip("?").split()
    origin, destination = words[words.index("from") + 1], words[words.index("to") + 1]
    return [
        call(offered[0], json.dumps({"origin": origin, "destination": destination}))
    ]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([rail_model] * 4),
        name="RailHelper",
        instructions="Answer questions about train departures using your tools.",
        tools=[departures],
    )

    result = await agent.run("When can I travel from Utrecht to Leiden?")
    print(f"RailHelper: {result}")

    print("RailHelper (streamed): ", end="")
    async for update in agent.run("And from Leiden to Delft?", stream=True):
        print(update.text, end="", flush=True)
    print()


if __name__ == "__main__":
    asyncio.run(main())
