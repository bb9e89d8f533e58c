"""Profile one of the shared harness's minagent scenarios with cProfile: minagent's hot
spots.

    python benchmarks/prof.py stream_1000            # the 1000-chunk stream
    python benchmarks/prof.py tool_loop_10 --ops 50  # 50 tool-loop runs
    python benchmarks/prof.py single_turn --all      # every function, not only minagent's

The scenario is ``bench_minagent.py``'s own setup from the shared harness (found as by
``run.py``). After one checked operation, ``--ops`` operations run under the profiler;
the header gives the function calls per operation (all, and those in minagent/), the
table per function the cumulative time (itself and what it calls) and the self time as a
share of the profiled total. Profiling inflates call-heavy code: read it for where the
time goes, not for figures (those come from run.py).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
from pathlib import Path
from typing import Any

from run import ROOT, HarnessMissing, find_harness

DEFAULT_OPS = {"single_turn": 2000, "stream_1000": 20, "concurrent_100": 2}


def main(argv: list[str]) -> int:
    try:
        harness = find_harness()
    except HarnessMissing as exc:
        print(f"benchmarks/prof.py: {exc}", file=sys.stderr)
        return 2
    os.environ["MINAGENT_ROOT"] = str(ROOT)
    sys.path.insert(0, str(harness))
    import bench_minagent  # type: ignore[import-not-found]  # the harness's scenarios; puts MINAGENT_ROOT first on sys.path

    setups: dict[str, Any] = bench_minagent.SETUPS
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("scenario", choices=sorted(setups))
    parser.add_argument(
        "--ops", type=int, help="operations to profile (default: by scenario)"
    )
    parser.add_argument("--limit", type=int, default=25, help="rows to print")
    parser.add_argument(
        "--all", action="store_true", help="not only functions in minagent/"
    )
    args = parser.parse_args(argv)
    ops = args.ops or DEFAULT_OPS.get(args.scenario, 200)
    profiler = cProfile.Profile()

    async def go() -> None:
        operation = await setups[args.scenario]()
        result = await operation.run()
        if operation.check is not None:
            operation.check(result)
        profiler.enable()
        for _ in range(ops):
            await operation.run()
        profiler.disable()

    asyncio.run(go())
    entries = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(tt for _cc, _nc, tt, _ct, _callers in entries.values()) or 1.0
    package = str(ROOT / "minagent")
    # Counted per code object: pstats keys functions by (file, line, name), which merges
    # every generated `<string>:2:__init__` (dataclasses) into one entry and drops the
    # others' calls.
    stats = profiler.getstats()
    calls_all = sum(entry.callcount for entry in stats)
    calls_ours = sum(
        e.callcount
        for e in stats
        if getattr(e.code, "co_filename", "").startswith(package)
    )
    rows = []
    for (filename, line, name), (_cc, calls, tt, ct, _callers) in entries.items():
        if not args.all and not filename.startswith(package):
            continue
        where = (
            Path(filename).relative_to(ROOT)
            if filename.startswith(str(ROOT))
            else filename
        )
        rows.append((ct / total, tt / total, calls, f"{where}:{line}:{name}"))
    rows.sort(reverse=True)
    print(
        f"{args.scenario}: {ops} operations, {total:.3f} s profiled; per operation "
        f"{calls_all / ops:,.0f} function calls, {calls_ours / ops:,.0f} of them in minagent/"
    )
    print(f"{'cum %':>6}  {'self %':>6}  {'calls':>8}  function")
    for cum, own, calls, where in rows[: args.limit]:
        print(f"{cum:6.1%}  {own:6.1%}  {calls:8d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
