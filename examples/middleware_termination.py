"""Stopping a run from middleware with `MiddlewareTermination`: raised before
`call_next` with a `result`, that result is the answer; raised without one, the run ends
with an empty response.
"""

import asyncio

from minagent import (
    Agent,
    AgentMiddleware,
    AgentResponse,
    Message,
    MiddlewareTermination,
)
from minagent.testing import ScriptedChatClient


class OffTopic(AgentMiddleware):
    """Ends runs about topics the assistant must not discuss, with a polite answer."""

    def __init__(self, *topics: str) -> None:
        self.topics = topics

    async def process(self, context, call_next):
        text = context.messages[-1].text.lower()
        for topic in self.topics:
            if topic in text:
                answer = AgentResponse(
                    messages=[
                        Message("assistant", [f"Sorry, I don't discuss {topic}."])
                    ]
                )
                raise MiddlewareTermination(result=answer)
        await call_next()


class DailyQuota(AgentMiddleware):
    """Lets a fixed number of runs through, then stops every further run with no
    answer."""

    def __init__(self, runs: int) -> None:
        self.left = runs

    async def process(self, context, call_next):
        if self.left == 0:
            print("[quota] used up")
            raise MiddlewareTermination
        self.left -= 1
        await call_next()


def gardener_model(messages, options):
    return f"About '{messages[-1].text}': water in the early morning."


async def main() -> None:
    client = ScriptedChatClient([gardener_model] * 2)
    agent = Agent(
        client=client,
        name="Gardener",
        instructions="Give short gardening tips.",
        middleware=[OffTopic("politics"), DailyQuota(runs=2)],
    )

    questions = ["tomatoes", "politics in the allotment committee", "roses", "lavender"]
    for question in questions:
        result = await agent.run(question)
        print(
            f"{question} -> {result.text if result and result.text else '(empty response)'}"
        )
    print(f"Model calls made: {len(client.requests)}")


if __name__ == "__main__":
    asyncio.run(main())
