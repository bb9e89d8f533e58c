"""Sessions, context providers and history providers (spec/sessions.md SE-1 to SE-12,
SE-19). A session as JSON data is in test_serialization.py, what a failed run leaves in
test_failed_runs.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentResponse,
    AgentSession,
    AgentThread,
    ChatResponseUpdate,
    Content,
    Context,
    ContextProvider,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    MiddlewareException,
    SessionBusyError,
    SessionContext,
    SessionStore,
    agent_middleware,
    chat_middleware,
    set_tracer,
    tool,
)
from minagent._sessions import _RUNNING, claim, release
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from tests._support.modes import run

from ..observability._recording import RecordingTracer
from ._util import texts


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# -- SE-1, SE-2 ---------------------------------------------------------------------------------


def test_create_and_get_session() -> None:
    """SE-1: create_session gives a new session (its own id, or the one given);
    get_session continues a service conversation; ids must be non-empty strings."""
    agent = Agent(ScriptedChatClient())
    one, two = agent.create_session(), agent.create_session()
    assert isinstance(one, AgentSession)
    assert one.session_id != two.session_id
    assert agent.create_session(session_id="abc").session_id == "abc"
    kept = agent.get_session("conv_1", session_id="s")
    assert (kept.service_session_id, kept.session_id) == ("conv_1", "s")
    with pytest.raises(ValueError, match="session_id"):
        agent.create_session(session_id="")
    with pytest.raises(ValueError, match="service_session_id"):
        agent.get_session("")
    with pytest.raises(AttributeError):
        one.session_id = "x"  # type: ignore[misc]


async def test_session_keeps_the_conversation(stream: bool) -> None:
    """SE-1, SE-8: run(session=...) sends the earlier turns in both modes (the default
    in-memory history)."""
    client = ScriptedChatClient(["Hi Alice", "You are Alice"])
    agent = Agent(client, "Be brief.")
    session = agent.create_session()
    await run(agent, "I am Alice", stream=stream, session=session)
    await run(agent, "Who am I?", stream=stream, session=session)
    assert texts(client.requests[1].messages) == [
        ("user", "I am Alice"),
        ("assistant", "Hi Alice"),
        ("user", "Who am I?"),
    ]
    assert texts(session.state["in_memory"]["messages"]) == [
        *texts(client.requests[1].messages),
        ("assistant", "You are Alice"),
    ]


def test_thread_and_session_together_or_wrong_types_are_type_errors() -> None:
    """SE-1: thread= and session= together, or a session= that is no AgentSession, is a
    TypeError."""
    agent = Agent(ScriptedChatClient())
    with pytest.raises(TypeError, match="both thread= and session="):
        agent.run("hi", thread=agent.get_new_thread(), session=agent.create_session())
    with pytest.raises(TypeError, match=r"AgentSession from agent\.create_session"):
        agent.run("hi", session={"session_id": "x"})  # type: ignore[arg-type]


# -- SE-3, SE-4: the provider pipeline ---------------------------------------------------------


class Recorder(ContextProvider):
    """A provider that adds one of everything and records what it saw."""

    def __init__(self, source_id: str, log: list[str]) -> None:
        super().__init__(source_id)
        self.log = log

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        self.log.append(f"before {self.source_id}")
        assert context.response is None
        state["runs"] = state.get("runs", 0) + 1
        context.extend_instructions(self.source_id, f"from {self.source_id}")
        context.extend_messages(self, [Message("user", [f"context {self.source_id}"])])

    async def after_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        self.log.append(f"after {self.source_id}: {context.response.text}")
        assert session.state[self.source_id] is state


async def test_providers_run_in_order_with_their_own_state(stream: bool) -> None:
    """SE-3, SE-4: before_run in registration order, after_run in reverse with the
    response set; the history comes first, then each provider's messages, then the
    input; instructions joined after the agent's; each provider's state is its own entry
    of session.state."""
    log: list[str] = []
    client = ScriptedChatClient(["one", "two"])
    agent = Agent(
        client, "agent", context_providers=[Recorder("a", log), Recorder("b", log)]
    )
    session = agent.create_session()
    await run(agent, "q1", stream=stream, session=session)
    await run(agent, "q2", stream=stream, session=session)
    assert log == ["before a", "before b", "after b: one", "after a: one"] * 1 + [
        "before a",
        "before b",
        "after b: two",
        "after a: two",
    ]
    assert client.requests[1].options["instructions"] == "agent\nfrom a\nfrom b"
    assert texts(client.requests[1].messages) == [
        ("user", "q1"),
        ("assistant", "one"),
        ("user", "context a"),
        ("user", "context b"),
        ("user", "q2"),
    ]
    assert session.state["a"] == {"runs": 2}
    assert session.state["b"] == {"runs": 2}


async def test_provider_tools_and_middleware_join_the_run() -> None:
    """SE-3: tools and chat/function middleware a provider adds are used for the run;
    agent middleware from a provider is a MiddlewareException."""
    seen: list[str] = []

    @chat_middleware
    async def spy(context: Any, call_next: Any) -> None:
        seen.append(f"chat {len(context.messages)}")
        await call_next()

    class Tools(ContextProvider):
        async def before_run(
            self, *, agent: Any, session: Any, context: SessionContext, state: Any
        ) -> None:
            context.extend_tools(self.source_id, [add])
            context.extend_middleware(self.source_id, spy)

    client = ScriptedChatClient([reply(call("add", {"a": 2, "b": 3})), "5"])
    agent = Agent(client, context_providers=[Tools("tools")])
    response = await agent.run("add")
    assert response.messages[1].contents[0].result == 5
    assert seen == ["chat 1", "chat 3"]

    @agent_middleware
    async def outer(context: Any, call_next: Any) -> None:
        await call_next()

    with pytest.raises(
        MiddlewareException, match="may only add chat or function middleware"
    ):
        SessionContext(input_messages=[]).extend_middleware("x", outer)


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


def test_messages_from_other_sessions_are_attributed():
    """SE-3: `extend_messages(source, messages, origin_session_ids=[...])` marks each
    copy with upstream's `_attribution` (source id, source type, origins each once);
    without origins no mark, and the given messages are never changed."""
    from minagent import InMemoryHistoryProvider, SessionContext

    context = SessionContext(session_id="s", input_messages=[])
    provider = InMemoryHistoryProvider()
    given = [Message("user", ["from elsewhere"])]
    context.extend_messages(provider, given, origin_session_ids=["a", "b", "a"])
    context.extend_messages("plain", given)
    marked = context.context_messages[provider.source_id][0]
    assert marked.additional_properties["_attribution"] == {
        "source_id": provider.source_id,
        "source_type": "InMemoryHistoryProvider",
        "origin_session_ids": ["a", "b"],
    }
    assert (
        "_attribution" not in context.context_messages["plain"][0].additional_properties
    )
    assert given[0].additional_properties == {}


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


async def test_without_a_session_providers_get_a_fresh_one() -> None:
    """SE-4: a run without a session gives the providers a new session each run (no
    history)."""
    sessions: list[AgentSession] = []

    class Spy(ContextProvider):
        async def before_run(
            self, *, agent: Any, session: AgentSession, context: Any, state: Any
        ) -> None:
            sessions.append(session)

    client = ScriptedChatClient(["a", "b"])
    agent = Agent(client, context_providers=[Spy()])
    await agent.run("one")
    await agent.run("two")
    assert len(sessions) == 2
    assert sessions[0] is not sessions[1]
    assert texts(client.requests[1].messages) == [("user", "two")]


async def test_an_untouched_state_entry_is_not_added() -> None:
    """SE-4: a provider that puts nothing in its state leaves no entry in
    session.state."""
    agent = Agent(
        ScriptedChatClient(["a"]), context_providers=[ContextProvider("quiet")]
    )
    session = agent.create_session()
    await agent.run("x", session=session)
    assert "quiet" not in session.state


def test_provider_ids_must_be_text() -> None:
    """SE-4: an empty source id is a ValueError; without one a provider is known by its
    class name."""
    with pytest.raises(ValueError, match="source_id"):
        ContextProvider("")
    assert ContextProvider().source_id == "ContextProvider"
    assert InMemoryHistoryProvider().source_id == "in_memory"


# -- SE-5: nothing of a failed run -------------------------------------------------------------


class Boom(Exception):
    pass


async def test_a_failed_run_stores_nothing(stream: bool) -> None:
    """SE-5: a run whose client fails runs no after_run: the history is as before."""

    def fail(messages: Any, options: Any) -> Any:
        raise Boom("down")

    client = ScriptedChatClient(["first", fail])
    agent = Agent(client)
    session = agent.create_session()
    await run(agent, "one", stream=stream, session=session)
    before = session.to_dict()
    with pytest.raises(Boom):
        await run(agent, "two", stream=stream, session=session)
    assert session.to_dict() == before


async def test_a_cancelled_or_abandoned_run_stores_nothing() -> None:
    """SE-5: a cancelled run and a stream closed early store nothing."""
    started = asyncio.Event()
    client = ScriptedChatClient(["never", "a b c"])
    agent = Agent(client)
    session = agent.create_session()
    task = asyncio.create_task(
        agent.run(
            "one", session=session, middleware=[slow_model(asyncio.Event(), started)]
        )
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.to_dict()["state"] == {}
    stream = agent.run("two", stream=True, session=session)
    async for _ in stream:
        break
    await stream.aclose()
    assert session.to_dict()["state"] == {}


@pytest.mark.usefixtures("no_descriptor_left")
@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
async def test_a_run_right_after_break_out_of_a_stream_gets_the_session(
    stream: bool, traced: bool
) -> None:
    """SE-19, ST-7: after `break` out of a run's stream, the next statement's run on the
    same session (either mode, traced or not) proceeds; the abandoned run stored nothing
    (SE-5)."""
    set_tracer(RecordingTracer() if traced else None)
    try:
        agent = Agent(ScriptedChatClient(["one two three four", "again"]))
        session = AgentSession()
        async for _update in agent.run("hi", stream=True, session=session):
            break
        answer = await run(agent, "next", stream=stream, session=session)
    finally:
        set_tracer(None)
    assert answer.text == "again"
    assert texts(session.state["in_memory"]["messages"]) == [
        ("user", "next"),
        ("assistant", "again"),
    ]


# -- SE-6, SE-7: history providers -------------------------------------------------------------


class ListHistory(HistoryProvider):
    def __init__(self, source_id: str = "list", **kwargs: Any) -> None:
        super().__init__(source_id, **kwargs)
        self.saved: dict[str, list[Message]] = {}
        self.calls = 0

    async def get_messages(
        self, session_id: str | None, *, state: Any = None, **kwargs: Any
    ) -> list[Message]:
        return list(self.saved.get(session_id or "", []))

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: Any = None,
        **kwargs: Any,
    ) -> None:
        self.calls += 1
        self.saved.setdefault(session_id or "", []).extend(messages)


async def test_a_history_provider_replaces_the_default(stream: bool) -> None:
    """SE-6, SE-8: with a HistoryProvider that loads, the default in-memory history is
    not used; after_run saves input and response (tool calls and results included) in
    one call."""
    history = ListHistory()
    client = ScriptedChatClient([reply(call("add", {"a": 1, "b": 1})), "2", "again"])
    agent = Agent(client, tools=[add], context_providers=[history])
    session = agent.create_session()
    await run(agent, "add", stream=stream, session=session)
    assert history.calls == 1
    await run(agent, "more", stream=stream, session=session)
    assert "in_memory" not in session.state
    kinds = [c.type for m in client.requests[2].messages for c in m.contents]
    assert kinds == ["text", "function_call", "function_result", "text", "text"]
    assert history.calls == 2
    assert len(history.saved[session.session_id]) == 6


async def test_history_flags_choose_what_is_stored_and_loaded() -> None:
    """SE-6: store_inputs / store_outputs / store_context_messages / store_context_from
    and
    load_messages=False (the agent then skips before_run; an audit log)."""

    class Facts(ContextProvider):
        async def before_run(
            self, *, agent: Any, session: Any, context: SessionContext, state: Any
        ) -> None:
            context.extend_messages(self.source_id, [Message("system", ["fact"])])

    outputs_only = ListHistory("out", store_inputs=False)
    with_context = ListHistory("ctx", store_context_messages=True, load_messages=False)
    only_facts = ListHistory(
        "facts_only",
        store_context_from={"facts"},
        store_context_messages=True,
        store_outputs=False,
        store_inputs=False,
        load_messages=False,
    )
    client = ScriptedChatClient(["answer", "answer 2"])
    agent = Agent(
        client,
        context_providers=[Facts("facts"), outputs_only, with_context, only_facts],
    )
    session = agent.create_session()
    await agent.run("q", session=session)
    await agent.run("q2", session=session)
    sid = session.session_id
    assert texts(outputs_only.saved[sid]) == [
        ("assistant", "answer"),
        ("assistant", "answer 2"),
    ]
    assert texts(with_context.saved[sid])[:3] == [
        ("system", "fact"),
        ("user", "q"),
        ("assistant", "answer"),
    ]
    assert texts(only_facts.saved[sid]) == [("system", "fact"), ("system", "fact")]
    # the audit providers never loaded: the second request holds the outputs-only
    # history, not theirs
    assert texts(client.requests[1].messages) == [
        ("system", "fact"),
        ("assistant", "answer"),
        ("user", "q2"),
    ]


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


async def test_in_memory_history_keeps_its_own_copies() -> None:
    """SE-7: the in-memory history stores copies: changing the response later changes
    nothing."""
    agent = Agent(
        ScriptedChatClient(["a"]), context_providers=[InMemoryHistoryProvider("mem")]
    )
    session = agent.create_session()
    response = await agent.run("q", session=session)
    response.messages[0].contents.append(Content.from_text("changed"))
    assert [m.text for m in session.state["mem"]["messages"]] == ["q", "a"]


async def test_service_conversation_id_switches_the_session() -> None:
    """SE-8: a response with a conversation_id sets service_session_id and is not stored
    locally; later runs send only their input with options["conversation_id"]."""
    from minagent import ChatResponse

    client = ScriptedChatClient(
        [
            ChatResponse([Message("assistant", ["hi"])], conversation_id="conv_9"),
            "again",
        ]
    )
    agent = Agent(client)
    session = agent.create_session()
    await agent.run("one", session=session)
    assert session.service_session_id == "conv_9"
    assert "in_memory" not in session.to_dict()["state"]
    await agent.run("two", session=session)
    assert texts(client.requests[1].messages) == [("user", "two")]
    assert client.requests[1].options["conversation_id"] == "conv_9"


# -- SE-10: thread-era providers ----------------------------------------------------------------


async def test_thread_era_providers_work_with_sessions(stream: bool) -> None:
    """SE-10: invoking/invoked providers (a subclass without __init__, and a duck-typed
    object) run through before_run/after_run with thread= the caller's session."""
    seen: list[Any] = []

    class Old(ContextProvider):
        async def invoking(self, messages: Any, **kwargs: Any) -> Context:
            seen.append(("invoking", [m.text for m in messages], kwargs["thread"]))
            return Context(
                instructions="old", messages=[Message("user", ["old context"])]
            )

        async def invoked(
            self, request_messages: Any, response_messages: Any, **kwargs: Any
        ) -> None:
            seen.append(
                ("invoked", [m.text for m in response_messages], kwargs["thread"])
            )

    class Duck:
        async def invoking(self, messages: Any, **kwargs: Any) -> Context:
            return Context(instructions="duck")

        async def invoked(self, *args: Any, **kwargs: Any) -> None:
            seen.append("duck invoked")

    client = ScriptedChatClient(["answer"])
    agent = Agent(client, context_providers=[Old(), Duck()])  # type: ignore[list-item]
    session = agent.create_session()
    await run(agent, "q", stream=stream, session=session)
    assert seen == [
        ("invoking", ["q"], session),
        "duck invoked",
        ("invoked", ["answer"], session),
    ]
    assert client.requests[0].options["instructions"] == "old\nduck"
    assert texts(client.requests[0].messages) == [
        ("user", "old context"),
        ("user", "q"),
    ]
    assert "Old" not in session.state


async def test_a_thread_era_provider_returning_none_adds_nothing() -> None:
    """SE-10: invoking() that returns None (no Context) adds nothing to the run."""

    class Quiet(ContextProvider):
        async def invoking(self, messages: Any, **kwargs: Any) -> Context:
            return None  # type: ignore[return-value]

    client = ScriptedChatClient(["a"])
    await Agent(client, context_providers=[Quiet()]).run("q")
    assert [m.text for m in client.requests[0].messages] == ["q"]
    assert "instructions" not in client.requests[0].options


# -- SE-11 ----------------------------------------------------------------------------------------


async def test_session_store_keeps_copies() -> None:
    """SE-11: get returns an independent copy or None; set stores a copy; delete
    forgets; bad ids are ValueErrors."""
    store = SessionStore()
    session = AgentSession(session_id="s", state={"k": [1]})
    await store.set("s", session)
    session.state["k"].append(2)
    got = await store.get("s")
    assert got is not None
    assert got.state == {"k": [1]}
    got.state["k"].append(3)
    assert (await store.get("s")).state == {"k": [1]}  # type: ignore[union-attr]
    await store.delete("s")
    assert await store.get("s") is None
    with pytest.raises(ValueError, match="session_id"):
        await store.get("")


# -- SE-12: the concurrency rule --------------------------------------------------------------


def slow_model(gate: asyncio.Event, started: asyncio.Event) -> Any:
    """Chat middleware that holds the model call until ``gate`` is set."""

    @chat_middleware
    async def hold(context: Any, call_next: Any) -> None:
        started.set()
        await gate.wait()
        await call_next()

    return hold


async def test_a_second_run_on_a_running_session_is_rejected(stream: bool) -> None:
    """SE-12: a second run on a running session raises SessionBusyError before anything
    runs; the first finishes unaffected; then the session is free again. Other sessions
    run meanwhile."""
    gate, started = asyncio.Event(), asyncio.Event()
    client = ScriptedChatClient(["other", "done", "next"])
    agent = Agent(client)
    session = agent.create_session()
    first = asyncio.create_task(
        run(
            agent,
            "one",
            stream=stream,
            session=session,
            middleware=[slow_model(gate, started)],
        )
    )
    await started.wait()
    with pytest.raises(SessionBusyError, match=session.session_id):
        await run(agent, "two", stream=stream, session=session)
    # the same session through the other spelling, another agent
    with pytest.raises(SessionBusyError):
        await run(
            Agent(client),
            "two",
            stream=stream,
            thread=AgentThread.deserialize(
                {"type": "agent_thread", "version": 1, "thread_id": session.session_id}
            ),
        )
    assert (
        await run(agent, "elsewhere", stream=stream, session=agent.create_session())
    ).text == "other"
    gate.set()
    assert (await first).text == "done"
    assert len(client.requests) == 2
    assert (await run(agent, "three", stream=stream, session=session)).text == "next"
    assert [m.text for m in session.state["in_memory"]["messages"]] == [
        "one",
        "done",
        "three",
        "next",
    ]


async def test_the_session_is_freed_however_the_run_ends() -> None:
    """SE-12: after a failed run and a stream closed early the session takes a new
    run."""

    def fail(messages: Any, options: Any) -> Any:
        raise Boom("x")

    client = ScriptedChatClient([fail, "a b", "ok"])
    agent = Agent(client)
    session = agent.create_session()
    with pytest.raises(Boom):
        await agent.run("one", session=session)
    stream = agent.run("two", stream=True, session=session)
    async for _ in stream:
        break
    await stream.aclose()
    assert (await agent.run("three", session=session)).text == "ok"


async def test_fifty_concurrent_runs_on_separate_sessions() -> None:
    """SE-12, TH-5: 50 runs on 50 sessions at once with the in-memory history: each
    keeps its own turn."""

    def echo(messages: Any, options: Any) -> str:
        return f"echo {messages[-1].text}"

    agent = Agent(ScriptedChatClient([echo] * 50))
    sessions = [agent.create_session() for _ in range(50)]
    await asyncio.gather(
        *(agent.run(f"q{i}", session=s) for i, s in enumerate(sessions))
    )
    for i, session in enumerate(sessions):
        assert texts(session.state["in_memory"]["messages"]) == [
            ("user", f"q{i}"),
            ("assistant", f"echo q{i}"),
        ]


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


@pytest.mark.usefixtures("no_descriptor_left")
async def test_a_run_that_still_holds_the_session_is_waited_for_then_busy() -> None:
    """SE-19, SE-12: a second run waits for a first that really runs, up to the bound,
    then is SessionBusyError; once the first ends, the session takes a new run."""
    gate, started = asyncio.Event(), asyncio.Event()

    @chat_middleware
    async def hold(context: Any, call_next: Any) -> None:
        started.set()
        await gate.wait()
        await call_next()

    agent = Agent(ScriptedChatClient(["first", "third"]))
    session = AgentSession()
    first = asyncio.create_task(agent.run("1", session=session, middleware=[hold]))
    await started.wait()
    with pytest.raises(SessionBusyError):
        await agent.run("2", session=session)
    gate.set()
    assert (await first).text == "first"
    assert (await agent.run("3", session=session)).text == "third"


async def test_get_session_continues_a_service_conversation(stream: bool) -> None:
    """SE-1, SE-8: a session from get_session(id) sends only the input, with
    options["conversation_id"] set to that id, and keeps no local history."""
    client = ScriptedChatClient(["later"])
    agent = Agent(client)
    session = agent.get_session("conv_7")
    await run(agent, "continue", stream=stream, session=session)
    assert texts(client.requests[0].messages) == [("user", "continue")]
    assert client.requests[0].options["conversation_id"] == "conv_7"
    assert session.to_dict()["state"] == {}


def test_session_repr_and_equality() -> None:
    """SE-1, SE-2: a session shows its id; it equals only sessions of its own data."""
    session = AgentSession(session_id="s1")
    assert repr(session) == "<AgentSession s1>"
    assert session == AgentSession(session_id="s1")
    assert session != AgentSession(session_id="s2")
    assert session != "s1"
    with pytest.raises(ValueError, match="session_id"):
        AgentSession(session_id=3)  # type: ignore[arg-type]


class _ClosesBadly(ScriptedChatClient):
    """A client whose stream's `finally` raises when the stream is closed early."""

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        try:
            async for update in super()._inner_get_streaming_response(
                messages=messages, options=options, **kwargs
            ):
                yield update
        finally:
            if self.position == 1:
                raise ConnectionError("the connection broke while closing")


async def test_a_stream_that_fails_while_closing_frees_its_session() -> None:
    """SE-12, ST-6: a streamed run left early whose model stream fails while closing
    raises that failure, and its session is free for the next run."""
    agent = Agent(_ClosesBadly([text_chunks("one ", "two ", "three"), "again"]))
    session = agent.create_session()
    stream = agent.run("hi", stream=True, session=session)
    reader = aiter(stream)
    assert (await anext(reader)).text == "one "
    with pytest.raises(ConnectionError, match="while closing"):
        await stream.aclose()
    assert session.session_id not in _RUNNING
    response = await agent.run("again?", session=session)
    assert response.text == "again"
