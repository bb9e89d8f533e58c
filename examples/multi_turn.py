"""A conversation over several turns with the thread-era spelling:
`agent.get_new_thread()` and `run(..., thread=thread)`. The scripted model can only
answer the second question from the history the thread sends along; a run without the
thread starts from nothing.
"""

import asyncio

from minagent.testing import ScriptedChatClient


def attentive_model(messages, options):
    """Answers from what the user said earlier in the messages it receives."""
    told = [m.text for m in messages if m.role == "user" and "is called " in m.text]
    question = messages[-1].text
    if not question.endswith("?"):
        return "What a lovely name for a dog!"
    if not told:
        return "You haven't told me about your dog."
    name = told[-1].split("called ")[1].split()[0]
    return f"Your dog is called {name}. (I was sent {len(messages)} messages.)"


async def main() -> None:
    agent = ScriptedChatClient([attentive_model] * 3).as_agent(
        name="PetPal",
        instructions="You are a friendly assistant who remembers details about pets.",
    )
    thread = agent.get_new_thread()

    for text in (
        "My dog is called Biscuit and she loves the beach.",
        "What is my dog called?",
    ):
        print(f"User: {text}")
        print(f"PetPal: {await agent.run(text, thread=thread)}")

    print("User (no thread): What is my dog called?")
    print(f"PetPal: {await agent.run('What is my dog called?')}")


if __name__ == "__main__":
    asyncio.run(main())
