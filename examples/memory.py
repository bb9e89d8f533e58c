"""Memory through a thread-era context provider (`invoking` before each run, `invoked`
after it).

Code written for upstream's thread era passes one provider as `context_provider=`;
minagent refuses that keyword and says what to write, so the program first shows the
refusal and then builds the agent with `context_providers=[...]`.
"""

import asyncio
from typing import Any

from minagent import Agent, Context, ContextProvider
from minagent.testing import ScriptedChatClient


class NicknameMemory(ContextProvider):
    """Remembers what the user wants to be called and tells the model before every
    run."""

    def __init__(self) -> None:
        self.nickname = None

    async def invoking(self, messages, **kwargs: Any) -> Context:
        if self.nickname is None:
            return Context(instructions="Find out what the user wants to be called.")
        return Context(instructions=f"Call the user {self.nickname}.")

    async def invoked(
        self, request_messages, response_messages=None, **kwargs: Any
    ) -> None:
        for message in request_messages:
            if message.text.startswith("Call me "):
                self.nickname = message.text.removeprefix("Call me ").rstrip(".!")


def obliging_model(messages, options):
    """Does what the provider's instructions ask."""
    instructions = options.get("instructions", "")
    if messages[-1].text.startswith("Call me"):
        return "Noted!"
    if "Find out" in instructions:
        return "Happy to help! What should I call you?"
    nickname = instructions.split("Call the user ")[1].rstrip(".")
    return f"Sure thing, {nickname}: 12 times 12 is 144."


async def main() -> None:
    client = ScriptedChatClient([obliging_model] * 3)
    memory = NicknameMemory()

    try:
        Agent(client=client, instructions="Be helpful.", context_provider=memory)
    except TypeError as error:
        print(f"Refused: {error}")

    agent = Agent(client=client, instructions="Be helpful.", context_providers=[memory])
    thread = agent.get_new_thread()
    for text in ("Hi there!", "Call me Sam.", "What is 12 times 12?"):
        print(f"User: {text}")
        print(f"Agent: {await agent.run(text, thread=thread)}")
    print(f"Remembered nickname: {memory.nickname}")


if __name__ == "__main__":
    asyncio.run(main())
