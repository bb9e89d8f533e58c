"""minagent overhead benchmarks: one command, one table (see benchmarks/README.md).

    python benchmarks/run.py                 # full run
    python benchmarks/run.py --quick         # fewer, shorter repetitions (for trying things)
    python benchmarks/run.py --repeat 15     # more repetitions
    python benchmarks/run.py --peers         # also Microsoft Agent Framework and LangChain v1,
                                             # installed on demand into benchmarks/peers/.venv
    python benchmarks/run.py --json out.json # also write every sample as JSON

Every scenario is measured next to the plain-asyncio floor (``floor.py``) in the same process
and printed as a ratio to it, with the target ratio and PASS/MISS. A MISS is reported, never
turned into a failing exit status; a scenario that does the wrong work (wrong tool-call count,
wrong final text) is an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]  # measure this checkout's minagent, not an installed one

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from _harness import Bench, Result, derive_per_iteration, measure_all  # noqa: E402
from floor import TURNS, floor_benches  # noqa: E402
from scenarios import m0_benches, minagent_benches  # noqa: E402

TARGETS = {"S1": 15.0, "S2": 10.0, "S3": 12.0, "S4": 10.0, "S5": 10.0}
IMPORT_BUDGET_MS = 25.0
PEERS_DIR = BENCH / "peers"
VENV = PEERS_DIR / ".venv"
PEERS: dict[str, dict[str, Any]] = {
    "agent-framework": {
        "script": "af.py",
        "requirements": ["agent-framework-core"],
        "import": "from agent_framework import Agent",  # the package loads lazily
    },
    "langchain-v1": {
        "script": "langchain_v1.py",
        "requirements": ["langchain>=1,<2"],
        "import": "from langchain.agents import create_agent",
    },
}


# -- settings ----------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 short repetitions (noisy)")
    parser.add_argument("--repeat", type=int, help="timed repetitions per scenario (default 9)")
    parser.add_argument("--peers", action="store_true", help="also run the peer frameworks")
    parser.add_argument("--json", metavar="FILE", help="write all results and samples to FILE")
    parser.add_argument("--gc-off", action="store_true", help="disable the garbage collector inside timed batches")
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (3 if args.quick else 9)
    args.target_ms = 20 if args.quick else 100  # duration of one timed repetition
    args.import_runs = 5 if args.quick else 21
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


# -- in-process scenarios ------------------------------------------------------------------------


def interleaved(*groups: list[Bench]) -> list[Bench]:
    """Floor and framework of one scenario measured back to back, under the same load."""
    out: list[Bench] = []
    for items in zip(*groups, strict=True):
        out.extend(items)
    return out


async def measure_in_process(args: argparse.Namespace, errors: list[str]) -> list[Result]:
    def failed(bench: Bench, exc: BaseException) -> None:
        errors.append(f"{bench.scenario} {bench.impl}: {type(exc).__name__}: {exc}")

    benches = [*m0_benches(), *interleaved(floor_benches(), minagent_benches())]
    return await measure_all(
        benches,
        repeat=args.repeat,
        target_ns=args.target_ms * 1_000_000,
        gc_enabled=not args.gc_off,
        on_error=failed,
    )


# -- import time -------------------------------------------------------------------------------


def _children_cpu_ms() -> float:
    if resource is None:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def import_times(python: str, statements: list[str], runs: int, cwd: Path) -> list[tuple[float, float]]:
    """Median wall and CPU time (ms) of ``python -c STATEMENT`` in fresh processes.

    The statements alternate, so a burst of load hits all of them alike. The CPU time (user +
    system of the child, from ``getrusage``) is 0 where ``resource`` does not exist.
    """
    wall: list[list[float]] = [[] for _ in statements]
    cpu: list[list[float]] = [[] for _ in statements]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    for statement in statements:  # warm the bytecode caches
        subprocess.run([python, "-c", statement], cwd=cwd, env=env, check=True)
    for _ in range(runs):
        for i, statement in enumerate(statements):
            used = _children_cpu_ms()
            start = time.perf_counter_ns()
            subprocess.run([python, "-c", statement], cwd=cwd, env=env, check=True)
            wall[i].append((time.perf_counter_ns() - start) / 1e6)
            cpu[i].append(_children_cpu_ms() - used)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(wall, cpu, strict=True)]


# -- peers ---------------------------------------------------------------------------------------


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> str | None:
    """Create benchmarks/peers/.venv if needed; the reason it cannot be used, or None."""
    if venv_python().exists():
        return None
    print(f"peers: creating {VENV.relative_to(ROOT)} ...", flush=True)
    done = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True, text=True)
    if done.returncode != 0:
        return f"python -m venv failed: {_last_line(done.stderr)}"
    return None


def ensure_peer(name: str, spec: dict[str, Any]) -> str | None:
    """Install the peer's packages into the venv if it cannot import them; a reason, or None."""
    python = str(venv_python())
    probe = [python, "-c", spec["import"]]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return None
    print(f"peers: installing {' '.join(spec['requirements'])} ...", flush=True)
    log = VENV / f"pip-{name}.log"
    try:
        with log.open("w") as out:
            done = subprocess.run(
                [python, "-m", "pip", "install", "-q", *spec["requirements"]],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=1800,
            )
    except subprocess.TimeoutExpired:
        return "pip install timed out"
    if done.returncode != 0:
        return f"pip install failed: {_last_line(log.read_text())} (log: {log.relative_to(ROOT)})"
    imported = subprocess.run(probe, capture_output=True, text=True)
    if imported.returncode != 0:
        return f"installed but `{spec['import']}` fails: {_last_line(imported.stderr)}"
    return None


def run_peer(name: str, spec: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Run one peer script in the venv; its JSON report, or {"skipped": reason}."""
    command = [str(venv_python()), str(PEERS_DIR / spec["script"])]
    command += ["--repeat", str(args.repeat), "--target-ms", str(args.target_ms)]
    command += ["--gc-off"] if args.gc_off else []
    print(f"peers: running {name} ...", flush=True)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=BENCH)
    except subprocess.TimeoutExpired:
        return {"skipped": "timed out after 3600 s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        reason = _last_line(done.stderr) or f"exit status {done.returncode}, no report"
        return {"skipped": f"crashed: {reason}"}
    try:
        report: dict[str, Any] = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        return {"skipped": f"unreadable report: {exc}"}
    return report


def run_peers(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    reports: dict[str, dict[str, Any]] = {}
    reason = ensure_venv()
    for name, spec in PEERS.items():
        why = reason or ensure_peer(name, spec)
        if why:
            reports[name] = {"skipped": why}
            continue
        report = run_peer(name, spec, args)
        if "skipped" not in report:
            python = str(venv_python())
            base, framework = import_times(python, ["import asyncio", spec["import"]], args.import_runs, BENCH)
            report["import_ms"] = {"asyncio": base, "framework": framework}
        reports[name] = report
    return reports


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


# -- the table -----------------------------------------------------------------------------------


def fmt_time(ns: float) -> str:
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def fmt_bytes(size: int | None) -> str:
    if size is None:
        return ""
    return f"{size / 1024:.1f} KiB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.2f} MiB"


def build_rows(
    results: list[Result],
    peers: dict[str, dict[str, Any]],
    imports: dict[str, tuple[float, float]],
) -> list[dict[str, Any]]:
    """One dict per table row, in display order, with ratio and verdict filled in."""
    by: dict[tuple[str, str], Result] = {(r.scenario, r.impl): r for r in results}
    floors: dict[str, str] = {"minagent": "floor", "floor": "floor"}  # impl -> its floor's impl
    for name, report in peers.items():
        for row in report.get("results", []):
            result = Result(**row)
            by[(result.scenario, result.impl)] = result
        floors[name] = f"floor@{name}"
    impls = ["floor", "minagent", *peers]
    measured = list(by.values())
    for impl in {r.impl for r in measured}:  # every implementation and every peer's floor
        per_iter = derive_per_iteration(measured, TURNS, impl)
        if per_iter is not None:
            by[("S2/iter", impl)] = per_iter

    rows: list[dict[str, Any]] = []

    def add(result: Result, floor: Result | None, target: float | None) -> None:
        ratio = result.ns_per_op / floor.ns_per_op if floor and floor.ns_per_op > 0 else None
        cpu_ratio = result.cpu_ns_per_op / floor.cpu_ns_per_op if floor and floor.cpu_ns_per_op > 0 else None
        verdict = ""
        if target is not None and ratio is not None:
            verdict = "PASS" if ratio <= target else "MISS"
        rows.append(
            {
                "scenario": result.scenario,
                "impl": result.impl,
                "ns_per_op": result.ns_per_op,
                "spread": result.spread,
                "cpu_ns_per_op": result.cpu_ns_per_op,
                "ratio": ratio,
                "cpu_ratio": cpu_ratio,
                "target": target,
                "verdict": verdict,
                "peak_bytes": result.peak_bytes,
                "ops_per_rep": result.ops_per_rep,
                "samples": result.samples,
                "cpu_samples": result.cpu_samples,
            }
        )

    m0_floor = by.get(("M0 await", "asyncio"))
    for scenario in ("M0 await", "M0 empty", "M0 1 mw", "M0 3 mw"):
        impl = "asyncio" if scenario == "M0 await" else "minagent"
        if (scenario, impl) in by:
            add(by[(scenario, impl)], m0_floor, None)
    for scenario in ("S1", "S2", "S2/iter", "S3", "S4", "S5"):
        for impl in impls:
            result = by.get((scenario, impl))
            if result is None:
                continue
            floor = by.get((scenario, floors[impl]))
            target = TARGETS.get(scenario) if impl == "minagent" else None
            add(result, floor, target)
    if imports:
        base = imports["asyncio"]
        rows.append(_import_row("asyncio", base, base, None))
        rows.append(_import_row("minagent", imports["minagent"], base, IMPORT_BUDGET_MS))
    for name, report in peers.items():
        if "import_ms" in report:
            base, framework = report["import_ms"]["asyncio"], report["import_ms"]["framework"]
            rows.append(_import_row(name, framework, base, None))
    return rows


def _import_row(impl: str, ms: Sequence[float], base: Sequence[float], budget: float | None) -> dict[str, Any]:
    extra = ms[0] - base[0]
    verdict = ("PASS" if extra <= budget else "MISS") if budget is not None else ""
    return {
        "scenario": "import",
        "impl": impl,
        "ms": ms[0],
        "cpu_ms": ms[1],
        "extra_ms": extra,
        "cpu_extra_ms": ms[1] - base[1],
        "target_extra_ms": budget,
        "verdict": verdict,
    }


def render(rows: list[dict[str, Any]], peers: dict[str, dict[str, Any]]) -> str:
    header = ("scenario", "impl", "time/op", "noise", "cpu/op", "x floor", "target", "", "peak mem")
    table: list[tuple[str, ...]] = [header]
    previous = None
    for row in rows:
        scenario = row["scenario"] if row["scenario"] != previous else ""
        previous = row["scenario"]
        if row["scenario"] == "import":
            extra = "" if row["impl"] == "asyncio" else f"+{row['extra_ms']:.1f} ms"
            target = f"<= +{row['target_extra_ms']:.0f} ms" if row["target_extra_ms"] else ""
            table.append(
                (
                    scenario,
                    row["impl"],
                    f"{row['ms']:.1f} ms",
                    "",
                    f"{row['cpu_ms']:.1f} ms" if row["cpu_ms"] else "",
                    extra,
                    target,
                    row["verdict"],
                    "",
                )
            )
            continue
        ratio = f"{row['ratio']:.1f}x" if row["ratio"] is not None else ""
        target = f"<= {row['target']:.0f}x" if row["target"] else ""
        noise = f"±{row['spread']:.0%}" if row["spread"] else ""
        table.append(
            (
                scenario,
                row["impl"],
                fmt_time(row["ns_per_op"]),
                noise,
                fmt_time(row["cpu_ns_per_op"]),
                ratio,
                target,
                row["verdict"],
                fmt_bytes(row["peak_bytes"]),
            )
        )
    for name, report in peers.items():
        if "skipped" in report:
            table.append(("(peer)", name, "skipped: " + report["skipped"], *[""] * 6))
        for scenario, reason in report.get("skipped_scenarios", {}).items():
            table.append((scenario, name, "skipped: " + reason, *[""] * 6))
    widths = [max(len(line[i]) for line in table if len(line[2]) < 40) for i in range(len(header))]
    right = {2, 3, 4, 5, 8}
    out = []
    for line in table:
        if line[2].startswith("skipped:"):
            out.append(f"{line[0]:<{widths[0]}}  {line[1]:<{widths[1]}}  {line[2]}")
            continue
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(line)]
        out.append("  ".join(cells).rstrip())
        if line is header:
            out.append("-" * len(out[-1]))
    return "\n".join(out)


def _miss(row: dict[str, Any]) -> str:
    if row["scenario"] == "import":
        return f"import {row['impl']} (+{row['extra_ms']:.1f} ms)"
    return f"{row['scenario']} {row['impl']} ({row['ratio']:.1f}x)"


def notes(rows: list[dict[str, Any]], peers: dict[str, dict[str, Any]], errors: list[str]) -> list[str]:
    lines = []
    m0 = {r["scenario"]: r for r in rows if r["scenario"].startswith("M0")}
    if {"M0 empty", "M0 3 mw", "M0 await"} <= m0.keys():
        parts = []
        for key, label in (("ns_per_op", "wall"), ("cpu_ns_per_op", "cpu")):
            per_mw = (m0["M0 3 mw"][key] - m0["M0 empty"][key]) / 3
            fixed = m0["M0 empty"][key] - m0["M0 await"][key]
            parts.append(f"{fmt_time(fixed)} + {fmt_time(per_mw)} per middleware ({label})")
        lines.append("M0: run_pipeline over a plain await costs " + "; ".join(parts) + ".")
    for name, report in peers.items():
        status = f"skipped: {report['skipped']}" if "skipped" in report else "ran"
        lines.append(f"peer {name}: {report.get('version', '?')}, {status}")
    misses = [_miss(r) for r in rows if r["verdict"] == "MISS"]
    lines.append("targets missed: " + (", ".join(misses) if misses else "none"))
    lines.extend(f"ERROR (scenario did the wrong work or crashed): {e}" for e in errors)
    return lines


def checkout() -> str:
    """The commit measured, and whether minagent/ had uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "minagent"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "(no git)"
    return f"{head or '?'}{' + uncommitted changes' if dirty else ''}"


# -- main ----------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = time.time()
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"minagent benchmarks: Python {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {load_before and ' '.join(f'{x:.2f}' for x in load_before)}; "
        f"{args.repeat} repetitions of ~{args.target_ms} ms, median; gc "
        f"{'off' if args.gc_off else 'on'} while timing; minagent {checkout()}",
        flush=True,
    )
    errors: list[str] = []
    results = asyncio.run(measure_in_process(args, errors))
    base, minagent_ms = import_times(sys.executable, ["import asyncio", "import minagent"], args.import_runs, ROOT)
    imports = {"asyncio": base, "minagent": minagent_ms}
    peers = run_peers(args) if args.peers else {}
    rows = build_rows(results, peers, imports)
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    print()
    print(render(rows, peers))
    print()
    for line in notes(rows, peers, errors):
        print(line)
    print(
        f"load average {load_after and ' '.join(f'{x:.2f}' for x in load_after)} at the end; "
        f"{time.time() - started:.0f} s in all."
    )
    if peers:
        print(
            "Peer rows are divided by the floor measured inside the peer's own process; a peer's "
            "import is compared with `import asyncio` in the peers' venv."
        )
    if args.json:
        data = {
            "meta": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "load_before": load_before,
                "load_after": load_after,
                "repeat": args.repeat,
                "target_ms": args.target_ms,
                "gc_enabled_while_timing": not args.gc_off,
                "minagent": checkout(),
                "started": started,
            },
            "rows": rows,
            "peers": {name: {k: v for k, v in report.items() if k != "results"} for name, report in peers.items()},
            "errors": errors,
        }
        Path(args.json).write_text(json.dumps(data, indent=2))
        print(f"wrote {args.json}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
