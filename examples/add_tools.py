# Copyright (c) Microsoft. All rights reserved.
# Ported from microsoft/agent-framework python/samples/01-get-started/02_add_tools.py
# (commit 5eb3eb745e16); changed: imports, and FoundryChatClient -> ScriptedChatClient.

import asyncio
from random import randint
from typing import Annotated

from pydantic import Field

from minagent import Agent, tool
from minagent.testing import ScriptedChatClient, call, reply

"""
Add Tools — Give your agent a function tool

This sample shows how to define a function tool with the @tool decorator
and wire it into an agent so the model can call it.
"""


# <define_tool>
# NOTE: approval_mode="never_require" is for sample brevity.
# Use "always_require" in production for user confirmation before tool execution.
@tool(approval_mode="never_require")
def get_weather(
    location: Annotated[str, Field(description="The location to get the weather for.")],
) -> str:
    """Get the weather for a given location."""
    conditions = ["sunny", "cloudy", "rainy", "stormy"]
    return f"The weather in {location} is {conditions[randint(0, 3)]} with a high of {randint(10, 30)}°C."


# </define_tool>


def answer_with_tool_result(messages, options):
    """The scripted model's second turn: repeat what the tool returned."""
    return str(messages[-1].contents[-1].result)


async def main() -> None:
    client = ScriptedChatClient([reply(call("get_weather", {"location": "Seattle"})), answer_with_tool_result])

    # <create_agent_with_tools>
    agent = Agent(
        client=client,
        name="WeatherAgent",
        instructions="You are a helpful weather agent. Use the get_weather tool to answer questions.",
        tools=[get_weather],
    )
    # </create_agent_with_tools>

    # <run_agent>
    result = await agent.run("What's the weather like in Seattle?")
    print(f"Agent: {result}")
    # </run_agent>


if __name__ == "__main__":
    asyncio.run(main())
