"""Three ways a conversation continues across runs, with a tool in play: no session
(every run starts afresh), one session kept in memory (the history, tool calls included,
is sent along), and a session the service keeps, continued by a new agent from the
service's conversation id alone (`AgentSession(service_session_id=...)`).
"""

import asyncio
import json

from minagent import Agent, AgentSession, tool
from minagent.testing import ScriptedChatClient, call, reply

HOURS = {"Rijksmuseum": "09:00-17:00", "Louvre": "09:00-18:00", "Prado": "10:00-20:00"}


@tool
def opening_hours(museum: str) -> str:
    """Today's opening hours of a museum."""
    return f"{museum} is open {HOURS[museum]}"


def guide_model(messages, options):
    """Looks museums up; answers questions about earlier lookups from the history it is
    sent."""
    last = messages[-1]
    if last.role == "tool":
        return f"{last.contents[0].result}."
    museum = next((name for name in HOURS if name in last.text), None)
    if museum:
        return [call("opening_hours", {"museum": museum})]
    asked = [
        json.loads(c.arguments)["museum"]
        for m in messages
        for c in m.contents
        if c.type == "function_call"
    ]
    return (
        f"You asked about: {', '.join(asked)}."
        if asked
        else "You haven't asked about any museum yet."
    )


def service_model(messages, options):
    """A service that stores the conversation itself under the id conv-museum-1."""
    if options.get("conversation_id") != "conv-museum-1":
        return reply("The Prado is in Madrid.", conversation_id="conv-museum-1")
    return reply(
        f"({len(messages)} new message received) You asked about the Prado.",
        conversation_id="conv-museum-1",
    )


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([guide_model] * 9),
        instructions="You are a museum guide.",
        tools=[opening_hours],
    )

    print("--- no session")
    for question in (
        "When does the Rijksmuseum open?",
        "Which museums did I ask about?",
    ):
        print(f"Guide: {await agent.run(question)}")

    print("--- one session, kept in memory")
    session = agent.create_session()
    for question in (
        "When does the Louvre open?",
        "And the Rijksmuseum?",
        "Which museums did I ask about?",
    ):
        print(f"Guide: {await agent.run(question, session=session)}")

    print("--- a session the service keeps")
    first = Agent(
        client=ScriptedChatClient([service_model] * 2),
        instructions="You are a museum guide.",
    )
    session = first.create_session()
    print(f"Guide: {await first.run('Where is the Prado?', session=session)}")
    conversation = session.service_session_id
    print(f"Service conversation id: {conversation}")

    later = Agent(
        client=ScriptedChatClient([service_model]),
        instructions="You are a museum guide.",
    )
    continued = AgentSession(service_session_id=conversation)
    print(
        f"Guide: {await later.run('Which museums did I ask about?', session=continued)}"
    )


if __name__ == "__main__":
    asyncio.run(main())
