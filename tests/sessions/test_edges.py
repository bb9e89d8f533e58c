"""Edges of sessions, providers and the SQLite store (spec/sessions.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentSession,
    Context,
    ContextProvider,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    SerializationError,
    SessionContext,
    SQLiteHistoryProvider,
    SQLiteSessionStore,
    chat_middleware,
)
from minagent.testing import ScriptedChatClient


def test_deep_state_is_a_serialization_error_not_a_recursion_error() -> None:
    """SE-2: state or data nested deeper than the interpreter follows is a SerializationError."""
    nested: Any = {}
    for _ in range(5000):
        nested = {"x": nested}
    with pytest.raises(SerializationError, match="nested too deeply"):
        AgentSession(state={"deep": nested}).to_dict()
    with pytest.raises(SerializationError, match="nested too deeply"):
        AgentSession.from_dict({"type": "session", "version": 1, "session_id": "s", "state": {"deep": nested}})


def test_session_repr_and_equality() -> None:
    """SE-1, SE-2: a session shows its id; it equals only sessions of its own data."""
    session = AgentSession(session_id="s1")
    assert repr(session) == "<AgentSession s1>"
    assert session == AgentSession(session_id="s1")
    assert session != AgentSession(session_id="s2")
    assert session != "s1"
    with pytest.raises(ValueError, match="session_id"):
        AgentSession(session_id=3)  # type: ignore[arg-type]


def test_session_context_collects_by_source() -> None:
    """SE-3: middleware given at construction is kept by source; get_messages filters by source and
    adds input and response when asked; extend_messages copies."""

    @chat_middleware
    async def spy(context: Any, call_next: Any) -> None:
        await call_next()

    original = Message("user", ["fact"])
    context = SessionContext(input_messages=[Message("user", ["q"])], middleware={"m": [spy]})
    assert context.get_middleware() == [spy]
    context.extend_messages("a", [original])
    context.extend_messages("b", [Message("user", ["other"])])
    assert context.context_messages["a"][0] is not original
    assert [m.text for m in context.get_messages(sources={"a"}, include_input=True)] == ["fact", "q"]
    assert [m.text for m in context.get_messages(exclude_sources={"a"})] == ["other"]
    assert [m.text for m in context.get_messages(include_response=True)] == ["fact", "other"]


def test_provider_ids_must_be_text() -> None:
    """SE-4: an empty source id is a ValueError; without one a provider is known by its class name."""
    with pytest.raises(ValueError, match="source_id"):
        ContextProvider("")
    assert ContextProvider().source_id == "ContextProvider"
    assert InMemoryHistoryProvider().source_id == "in_memory"


async def test_a_history_provider_must_implement_both_methods() -> None:
    """SE-6: a HistoryProvider subclass that implements neither method says so when used."""

    class Half(HistoryProvider):
        pass

    half = Half("half")
    with pytest.raises(NotImplementedError, match="Half must implement get_messages"):
        await half.get_messages("s")
    with pytest.raises(NotImplementedError, match="Half must implement save_messages"):
        await half.save_messages("s", [])
    assert await InMemoryHistoryProvider().get_messages("s") == []
    await InMemoryHistoryProvider().save_messages("s", [Message("user", ["x"])])  # no state: nothing to keep


async def test_nothing_to_store_calls_no_save() -> None:
    """SE-6: with store_inputs and store_outputs off there is nothing to save: save_messages is not called."""

    class Counting(InMemoryHistoryProvider):
        saves = 0

        async def save_messages(self, *args: Any, **kwargs: Any) -> None:
            type(self).saves += 1

    agent = Agent(ScriptedChatClient(["a"]), context_providers=[Counting(store_inputs=False, store_outputs=False)])
    await agent.run("q", session=agent.create_session())
    assert Counting.saves == 0


async def test_a_thread_era_provider_returning_none_adds_nothing() -> None:
    """SE-10: invoking() that returns None (no Context) adds nothing to the run."""

    class Quiet(ContextProvider):
        async def invoking(self, messages: Any, **kwargs: Any) -> Context:
            return None  # type: ignore[return-value]

    client = ScriptedChatClient(["a"])
    await Agent(client, context_providers=[Quiet()]).run("q")
    assert [m.text for m in client.requests[0].messages] == ["q"]
    assert "instructions" not in client.requests[0].options


async def test_sqlite_edges(tmp_path: Path) -> None:
    """SE-13, SE-17: an empty path is a ValueError; saving nothing writes nothing; clear forgets a
    session's messages; the provider and the store report their file."""
    with pytest.raises(ValueError, match="path"):
        SQLiteHistoryProvider("h", path="")
    path = tmp_path / "e.db"
    provider = SQLiteHistoryProvider("h", path=path)
    assert provider.path == str(path)
    assert SQLiteSessionStore(path).path == str(path)
    await provider.save_messages("s", [])
    assert not path.exists()
    await provider.save_messages("s", [Message("user", ["x"])])
    await provider.clear("s")
    assert await provider.get_messages("s") == []
    with pytest.raises(ValueError, match="session_id"):
        await provider.get_messages(None)
