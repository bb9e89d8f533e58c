"""benchmarks/run.py against a stand-in harness: what it runs, how it summarises, how it
fails.

The stand-in ``bench_*.py`` scripts print fixed records in the shared harness's format,
so these tests check the table's arithmetic and the exit statuses, never a measured
time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "run.py"

# seconds per op and peak_kb per framework and scenario; the minagent figures vary by
# round (the run's median is the middle one)
STUB = """
import argparse, json, os, pathlib, sys
FRAMEWORK = {framework!r}
FIGURES = {figures!r}
parser = argparse.ArgumentParser()
parser.add_argument("--scenarios")
args = parser.parse_args()
counter = pathlib.Path(FRAMEWORK + ".round")
round_ = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(round_ + 1))
for scenario in args.scenarios.split(","):
    if FIGURES.get(scenario) is None:
        sys.exit(f"AssertionError: {{scenario}}: expected tool_calls=10, got 9")
    seconds, peak = FIGURES[scenario]
    if isinstance(seconds, list):
        seconds = seconds[round_ % len(seconds)]
    record = {{"scenario": scenario, "framework": FRAMEWORK, "seconds_per_op": seconds, "peak_kb": peak,
              "root": os.environ["MINAGENT_ROOT"], "scale": os.environ["BENCH_SCALE"]}}
    print(json.dumps(record), flush=True)
"""

FLOOR = {
    "single_turn": (10e-6, 2.0),
    "tool_loop_10": (100e-6, 11.0),
    "stream_1000": (200e-6, 13.0),
}
OURS = {
    "single_turn": ([100e-6, 300e-6, 200e-6], 8.0),  # median 200 us: 20x > 12x
    "tool_loop_10": ([500e-6, 500e-6, 500e-6], 50.0),  # 5x <= 8x
    "stream_1000": ([1e-3, 1e-3, 1e-3], 250.0),  # 5x <= 10x, but 250 KiB > 200 KiB
}


def make_harness(where: Path, ours: dict[str, object]) -> Path:
    where.mkdir()
    (where / "common.py").write_text("")
    for framework, script, figures in (
        ("raw-asyncio", "bench_raw.py", FLOOR),
        ("minagent", "bench_minagent.py", ours),
    ):
        (where / script).write_text(
            textwrap.dedent(STUB.format(framework=framework, figures=figures))
        )
    return where


def run(harness: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINAGENT_BENCH_HARNESS": str(harness)}
    command = [sys.executable, str(RUN), "--import-runs", "0", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_missing_harness_is_one_line_and_status_2(tmp_path: Path) -> None:
    done = run(tmp_path / "nowhere")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "harness not found" in done.stderr
    assert str(tmp_path / "nowhere") in done.stderr
    assert "Traceback" not in done.stderr


def test_table_gives_medians_ratios_and_verdicts(tmp_path: Path) -> None:
    harness = make_harness(tmp_path / "bench", OURS)
    out = tmp_path / "out.json"
    scenarios = "single_turn,tool_loop_10,stream_1000"
    done = run(
        harness,
        "--rounds",
        "3",
        "--scale",
        "0.3",
        "--scenarios",
        scenarios,
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "| single_turn | 10.0 µs | 200.0 µs (20.0x) | ≤ 12x | MISS |" in lines
    assert "| tool_loop_10 | 100.0 µs | 500.0 µs (5.0x) | ≤ 8x | PASS |" in lines
    assert "| stream_1000 | 200.0 µs | 1,000.0 µs (5.0x) | ≤ 10x | PASS |" in lines
    assert "| stream_1000 | 13.0 | 250.0 | ≤ 200 KiB | MISS |" in lines
    assert (
        "targets missed: single_turn 20.0x (≤ 12x); stream_1000 peak 250.0 KiB (≤ 200 KiB)"
        in lines
    )
    data = json.loads(out.read_text())
    # two frameworks, three rounds, three scenarios
    assert len(data["records"]) == 2 * 3 * 3
    # MINAGENT_ROOT is this checkout
    assert {r["root"] for r in data["records"]} == {str(ROOT)}
    assert {r["scale"] for r in data["records"]} == {"0.3"}


def test_wrong_work_is_an_error_and_status_1(tmp_path: Path) -> None:
    harness = make_harness(tmp_path / "bench", {**OURS, "tool_loop_10": None})
    done = run(harness, "--rounds", "1", "--scenarios", "single_turn,tool_loop_10")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert "| single_turn | 10.0 µs | 100.0 µs (10.0x) | ≤ 12x | PASS |" in lines
    assert "| tool_loop_10 | 100.0 µs | — | ≤ 8x |  |" in lines
    errors = [line for line in lines if line.startswith("ERROR")]
    assert errors == [
        "ERROR (a scenario did the wrong work or crashed): "
        "bench_minagent.py: AssertionError: tool_loop_10: expected tool_calls=10, got 9"
    ]
