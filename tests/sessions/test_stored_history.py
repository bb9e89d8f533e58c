"""A run never changes a message of a session's stored history, whatever layer edits the
messages it is shown and however the run ends (spec/sessions.md SE-52, SE-53).

Every layer that is shown the history gets its own copies of the stored messages, made
the first time it reads them: a tool and function middleware (through
``FunctionInvocationContext.messages``), chat middleware (``ChatContext.messages``), a
context provider after the history provider (``context_messages``, ``get_messages()``,
in ``before_run`` and ``after_run``); agent middleware edits the run's own response,
which the store keeps its own copies of. Each case edits in place, then the run fails
(the next model call raises, function middleware raises, a provider's ``after_run``
raises, agent middleware raises), on the in-memory history, SQLite and the plain-file
store, in both modes; the stored history must read back exactly as before.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentSession,
    ChatMiddleware,
    Content,
    ContextProvider,
    FunctionInvocationContext,
    FunctionMiddleware,
    HistoryProvider,
    Message,
    SessionContext,
    agent_middleware,
    function_middleware,
    tool,
)
from minagent.stores import FileHistoryProvider, SQLiteHistoryProvider
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run

STORES = ["in-memory", "sqlite", "file"]

Edit = Callable[[Message], None]
# what a layer does to the messages it is shown
Editor = Callable[[Sequence[Message]], None]


def vandalise(m: Message) -> None:
    """Every in-place edit a layer can make to a message it was shown: its contents'
    fields and additional properties, its contents list, its own fields and
    properties."""
    for c in m.contents:
        c.text = "EDITED"
        c.call_id = "forged"
        c.additional_properties["edited"] = True
    m.contents.append(Content.from_text("EDITED"))
    m.additional_properties["edited"] = True
    m.author_name = "mallory"
    m.role = "system"
    m.message_id = "forged"


def _edit_text(m: Message) -> None:
    m.contents[0].text = "EDITED"


def _edit_call_id(m: Message) -> None:
    m.contents[0].call_id = "forged"


def _edit_content_property(m: Message) -> None:
    m.contents[0].additional_properties["edited"] = True


def _append_content(m: Message) -> None:
    m.contents.append(Content.from_text("EDITED"))


def _replace_content(m: Message) -> None:
    m.contents[0] = Content.from_text("EDITED")


def _remove_contents(m: Message) -> None:
    m.contents.clear()


def _edit_message_property(m: Message) -> None:
    m.additional_properties["edited"] = True


def _edit_role(m: Message) -> None:
    m.role = "system"


def _edit_author(m: Message) -> None:
    m.author_name = "mallory"


EDITS: list[Edit] = [
    vandalise,
    _edit_text,
    _edit_call_id,
    _edit_content_property,
    _append_content,
    _replace_content,
    _remove_contents,
    _edit_message_property,
    _edit_role,
    _edit_author,
]


class Boom(RuntimeError):
    """The failure that ends the run."""


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# -- the stores -------------------------------------------------------------------------------


def _history(store: str, folder: Path) -> HistoryProvider | None:
    """The store's history provider; None: the default in-memory history (SE-8)."""
    if store == "sqlite":
        return SQLiteHistoryProvider("history", path=folder / "history.db")
    if store == "file":
        return FileHistoryProvider(folder / "files", source_id="history")
    return None


async def _stored(history: HistoryProvider | None, session: AgentSession) -> list[Any]:
    """The session's stored history as data: what the store reads back."""
    if history is None:
        return [m.to_dict() for m in session.state["in_memory"]["messages"]]
    state = session.state.get(history.source_id or "")
    loaded = await history.get_messages(session.session_id, state=state)
    return [m.to_dict() for m in loaded]


async def _seed(
    store: str, folder: Path, stream: bool
) -> tuple[HistoryProvider | None, AgentSession, list[Any]]:
    """A session whose history holds one exchange with a tool call (a question, the
    call, its result, the answer), saved by a real run."""
    history = _history(store, folder)
    agent = Agent(
        ScriptedChatClient([reply(call("add", {"a": 1, "b": 2}, call_id="c0")), "a0"]),
        tools=[add],
        context_providers=[history] if history is not None else None,
    )
    session = agent.create_session()
    await run(agent, "q0", stream=stream, session=session)
    stored = await _stored(history, session)
    assert len(stored) == 4
    return history, session, stored


def _unchanged(before: list[Any], after: list[Any]) -> None:
    assert after == before
    for marker in ("EDITED", "forged", "mallory", "edited"):
        assert marker not in json.dumps(after)


# -- the layers -------------------------------------------------------------------------------


def _edit_all(messages: Sequence[Message]) -> None:
    for m in messages:
        vandalise(m)


def _edit_one(at: int, edit: Edit) -> Editor:
    """An editor of the message at ``at`` (the stored history comes first in what every
    layer is shown)."""

    def editor(messages: Sequence[Message]) -> None:
        edit(messages[at])

    return editor


class EditingProvider(ContextProvider):
    """A context provider after the history provider: edits every context message in
    place, in ``before_run`` or in ``after_run``, through ``context_messages`` or
    ``get_messages()``."""

    def __init__(self, hook: str, read: str, edit: Editor = _edit_all) -> None:
        super().__init__("editor")
        self.hook, self.read, self.edit = hook, read, edit
        self.seen = 0

    def _vandalise(self, context: SessionContext) -> None:
        messages = (
            [m for ms in context.context_messages.values() for m in ms]
            if self.read == "context_messages"
            else context.get_messages()
        )
        self.seen += len(messages)
        self.edit(messages)

    async def before_run(self, *, agent, session, context, state):  # type: ignore[no-untyped-def]  # as users write it
        if self.hook == "before_run":
            self._vandalise(context)

    async def after_run(self, *, agent, session, context, state):  # type: ignore[no-untyped-def]  # as users write it
        if self.hook == "after_run":
            self._vandalise(context)


class FailingAfterRun(ContextProvider):
    """A provider whose ``after_run`` fails the run (SE-5)."""

    def __init__(self) -> None:
        super().__init__("failing")

    async def after_run(self, *, agent, session, context, state):  # type: ignore[no-untyped-def]  # as users write it
        raise Boom("after_run failed")


class EditingChatMiddleware(ChatMiddleware):
    def __init__(self, edit: Editor = _edit_all) -> None:
        self.edit = edit

    async def process(self, context, call_next):  # type: ignore[no-untyped-def]  # as users write it
        self.edit(context.messages)
        await call_next()


class EditingFunctionMiddleware(FunctionMiddleware):
    """Edits every message of the transcript before the tool; raises after it when
    ``fail``."""

    def __init__(self, fail: bool, edit: Editor = _edit_all) -> None:
        self.fail, self.edit = fail, edit

    async def process(self, context, call_next):  # type: ignore[no-untyped-def]  # as users write it
        self.edit(context.messages)
        await call_next()
        if self.fail:
            raise Boom("function middleware failed")


class FailingFunctionMiddleware(FunctionMiddleware):
    async def process(self, context, call_next):  # type: ignore[no-untyped-def]  # as users write it
        await call_next()
        raise Boom("function middleware failed")


def _editing_tool(edit: Editor = _edit_all) -> Any:
    @tool
    def probe(ctx: FunctionInvocationContext) -> str:
        """Look at the conversation."""
        edit(ctx.messages)
        return "looked"

    return probe


def _probe_script() -> list[Any]:
    """The failing run's model: one call of ``probe``, then the model raises."""
    return [reply(call("probe", {}, call_id="p1")), Boom("the model failed")]


# (layer, failure): what edits, and what makes the run fail after the edit
CASES = [
    ("tool", "the next model call raises"),
    ("tool", "function middleware raises"),
    ("function middleware", "the next model call raises"),
    ("function middleware", "it raises itself"),
    ("chat middleware", "the model call raises"),
    ("provider before_run, context_messages", "the model call raises"),
    ("provider before_run, get_messages()", "the model call raises"),
    ("provider after_run, context_messages", "an earlier provider's after_run raises"),
    ("provider after_run, get_messages()", "an earlier provider's after_run raises"),
]


def _failing_agent(
    layer: str,
    failure: str,
    history: HistoryProvider | None,
    edit: Editor = _edit_all,
) -> Agent:
    providers: list[Any] = [history] if history is not None else []
    middleware: list[Any] = []
    tools: list[Any] = []
    script: list[Any] = [Boom("the model failed")]
    if layer == "tool":
        tools = [_editing_tool(edit)]
        script = _probe_script()
        if failure == "function middleware raises":
            middleware = [FailingFunctionMiddleware()]
            script = script[:1]
    elif layer == "function middleware":
        tools = [_editing_tool(lambda messages: None)]
        script = _probe_script()
        middleware = [
            EditingFunctionMiddleware(fail=failure == "it raises itself", edit=edit)
        ]
        if failure == "it raises itself":
            script = script[:1]
    elif layer == "chat middleware":
        middleware = [EditingChatMiddleware(edit)]
    elif layer.startswith("provider"):
        hook = "before_run" if "before_run" in layer else "after_run"
        read = "context_messages" if "context_messages" in layer else "get_messages"
        if hook == "after_run":
            providers.append(FailingAfterRun())
            script = ["a1"]
        providers.append(EditingProvider(hook, read, edit))
    else:  # pragma: no cover
        raise AssertionError(layer)
    return Agent(
        ScriptedChatClient(script),
        tools=tools or None,
        middleware=middleware or None,
        context_providers=providers or None,
    )


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize(
    ("layer", "failure"), CASES, ids=[f"{a}; {b}" for a, b in CASES]
)
async def test_an_in_place_edit_never_survives_a_failed_run(
    stream: bool, store: str, layer: str, failure: str, tmp_path: Path
) -> None:
    """SE-52, SE-53, SE-5: a layer that edits, in place, every message of the history it
    is shown — a tool through ``FunctionInvocationContext.messages``, function
    middleware, chat middleware, a context provider after the history provider (through
    ``context_messages`` or ``get_messages()``, in ``before_run`` or ``after_run``) —
    followed by a failure of the run, leaves the stored history reading back exactly as
    before the run, and the next run sends it unedited; on the in-memory history,
    SQLite and the plain-file store, in both modes."""
    history, session, before = await _seed(store, tmp_path, stream)
    agent = _failing_agent(layer, failure, history)
    with pytest.raises(Boom):
        await run(agent, "q1", stream=stream, session=session)
    _unchanged(before, await _stored(history, session))
    # the next run is sent the history as it was stored
    client = ScriptedChatClient(["a2"])
    again = Agent(client, context_providers=[history] if history is not None else None)
    await run(again, "q2", stream=stream, session=session)
    assert [m.to_dict() for m in client.requests[0].messages[:4]] == before


@pytest.mark.parametrize("store", STORES)
async def test_an_in_place_edit_never_survives_a_cancelled_run(
    stream: bool, store: str, tmp_path: Path
) -> None:
    """SE-52, SE-53, SE-5: a tool that edits every message of the transcript in place
    and is then cancelled with its run (the task running it is cancelled) leaves the
    stored history reading back exactly as before, in both modes, in every store."""
    history, session, before = await _seed(store, tmp_path, stream)
    reached = asyncio.Event()

    @tool
    async def stall(ctx: FunctionInvocationContext) -> str:
        """Edit, then wait for ever."""
        _edit_all(ctx.messages)
        reached.set()
        await asyncio.Event().wait()
        return "never"

    agent = Agent(
        ScriptedChatClient([reply(call("stall", {}, call_id="s1"))]),
        tools=[stall],
        context_providers=[history] if history is not None else None,
    )
    task = asyncio.ensure_future(run(agent, "q1", stream=stream, session=session))
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _unchanged(before, await _stored(history, session))


@pytest.mark.parametrize("store", STORES)
async def test_a_resumed_call_is_shown_as_the_runs_own_copy(
    stream: bool, store: str, tmp_path: Path
) -> None:
    """SE-52, SE-53, LP-14: when a run resumes a call the caller approved, the stored
    message holding the call (its approval request taken out) is shown to the tool as
    the run's own copy, its contents included: a tool that edits every message of the
    transcript and a model that then fails leave the stored history, the paused call
    and its request, reading back exactly as before, in both modes, in every store."""
    history = _history(store, tmp_path)
    providers = [history] if history is not None else None

    @tool(approval_mode="always_require")
    def guarded(ctx: FunctionInvocationContext) -> str:
        """A tool that needs approval and edits what it sees."""
        _edit_all(ctx.messages)
        return "ran"

    agent = Agent(
        ScriptedChatClient(
            [reply(call("guarded", {}, call_id="g1")), Boom("the model failed")]
        ),
        tools=[guarded],
        context_providers=providers,
    )
    session = agent.create_session()
    paused = await run(agent, "do it", stream=stream, session=session)
    (request,) = paused.user_input_requests
    before = await _stored(history, session)
    assert any(c["type"] == "function_approval_request" for c in before[1]["contents"])
    answer = Message("user", [request.to_function_approval_response(True)])
    with pytest.raises(Boom):
        await run(agent, [answer], stream=stream, session=session)
    _unchanged(before, await _stored(history, session))


async def test_after_a_resumed_batch_the_given_messages_are_still_lent(
    stream: bool,
) -> None:
    """SE-53, LP-14: in a run that resumes an approved call, the messages that follow
    the call's message (here the caller's second input message, held out of the
    transcript while the resumed batch runs) are lent as copies to the tools of later
    batches too: a tool that edits every message it is shown, then a failing model,
    change neither the stored history nor the caller's message, in both modes."""

    @tool(approval_mode="always_require")
    def guarded(ctx: FunctionInvocationContext) -> str:
        """A tool that needs approval and reads the transcript (without editing)."""
        return f"ran after {len(list(ctx.messages))} messages"

    agent = Agent(
        ScriptedChatClient(
            [
                reply(call("guarded", {}, call_id="g1")),
                reply(call("probe", {}, call_id="p1")),
                Boom("the model failed"),
            ]
        ),
        tools=[guarded, _editing_tool()],
    )
    session = agent.create_session()
    paused = await run(agent, "do it", stream=stream, session=session)
    (request,) = paused.user_input_requests
    before = await _stored(None, session)
    answer = Message("user", [request.to_function_approval_response(True)])
    also = Message("user", ["and then this"])
    with pytest.raises(Boom):
        await run(agent, [answer, also], stream=stream, session=session)
    assert also.to_dict() == Message("user", ["and then this"]).to_dict()
    _unchanged(before, await _stored(None, session))


@pytest.mark.parametrize("store", STORES)
async def test_an_edit_by_agent_middleware_never_reaches_the_stored_copies(
    stream: bool, store: str, tmp_path: Path
) -> None:
    """SE-52, SE-53: agent middleware that edits the run's response in place after
    ``call_next`` (its messages, their contents and properties) and then fails the run
    changes nothing the store holds: the store's messages are its own copies, so the
    history holds the model's answer as it was, in both modes, in every store."""
    history, session, before = await _seed(store, tmp_path, stream)

    def vandalise_response(response: Any) -> Any:
        _edit_all(response.messages)
        raise Boom("agent middleware failed")

    @agent_middleware
    async def edits_the_answer(context, call_next):  # type: ignore[no-untyped-def]  # as users write it
        if context.stream:
            context.stream_result_hooks.append(vandalise_response)
            await call_next()
        else:
            await call_next()
            vandalise_response(context.result)

    agent = Agent(
        ScriptedChatClient(["a1"]),
        middleware=[edits_the_answer],
        context_providers=[history] if history is not None else None,
    )
    with pytest.raises(Boom):
        await run(agent, "q1", stream=stream, session=session)
    after = await _stored(history, session)
    # the inner run succeeded, so its messages were saved (SE-5), as the model gave them
    _unchanged(before, after[:4])
    assert [(m["role"], m["contents"][0]["text"]) for m in after[4:]] == [
        ("user", "q1"),
        ("assistant", "a1"),
    ]
    assert "EDITED" not in json.dumps(after)


@pytest.mark.parametrize("store", STORES)
async def test_a_tool_edit_reaches_the_rest_of_the_run_but_not_the_store(
    stream: bool, store: str, tmp_path: Path
) -> None:
    """SE-53, design decision 2: ``FunctionInvocationContext.messages`` stays the run's
    live transcript — a tool's in-place edit of a history message is what the run's
    next model call receives — but the edit is made to the run's own copy: after the run
    succeeds the store reads back the history as before, with the run's messages after
    it, in both modes, in every store."""
    history, session, before = await _seed(store, tmp_path, stream)

    @tool
    def rewrite(ctx: FunctionInvocationContext) -> str:
        """Rewrite the first question."""
        ctx.messages[0].contents[0].text = "q0, rewritten"
        ctx.messages[0].additional_properties["rewritten"] = True
        return "done"

    client = ScriptedChatClient([reply(call("rewrite", {}, call_id="r1")), "a1"])
    agent = Agent(
        client,
        tools=[rewrite],
        context_providers=[history] if history is not None else None,
    )
    await run(agent, "q1", stream=stream, session=session)
    # the run's second model call got the edit ...
    assert client.requests[1].messages[0].text == "q0, rewritten"
    assert client.requests[0].messages[0].text == "q0"
    # ... the store did not
    after = await _stored(history, session)
    assert after[:4] == before
    assert "rewritten" not in json.dumps(after)
    assert len(after) == 8  # the question, the call, its result, the answer


async def test_the_callers_input_is_never_edited_through_the_transcript(
    stream: bool,
) -> None:
    """SE-53: the input messages the caller passed are shown to tools as the run's own
    copies: a tool's in-place edit changes neither the caller's objects nor the stored
    input, in both modes."""
    question = Message("user", ["what is 1 + 2?"])
    client = ScriptedChatClient([reply(call("probe", {}, call_id="p1")), "3"])
    agent = Agent(client, tools=[_editing_tool()])
    session = agent.create_session()
    await run(agent, [question], stream=stream, session=session)
    assert question.to_dict() == Message("user", ["what is 1 + 2?"]).to_dict()
    stored = session.state["in_memory"]["messages"]
    assert stored[0].to_dict() == question.to_dict()
    assert client.requests[1].messages[0].role == "system"  # the run's copy was edited


# -- any edit of any stored message, by any layer ---------------------------------------------


def _turn(i: int, text: str, with_tool: bool) -> list[Message]:
    out = [Message("user", [text])]
    if with_tool:
        out.append(
            Message(
                "assistant",
                [Content.from_function_call(f"old{i}", "add", '{"a": 1, "b": 2}')],
                additional_properties={"turn": i},
            )
        )
        out.append(Message("tool", [Content.from_function_result(f"old{i}", "3")]))
    out.append(Message("assistant", [f"answer {i}"], author_name="bot"))
    return out


histories = st.lists(
    st.tuples(st.text(max_size=12), st.booleans()), min_size=1, max_size=5
).map(
    lambda turns: [
        m
        for i, (text, with_tool) in enumerate(turns)
        for m in _turn(i, text, with_tool)
    ]
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    past=histories,
    edit=st.sampled_from(EDITS),
    case=st.sampled_from(CASES),
    store=st.sampled_from(STORES),
    stream=st.booleans(),
    data=st.data(),
)
def test_no_edit_of_any_stored_message_survives_a_failed_run(
    past: list[Message],
    edit: Edit,
    case: tuple[str, str],
    store: str,
    stream: bool,
    data: st.DataObject,
) -> None:
    """SE-52, SE-53: for any stored history (with and without tool calls), any one
    in-place edit (a content's field or properties, the contents list, the message's
    fields or properties) of any one stored message, made by any layer the history is
    shown to, followed by the run's failure, leaves the store reading back exactly as
    before, in either mode, in every store."""
    at = data.draw(st.integers(0, len(past) - 1), label="edited message")
    layer, failure = case

    with tempfile.TemporaryDirectory() as folder:
        history = _history(store, Path(folder))
        session = AgentSession()
        if history is None:
            session.state["in_memory"] = {"messages": list(past)}
        else:
            asyncio.run(history.save_messages(session.session_id, past, state={}))
        before = asyncio.run(_stored(history, session))
        agent = _failing_agent(layer, failure, history, _edit_one(at, edit))
        with pytest.raises(Boom):
            asyncio.run(run(agent, "next", stream=stream, session=session))
        assert asyncio.run(_stored(history, session)) == before


class UpstreamChatMiddleware(ChatMiddleware):
    """Chat middleware as upstream's samples write it: un-annotated, ``next(context)``."""

    async def process(self, context, next):  # type: ignore[no-untyped-def]  # as upstream's samples write it
        for message in context.messages:
            message.contents[0].text = "EDITED"
        await next(context)


@function_middleware
async def upstream_function_middleware(context, next):  # type: ignore[no-untyped-def]  # as upstream's samples write it
    for message in context.messages:
        message.author_name = "mallory"
    await next(context)
    raise Boom("function middleware failed")


@pytest.mark.parametrize("store", STORES)
async def test_upstream_spelled_middleware_edits_reach_no_store(
    store: str, stream: bool, tmp_path: Path
) -> None:
    """SE-52, SE-53: middleware written the way upstream's samples write it (an
    un-annotated class with ``process(self, context, next)`` and a function with
    ``(context, next)`` under ``@function_middleware``, both calling ``await next(context)``) edits every message it is
    shown in place, then the run fails; the stored history reads back as before."""
    history, session, before = await _seed(store, tmp_path, stream)
    agent = Agent(
        ScriptedChatClient([reply(call("add", {"a": 2, "b": 3}, call_id="c1")), "a1"]),
        tools=[add],
        context_providers=[history] if history is not None else None,
        middleware=[UpstreamChatMiddleware(), upstream_function_middleware],
    )
    with pytest.raises(Boom):
        await run(agent, "q1", stream=stream, session=session)
    _unchanged(before, await _stored(history, session))
