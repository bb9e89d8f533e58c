"""A conversation over several turns with sessions (`agent.create_session()`,
`session=`): each session keeps its own history, so two readers talking to one agent
never mix their books.
"""

import asyncio

from minagent import Agent
from minagent.testing import ScriptedChatClient


def librarian_model(messages, options):
    """Recalls the book mentioned earlier in the history it is sent, if any."""
    question = messages[-1].text
    if not question.endswith("?"):
        return "Noted, enjoy your reading."
    earlier = [
        m.text
        for m in messages[:-1]
        if m.role == "user" and m.text.startswith("I'm reading")
    ]
    if not earlier:
        return "You haven't told me what you're reading."
    book = earlier[-1].removeprefix("I'm reading ").rstrip(".")
    return f"You're reading {book}."


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([librarian_model] * 4),
        name="Librarian",
        instructions="Keep track of what each reader is reading.",
    )
    ada, ben = agent.create_session(), agent.create_session()

    turns = [
        (ada, "Ada", "I'm reading Middlemarch."),
        (ben, "Ben", "I'm reading Dune."),
        (ada, "Ada", "Which book am I reading?"),
        (ben, "Ben", "Which book am I reading?"),
    ]
    for session, reader, text in turns:
        result = await agent.run(text, session=session)
        print(f"{reader}: {text}")
        print(f"Librarian: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
