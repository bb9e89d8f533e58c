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
    """SE-2: state or data nested deeper than the interpreter follows is a
    SerializationError."""
    nested: Any = {}
    for _ in range(5000):
        nested = {"x": nested}
    with pytest.raises(SerializationError, match="nested too deeply"):
        AgentSession(state={"deep": nested}).to_dict()
    with pytest.raises(SerializationError, match="nested too deeply"):
        AgentSession.from_dict(
            {
                "type": "session",
                "version": 1,
                "session_id": "s",
                "state": {"deep": nested},
            }
        )


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
    """SE-3: middleware given at construction is kept by source; get_messages filters by
    source and adds input and response when asked; extend_messages copies."""

    @chat_middleware
    async def spy(context: Any, call_next: Any) -> None:
        await call_next()

    original = Message("user", ["fact"])
    context = SessionContext(
        input_messages=[Message("user", ["q"])], middleware={"m": [spy]}
    )
    assert context.get_middleware() == [spy]
    context.extend_messages("a", [original])
    context.extend_messages("b", [Message("user", ["other"])])
    assert context.context_messages["a"][0] is not original
    assert [
        m.text for m in context.get_messages(sources={"a"}, include_input=True)
    ] == ["fact", "q"]
    assert [m.text for m in context.get_messages(exclude_sources={"a"})] == ["other"]
    assert [m.text for m in context.get_messages(include_response=True)] == [
        "fact",
        "other",
    ]


def test_provider_ids_must_be_text() -> None:
    """SE-4: an empty source id is a ValueError; without one a provider is known by its
    class name."""
    with pytest.raises(ValueError, match="source_id"):
        ContextProvider("")
    assert ContextProvider().source_id == "ContextProvider"
    assert InMemoryHistoryProvider().source_id == "in_memory"


async def test_a_history_provider_must_implement_both_methods() -> None:
    """SE-6: a HistoryProvider subclass that implements neither method says so when
    used."""

    class Half(HistoryProvider):
        pass

    half = Half("half")
    with pytest.raises(NotImplementedError, match="Half must implement get_messages"):
        await half.get_messages("s")
    with pytest.raises(NotImplementedError, match="Half must implement save_messages"):
        await half.save_messages("s", [])
    assert await InMemoryHistoryProvider().get_messages("s") == []
    # no state: nothing to keep
    await InMemoryHistoryProvider().save_messages("s", [Message("user", ["x"])])


async def test_nothing_to_store_calls_no_save() -> None:
    """SE-6: with store_inputs and store_outputs off there is nothing to save:
    save_messages is not called."""

    class Counting(InMemoryHistoryProvider):
        saves = 0

        async def save_messages(self, *args: Any, **kwargs: Any) -> None:
            type(self).saves += 1

    agent = Agent(
        ScriptedChatClient(["a"]),
        context_providers=[Counting(store_inputs=False, store_outputs=False)],
    )
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
    """SE-13, SE-17: an empty path is a ValueError; saving nothing writes nothing; clear
    forgets a session's messages; the provider and the store report their file."""
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


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def to_dict(self) -> dict[str, Any]:
        return {"x": self.x, "y": self.y}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Point:
        return cls(data["x"], data["y"])


class Plain:
    def __init__(self, name: str) -> None:
        self.name = name


def test_registered_state_types_round_trip() -> None:
    """SE-2: register_state_type lets a class with to_dict/from_dict, a pydantic model,
    or a class with explicit callbacks live in session state; conflicts and unusable
    classes are ValueErrors; an unregistered class names register_state_type."""
    from pydantic import BaseModel

    from minagent import register_state_type

    class UserInfo(BaseModel):
        name: str | None = None
        age: int | None = None

    register_state_type(Point, type_id="test_point")
    register_state_type(Point, type_id="test_point")  # the same again: a no-op
    register_state_type(UserInfo, type_id="test_user_info")
    register_state_type(
        Plain,
        type_id="test_plain",
        encoder=lambda p: {"name": p.name},
        decoder=lambda d: Plain(d["name"]),
    )
    session = AgentSession(
        state={
            "p": {
                "where": Point(1, 2),
                "who": UserInfo(name="Ann"),
                "plain": [Plain("z")],
            }
        }
    )
    data = session.to_dict()
    assert data["state"]["p"]["where"] == {"x": 1, "y": 2, "type": "test_point"}
    assert data["state"]["p"]["who"]["type"] == "test_user_info"
    restored = AgentSession.from_dict(data)
    where, who, plain = (restored.state["p"][k] for k in ("where", "who", "plain"))
    assert (type(where), where.x, where.y) == (Point, 1, 2)
    assert who == UserInfo(name="Ann")
    assert plain[0].name == "z"
    with pytest.raises(ValueError, match="already registered"):
        register_state_type(Point, type_id="other_point")
    with pytest.raises(ValueError, match="already registered"):
        register_state_type(UserInfo.__class__, type_id="test_point")
    with pytest.raises(ValueError, match="encoder and decoder together"):
        register_state_type(Plain, type_id="x2", encoder=lambda p: {})

    class Opaque:
        pass

    with pytest.raises(ValueError, match="needs to_dict"):
        register_state_type(Opaque)
    with pytest.raises(SerializationError, match=r"register_state_type\(Opaque\)"):
        AgentSession(state={"o": Opaque()}).to_dict()
    with pytest.raises(SerializationError, match="could not be restored"):
        AgentSession.from_dict(
            {
                "type": "session",
                "version": 1,
                "session_id": "s",
                "state": {"p": {"type": "test_point"}},
            }
        )
