"""Suspending a conversation and resuming it later with sessions: `session.to_dict()` is
plain JSON data, `AgentSession.from_dict(data)` restores it, here in a new agent as if
after a restart. Done for a session whose history is in its state and for one whose
history a service keeps.
"""

import asyncio
import json

from minagent import Agent, AgentSession
from minagent.testing import ScriptedChatClient, reply


def local_model(messages, options):
    """Needs the history to answer the second question."""
    if messages[-1].text.startswith("My order"):
        return "Thanks, noted."
    order = next((m.text for m in messages if m.text.startswith("My order")), None)
    return f"You told me: {order}" if order else "I have no order on record."


def service_model(messages, options):
    """Keeps the conversation on its side and answers with its id."""
    if options.get("conversation_id") == "conv-9931":
        return reply(
            "You told me: my order number is 4471.", conversation_id="conv-9931"
        )
    return reply("Thanks, noted.", conversation_id="conv-9931")


async def suspend_and_resume(title: str, steps) -> None:
    print(f"--- {title}")
    first = Agent(
        client=ScriptedChatClient([steps]),
        name="Support",
        instructions="Help with orders.",
    )
    session = first.create_session()
    print(f"Support: {await first.run('My order number is 4471.', session=session)}")

    saved = json.dumps(session.to_dict())
    print(f"Saved session: {sorted(json.loads(saved))}")

    restarted = Agent(
        client=ScriptedChatClient([steps]),
        name="Support",
        instructions="Help with orders.",
    )
    resumed = AgentSession.from_dict(json.loads(saved))
    print(f"Same session id: {resumed.session_id == session.session_id}")
    print(
        f"Support: {await restarted.run('What is my order number?', session=resumed)}"
    )


async def main() -> None:
    await suspend_and_resume("history in the session", local_model)
    await suspend_and_resume("history kept by the service", service_model)


if __name__ == "__main__":
    asyncio.run(main())
