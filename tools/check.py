"""Run every gate CI runs, in order, and fail if any fails (spec/README.md, issue 8).

    python tools/check.py            # every gate: what CI runs (.ci/run)
    python tools/check.py --fast     # the tests on this Python, in parallel, and spec
                                     # traceability (the README's fast command)
    python tools/check.py --fast tests/hosting   # the same, on part of the suite

The tests run in parallel on every core (pytest-xdist, ``-n auto``), in every gate.

Every gate runs even when an earlier one failed, so one run shows every problem.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
LINTED = ["minagent", "plugins", "tests", "tools", "benchmarks", "examples"]
# every plugin's package (plugins/<name>/minagent_*) is typed-checked along with the
# core
TYPED = [
    "minagent",
    *sorted(
        str(p.relative_to(ROOT))
        for p in ROOT.glob("plugins/*/minagent_*")
        if p.is_dir() and "." not in p.name
    ),
]


# start from no data: stale data files of an earlier run would be combined too
_TESTS = (
    "import subprocess, sys; subprocess.run([sys.executable, '-m', 'coverage', 'erase'], check=True); "
    "sys.exit(subprocess.run([sys.executable, '-m', 'coverage', 'run', '-m', 'pytest', '-n', 'auto', "
    "'-p', 'no:cacheprovider'])"
    ".returncode)"
)
_COVERAGE = (
    "import subprocess, sys; subprocess.run([sys.executable, '-m', 'coverage', 'combine', '-q']); "
    "sys.exit(subprocess.run([sys.executable, '-m', 'coverage', 'report']).returncode)"
)


# the suite in parallel on every core; coverage measures the workers too (they are
# subprocesses, and pyproject.toml has coverage patch subprocess)
PARALLEL = ["-n", "auto"]


def gates(fast: bool, selection: list[str]) -> list[tuple[str, list[str]]]:
    tests = [PY, "-m", "pytest", *PARALLEL, "-p", "no:cacheprovider", *selection]
    if fast:
        return [("tests", tests), ("spec", [PY, "tools/spec_trace.py"])]
    if selection:
        raise SystemExit("check: a selection of tests goes with --fast only")
    return [
        ("tests", [PY, "-c", _TESTS]),
        ("spec", [PY, "tools/spec_trace.py"]),
        ("ruff", [PY, "-m", "ruff", "check", *LINTED]),
        ("format", [PY, "-m", "ruff", "format", "--check", *LINTED]),
        ("mypy", [PY, "-m", "mypy", *TYPED]),
        # the main run and every measured subprocess wrote a data file: combine them,
        # then report
        ("coverage", [PY, "-c", _COVERAGE]),
        ("other-pythons", [PY, "tools/other_pythons.py"]),  # PK-5
    ]


def main(argv: list[str]) -> int:
    failed: list[str] = []
    selection = [a for a in argv if a != "--fast"]
    for name, command in gates("--fast" in argv, selection):
        print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
        if subprocess.run(command, cwd=ROOT).returncode != 0:
            failed.append(name)
    print()
    if failed:
        print(f"check: FAILED: {', '.join(failed)}")
        return 1
    print("check: all gates passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
