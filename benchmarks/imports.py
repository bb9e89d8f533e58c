"""What ``import minagent`` costs on top of ``import asyncio`` (issue 30: at most 15 ms
more).

    python benchmarks/imports.py              # 21 fresh processes, then 11 under -X importtime
    python benchmarks/imports.py --runs 41    # more processes (the figures are medians)
    python benchmarks/imports.py --top 30     # the 30 modules with the most self time

First it byte-compiles this checkout's ``minagent/`` (``compileall``), so that no run
pays for compiling: the environment may set ``PYTHONDONTWRITEBYTECODE``, and then an
import never rewrites a stale ``.pyc`` and compiles every module again in every process.
Then, in ``--runs`` fresh processes (``PYTHONPATH`` is this checkout, so its
``minagent`` is imported), each process times ``import asyncio`` and then ``import
minagent`` with ``time.perf_counter`` and prints both; the report gives the median and
the range of each, and of minagent's extra over asyncio. Last, in ``--profile-runs``
processes under ``python -X importtime``, the median self time of every module that
``import minagent`` loads after asyncio, the largest first.

Standard library only; a script, never a timed test. ``run.py`` uses ``measure`` for its
own import line.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_EXTRA_MS = 15.0  # issue 30: import minagent <= import asyncio + 15 ms

TIMER = """
import time
t0 = time.perf_counter()
import asyncio
t1 = time.perf_counter()
{statement}
t2 = time.perf_counter()
print((t1 - t0) * 1e3, (t2 - t1) * 1e3)
"""


def environment(root: Path = ROOT) -> dict[str, str]:
    """The ``minagent`` of ``root`` first, no other ``PYTHON*`` setting of the
    caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(root)
    # as this environment; compile() below wrote the .pyc files
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def compile_tree(root: Path = ROOT) -> None:
    """Byte-compile ``minagent/`` so that every measured import reads fresh ``.pyc``
    files."""
    if not compileall.compile_dir(str(root / "minagent"), quiet=1):
        raise SystemExit("benchmarks/imports.py: compileall failed")


def measure(
    python: str, statement: str, runs: int, roots: tuple[Path, ...] = (ROOT,)
) -> list[list[float]]:
    """Per fresh process: ms for ``import asyncio``, then ms for STATEMENT after it;
    with several ``roots`` (checkouts), their processes alternate. The lists: asyncio's
    times, then each root's."""
    code = TIMER.format(statement=statement)
    for root in roots:  # warm the file system's caches
        subprocess.run(
            [python, "-c", code],
            cwd=root,
            env=environment(root),
            check=True,
            capture_output=True,
        )
    times: list[list[float]] = [[] for _ in range(len(roots) + 1)]
    for _ in range(runs):
        for i, root in enumerate(roots, 1):
            command = [python, "-c", code]
            done = subprocess.run(
                command,
                cwd=root,
                env=environment(root),
                check=True,
                capture_output=True,
            )
            first, second = done.stdout.split()
            times[0].append(float(first))
            times[i].append(float(second))
    return times


def parse_importtime(stderr: str) -> list[tuple[str, int, int]]:
    """``-X importtime``'s lines as (module, self us, cumulative us), in the order
    printed."""
    rows: list[tuple[str, int, int]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        rows.append((name.strip(), int(self_us), int(cumulative_us)))
    return rows


def self_times(python: str, statement: str, runs: int) -> dict[str, list[int]]:
    """Per module loaded by STATEMENT after ``import asyncio``: its self time (us) in
    each run."""
    code = f"import asyncio, sys; sys.stderr.write('-- after asyncio\\n'); {statement}"
    times: dict[str, list[int]] = defaultdict(list)
    for _ in range(runs):
        done = subprocess.run(
            [python, "-X", "importtime", "-c", code],
            cwd=ROOT,
            env=environment(),
            check=True,
            capture_output=True,
        )
        after = done.stderr.decode().split("-- after asyncio\n", 1)[1]
        for name, self_us, _ in parse_importtime(after):
            times[name].append(self_us)
    return times


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.1f} ms (range {min(values):.1f}-{max(values):.1f})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--runs", type=int, default=21, help="fresh processes timed (default 21)"
    )
    parser.add_argument(
        "--profile-runs",
        type=int,
        default=11,
        help="processes under -X importtime (default 11)",
    )
    parser.add_argument(
        "--top", type=int, default=20, help="modules listed by self time (default 20)"
    )
    parser.add_argument(
        "--statement",
        default="import minagent",
        help="what is timed after import asyncio",
    )
    parser.add_argument(
        "--against", type=Path, help="another checkout, timed alternately with this one"
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.profile_runs < 0 or args.top < 0:
        parser.error("--runs must be at least 1, --profile-runs and --top at least 0")
    load = (
        " ".join(f"{x:.2f}" for x in os.getloadavg())
        if hasattr(os, "getloadavg")
        else "?"
    )
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load {load}; {ROOT}"
    )
    roots = (ROOT,) if args.against is None else (ROOT, args.against.resolve())
    for root in roots:
        compile_tree(root)
    asyncio_ms, extra_ms, *other_ms = measure(
        sys.executable, args.statement, args.runs, roots
    )
    extra = statistics.median(extra_ms)
    verdict = "PASS" if extra <= TARGET_EXTRA_MS else "MISS"
    print(
        f"import asyncio: {spread(asyncio_ms)} over {len(asyncio_ms)} fresh processes"
    )
    print(
        f"{args.statement} after it: {spread(extra_ms)}; target <= +{TARGET_EXTRA_MS:g} ms: {verdict}"
    )
    for root, times in zip(roots[1:], other_ms, strict=True):
        print(f"  the same in {root}: {spread(times)}")
    if args.profile_runs and args.top:
        times = self_times(sys.executable, args.statement, args.profile_runs)
        medians = sorted(
            ((statistics.median(v), name) for name, v in times.items()), reverse=True
        )
        total = sum(m for m, _ in medians)
        print(
            f"\nself time under -X importtime, median of {args.profile_runs} runs ({len(medians)} modules,"
        )
        print(f"{total / 1e3:.1f} ms in all: the profiler inflates it)\n")
        print("| module | self (us) | share |\n| --- | ---: | ---: |")
        for us, name in medians[: args.top]:
            print(f"| {name} | {us:,.0f} | {us / total:.0%} |")
    load = (
        " ".join(f"{x:.2f}" for x in os.getloadavg())
        if hasattr(os, "getloadavg")
        else "?"
    )
    print(f"\nload {load} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
