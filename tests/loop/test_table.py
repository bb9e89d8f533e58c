"""The loop as a table (spec/loop.md, LP-T1 .. LP-T18): the spec's rows are `NEXT_STEP`,
and every row is reached, in both modes, by a request whose first step ends in that
outcome."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Content,
    FunctionInvocationConfiguration,
    FunctionTool,
    Inbox,
    Message,
    MiddlewareTermination,
    tool,
)
from minagent._loop import ToolLoop
from minagent._loop_table import (
    NEXT_STEP,
    Outcome,
    Step,
    classify_batch,
    classify_response,
    limit_reached,
    start,
)
from minagent._transcript import approval_record, record_requests
from minagent.testing import ScriptedChatClient, call, reply

SPEC = Path(__file__).resolve().parents[2] / "spec" / "loop.md"


def spec_rows() -> dict[str, tuple[Outcome, bool, Step]]:
    rows: dict[str, tuple[Outcome, bool, Step]] = {}
    for line in SPEC.read_text(encoding="utf-8").splitlines():
        match = re.match(
            r"\| (LP-T\d+) \| (\w+) \|[^|]*\| (yes|no) \| ([a-z ]+) \|", line
        )
        if match:
            rule, outcome, room, step = match.groups()
            rows[rule] = (Outcome(outcome), room == "yes", Step(step.strip()))
    return rows


def test_the_spec_table_is_next_step() -> None:
    """LP-T1, LP-T2, LP-T3, LP-T4, LP-T5, LP-T6, LP-T7, LP-T8, LP-T9, LP-T10, LP-T11,
    LP-T12, LP-T13, LP-T14, LP-T15, LP-T16, LP-T17, LP-T18: the table in spec/loop.md is
    exactly NEXT_STEP (every outcome with and without room, nothing more)."""
    rows = spec_rows()
    # every outcome, with and without room (the rows LP-T1, LP-T2, ... in that order)
    assert len(rows) == 2 * len(Outcome)
    assert {(o, r): s for o, r, s in rows.values()} == NEXT_STEP


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def explode() -> str:
    """Fails."""
    raise RuntimeError("boom")


@tool
def halt() -> str:
    """Ends the run."""
    raise MiddlewareTermination(result="halted")


@tool(approval_mode="always_require")
def guarded() -> str:
    """Needs approval."""
    return "ran"


ASK = FunctionTool(name="ask_user", parameters={"type": "object", "properties": {}})
TOOLS = [add, explode, halt, guarded, ASK]


def scenario(
    outcome: Outcome, inbox: Inbox
) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """(script, options, configuration) whose first step ends in ``outcome``."""
    options: dict[str, Any] = {"tools": TOOLS}
    config: dict[str, Any] = {}
    first: Any
    if outcome is Outcome.ANSWERED:
        first = "just text"
    elif outcome is Outcome.STEERED:

        def steer(messages: Any, options: Any) -> Any:
            inbox.put("one more thing")
            return "text while a message arrives"

        first = steer
    elif outcome is Outcome.CALLS or outcome is Outcome.RAN:
        first = reply(call("add", {"a": 1, "b": 2}, call_id="c1"))
    elif outcome is Outcome.APPROVAL:
        first = reply(call("guarded", {}, call_id="g1"))
    elif outcome is Outcome.LIMITED:
        first = reply(call("explode", {}, call_id="e1"))
        config["max_consecutive_errors_per_request"] = 1
    elif outcome is Outcome.TERMINATED:
        first = reply(call("halt", {}, call_id="h1"))
    elif outcome is Outcome.PENDING:
        first = reply(call("ask_user", {}, call_id="q1"))
    else:  # FORCED
        first = reply(call("add", {"a": 1, "b": 2}, call_id="c1"))
        options["tool_choice"] = "required"
    return [first, "second answer", "third answer"], options, config


async def first_transitions(
    outcome: Outcome, room: bool, stream: bool
) -> list[tuple[Outcome, Step]]:
    inbox = Inbox()
    script, options, config = scenario(outcome, inbox)
    configuration = FunctionInvocationConfiguration(
        max_iterations=10 if room else 1, **config
    )
    client = ScriptedChatClient(script)
    loop = ToolLoop(
        client,
        [Message("user", ["go"])],
        dict(options),
        stream=stream,
        chat_middleware=(),
        function_middleware=(),
        config=configuration,
        inbox=inbox,
        function_kwargs={},
        client_kwargs={},
    )
    async for _ in loop.drive():
        pass
    return loop.steps


CASES = [(outcome, room) for outcome in Outcome for room in (True, False)]


@pytest.mark.parametrize(
    ("outcome", "room"),
    CASES,
    ids=[f"{o.value}-{'room' if r else 'full'}" for o, r in CASES],
)
async def test_every_row_is_reached_and_followed(
    outcome: Outcome, room: bool, stream: bool
) -> None:
    """LP-T1 .. LP-T18 (each row), LP-2: a request whose first model call (or first
    batch) ends in the outcome takes the step the table names, streaming or not."""
    steps = await first_transitions(outcome, room, stream)
    wanted = (outcome, NEXT_STEP[outcome, room])
    if outcome in (
        Outcome.RAN,
        Outcome.LIMITED,
        Outcome.TERMINATED,
        Outcome.PENDING,
        Outcome.FORCED,
    ):
        # the model step first, then the batch
        assert steps[0] == (Outcome.CALLS, Step.RUN_BATCH)
        assert steps[1] == wanted
    else:
        assert steps[0] == wanted


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.sampled_from(["add", "explode", "text"]), min_size=1, max_size=6),
    max_iterations=st.integers(1, 4),
    stream=st.booleans(),
)
def test_every_transition_of_any_run_is_a_row(
    turns: list[str], max_iterations: int, stream: bool
) -> None:
    """LP-T1 .. LP-T18, LP-7: in any run every (outcome, next step) the driver took is
    the table's answer for that outcome, the run ends with finish or pause, and the
    model is called at most max_iterations + 1 times."""
    import asyncio

    script: list[Any] = [
        "text"
        if kind == "text"
        else reply(
            call(kind, {"a": 1, "b": 1} if kind == "add" else {}, call_id=f"c{i}")
        )
        for i, kind in enumerate(turns)
    ]
    script += ["spare"] * (max_iterations + 2)
    client = ScriptedChatClient(script)
    loop = ToolLoop(
        client,
        [Message("user", ["go"])],
        {"tools": TOOLS},
        stream=stream,
        chat_middleware=(),
        function_middleware=(),
        config=FunctionInvocationConfiguration(max_iterations=max_iterations),
        inbox=None,
        function_kwargs={},
        client_kwargs={},
    )

    async def drain() -> None:
        async for _ in loop.drive():
            pass

    asyncio.run(drain())
    allowed: dict[Outcome, set[Step]] = {}
    for (outcome, _room), step in NEXT_STEP.items():
        allowed.setdefault(outcome, set()).add(step)
    assert all(step in allowed[outcome] for outcome, step in loop.steps)
    assert loop.steps[-1][1] in (Step.FINISH, Step.PAUSE)
    assert len(client.requests) <= max_iterations + 1


# -- the table without I/O (h11's state tests drive the state machine with events only) ------------


def test_start_is_resume_only_with_approvals() -> None:
    """LP-30: a request starts with resume when the conversation holds approvals, else
    call model."""
    assert start(resuming=True) is Step.RESUME
    assert start(resuming=False) is Step.CALL_MODEL


def _calls(*names: str) -> list[Any]:
    return [call(name, {}, call_id=f"c{i}") for i, name in enumerate(names)]


@given(
    names=st.lists(st.sampled_from(["add", "guarded"]), max_size=3),
    enabled=st.booleans(),
    last=st.booleans(),
    steered=st.booleans(),
)
def test_classify_response_is_the_spec_when_column(
    names: list[str], enabled: bool, last: bool, steered: bool
) -> None:
    """LP-T1, LP-T3, LP-T5, LP-T7, LP-1, LP-7, LP-13, LP-17: no call to act on (none
    asked, loop off, last call) is answered, or steered when the inbox holds messages on
    a call that is not the last; a call of an approval tool is approval; other calls are
    calls — a pure function of its inputs."""
    asked = _calls(*names)
    outcome, calls = classify_response(
        asked,
        enabled=enabled,
        last=last,
        steered=steered,
        approval_names=frozenset({"guarded"}),
    )
    if not asked or not enabled or last:
        assert list(calls) == []
        assert outcome is (
            Outcome.STEERED if steered and enabled and not last else Outcome.ANSWERED
        )
    else:
        assert list(calls) == asked
        assert outcome is (Outcome.APPROVAL if "guarded" in names else Outcome.CALLS)


@given(
    terminated=st.booleans(),
    pending=st.booleans(),
    forced=st.booleans(),
    limited=st.booleans(),
)
def test_classify_batch_takes_the_first_that_applies(
    terminated: bool, pending: bool, forced: bool, limited: bool
) -> None:
    """LP-T9, LP-T11, LP-T13, LP-T15, LP-T17: a batch's outcome is the first of
    terminated, pending, forced, limited that applies, else ran."""
    outcome = classify_batch(
        terminated=terminated, pending=pending, forced=forced, limited=limited
    )
    flags = [
        (terminated, Outcome.TERMINATED),
        (pending, Outcome.PENDING),
        (forced, Outcome.FORCED),
    ]
    flags.append((limited, Outcome.LIMITED))
    assert outcome is next((o for flag, o in flags if flag), Outcome.RAN)


@given(
    budget=st.none() | st.integers(1, 5),
    made=st.integers(0, 6),
    errors=st.integers(0, 4),
    allowed=st.integers(1, 3),
)
def test_limit_reached_is_the_budget_or_the_errors(
    budget: int | None, made: int, errors: int, allowed: int
) -> None:
    """LP-8: a limit is reached when max_function_calls executions are spent, or when
    max_consecutive_errors_per_request batches failed in a row."""
    config = FunctionInvocationConfiguration(
        max_function_calls=budget, max_consecutive_errors_per_request=allowed
    )
    expected = (budget is not None and made >= budget) or errors >= allowed
    assert limit_reached(config, made, errors) is expected


@pytest.mark.parametrize(
    ("approved", "outcome"), [(True, Outcome.RAN), (False, Outcome.RAN)]
)
async def test_a_resumed_request_starts_with_its_batch(
    stream: bool, approved: bool, outcome: Outcome
) -> None:
    """LP-30, LP-14: a conversation holding an answered approval request starts with the
    resumed batch, whose outcome (ran) the table continues from: the model is called
    next."""
    request = call("guarded", {}, call_id="g1")
    asked = Message(
        "assistant", [request, Content.from_function_approval_request("r1", request)]
    )
    # as the pause that asked it (LP-34)
    record_requests(approval_record(None), asked.contents[1:])
    answer = Message(
        "user",
        [
            Content.from_function_approval_request(
                "r1", request
            ).to_function_approval_response(approved)
        ],
    )
    client = ScriptedChatClient(["done"])
    loop = ToolLoop(
        client,
        [Message("user", ["go"]), asked, answer],
        {"tools": TOOLS},
        stream=stream,
        chat_middleware=(),
        function_middleware=(),
        config=FunctionInvocationConfiguration(),
        inbox=None,
        function_kwargs={},
        client_kwargs={},
    )
    async for _ in loop.drive():
        pass
    assert loop.steps[0] == (outcome, Step.CALL_MODEL)
    assert loop.steps[-1] == (Outcome.ANSWERED, Step.FINISH)
    results = [
        c.result
        for m in loop.transcript.new
        for c in m.contents
        if c.type == "function_result"
    ]
    assert results == (
        ["ran"] if approved else ["Error: Tool call invocation was rejected by user."]
    )
