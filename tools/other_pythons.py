"""Run the test suite on every further CPython >= 3.11 this machine offers (issue 13,
PK-5).

    python tools/other_pythons.py          # find, install, test; print which versions ran

Interpreters are found, not hard-coded: ``python3.N`` on PATH and every version under
``$(pyenv root)/versions``, for N >= 11, other than the interpreter running this script.
Each gets its own virtual environment under ``.venv-pythons/`` with
``requirements-test.txt`` installed, and runs ``pytest``. The exit status is non-zero
when any version fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venv-pythons"


def version_of(python: str) -> tuple[int, int, str] | None:
    try:
        out = subprocess.run(
            [
                python,
                "-c",
                "import sys, platform; print(platform.python_implementation(), *sys.version_info[:3])",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(out) != 4 or out[0] != "CPython":
        return None
    return int(out[1]), int(out[2]), ".".join(out[1:])


def candidates() -> list[str]:
    found = [shutil.which(f"python3.{minor}") for minor in range(11, 20)]
    pyenv = shutil.which("pyenv")
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    if pyenv:
        done = subprocess.run([pyenv, "root"], capture_output=True, text=True)
        roots.insert(0, done.stdout.strip())
    for root in filter(None, roots):
        for path in sorted(Path(root, "versions").glob("3.*/bin/python3")):
            if re.fullmatch(r"3\.\d+\.\d+", path.parent.parent.name):
                found.append(str(path))
    return [p for p in found if p]


def interpreters() -> dict[tuple[int, int], tuple[str, str]]:
    """One interpreter per minor version >= 3.11, excluding this one's minor version."""
    mine = sys.version_info[:2]
    chosen: dict[tuple[int, int], tuple[str, str]] = {}
    for python in candidates():
        found = version_of(python)
        if found is None:
            continue
        major, minor, full = found
        if (major, minor) >= (3, 11) and (major, minor) != mine:
            chosen.setdefault((major, minor), (python, full))
    return dict(sorted(chosen.items()))


def run(python: str, label: str) -> bool:
    venv = VENVS / label
    if not (venv / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    install = [
        py,
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
        "-r",
        "requirements-test.txt",
    ]
    if subprocess.run(install, cwd=ROOT).returncode != 0:
        print(
            f"other-pythons: {label}: installing the test requirements failed",
            flush=True,
        )
        return False
    return (
        subprocess.run(
            [py, "-m", "pytest", "-n", "auto", "-p", "no:cacheprovider", "-q"],
            cwd=ROOT,
        ).returncode
        == 0
    )


def main() -> int:
    found = interpreters()
    ran: list[str] = [
        f"{sys.version_info.major}.{sys.version_info.minor} (the main run)"
    ]
    failed: list[str] = []
    for (major, minor), (python, full) in found.items():
        label = f"{major}.{minor}"
        print(f"\n=== pytest on CPython {full} ({python})", flush=True)
        (ran if run(python, label) else failed).append(label)
    print(
        f"\nother-pythons: ran on CPython {', '.join(ran + failed)}; failed: {', '.join(failed) or 'none'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
