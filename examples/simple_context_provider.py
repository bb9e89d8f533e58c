# Copyright (c) Microsoft. All rights reserved.
# Ported from microsoft/agent-framework python/samples/02-agents/context_providers/simple_context_provider.py
# (commit a2856d3b92a0); changed: imports, and the chat client -> ScriptedChatClient.

import asyncio
from collections.abc import MutableSequence, Sequence
from typing import Any

from pydantic import BaseModel

from minagent import Agent, Context, ContextProvider, Message, SupportsChatGetResponse
from minagent.testing import ScriptedChatClient


class UserInfo(BaseModel):
    name: str | None = None
    age: int | None = None


class UserInfoMemory(ContextProvider):
    def __init__(self, client: SupportsChatGetResponse, user_info: UserInfo | None = None, **kwargs: Any):
        """Create the memory.

        If you pass in kwargs, they will be attempted to be used to create a UserInfo object.
        """

        self._chat_client = client
        if user_info:
            self.user_info = user_info
        elif kwargs:
            self.user_info = UserInfo.model_validate(kwargs)
        else:
            self.user_info = UserInfo()

    async def invoked(
        self,
        request_messages: Message | Sequence[Message],
        response_messages: Message | Sequence[Message] | None = None,
        invoke_exception: Exception | None = None,
        **kwargs: Any,
    ) -> None:
        """Extract user information from messages after each agent call."""
        # Check if we need to extract user info from user messages
        user_messages = [msg for msg in request_messages if hasattr(msg, "role") and msg.role == "user"]  # type: ignore

        if (self.user_info.name is None or self.user_info.age is None) and user_messages:
            try:
                # Use the chat client to extract structured information
                result = await self._chat_client.get_response(
                    messages=request_messages,  # type: ignore
                    instructions="Extract the user's name and age from the message if present. "
                    "If not present return nulls.",
                    options={"response_format": UserInfo},
                )

                # Update user info with extracted data
                try:
                    extracted = result.value
                    if self.user_info.name is None and extracted.name:
                        self.user_info.name = extracted.name
                    if self.user_info.age is None and extracted.age:
                        self.user_info.age = extracted.age
                except Exception:
                    pass  # Failed to extract, continue without updating

            except Exception:
                pass  # Failed to extract, continue without updating

    async def invoking(self, messages: Message | MutableSequence[Message], **kwargs: Any) -> Context:
        """Provide user information context before each agent call."""
        instructions: list[str] = []

        if self.user_info.name is None:
            instructions.append(
                "Ask the user for their name and politely decline to answer any questions until they provide it."
            )
        else:
            instructions.append(f"The user's name is {self.user_info.name}.")

        if self.user_info.age is None:
            instructions.append(
                "Ask the user for their age and politely decline to answer any questions until they provide it."
            )
        else:
            instructions.append(f"The user's age is {self.user_info.age}.")

        # Return context with additional instructions
        return Context(instructions=" ".join(instructions))

    def serialize(self) -> str:
        """Serialize the user info for thread persistence."""
        return self.user_info.model_dump_json()


async def main():
    client = ScriptedChatClient(
        [
            "Hello! Before I answer, could you tell me your name and your age?",
            '{"name": null, "age": null}',
            "Nice to meet you, Ruaidhrí! Could you also tell me your age?",
            '{"name": "Ruaidhrí", "age": null}',
            "Thank you, Ruaidhrí! Now, the square root of 9 is 3.",
            '{"name": null, "age": 20}',
        ]
    )

    # Create the memory provider
    memory_provider = UserInfoMemory(client)

    # Create the agent with memory
    async with Agent(
        client=client,
        instructions="You are a friendly assistant. Always address the user by their name.",
        context_provider=memory_provider,
    ) as agent:
        # Create a new thread for the conversation
        thread = agent.get_new_thread()

        print(await agent.run("Hello, what is the square root of 9?", thread=thread))
        print(await agent.run("My name is Ruaidhrí", thread=thread))
        print(await agent.run("I am 20 years old", thread=thread))

        # Access the memory component via the thread's get_service method and inspect the memories
        user_info_memory = thread.context_provider.providers[0]  # type: ignore
        if user_info_memory:
            print()
            print(f"MEMORY - User Name: {user_info_memory.user_info.name}")  # type: ignore
            print(f"MEMORY - User Age: {user_info_memory.user_info.age}")  # type: ignore


if __name__ == "__main__":
    asyncio.run(main())
