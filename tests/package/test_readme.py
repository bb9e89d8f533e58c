"""The README is executable documentation."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_examples_run() -> None:
    """PK-4: every ```python block of the README runs; the first prints the answer it
    promises."""
    blocks = re.findall(
        r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S
    )
    assert len(blocks) >= 2
    outputs = [
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for code in blocks
    ]
    assert outputs[0].strip() == "2 + 3 = 5"


def test_ci_runs_the_readme_test_command() -> None:
    """PK-3: .ci/run runs exactly the test command the README gives."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(
        r"```sh\n([^\n]*python -m pip install[^\n]*tools/check.py)\n```", readme
    )
    assert command is not None
    assert command.group(1) in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


FAST = (
    "python -m pip install -q -r requirements-test.txt && python tools/check.py --fast"
)


def test_the_readme_fast_command_runs_the_suite_in_parallel() -> None:
    """PK-18: the README shows the fast command; it installs the test requirements
    (pytest-xdist pinned among them) and runs `tools/check.py --fast`, whose tests gate
    runs pytest in parallel on every core, as does every other gate."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```sh\n{FAST}\n```" in readme
    # each command's measured duration stands beside it
    assert len(re.findall(r"about \d+ minutes on a quiet 2-core machine", readme)) == 2
    assert "## The test commands' durations" in (
        ROOT / "benchmarks" / "README.md"
    ).read_text(encoding="utf-8")
    requirements = (ROOT / "requirements-test.txt").read_text(encoding="utf-8")
    assert re.search(r"^pytest-xdist==[\d.]+$", requirements, re.M)
    assert re.search(r"^pytest-timeout==[\d.]+$", requirements, re.M)
    import tomllib

    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))[
        "tool"
    ]["pytest"]["ini_options"]
    assert pytest_options["timeout"] == 600
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import check
    finally:
        sys.path.remove(str(ROOT / "tools"))
    fast = dict(check.gates(True, []))
    assert fast["tests"][1:5] == ["-m", "pytest", "-n", "auto"]
    full = dict(check.gates(False, []))
    assert "'-n', 'auto'" in full["tests"][-1]
    other = (ROOT / "tools" / "other_pythons.py").read_text(encoding="utf-8")
    assert '"pytest", "-n", "auto"' in other


def test_the_readme_fast_command_passes_on_part_of_the_suite() -> None:
    """PK-18: the fast command, as the README shows it (after its install step, which
    this suite's own run has done), runs a selection of the suite in parallel workers
    and passes; the whole suite runs the same way in CI's gate."""
    command = FAST.split(" && ")[1].split()
    assert command[:2] == ["python", "tools/check.py"]
    done = subprocess.run(
        [sys.executable, *command[1:], "tests/package/test_cli.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "check: all gates passed" in done.stdout
    assert "=== tests: -m pytest -n auto" in done.stdout
