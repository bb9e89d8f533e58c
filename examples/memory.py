# Copyright (c) Microsoft. All rights reserved.
# Ported from microsoft/agent-framework python/samples/01-get-started/04_memory.py
# (commit a2856d3b92a0); changed: imports, and the chat client -> ScriptedChatClient.

import asyncio
from collections.abc import MutableSequence
from typing import Any

from minagent import Context, ContextProvider, Message
from minagent.testing import ScriptedChatClient

"""
Agent Memory with Context Providers

Context providers let you inject dynamic instructions and context into each
agent invocation. This sample defines a simple provider that tracks the user's
name and enriches every request with personalization instructions.

Environment variables:
  AZURE_AI_PROJECT_ENDPOINT        — Your Azure AI Foundry project endpoint
  AZURE_OPENAI_RESPONSES_DEPLOYMENT_NAME — Model deployment name (e.g. gpt-4o)
"""


# <context_provider>
class UserNameProvider(ContextProvider):
    """A simple context provider that remembers the user's name."""

    def __init__(self) -> None:
        self.user_name: str | None = None

    async def invoking(self, messages: Message | MutableSequence[Message], **kwargs: Any) -> Context:
        """Called before each agent invocation — add extra instructions."""
        if self.user_name:
            return Context(instructions=f"The user's name is {self.user_name}. Always address them by name.")
        return Context(instructions="You don't know the user's name yet. Ask for it politely.")

    async def invoked(
        self,
        request_messages: Message | list[Message] | None = None,
        response_messages: "Message | list[Message] | None" = None,
        invoke_exception: Exception | None = None,
        **kwargs: Any,
    ) -> None:
        """Called after each agent invocation — extract information."""
        msgs = [request_messages] if isinstance(request_messages, Message) else list(request_messages or [])
        for msg in msgs:
            text = msg.text if hasattr(msg, "text") else ""
            if isinstance(text, str) and "my name is" in text.lower():
                # Simple extraction — production code should use structured extraction
                self.user_name = text.lower().split("my name is")[-1].strip().split()[0].capitalize()


# </context_provider>


def instructed_model(messages, options):
    """The scripted model: follows the instructions the context provider added."""
    instructions = str(options.get("instructions") or "")
    question = messages[-1].text
    if "The user's name is Alice" in instructions:
        return "Alice, 2 + 2 is 4."
    if question.startswith("My name is"):
        return "Nice to meet you, Alice!"
    if "Ask for it politely" in instructions:
        return "The square root of 9 is 3. May I ask your name?"
    return "The square root of 9 is 3."


async def main() -> None:
    # <create_agent>
    client = ScriptedChatClient([instructed_model] * 3)

    memory = UserNameProvider()

    agent = client.as_agent(
        name="MemoryAgent",
        instructions="You are a friendly assistant.",
        context_provider=memory,
    )
    # </create_agent>

    thread = agent.get_new_thread()

    # The provider doesn't know the user yet — it will ask for a name
    result = await agent.run("Hello! What's the square root of 9?", thread=thread)
    print(f"Agent: {result}\n")

    # Now provide the name — the provider extracts and stores it
    result = await agent.run("My name is Alice", thread=thread)
    print(f"Agent: {result}\n")

    # Subsequent calls are personalized
    result = await agent.run("What is 2 + 2?", thread=thread)
    print(f"Agent: {result}\n")

    print(f"[Memory] Stored user name: {memory.user_name}")


if __name__ == "__main__":
    asyncio.run(main())
