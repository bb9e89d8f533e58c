"""Tools that appear during a run: the agent starts with one tool, `load_geometry`,
which adds more tools with `ctx.add_tools(...)`; the next model call is offered them.
"""

import asyncio
import math

from minagent import Agent, FunctionInvocationContext, tool
from minagent.testing import ScriptedChatClient, call


@tool
def circle_area(radius: float) -> str:
    """Area of a circle."""
    return f"{math.pi * radius**2:.2f}"


@tool
def sphere_volume(radius: float) -> str:
    """Volume of a sphere."""
    return f"{4 / 3 * math.pi * radius**3:.2f}"


@tool
def load_geometry(ctx: FunctionInvocationContext) -> str:
    """Make the geometry tools available."""
    ctx.add_tools([circle_area, sphere_volume])
    return "geometry tools loaded"


def geometry_model(messages, options):
    offered = sorted(t.name for t in options["tools"])
    print(f"(offered: {offered})")
    last = messages[-1]
    if last.role == "tool" and last.contents[0].result != "geometry tools loaded":
        return f"The area is {last.contents[0].result}."
    if "circle_area" in offered:
        return [call("circle_area", {"radius": 2})]
    return [call("load_geometry")]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([geometry_model] * 3),
        name="Geometer",
        instructions="Load the tools you need before using them.",
        tools=[load_geometry],
    )
    print(f"Geometer: {await agent.run('What is the area of a circle with radius 2?')}")


if __name__ == "__main__":
    asyncio.run(main())
