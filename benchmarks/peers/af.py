"""Peer: Microsoft Agent Framework (``agent-framework-core``), the same scenarios as minagent.

Runs in ``benchmarks/peers/.venv`` (``run.py --peers`` installs it). The model is a scripted
client composed like the framework's own clients — ``FunctionInvocationLayer``,
``ChatMiddlewareLayer``, ``ChatTelemetryLayer`` over ``BaseChatClient`` (telemetry is left
unconfigured, so it is off) — whose ``_inner_get_response`` plays back steps computed by the
same responder as the other scenarios. The agent is ``agent_framework.Agent``; S3 uses class
middleware (``AgentMiddleware``, ``ChatMiddleware``, ``FunctionMiddleware``); S4 consumes
``Agent.run(stream=True)`` and ``get_final_response()``; S5 gives every run its own session.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from importlib.metadata import version
from itertools import count
from typing import Any

from _peer import Bench, report_unavailable, run_peer

PEER = "agent-framework"
TURNS, CONCURRENT, CHUNKS, DEPTH = 10, 100, 1000, 3

try:
    from agent_framework import (
        Agent,
        AgentMiddleware,
        BaseChatClient,
        ChatMiddleware,
        ChatMiddlewareLayer,
        ChatResponse,
        ChatResponseUpdate,
        Content,
        FunctionInvocationLayer,
        FunctionMiddleware,
        Message,
        ResponseStream,
        tool,
    )
    from agent_framework.observability import ChatTelemetryLayer
except Exception as exc:  # not installed, or the API moved
    report_unavailable(PEER, f"agent_framework API not as expected: {type(exc).__name__}: {exc}")
    raise SystemExit(0) from None

logging.getLogger("agent_framework").setLevel(logging.ERROR)
_ids = count(1)


class ScriptedClient(
    FunctionInvocationLayer,  # type: ignore[type-arg]
    ChatMiddlewareLayer,  # type: ignore[type-arg]
    ChatTelemetryLayer,  # type: ignore[type-arg]
    BaseChatClient,  # type: ignore[type-arg]
):
    """Plays back a script; records every request (a copy of the messages), like minagent's."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.steps: list[Any] = []
        self.position = 0
        self.requests: list[list[Message]] = []

    def load(self, steps: list[Any]) -> None:
        self.steps, self.position = steps, 0
        self.requests.clear()

    def _next(self, messages: Sequence[Message]) -> Any:
        self.requests.append(list(messages))
        step = self.steps[self.position]
        self.position += 1
        return step(messages) if callable(step) else step

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any) -> Any:
        if stream:

            async def updates() -> AsyncIterator[ChatResponseUpdate]:
                for update in self._next(messages):
                    yield update

            return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

        async def respond() -> ChatResponse:
            step = self._next(messages)
            if isinstance(step, str):
                return ChatResponse(messages=[Message(role="assistant", contents=[step])])
            return step  # type: ignore[no-any-return]

        return respond()


def responder(turns: int) -> Any:
    def respond(messages: Sequence[Message]) -> Any:
        last = messages[-1]
        done = int(last.contents[0].result) if last.role == "tool" else 0
        if done < turns:
            args = json.dumps({"a": done, "b": 1})
            call = Content.from_function_call(f"call_{next(_ids)}", "add", arguments=args)
            return ChatResponse(messages=[Message(role="assistant", contents=[call])])
        return f"total={done}"

    return respond


class Counter:
    def __init__(self) -> None:
        self.tool_calls = 0
        self.layers = {"agent": 0, "chat": 0, "function": 0}

    def reset(self) -> None:
        self.tool_calls = 0
        self.layers = dict.fromkeys(self.layers, 0)


def pass_through(counter: Counter) -> list[Any]:
    class AgentPass(AgentMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            counter.layers["agent"] += 1
            await call_next()

    class ChatPass(ChatMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            counter.layers["chat"] += 1
            await call_next()

    class FunctionPass(FunctionMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            counter.layers["function"] += 1
            await call_next()

    return [cls() for cls in (AgentPass, ChatPass, FunctionPass) for _ in range(DEPTH)]


def _count(response: Any, kind: str) -> int:
    return sum(1 for m in response.messages for c in m.contents if c.type == kind)


class AFBench(Bench):
    impl = PEER
    with_tools = True
    middleware = False

    def __init__(self) -> None:
        self.counter = Counter()
        self.client = ScriptedClient()
        counter = self.counter

        @tool
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            counter.tool_calls += 1
            return a + b

        self.agent = Agent(
            client=self.client,
            name="bench",
            tools=[add] if self.with_tools else None,
            middleware=pass_through(counter) if self.middleware else None,
        )
        self.results: list[Any] = []

    def load(self, steps: list[Any]) -> None:
        self.counter.reset()
        self.results = []
        self.client.load(steps)


class S1(AFBench):
    scenario = "S1"
    with_tools = False

    def prepare(self, n: int) -> None:
        self.load(["Hello there."] * n)

    async def run(self, n: int) -> None:
        for _ in range(n):
            self.results.append(await self.agent.run("Hi"))

    def check(self, n: int) -> None:
        assert len(self.results) == n
        assert self.client.position == n
        assert all(r.text == "Hello there." for r in self.results)


class S2(AFBench):
    scenario = "S2"
    turns = TURNS

    def prepare(self, n: int) -> None:
        self.load([responder(self.turns)] * ((self.turns + 1) * n))

    async def run(self, n: int) -> None:
        for _ in range(n):
            self.results.append(await self.agent.run("Count"))

    def check(self, n: int) -> None:
        turns = self.turns
        assert self.counter.tool_calls == turns * n, self.counter.tool_calls
        assert self.client.position == (turns + 1) * n
        for r in self.results:
            assert r.text == f"total={turns}", r.text
            assert _count(r, "function_call") == _count(r, "function_result") == turns
        if self.middleware:
            expected = {"agent": 1, "chat": turns + 1, "function": turns}
            for layer, per_run in expected.items():
                assert self.counter.layers[layer] == DEPTH * per_run * n, self.counter.layers


class S2x1(S2):
    scenario = "S2x1"
    turns = 1


class S3(S2):
    scenario = "S3"
    middleware = True


class S4(AFBench):
    scenario = "S4"
    max_ops = 10_000

    def prepare(self, n: int) -> None:
        chunks = [f"w{i} " for i in range(CHUNKS)]
        self.expected = "".join(chunks)
        self.load(
            [[ChatResponseUpdate(contents=[Content.from_text(c)], role="assistant") for c in chunks] for _ in range(n)]
        )
        self.seen = 0

    async def run(self, n: int) -> None:
        for _ in range(n):
            stream = self.agent.run("Stream", stream=True)
            async for _update in stream:
                self.seen += 1
            self.results.append(await stream.get_final_response())

    def check(self, n: int) -> None:
        assert self.seen == CHUNKS * n, self.seen
        assert len(self.results) == n
        assert self.client.position == n
        assert all(r.text == self.expected for r in self.results)


class S5(AFBench):
    scenario = "S5"
    max_ops = 1_000

    def prepare(self, n: int) -> None:
        self.load([responder(TURNS)] * ((TURNS + 1) * CONCURRENT * n))
        self.sessions = [self.agent.create_session() for _ in range(CONCURRENT * n)]

    async def run(self, n: int) -> None:
        for batch in range(n):
            sessions = self.sessions[batch * CONCURRENT : (batch + 1) * CONCURRENT]
            runs = [self.agent.run("Count", session=s) for s in sessions]
            self.results.extend(await asyncio.gather(*runs))

    def check(self, n: int) -> None:
        assert self.counter.tool_calls == TURNS * CONCURRENT * n, self.counter.tool_calls
        assert len(self.results) == CONCURRENT * n
        assert all(r.text == f"total={TURNS}" for r in self.results)


if __name__ == "__main__":
    factories: dict[str, Any] = {"S1": S1, "S2": S2, "S2x1": S2x1, "S3": S3, "S4": S4, "S5": S5}
    run_peer(PEER, version("agent-framework-core"), factories)
