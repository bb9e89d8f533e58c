"""What a session run costs: copies and checks of the stored history (spec/sessions.md SE-50, SE-51)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent, Content, Message, tool
from minagent.testing import ScriptedChatClient, call, reply

from ._util import MODES, run


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _turn(i: int, text: str, with_tool: bool) -> list[Message]:
    """One earlier exchange: a question, optionally a call and its result, an answer."""
    out = [Message("user", [text])]
    if with_tool:
        out.append(Message("assistant", [Content.from_function_call(f"old{i}", "add", '{"a": 1, "b": 2}')]))
        out.append(Message("tool", [Content.from_function_result(f"old{i}", "3")]))
    out.append(Message("assistant", [f"answer {i}"]))
    return out


histories = st.lists(st.tuples(st.text(max_size=20), st.booleans()), max_size=8).map(
    lambda turns: [m for i, (text, with_tool) in enumerate(turns) for m in _turn(i, text, with_tool)]
)


@MODES
@settings(max_examples=25, deadline=None)
@given(past=histories)
def test_a_session_run_sends_what_an_argument_run_sends(stream: bool, past: list[Message]) -> None:
    """SE-50: a run on a session whose history holds N messages sends the provider the same
    messages as the same run with those messages passed as arguments, and the stored messages
    themselves (not copies), in both modes."""
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
    sent_by_arguments, sent_by_session = by_arguments.requests[0].messages, by_session.requests[0].messages
    assert sent_by_session == sent_by_arguments
    assert all(a is b for a, b in zip(sent_by_session[: len(past)], past, strict=True))
    assert len(session.state["in_memory"]["messages"]) == len(past) + 2  # the input and the answer were saved


@MODES
async def test_ten_runs_copy_each_stored_message_once(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """SE-50, SE-7: across ten runs of one session (each with a tool call), every message the
    session stores is copied exactly once (when it is saved) and no stored message is ever copied
    again; each run sends the whole history."""
    steps: list[Any] = []
    for i in range(10):
        steps += [reply(call("add", {"a": i, "b": 1}, call_id=f"c{i}")), f"sum {i}"]
    client = ScriptedChatClient(steps)
    agent = Agent(client, tools=[add])
    session = agent.create_session()
    copied: Counter[int] = Counter()
    original = Message.with_contents

    def counting(self: Message, contents: Any) -> Message:
        copied[id(self)] += 1
        return original(self, contents)

    monkeypatch.setattr(Message, "with_contents", counting)
    for i in range(10):
        await run(agent, f"question {i}", stream=stream, session=session)
    stored = session.state["in_memory"]["messages"]
    assert len(stored) == 40  # per run: the question, the call, the result, the answer
    assert not any(copied[id(m)] for m in stored)  # a stored message is never copied
    assert sum(copied.values()) == len(stored)  # every stored message is one copy, made when saved
    last = client.requests[-1].messages
    assert [m.text for m in last if m.role == "user"] == [f"question {i}" for i in range(10)]
    assert all(a is b for a, b in zip(last[:36], stored[:36], strict=True))
    assert json.loads(str(stored[-3].contents[0].arguments)) == {"a": 9, "b": 1}
