"""Approvals and cancellation across processes (spec/dbos.md DU-11, DU-12).

One process runs a durable run that pauses for the approval of a ``refund`` call;
another process, which has only a ``DBOSClient`` (DBOS not launched), answers or cancels
it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

dbos = pytest.importorskip("dbos")
pytest.importorskip("minagent_dbos")

from minagent_dbos import pending_approvals  # noqa: E402

from .test_dbos_crash import ROOT, counts, printed  # noqa: E402


def environment(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CRASH", None)
    env.update(
        DBOS_URL=f"sqlite:///{directory}/dbos.sqlite", COUNTS=str(directory / "counts")
    )
    return env


def start(directory: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.dbos._app", *args],
        cwd=ROOT,
        env=environment(directory),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def other_process(directory: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.dbos._app", *args],
        cwd=ROOT,
        env=environment(directory),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def waiting_for(directory: Path, workflow_id: str) -> list[str]:
    """The call ids the run waits for, read by this process through a DBOSClient."""

    async def read() -> list[str]:
        client = dbos.DBOSClient(
            system_database_url=f"sqlite:///{directory}/dbos.sqlite"
        )
        try:
            return [
                c.id or ""
                for c in await pending_approvals(
                    workflow_id, client=client, wait_seconds=60
                )
            ]
        finally:
            client.destroy()

    return asyncio.run(read())


def test_approval_from_another_process(tmp_path: Path, stream: bool) -> None:
    """DU-11: the run waits; an approval sent from a second process resumes it; the tool
    runs once."""
    runner = start(
        tmp_path, "run", "w1", "--approval", *(["--stream"] if stream else [])
    )
    try:
        assert waiting_for(tmp_path, "w1") == ["c-refund"]
        assert counts(tmp_path)["tool refund c-refund"] == 0
        other_process(tmp_path, "approve", "w1", "c-refund", "yes")
        out, err = runner.communicate(timeout=120)
    finally:
        runner.kill()
    assert runner.returncode == 0, err
    response = printed(subprocess.CompletedProcess([], 0, out, err), "response")[0]
    assert (
        response["messages"][-1]["contents"][0]["text"]
        == "done: 3, charged 5, 6, refunded 5"
    )
    assert counts(tmp_path)["tool refund c-refund"] == 1


def test_waiting_run_survives_a_crash(tmp_path: Path) -> None:
    """DU-11, DU-6: a run waiting for approval is killed with SIGKILL; the approval is
    sent while no process runs it; DBOS.launch() in a new process resumes the run with
    that answer."""
    runner = start(tmp_path, "run", "w1", "--approval")
    try:
        assert waiting_for(tmp_path, "w1") == ["c-refund"]
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.communicate(timeout=60)
    assert runner.returncode == -9
    other_process(tmp_path, "approve", "w1", "c-refund", "no")
    recovered = subprocess.run(
        [sys.executable, "-m", "tests.dbos._app", "recover", "w1"],
        cwd=ROOT,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert recovered.returncode == 0, recovered.stderr
    response = printed(recovered, "response")[0]
    results = [
        c
        for m in response["messages"]
        for c in m["contents"]
        if c.get("call_id") == "c-refund"
    ]
    assert results[-1]["result"] == "Error: Tool call invocation was rejected by user."
    ran = counts(tmp_path)
    assert ran["tool refund c-refund"] == 0
    # nothing made twice: the wait was durable
    assert [ran[f"model {n}"] for n in range(4)] == [1, 1, 1, 1]


def test_cancel_from_another_process(tmp_path: Path) -> None:
    """DU-12: a second process cancels the waiting run: the run stops at once and
    nothing more runs."""
    runner = start(tmp_path, "run", "w1", "--approval")
    try:
        assert waiting_for(tmp_path, "w1") == ["c-refund"]
        other_process(tmp_path, "cancel", "w1")
        _out, err = runner.communicate(timeout=60)
    finally:
        runner.kill()
    assert runner.returncode != 0
    assert "cancelled" in err
    ran = counts(tmp_path)
    assert ran["tool refund c-refund"] == 0
    assert ran["model 3"] == 0


def test_an_answer_for_other_calls_does_not_answer_the_pause(
    tmp_path: Path, stream: bool
) -> None:
    """DU-11: an approval message naming calls the pause did not request (a stale
    or repeated answer of another pause) is ignored; the run goes on waiting and
    takes the answer that names its request, sent from another process."""
    runner = start(
        tmp_path, "run", "w5", "--approval", *(["--stream"] if stream else [])
    )
    try:
        assert waiting_for(tmp_path, "w5") == ["c-refund"]
        other_process(tmp_path, "approve", "w5", "c-earlier-pause", "no")
        assert counts(tmp_path)["tool refund c-refund"] == 0
        other_process(tmp_path, "approve", "w5", "c-refund", "yes")
        out, err = runner.communicate(timeout=120)
    finally:
        runner.kill()
    assert runner.returncode == 0, err
    response = printed(subprocess.CompletedProcess([], 0, out, err), "response")[0]
    assert (
        response["messages"][-1]["contents"][0]["text"]
        == "done: 3, charged 5, 6, refunded 5"
    )
    assert counts(tmp_path)["tool refund c-refund"] == 1


def test_answered_requests_are_not_pending(tmp_path: Path, stream: bool) -> None:
    """DU-11 (issue 38): after an approval from another process the final durable
    response reports no pending request, so a ``while response.user_input_requests``
    loop ends."""
    runner = start(
        tmp_path, "run", "w6", "--approval", *(["--stream"] if stream else [])
    )
    try:
        assert waiting_for(tmp_path, "w6") == ["c-refund"]
        other_process(tmp_path, "approve", "w6", "c-refund", "yes")
        out, err = runner.communicate(timeout=120)
    finally:
        runner.kill()
    assert runner.returncode == 0, err
    response = printed(subprocess.CompletedProcess([], 0, out, err), "response")[0]
    flagged = [
        c
        for m in response["messages"]
        for c in m["contents"]
        if c.get("user_input_request")
    ]
    assert flagged == []
    requests = [
        c
        for m in response["messages"]
        for c in m["contents"]
        if c["type"] == "function_approval_request"
    ]
    assert len(requests) == 1
