"""A session as JSON data (spec/sessions.md SE-2, SE-65): `to_dict` / `from_dict`, the
types session state may hold, and structured service session ids."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentSession,
    Message,
    SerializationError,
    register_state_type,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from minagent.upstream import (
    AgentInvalidRequestException,
)
from tests._support.strategies import messages as message_strategy


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_to_dict_round_trips_state_and_messages() -> None:
    """SE-2, SE-7: to_dict is versioned plain JSON (messages of the in-memory history
    included); from_dict restores an equal session that shares nothing with the data."""
    client = ScriptedChatClient([reply(call("add", {"a": 1, "b": 2})), "3"])
    agent = Agent(client, tools=[add])
    session = agent.create_session()
    session.state["notes"] = {"list": [1, 2.5, True, None, "x"], "tuple": (1, 2)}
    await agent.run("add", session=session)
    data = session.to_dict()
    assert data["type"] == "session"
    assert isinstance(data["version"], int)
    assert json.loads(json.dumps(data)) == data
    assert data["state"]["notes"]["tuple"] == [1, 2]
    restored = AgentSession.from_dict(json.loads(json.dumps(data)))
    assert restored.to_dict() == data
    assert restored == AgentSession.from_dict(data)
    kinds = [
        c.type for m in restored.state["in_memory"]["messages"] for c in m.contents
    ]
    assert kinds == ["text", "function_call", "function_result", "text"]
    data["state"]["notes"]["list"].append("changed")
    assert restored.state["notes"]["list"] == [1, 2.5, True, None, "x"]


@pytest.mark.parametrize(
    ("state", "path"),
    [
        ({"x": object()}, "state.x"),
        ({"p": {"n": float("nan")}}, "state.p.n"),
        ({"k": {1: "v"}}, "state.k"),
    ],
)
def test_state_that_is_not_json_is_a_serialization_error(
    state: dict[str, Any], path: str
) -> None:
    """SE-2: a value that is not JSON-native is a SerializationError naming its path."""
    session = AgentSession(state=state)
    with pytest.raises(SerializationError) as raised:
        session.to_dict()
    assert raised.value.path == path


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"type": "agent_thread", "version": 1, "session_id": "x"},
        {"type": "session", "version": 1},
        {"type": "session", "version": 1, "session_id": "x", "state": []},
        {
            "type": "session",
            "version": 1,
            "session_id": "x",
            "state": {"m": {"type": "message", "version": 1}},
        },
    ],
)
def test_bad_session_data_is_a_serialization_error(data: Any) -> None:
    """SE-2: data of the wrong shape is a SerializationError, never a KeyError."""
    with pytest.raises(SerializationError):
        AgentSession.from_dict(data)


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


@settings(max_examples=60)
@given(
    batch=st.lists(message_strategy(), max_size=5),
    extra=st.dictionaries(st.text(max_size=5), st.integers()),
)
def test_every_content_type_round_trips_through_session_state(
    batch: list[Message], extra: dict[str, int]
) -> None:
    """SE-2, SE-7: messages of every content type in the in-memory history, and JSON
    values beside them, survive to_dict() -> json -> from_dict() unchanged; ids are
    version-4 UUIDs."""
    session = AgentSession(state={"in_memory": {"messages": batch}, "other": extra})
    data = json.loads(json.dumps(session.to_dict()))
    restored = AgentSession.from_dict(data)
    assert [m.to_dict() for m in restored.state["in_memory"]["messages"]] == [
        m.to_dict() for m in batch
    ]
    assert restored.state["other"] == extra
    assert restored == session
    assert uuid.UUID(session.session_id).version == 4


def test_state_types_and_messages_as_upstream_stores_them():
    """SE-2: a registered class's type id is upstream's (`_get_type_identifier()`, else
    `TYPE`); a message stored without `version` (upstream's form) is restored as a
    message."""
    from minagent import AgentSession, register_state_type

    class Note:
        TYPE = "upstream_note"

        def __init__(self, text):
            self.text = text

        def to_dict(self):
            return {"text": self.text}

        @classmethod
        def from_dict(cls, data):
            return cls(data["text"])

    register_state_type(Note)
    session = AgentSession(session_id="s")
    session.state["note"] = Note("hi")
    data = session.to_dict()
    assert data["state"]["note"]["type"] == "upstream_note"
    assert AgentSession.from_dict(data).state["note"].text == "hi"
    stored = Message("user", ["x"]).to_dict()
    stored.pop("version", None)
    data["state"]["history"] = [stored]
    assert AgentSession.from_dict(data).state["history"][0] == Message("user", ["x"])


@pytest.mark.parametrize("type_id", ["message", 7])
def test_a_type_id_that_cannot_be_used_is_a_value_error(type_id: Any) -> None:
    """SE-2: a state type id (given, or upstream's id of the class) is a non-empty
    string other than ``"message"`` (messages' own)."""

    class Named:
        @classmethod
        def _get_type_identifier(cls) -> Any:
            return type_id

    with pytest.raises(
        ValueError,
        match="state type id must be a non-empty string other than 'message'",
    ):
        register_state_type(Named, encoder=lambda v: {}, decoder=lambda d: Named())
    with pytest.raises(
        ValueError,
        match="state type id must be a non-empty string other than 'message'",
    ):
        register_state_type(
            Named, type_id="message", encoder=lambda v: {}, decoder=lambda d: Named()
        )


def test_an_encoder_that_gives_no_dict_is_a_serialization_error() -> None:
    """SE-2: a registered class is written as its encoder's dict; an encoder that gives
    something else is a `SerializationError` naming the path and the class."""

    class Listed:
        pass

    register_state_type(
        Listed,
        type_id="cover_listed",
        encoder=lambda v: ["not", "a", "dict"],
        decoder=lambda d: Listed(),
    )
    session = AgentSession(session_id="s")
    session.state["item"] = Listed()
    with pytest.raises(
        SerializationError, match="encoder of Listed returned no dict"
    ) as caught:
        session.to_dict()
    assert "item" in str(caught.value)


def test_a_decoders_serialization_error_is_not_wrapped() -> None:
    """SE-2: bad data is a `SerializationError` naming its path: one raised while a
    registered class is restored (here by the value inside it) reaches the caller as it
    was raised, and any other error of the decoder becomes one naming the class."""

    class Box:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

    def decode(data: Any) -> Box:
        if data.get("inner") == "bad":
            raise SerializationError("state.box.inner", "the decoder found it bad")
        if data.get("inner") == "boom":
            raise KeyError("boom")
        return Box(data["inner"])

    register_state_type(
        Box, type_id="cover_box", encoder=lambda b: {"inner": b.inner}, decoder=decode
    )
    session = AgentSession(session_id="s")
    session.state["box"] = Box(Message("user", ["kept"]))
    data = session.to_dict()
    assert AgentSession.from_dict(data).state["box"].inner == Message("user", ["kept"])

    data["state"]["box"]["inner"] = "bad"
    with pytest.raises(SerializationError, match="the decoder found it bad") as caught:
        AgentSession.from_dict(data)
    assert caught.value.__cause__ is None
    data["state"]["box"]["inner"] = "boom"
    with pytest.raises(
        SerializationError, match="Box could not be restored"
    ) as wrapped:
        AgentSession.from_dict(data)
    assert isinstance(wrapped.value.__cause__, KeyError)


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


STRUCTURED = {"context_id": "ctx-1", "task_id": "task-2", "task_state": "working"}


def test_a_structured_service_session_id_is_kept_and_round_trips() -> None:
    """SE-65: a dict id is taken by get_session and the constructor, and
    to_dict/from_dict copy it."""
    agent = Agent(ScriptedChatClient([]))
    session = agent.get_session(service_session_id=STRUCTURED)
    assert session.service_session_id == STRUCTURED
    data = session.to_dict()
    assert data["service_session_id"] == STRUCTURED
    assert data["service_session_id"] is not STRUCTURED
    plain = json.loads(json.dumps(data))
    restored = AgentSession.from_dict(plain)
    assert restored.service_session_id == STRUCTURED
    assert restored.service_session_id is not plain["service_session_id"]


@pytest.mark.parametrize("bad", [{}, "", 3, ["a"]])
def test_get_session_refuses_what_is_not_an_id(bad: Any) -> None:
    """SE-65: an empty dict or str, or anything else, is a ValueError."""
    with pytest.raises(ValueError, match="non-empty string or dict"):
        Agent(ScriptedChatClient([])).get_session(service_session_id=bad)


async def test_a_chat_client_agent_refuses_a_structured_id_before_calling(
    stream: bool,
) -> None:
    """SE-65: the run fails before any model call, saying a string is expected."""
    client = ScriptedChatClient(["never"])
    agent = Agent(client)
    session = agent.get_session(service_session_id={"context_id": "ctx-1"})
    run = (
        agent.run("Hello", session=session, stream=True).get_final_response()
        if stream
        else agent.run("Hello", session=session)
    )
    with pytest.raises(
        AgentInvalidRequestException, match="expects a string service_session_id"
    ):
        await run
    assert client.requests == []
