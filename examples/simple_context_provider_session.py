"""A context provider that keeps a typed object in the session's state: the class is
registered with `register_state_type`, so the state stays serialisable. After each run
the provider asks the model to extract the user's details as structured output
(`response.value`); before each run it tells the agent what it still needs.
"""

import asyncio
import json
import re
from typing import Any

from pydantic import BaseModel

from minagent import Agent, AgentSession, ContextProvider, register_state_type
from minagent.testing import ScriptedChatClient


class Member(BaseModel):
    name: str | None = None
    club: str | None = None


register_state_type(Member, type_id="example_member")


class MembershipForm(ContextProvider):
    def __init__(self, client) -> None:
        super().__init__("membership")
        self.client = client

    async def before_run(
        self, *, agent, session, context, state: dict[str, Any]
    ) -> None:
        member = state.setdefault("member", Member())
        missing = [
            field for field, value in member.model_dump().items() if value is None
        ]
        note = (
            f"Still needed: {', '.join(missing)}."
            if missing
            else f"Registered: {member.name}, {member.club}."
        )
        context.extend_instructions(self.source_id, note)

    async def after_run(
        self, *, agent, session, context, state: dict[str, Any]
    ) -> None:
        response = await self.client.get_response(
            context.input_messages,
            options={"response_format": Member, "instructions": "Extract the member."},
        )
        found, member = response.value, state["member"]
        state["member"] = Member(
            name=member.name or found.name, club=member.club or found.club
        )


def club_model(messages, options):
    said = " ".join(m.text for m in messages if m.role == "user")
    if "response_format" in options:
        name = re.search(r"I'm (\w+)", said)
        club = re.search(r"join the (\w+ club)", said)
        return json.dumps({"name": name and name[1], "club": club and club[1]})
    return options["instructions"].splitlines()[-1]


async def main() -> None:
    client = ScriptedChatClient([club_model] * 8)
    agent = Agent(
        client=client,
        instructions="You register new members.",
        context_providers=[MembershipForm(client)],
    )
    session = agent.create_session()

    for text in (
        "Hello!",
        "I'm Noor.",
        "I'd like to join the chess club.",
        "Am I all set?",
    ):
        print(f"User: {text}")
        print(f"Agent: {await agent.run(text, session=session)}")

    saved = json.dumps(session.to_dict())
    restored = AgentSession.from_dict(json.loads(saved))
    print(f"Restored from JSON: {restored.state['membership']['member']!r}")


if __name__ == "__main__":
    asyncio.run(main())
