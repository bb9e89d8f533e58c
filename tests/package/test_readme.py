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
