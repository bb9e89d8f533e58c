"""The floor: scenarios S1-S5 as plain asyncio code, no framework (standard library only).

Every framework figure is divided by the floor figure of the same scenario measured in the same
process run. The floor does the same *work* as the framework scenarios — and no more:

* the model is a scripted async function that records each request (a copy of the message
  list, as `ScriptedChatClient` does) and returns the next step of its script; a step may be
  computed from the messages, exactly like the framework scenarios' responder;
* messages are plain dicts; tool-call arguments travel as JSON strings and are parsed with
  ``json.loads`` before the tool is called, as a real model's would be;
* the loop is ``while`` + ``await model(...)`` + ``await tool(**args)``, accumulating messages;
* S3's "middleware" is three nested pass-through coroutine calls per layer (around the run,
  around every model call, around every tool call), each counting its invocation;
* S4 iterates the model's async generator directly and joins the text at the end;
* S5 is ``asyncio.gather`` over 100 S2 runs, each keeping its own history list (its "thread").

The responder, the tool and the checks mirror ``scenarios.py`` so both sides are verified the
same way: after 10 tool turns the final answer is ``total=10``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from itertools import count
from typing import Any

from _harness import Bench

__all__ = ["floor_benches"]

TURNS = 10
CONCURRENT = 100
CHUNKS = 1000
LAYER_DEPTH = 3

Msg = dict[str, Any]
_ids = count(1)


class ScriptedModel:
    """A scripted model function: records every request and plays its script back."""

    def __init__(self) -> None:
        self.script: list[Any] = []
        self.position = 0
        self.requests: list[list[Msg]] = []

    def load(self, steps: list[Any]) -> None:
        self.script, self.position = steps, 0
        self.requests.clear()

    def _next(self, messages: list[Msg]) -> Any:
        self.requests.append(list(messages))
        step = self.script[self.position]
        self.position += 1
        return step(messages) if callable(step) else step

    async def __call__(self, messages: list[Msg], options: dict[str, Any]) -> Msg:
        step = self._next(messages)
        return {"role": "assistant", "content": step} if isinstance(step, str) else step

    async def stream(self, messages: list[Msg], options: dict[str, Any]) -> AsyncIterator[Msg]:
        for chunk in self._next(messages):
            yield chunk


def responder(turns: int) -> Callable[[list[Msg]], Msg]:
    """Call ``add(n, 1)`` while fewer than ``turns`` tool results came back, then answer."""

    def respond(messages: list[Msg]) -> Msg:
        last = messages[-1]
        done = last["content"] if last["role"] == "tool" else 0
        if done < turns:
            args = json.dumps({"a": done, "b": 1})
            call = {"id": f"call_{next(_ids)}", "name": "add", "arguments": args}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": f"total={done}"}

    return respond


class Counter:
    def __init__(self) -> None:
        self.tool_calls = 0
        self.layers = {"agent": 0, "chat": 0, "function": 0}

    def reset(self) -> None:
        self.tool_calls = 0
        self.layers = dict.fromkeys(self.layers, 0)


async def _wrapped(depth: int, counter: Counter, layer: str, leaf: Callable[[], Awaitable[Any]]) -> Any:
    """``depth`` nested pass-through "middleware" around ``leaf()``."""
    if depth == 0:
        return await leaf()
    counter.layers[layer] += 1
    return await _wrapped(depth - 1, counter, layer, leaf)


async def run_agent(
    model: ScriptedModel,
    tools: dict[str, Callable[..., Awaitable[Any]]],
    prompt: str,
    *,
    history: list[Msg] | None = None,
    depth: int = 0,
    counter: Counter | None = None,
    max_iterations: int = 40,
) -> Msg:
    """One agent run: the plain tool loop (depth > 0 adds pass-through wrappers per layer)."""
    counter = counter or Counter()

    async def body() -> Msg:
        request = {"role": "user", "content": prompt}
        messages = [*(history or []), request]
        new: list[Msg] = []
        options = {"tools": list(tools)}
        for _ in range(max_iterations):
            reply = await _wrapped(depth, counter, "chat", lambda: model(messages, options))
            messages.append(reply)
            new.append(reply)
            calls = reply.get("tool_calls")
            if not calls:
                break
            for call in calls:
                tool, args = tools[call["name"]], json.loads(call["arguments"])
                value = await _wrapped(depth, counter, "function", lambda: tool(**args))  # noqa: B023
                result = {"role": "tool", "tool_call_id": call["id"], "content": value}
                messages.append(result)
                new.append(result)
        if history is not None:
            history.extend([request, *new])
        return {"messages": new, "text": new[-1]["content"]}

    result: Msg = await _wrapped(depth, counter, "agent", body)
    return result


class FloorBench(Bench):
    impl = "floor"

    def __init__(self) -> None:
        self.model = ScriptedModel()
        self.counter = Counter()
        self.results: list[Msg] = []

        async def add(a: int, b: int) -> int:
            self.counter.tool_calls += 1
            return a + b

        self.tools = {"add": add}

    def prepare(self, n: int) -> None:
        self.counter.reset()
        self.results = []


class FloorS1(FloorBench):
    scenario = "S1"

    def prepare(self, n: int) -> None:
        super().prepare(n)
        self.model.load(["Hello there."] * n)

    async def run(self, n: int) -> None:
        for _ in range(n):
            self.results.append(await run_agent(self.model, {}, "Hi"))

    def check(self, n: int) -> None:
        assert len(self.results) == n
        assert self.model.position == n
        assert all(r["text"] == "Hello there." and len(r["messages"]) == 1 for r in self.results)


class FloorS2(FloorBench):
    scenario = "S2"
    turns = TURNS
    depth = 0

    def prepare(self, n: int) -> None:
        super().prepare(n)
        self.model.load([responder(self.turns)] * ((self.turns + 1) * n))

    async def run(self, n: int) -> None:
        for _ in range(n):
            result = await run_agent(self.model, self.tools, "Count", depth=self.depth, counter=self.counter)
            self.results.append(result)

    def check(self, n: int) -> None:
        turns = self.turns
        assert self.counter.tool_calls == turns * n, self.counter.tool_calls
        assert self.model.position == (turns + 1) * n
        for r in self.results:
            assert r["text"] == f"total={turns}"
            assert len(r["messages"]) == 2 * turns + 1
        if self.depth:
            expected = {"agent": 1, "chat": turns + 1, "function": turns}
            for layer, per_run in expected.items():
                assert self.counter.layers[layer] == self.depth * per_run * n, self.counter.layers


class FloorS2x1(FloorS2):
    scenario = "S2x1"
    turns = 1


class FloorS3(FloorS2):
    scenario = "S3"
    depth = LAYER_DEPTH


class FloorS4(FloorBench):
    scenario = "S4"
    max_ops = 10_000

    def prepare(self, n: int) -> None:
        super().prepare(n)
        self.chunks = [f"w{i} " for i in range(CHUNKS)]
        self.expected = "".join(self.chunks)
        self.model.load([[{"role": "assistant", "content": c} for c in self.chunks] for _ in range(n)])
        self.seen = 0

    async def run(self, n: int) -> None:
        for _ in range(n):
            messages = [{"role": "user", "content": "Stream"}]
            parts = []
            async for update in self.model.stream(messages, {}):
                self.seen += 1
                parts.append(update["content"])
            final = {"role": "assistant", "content": "".join(parts)}
            self.results.append({"messages": [final], "text": final["content"]})

    def check(self, n: int) -> None:
        assert self.seen == CHUNKS * n
        assert len(self.results) == n
        assert all(r["text"] == self.expected for r in self.results)


class FloorS5(FloorBench):
    scenario = "S5"
    max_ops = 1_000

    def prepare(self, n: int) -> None:
        super().prepare(n)
        self.model.load([responder(TURNS)] * ((TURNS + 1) * CONCURRENT * n))
        self.histories: list[list[Msg]] = []

    async def run(self, n: int) -> None:
        for _ in range(n):
            histories: list[list[Msg]] = [[] for _ in range(CONCURRENT)]
            self.histories.extend(histories)
            runs = [run_agent(self.model, self.tools, "Count", history=h) for h in histories]
            self.results.extend(await asyncio.gather(*runs))

    def check(self, n: int) -> None:
        assert self.counter.tool_calls == TURNS * CONCURRENT * n
        assert len(self.results) == CONCURRENT * n
        assert all(r["text"] == f"total={TURNS}" for r in self.results)
        assert all(len(h) == 2 * TURNS + 2 for h in self.histories)


def floor_benches() -> list[Bench]:
    return [FloorS1(), FloorS2(), FloorS2x1(), FloorS3(), FloorS4(), FloorS5()]
