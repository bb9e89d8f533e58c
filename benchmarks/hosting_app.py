"""The application `hosting_load.py` serves: one agent, ``echo``, over a deterministic
local model, its conversations in the SQLite file named by ``MINAGENT_LOAD_STORE``.

uvicorn imports it as ``hosting_app:app`` (with ``--app-dir benchmarks``), once per
worker process, so every worker opens the same file. The dev server serves the same
agent as users start it, ``python -m minagent serve benchmarks.hosting_app:echo_agent
--store sqlite:FILE`` (`echo_agent`).

The model answers each call with ``echo N: <the last user text>``, N being the number of
user messages the call received, streamed in a few chunks: the answer shows whether the
run saw the conversation's whole history. Every HTTP answer carries the serving
process's id in an ``x-load-worker`` header, so the load client can count how many
conversations moved between uvicorn's workers (and so through the shared store).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from minagent import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
)
from minagent.hosting import HostingApp
from minagent.stores import SQLiteSessionStore

__all__ = [
    "AGENT",
    "STORE_ENV",
    "EchoChatClient",
    "Tagged",
    "answer_for",
    "app",
    "build",
]

# the environment variable naming the SQLite file the workers share
STORE_ENV = "MINAGENT_LOAD_STORE"
# the served agent's name (the Responses API's `model`)
AGENT = "echo"
# the header each answer carries: the serving process's id
WORKER_HEADER = b"x-load-worker"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def answer_for(turn: int, text: str) -> str:
    """The answer the model gives to the ``turn``-th user message ``text`` (1-based)."""
    return f"echo {turn}: {text}"


class EchoChatClient(BaseChatClient):
    """A deterministic model: `answer_for` the call's user-message count and its last
    user text, streamed in ``chunks`` pieces."""

    def __init__(self, chunks: int = 4) -> None:
        super().__init__()
        self.chunks = chunks

    def _answer(self, messages: list[Message]) -> str:
        users = [m for m in messages if m.role == "user"]
        return answer_for(len(users), users[-1].text if users else "")

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        text = self._answer(messages)
        return ChatResponse([Message("assistant", [Content.from_text(text)])])

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        text = self._answer(messages)
        size = max(1, -(-len(text) // self.chunks))
        for start in range(0, len(text), size):
            # a model's stream yields to the loop between chunks
            await asyncio.sleep(0)
            piece = text[start : start + size]
            yield ChatResponseUpdate([Content.from_text(piece)], "assistant")


class Tagged:
    """``inner`` with the process id added to every answer's headers."""

    def __init__(self, inner: HostingApp) -> None:
        self.inner = inner
        self.tag = str(os.getpid()).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return

        async def tagged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (WORKER_HEADER, self.tag)]
                message = {**message, "headers": headers}
            await send(message)

        await self.inner(scope, receive, tagged)


def build(store_path: str) -> Tagged:
    """The served application: the ``echo`` agent, conversations in ``store_path``,
    each answer tagged with this process's id."""
    agent = Agent(EchoChatClient(), name=AGENT)
    return Tagged(HostingApp([agent], store=SQLiteSessionStore(store_path)))


def echo_agent() -> Agent:
    """The served agent, for ``python -m minagent serve
    benchmarks.hosting_app:echo_agent`` (its store is the command's ``--store``)."""
    return Agent(EchoChatClient(), name=AGENT)


def _from_environment() -> Tagged | None:
    path = os.environ.get(STORE_ENV)
    return None if path is None else build(path)


# what uvicorn serves; None when imported without the store's variable (by the client)
app = _from_environment()
