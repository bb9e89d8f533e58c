"""Keeping the conversation history somewhere of your own: a `HistoryProvider` subclass
with `get_messages` and `save_messages`, here a JSON file per session in a folder. The
session itself then carries only its id, and a session restored from `to_dict()` finds
its history again.
"""

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from minagent import Agent, AgentSession, HistoryProvider, Message
from minagent.testing import ScriptedChatClient


class JsonFolderHistory(HistoryProvider):
    """One JSON file per session, holding the messages as their dicts."""

    def __init__(self, folder: Path) -> None:
        super().__init__("json-folder")
        self.folder = folder

    def _file(self, session_id) -> Path:
        return self.folder / f"{session_id}.json"

    async def get_messages(
        self, session_id, *, state=None, **kwargs: Any
    ) -> list[Message]:
        path = self._file(session_id)
        if not path.exists():
            return []
        return [
            Message.from_dict(item)
            for item in json.loads(path.read_text(encoding="utf-8"))
        ]

    async def save_messages(
        self, session_id, messages, *, state=None, **kwargs: Any
    ) -> None:
        path = self._file(session_id)
        stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        stored += [message.to_dict() for message in messages]
        path.write_text(json.dumps(stored), encoding="utf-8")


def concierge_model(messages, options):
    """Needs the earlier turn, which the provider must have loaded."""
    if "room" in messages[-1].text and messages[-1].text.endswith("?"):
        told = [m.text for m in messages[:-1] if m.role == "user"]
        return f"Earlier you said: {told[0]}" if told else "I don't know your room."
    return "Welcome! Noted."


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        history = JsonFolderHistory(Path(folder))
        agent = Agent(
            client=ScriptedChatClient([concierge_model] * 2),
            name="Concierge",
            instructions="Help hotel guests.",
            context_providers=[history],
        )
        session = agent.create_session()
        print(f"Concierge: {await agent.run('I am in room 512.', session=session)}")

        saved = session.to_dict()
        print(f"The saved session holds state: {saved['state']}")
        stored = json.loads(
            history._file(session.session_id).read_text(encoding="utf-8")
        )
        print(f"The history file holds {len(stored)} messages")

        resumed = AgentSession.from_dict(saved)
        print(f"Concierge: {await agent.run('Which room am I in?', session=resumed)}")


if __name__ == "__main__":
    asyncio.run(main())
