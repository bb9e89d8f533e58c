"""minagent's overhead, measured with the shared harness (see benchmarks/README.md).

    python benchmarks/run.py                  # floor + minagent, 3 interleaved rounds, import time
    python benchmarks/run.py --quick          # 1 short round (noisy; for trying things)
    python benchmarks/run.py --peers          # also the upstream framework and LangChain v1
    python benchmarks/run.py --json out.json  # also every record as JSON

The scenarios, the plain-asyncio floor (``bench_raw.py``) and the measuring method are
the shared harness's (``$MINAGENT_BENCH_HARNESS``, else ``../shared/bench`` beside this
checkout); this script runs its ``bench_<framework>.py`` scripts as subprocesses the way
its ``compare.sh`` does, with ``MINAGENT_ROOT`` set to this checkout, and adds the
targets of issue 14 with PASS/MISS, the harness's ``peak_kb`` and the import-time check.

Exit status: 0; 1 when a scenario did the wrong work or crashed (never because of a
MISS); 2 when the shared harness is not found.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

# the import-time measure (issue 30: import minagent <= import asyncio + 15 ms)
import imports as import_cost

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV = BENCH / ".venv-peers"

SCENARIOS = [
    "single_turn",
    "tool_loop_10",
    "middleware_3x3",
    "stream_1000",
    "concurrent_100",
]
FLOOR = "raw-asyncio"
# framework name in the harness's records -> its script
SCRIPTS = {FLOOR: "bench_raw.py", "minagent": "bench_minagent.py"}
PEER_SCRIPTS = {"agent-framework": "bench_af.py", "langchain": "bench_lc.py"}
PEER_IMPORTS = {
    "agent-framework": "from agent_framework import Agent",
    "langchain": "from langchain.agents import create_agent",
}
# minagent's targets (issue 14): time as a ratio to the floor; peak memory in KiB
TARGET_RATIO = {
    "single_turn": 12.0,
    "tool_loop_10": 8.0,
    "middleware_3x3": 8.0,
    "stream_1000": 10.0,
    "concurrent_100": 6.0,
}
TARGET_PEAK_KB = {"stream_1000": 200.0}
STRETCH = 10.0  # minagent at least this many times faster than the upstream framework


class HarnessMissing(Exception):
    pass


def find_harness() -> Path:
    configured = os.environ.get("MINAGENT_BENCH_HARNESS")
    where = Path(configured) if configured else ROOT.parent / "shared" / "bench"
    if not (where / "common.py").is_file() or not (where / "bench_raw.py").is_file():
        source = "$MINAGENT_BENCH_HARNESS" if configured else "the default location"
        raise HarnessMissing(
            f"shared benchmark harness not found at {where} ({source}): "
            "set MINAGENT_BENCH_HARNESS to the folder holding common.py and bench_raw.py"
        )
    return where.resolve()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="1 round at scale 0.2, 5 import runs"
    )
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3)")
    parser.add_argument(
        "--scale", type=float, help="the harness's BENCH_SCALE (default 0.5)"
    )
    parser.add_argument(
        "--reps", type=int, default=3, help="the harness's BENCH_REPS (default 3)"
    )
    parser.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help="comma-separated subset"
    )
    parser.add_argument(
        "--import-runs",
        type=int,
        help="fresh processes per import statement (default 11; 0 skips)",
    )
    parser.add_argument(
        "--peers", action="store_true", help="also the peers, in benchmarks/.venv-peers"
    )
    parser.add_argument(
        "--json", metavar="FILE", help="write every record and the summary to FILE"
    )
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.scale = args.scale or (0.2 if args.quick else 0.5)
    args.import_runs = (
        (5 if args.quick else 11) if args.import_runs is None else args.import_runs
    )
    if args.rounds < 1 or args.reps < 1 or args.scale <= 0:
        parser.error("--rounds and --reps must be at least 1, --scale above 0")
    return args


# -- running the harness ---------------------------------------------------------------------------


def run_script(
    python: str, harness: Path, script: str, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], str]:
    """One ``bench_*.py`` run: its JSON records (printed one per line as each scenario
    ends) and an error line, empty when it exited cleanly."""
    env = {
        **os.environ,
        "MINAGENT_ROOT": str(ROOT),
        "BENCH_SCALE": str(args.scale),
        "BENCH_REPS": str(args.reps),
    }
    command = [python, script, "--scenarios", args.scenarios]
    done = subprocess.run(command, cwd=harness, env=env, capture_output=True, text=True)
    records = [
        json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")
    ]
    error = ""
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        error = f"{script}: {lines[-1].strip() if lines else f'exit status {done.returncode}'}"
    return records, error


def measure(
    harness: Path, frameworks: dict[str, tuple[str, str]], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every framework once per round, in turn, so that all see the same machine
    load."""
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    for number in range(1, args.rounds + 1):
        print(
            f"round {number}/{args.rounds}: {', '.join(frameworks)}",
            file=sys.stderr,
            flush=True,
        )
        for python, script in frameworks.values():
            got, error = run_script(python, harness, script, args)
            records += got
            if error:
                errors.append(error)
    return records, errors


def import_times(
    python: str, statements: dict[str, str], runs: int
) -> dict[str, float]:
    """Median ms of ``import asyncio`` ("asyncio") and of each statement after it, timed
    inside fresh processes with this checkout's ``minagent/`` compiled first
    (``imports.py``'s method)."""
    import_cost.compile_tree()
    medians: dict[str, float] = {}
    for name, statement in statements.items():
        asyncio_ms, extra_ms = import_cost.measure(python, statement, runs)
        medians.setdefault("asyncio", statistics.median(asyncio_ms))
        medians[name] = statistics.median(extra_ms)
    return medians


# -- peers -----------------------------------------------------------------------------------------


def peers_python(harness: Path) -> str:
    """benchmarks/.venv-peers with the harness's requirements-lock.txt (made on first
    use)."""
    python = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        print(
            f"peers: creating {VENV.relative_to(ROOT)} ...", file=sys.stderr, flush=True
        )
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        (VENV / ".gitignore").write_text("*\n")  # as Python 3.13's venv does
    stamp = VENV / "requirements-lock.txt"
    lock = (harness / "requirements-lock.txt").read_text()
    if not stamp.exists() or stamp.read_text() != lock:
        print(
            "peers: installing the harness's requirements-lock.txt ...",
            file=sys.stderr,
            flush=True,
        )
        log = VENV / "pip.log"
        with log.open("w") as out:
            command = [
                str(python),
                "-m",
                "pip",
                "install",
                "-r",
                str(harness / "requirements-lock.txt"),
            ]
            if (
                subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
                != 0
            ):
                raise OSError(f"pip install failed, see {log.relative_to(ROOT)}")
        stamp.write_text(lock)
    return str(python)


# -- the tables ------------------------------------------------------------------------------------


def summarise(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """Median seconds per op and median peak_kb per (framework, scenario) over the
    rounds."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        runs[(record["framework"], record["scenario"])].append(record)
    return {
        key: {
            "seconds_per_op": statistics.median(r["seconds_per_op"] for r in rows),
            "peak_kb": statistics.median(r["peak_kb"] for r in rows),
        }
        for key, rows in runs.items()
    }


def verdict(value: float | None, limit: float | None) -> str:
    if value is None or limit is None:
        return ""
    return "PASS" if value <= limit else "MISS"


def tables(
    med: dict[tuple[str, str], dict[str, float]],
    frameworks: list[str],
    scenarios: list[str],
) -> tuple[list[str], list[str]]:
    """The markdown tables (time, peak memory) and the list of misses."""
    peer = "agent-framework" if "agent-framework" in frameworks else None
    misses: list[str] = []
    head = ["scenario", *frameworks, "target", "verdict"] + (
        ["af / minagent"] if peer else []
    )
    time_rows = [head, ["---"] * len(head)]
    for s in scenarios:
        floor = med.get((FLOOR, s), {}).get("seconds_per_op")
        cells = [s]
        for f in frameworks:
            t = med.get((f, s), {}).get("seconds_per_op")
            if t is None:
                cells.append("—")
            elif floor and f != FLOOR:
                cells.append(f"{t * 1e6:,.1f} µs ({t / floor:.1f}x)")
            else:
                cells.append(f"{t * 1e6:,.1f} µs")
        ours = med.get(("minagent", s), {}).get("seconds_per_op")
        ratio = ours / floor if ours and floor else None
        target = TARGET_RATIO.get(s)
        cells += [f"≤ {target:g}x" if target else "", verdict(ratio, target)]
        if verdict(ratio, target) == "MISS":
            misses.append(f"{s} {ratio:.1f}x (≤ {target:g}x)")
        if peer:
            theirs = med.get((peer, s), {}).get("seconds_per_op")
            faster = theirs / ours if theirs and ours else None
            cells.append(
                f"{faster:.1f}x {'PASS' if faster >= STRETCH else 'MISS'}"
                if faster
                else "—"
            )
        time_rows.append(cells)
    head = ["peak_kb", *frameworks, "target", "verdict"]
    memory_rows = [head, ["---"] * len(head)]
    for s in scenarios:
        cells = [s]
        for f in frameworks:
            kb = med.get((f, s), {}).get("peak_kb")
            cells.append("—" if kb is None else f"{kb:,.1f}")
        ours_kb = med.get(("minagent", s), {}).get("peak_kb")
        limit = TARGET_PEAK_KB.get(s)
        cells += [f"≤ {limit:g} KiB" if limit else "", verdict(ours_kb, limit)]
        if verdict(ours_kb, limit) == "MISS":
            misses.append(f"{s} peak {ours_kb:,.1f} KiB (≤ {limit:g} KiB)")
        memory_rows.append(cells)
    lines = [*map(markdown, time_rows), "", *map(markdown, memory_rows)]
    return lines, misses


def markdown(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def checkout() -> str:
    """The commit measured, and whether minagent/ had uncommitted changes."""

    def git(*command: str) -> str:
        return subprocess.run(
            ["git", *command], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()

    try:
        head, dirty = (
            git("rev-parse", "--short", "HEAD"),
            git("status", "--porcelain", "--", "minagent"),
        )
    except OSError:
        return "(no git)"
    return f"{head or '?'}{' + uncommitted changes' if dirty else ''}"


# -- main ------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        harness = find_harness()
    except HarnessMissing as exc:
        print(f"benchmarks/run.py: {exc}", file=sys.stderr)
        return 2
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    frameworks = {name: (sys.executable, script) for name, script in SCRIPTS.items()}
    if args.peers:
        try:
            python = peers_python(harness)
        except (subprocess.CalledProcessError, OSError) as exc:
            print(
                f"benchmarks/run.py: cannot prepare {VENV.relative_to(ROOT)}: {exc}",
                file=sys.stderr,
            )
            return 1
        # as compare.sh with PEERS=1: every framework under the venv's interpreter
        frameworks = {
            name: (python, script)
            for name, script in {**SCRIPTS, **PEER_SCRIPTS}.items()
        }
    started = time.time()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"minagent {checkout()} against the shared harness {harness}; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load {load and ' '.join(f'{x:.2f}' for x in load)}; "
        f"{args.rounds} round(s), BENCH_SCALE={args.scale:g}, BENCH_REPS={args.reps}; medians over the rounds",
        flush=True,
    )
    records, errors = measure(harness, frameworks, args)
    med = summarise(records)
    lines, misses = tables(med, list(frameworks), scenarios)
    imports: dict[str, float] = {}
    if args.import_runs > 0:
        python = frameworks["minagent"][0]
        statements = {"minagent": "import minagent"} | (
            PEER_IMPORTS if args.peers else {}
        )
        imports = import_times(python, statements, args.import_runs)
    print()
    print("\n".join(lines))
    if imports:
        extra = imports["minagent"]
        check = verdict(extra, import_cost.TARGET_EXTRA_MS)
        others = "".join(
            f", {name} +{ms:.1f} ms"
            for name, ms in imports.items()
            if name in PEER_IMPORTS
        )
        print(
            f"\nimport (median of {args.import_runs} fresh processes): asyncio {imports['asyncio']:.1f} ms, "
            f"then minagent +{extra:.1f} ms (target ≤ +{import_cost.TARGET_EXTRA_MS:g} ms) {check}{others}"
        )
        if check == "MISS":
            misses.append(
                f"import +{extra:.1f} ms (≤ +{import_cost.TARGET_EXTRA_MS:g} ms)"
            )
    print("\ntargets missed: " + ("; ".join(misses) if misses else "none"))
    for error in errors:
        print(f"ERROR (a scenario did the wrong work or crashed): {error}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"load {load and ' '.join(f'{x:.2f}' for x in load)} at the end; {time.time() - started:.0f} s in all."
    )
    if args.json:
        summary = {f"{f} {s}": v for (f, s), v in med.items()}
        data = {
            "minagent": checkout(),
            "harness": str(harness),
            "records": records,
            "medians": summary,
        }
        data |= {"import_ms": imports, "misses": misses, "errors": errors}
        Path(args.json).write_text(json.dumps(data, indent=2))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
