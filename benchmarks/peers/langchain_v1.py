"""Peer: LangChain v1 ``create_agent`` (on LangGraph), the same scenarios as minagent.

Runs in ``benchmarks/peers/.venv`` (``run.py --peers`` installs it). The model is a
``BaseChatModel`` subclass that supports ``bind_tools`` (it returns itself: the script decides
what to call) and plays back steps computed by the same responder as the other scenarios; its
async paths (``_agenerate``, ``_astream``) are implemented directly, so no executor thread is
involved. Tool-call arguments are decoded from a JSON string, as a provider integration would.

Layer mapping for S3: LangChain v1 middleware has no hook that wraps a whole agent run, so the
agent layer is three middleware with a pass-through ``abefore_agent`` (each one a graph node);
the chat layer is ``awrap_model_call`` and the function layer ``awrap_tool_call``, each
``return await handler(request)``. S4 consumes ``agent.astream(stream_mode=["messages",
"values"])``: the token chunks, then the final state. S5 uses no checkpointer (no thread).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from importlib.metadata import version
from itertools import count
from typing import Any

from _peer import Bench, report_unavailable, run_peer

PEER = "langchain-v1"
TURNS, CONCURRENT, CHUNKS, DEPTH = 10, 100, 1000, 3
CONFIG = {"recursion_limit": 1000}

try:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langchain_core.tools import tool
except Exception as exc:  # not installed, or the API moved
    report_unavailable(PEER, f"langchain v1 API not as expected: {type(exc).__name__}: {exc}")
    raise SystemExit(0) from None

_ids = count(1)


class ScriptedChatModel(BaseChatModel):
    """Plays back a script; records every request (a copy of the messages), like minagent's."""

    state: dict[str, Any]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def load(self, steps: list[Any]) -> None:
        self.state.update(steps=steps, position=0, requests=[])

    def _next(self, messages: list[BaseMessage]) -> Any:
        state = self.state
        state["requests"].append(list(messages))
        step = state["steps"][state["position"]]
        state["position"] += 1
        return step(messages) if callable(step) else step

    def _result(self, messages: list[BaseMessage]) -> ChatResult:
        step = self._next(messages)
        message = AIMessage(content=step) if isinstance(step, str) else step
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return self._result(messages)

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return self._result(messages)

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for chunk in self._next(messages):
            yield ChatGenerationChunk(message=AIMessageChunk(content=chunk))

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._next(messages):
            yield ChatGenerationChunk(message=AIMessageChunk(content=chunk))


def responder(turns: int) -> Any:
    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        done = int(last.content) if last.type == "tool" else 0  # type: ignore[arg-type]
        if done < turns:
            args = json.loads(json.dumps({"a": done, "b": 1}))  # as a provider decodes it
            call = {"name": "add", "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}
            return AIMessage(content="", tool_calls=[call])
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
    class Named(AgentMiddleware):  # type: ignore[type-arg]
        def __init__(self, label: str) -> None:
            super().__init__()
            self._label = label

        @property
        def name(self) -> str:
            return self._label

    class AgentPass(Named):
        async def abefore_agent(self, state: Any, runtime: Any) -> None:
            counter.layers["agent"] += 1

    class ChatPass(Named):
        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            counter.layers["chat"] += 1
            return await handler(request)

    class FunctionPass(Named):
        async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            counter.layers["function"] += 1
            return await handler(request)

    kinds = (("agent", AgentPass), ("chat", ChatPass), ("function", FunctionPass))
    return [cls(f"{layer}{i}") for layer, cls in kinds for i in range(DEPTH)]


class LCBench(Bench):
    impl = PEER
    with_tools = True
    middleware = False

    def __init__(self) -> None:
        self.counter = Counter()
        self.model = ScriptedChatModel(state={})
        counter = self.counter

        @tool
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            counter.tool_calls += 1
            return a + b

        self.agent = create_agent(
            self.model,
            tools=[add] if self.with_tools else [],
            middleware=pass_through(counter) if self.middleware else (),
        )
        self.results: list[Any] = []

    def load(self, steps: list[Any]) -> None:
        self.counter.reset()
        self.results = []
        self.model.load(steps)

    async def invoke(self, prompt: str) -> Any:
        return await self.agent.ainvoke({"messages": [HumanMessage(prompt)]}, config=CONFIG)


class S1(LCBench):
    scenario = "S1"
    with_tools = False

    def prepare(self, n: int) -> None:
        self.load(["Hello there."] * n)

    async def run(self, n: int) -> None:
        for _ in range(n):
            self.results.append(await self.invoke("Hi"))

    def check(self, n: int) -> None:
        assert len(self.results) == n
        assert self.model.state["position"] == n
        for r in self.results:
            assert r["messages"][-1].content == "Hello there."
            assert len(r["messages"]) == 2


class S2(LCBench):
    scenario = "S2"
    turns = TURNS

    def prepare(self, n: int) -> None:
        self.load([responder(self.turns)] * ((self.turns + 1) * n))

    async def run(self, n: int) -> None:
        for _ in range(n):
            self.results.append(await self.invoke("Count"))

    def check(self, n: int) -> None:
        turns = self.turns
        assert self.counter.tool_calls == turns * n, self.counter.tool_calls
        assert self.model.state["position"] == (turns + 1) * n
        for r in self.results:
            messages = r["messages"]
            assert messages[-1].content == f"total={turns}", messages[-1].content
            assert sum(1 for m in messages if m.type == "tool") == turns
            assert len(messages) == 2 * turns + 2
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


class S4(LCBench):
    scenario = "S4"
    max_ops = 10_000

    def prepare(self, n: int) -> None:
        chunks = [f"w{i} " for i in range(CHUNKS)]
        self.expected = "".join(chunks)
        self.load([list(chunks) for _ in range(n)])
        self.seen = 0

    async def run(self, n: int) -> None:
        for _ in range(n):
            final = None
            stream = self.agent.astream(
                {"messages": [HumanMessage("Stream")]},
                config=CONFIG,
                stream_mode=["messages", "values"],
            )
            async for mode, payload in stream:
                if mode == "messages" and isinstance(payload[0], AIMessageChunk):
                    self.seen += bool(payload[0].content)  # the stream ends with an empty chunk
                elif mode == "values":
                    final = payload
            self.results.append(final)

    def check(self, n: int) -> None:
        assert self.seen == CHUNKS * n, self.seen
        assert len(self.results) == n
        assert self.model.state["position"] == n
        assert all(r["messages"][-1].content == self.expected for r in self.results)


class S5(LCBench):
    scenario = "S5"
    max_ops = 1_000

    def prepare(self, n: int) -> None:
        self.load([responder(TURNS)] * ((TURNS + 1) * CONCURRENT * n))

    async def run(self, n: int) -> None:
        for _ in range(n):
            runs = [self.invoke("Count") for _ in range(CONCURRENT)]
            self.results.extend(await asyncio.gather(*runs))

    def check(self, n: int) -> None:
        assert self.counter.tool_calls == TURNS * CONCURRENT * n, self.counter.tool_calls
        assert len(self.results) == CONCURRENT * n
        assert all(r["messages"][-1].content == f"total={TURNS}" for r in self.results)


if __name__ == "__main__":
    factories: dict[str, Any] = {"S1": S1, "S2": S2, "S2x1": S2x1, "S3": S3, "S4": S4, "S5": S5}
    run_peer(PEER, version("langchain"), factories)
