"""Profile one minagent scenario with cProfile and list the hot spots in minagent's code.

    python benchmarks/prof.py S4               # the streaming scenario
    python benchmarks/prof.py S2 --ops 50      # 50 tool-loop runs
    python benchmarks/prof.py "M0 3 mw" --all  # every function, not only minagent's

Scenarios: M0 await, M0 empty, M0 1 mw, M0 3 mw, S1, S2, S2x1, S3, S4, S5 (as in run.py).
After one checked warm-up operation, ``--ops`` operations run under the profiler; the table
gives, per function, the cumulative time (itself and what it calls) and the self time as a
percentage of the profiled total. Profiling inflates call-heavy code, so read it for where the
time goes, not for absolute figures (those come from run.py).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

from _harness import Bench  # noqa: E402
from scenarios import m0_benches, minagent_benches  # noqa: E402


def main(argv: list[str]) -> int:
    benches: dict[str, Bench] = {b.scenario: b for b in [*m0_benches(), *minagent_benches()]}
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("scenario", choices=sorted(benches))
    parser.add_argument("--ops", type=int, help="operations to profile (default: by scenario)")
    parser.add_argument("--limit", type=int, default=25, help="rows to print")
    parser.add_argument("--all", action="store_true", help="not only functions in minagent/")
    args = parser.parse_args(argv)
    bench = benches[args.scenario]
    ops = args.ops or {"S5": 2, "S4": 10}.get(args.scenario, 20_000 if "M0" in args.scenario else 100)
    profiler = cProfile.Profile()

    async def go() -> None:
        bench.prepare(1)
        await bench.run(1)
        bench.check(1)
        bench.prepare(ops)
        profiler.enable()
        await bench.run(ops)
        profiler.disable()
        bench.check(ops)

    asyncio.run(go())
    stats = pstats.Stats(profiler)
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for _cc, _nc, tt, _ct, _callers in entries.values()) or 1.0
    package = str(ROOT / "minagent")
    rows = []
    for (filename, line, name), (_cc, calls, tt, ct, _callers) in entries.items():
        if not args.all and not filename.startswith(package):
            continue
        where = Path(filename).relative_to(ROOT) if filename.startswith(str(ROOT)) else filename
        rows.append((ct / total, tt / total, calls, f"{where}:{line}:{name}"))
    rows.sort(reverse=True)
    print(f"{args.scenario}: {ops} operations, {total:.3f} s profiled")
    print(f"{'cum %':>6}  {'self %':>6}  {'calls':>8}  function")
    for cum, own, calls, where in rows[: args.limit]:
        print(f"{cum:6.1%}  {own:6.1%}  {calls:8d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
