"""What a session run costs: copies and checks of the stored history (spec/sessions.md
SE-50, SE-51)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    ChatMiddleware,
    Content,
    ContextProvider,
    Message,
    chat_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _turn(i: int, text: str, with_tool: bool) -> list[Message]:
    """One earlier exchange: a question, optionally a call and its result, an answer."""
    out = [Message("user", [text])]
    if with_tool:
        out.append(
            Message(
                "assistant",
                [Content.from_function_call(f"old{i}", "add", '{"a": 1, "b": 2}')],
            )
        )
        out.append(Message("tool", [Content.from_function_result(f"old{i}", "3")]))
    out.append(Message("assistant", [f"answer {i}"]))
    return out


histories = st.lists(st.tuples(st.text(max_size=20), st.booleans()), max_size=8).map(
    lambda turns: [
        m
        for i, (text, with_tool) in enumerate(turns)
        for m in _turn(i, text, with_tool)
    ]
)


# The ``stream`` fixture is one bool for every example: reusing it is what is meant.
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(past=histories)
def test_a_session_run_sends_what_an_argument_run_sends(
    stream: bool, past: list[Message]
) -> None:
    """SE-50: a run on a session whose history holds N messages sends the provider the
    same messages as the same run with those messages passed as arguments, and the
    stored messages themselves (not copies), in both modes."""
    asyncio.run(_compare(stream, past))


async def _compare(stream: bool, past: list[Message]) -> None:
    by_arguments = ScriptedChatClient(["done"])
    await run(Agent(by_arguments), [*past, Message("user", ["next"])], stream=stream)
    by_session = ScriptedChatClient(["done"])
    agent = Agent(by_session)
    session = agent.create_session()
    stored = list(past)
    session.state["in_memory"] = {"messages": stored}
    await run(agent, "next", stream=stream, session=session)
    sent_by_arguments, sent_by_session = (
        by_arguments.requests[0].messages,
        by_session.requests[0].messages,
    )
    assert sent_by_session == sent_by_arguments
    assert all(a is b for a, b in zip(sent_by_session[: len(past)], past, strict=True))
    # the input and the answer were saved
    assert len(session.state["in_memory"]["messages"]) == len(past) + 2


async def test_ten_runs_copy_each_stored_message_once(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-50, SE-7: across ten runs of one session (each with a tool call), every
    message the session stores is copied exactly once (when it is saved) and no stored
    message is ever copied again; each run sends the whole history."""
    steps: list[Any] = []
    for i in range(10):
        steps += [reply(call("add", {"a": i, "b": 1}, call_id=f"c{i}")), f"sum {i}"]
    client = ScriptedChatClient(steps)
    agent = Agent(client, tools=[add])
    session = agent.create_session()
    copied: Counter[int] = Counter()
    sources: list[Message] = []  # kept alive, so no other object takes one of their ids
    original = Message.with_contents

    def counting(self: Message, contents: Any) -> Message:
        copied[id(self)] += 1
        sources.append(self)
        return original(self, contents)

    monkeypatch.setattr(Message, "with_contents", counting)
    for i in range(10):
        await run(agent, f"question {i}", stream=stream, session=session)
    stored = session.state["in_memory"]["messages"]
    assert len(stored) == 40  # per run: the question, the call, the result, the answer
    assert not any(copied[id(m)] for m in stored)  # a stored message is never copied
    # every stored message is one copy, made when saved
    assert sum(copied.values()) == len(stored)
    last = client.requests[-1].messages
    assert [m.text for m in last if m.role == "user"] == [
        f"question {i}" for i in range(10)
    ]
    assert all(a is b for a, b in zip(last[:36], stored[:36], strict=True))
    assert json.loads(str(stored[-3].contents[0].arguments)) == {"a": 9, "b": 1}


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """How often each message is checked against the history invariant (HI-1), by
    ``id``."""
    import minagent._history as history_module
    import minagent._transcript as transcript_module

    checked: Counter[int] = Counter()
    seen: list[Any] = []  # kept alive, so no other object takes one of their ids
    original = history_module.is_valid_history

    def counting(messages: Any) -> bool:
        checked.update(id(m) for m in messages)
        seen.extend(messages)
        return original(messages)

    monkeypatch.setattr(history_module, "is_valid_history", counting)
    monkeypatch.setattr(transcript_module, "is_valid_history", counting, raising=False)
    return checked


def _tool_script(runs: int) -> list[Any]:
    steps: list[Any] = []
    for i in range(runs):
        steps += [reply(call("add", {"a": i, "b": 1}, call_id=f"c{i}")), f"sum {i}"]
    return steps


async def test_ten_runs_check_each_stored_message_once(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-51: across ten runs of one session (each with a tool call, so every run's
    history holds calls and results), each stored message is checked against the history
    invariant in the first run that loads it and never again; the provider still gets
    the whole history each time."""
    client = ScriptedChatClient(_tool_script(10))
    agent = Agent(client, tools=[add])
    session = agent.create_session()
    checked = _count_checks(monkeypatch)
    for i in range(10):
        await run(agent, f"question {i}", stream=stream, session=session)
    stored = session.state["in_memory"]["messages"]
    # the last run's were never loaded
    assert [checked[id(m)] for m in stored] == [1] * 36 + [0] * 4
    assert len(client.requests[-1].messages) == 39
    assert session.to_dict() == type(session).from_dict(session.to_dict()).to_dict()
    assert "_checked" not in str(session.to_dict())


class ReadsTheHistory(ContextProvider):
    """A provider whose ``before_run`` reads the history (and changes nothing)."""

    def __init__(self) -> None:
        super().__init__("reader")
        self.seen: list[int] = []

    async def before_run(self, *, agent, session, context, state):  # type: ignore[no-untyped-def]  # as users write it
        self.seen.append(len(context.get_messages()))


async def test_a_provider_that_reads_the_history_makes_each_run_check_it_all(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-51, SE-53: when a provider's hook reads the history, the run sends its copies
    of it, not the stored messages the session remembers as checked, so each run checks
    the whole history against the invariant; the stored messages are never the ones
    checked, and none is copied by the agent itself."""
    client = ScriptedChatClient(_tool_script(4))
    reader = ReadsTheHistory()
    agent = Agent(client, tools=[add], context_providers=[reader])
    session = agent.create_session()
    checked = _count_checks(monkeypatch)
    for i in range(4):
        await run(agent, f"question {i}", stream=stream, session=session)
    stored = session.state["in_memory"]["messages"]
    assert reader.seen == [0, 4, 8, 12]
    # run i (i >= 1) checks the 4 * i loaded messages (copies) and its new question
    assert sum(checked.values()) == 5 + 9 + 13
    assert not any(checked[id(m)] for m in stored)
    sent = client.requests[-2].messages  # the last run's first model call
    assert [m.to_dict() for m in sent[:12]] == [m.to_dict() for m in stored[:12]]
    assert not any(a is b for a, b in zip(sent[:12], stored[:12], strict=True))


async def test_a_history_changed_between_runs_is_checked_again(stream: bool) -> None:
    """SE-51, HI-3: a tool result taken out of the stored history between runs is
    noticed: the next run checks the history in full and sends the call with a
    synthesised result; a message replaced by one with an earlier call's id is noticed
    too."""
    client = ScriptedChatClient([*_tool_script(2), "third", "fourth"])
    agent = Agent(client, tools=[add])
    session = agent.create_session()
    for i in range(2):
        await run(agent, f"question {i}", stream=stream, session=session)
    stored = session.state["in_memory"]["messages"]
    assert stored[2].contents[0].type == "function_result"
    del stored[2]  # the first call's result
    await run(agent, "question 2", stream=stream, session=session)
    sent = client.requests[-1].messages
    results = [
        c
        for m in sent
        for c in m.contents
        if c.type == "function_result" and c.call_id == "c0"
    ]
    assert len(results) == 1
    assert "not executed" in str(results[0].result)
    client = ScriptedChatClient([*_tool_script(2), "third"])
    agent = Agent(client, tools=[add])
    session = agent.create_session()
    for i in range(2):
        await run(agent, f"question {i}", stream=stream, session=session)
    stored = session.state["in_memory"]["messages"]
    # the id of the first call
    stored[4] = Message("assistant", [Content.from_function_call("c0", "add", "{}")])
    await run(agent, "question 2", stream=stream, session=session)
    sent = client.requests[-1].messages
    ids = [c.call_id for m in sent for c in m.contents if c.type == "function_call"]
    # the repeated id was renamed (HI-3) before sending
    assert len(ids) == len(set(ids)) == 3
    answered = {
        c.call_id for m in sent for c in m.contents if c.type == "function_result"
    }
    assert answered == set(ids)


class Edits(ChatMiddleware):
    """Chat middleware written as upstream users write it (un-annotated,
    ``call_next()``): edits the first message's content in place on the first model
    call, and records what each call shows."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def process(self, context, call_next):  # type: ignore[no-untyped-def]  # un-annotated, as users write it
        _edit_the_first(context, self.seen)
        await call_next()


def _edit_the_first(context: Any, seen: list[tuple[str, dict[str, Any]]]) -> None:
    first = context.messages[0].contents[0]
    seen.append((first.text, dict(first.additional_properties)))
    if len(seen) == 1:
        first.text = "EDITED"
        first.additional_properties["edited"] = True


def _function_style() -> Any:
    """The same as a function in upstream's older spelling: ``next(context)``."""
    seen: list[tuple[str, dict[str, Any]]] = []

    @chat_middleware
    async def edits(context, next):  # type: ignore[no-untyped-def]  # upstream's spelling
        _edit_the_first(context, seen)
        await next(context)

    edits.seen = seen  # type: ignore[attr-defined]
    return edits


@pytest.mark.parametrize("style", ["class, call_next()", "function, next(context)"])
async def test_chat_middleware_editing_a_content_in_place_never_changes_the_stored_history(
    stream: bool, style: str
) -> None:
    """SE-52, LP-3: a chat middleware that assigns to a loaded message's content (its
    text and its additional_properties) changes what that model call sends, and nothing
    else: the stored message, the next model call of the run and the next run see the
    original, in both modes and in both of upstream's spellings (a class with
    ``call_next()``, a function with ``next(context)``)."""
    middleware = Edits() if style.startswith("class") else _function_style()
    client = ScriptedChatClient([reply(call("add", {"a": 1, "b": 2})), "done", "again"])
    agent = Agent(client, tools=[add], middleware=[middleware])
    session = agent.create_session()
    stored = [Message("user", ["q0"]), Message("assistant", ["a0"])]
    session.state["in_memory"] = {"messages": stored}
    await run(agent, "next", stream=stream, session=session)
    assert client.requests[0].messages[0].text == "EDITED"  # this call's copy
    assert middleware.seen[1] == ("q0", {})  # the run's next model call: the original
    assert stored[0].text == "q0"
    assert stored[0].contents[0].additional_properties == {}
    assert session.state["in_memory"]["messages"][0] is stored[0]
    await run(agent, "and again", stream=stream, session=session)
    assert middleware.seen[2] == ("q0", {})
    assert client.requests[2].messages[0].text == "q0"
