"""benchmarks/imports.py: what it runs and how it reads ``-X importtime``; it asserts no
measured time."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location(
    "bench_imports", ROOT / "benchmarks" / "imports.py"
)
assert SPEC is not None
assert SPEC.loader is not None
imports = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(imports)  # the benchmark script, as a module (not on sys.path)


def test_parse_importtime_reads_self_and_cumulative_times() -> None:
    """The header line is skipped; each row is (module, self us, cumulative us), names
    unindented."""
    stderr = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       120 |        120 |     minagent._validate\n"
        "some other line\n"
        "import time:      3467 |      11291 |   minagent._responses\n"
    )
    assert imports.parse_importtime(stderr) == [
        ("minagent._validate", 120, 120),
        ("minagent._responses", 3467, 11291),
    ]


def test_report_names_both_imports_and_the_modules_loaded_after_asyncio() -> None:
    """One process each: the asyncio and minagent lines with their verdict, and a table
    of minagent's modules by self time that lists no module asyncio loaded before
    (asyncio itself, typing)."""
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "imports.py"),
        "--runs",
        "1",
        "--profile-runs",
        "1",
    ]
    done = subprocess.run(
        [*command, "--top", "50"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert any(line.startswith("import asyncio: median ") for line in lines)
    assert any(
        line.startswith("import minagent after it: median ")
        and line.endswith(("PASS", "MISS"))
        for line in lines
    )
    rows = [
        line.split("|")[1].strip()
        for line in lines
        if line.startswith("| ") and "---" not in line
    ][1:]
    assert "minagent._agents" in rows
    # (not json: under coverage the process loads it before asyncio)
    assert "minagent._types" in rows
    assert "asyncio" not in rows
    assert "typing" not in rows


def test_against_times_another_checkout_alternately(tmp_path: Path) -> None:
    """``--against`` adds a line for the other checkout (here a copy of this one's
    minagent/)."""
    import shutil

    shutil.copytree(
        ROOT / "minagent",
        tmp_path / "minagent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "imports.py"),
        "--runs",
        "1",
        "--profile-runs",
        "0",
    ]
    done = subprocess.run(
        [*command, "--against", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert f"  the same in {tmp_path.resolve()}: median " in done.stdout
    assert "over 2 fresh processes" in done.stdout
