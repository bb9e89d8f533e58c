"""Suspending a conversation and resuming it later, thread-era spelling: `await
thread.serialize()` gives plain JSON data that can be stored anywhere; `await
agent.deserialize_thread(data)` gives the thread back. Done for a thread whose history
is kept locally and for one whose history a service keeps (the thread then holds only
the service's conversation id).
"""

import asyncio
import json

from minagent.testing import ScriptedChatClient, reply


def local_model(messages, options):
    """Sees the whole history: the resumed thread must have sent it."""
    items = [
        m.text.removeprefix("Add ").rstrip(".")
        for m in messages
        if m.role == "user" and m.text.startswith("Add")
    ]
    if messages[-1].text.startswith("Add"):
        return "Added."
    return f"Your list: {', '.join(items)}."


def service_model(messages, options):
    """Keeps the conversation on its side and answers with its id."""
    if options.get("conversation_id") == "conv-pack-7":
        return reply(
            f"(sent {len(messages)} new message) Your list: passport, charger.",
            conversation_id="conv-pack-7",
        )
    return reply("Added.", conversation_id="conv-pack-7")


async def suspend_and_resume(title: str, client: ScriptedChatClient) -> None:
    print(f"--- {title}")
    agent = client.as_agent(name="Packer", instructions="Keep the user's packing list.")
    thread = agent.get_new_thread()
    print(f"Packer: {await agent.run('Add passport, charger.', thread=thread)}")

    stored = json.dumps(await thread.serialize())
    data = json.loads(stored)
    print(
        f"Stored: {len(data.get('messages', []))} messages, service id {data.get('service_thread_id')}"
    )

    resumed = await agent.deserialize_thread(json.loads(stored))
    print(f"Packer: {await agent.run('What is on my list?', thread=resumed)}")


async def main() -> None:
    await suspend_and_resume(
        "history kept in the thread", ScriptedChatClient([local_model] * 2)
    )
    await suspend_and_resume(
        "history kept by the service", ScriptedChatClient([service_model] * 2)
    )


if __name__ == "__main__":
    asyncio.run(main())
