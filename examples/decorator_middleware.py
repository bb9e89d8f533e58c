"""Middleware without type annotations: `@agent_middleware` and `@function_middleware`
say which layer a function belongs to. The printed trace shows the agent layer wrapping
the tool call.
"""

import asyncio

from minagent import Agent, agent_middleware, function_middleware, tool
from minagent.testing import ScriptedChatClient, call


@tool
def count_vowels(word: str) -> int:
    """Count the vowels in a word."""
    return sum(letter in "aeiou" for letter in word.lower())


@agent_middleware
async def announce_run(context, call_next):
    print(f"> run starts ({len(context.messages)} message)")
    await call_next()
    print(f"< run ends: {context.result.text!r}")


@function_middleware
async def announce_tool(context, call_next):
    print(f"  > {context.function.name} {context.arguments}")
    await call_next()
    print(f"  < {context.function.name} returned {context.result!r}")


def wordsmith_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return f"'Onomatopoeia' has {last.contents[0].result} vowels."
    return [call("count_vowels", {"word": "onomatopoeia"})]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([wordsmith_model] * 2),
        name="Wordsmith",
        instructions="Answer questions about words.",
        tools=[count_vowels],
        middleware=[announce_run, announce_tool],
    )
    result = await agent.run("How many vowels are in 'onomatopoeia'?")
    print(f"Wordsmith: {result}")


if __name__ == "__main__":
    asyncio.run(main())
