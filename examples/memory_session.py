"""Memory kept in the session: a context provider with `before_run` / `after_run` stores
what it learns in its own slice of `session.state`, so the memory belongs to the
conversation, not to the provider object, and two sessions remember different things.
"""

import asyncio
from typing import Any

from minagent import Agent, ContextProvider
from minagent.testing import ScriptedChatClient


class DietMemory(ContextProvider):
    """Notes the user's diet and asks the model to respect it."""

    def __init__(self) -> None:
        super().__init__("diet")

    async def before_run(
        self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]
    ) -> None:
        if "diet" in state:
            context.extend_instructions(
                self.source_id,
                f"The user is {state['diet']}; only suggest dishes that fit.",
            )

    async def after_run(
        self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]
    ) -> None:
        for message in context.input_messages:
            if message.text.startswith("I am "):
                state["diet"] = message.text.removeprefix("I am ").rstrip(".")


def chef_model(messages, options):
    """Suggests a dish that fits the diet named in its instructions."""
    if not messages[-1].text.endswith("?"):
        return "Thanks, I'll keep that in mind."
    if "vegan" in options.get("instructions", ""):
        return "Try a chickpea and spinach curry."
    return "Try a lamb tagine."


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([chef_model] * 4),
        name="Chef",
        instructions="You suggest one dish for dinner.",
        context_providers=[DietMemory()],
    )
    mine, friend = agent.create_session(), agent.create_session()

    turns = [
        (mine, "I am vegan."),
        (mine, "What should I cook tonight?"),
        (friend, "What should I cook tonight?"),
    ]
    for session, text in turns:
        print(f"User: {text}")
        print(f"Chef: {await agent.run(text, session=session)}")

    print(f"Diet in my session: {mine.state['diet']['diet']}")
    print(
        f"Diet in my friend's session: {friend.state.get('diet', {}).get('diet', 'unknown')}"
    )


if __name__ == "__main__":
    asyncio.run(main())
