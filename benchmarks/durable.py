"""What a durable run costs: a DBOS workflow per run, a step per model call and per tool
call (spec/dbos.md; issue 31).

    python benchmarks/durable.py                 # SQLite (default and WAL), PostgreSQL when its programs are here
    python benchmarks/durable.py --runs 20       # more runs per figure (the figure is the median)
    python benchmarks/durable.py --no-postgres

One run is ``ROUNDS`` model calls that each ask for one tool call, then a final answer:
``2 * ROUNDS + 1`` steps. The model is `ScriptedChatClient` and the tool returns at
once, so what is measured is minagent's and DBOS's own work. The table gives the median
time of a plain run and of a durable run, and the overhead per step: (durable - plain) /
steps; a one-step run (a single answer) gives the fixed cost of the workflow itself.
PostgreSQL is a real server started in a temporary directory (tests/dbos/_postgres.py,
with fsync on as in a deployment) and stopped at the end. A run that does the wrong work
(a wrong answer or tool count) is an error; nothing is compared with a target.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dbos import DBOS
from minagent_dbos import DurableAgent

from minagent import Agent, tool
from minagent.testing import ScriptedChatClient, call

ROUNDS = 10
calls = 0


@tool
async def lookup(n: int) -> int:
    """Return the number."""
    global calls
    calls += 1
    return n


def script(rounds: int) -> list[Any]:
    return [
        *([call("lookup", {"n": i}, call_id=f"c{i}")] for i in range(rounds)),
        "done",
    ]


class Swappable:
    """The agent the durable run wraps; each run gets a fresh scripted client."""

    def __init__(self) -> None:
        self.agent: Agent = Agent(ScriptedChatClient([]))
        self.id = "bench"

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self.agent.run(*args, **kwargs)


async def timed(make: Any, rounds: int, runs: int) -> float:
    global calls
    times = []
    for i in range(runs):
        calls = 0
        start = time.perf_counter()
        response = await make(i)
        times.append(time.perf_counter() - start)
        if response.text != "done" or calls != rounds:
            raise AssertionError(
                f"wrong work: {response.text!r}, {calls} tool calls, expected {rounds}"
            )
    return statistics.median(times)


async def measure(url: str, runs: int) -> list[tuple[int, float, float]]:
    DBOS(
        config={
            "name": "minagent-bench",
            "system_database_url": url,
            "log_level": "ERROR",
        }
    )
    swappable = Swappable()
    durable = DurableAgent(swappable, name="bench")
    DBOS.launch()
    rows = []
    try:
        for rounds in (0, ROUNDS):

            async def plain(_i: int, rounds: int = rounds) -> Any:
                return await Agent(
                    ScriptedChatClient(script(rounds)), tools=[lookup]
                ).run("go")

            async def durable_run(i: int, rounds: int = rounds) -> Any:
                swappable.agent = Agent(
                    ScriptedChatClient(script(rounds)), tools=[lookup]
                )
                return await durable.run(
                    "go", workflow_id=f"{url[:5]}-{rounds}-{i}-{time.time_ns()}"
                )

            await timed(durable_run, rounds, 2)  # warm up: tables, pools, imports
            plain_time = await timed(plain, rounds, runs)
            durable_time = await timed(durable_run, rounds, runs)
            rows.append((2 * rounds + 1, plain_time, durable_time))
    finally:
        DBOS.destroy(destroy_registry=True)
    return rows


def report(name: str, rows: list[tuple[int, float, float]]) -> None:
    print(f"\n{name}")
    print(
        f"{'steps':>6}  {'plain ms':>9}  {'durable ms':>11}  {'overhead per step ms':>21}"
    )
    for steps, plain, durable in rows:
        print(
            f"{steps:>6}  {plain * 1e3:>9.2f}  {durable * 1e3:>11.2f}  {(durable - plain) / steps * 1e3:>21.2f}"
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        report(
            "SQLite (one file, the one-machine default)",
            asyncio.run(measure(f"sqlite:///{directory}/a.sqlite", args.runs)),
        )
        with sqlite3.connect(f"{directory}/b.sqlite") as db:
            # kept by the file: every later connection uses it
            db.execute("PRAGMA journal_mode=WAL")
        report(
            "SQLite in WAL mode",
            asyncio.run(measure(f"sqlite:///{directory}/b.sqlite", args.runs)),
        )
    if args.no_postgres:
        return 0
    from tests.dbos._postgres import PostgresServer, missing

    why = missing()
    if why is not None:
        print(f"\nPostgreSQL: skipped ({why})")
        return 0
    server = PostgresServer(fsync=True)
    server.start()
    try:
        report(
            "PostgreSQL (a local server, default settings)",
            asyncio.run(measure(server.url, args.runs)),
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
