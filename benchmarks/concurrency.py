"""Tool calls of one model response run concurrently (spec/loop.md, LP-4, LP-5).

    python benchmarks/concurrency.py

One model response asks for N calls of a tool that sleeps 0.2 s; the table gives the
wall time of the whole request (median of a few runs) for N = 1, 2, 4, with an ordinary
tool and with a ``sequential=True`` tool. Concurrent calls take about 0.2 s whatever N
is; sequential ones N x 0.2 s. The tests only assert that the calls overlap; the seconds
are measured here.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minagent import FunctionTool
from minagent.testing import ScriptedChatClient, call, reply

SLEEP = 0.2
RUNS = 3


async def nap(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "rested"


async def one_request(calls: int, sequential: bool) -> float:
    tool = FunctionTool(name="nap", func=nap, sequential=sequential)
    batch = reply(
        *[call("nap", {"seconds": SLEEP}, call_id=f"c{i}") for i in range(calls)]
    )
    client = ScriptedChatClient([batch, "done"])
    start = time.perf_counter()
    response = await client.get_response("rest", options={"tools": [tool]})
    elapsed = time.perf_counter() - start
    results = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert [r.result for r in results] == ["rested"] * calls, results
    return elapsed


def main() -> None:
    print(
        f"one response with N calls of a tool that sleeps {SLEEP} s; median of {RUNS} requests\n"
    )
    print(f"{'N':>3}  {'concurrent':>12}  {'sequential=True':>16}")
    for calls in (1, 2, 4):
        concurrent = statistics.median(
            asyncio.run(one_request(calls, False)) for _ in range(RUNS)
        )
        sequential = statistics.median(
            asyncio.run(one_request(calls, True)) for _ in range(RUNS)
        )
        print(f"{calls:>3}  {concurrent:>10.3f} s  {sequential:>14.3f} s")


if __name__ == "__main__":
    main()
