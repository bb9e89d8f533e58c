"""Upstream's ``register_state_type`` and thread serialisation at their edges
(spec/sessions.md SE-2, spec/threads.md TH-2): type ids that cannot be used, callbacks
that misbehave, and a thread's history entry holding more than its messages."""

from __future__ import annotations

from typing import Any

import pytest

from minagent import (
    AgentSession,
    AgentThread,
    Message,
    SerializationError,
    register_state_type,
)


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


def test_a_threads_history_entry_keeps_what_is_not_its_messages() -> None:
    """TH-2: `serialize()` writes the messages apart; what else the history entry holds
    stays in the state, and `deserialize` restores an equal thread."""
    messages = [Message("user", ["hi"]), Message("assistant", ["hello"])]
    thread = AgentThread(
        messages=messages, state={"in_memory": {"messages": messages, "cursor": 2}}
    )
    data = thread.serialize()
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["state"]["in_memory"] == {"cursor": 2}
    restored = AgentThread.deserialize(data)
    assert restored.messages == messages
    assert restored.state["in_memory"]["cursor"] == 2


def test_a_history_entry_without_messages_stays_as_it_is() -> None:
    """TH-2: a history entry that holds no messages is state like any other: written and
    restored."""
    thread = AgentThread(state={"in_memory": {"cursor": 0}})
    data = thread.serialize()
    assert data["messages"] == []
    assert data["state"]["in_memory"] == {"cursor": 0}
    assert AgentThread.deserialize(data).state["in_memory"] == {"cursor": 0}
