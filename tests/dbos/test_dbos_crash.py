"""Crash and recovery with real processes killed with SIGKILL (spec/dbos.md DU-6, DU-7,
DU-8, DU-10, DU-13, DU-18, DU-19, DU-20; spec/sessions.md SE-40; spec/redis.md RD-9).

A process (tests/dbos/_app.py) runs a durable run of three model rounds (round 0 calls
``add`` and ``charge`` concurrently, round 1 calls ``add``, round 2 answers) and kills
itself with SIGKILL at one point; a new process calls ``DBOS.launch()`` and prints the
recovered response. Every model call and tool execution appends a line to a file, so the
tests count which calls ran how often.
"""

from __future__ import annotations

import contextlib
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
CALLS = [
    "model 0",
    "tool add c-add",
    "tool charge c-charge",
    "model 1",
    "tool add c-add2",
    "model 2",
]


def app(
    directory: Path,
    *args: str,
    crash: str | None = None,
    store: bool = False,
    history: str | None = None,
    change: str | None = None,
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("CRASH", None)
    env.pop("CHANGE", None)
    if change is not None:
        env["CHANGE"] = change
    if history is not None:
        env["HISTORY"] = history
    env.update(
        DBOS_URL=f"sqlite:///{directory}/dbos.sqlite", COUNTS=str(directory / "counts")
    )
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
        elif words[0] == "history":  # "history save APPENDED RUN_KEY"
            out["history save"] += 1
            out["history write"] += int(words[2]) > 0
    return out


def printed(process: subprocess.CompletedProcess[str], kind: str) -> list[Any]:
    return [
        json.loads(line)[kind]
        for line in process.stdout.splitlines()
        if line.startswith(f'{{"{kind}"')
    ]


def normalised(response: dict[str, Any]) -> dict[str, Any]:
    """The response with the model's random message ids reduced to their round, and no
    agent id."""
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


@pytest.mark.parametrize(
    ("point", "twice"),
    [
        ("model:1", "model 1"),
        ("tool:charge", "tool charge c-charge"),
        ("between:1", None),
    ],
    ids=["at-a-model-call", "inside-a-tool", "between-steps"],
)
def test_killed_run_is_finished_by_a_new_process(
    tmp_path: Path,
    reference: dict[bool, dict[str, Any]],
    point: str,
    twice: str | None,
    stream: bool,
) -> None:
    """DU-6: after SIGKILL at a model call, inside a tool or between steps,
    DBOS.launch() in a new process finishes the run: completed calls are not repeated,
    the call running at the crash runs again (at least once), and the response equals
    the uncrashed run's. DU-7: the repeated tool call had the same idempotency key.
    DU-8: the ids the model made before the crash and the agent id of the first process
    are kept."""
    mode = ["--stream"] if stream else []
    crashed = app(tmp_path, "run", "w1", *mode, crash=point)
    assert crashed.returncode == -9, crashed.stderr
    before = counts(tmp_path)
    first_agent = lines(tmp_path)[0][1]
    # round -> id made by the first process
    first_ids = {w[1]: w[2] for w in lines(tmp_path) if w[0] == "model"}
    recovered = app(tmp_path, "recover", "w1", *mode)
    assert recovered.returncode == 0, recovered.stderr
    response = printed(recovered, "response")[0]
    ran = counts(tmp_path)
    assert ran == {call: 2 if call == twice else 1 for call in CALLS}, (before, ran)
    keys = {w[2] for w in lines(tmp_path) if w[0] == "tool" and w[1] == "charge"}
    assert keys == {"w1:c-charge"}
    assert normalised(response) == normalised(reference[stream])
    assert response["agent_id"] == first_agent
    ids = [
        m.get("message_id") for m in response["messages"] if m["role"] == "assistant"
    ]
    # round 0 completed before the crash: replayed, not made again
    assert ids[0] == first_ids["0"]
    if point == "between:1":
        # round 1 had not started: made by the new process
        assert ids[1] != first_ids.get("1")


@pytest.mark.parametrize("change", ["middleware", "instructions"])
def test_changed_agent_leaves_a_killed_run_to_its_own_definition(
    tmp_path: Path,
    reference: dict[bool, dict[str, Any]],
    change: str,
    stream: bool,
) -> None:
    """DU-20: after SIGKILL inside a tool, a process whose agent has one more middleware
    (or other instructions) has another application version: it takes nothing over,
    runs no model or tool call, and the run stays pending under the version that
    started it; then a process with the same agent as the first recovers it (DU-6) and
    its response equals the uncrashed run's."""
    mode = ["--stream"] if stream else []
    crashed = app(tmp_path, "run", "w1", *mode, crash="tool:charge")
    assert crashed.returncode == -9, crashed.stderr
    before = counts(tmp_path)
    probe = app(tmp_path, "probe", "w1", change=change)
    assert probe.returncode == 0, probe.stderr
    seen = printed(probe, "probe")[0]
    assert seen["taken"] == []
    assert seen["status"] == "PENDING"
    assert seen["run_version"] != seen["version"]
    assert counts(tmp_path) == before
    # the same definition as the crashed process: DBOS.launch() takes the run over
    recovered = app(tmp_path, "recover", "w1", *mode)
    assert recovered.returncode == 0, recovered.stderr
    response = printed(recovered, "response")[0]
    assert normalised(response) == normalised(reference[stream])
    twice = "tool charge c-charge"
    assert counts(tmp_path) == {call: 2 if call == twice else 1 for call in CALLS}


def test_recovered_stream_replays_recorded_calls(tmp_path: Path) -> None:
    """DU-10: a stream attached in the recovering process gets each model call completed
    before the crash as its recorded response's updates (one per message), then the rest
    live, and the final response equals the uncrashed run's."""
    crashed = app(tmp_path, "run", "w1", "--stream", crash="model:1")
    assert crashed.returncode == -9
    live = printed(crashed, "update")
    # the provider's own chunking
    assert [c["type"] for c in live[0]["contents"]] == ["function_call"]
    recovered = app(tmp_path, "recover", "w1", "--stream")
    assert recovered.returncode == 0, recovered.stderr
    updates = printed(recovered, "update")
    first = updates[0]
    # replayed: one per message
    assert [c.get("call_id") for c in first["contents"]] == ["c-add", "c-charge"]
    assert first["message_id"] == live[0]["message_id"]
    assert [c["type"] for c in updates[1]["contents"]] == [
        "function_result",
        "function_result",
    ]
    texts = "".join(
        c.get("text", "") for u in updates for c in u["contents"] if c["type"] == "text"
    )
    final = printed(recovered, "response")[0]
    assert (
        texts == final["messages"][-1]["contents"][0]["text"] == "done: 3, charged 5, 6"
    )


def seed(directory: Path) -> None:
    import asyncio

    async def put() -> None:
        session = AgentSession(session_id="s1")
        session.state["in_memory"] = {
            "messages": [Message("user", ["earlier"]), Message("assistant", ["answer"])]
        }
        await SQLiteSessionStore(directory / "sessions.db").set("s1", session)

    asyncio.run(put())


def history(directory: Path) -> list[str]:
    import asyncio

    async def get() -> list[str]:
        session = await SQLiteSessionStore(directory / "sessions.db").get("s1")
        assert session is not None
        return [f"{m.role}: {m.text}" for m in session.state["in_memory"]["messages"]]

    return asyncio.run(get())


@pytest.mark.parametrize(
    ("point", "sets"),
    [("tool:charge", 1), ("session", 2)],
    ids=["inside-a-tool", "inside-the-store"],
)
def test_session_history_written_once_across_a_crash(
    tmp_path: Path, point: str, sets: int, stream: bool
) -> None:
    """DU-13: a durable run on a session stored with sessions= leaves the run's messages
    in the store exactly once, also when the process dies inside a tool, or inside the
    store's set after it wrote (the session step runs again and replaces the session
    whole)."""
    seed(tmp_path)
    mode = ["--stream"] if stream else []
    crashed = app(tmp_path, "run", "w1", "--session", *mode, crash=point, store=True)
    assert crashed.returncode == -9
    if point != "session":
        # nothing before the run ends
        assert history(tmp_path) == ["user: earlier", "assistant: answer"]
    recovered = app(tmp_path, "recover", "w1", *mode, store=True)
    assert recovered.returncode == 0, recovered.stderr
    assert counts(tmp_path)["session set"] == sets
    kept = history(tmp_path)
    assert kept[:3] == ["user: earlier", "assistant: answer", "user: sum it"]
    assert kept.count("user: sum it") == 1
    assert kept[-1] == "assistant: done: 3, charged 5, 6"
    assert len(kept) == 3 + 5  # the run's five messages: three assistant, two tool


@pytest.mark.parametrize(
    ("point", "sets"),
    [("tool:charge", 1), ("session", 2)],
    ids=["inside-a-tool", "inside-the-store"],
)
def test_in_memory_history_is_restored_not_repeated(
    tmp_path: Path, point: str, sets: int, stream: bool
) -> None:
    """DU-19, DU-13: the in-memory history of a recovered run starts again from the
    workflow's input: the caller's session in the recovering process receives the run's
    messages once, after the earlier ones, with no run key anywhere in its state
    (DU-18)."""
    seed(tmp_path)
    mode = ["--stream"] if stream else []
    crashed = app(tmp_path, "run", "w1", "--session", *mode, crash=point, store=True)
    assert crashed.returncode == -9
    recovered = app(tmp_path, "recover", "w1", "--session", *mode, store=True)
    assert recovered.returncode == 0, recovered.stderr
    assert counts(tmp_path)["session set"] == sets
    state = printed(recovered, "session")[0]["state"]
    assert list(state) == ["in_memory"]
    assert list(state["in_memory"]) == ["messages"]
    kept = [
        (m["role"], m["contents"][0].get("text"))
        for m in state["in_memory"]["messages"]
    ]
    assert kept[:3] == [
        ("user", "earlier"),
        ("assistant", "answer"),
        ("user", "sum it"),
    ]
    assert len(kept) == 3 + 5
    assert "run_key" not in json.dumps(state)


class Redis:
    """A real redis-server for one test (RD-6), as the Redis tests start it."""

    def __init__(self, directory: Path) -> None:
        from tests._support.redis_server import SERVER, RedisServer

        if SERVER is None:
            pytest.skip(
                "needs redis-server on PATH (Debian: apt-get install -y redis-server)"
            )
        pytest.importorskip("minagent_redis")
        self.server = RedisServer(directory)

    def __enter__(self) -> str:
        self.server.start()
        return self.server.url

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


def stored(kind: str, where: str) -> list[tuple[str, str | None]]:
    """The session s1's messages in the history provider's store, as the test's own
    process reads them."""
    import asyncio

    from minagent import FileHistoryProvider, SQLiteHistoryProvider

    async def read() -> list[Message]:
        if kind == "sqlite":
            return await SQLiteHistoryProvider("history", path=where).get_messages("s1")
        if kind == "files":
            return await FileHistoryProvider(where, source_id="history").get_messages(
                "s1"
            )
        from minagent_redis import RedisHistoryProvider

        provider = RedisHistoryProvider(
            "history", url=where, key_prefix="minagent-tests:"
        )
        try:
            return await provider.get_messages("s1")
        finally:
            await provider.aclose()

    return [(m.role, m.text or None) for m in asyncio.run(read())]


RUN_MESSAGES = 6  # the input and the run's five messages: three assistant, two tool


@pytest.mark.parametrize("kind", ["sqlite", "files", "redis"])
def test_history_provider_writes_once_across_a_crash(
    tmp_path: Path, reference: dict[bool, dict[str, Any]], kind: str, stream: bool
) -> None:
    """DU-13, DU-18, SE-40, SE-67, RD-9: a history provider with a store of its own
    (SQLite, plain files, Redis) that wrote the run's messages when the process was
    killed (after its save, before the workflow finished) holds them exactly once after
    the recovery: the recovered workflow saves again with the same run key ("w1:0") and
    appends nothing. No model call or tool runs twice, the response equals the uncrashed
    run's, and the caller's session holds no run key."""
    mode = ["--stream"] if stream else []
    with contextlib.ExitStack() as stack:
        if kind == "redis":
            where = stack.enter_context(Redis(tmp_path))
        else:
            where = str(tmp_path / ("history.db" if kind == "sqlite" else "history"))
        history = f"{kind}:{where}"
        crashed = app(
            tmp_path, "run", "w1", "--session", *mode, crash="history", history=history
        )
        assert crashed.returncode == -9, crashed.stderr
        assert len(stored(kind, where)) == RUN_MESSAGES  # written before the crash
        recovered = app(tmp_path, "recover", "w1", "--session", *mode, history=history)
        assert recovered.returncode == 0, recovered.stderr
        kept = stored(kind, where)
    ran = counts(tmp_path)
    assert ran == {**dict.fromkeys(CALLS, 1), "history save": 2, "history write": 1}
    saves = [w for w in lines(tmp_path) if w[0] == "history"]
    assert [(w[2], w[3]) for w in saves] == [(str(RUN_MESSAGES), "w1:0"), ("0", "w1:0")]
    assert len(kept) == RUN_MESSAGES
    assert kept[0] == ("user", "sum it")
    assert kept[-1] == ("assistant", "done: 3, charged 5, 6")
    assert [role for role, _ in kept].count("tool") == 2
    response = printed(recovered, "response")[0]
    assert normalised(response) == normalised(reference[stream])
    assert printed(recovered, "session")[0]["state"] == {}
