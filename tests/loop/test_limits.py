"""Limits of the tool loop and tool_choice (spec/loop.md LP-7 .. LP-10), in both
modes."""

from __future__ import annotations

from typing import Any

import pytest

from minagent import (
    Agent,
    ChatResponseUpdate,
    Content,
    FunctionInvocationConfiguration,
    tool,
)
from minagent._loop import LIMIT_FALLBACK_TEXT, NOT_EXECUTED_TEXT
from minagent.testing import ScriptedChatClient, call, reply
from tests._support import modes
from tests._support.modes import run
from tests.loop._script import Script, add, assert_paired, describe, results, run_both


@tool
def fail() -> str:
    """Always fails."""
    raise RuntimeError("nope")


def _choices(script: Script) -> list[Any]:
    return [r.options.get("tool_choice") for r in script.requests]


# ---------------------------------------------------------------------------------------------
# LP-7 max_iterations


@pytest.mark.parametrize("max_iterations", [1, 2, 3, 5])
async def test_max_iterations_counts_tool_rounds(max_iterations: int) -> None:
    """LP-7: a model that always calls tools gets max_iterations tool rounds, then one
    final call with tool_choice "none" (max_iterations + 1 calls); that call's calls are
    dropped and the fallback text is added."""
    steps = [reply(call("add", {"a": i, "b": 1}, call_id=f"c{i}")) for i in range(10)]
    script = Script(
        *steps, config=FunctionInvocationConfiguration(max_iterations=max_iterations)
    )
    options = {"tools": [add], "tool_choice": "auto"}
    ns, streamed, updates = await run_both(script, "count", options=options)
    assert streamed == ns
    assert len(script.requests) == max_iterations + 1
    assert _choices(script) == ["auto"] * max_iterations + ["none"]
    assert ns.messages[-1].role == "assistant"
    assert ns.text.endswith(LIMIT_FALLBACK_TEXT)
    assert ns.messages[-1].text == LIMIT_FALLBACK_TEXT
    last_call_id = f"c{max_iterations}"
    calls = [
        c.call_id for m in ns.messages for c in m.contents if c.type == "function_call"
    ]
    assert last_call_id not in calls
    assert calls == [f"c{i}" for i in range(max_iterations)]
    results = [
        c.call_id
        for m in ns.messages
        for c in m.contents
        if c.type == "function_result"
    ]
    assert results == calls  # every round ran its tool
    assert not any(
        c.type == "function_call" and c.call_id == last_call_id
        for u in updates
        for c in u.contents
    )
    assert updates[-1].text == LIMIT_FALLBACK_TEXT
    assert_paired(ns.messages)
    for request in script.requests:
        assert_paired(request.messages)


async def test_last_call_keeps_visible_text_without_fallback() -> None:
    """LP-7: when the last permitted call gives text (and calls), the calls are dropped
    and the text is the answer; no fallback text is added."""
    script = Script(
        reply(call("add", {"a": 1, "b": 1}, call_id="c1")),
        reply("Here is what I have.", call("add", {"a": 2, "b": 2}, call_id="c2")),
        config=FunctionInvocationConfiguration(max_iterations=1),
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [add]})
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call c1 add",
        "tool: result c1=2",
        "assistant: Here is what I have.",
    ]
    assert LIMIT_FALLBACK_TEXT not in ns.text
    script.assert_consumed()


@tool
def ping() -> str:
    """Ping."""
    return "pong"


async def test_a_last_call_that_only_calls_a_tool_gets_the_limit_text(
    stream: bool,
) -> None:
    """LP-7, LP-9: after max_iterations tool rounds the final call has tool_choice
    "none"; the calls the model still emits are dropped and, nothing visible being left,
    the limit's text is the answer."""
    client = ScriptedChatClient([call("ping", {}), call("ping", {})])
    client.function_invocation_configuration = FunctionInvocationConfiguration(
        max_iterations=1
    )
    response = await run(Agent(client, tools=[ping]), "go", stream=stream)
    kinds = [c.type for m in response.messages for c in m.contents]
    # the first round's call only: the last one was dropped
    assert kinds.count("function_call") == 1
    assert kinds.count("function_result") == 1
    assert response.messages[-1].text == LIMIT_FALLBACK_TEXT
    assert response.text.endswith(LIMIT_FALLBACK_TEXT)


# ---------------------------------------------------------------------------------------------
# LP-8 error and call limits


async def test_consecutive_error_limit_makes_the_next_call_the_last() -> None:
    """LP-8: after max_consecutive_errors_per_request batches in a row with an error
    result, the next model call is the last one (tool_choice "none")."""
    steps = [reply(call("fail", {}, call_id=f"c{i}")) for i in range(6)]
    script = Script(
        *steps,
        config=FunctionInvocationConfiguration(max_consecutive_errors_per_request=2),
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [fail]})
    assert streamed == ns
    assert _choices(script) == [None, None, "none"]
    assert list(results(ns)) == ["c0", "c1"]
    assert ns.messages[-1].text == LIMIT_FALLBACK_TEXT
    assert_paired(script.requests[-1].messages)


async def test_clean_batch_resets_the_error_count() -> None:
    """LP-8: a clean batch resets the error count: error, clean, error, error -> last
    call."""
    script = Script(
        reply(call("fail", {}, call_id="e1")),
        reply(call("add", {"a": 1, "b": 1}, call_id="ok")),
        reply(call("fail", {}, call_id="e2")),
        reply(call("fail", {}, call_id="e3")),
        reply(call("fail", {}, call_id="e4")),
        "unreachable",
        config=FunctionInvocationConfiguration(max_consecutive_errors_per_request=2),
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [fail, add]})
    assert streamed == ns
    assert _choices(script) == [None, None, None, None, "none"]
    assert list(results(ns)) == ["e1", "ok", "e2", "e3"]
    assert ns.messages[-1].text == LIMIT_FALLBACK_TEXT


async def test_error_results_of_every_kind_count_as_errors() -> None:
    """LP-8: an unknown tool and invalid arguments count as errors like a failing
    tool."""
    script = Script(
        reply(call("missing", {}, call_id="c1")),
        reply(call("add", "{broken", call_id="c2")),
        "unreachable",
        config=FunctionInvocationConfiguration(max_consecutive_errors_per_request=2),
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [add]})
    assert streamed == ns
    assert _choices(script) == [None, None, "none"]


async def test_max_function_calls_with_a_batch_larger_than_the_budget() -> None:
    """LP-8: calls beyond the remaining max_function_calls budget are not executed and
    get the "not executed" result; the next model call is the last one; no call lacks a
    result."""
    script: Script

    @tool
    def count(n: int) -> int:
        script.log.append(n)
        return n

    script = Script(
        reply(call("count", {"n": 1}, call_id="c1")),
        reply(*[call("count", {"n": n}, call_id=f"c{n}") for n in (2, 3, 4)]),
        reply(call("count", {"n": 5}, call_id="c5")),
        "unreachable",
        config=FunctionInvocationConfiguration(max_function_calls=3),
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [count]})
    assert streamed == ns
    # concurrent: any order
    assert [sorted(log) for log in script.logs] == [[1, 2, 3], [1, 2, 3]]
    assert results(ns) == {"c1": 1, "c2": 2, "c3": 3, "c4": NOT_EXECUTED_TEXT}
    assert _choices(script) == [None, None, "none"]
    assert ns.messages[-1].text == LIMIT_FALLBACK_TEXT
    for request in script.requests:
        assert_paired(request.messages)


async def test_spent_budget_makes_the_next_call_the_last() -> None:
    """LP-8: once max_function_calls executions are spent, the next model call is the
    last."""
    script = Script(
        reply(
            call("add", {"a": 1, "b": 1}, call_id="c1"),
            call("add", {"a": 2, "b": 2}, call_id="c2"),
        ),
        reply("Two sums.", call("add", {"a": 3, "b": 3}, call_id="c3")),
        config=FunctionInvocationConfiguration(max_function_calls=2),
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [add]})
    assert streamed == ns
    assert _choices(script) == [None, "none"]
    assert results(ns) == {"c1": 2, "c2": 4}
    assert ns.messages[-1].text == "Two sums."


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await modes.run(target, *args, stream=stream, **kwargs)
    return await modes.get_response(target, *args, stream=stream, **kwargs)


calls_made = []


@tool(name="get_weather")
def get_location_weather(location):
    """Get the weather for a location."""
    calls_made.append(location)
    return f"Sunny in {location}."


async def test_error_limit_gives_no_conversation_id(stream):
    """LP-8: a loop stopped by `max_consecutive_errors_per_request` returns no
    conversation_id."""

    @tool
    def broken(x):
        raise RuntimeError("no")

    script = [reply(call("broken", {"x": 1}), conversation_id="conv") for _ in range(2)]
    client = ScriptedChatClient(
        [*script, reply("gave up", conversation_id="conv")],
        function_invocation_configuration={"max_consecutive_errors_per_request": 2},
    )
    response = await run_or_get_response(
        client, "go", stream=stream, options={"tools": [broken]}
    )
    assert response.conversation_id is None
    assert response.text == "gave up"


# ---------------------------------------------------------------------------------------------
# LP-9 tool_choice "none"


async def test_tool_choice_none_drops_calls() -> None:
    """LP-9: with tool_choice "none" no tool runs; calls the model emits anyway are
    dropped from the response and from the streamed updates."""
    script: Script

    @tool
    def act() -> str:
        script.log.append("ran")
        return "acted"

    streamed_steps = [
        ChatResponseUpdate(["I would "], "assistant"),
        ChatResponseUpdate([call("act", {}, call_id="c1")], "assistant"),
        ChatResponseUpdate(
            [Content.from_function_call("c2", "act", "{}"), "rather not."], "assistant"
        ),
    ]
    script = Script(streamed_steps)
    options = {"tools": [act], "tool_choice": "none"}
    ns, streamed, updates = await run_both(script, "go", options=options)
    assert streamed == ns
    assert script.logs == [[], []]
    assert [m.role for m in ns.messages] == ["assistant"]
    assert ns.text == "I would rather not."
    assert not any(c.type == "function_call" for c in ns.messages[0].contents)
    assert [u.text for u in updates] == ["I would ", "rather not."]
    assert not any(c.type == "function_call" for u in updates for c in u.contents)
    assert _choices(script) == ["none"]
    script.assert_consumed()


async def test_tool_choice_none_with_only_calls_gives_an_empty_answer() -> None:
    """LP-9: a response that held only calls is dropped entirely (no limit fallback: the
    caller asked for no tools)."""
    script = Script(reply(call("add", {"a": 1, "b": 1}, call_id="c1")))
    ns, streamed, updates = await run_both(
        script, "go", options={"tools": [add], "tool_choice": "none"}
    )
    assert streamed == ns
    assert ns.messages == []
    assert updates == []


async def test_after_a_limit_no_approval_request_for_a_call_that_never_runs(stream):
    """LP-9: the last call (tool_choice none) drops calls, and approval requests for
    them, but keeps updates that carry only metadata."""

    @tool(approval_mode="always_require")
    def delete(path):
        return "deleted"

    last = reply(
        "done",
        Content.from_function_approval_request(
            "c9", Content.from_function_call("c9", "delete", '{"path": "/"}')
        ),
        finish_reason="stop",
    )
    client = ScriptedChatClient(
        [reply(call("get_weather", {"location": "A"})), last],
        function_invocation_configuration={"max_iterations": 1},
    )
    response = await run_or_get_response(
        Agent(client, tools=[get_location_weather, delete]), "go", stream=stream
    )
    kinds = [c.type for m in response.messages for c in m.contents]
    assert "function_approval_request" not in kinds
    assert response.user_input_requests == []
    assert response.text == "done"
    assert response.finish_reason == "stop"


# ---------------------------------------------------------------------------------------------
# LP-10 tool_choice "required"


@pytest.mark.parametrize(
    "choice",
    ["required", {"mode": "required", "required_function_name": "add"}],
    ids=["required", "required-by-name"],
)
async def test_required_returns_after_the_batch(choice: Any) -> None:
    """LP-10: with tool_choice "required" (also by name) the loop returns right after
    the first batch ran, with the call and result messages and no further model call."""
    script = Script(
        reply(
            call("add", {"a": 2, "b": 3}, call_id="c1"),
            call("add", {"a": 1, "b": 1}, call_id="c2"),
        ),
        "never used",
    )
    ns, streamed, updates = await run_both(
        script, "go", options={"tools": [add], "tool_choice": choice}
    )
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call c1 add, call c2 add",
        "tool: result c1=5, result c2=2",
    ]
    assert len(script.requests) == 1
    assert _choices(script) == [choice]
    assert [u.role for u in updates] == ["assistant", "tool"]


async def test_required_with_a_text_answer_returns_it() -> None:
    """LP-10: when the model answers a "required" request without calls, that is the
    answer."""
    script = Script("no tools needed")
    ns, streamed, _ = await run_both(
        script, "go", options={"tools": [add], "tool_choice": "required"}
    )
    assert streamed == ns
    assert ns.text == "no tools needed"


async def test_auto_passes_unchanged_to_every_call() -> None:
    """LP-10: tool_choice "auto" reaches every model call unchanged."""
    script = Script(
        reply(call("add", {"a": 1, "b": 1}, call_id="c1")),
        reply(call("add", {"a": 2, "b": 2}, call_id="c2")),
        "done",
    )
    ns, streamed, _ = await run_both(
        script, "go", options={"tools": [add], "tool_choice": "auto"}
    )
    assert streamed == ns
    assert _choices(script) == ["auto", "auto", "auto"]
    assert ns.text == "done"
