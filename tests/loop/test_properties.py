"""Property tests of the tool loop: random scripts of model turns against the loop's
invariants.

A turn is either a final text or a list of tool calls drawn from: a valid call to a
known tool, a call with invalid arguments, a call with invalid JSON, a call to an
unknown tool, a call to a tool that raises, and a call to a tool that appends a message
to the transcript. The limits are random too. The script is padded with final answers,
so a run never exhausts it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    ChatResponse,
    Content,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    Message,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests.loop._script import assert_paired, describe, run_both

KINDS = ("valid", "invalid_arguments", "invalid_json", "unknown", "raises", "appends")

turns = st.one_of(
    st.just("final"),
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
)
scripts = st.lists(turns, min_size=1, max_size=7)


def _call(kind: str, call_id: str) -> Content:
    if kind == "valid":
        return call("double", {"n": 3}, call_id=call_id)
    if kind == "invalid_arguments":
        return call("double", {"n": "three"}, call_id=call_id)
    if kind == "invalid_json":
        return call("double", '{"n": 3', call_id=call_id)
    if kind == "unknown":
        return call("no_such_tool", {}, call_id=call_id)
    if kind == "raises":
        return call("explode", {}, call_id=call_id)
    return call("remember", {"note": call_id}, call_id=call_id)


def _steps(script: list[Any], max_iterations: int) -> list[Any]:
    steps: list[Any] = []
    for index, turn in enumerate(script):
        if turn == "final":
            steps.append(f"final answer {index}")
        else:
            steps.append(
                reply(*[_call(kind, f"t{index}c{j}") for j, kind in enumerate(turn)])
            )
    # one spare step: an extra call would be recorded
    while len(steps) <= max_iterations + 1:
        steps.append(f"padding answer {len(steps)}")
    return steps


@settings(max_examples=60, deadline=None)
@given(
    script=scripts,
    max_iterations=st.integers(1, 6),
    max_errors=st.integers(1, 3),
    max_calls=st.none() | st.integers(1, 5),
)
def test_random_scripts_keep_the_loop_invariants(
    script: list[Any], max_iterations: int, max_errors: int, max_calls: int | None
) -> None:
    """LP-2, LP-4, LP-6, LP-7, LP-8, LP-15: for every script (1) no function_call
    reaches the model without its function_result before the next assistant message, (2)
    the model is called at most max_iterations + 1 times (LP-7: tool rounds plus the
    final call), (3) the run ends with an assistant message with text, (4) the streaming
    final response equals the non-streaming one; and tools never run more often than
    max_function_calls allows."""
    executions: list[list[str]] = []

    @tool
    def double(n: int) -> int:
        executions[-1].append("double")
        return 2 * n

    @tool
    def explode() -> str:
        executions[-1].append("explode")
        raise RuntimeError("boom")

    @tool
    def remember(note: str, context: FunctionInvocationContext) -> str:
        executions[-1].append("remember")
        assert context.messages is not None
        context.messages.append(Message("user", [f"note {note}"]))
        return "remembered"

    config = FunctionInvocationConfiguration(
        max_iterations=max_iterations,
        max_consecutive_errors_per_request=max_errors,
        max_function_calls=max_calls,
    )
    steps = _steps(script, max_iterations)
    clients: list[ScriptedChatClient] = []

    def make() -> ScriptedChatClient:
        client = ScriptedChatClient(steps, function_invocation_configuration=config)
        clients.append(client)
        executions.append([])
        return client

    async def run() -> tuple[ChatResponse, ChatResponse]:
        ns, streamed, _ = await run_both(
            make, "go", options={"tools": [double, explode, remember]}
        )
        me = asyncio.current_task()
        assert not [t for t in asyncio.all_tasks() if t is not me and not t.done()]
        return ns, streamed

    ns, streamed = asyncio.run(run())

    for client in clients:
        assert 1 <= len(client.requests) <= max_iterations + 1  # (2)
        for request in client.requests:  # (1)
            assert_paired(request.messages)
        assert all(r.options.get("tool_choice") is None for r in client.requests[:-1])
    last = ns.messages[-1]  # (3)
    assert last.role == "assistant"
    assert last.text
    # (4)
    assert streamed == ns, f"{describe(streamed.messages)} != {describe(ns.messages)}"
    assert_paired(ns.messages)
    assert sorted(executions[0]) == sorted(executions[1])
    if max_calls is not None:
        assert len(executions[0]) <= max_calls
