"""How minagent's cost grows with the work: scaling curves beside the plain-asyncio
floor.

    python benchmarks/scaling.py                    # every curve, the default sizes
    python benchmarks/scaling.py --curves history   # one curve
    python benchmarks/scaling.py --quick            # small sizes, one repetition (a smoke run)

Three curves (issue 30; never timed tests, figures for the README and the notes):

- ``history``: one single-turn run after N earlier messages (10 -> 10,000), the messages
  passed as arguments, and the same conversation kept in an in-memory session
  (`agent.create_session()`); the floor appends to a list of dicts and calls the model.
- ``history_tools``: the ``history`` runs with one tool call each (the model calls, then
  answers): a tool that does not look at the conversation, and one that reads every
  message of ``FunctionInvocationContext.messages`` (which lends it the run's copies of
  the messages the run was given, SE-53), as arguments and in a session.
- ``batch``: one model response asking for W parallel tool calls (1 -> 100), then the
  answer; the floor gathers W coroutines.
- ``stream``: one streamed run of L chunks (1,000 -> 100,000), every update consumed;
  the floor iterates an async generator. Peak memory matters here: it must stay flat in
  L.

For each size: the median cost per run over the repetitions, and the peak of Python
allocations during one extra run (tracemalloc, never active while timing). Each curve
ends with its growth exponent, the slope of log(cost) over log(size) from the smallest
to the largest size: 1 is linear, 0 is constant; for ``history`` the cost of the run is
what should not grow with the past.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import statistics
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minagent import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    Message,
    tool,
)

SIZES = {
    "history": [10, 100, 1_000, 10_000],
    "history_tools": [10, 100, 1_000, 10_000],
    "batch": [1, 10, 100],
    "stream": [1_000, 10_000, 100_000],
}
QUICK = {
    "history": [10, 100, 1_000],
    "history_tools": [10, 100],
    "batch": [1, 10],
    "stream": [1_000, 10_000],
}
Op = Callable[[], Awaitable[Any]]


# -- minagent -------------------------------------------------------------------------------------


class Model(BaseChatClient):
    """Answers "ok"; with ``width`` calls first when nothing has been answered yet;
    streams ``chunks``."""

    def __init__(self, width: int = 0, chunks: int = 0, name: str = "add") -> None:
        super().__init__()
        self.width, self.chunks, self.name = width, chunks, name

    async def _inner_get_response(
        self, *, messages: Any, options: Any, **kwargs: Any
    ) -> ChatResponse:
        if self.width and messages[-1].role == "user":
            calls = [
                Content.from_function_call(f"c{i}", self.name, {"a": i, "b": 1})
                for i in range(self.width)
            ]
            return ChatResponse([Message("assistant", calls)])
        return ChatResponse([Message("assistant", ["ok"])])

    async def _inner_get_streaming_response(
        self, *, messages: Any, options: Any, **kwargs: Any
    ) -> Any:
        for _ in range(self.chunks):
            yield ChatResponseUpdate([Content.from_text("x")], "assistant")


@tool
async def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
async def look(a: int, b: int, ctx: FunctionInvocationContext) -> int:
    """Add, after reading every message of the conversation."""
    roles = [m.role for m in ctx.messages]
    return a + b if roles else 0


def history(n: int) -> list[Message]:
    return [
        Message("user" if i % 2 == 0 else "assistant", [f"message {i}"])
        for i in range(n)
    ]


def minagent_history_arguments(n: int) -> Op:
    agent, past = Agent(Model()), history(n)
    return lambda: agent.run([*past, Message("user", ["next"])])


def minagent_history_session(n: int) -> Op:
    agent = Agent(Model())
    session = agent.create_session()
    session.state["in_memory"] = {"messages": history(n)}

    async def op() -> Any:
        response = await agent.run("next", session=session)
        # the next run sees the same N messages
        del session.state["in_memory"]["messages"][n:]
        return response

    return op


def minagent_tool_arguments(n: int, name: str = "add") -> Op:
    agent = Agent(Model(width=1, name=name), tools=[add, look])
    past = history(n)
    return lambda: agent.run([*past, Message("user", ["next"])])


def minagent_tool_session(n: int, name: str = "add") -> Op:
    agent = Agent(Model(width=1, name=name), tools=[add, look])
    session = agent.create_session()
    session.state["in_memory"] = {"messages": history(n)}

    async def op() -> Any:
        response = await agent.run("next", session=session)
        del session.state["in_memory"]["messages"][n:]
        return response

    return op


def minagent_batch(width: int) -> Op:
    agent = Agent(Model(width=width), tools=[add])
    return lambda: agent.run("go")


def minagent_stream(chunks: int) -> Op:
    agent = Agent(Model(chunks=chunks))

    async def op() -> int:
        count = 0
        stream = agent.run("go", stream=True)
        async for _ in stream:
            count += 1
        await stream.get_final_response()
        assert count == chunks
        return count

    return op


# -- the floor: plain asyncio, as the shared harness writes it ---------------------------------------


async def floor_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": "ok"}


def floor_history(n: int) -> Op:
    past = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}
        for i in range(n)
    ]

    async def op() -> Any:
        messages = [*past, {"role": "user", "content": "next"}]
        messages.append(await floor_model(messages))
        return messages[-1]

    return op


def floor_batch(width: int) -> Op:
    async def add_tool(a: int, b: int) -> int:
        return a + b

    async def op() -> Any:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        calls: list[dict[str, Any]] = [
            {"id": f"c{i}", "args": {"a": i, "b": 1}} for i in range(width)
        ]
        messages.append({"role": "assistant", "tool_calls": calls})
        results = await asyncio.gather(*(add_tool(**c["args"]) for c in calls))
        messages.extend(
            {"role": "tool", "id": c["id"], "content": r}
            for c, r in zip(calls, results, strict=True)
        )
        messages.append(await floor_model(messages))
        return messages[-1]

    return op


def floor_stream(chunks: int) -> Op:
    async def model() -> AsyncIterator[str]:
        for _ in range(chunks):
            yield "x"

    async def op() -> int:
        count = 0
        async for _ in model():
            count += 1
        assert count == chunks
        return count

    return op


CURVES: dict[str, list[tuple[str, Callable[[int], Op]]]] = {
    "history": [
        ("floor", floor_history),
        ("minagent, arguments", minagent_history_arguments),
        ("minagent, session", minagent_history_session),
    ],
    "history_tools": [
        ("arguments, a tool", minagent_tool_arguments),
        ("session, a tool", minagent_tool_session),
        (
            "arguments, a tool reads",
            lambda n: minagent_tool_arguments(n, "look"),
        ),
        ("session, a tool reads", lambda n: minagent_tool_session(n, "look")),
    ],
    "batch": [("floor", floor_batch), ("minagent", minagent_batch)],
    "stream": [("floor", floor_stream), ("minagent", minagent_stream)],
}


# -- measuring ----------------------------------------------------------------------------------


async def measure(op: Op, budget: float, reps: int) -> tuple[float, float]:
    """(median seconds per run, peak KiB of one more run)."""
    await op()  # warm up (and check it runs)
    start = time.perf_counter()
    await op()
    one = max(time.perf_counter() - start, 1e-7)
    n = max(1, int(budget / one))
    samples = []
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        for _ in range(n):
            await op()
        samples.append((time.perf_counter() - start) / n)
    gc.collect()
    tracemalloc.start()
    await op()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(samples), peak / 1024


def exponent(points: list[tuple[int, float]]) -> float:
    (x0, y0), (x1, y1) = points[0], points[-1]
    return math.log(y1 / y0) / math.log(x1 / x0)


async def run(curves: list[str], quick: bool) -> None:
    sizes = QUICK if quick else SIZES
    budget, reps = (0.05, 1) if quick else (0.3, 3)
    for curve in curves:
        print(f"\n## {curve}\n")
        header = ["size"] + [name for name, _ in CURVES[curve]]
        print("| " + " | ".join(header) + " |")
        print("|---" * len(header) + "|")
        results: dict[str, list[tuple[int, float]]] = {
            name: [] for name, _ in CURVES[curve]
        }
        for size in sizes[curve]:
            cells = [f"{size:,}"]
            for name, make in CURVES[curve]:
                seconds, peak = await measure(make(size), budget, reps)
                results[name].append((size, seconds))
                cells.append(f"{seconds * 1e6:,.1f} µs, {peak:,.0f} KiB")
            print("| " + " | ".join(cells) + " |", flush=True)
        growth = ", ".join(
            f"{name} {exponent(points):.2f}" for name, points in results.items()
        )
        print(f"\ngrowth exponent (log cost / log size, smallest to largest): {growth}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--curves",
        default=",".join(CURVES),
        help="comma-separated: " + ", ".join(CURVES),
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, one repetition"
    )
    args = parser.parse_args(argv)
    curves = [c for c in args.curves.split(",") if c]
    unknown = [c for c in curves if c not in CURVES]
    if unknown:
        parser.error(f"unknown curve(s): {', '.join(unknown)}")
    asyncio.run(run(curves, args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
