"""Sessions, context providers and history providers (spec/sessions.md SE-1 to
SE-12)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentResponse,
    AgentSession,
    AgentThread,
    Content,
    Context,
    ContextProvider,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    MiddlewareException,
    SerializationError,
    SessionBusyError,
    SessionContext,
    SessionStore,
    agent_middleware,
    chat_middleware,
    register_state_type,
    set_tracer,
    tool,
)
from minagent._sessions import _RUNNING, claim, release
from minagent.testing import ScriptedChatClient, call, reply
from minagent.upstream import (
    AgentInvalidRequestException,
)
from tests._support.modes import run
from tests._support.strategies import messages as message_strategy

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


def test_session_repr_and_equality() -> None:
    """SE-1, SE-2: a session shows its id; it equals only sessions of its own data."""
    session = AgentSession(session_id="s1")
    assert repr(session) == "<AgentSession s1>"
    assert session == AgentSession(session_id="s1")
    assert session != AgentSession(session_id="s2")
    assert session != "s1"
    with pytest.raises(ValueError, match="session_id"):
        AgentSession(session_id=3)  # type: ignore[arg-type]
