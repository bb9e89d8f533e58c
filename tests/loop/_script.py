"""Helpers shared by the loop tests: a script run in both modes and compared.

`run_both` runs the same `Script` non-streaming, then streaming (a fresh client each
time); the tests compare the two and check both (LP-2). `run_mode` is one run in one
mode, for runs that raise (tests/_support/modes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from minagent import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationConfiguration,
    Message,
    _transcript,
    tool,
)
from minagent.testing import Request, ScriptedChatClient
from tests._support.modes import get_response


class Script:
    """Makes a fresh `ScriptedChatClient` over the same steps for every run, and keeps
    each one.

    ``log`` is a fresh list per run (tools and middleware append to ``script.log``), so
    the non-streaming and the streaming run can be compared.
    """

    def __init__(
        self,
        *steps: Any,
        middleware: Any = None,
        config: FunctionInvocationConfiguration | None = None,
    ) -> None:
        self.steps = list(steps)
        self.middleware = middleware
        self.config = config
        self.clients: list[ScriptedChatClient] = []
        self.logs: list[list[Any]] = []

    def __call__(self) -> ScriptedChatClient:
        client = ScriptedChatClient(
            self.steps,
            middleware=self.middleware,
            function_invocation_configuration=self.config,
        )
        self.clients.append(client)
        self.logs.append([])
        return client

    @property
    def log(self) -> list[Any]:
        return self.logs[-1]

    @property
    def requests(self) -> list[Request]:
        """The requests of the first run, after checking that every run sent the same
        ones."""
        first = self.clients[0].requests
        for client in self.clients[1:]:
            assert [(r.messages, r.options) for r in client.requests] == [
                (r.messages, r.options) for r in first
            ]
        return first

    def assert_consumed(self) -> None:
        for client in self.clients:
            client.assert_consumed()


async def run_both(
    make_client: Callable[[], BaseChatClient], messages: Any, **kw: Any
) -> tuple[ChatResponse, ChatResponse, list[ChatResponseUpdate]]:
    """Run the same script non-streaming, then streaming (a fresh client each time).

    Returns the non-streaming response, the streaming final response and the streamed
    updates. Both runs see the approvals the process asked before them (LP-34: the first
    run uses them up).
    """
    asked = dict(_transcript._ISSUED)
    non_streamed = await make_client().get_response(messages, **kw)
    _transcript._ISSUED.update(asked)
    stream = make_client().get_response(messages, stream=True, **kw)
    updates = [update async for update in stream]
    streamed_final = await stream.get_final_response()
    return non_streamed, streamed_final, updates


async def run_mode(
    make_client: Callable[[], BaseChatClient], messages: Any, stream: bool, **kw: Any
) -> ChatResponse:
    """One run in the given mode (for runs that raise)."""
    response: ChatResponse = await get_response(
        make_client(), messages, stream=stream, **kw
    )
    return response


def describe(messages: Sequence[Message]) -> list[str]:
    """Messages as short strings: ``"assistant: call c1 f, text"``, ``"tool: result
    c1=..."``."""
    out = []
    for m in messages:
        parts = []
        for c in m.contents:
            if c.type == "text":
                parts.append(c.text or "")
            elif c.type == "function_call":
                parts.append(f"call {c.call_id} {c.name}")
            elif c.type == "function_result":
                parts.append(f"result {c.call_id}={c.result}")
            else:
                parts.append(c.type)
        out.append(f"{m.role}: {', '.join(parts)}")
    return out


def assert_paired(messages: Sequence[Message]) -> None:
    """Every call in an assistant message has its result in a later tool message before
    the next assistant message (no call is ever left without a result, LP-8)."""
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        call_ids = {
            c.call_id
            for c in message.contents
            if c.type == "function_call" and c.call_id
        }
        answered: set[str | None] = set()
        for later in messages[index + 1 :]:
            if later.role == "assistant":
                break
            if later.role == "tool":
                answered |= {
                    c.call_id for c in later.contents if c.type == "function_result"
                }
        missing = call_ids - answered
        assert not missing, f"calls without a result: {missing} in {describe(messages)}"


def results(response: ChatResponse) -> dict[str | None, Any]:
    """call_id -> result text of every function_result in the response."""
    return {
        c.call_id: c.result
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    }


def exceptions(response: ChatResponse) -> dict[str | None, str | None]:
    return {
        c.call_id: c.exception
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    }


@tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """The weather in a city."""
    return f"sunny in {city} ({unit})"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
