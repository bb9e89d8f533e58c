"""Crash and recovery with real processes killed with SIGKILL (spec/dbos.md DU-6, DU-7, DU-8, DU-10,
DU-13).

A process (tests/dbos/_app.py) runs a durable run of three model rounds (round 0 calls ``add`` and
``charge`` concurrently, round 1 calls ``add``, round 2 answers) and kills itself with SIGKILL at
one point; a new process calls ``DBOS.launch()`` and prints the recovered response. Every model
call and tool execution appends a line to a file, so the tests count which calls ran how often.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")
pytest.importorskip("minagent_dbos")

from minagent import AgentSession, Message, SQLiteSessionStore

ROOT = Path(__file__).resolve().parents[2]
MODES = [False, True]
CALLS = ["model 0", "tool add c-add", "tool charge c-charge", "model 1", "tool add c-add2", "model 2"]


def app(directory: Path, *args: str, crash: str | None = None, store: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("CRASH", None)
    env.update(DBOS_URL=f"sqlite:///{directory}/dbos.sqlite", COUNTS=str(directory / "counts"))
    if crash is not None:
        env["CRASH"] = crash
    if store:
        env["STORE"] = str(directory / "sessions.db")
    return subprocess.run(
        [sys.executable, "-m", "tests.dbos._app", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def lines(directory: Path) -> list[list[str]]:
    return [line.split() for line in (directory / "counts").read_text().splitlines()]


def counts(directory: Path) -> Counter[str]:
    """How often each call ran: "model N", "tool NAME CALL_ID"."""
    out: Counter[str] = Counter()
    for words in lines(directory):
        if words[0] == "model":
            out[f"model {words[1]}"] += 1
        elif words[0] == "tool":
            out[f"tool {words[1]} {words[2].rsplit(':', 1)[1]}"] += 1
        elif words[0] == "session":
            out["session set"] += 1
    return out


def printed(process: subprocess.CompletedProcess[str], kind: str) -> list[Any]:
    return [json.loads(line)[kind] for line in process.stdout.splitlines() if line.startswith(f'{{"{kind}"')]


def normalised(response: dict[str, Any]) -> dict[str, Any]:
    """The response with the model's random message ids reduced to their round, and no agent id."""
    text = re.sub(r'"(m\d)-[0-9a-f]{8}"', r'"\1"', json.dumps(response))
    data = json.loads(text)
    data.pop("agent_id", None)
    return data


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, dict[str, Any]]:
    """The same run, uncrashed, in each mode."""
    out = {}
    for stream in MODES:
        directory = tmp_path_factory.mktemp(f"reference-{stream}")
        done = app(directory, "run", "ref", *(["--stream"] if stream else []))
        assert done.returncode == 0, done.stderr
        out[stream] = printed(done, "response")[0]
        assert Counter(counts(directory)) == dict.fromkeys(CALLS, 1)
    return out


@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize(
    ("point", "twice"),
    [("model:1", "model 1"), ("tool:charge", "tool charge c-charge"), ("between:1", None)],
    ids=["at-a-model-call", "inside-a-tool", "between-steps"],
)
def test_killed_run_is_finished_by_a_new_process(
    tmp_path: Path, reference: dict[bool, dict[str, Any]], point: str, twice: str | None, stream: bool
) -> None:
    """DU-6: after SIGKILL at a model call, inside a tool or between steps, DBOS.launch() in a new
    process finishes the run: completed calls are not repeated, the call running at the crash runs
    again (at least once), and the response equals the uncrashed run's. DU-7: the repeated tool
    call had the same idempotency key. DU-8: the ids the model made before the crash and the agent
    id of the first process are kept."""
    mode = ["--stream"] if stream else []
    crashed = app(tmp_path, "run", "w1", *mode, crash=point)
    assert crashed.returncode == -9, crashed.stderr
    before = counts(tmp_path)
    first_agent = lines(tmp_path)[0][1]
    first_ids = {w[1]: w[2] for w in lines(tmp_path) if w[0] == "model"}  # round -> id made by the first process
    recovered = app(tmp_path, "recover", "w1", *mode)
    assert recovered.returncode == 0, recovered.stderr
    response = printed(recovered, "response")[0]
    ran = counts(tmp_path)
    assert ran == {call: 2 if call == twice else 1 for call in CALLS}, (before, ran)
    keys = {w[2] for w in lines(tmp_path) if w[0] == "tool" and w[1] == "charge"}
    assert keys == {"w1:c-charge"}
    assert normalised(response) == normalised(reference[stream])
    assert response["agent_id"] == first_agent
    ids = [m.get("message_id") for m in response["messages"] if m["role"] == "assistant"]
    assert ids[0] == first_ids["0"]  # round 0 completed before the crash: replayed, not made again
    if point == "between:1":
        assert ids[1] != first_ids.get("1")  # round 1 had not started: made by the new process


def test_recovered_stream_replays_recorded_calls(tmp_path: Path) -> None:
    """DU-10: a stream attached in the recovering process gets each model call completed before the
    crash as its recorded response's updates (one per message), then the rest live, and the final
    response equals the uncrashed run's."""
    crashed = app(tmp_path, "run", "w1", "--stream", crash="model:1")
    assert crashed.returncode == -9
    live = printed(crashed, "update")
    assert [c["type"] for c in live[0]["contents"]] == ["function_call"]  # the provider's own chunking
    recovered = app(tmp_path, "recover", "w1", "--stream")
    assert recovered.returncode == 0, recovered.stderr
    updates = printed(recovered, "update")
    first = updates[0]
    assert [c.get("call_id") for c in first["contents"]] == ["c-add", "c-charge"]  # replayed: one per message
    assert first["message_id"] == live[0]["message_id"]
    assert [c["type"] for c in updates[1]["contents"]] == ["function_result", "function_result"]
    texts = "".join(c.get("text", "") for u in updates for c in u["contents"] if c["type"] == "text")
    final = printed(recovered, "response")[0]
    assert texts == final["messages"][-1]["contents"][0]["text"] == "done: 3, charged 5, 6"


def seed(directory: Path) -> None:
    import asyncio

    async def put() -> None:
        session = AgentSession(session_id="s1")
        session.state["in_memory"] = {"messages": [Message("user", ["earlier"]), Message("assistant", ["answer"])]}
        await SQLiteSessionStore(directory / "sessions.db").set("s1", session)

    asyncio.run(put())


def history(directory: Path) -> list[str]:
    import asyncio

    async def get() -> list[str]:
        session = await SQLiteSessionStore(directory / "sessions.db").get("s1")
        assert session is not None
        return [f"{m.role}: {m.text}" for m in session.state["in_memory"]["messages"]]

    return asyncio.run(get())


@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize(
    ("point", "sets"), [("tool:charge", 1), ("session", 2)], ids=["inside-a-tool", "inside-the-store"]
)
def test_session_history_written_once_across_a_crash(tmp_path: Path, point: str, sets: int, stream: bool) -> None:
    """DU-13: a durable run on a session stored with sessions= leaves the run's messages in the
    store exactly once, also when the process dies inside a tool, or inside the store's set after it
    wrote (the session step runs again and replaces the session whole)."""
    seed(tmp_path)
    mode = ["--stream"] if stream else []
    crashed = app(tmp_path, "run", "w1", "--session", *mode, crash=point, store=True)
    assert crashed.returncode == -9
    if point != "session":
        assert history(tmp_path) == ["user: earlier", "assistant: answer"]  # nothing before the run ends
    recovered = app(tmp_path, "recover", "w1", *mode, store=True)
    assert recovered.returncode == 0, recovered.stderr
    assert counts(tmp_path)["session set"] == sets
    kept = history(tmp_path)
    assert kept[:3] == ["user: earlier", "assistant: answer", "user: sum it"]
    assert kept.count("user: sum it") == 1
    assert kept[-1] == "assistant: done: 3, charged 5, 6"
    assert len(kept) == 3 + 5  # the run's five messages: three assistant, two tool
