"""Sessions corners the rest of the suite does not reach (coverage, tests only).

Rules: SE-3 (the run's context), SE-12 (claims), SE-20 (a failed save takes back the
earlier ones).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from minagent import (
    AgentResponse,
    AgentSession,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    SessionContext,
)
from minagent._sessions import _RUNNING, claim, release
from minagent.testing import ScriptedChatClient
from tests._support.modes import run


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


async def test_claim_without_session_and_release_of_nothing() -> None:
    """SE-12: a run without a session claims nothing; a session is claimed once and
    released."""
    assert await claim(None) is None
    release(None)
    session = AgentSession()
    key = await claim(session)
    assert key == session.session_id
    assert key in _RUNNING
    release(key)
    assert key not in _RUNNING


def test_extend_messages_by_source_id_marks_origins_without_source_type() -> None:
    """SE-3: messages added under a source_id string with origin_session_ids are copies
    marked with the source id and origins (each once), without a source_type (that names
    a provider's class)."""
    context = SessionContext(input_messages=[Message("user", "q")])
    original = Message("user", "from elsewhere")
    context.extend_messages("rag", [original], origin_session_ids=["s1", "s1", "s2"])
    (copy_,) = context.context_messages["rag"]
    assert copy_ is not original
    assert copy_.additional_properties["_attribution"] == {
        "source_id": "rag",
        "origin_session_ids": ["s1", "s2"],
    }
    assert "_attribution" not in original.additional_properties


def test_get_messages_with_the_response() -> None:
    """SE-3: get_messages appends the input, then the run's response messages when
    asked."""
    context = SessionContext(input_messages=[Message("user", "q")])
    context.extend_messages("rag", [Message("user", "ctx")])
    # no response yet
    assert [m.text for m in context.get_messages(include_response=True)] == ["ctx"]
    context._response = AgentResponse(messages=[Message("assistant", "a")])
    texts = [
        m.text for m in context.get_messages(include_input=True, include_response=True)
    ]
    assert texts == ["ctx", "q", "a"]
