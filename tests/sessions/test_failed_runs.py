"""What a failed run leaves in the history stores (spec/sessions.md SE-20): nothing is
saved until every provider's after_run succeeded, a failed save takes back the saves
before it, and each store takes back exactly the run's messages."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentSession,
    ContextProvider,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
)
from minagent.stores import SQLiteHistoryProvider
from minagent.testing import ScriptedChatClient
from tests._support.modes import run

from ._util import texts


class ListHistory(HistoryProvider):
    """A history provider on the base class: it saves to a list and cannot take anything
    back."""

    def __init__(self, source_id: str) -> None:
        super().__init__(source_id, load_messages=False)
        self.saved: list[Message] = []

    async def get_messages(
        self, session_id: str | None, **kwargs: Any
    ) -> list[Message]:
        return list(self.saved)

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], **kwargs: Any
    ) -> None:
        self.saved.extend(messages)


class BrokenHistory(ListHistory):
    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], **kwargs: Any
    ) -> None:
        raise OSError("disk full")


async def test_a_failed_save_takes_back_the_in_memory_one_and_logs_what_it_cannot(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """SE-20: saves run in after_run order (reverse provider order); when one fails, the
    in-memory save made before it is taken back, a base-class provider's
    NotImplementedError is logged at ERROR, and the run fails with the save's error."""
    from minagent import Agent

    memory = InMemoryHistoryProvider("memory", load_messages=False)
    kept = ListHistory("kept")
    agent = Agent(
        ScriptedChatClient(["answer"]),
        context_providers=[BrokenHistory("broken"), kept, memory],
    )
    session = AgentSession()
    with (
        caplog.at_level(logging.ERROR, logger="minagent"),
        pytest.raises(OSError, match="disk full"),
    ):
        await run(agent, "hello", stream=stream, session=session)
    assert session.state.get("memory", {}).get("messages", []) == []
    # it could not take them back ...
    assert [m.text for m in kept.saved] == ["hello", "answer"]
    # ... and says so
    assert any(
        "kept the failed run's messages" in r.getMessage() for r in caplog.records
    )


async def test_base_history_provider_cannot_discard() -> None:
    """SE-20: the base class's discard_messages raises NotImplementedError naming the
    class."""
    with pytest.raises(NotImplementedError, match="ListHistory"):
        await ListHistory("x").discard_messages("s", [Message("user", "a")])


async def test_in_memory_discard_removes_exactly_the_last_messages() -> None:
    """SE-20: the in-memory provider takes back exactly the given (last) messages;
    without state, nothing."""
    provider = InMemoryHistoryProvider("memory")
    state: dict[str, Any] = {}
    first, second = (
        [Message("user", "a")],
        [Message("user", "b"), Message("assistant", "c")],
    )
    await provider.save_messages("s", first, state=state)
    await provider.save_messages("s", second, state=state)
    await provider.discard_messages("s", second, state=state)
    assert [m.text for m in state["messages"]] == ["a"]
    await provider.discard_messages("s", [], state=state)
    await provider.discard_messages("s", first, state=None)
    assert [m.text for m in state["messages"]] == ["a"]


class FailsOnce(ContextProvider):
    """A provider whose after_run fails the first time (a memory service that is
    down)."""

    def __init__(self) -> None:
        super().__init__("flaky")
        self.failures = 1

    async def after_run(
        self, *, agent: Any, session: AgentSession, context: Any, state: dict[str, Any]
    ) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("memory service down")


def rows(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        data = [
            json.loads(r[0])
            for r in conn.execute("SELECT data FROM messages ORDER BY session_id, seq")
        ]
    finally:
        conn.close()
    return [(m["role"], m["contents"][0].get("text", "")) for m in data]


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize("order", ["flaky-first", "flaky-last"])
async def test_a_failed_after_run_stores_nothing_and_a_retry_stores_the_turn_once(
    tmp_path: Path, stream: bool, order: str
) -> None:
    """SE-20, SE-5: a provider's after_run fails after (or before) the SQLite and
    in-memory history providers' turn: the run fails, nothing is stored in either; the
    retry stores the turn once."""
    path = tmp_path / "history.db"
    flaky = FailsOnce()
    histories = [
        SQLiteHistoryProvider(path=path),
        InMemoryHistoryProvider("memory", load_messages=False),
    ]
    providers = [flaky, *histories] if order == "flaky-first" else [*histories, flaky]
    agent = Agent(ScriptedChatClient(["answer", "answer"]), context_providers=providers)
    session = AgentSession()
    with pytest.raises(RuntimeError, match="memory service down"):
        await run(agent, "hello", stream=stream, session=session)
    assert rows(path) == []
    assert "memory" not in session.state
    await run(agent, "hello", stream=stream, session=session)
    assert rows(path) == [("user", "hello"), ("assistant", "answer")]
    assert texts(session.state["memory"]["messages"]) == [
        ("user", "hello"),
        ("assistant", "answer"),
    ]


class BrokenStore(InMemoryHistoryProvider):
    """A history provider whose save fails (its store is down)."""

    async def save_messages(
        self, session_id: str | None, messages: Any, *, state: Any = None, **kw: Any
    ) -> None:
        raise ConnectionError("store down")


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_failed_save_takes_back_the_saves_before_it(
    tmp_path: Path, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """SE-20: when one history provider's save fails, the saves of the same run before
    it (SQLite, in memory) are taken back: the run fails and no store keeps its
    messages; a provider that cannot take back is logged at ERROR."""
    path = tmp_path / "history.db"
    providers = [
        BrokenStore("broken", load_messages=False),
        SQLiteHistoryProvider(path=path),
    ]
    agent = Agent(ScriptedChatClient(["first", "second"]), context_providers=providers)
    session = AgentSession()
    with pytest.raises(ConnectionError, match="store down"):
        await run(agent, "hello", stream=stream, session=session)
    assert rows(path) == []

    class Stubborn(SQLiteHistoryProvider):
        async def discard_messages(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("cannot take back")

    agent = Agent(
        ScriptedChatClient(["second"]),
        context_providers=[providers[0], Stubborn(path=path)],
    )
    with (
        caplog.at_level(logging.ERROR, logger="minagent"),
        pytest.raises(ConnectionError),
    ):
        await run(agent, "again", stream=stream, session=session)
    assert rows(path) == [("user", "again"), ("assistant", "second")]
    assert any(
        "kept the failed run's messages" in r.getMessage() for r in caplog.records
    )


@pytest.mark.usefixtures("no_descriptor_left")
async def test_discard_takes_back_exactly_the_runs_rows(tmp_path: Path) -> None:
    """SE-20: discard_messages removes the newest rows equal to the run's messages, even
    when another writer appended after them, and nothing else."""
    provider = SQLiteHistoryProvider(path=tmp_path / "h.db")
    ours = [Message("user", ["q"]), Message("assistant", ["a"])]
    # an earlier equal turn
    await provider.save_messages(
        "s", [Message("user", ["q"]), Message("assistant", ["a"])]
    )
    await provider.save_messages("s", ours)
    await provider.save_messages("s", [Message("user", ["other process"])])
    await provider.discard_messages("s", ours)
    assert texts(await provider.get_messages("s")) == [
        ("user", "q"),
        ("assistant", "a"),
        ("user", "other process"),
    ]
