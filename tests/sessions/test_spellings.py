"""One mechanism, two spellings: threads and sessions (spec/sessions.md SE-9, SE-10);
upstream's names that minagent has not say what to use (SE-64)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minagent
from minagent import (
    Agent,
    AgentSession,
    AgentThread,
    Context,
    ContextProvider,
    Message,
    SessionContext,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class ThreadEraNotes(ContextProvider):
    """Thread spelling: adds a note per run and counts runs in the thread's state."""

    async def invoking(self, messages: Any, **kwargs: Any) -> Context:
        thread = kwargs["thread"]
        runs = thread.state.get("notes", {}).get("runs", 0) if thread is not None else 0
        return Context(
            instructions=f"run {runs}", messages=[Message("user", [f"note {runs}"])]
        )

    async def invoked(
        self, request_messages: Any, response_messages: Any, **kwargs: Any
    ) -> None:
        thread = kwargs["thread"]
        if thread is not None:
            entry = thread.state.setdefault("notes", {})
            entry["runs"] = entry.get("runs", 0) + 1


class SessionNotes(ContextProvider):
    """Session spelling of the same provider: its state is session.state["notes"]."""

    def __init__(self) -> None:
        super().__init__("notes")

    async def before_run(
        self, *, agent: Any, session: AgentSession, context: SessionContext, state: Any
    ) -> None:
        runs = state.get("runs", 0)
        context.extend_instructions(self.source_id, f"run {runs}")
        context.extend_messages(self, [Message("user", [f"note {runs}"])])

    async def after_run(
        self, *, agent: Any, session: AgentSession, context: SessionContext, state: Any
    ) -> None:
        state["runs"] = state.get("runs", 0) + 1


TURN = st.tuples(
    st.text(min_size=1, max_size=12),  # the user's input
    st.sampled_from(["text", "tool", "service"]),  # how the model answers
    st.integers(0, 9),
    st.booleans(),  # streaming
)


def script(turns: list[tuple[str, str, int, bool]]) -> list[Any]:
    steps: list[Any] = []
    for i, (_, kind, number, _) in enumerate(turns):
        if kind == "tool":
            steps += [
                reply(call("add", {"a": number, "b": i}, call_id=f"c{i}")),
                f"sum {number + i}",
            ]
        elif kind == "service" and i == len(turns) - 1:
            from minagent import ChatResponse

            steps.append(
                ChatResponse(
                    [Message("assistant", [f"kept {number}"])],
                    conversation_id=f"conv{number}",
                )
            )
        else:
            steps.append(f"answer {number}")
    return steps


async def converse(
    turns: list[tuple[str, str, int, bool]], spelling: str
) -> tuple[list[Any], Any]:
    client = ScriptedChatClient(script(turns))
    provider: ContextProvider = (
        ThreadEraNotes() if spelling == "thread" else SessionNotes()
    )
    agent = Agent(client, "base", name="bot", tools=[add], context_providers=[provider])
    holder: AgentSession = (
        agent.get_new_thread() if spelling == "thread" else agent.create_session()
    )
    for text, _, _, stream in turns:
        keyword = {spelling: holder}
        if stream:
            response_stream = agent.run(text, stream=True, **keyword)
            async for _ in response_stream:
                pass
        else:
            await agent.run(text, **keyword)
    sent = [
        ([m.to_dict() for m in r.messages], r.options.get("instructions"))
        for r in client.requests
    ]
    if isinstance(holder, AgentThread):
        history = [m.to_dict() for m in holder.messages]
        kept = (holder.service_thread_id, history, holder.serialize().get("state"))
    else:
        history = [
            m.to_dict() for m in holder.state.get("in_memory", {}).get("messages", [])
        ]
        state = {k: v for k, v in holder.to_dict()["state"].items() if k != "in_memory"}
        kept = (holder.service_session_id, history, state or None)
    return sent, kept


@settings(max_examples=40)
@given(turns=st.lists(TURN, min_size=1, max_size=5))
def test_thread_and_session_spellings_give_identical_transcripts(
    turns: list[tuple[str, str, int, bool]],
) -> None:
    """SE-9, SE-10: the same random conversation (text and tool turns, both modes, a
    switch to a service conversation) through thread=/invoking-invoked and
    session=/before_run-after_run sends the same messages and instructions to the model
    and leaves the same history and state."""
    thread_side = asyncio.run(converse(turns, "thread"))
    session_side = asyncio.run(converse(turns, "session"))
    assert thread_side == session_side


async def test_a_thread_is_a_session() -> None:
    """SE-9: AgentThread is an AgentSession; thread_id, service_thread_id, messages and
    state map to session_id, service_session_id, the default history's messages and
    state; a thread may be passed as session= and a session's history read through a
    thread restored from to_dict()."""
    client = ScriptedChatClient(["one", "two"])
    agent = Agent(client)
    thread = agent.get_new_thread()
    assert isinstance(thread, AgentSession)
    assert thread.thread_id == thread.session_id
    await agent.run("a", session=thread)
    assert [m.text for m in thread.messages] == ["a", "one"]
    assert thread.messages is thread.state["in_memory"]["messages"]
    thread.service_thread_id = "conv"
    assert thread.service_session_id == "conv"
    assert "in_memory" not in thread.serialize().get("state", {})
    session = agent.create_session()
    await agent.run("b", session=session)
    restored = AgentThread.deserialize(
        {
            "type": "agent_thread",
            "version": 1,
            "thread_id": session.session_id,
            "state": session.to_dict()["state"],
        }
    )
    assert [m.text for m in restored.messages] == ["b", "two"]


async def test_agent_middleware_sees_the_session_under_both_names() -> None:
    """SE-9: AgentContext.session is AgentContext.thread; middleware that replaces it
    runs the rest of the run on the new session."""
    from minagent import AgentContext, agent_middleware

    seen: list[Any] = []
    other = AgentSession(session_id="other")

    @agent_middleware
    async def swap(context: AgentContext, call_next: Any) -> None:
        seen.append((context.session, context.thread))
        context.session = other
        await call_next()

    agent = Agent(ScriptedChatClient(["a"]), middleware=[swap])
    session = agent.create_session()
    await agent.run("q", session=session)
    assert seen == [(session, session)]
    assert [m.text for m in other.state["in_memory"]["messages"]] == ["q", "a"]
    assert session.state == {}
    assert AgentContext(agent, [], session=other).thread is other


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("ChatMessageStore", "InMemoryHistoryProvider"),
        ("ChatMessageStoreProtocol", "HistoryProvider subclass"),
        ("AggregateContextProvider", "context_providers=[a, b]"),
        ("ChatAgent", "Agent (ChatAgent was renamed Agent)"),
        ("ChatMessage", "Message (ChatMessage was renamed"),
        ("AgentRunResponse", "AgentResponse (AgentRunResponse was renamed"),
        ("ai_function", "tool (@ai_function was renamed @tool)"),
        ("TextContent", "Content.from_text"),
    ],
)
def test_upstream_names_say_what_to_use(name: str, words: str) -> None:
    """SE-64: ``minagent.<upstream name>`` is an AttributeError that says what to use
    instead."""
    with pytest.raises(
        AttributeError, match=f"no attribute '{name}': use .*{re.escape(words)}"
    ):
        getattr(minagent, name)
    with pytest.raises(ImportError, match=name):
        exec(f"from minagent import {name}", {})


def test_other_missing_names_keep_pythons_message() -> None:
    """SE-64: a name that is nobody's, or a dunder, gets the plain message."""
    with pytest.raises(
        AttributeError, match=r"^module 'minagent' has no attribute 'no_such_name'$"
    ):
        minagent.no_such_name  # noqa: B018
    assert not hasattr(minagent, "__wrapped__")


@pytest.mark.parametrize(
    ("attribute", "words"),
    [
        ("message_store", "thread.messages"),
        ("chat_message_store", "thread.messages"),
        ("context_provider", "context_providers=[...]"),
        ("is_initialized", "always ready"),
        ("on_new_messages", "HistoryProvider"),
        ("update_from_thread_state", "deserialize_thread"),
    ],
)
def test_thread_era_attributes_say_what_to_use(attribute: str, words: str) -> None:
    """SE-64: a thread's attributes of the thread era say what became of them."""
    thread = Agent(ScriptedChatClient([])).get_new_thread()
    with pytest.raises(
        AttributeError,
        match=f"AgentThread.{attribute} is upstream's thread-era API: .*",
    ):
        getattr(thread, attribute)
    with pytest.raises(AttributeError) as info:
        getattr(thread, attribute)
    assert words in str(info.value)
    with pytest.raises(
        AttributeError,
        match=r"'AgentThread' object has no attribute 'nothing_like_it'$",
    ):
        thread.nothing_like_it  # noqa: B018
