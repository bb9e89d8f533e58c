"""minagent's scenarios: M0 (the pipeline executor) and S1-S5 (whole agent runs).

Each is a `Bench` (see ``_harness.py``) driven through the public API with
`minagent.testing.ScriptedChatClient`. The model's answers are computed by a responder from
the messages it receives: it asks for ``add(n, 1)`` where ``n`` is the last tool result, and
answers ``total=N`` once N results came back — so the final text proves that every tool result
reached the model. Every ``check`` asserts tool-call counts, middleware invocation counts,
message counts and the final text.
"""

from __future__ import annotations

import asyncio
from typing import Any

from _harness import Bench
from floor import CHUNKS, CONCURRENT, LAYER_DEPTH, TURNS

from minagent import (
    Agent,
    AgentResponse,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    agent_middleware,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent._middleware import run_pipeline
from minagent.testing import ScriptedChatClient, call, reply, text_chunks

__all__ = ["m0_benches", "minagent_benches"]


def responder(turns: int) -> Any:
    """The scripted model's step: call ``add(n, 1)`` until ``turns`` results came back."""

    def respond(messages: list[Message], options: dict[str, Any]) -> Any:
        last = messages[-1]
        done = last.contents[0].result if last.role == "tool" else 0
        if done < turns:
            return reply(call("add", {"a": done, "b": 1}))
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
    """LAYER_DEPTH pass-through middleware for each layer, counting their invocations."""

    @agent_middleware
    async def agent_mw(context: Any, call_next: Any) -> None:
        counter.layers["agent"] += 1
        await call_next()

    @chat_middleware
    async def chat_mw(context: Any, call_next: Any) -> None:
        counter.layers["chat"] += 1
        await call_next()

    @function_middleware
    async def function_mw(context: Any, call_next: Any) -> None:
        counter.layers["function"] += 1
        await call_next()

    return [agent_mw] * LAYER_DEPTH + [chat_mw] * LAYER_DEPTH + [function_mw] * LAYER_DEPTH


class MinagentBench(Bench):
    impl = "minagent"
    middleware = False

    def __init__(self) -> None:
        self.counter = Counter()
        self.client = ScriptedChatClient()
        counter = self.counter

        @tool
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            counter.tool_calls += 1
            return a + b

        self.agent = Agent(
            self.client,
            name="bench",
            tools=[add],
            middleware=pass_through(counter) if self.middleware else None,
        )
        self.results: list[AgentResponse] = []

    def load(self, steps: list[Any]) -> None:
        self.counter.reset()
        self.results = []
        self.client.steps, self.client.position = steps, 0
        self.client.requests.clear()


class S1(MinagentBench):
    """One text answer: no tools, no middleware."""

    scenario = "S1"

    def __init__(self) -> None:
        self.client = ScriptedChatClient()
        self.agent = Agent(self.client, name="bench")
        self.counter = Counter()

    def prepare(self, n: int) -> None:
        self.load(["Hello there."] * n)

    async def run(self, n: int) -> None:
        for _ in range(n):
            self.results.append(await self.agent.run("Hi"))

    def check(self, n: int) -> None:
        assert len(self.results) == n
        assert self.client.position == n
        for r in self.results:
            assert r.text == "Hello there.", r.text
            assert len(r.messages) == 1, r.messages


class S2(MinagentBench):
    """TURNS model turns each calling ``add``, then a text answer."""

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
            assert len(r.messages) == 2 * turns + 1, len(r.messages)
        if self.middleware:
            expected = {"agent": 1, "chat": turns + 1, "function": turns}
            for layer, per_run in expected.items():
                assert self.counter.layers[layer] == LAYER_DEPTH * per_run * n, self.counter.layers


class S2x1(S2):
    """S2 with one tool turn: with S2 it gives the cost of one loop iteration (the slope)."""

    scenario = "S2x1"
    turns = 1


class S3(S2):
    """S2 with LAYER_DEPTH pass-through middleware at each of the three layers."""

    scenario = "S3"
    middleware = True


class S4(MinagentBench):
    """One model turn streaming CHUNKS small text chunks through ``Agent.run(stream=True)``."""

    scenario = "S4"
    max_ops = 10_000

    def prepare(self, n: int) -> None:
        self.chunks = [f"w{i} " for i in range(CHUNKS)]
        self.expected = "".join(self.chunks)
        self.load([text_chunks(*self.chunks) for _ in range(n)])
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


class S5(MinagentBench):
    """CONCURRENT S2 runs at once on one agent (asyncio.gather), each with its own thread."""

    scenario = "S5"
    max_ops = 1_000

    def prepare(self, n: int) -> None:
        self.load([responder(TURNS)] * ((TURNS + 1) * CONCURRENT * n))
        self.threads = [self.agent.get_new_thread() for _ in range(CONCURRENT * n)]

    async def run(self, n: int) -> None:
        for batch in range(n):
            threads = self.threads[batch * CONCURRENT : (batch + 1) * CONCURRENT]
            runs = [self.agent.run("Count", thread=t) for t in threads]
            self.results.extend(await asyncio.gather(*runs))

    def check(self, n: int) -> None:
        assert self.counter.tool_calls == TURNS * CONCURRENT * n, self.counter.tool_calls
        assert len(self.results) == CONCURRENT * n
        assert all(r.text == f"total={TURNS}" for r in self.results)
        assert all(len(t.messages) == 2 * TURNS + 2 for t in self.threads)


# -- M0: the pipeline executor alone (issue 3) -------------------------------------------------


class M0(Bench):
    """``run_pipeline`` with ``depth`` pass-through middleware around a trivial handler."""

    impl = "minagent"
    max_ops = 1_000_000

    def __init__(self, depth: int | None) -> None:
        self.depth = depth
        label = {None: "await", 0: "empty", 1: "1 mw", 3: "3 mw"}[depth]
        self.scenario = f"M0 {label}"
        if depth is None:
            self.impl = "asyncio"
        self.calls = 0

        @function_middleware
        async def mw(context: Any, call_next: Any) -> None:
            self.calls += 1
            await call_next()

        async def handler(context: Any) -> int:
            return 3

        self.middleware = [mw] * (depth or 0)
        self.handler = handler
        self.context = FunctionInvocationContext(function=FunctionTool(name="handler", func=handler), arguments={})

    def prepare(self, n: int) -> None:
        self.calls = 0
        self.total = 0

    async def run(self, n: int) -> None:
        context, handler, total = self.context, self.handler, 0
        if self.depth is None:  # the floor: a plain await of the handler
            for _ in range(n):
                total += await handler(context)
        else:
            middleware = self.middleware
            for _ in range(n):
                total += await run_pipeline(middleware, context, handler)
        self.total = total

    def check(self, n: int) -> None:
        assert self.total == 3 * n, self.total
        assert self.calls == (self.depth or 0) * n, self.calls


def m0_benches() -> list[Bench]:
    return [M0(None), M0(0), M0(1), M0(3)]


def minagent_benches() -> list[Bench]:
    return [S1(), S2(), S2x1(), S3(), S4(), S5()]
