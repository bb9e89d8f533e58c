"""The run trace: events of every layer crossing, the Mermaid diagram, the CLI flags
(spec/observability.md OB-11 .. OB-14)."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import minagent
from minagent import (
    Agent,
    FunctionInvocationConfiguration,
    Inbox,
    MiddlewareTermination,
    RunTrace,
    render_mermaid,
    tool,
)
from minagent.cli import main
from minagent.testing import ScriptedChatClient, call

from ._recording import RecordingTracer

GOLDEN = Path(__file__).parent / "golden" / "demo_trace.md"
ARROW = re.compile(r"^    (\w+)(-->>|->>)(\w+): (.*)$")


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


@tool
def fail(key: str) -> str:
    """Always fails."""
    raise KeyError(key)


def arrows_pair_up(diagram: str) -> bool:
    """Every X->>Y has exactly one later Y-->>X (counted per pair of participants)."""
    balance: Counter[tuple[str, str]] = Counter()
    for line in diagram.splitlines():
        match = ARROW.match(line)
        if match is None:
            continue
        source, arrow, target, _ = match.groups()
        if arrow == "->>":
            balance[source, target] += 1
        else:
            balance[target, source] -= 1
            if balance[target, source] < 0:
                return False
    return all(count == 0 for count in balance.values())


async def traced_run(
    agent: Any, prompt: str, stream: bool, **kwargs: Any
) -> tuple[RunTrace, Any]:
    trace = RunTrace()
    with trace.recording():
        if stream:
            response = await agent.run(
                prompt, stream=True, middleware=trace.middleware, **kwargs
            ).get_final_response()
        else:
            response = await agent.run(prompt, middleware=trace.middleware, **kwargs)
    return trace, response


TIMES = re.compile(r" \(\d+(?:\.\d+)? (?:ms|s)\)$", re.M)


def untimed(diagram: str) -> str:
    """The diagram without the durations of its return arrows (OB-29)."""
    return TIMES.sub("", diagram)


def kinds(trace: RunTrace) -> list[str]:
    return [e["kind"] for e in trace.events]


def test_demo_trace_matches_the_golden_file(tmp_path: Path) -> None:
    """OB-13, OB-14: `demo --trace FILE` writes the diagram of the scripted demo run
    (golden file); `--trace-json FILE` the raw events."""
    diagram, raw = tmp_path / "run.md", tmp_path / "run.json"
    assert (
        main(
            ["demo", "--trace", str(diagram), "--trace-json", str(raw)],
            out=io.StringIO(),
        )
        == 0
    )
    text = diagram.read_text(encoding="utf-8")
    # OB-29: the times vary, the rest does not
    assert untimed(text) == GOLDEN.read_text(encoding="utf-8")
    # every return arrow says how long its call took
    assert len(TIMES.findall(text)) == text.count("-->>")
    assert text.startswith("```mermaid\nsequenceDiagram\n")
    assert text.endswith("```\n")
    events = json.loads(raw.read_text(encoding="utf-8"))
    assert [e["kind"] for e in events][:3] == ["run_start", "agent_in", "agent_out"]
    assert sum(e["kind"] == "tool_start" for e in events) == 2
    assert arrows_pair_up(text)
    assert minagent.get_tracer() is None


def test_run_command_writes_the_trace_also_when_the_run_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """OB-14: `run ... --trace FILE` writes the diagram; a failing run still writes it,
    closed."""
    client = ScriptedChatClient(
        [call("lookup", {"key": "a"}, call_id="c1"), RuntimeError("boom")]
    )
    monkeypatch.setattr("minagent.cli.get_client", lambda name, **kw: client)
    diagram = tmp_path / "run.md"
    with pytest.raises(RuntimeError, match="boom"):
        main(
            [
                "run",
                "hi",
                "--provider",
                "fake",
                "--model",
                "m",
                "--trace",
                str(diagram),
            ],
            out=io.StringIO(),
        )
    text = diagram.read_text(encoding="utf-8")
    assert "M-->>CM: raised RuntimeError" in text
    assert "AM-->>Caller: raised RuntimeError" in text
    assert arrows_pair_up(text)


async def test_events_of_a_tool_loop_run(stream: bool) -> None:
    """OB-12, OB-11: a run with one tool round records every crossing, in order."""
    agent = Agent(
        ScriptedChatClient([call("lookup", {"key": "a"}, call_id="c1"), "done"]),
        name="Bot",
        tools=[lookup],
    )
    trace, response = await traced_run(agent, "go", stream)
    assert response.text == "done"
    agent_part = ["run_start", "agent_in", "agent_out"]
    rest = [
        "model_call",
        "chat_start",
        "chat_end",
        "step",
        "tool_start",
        "tool_in",
        "tool_out",
        "tool_end",
        "step",
        "model_call",
        "chat_start",
        "chat_end",
        "step",
    ]
    if stream:  # the agent middleware returns the stream before the model is called
        assert kinds(trace) == [*agent_part, *rest, "run_end"]
    else:
        assert kinds(trace) == [*agent_part[:2], *rest, "agent_out", "run_end"]
    steps = [(e["outcome"], e["next"]) for e in trace.events if e["kind"] == "step"]
    assert steps == [
        ("calls", "run batch"),
        ("ran", "call model"),
        ("answered", "finish"),
    ]
    assert [
        e.get("tool_choice") for e in trace.events if e["kind"] == "model_call"
    ] == ["auto", "auto"]
    assert all(e["depth"] == 0 for e in trace.events)
    assert arrows_pair_up(trace.to_mermaid())


async def test_terminations_limits_approvals_and_injections_are_visible(
    stream: bool,
) -> None:
    """OB-11, OB-12: a termination, the error limit's last call, an approval pause and
    inbox messages each show in the events and the diagram."""

    @tool
    def stop(key: str) -> str:
        """Stops the loop."""
        raise MiddlewareTermination(result="stopped")

    agent = Agent(
        ScriptedChatClient([call("stop", {"key": "a"}, call_id="c1")]), tools=[stop]
    )
    trace, _ = await traced_run(agent, "go", stream)
    assert [e["outcome"] for e in trace.events if e["kind"] == "step"] == [
        "calls",
        "terminated",
    ]
    assert "terminated by MiddlewareTermination" in trace.to_mermaid()

    config = FunctionInvocationConfiguration(max_consecutive_errors_per_request=1)
    client = ScriptedChatClient([call("fail", {"key": "a"}, call_id="c1"), "giving up"])
    client.function_invocation_configuration = config
    trace, _ = await traced_run(Agent(client, tools=[fail]), "go", stream)
    assert [e["outcome"] for e in trace.events if e["kind"] == "step"][:2] == [
        "calls",
        "limited",
    ]
    last = [e for e in trace.events if e["kind"] == "model_call"][-1]
    assert (last["tool_choice"], last["last"]) == ("none", True)
    tool_end = next(e for e in trace.events if e["kind"] == "tool_end")
    assert tool_end["error"] == "KeyError"
    diagram = trace.to_mermaid()
    assert "FM-->>A: error result (KeyError)" in diagram
    assert "T-->>FM: raised" in diagram
    assert "last call" in diagram

    guarded = tool(lookup.func, name="guarded", approval_mode="always_require")
    trace, response = await traced_run(
        Agent(
            ScriptedChatClient([call("guarded", {"key": "a"}, call_id="c1")]),
            tools=[guarded],
        ),
        "go",
        stream,
    )
    assert response.user_input_requests
    assert [e["outcome"] for e in trace.events if e["kind"] == "step"] == ["approval"]
    assert "approval needed: pause" in trace.to_mermaid()

    inbox = Inbox()
    inbox.put("also this")
    trace, _ = await traced_run(
        Agent(ScriptedChatClient(["ok"])), "go", stream, inbox=inbox
    )
    assert {"kind": "injected", "depth": 0, "messages": 1} in [
        {k: v for k, v in e.items() if k != "t"} for e in trace.events
    ]
    assert "1 message(s) from the inbox" in trace.to_mermaid()


async def test_a_nested_run_is_one_note(stream: bool) -> None:
    """OB-12, OB-13: an agent run inside a tool is recorded at depth 1 and drawn as a
    note."""
    inner = Agent(ScriptedChatClient(["inner"]), name="Inner")
    outer = Agent(
        ScriptedChatClient([call("Inner", {"task": "t"}, call_id="c1"), "outer"]),
        name="Outer",
        tools=[inner.as_tool()],
    )
    trace, _ = await traced_run(outer, "go", stream)
    assert {e["depth"] for e in trace.events} == {0, 1}
    assert next(e["kind"] for e in trace.events if e["depth"] == 1) == "run_start"
    diagram = trace.to_mermaid()
    assert "Note over T: nested agent run: 1 model call(s)" in diagram
    assert arrows_pair_up(diagram)


async def test_recording_restores_the_previous_tracer() -> None:
    """OB-12: recording() makes the trace the tracer only inside the block."""
    previous = RecordingTracer()
    minagent.set_tracer(previous, record_content=True)
    try:
        trace = RunTrace()
        with trace.recording():
            assert minagent.get_tracer() is trace
        assert minagent.get_tracer() is previous
    finally:
        minagent.set_tracer(None)


EVENT_KINDS = [
    "run_start",
    "run_end",
    "agent_in",
    "agent_out",
    "model_call",
    "chat_start",
    "chat_end",
    "step",
    "injected",
    "tool_start",
    "tool_in",
    "tool_out",
    "tool_end",
]
events_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(EVENT_KINDS),
            "depth": st.sampled_from([0, 0, 0, 1]),
        },
        optional={
            "call_id": st.sampled_from(["c1", "c2", "c3"]),
            "error": st.sampled_from(["ValueError", "x;y#z<>%"]),
            "outcome": st.sampled_from(
                ["calls", "ran", "limited", "answered", "terminated"]
            ),
            "next": st.sampled_from(["call model", "finish"]),
            "tool": st.text(max_size=12),
            "last": st.booleans(),
        },
    ),
    max_size=40,
)


@given(events_strategy)
def test_any_event_sequence_renders_arrows_that_pair_up(
    events: list[dict[str, Any]],
) -> None:
    """OB-13: whatever the recorded sequence (cut off, failed, interleaved), each call
    arrow has exactly one later return, and every line is a diagram line."""
    diagram = render_mermaid(events)
    assert arrows_pair_up(diagram)
    for line in diagram.splitlines()[8:]:
        assert ARROW.match(line) or line.startswith("    Note over "), line


script_strategy = st.lists(
    st.lists(st.sampled_from(["lookup", "fail", "missing"]), min_size=0, max_size=3),
    min_size=1,
    max_size=4,
)


@given(script_strategy, st.booleans())
def test_every_recorded_run_renders_arrows_that_pair_up(
    rounds: list[list[str]], stream: bool
) -> None:
    """OB-13, OB-12: random tool-loop runs in both modes: one tool_start and tool_end
    per call the runner handled (the limit's unexecuted calls have none), and a diagram
    whose arrows pair up."""
    steps: list[Any] = []
    n = 0
    for names in rounds:
        if names:
            calls = []
            for name in names:
                n += 1
                calls.append(call(name, {"key": "k"}, call_id=f"c{n}"))
            steps.append(calls)
    steps.append("done")
    agent = Agent(ScriptedChatClient(steps), tools=[lookup, fail])
    trace, response = asyncio.run(traced_run(agent, "go", stream))
    executed = [
        c.call_id
        for m in response.messages
        for c in m.contents
        if c.type == "function_result" and c.exception not in ("limit", "rejected")
    ]
    assert sorted(
        e["call_id"] for e in trace.events if e["kind"] == "tool_start"
    ) == sorted(executed)
    assert sorted(
        e["call_id"] for e in trace.events if e["kind"] == "tool_end"
    ) == sorted(executed)
    assert arrows_pair_up(trace.to_mermaid())
