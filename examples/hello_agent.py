# Copyright (c) Microsoft. All rights reserved.
# Ported from microsoft/agent-framework python/samples/01-get-started/01_hello_agent.py
# (commit 5eb3eb745e16); changed: imports, and FoundryChatClient -> ScriptedChatClient.

import asyncio

from minagent import Agent
from minagent.testing import ScriptedChatClient, text_chunks

"""
Hello Agent — Simplest possible agent

This sample creates a minimal agent using FoundryChatClient via an
Microsoft Foundry project endpoint, and runs it in both non-streaming and streaming modes.

There are XML tags in all of the get started samples, those are used to display the same code in the docs repo.
"""


async def main() -> None:
    # <create_agent>
    client = ScriptedChatClient(
        [
            "The capital of France is Paris.",
            text_chunks("Honey ", "never ", "spoils."),
        ]
    )

    agent = Agent(
        client=client,
        name="HelloAgent",
        instructions="You are a friendly assistant. Keep your answers brief.",
    )
    # </create_agent>

    # <run_agent>
    # Non-streaming: get the complete response at once
    result = await agent.run("What is the capital of France?")
    print(f"Agent: {result}")
    # </run_agent>

    # <run_agent_streaming>
    # Streaming: receive tokens as they are generated
    print("Agent (streaming): ", end="", flush=True)
    async for chunk in agent.run("Tell me a one-sentence fun fact.", stream=True):
        if chunk.text:
            print(chunk.text, end="", flush=True)
    print()
    # </run_agent_streaming>


if __name__ == "__main__":
    asyncio.run(main())
