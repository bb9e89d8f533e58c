"""benchmarks/hosting_load.py, the hosting application's load run (issue 37), at a tiny
scale: it runs on both servers in real processes, its checks pass, it prints its
figures; and its checks catch what they are there to catch. Never a timed assertion:
the figures are only looked for, not judged."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from minagent import AgentSession, Message
from minagent.hosting.conversations import conversation_key
from minagent.hosting.responses import CONVERSATION
from minagent.hosting.server import serve
from minagent.stores import SQLiteSessionStore

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import hosting_app  # noqa: E402
import hosting_load  # noqa: E402

FIGURE = r"\d+(\.\d+)?"
PAIR = rf"{FIGURE} / {FIGURE}"


def test_a_tiny_load_run_on_both_servers_loses_and_duplicates_nothing() -> None:
    """HS-25, HS-140: 5 concurrent streamed conversations x 2 turns on the dev server and
    on uvicorn with 2 workers sharing one SQLite store: every turn is answered with the
    whole conversation before it, and every stored session holds exactly its messages in
    order. The run prints its figures as a table."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable,
        str(BENCH / "hosting_load.py"),
        "--conversations",
        "5",
        "--turns",
        "2",
        "--server",
        "both",
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for server in ("dev", "uvicorn"):
        assert (
            f"{server}: verified 5 of 5 sessions, 20 messages: 0 lost, 0 duplicated, "
            "0 unexpected, 0 out of order; 0 failed conversations: ok"
        ) in done.stdout
    rows = {
        "dev server": rf"\| dev server \| 5 x 2 \| {FIGURE} \| {PAIR} \| {PAIR} "
        rf"\| {PAIR} \| - \| 0 / 0 \|",
        "uvicorn": rf"\| uvicorn, 2 workers \| 5 x 2 \| {FIGURE} \| {PAIR} \| {PAIR} "
        rf"\| {PAIR} \| \d of 5 \| 0 / 0 \|",
    }
    for name, pattern in rows.items():
        assert re.search(pattern, done.stdout), (name, done.stdout)
    assert "Traceback" not in done.stderr


def _messages(conversation: int, turns: int) -> list[Message]:
    messages = []
    for turn in range(1, turns + 1):
        text = hosting_load.turn_text(conversation, turn)
        messages += [
            Message("user", text),
            Message("assistant", hosting_app.answer_for(turn, text)),
        ]
    return messages


async def test_the_store_check_counts_lost_duplicated_and_reordered_messages(
    tmp_path: Path,
) -> None:
    """HS-140: the load run's check of the store finds a missing session, a lost, a
    duplicated, a foreign and a reordered message, each in its own count; a store that
    holds every conversation exactly passes."""
    path = tmp_path / "conversations.db"
    store = SQLiteSessionStore(path)
    run, turns = "check", 2

    async def put(index: int, messages: list[Message]) -> None:
        key = conversation_key(hosting_app.AGENT, CONVERSATION + f"{run}-{index}")
        session = AgentSession(session_id=key)
        session.state["in_memory"] = {"messages": messages}
        await store.set(key, session)

    for index in range(5):
        await put(index, _messages(index, turns))
    passed = await hosting_load.verify(path, run, 5, turns)
    assert passed.ok
    assert (passed.sessions, passed.messages) == (5, 20)

    whole = _messages(1, turns)
    await put(1, whole[:-1])  # the last answer lost
    await put(2, [*_messages(2, turns), _messages(2, turns)[0]])  # a turn twice
    reordered = _messages(3, turns)
    await put(3, [reordered[2], reordered[3], reordered[0], reordered[1]])
    await put(4, [*_messages(4, turns)[:3], Message("assistant", "stranger")])
    await store.delete(conversation_key(hosting_app.AGENT, CONVERSATION + f"{run}-0"))
    found = await hosting_load.verify(path, run, 5, turns)
    assert not found.ok
    assert found.missing_sessions == 1
    # 4 messages of the missing session, 1 of conversation 1, 1 replaced in 4
    assert found.lost == 4 + 1 + 1
    assert found.duplicated == 1
    assert found.unexpected == 1
    assert found.out_of_order == 1
    assert found.sessions == 4


@asynccontextmanager
async def dev_server(tmp_path: Path) -> AsyncIterator[int]:
    app = hosting_app.build(str(tmp_path / "conversations.db"))
    server = await serve(app, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


async def test_a_turn_is_checked_against_the_answer_it_should_get(
    tmp_path: Path,
) -> None:
    """HS-24, HS-25: a streamed turn read by the load client gives the model's answer to
    the conversation so far; an answer other than the expected one is a `LoadError`
    naming the conversation, so a lost turn cannot pass unseen."""
    async with dev_server(tmp_path) as port:
        first = await hosting_load.streamed_turn(
            port, "c", "hello", hosting_app.answer_for(1, "hello")
        )
        assert 0 < first.first_event <= first.first_delta <= first.total
        # the second turn is the conversation's second: an answer as if it were the
        # first (the history lost) fails the check
        with pytest.raises(hosting_load.LoadError, match="c: expected 'echo 1: again'"):
            await hosting_load.streamed_turn(
                port, "c", "again", hosting_app.answer_for(1, "again")
            )
        # the conversation went on: the third turn saw both earlier ones, answered by
        # this process (the worker named in each answer's header)
        third = await hosting_load.streamed_turn(
            port, "c", "more", hosting_app.answer_for(3, "more")
        )
        assert third.worker == str(os.getpid())
