"""The application the uvicorn test serves with several workers (spec/hosting.md HS-136):
a `HostingApp` behind a `Guard`, its conversations in the SQLite file named by
``MINAGENT_TEST_STORE``, plus ``POST /turn``, shaped as a protocol handler is: one turn of
a conversation run inside `HostingApp.conversations`."""

from __future__ import annotations

import json
import os
from typing import Any

from minagent import Agent, Message
from minagent.hosting import HostingApp
from minagent.hosting.guard import Guard
from minagent.stores import SQLiteSessionStore

from ._served import EchoModel, SlowModel


class CountingModel(EchoModel):
    """Answers how many user messages the call received (the conversation so far)."""

    def _answer(self, messages: list[Message]) -> list[str]:
        return [str(sum(1 for m in messages if m.role == "user"))]


hosting = HostingApp(
    [
        Agent(EchoModel(), name="echo"),
        Agent(CountingModel(), name="counter"),
        Agent(SlowModel(), name="slow"),
    ],
    store=SQLiteSessionStore(os.environ["MINAGENT_TEST_STORE"]),
)


async def turn(scope: Any, receive: Any, send: Any) -> None:
    """One turn: the answer is the worker's pid and the user turns the run saw."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    request = json.loads(body)
    async with hosting.conversations.session(
        "counter", request["conversation"]
    ) as session:
        response = await hosting.agents["counter"].run(
            request["input"], session=session
        )
    data = json.dumps({"pid": os.getpid(), "user_turns": int(response.text)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def routes(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"] == "/turn":
        await turn(scope, receive, send)
    else:
        await hosting(scope, receive, send)


app = Guard(routes, token=os.environ["MINAGENT_TEST_TOKEN"])
