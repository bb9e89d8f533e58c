"""The core imports nothing outside the standard library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_uses_only_the_standard_library() -> None:
    """PK-1: importing minagent loads no module outside the standard library."""
    code = (
        "import sys; before = set(sys.modules); import minagent; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "bad = sorted(m for m in new if m not in sys.stdlib_module_names and m != 'minagent'); "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == ""


def test_vendored_copy_imports(tmp_path: Path) -> None:
    """PK-2: a copy of minagent/ in another tree imports with nothing else installed."""
    import shutil

    shutil.copytree(
        ROOT / "minagent",
        tmp_path / "minagent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import minagent; "
        "assert minagent.__file__.startswith(sys.argv[1]); print(minagent.__version__)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code, str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    from minagent import __version__

    assert out.stdout.strip() == __version__


def test_provider_errors_load_on_first_use() -> None:
    """PK-1: the provider support module loads on first use of a provider error name,
    and the names resolve to the classes plugins raise."""
    code = (
        "import sys, minagent; assert 'minagent.providers.errors' not in sys.modules; "
        "from minagent.providers import RateLimitError; "
        "assert minagent.RateLimitError is RateLimitError; print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "ok"
