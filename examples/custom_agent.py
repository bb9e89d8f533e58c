"""An agent that is not backed by a chat model: a `BaseAgent` subclass with its own
`run`, which returns an awaitable response, or an async iterable of updates when
`stream=True`. It keeps its history in the session the way the built-in agent does, and,
being an agent, it can be another agent's tool.
"""

import asyncio
from collections.abc import AsyncIterable
from typing import Any

from minagent import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    BaseAgent,
    Content,
    InMemoryHistoryProvider,
    Message,
    normalize_messages,
)
from minagent.testing import ScriptedChatClient, call


class ReverseAgent(BaseAgent):
    """Answers with the words of the last message in reverse order."""

    def run(self, messages=None, *, stream=False, session=None, **kwargs: Any):
        if stream:
            return self._stream(messages, session)
        return self._respond(messages, session)

    def _answer(self, messages) -> tuple[list[Message], str]:
        received = normalize_messages(messages)
        words = received[-1].text.split() if received else []
        return received, " ".join(reversed(words)) or "(nothing to reverse)"

    def _remember(self, session, received: list[Message], text: str) -> None:
        if session is not None:
            history = session.state.setdefault(
                InMemoryHistoryProvider.DEFAULT_SOURCE_ID, {}
            )
            history.setdefault("messages", []).extend(
                [*received, Message("assistant", [text])]
            )

    async def _respond(self, messages, session) -> AgentResponse:
        received, text = self._answer(messages)
        self._remember(session, received, text)
        return AgentResponse(messages=[Message("assistant", [Content.from_text(text)])])

    async def _stream(self, messages, session) -> AsyncIterable[AgentResponseUpdate]:
        received, text = self._answer(messages)
        for index, word in enumerate(text.split()):
            piece = word if index == 0 else f" {word}"
            yield AgentResponseUpdate(
                contents=[Content.from_text(piece)], role="assistant"
            )
        self._remember(session, received, text)


def puzzle_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return f"Reversed: {last.contents[0].result}"
    return [call("reverser", {"task": "stressed desserts are"})]


async def main() -> None:
    reverser = ReverseAgent(name="Reverser", description="Reverses the order of words.")
    print(f"{reverser.name}: {reverser.description}")

    print(f"Reverser: {await reverser.run('one two three')}")

    print("Reverser (streamed): ", end="")
    async for update in reverser.run("red green blue", stream=True):
        print(update.text, end="|")
    print()

    session = reverser.create_session()
    await reverser.run("first run here", session=session)
    await reverser.run("second run here", session=session)
    stored = session.state[InMemoryHistoryProvider.DEFAULT_SOURCE_ID]["messages"]
    print(f"Session history: {[m.text for m in stored]}")

    host = Agent(
        client=ScriptedChatClient([puzzle_model] * 2),
        name="Host",
        instructions="Use the reverser for word games.",
        tools=[reverser.as_tool(name="reverser")],
    )
    print(f"Host: {await host.run('Reverse: stressed desserts are')}")


if __name__ == "__main__":
    asyncio.run(main())
