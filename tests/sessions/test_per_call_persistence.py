"""Per-service-call history persistence, written the way upstream users write it
(spec/sessions.md SE-60 .. SE-63): a provider with upstream's single hook, ``Agent(...,
require_per_service_call_history_persistence=True)``, both modes."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterable, Sequence
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    ResponseStream,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from minagent.upstream import (
    AgentInvalidRequestException,
    ChatClientInvalidResponseException,
)
from minagent.upstream.persistence import PerCallHistory, PerCallSaver
from tests._support.modes import run as run_in_mode


@tool(approval_mode="never_require")
def lookup_weather(location: str) -> str:
    return f"Weather in {location}: sunny"


class SpyHistory(HistoryProvider):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("spy", **kwargs)
        self.stored: list[Message] = []
        self.loads = 0
        self.saves: list[list[Message]] = []
        self.responses: list[Any] = []

    async def get_messages(
        self, session_id: str | None, *, state: Any = None, **kwargs: Any
    ) -> list[Message]:
        self.loads += 1
        return list(self.stored)

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: Any = None,
        **kwargs: Any,
    ) -> None:
        self.saves.append(list(messages))
        self.stored.extend(messages)

    async def after_run(
        self, *, agent: Any, session: Any, context: Any, state: Any
    ) -> None:
        self.responses.append(context.response)
        await super().after_run(
            agent=agent, session=session, context=context, state=state
        )


class SpyClient(BaseChatClient):
    """A provider written for upstream: one ``_inner_get_response(*, messages, stream,
    options)``."""

    def __init__(
        self,
        history: SpyHistory,
        *,
        stores: bool = False,
        conversation_id: str | None = "svc",
    ) -> None:
        super().__init__()
        self.STORES_BY_DEFAULT = stores
        self.history = history
        self.conversation_id = conversation_id
        self.script = [
            [
                Content.from_function_call(
                    "call_1", "lookup_weather", '{"location": "Seattle"}'
                )
            ],
            [Content.from_text("It is sunny in Seattle.")],
        ]
        self.saves_before_call: list[int] = []
        self.sent: list[list[str]] = []
        self.options: list[dict[str, Any]] = []

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: dict[str, Any],
        **kw: Any,
    ):  # type: ignore[no-untyped-def]
        self.saves_before_call.append(len(self.history.saves))
        self.sent.append([m.role for m in messages])
        self.options.append(dict(options))
        store = options.get("store")
        stores = self.STORES_BY_DEFAULT if store is None else bool(store)
        conv = self.conversation_id if stores else None
        contents = self.script.pop(0)
        if stream:

            async def updates() -> AsyncIterable[ChatResponseUpdate]:
                yield ChatResponseUpdate(
                    contents=contents,
                    role="assistant",
                    conversation_id=conv,
                    response_id="r",
                )

            return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

        async def get() -> ChatResponse:
            return ChatResponse(
                messages=[Message("assistant", contents)],
                conversation_id=conv,
                response_id="r",
                finish_reason="stop",
            )

        return get()


async def run(agent: Agent, session: AgentSession, stream: bool, **kw: Any) -> str:
    if stream:
        return "".join(
            [
                u.text
                async for u in agent.run(
                    "Weather in Seattle?", session=session, stream=True, **kw
                )
            ]
        )
    return (await agent.run("Weather in Seattle?", session=session, **kw)).text


def make(history: SpyHistory, client: SpyClient, flag: bool = True, **kw: Any) -> Agent:
    return Agent(
        client=client,
        tools=[lookup_weather],
        context_providers=[history],
        require_per_service_call_history_persistence=flag,
        **kw,
    )


async def test_saved_after_every_model_call(stream: bool) -> None:
    """SE-60, SE-61: the function-call turn is saved before the second model call; one
    save per call."""
    history = SpyHistory()
    client = SpyClient(history)
    session = AgentSession()
    text = await run(make(history, client), session, stream)
    assert text == "It is sunny in Seattle."
    assert client.saves_before_call == [0, 1]
    assert [[m.role for m in batch] for batch in history.saves] == [
        ["user", "assistant"],
        ["tool", "assistant"],
    ]
    assert history.stored[-1].text == "It is sunny in Seattle."


async def test_flag_false_saves_once_at_the_end(stream: bool) -> None:
    """SE-60: ``False`` changes nothing: one save, after the run (SE-5)."""
    history = SpyHistory()
    client = SpyClient(history)
    await run(make(history, client, flag=False), AgentSession(), stream)
    assert client.saves_before_call == [0, 0]
    assert len(history.saves) == 1


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


async def test_each_call_reaches_after_run_as_an_agent_response(stream: bool) -> None:
    """SE-61: ``after_run`` sees each call's response, with its metadata;
    ``store_outputs=False`` keeps the assistant's messages out."""
    history = SpyHistory(store_outputs=False)
    client = SpyClient(history)
    await run(make(history, client), AgentSession(), stream)
    assert len(history.responses) == 2
    first = history.responses[0]
    assert [c.type for c in first.messages[0].contents] == ["function_call"]
    assert isinstance(first.raw_representation, ChatResponse)
    assert all(m.role != "assistant" for m in history.stored)
    assert [m.role for m in history.stored] == ["user", "tool"]


async def test_storing_service_skips_loading_and_sets_the_session_id(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """SE-62: the service keeps the conversation: no load, a warning about
    load_messages, the id reaches the session; ``store=None`` counts as unset and is not
    sent."""
    history = SpyHistory()
    client = SpyClient(history, stores=True)
    session = AgentSession()
    with caplog.at_level(logging.WARNING, logger="agent_framework"):
        await run(
            make(history, client, default_options={"store": None}), session, stream
        )
    assert history.loads == 0
    assert client.saves_before_call == [0, 1]
    assert session.service_session_id == "svc"
    assert any("load_messages" in r.getMessage() for r in caplog.records)
    assert all("store" not in options for options in client.options)


async def test_storing_service_without_id_is_warned_about(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """SE-62: a storing service that returns no conversation_id is warned about on every
    call."""
    history = SpyHistory(load_messages=False)
    client = SpyClient(history, stores=True, conversation_id=None)
    with caplog.at_level(logging.WARNING, logger="agent_framework"):
        await run(make(history, client), AgentSession(), stream)
    warnings = [r for r in caplog.records if "conversation_id" in r.getMessage()]
    assert len(warnings) == 2
    assert not any("load_messages" in r.getMessage() for r in caplog.records)


async def test_local_history_is_reloaded_before_every_call(stream: bool) -> None:
    """SE-63: without service storage the history is loaded before the run and before
    the second call, whose messages are the saved history and the new tool result; no
    response_id."""
    history = SpyHistory()
    history.stored = [Message("user", ["Earlier"]), Message("assistant", ["Answer"])]
    client = SpyClient(history, stores=False)
    session = AgentSession()
    agent = make(history, client, default_options={"store": False})
    if stream:
        stream_ = agent.run("Weather in Seattle?", session=session, stream=True)
        result = await stream_.get_final_response()
    else:
        result = await agent.run("Weather in Seattle?", session=session)
    assert history.loads == 2
    assert client.sent[1] == ["user", "assistant", "user", "assistant", "tool"]
    assert result.response_id is None
    assert session.service_session_id is None


async def test_a_conversation_id_without_service_storage_is_refused(
    stream: bool,
) -> None:
    """SE-63: a conversation id given to the run, or returned by a call, cannot be used
    without service storage; the errors say so."""
    history = SpyHistory()
    agent = make(history, SpyClient(history))
    with pytest.raises(
        AgentInvalidRequestException,
        match="require_per_service_call_history_persistence cannot be used",
    ):
        await run(
            agent,
            AgentSession(),
            stream,
            options={"store": False, "conversation_id": "c1"},
        )

    class Stubborn(SpyClient):
        def _inner_get_response(self, **kw: Any):  # type: ignore[no-untyped-def]
            # the service keeps it anyway
            kw["options"] = {**kw["options"], "store": True}
            return super()._inner_get_response(**kw)

    history = SpyHistory()
    agent = make(history, Stubborn(history))
    with pytest.raises(
        ChatClientInvalidResponseException,
        match="require_per_service_call_history_persistence cannot be used",
    ):
        await run(agent, AgentSession(), stream, options={"store": False})


async def test_concurrent_runs_keep_their_own_records() -> None:
    """SE-61: two runs of one agent at once, on two sessions, each save their own
    messages."""
    import asyncio

    from minagent import InMemoryHistoryProvider

    class Client(BaseChatClient):
        def _inner_get_response(
            self,
            *,
            messages: Sequence[Message],
            stream: bool,
            options: dict[str, Any],
            **kw: Any,
        ):  # type: ignore[no-untyped-def]
            async def get() -> ChatResponse:
                await asyncio.sleep(0)
                if messages[-1].role == "user":
                    args = json.dumps({"location": messages[-1].text})
                    return ChatResponse(
                        messages=[
                            Message(
                                "assistant",
                                [
                                    Content.from_function_call(
                                        "c", "lookup_weather", args
                                    )
                                ],
                            )
                        ]
                    )
                return ChatResponse(
                    messages=[Message("assistant", [messages[-1].contents[0].result])]
                )

            return get()

    history = InMemoryHistoryProvider()
    agent = Agent(
        client=Client(),
        tools=[lookup_weather],
        context_providers=[history],
        require_per_service_call_history_persistence=True,
    )
    a, b = AgentSession(), AgentSession()
    texts = await asyncio.gather(
        agent.run("Oslo", session=a), agent.run("Rome", session=b)
    )
    assert [t.text for t in texts] == [
        "Weather in Oslo: sunny",
        "Weather in Rome: sunny",
    ]
    for session, city in ((a, "Oslo"), (b, "Rome")):
        stored = session.state["in_memory"]["messages"]
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert stored[0].text == city
        assert stored[-1].text == f"Weather in {city}: sunny"


async def test_an_agent_run_inside_a_tool_keeps_its_own_record(stream: bool) -> None:
    """SE-61: an agent with per-call persistence run inside another's tool saves to its
    own session; the outer run's next call still saves to the outer session."""
    from minagent import InMemoryHistoryProvider, tool
    from minagent.testing import ScriptedChatClient, call, reply

    inner = Agent(
        ScriptedChatClient(["inner answer"]),
        context_providers=[InMemoryHistoryProvider()],
        require_per_service_call_history_persistence=True,
    )
    inner_session = AgentSession()

    @tool
    async def ask_inner(q: str) -> str:
        return (await inner.run(q, session=inner_session)).text

    outer = Agent(
        ScriptedChatClient([reply(call("ask_inner", {"q": "x"})), "outer answer"]),
        tools=[ask_inner],
        context_providers=[InMemoryHistoryProvider()],
        require_per_service_call_history_persistence=True,
    )
    session = AgentSession()
    if stream:
        text = (
            await outer.run("go", session=session, stream=True).get_final_response()
        ).text
    else:
        text = (await outer.run("go", session=session)).text
    assert text == "outer answer"
    outer_roles = [m.role for m in session.state["in_memory"]["messages"]]
    inner_roles = [m.role for m in inner_session.state["in_memory"]["messages"]]
    assert outer_roles == ["user", "assistant", "tool", "assistant"]
    assert inner_roles == ["user", "assistant"]


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


class EditsInPlace(ChatMiddleware):
    """A run's chat middleware, after the saver: edits every message it is shown in
    place, on every model call."""

    async def process(self, context, call_next):  # type: ignore[no-untyped-def]  # as users write it
        for m in context.messages:
            for c in m.contents:
                c.text = "EDITED"
                c.additional_properties["edited"] = True
            m.additional_properties["edited"] = True
        await call_next()


async def test_chat_middleware_after_the_saver_edits_copies(stream: bool) -> None:
    """SE-52, SE-53, SE-60, LP-3: with history saved after every model call, the
    messages the saver sends on a later call (the history as saved so far and what is
    new) reach the chat middleware after it as copies: middleware that edits them in
    place on every call, in a run whose last model call fails, leaves every stored
    message as it was saved, in both modes."""
    agent = Agent(
        ScriptedChatClient(
            [
                "a0",
                reply(call("lookup_weather", {"location": "Oslo"}, call_id="w1")),
                RuntimeError("the model failed"),
            ]
        ),
        tools=[lookup_weather],
        require_per_service_call_history_persistence=True,
    )
    session = agent.create_session()
    await run_in_mode(agent, "q0", stream=stream, session=session)
    with pytest.raises(RuntimeError, match="the model failed"):
        await run_in_mode(
            agent, "q1", stream=stream, session=session, middleware=[EditsInPlace()]
        )
    stored = [m.to_dict() for m in session.state["in_memory"]["messages"]]
    # the first call of the failed run stays saved (SE-60); nothing saved was edited
    assert [(m["role"], m["contents"][0].get("text")) for m in stored] == [
        ("user", "q0"),
        ("assistant", "a0"),
        ("user", "q1"),
        ("assistant", None),
    ]
    assert "edited" not in json.dumps(stored).lower()
