# Copyright (c) Microsoft. All rights reserved.
# Ported from microsoft/agent-framework python/samples/01-get-started/03_multi_turn.py
# (commit 5eb3eb745e16); changed: imports, and the chat client -> ScriptedChatClient.

import asyncio

from minagent import Agent
from minagent.testing import ScriptedChatClient

"""
Multi-Turn Conversations — Use AgentSession to maintain context

This sample shows how to keep conversation history across multiple calls
by reusing the same session object.
"""


def remembering_model(messages, options):
    """The scripted model: the second answer depends on the history the session sends along."""
    history = " ".join(message.text for message in messages)
    if "What do you remember" not in history:
        return "Nice to meet you, Alice! Hiking is a wonderful hobby."
    if "Alice" in history and "hiking" in history:
        return "Your name is Alice and you love hiking."
    return "I don't know anything about you yet."


async def main() -> None:
    # <create_agent>
    client = ScriptedChatClient([remembering_model] * 2)

    agent = Agent(
        client=client,
        name="ConversationAgent",
        instructions="You are a friendly assistant. Keep your answers brief.",
    )
    # </create_agent>

    # <multi_turn>
    # Create a session to maintain conversation history
    session = agent.create_session()

    # First turn
    result = await agent.run("My name is Alice and I love hiking.", session=session)
    print(f"Agent: {result}\n")

    # Second turn — the agent should remember the user's name and hobby
    result = await agent.run("What do you remember about me?", session=session)
    print(f"Agent: {result}")
    # </multi_turn>


if __name__ == "__main__":
    asyncio.run(main())
