"""Tools that are methods of an object, so they share its state: one bound method
wrapped with `tool(description=...)`, one passed as it is. Changing the object between
runs changes what the tools do; an exception raised by a tool becomes an error result
the model reads, not a failed run.
"""

import asyncio
from typing import Annotated

from minagent import Agent, tool
from minagent.testing import ScriptedChatClient, call


class Thermostat:
    def __init__(self) -> None:
        self.target = 19.0
        self.locked = False

    def set_target(
        self, celsius: Annotated[float, "The temperature to heat to."]
    ) -> str:
        if self.locked:
            raise PermissionError("the thermostat is locked")
        self.target = celsius
        return f"target set to {celsius} °C"

    def reading(self) -> str:
        """The current target temperature."""
        return f"target is {self.target} °C"


def home_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return "; ".join(str(c.result) for c in last.contents)
    return [call("set_target", {"celsius": 21.5}), call("reading")]


async def main() -> None:
    thermostat = Thermostat()
    tools = [
        tool(description="Set the heating target.")(thermostat.set_target),
        thermostat.reading,
    ]
    agent = Agent(
        client=ScriptedChatClient([home_model] * 4),
        name="Home",
        instructions="Control the heating.",
    )

    result = await agent.run("Make it 21.5 degrees.", tools=tools)
    print(f"Home: {result}")

    thermostat.locked = True
    thermostat.target = 18.0
    result = await agent.run("Make it 21.5 degrees.", tools=tools)
    print(f"Home (locked): {result}")
    print(f"Target after both runs: {thermostat.target}")


if __name__ == "__main__":
    asyncio.run(main())
