"""plugins/dbos/README.md is executable documentation (spec/dbos.md DU-21): its programs
run as real processes and print what it says; its install line and DBOS's
application-name rule are as it states."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")
pytest.importorskip("minagent_dbos")

from dbos import DBOS, DBOSClient
from dbos._error import DBOSInitializationError

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "plugins" / "dbos" / "README.md").read_text(encoding="utf-8")


def programs() -> dict[str, str]:
    """The README's ```python blocks, by the file name their first line gives."""
    found = {}
    for block in re.findall(r"```python\n(.*?)```", README, re.S):
        name = re.match(r"# (\w+\.py):", block)
        assert name is not None, f"a README program without its file name: {block[:60]}"
        found[name.group(1)] = block
    return found


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, code in programs().items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    return tmp_path


def env() -> dict[str, str]:
    """The environment of the programs: this checkout's minagent and plugin first."""
    paths = [
        str(ROOT),
        str(ROOT / "plugins" / "dbos"),
        os.environ.get("PYTHONPATH", ""),
    ]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))


def python(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, name],
        cwd=folder,
        env=env(),
        capture_output=True,
        text=True,
        timeout=180,
    )


def start(folder: Path, name: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, name],
        cwd=folder,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        # shop.py says so once DBOS is launched, before it starts the run
        first = process.stdout.readline()
        assert first == "waiting for approval\n", (first, finish(process))
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


def finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        out, err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return out, err


APPROVED = 'approving refund {"order": "A-17", "amount": 30}\n'
ANSWERED = "Result: refunded 30 on A-17\nunanswered requests: 0\n"


def test_the_readme_shows_the_outputs_checked_here() -> None:
    """DU-21: the outputs these tests expect are the ones the README shows."""
    text = " ".join(README.split())
    assert f"`approve.py` prints `{APPROVED.strip()}`" in text
    answered = "` and `".join(ANSWERED.strip().split("\n"))
    assert f"`shop.py` prints `{answered}`" in text


def test_programs_have_file_names_and_the_minimal_one_runs(folder: Path) -> None:
    """DU-21: every program of the README names its file; minimal.py runs and prints
    the answer."""
    assert sorted(programs()) == ["approve.py", "minimal.py", "shop.py"]
    done = python(folder, "minimal.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello!\n"


def test_an_approval_from_another_process(folder: Path) -> None:
    """DU-21: shop.py waits at the approval; approve.py, run in another process while
    it waits, prints the request and approves it; shop.py then prints the answer with
    no request left unanswered, as the README says."""
    shop = start(folder, "shop.py")
    try:
        approved = python(folder, "approve.py")
    finally:
        out, err = finish(shop)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout == APPROVED
    assert shop.returncode == 0, err
    assert out == ANSWERED


def test_a_killed_waiting_run_waits_on_when_started_again(folder: Path) -> None:
    """DU-21: shop.py killed with SIGKILL while it waits for the approval and started
    again resumes the same run, which waits on; approve.py answers it and the restarted
    shop.py prints the answer."""
    shop = start(folder, "shop.py")
    try:
        client = DBOSClient(system_database_url=f"sqlite:///{folder}/shop.sqlite")
        try:
            # the run has published its request: it waits
            assert client.get_event("refund-A-17", "minagent.approvals", 120)
        finally:
            client.destroy()
    finally:
        shop.send_signal(signal.SIGKILL)
        finish(shop)
    assert shop.returncode == -signal.SIGKILL
    again = start(folder, "shop.py")
    try:
        approved = python(folder, "approve.py")
    finally:
        out, err = finish(again)
    assert approved.stdout == APPROVED, approved.stderr
    assert again.returncode == 0, err
    assert out == ANSWERED


def test_install_line_and_application_name_rule(tmp_path: Path) -> None:
    """DU-21: the README gives the install line from a clone; DBOS refuses an
    application name of fewer than 3 characters (the README's "t5") and takes one of
    3."""
    assert "python -m pip install -e . -e plugins/dbos" in README
    assert '"t5"' in README
    url = f"sqlite:///{tmp_path}/names.sqlite"
    try:
        with pytest.raises(DBOSInitializationError, match="3 and 256 characters"):
            DBOS(config={"name": "t5", "system_database_url": url})
        DBOS(config={"name": "t55", "system_database_url": url})
    finally:
        DBOS.destroy(destroy_registry=True)
