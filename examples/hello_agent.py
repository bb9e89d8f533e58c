"""The smallest useful agent: one question answered whole, one answered as a stream of
text.

The model is a `ScriptedChatClient`, so this runs offline; its first step is a function
that answers only when the agent's instructions reached it, its second a list of
streamed chunks.
"""

import asyncio

from minagent import Agent
from minagent.testing import ScriptedChatClient, text_chunks


def planetarium(messages, options):
    """A model that keeps to the instructions it was given, and says so when it got
    none."""
    if "one sentence" not in options.get("instructions", ""):
        return "I was given no instructions."
    return "Jupiter spins fastest: a day there lasts under ten hours."


async def main() -> None:
    client = ScriptedChatClient(
        [
            planetarium,
            text_chunks("Saturn ", "is ", "light ", "enough ", "to ", "float."),
        ]
    )
    agent = Agent(
        client=client,
        name="Stargazer",
        instructions="You answer questions about the planets in one sentence.",
    )

    answer = await agent.run("Which planet has the shortest day?")
    print(f"Stargazer: {answer}")

    print("Stargazer (streamed): ", end="")
    async for update in agent.run("Tell me something odd about Saturn.", stream=True):
        print(update.text, end="|", flush=True)
    print()


if __name__ == "__main__":
    asyncio.run(main())
