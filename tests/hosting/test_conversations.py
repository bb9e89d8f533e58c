"""Conversations across requests: one conversation id, one session in one store
(spec/hosting.md HS-140 .. HS-143)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from minagent import Agent
from minagent.hosting.conversations import Conversations, conversation_key
from minagent.stores import SessionStore, SQLiteSessionStore
from minagent.testing import ScriptedChatClient


def agent(*answers: str) -> Agent:
    return Agent(ScriptedChatClient(list(answers)), name="helper")


async def test_a_conversation_continues_across_requests_and_stores(
    tmp_path: Path,
) -> None:
    """HS-140: the second request of a conversation sees the first one's history, also
    through a second `Conversations` on the same SQLite file (another worker)."""
    path = tmp_path / "sessions.db"
    first = Conversations(SQLiteSessionStore(path))
    runner = agent("one", "two")
    async with first.session("helper", "c1") as session:
        await runner.run("hello", session=session)
    second = Conversations(SQLiteSessionStore(path))
    async with second.session("helper", "c1") as session:
        response = await runner.run("again", session=session)
    assert response.text == "two"
    client = runner.client
    assert isinstance(client, ScriptedChatClient)
    assert client.requests[-1].texts == [
        "user: hello",
        "assistant: one",
        "user: again",
    ]


async def test_conversations_are_per_agent() -> None:
    """HS-141: one id under two agents is two sessions, keyed by the agent's name."""
    store = SessionStore()
    conversations = Conversations(store)
    async with conversations.session("a", "same") as session:
        session.state["who"] = "a"
    async with conversations.session("b", "same") as session:
        assert "who" not in session.state
        session.state["who"] = "b"
    assert conversation_key("a", "same") == "a/same"
    a, b = await store.get("a/same"), await store.get("b/same")
    assert a is not None
    assert b is not None
    assert (a.state["who"], b.state["who"]) == ("a", "b")


async def test_runs_of_one_conversation_take_turns_and_the_lock_is_dropped() -> None:
    """HS-142: a second request waits until the first has saved; no lock is kept once
    nobody holds or waits for it."""
    conversations = Conversations()
    order: list[str] = []
    first_in = asyncio.Event()

    async def first() -> None:
        async with conversations.session("helper", "c") as session:
            first_in.set()
            order.append("first in")
            await asyncio.sleep(0.01)
            session.state["count"] = 1
            order.append("first out")

    async def second() -> None:
        await first_in.wait()
        async with conversations.session("helper", "c") as session:
            order.append(f"second sees {session.state.get('count')}")

    await asyncio.gather(first(), second())
    assert order == ["first in", "first out", "second sees 1"]
    assert conversations._locks == {}
    assert conversations._users == {}


@pytest.mark.parametrize("failure", [RuntimeError, asyncio.CancelledError])
async def test_a_failed_or_cancelled_run_leaves_the_stored_session(
    failure: type[BaseException],
) -> None:
    """HS-143: nothing is saved when the block ends with an exception, cancellation
    included."""
    conversations = Conversations()
    async with conversations.session("helper", "c") as session:
        session.state["kept"] = True

    async def failing() -> None:
        async with conversations.session("helper", "c") as session:
            session.state["kept"] = False
            session.state["half"] = "written"
            raise failure()

    with pytest.raises(failure):
        await failing()
    stored = await conversations.get("helper", "c")
    assert stored is not None
    assert stored.state["kept"] is True
    assert "half" not in stored.state
    await conversations.forget("helper", "c")
    assert await conversations.get("helper", "c") is None
    assert conversations._locks == {}


def test_the_application_keeps_its_conversations_in_the_given_store() -> None:
    """HS-1, HS-140: `HostingApp(store=...)` keeps every conversation in that store; without
    one, in a store of its own."""
    from minagent.hosting import HostingApp

    store = SessionStore()
    assert HostingApp([agent()], store=store).conversations.store is store
    assert isinstance(HostingApp([agent()]).conversations.store, SessionStore)
