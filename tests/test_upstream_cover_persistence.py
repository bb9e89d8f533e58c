"""Per-service-call history persistence (spec/sessions.md SE-60 .. SE-63), the agent
shapes the first tests leave out: no history provider, one provider not in a list, two
history providers of which only one loads, and the stand-in provider used directly."""

from __future__ import annotations

from typing import Any

from minagent import Agent, AgentSession, Content, InMemoryHistoryProvider, Message
from minagent.upstream.persistence import PerCallHistory, PerCallSaver
from tests.sessions.test_per_call_persistence import (
    SpyClient,
    SpyHistory,
    lookup_weather,
    run,
)


def _agent(client: SpyClient, context_providers: Any) -> Agent:
    return Agent(
        client=client,
        tools=[lookup_weather],
        context_providers=context_providers,
        require_per_service_call_history_persistence=True,
        default_options={"store": False},
    )


async def test_without_a_history_provider_one_in_memory_is_used(stream: bool) -> None:
    """SE-60: with no history provider an `InMemoryHistoryProvider` stands in, saving
    after every model call: the session holds the whole exchange, and the next run is
    sent it."""
    client = SpyClient(SpyHistory())
    agent = _agent(client, None)
    [stand_in] = agent.context_providers
    assert isinstance(stand_in, PerCallHistory)
    assert isinstance(stand_in.inner, InMemoryHistoryProvider)
    session = AgentSession()
    assert await run(agent, session, stream) == "It is sunny in Seattle."
    stored = session.state["in_memory"]["messages"]
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]

    client.script = [[Content.from_text("Still sunny.")]]
    assert await run(agent, session, stream) == "Still sunny."
    assert client.sent[-1] == ["user", "assistant", "tool", "assistant", "user"]


async def test_one_provider_not_in_a_list(stream: bool) -> None:
    """SE-60: a single history provider (not in a list) is stood in for as one in a list
    is."""
    history = SpyHistory()
    client = SpyClient(history)
    agent = _agent(client, history)
    [stand_in] = agent.context_providers
    assert isinstance(stand_in, PerCallHistory)
    assert stand_in.inner is history
    await run(agent, AgentSession(), stream)
    assert client.saves_before_call == [0, 1]


async def test_two_history_providers_one_loading(stream: bool) -> None:
    """SE-61, SE-63: every history provider saves after every call; the history sent to
    a later call is that of the provider that loads (a provider with
    ``load_messages=False`` is not read)."""
    archive = SpyHistory(load_messages=False)
    archive.source_id = "archive"
    archive.stored = [Message("user", ["archived, never sent"])]
    history = SpyHistory()
    history.stored = [Message("user", ["Earlier"]), Message("assistant", ["Answer"])]
    client = SpyClient(history)
    agent = _agent(client, [archive, history])
    session = AgentSession()
    assert await run(agent, session, stream) == "It is sunny in Seattle."
    assert archive.loads == 0
    assert history.loads == 2
    assert client.sent == [
        ["user", "assistant", "user"],
        ["user", "assistant", "user", "assistant", "tool"],
    ]
    for provider in (archive, history):
        assert [[m.role for m in batch] for batch in provider.saves] == [
            ["user", "assistant"],
            ["tool", "assistant"],
        ]
    assert all("archived" not in m.text for m in history.stored)


async def test_the_stand_in_reads_and_writes_its_provider() -> None:
    """SE-60: the provider that stands in for a history provider reads and writes that
    provider's store, so code that calls the agent's provider directly sees the same
    history."""
    inner = SpyHistory()
    agent = _agent(SpyClient(inner), [inner])
    [stand_in] = agent.context_providers
    assert isinstance(stand_in, PerCallHistory)
    await stand_in.save_messages("s1", [Message("user", ["kept"])])
    assert [m.text for m in inner.stored] == ["kept"]
    assert [m.text for m in await stand_in.get_messages("s1")] == ["kept"]
    assert inner.loads == 1


async def test_a_saver_on_another_agent_saves_nothing(stream: bool) -> None:
    """SE-60, SE-61: the saver saves for the runs of the agent whose history providers
    it stands in for; put on an agent without per-call persistence, it passes every call
    through and that agent saves once, after the run (SE-5)."""
    first = SpyHistory()
    saver = [
        m
        for m in _agent(SpyClient(first), [first]).middleware
        if isinstance(m, PerCallSaver)
    ]
    assert len(saver) == 1
    history = SpyHistory()
    client = SpyClient(history)
    other = Agent(
        client=client,
        tools=[lookup_weather],
        context_providers=[history],
        middleware=saver,
    )
    assert await run(other, AgentSession(), stream) == "It is sunny in Seattle."
    assert client.saves_before_call == [0, 0]
    assert [[m.role for m in batch] for batch in history.saves] == [
        ["user", "assistant", "tool", "assistant"]
    ]
    assert first.saves == []
