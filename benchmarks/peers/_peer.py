"""What every peer script shares: arguments, the in-process floor, the JSON report.

A peer script runs inside ``benchmarks/peers/.venv`` (never the project's environment). It
measures its scenarios with the same harness as ``run.py`` and, interleaved with them, the same
plain-asyncio floor (``floor.py``), so that its ratios are taken in its own process under the
same load. It prints one JSON line on stdout; ``run.py`` merges it into the table. A scenario
that cannot be built or does the wrong work becomes a "skipped" entry with the reason.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from _harness import Bench, measure  # noqa: E402
from floor import floor_benches  # noqa: E402

__all__ = ["BENCH", "Bench", "report_unavailable", "run_peer"]

SCENARIOS = ("S1", "S2", "S2x1", "S3", "S4", "S5")


def report_unavailable(peer: str, reason: str) -> None:
    """The framework cannot be imported (or its API changed): one "skipped" report."""
    print(json.dumps({"peer": peer, "skipped": reason}))


def run_peer(peer: str, version: str, factories: dict[str, Callable[[], Bench]]) -> None:
    """Measure the floor and ``factories[scenario]()`` for each scenario; print the report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--target-ms", type=int, default=100)
    parser.add_argument("--gc-off", action="store_true")
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}

    async def attempt(scenario: str, make: Callable[[], Bench], impl: str) -> None:
        try:
            bench = make()
            bench.impl = impl
            result = await measure(
                bench,
                repeat=args.repeat,
                target_ns=args.target_ms * 1_000_000,
                gc_enabled=not args.gc_off,
            )
            results.append(result.to_dict())
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            skipped[scenario] = f"{type(exc).__name__}: {exc}"[:300]

    async def main() -> None:
        floors = {b.scenario: b for b in floor_benches()}
        for scenario in SCENARIOS:
            make = factories.get(scenario)
            if make is None:
                skipped[scenario] = "not implemented for this peer"
                continue
            floor = floors[scenario]
            await attempt(scenario, lambda f=floor: f, f"floor@{peer}")  # type: ignore[misc]
            await attempt(scenario, make, peer)

    asyncio.run(main())
    print(json.dumps({"peer": peer, "version": version, "results": results, "skipped_scenarios": skipped}))
