"""minagent.middleware: the library, in both modes, with its failure paths
(spec/middleware-library.md)."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentThread,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    MiddlewareException,
    MiddlewareTermination,
    RateLimitError,
    tool,
)
from minagent._history import is_valid_history
from minagent.hooks import (
    HookState,
    ModelRequest,
)
from minagent.middleware import (
    Approve,
    CallLimitExceededError,
    Edit,
    FallbackExhaustedError,
    HistoryTrimmer,
    HumanApproval,
    ModelCallLimit,
    ModelFallback,
    ModelRetry,
    Redact,
    Reject,
    Summarizer,
    ToolCallLimit,
    ToolRetry,
    approx_tokens,
    clean_cut,
)
from minagent.testing import ScriptedChatClient, call, text_chunks
from tests._support.streamed import ask, run, streamed_text, tool_t


class Sleeps:
    """A fake sleep that records the delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class Transient(Exception):
    retryable = True


class BreaksMidStream(BaseChatClient):
    """Streams "par" then fails; non-streaming it fails at once."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def _inner_get_response(
        self, *, messages: Any, options: Any, **kwargs: Any
    ) -> ChatResponse:
        self.calls += 1
        raise Transient("down")

    async def _inner_get_streaming_response(
        self, *, messages: Any, options: Any, **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        self.calls += 1
        yield ChatResponseUpdate([Content.from_text("par")], "assistant")
        raise Transient("cut")


# ---------------------------------------------------------------------------------------------
# ModelRetry (ML-1, ML-2)


async def test_retry_honours_the_providers_hint(stream):
    """ML-1: a RateLimitError's retry_after (Retry-After header) is the wait, capped at
    max_delay."""
    sleeps = Sleeps()
    errors = [
        RateLimitError("slow down", status=429, headers={"retry-after": "3"}),
        RateLimitError("slow down", status=429, headers={"retry-after": "500"}),
    ]
    client = ScriptedChatClient([*errors, "ok"])
    agent = Agent(client, middleware=[ModelRetry(2, max_delay=10, sleep=sleeps)])
    result = await run(agent, "x", stream=stream)
    assert result.text == "ok"
    assert sleeps.delays == [3.0, 10.0]


async def test_retry_backoff_and_jitter(stream):
    """ML-1: without a hint the waits grow exponentially; jitter keeps each between half
    and all of it."""
    sleeps = Sleeps()
    client = ScriptedChatClient([Transient("a"), Transient("b"), Transient("c"), "ok"])
    retry = ModelRetry(3, initial_delay=1, backoff_factor=2, jitter=False, sleep=sleeps)
    assert (
        await run(Agent(client, middleware=[retry]), "x", stream=stream)
    ).text == "ok"
    assert sleeps.delays == [1, 2, 4]
    sleeps.delays.clear()
    random.seed(7)
    client = ScriptedChatClient([Transient("a"), Transient("b"), "ok"])
    jittered = ModelRetry(2, initial_delay=2, backoff_factor=3, sleep=sleeps)
    await run(Agent(client, middleware=[jittered]), "x", stream=stream)
    assert 1 <= sleeps.delays[0] <= 2
    assert 3 <= sleeps.delays[1] <= 6


async def test_retry_exhausted_raises_or_answers(stream):
    """ML-1: after max_retries the error propagates, or with on_failure="answer" becomes
    the call's answer; an error that is not retryable is not retried at all."""
    sleeps = Sleeps()
    client = ScriptedChatClient([Transient("1"), Transient("2")])
    with pytest.raises(Transient, match="2"):
        await run(
            Agent(client, middleware=[ModelRetry(1, sleep=sleeps)]), "x", stream=stream
        )
    client = ScriptedChatClient([Transient("1"), Transient("2")])
    result = await run(
        Agent(client, middleware=[ModelRetry(1, on_failure="answer", sleep=sleeps)]),
        "x",
        stream=stream,
    )
    assert result.text == "The model call failed after 2 attempt(s): Transient: 2"
    client = ScriptedChatClient([ValueError("bug")])
    sleeps.delays.clear()
    with pytest.raises(ValueError, match="bug"):
        await run(
            Agent(client, middleware=[ModelRetry(3, sleep=sleeps)]), "x", stream=stream
        )
    assert sleeps.delays == []
    client = ScriptedChatClient([KeyError("k"), "ok"])
    picky = ModelRetry(1, retry_on=KeyError, sleep=sleeps)
    assert (
        await run(Agent(client, middleware=[picky]), "x", stream=stream)
    ).text == "ok"


async def test_retry_gives_up_on_a_long_hint_so_the_fallback_takes_over(stream):
    """ML-1, ML-3: with give_up_after, a Retry-After longer than it is not waited for:
    the fallback answers."""
    sleeps = Sleeps()
    long_wait = RateLimitError("quota", status=429, headers={"retry-after": "120"})
    short_wait = RateLimitError("burst", status=429, headers={"retry-after": "1"})
    backup = ScriptedChatClient(["backup"])
    primary = ScriptedChatClient([short_wait, long_wait])
    retry = ModelRetry(3, give_up_after=30, sleep=sleeps)
    result = await run(
        Agent(primary, middleware=[ModelFallback(backup), retry]), "x", stream=stream
    )
    assert result.text == "backup"
    assert sleeps.delays == [1.0]
    with pytest.raises(ValueError, match="give_up_after"):
        ModelRetry(give_up_after=-1)


async def test_retry_predicate_and_control_flow(stream):
    """ML-1, ML-7: retry_on may be a predicate; MiddlewareTermination from a tool is
    never retried."""
    client = ScriptedChatClient([KeyError("k"), "ok"])
    retry = ModelRetry(
        1, retry_on=lambda exc: isinstance(exc, KeyError), sleep=_no_sleep
    )
    assert (
        await run(Agent(client, middleware=[retry]), "x", stream=stream)
    ).text == "ok"
    tries = []

    @tool
    def stop() -> str:
        """Stops the loop."""
        tries.append(1)
        raise MiddlewareTermination(result="stopped")

    client = ScriptedChatClient([[call("stop")]])
    result = await run(
        Agent(client, tools=[stop], middleware=[ToolRetry(3, sleep=_no_sleep)]),
        "x",
        stream=stream,
    )
    assert tries == [1]
    assert result.messages[-1].contents[0].result == "stopped"


async def _no_sleep(seconds: float) -> None:
    return None


async def test_retry_never_after_a_streamed_update():
    """ML-2: a stream that fails after its first update reached the consumer is not
    retried."""
    client = BreaksMidStream()
    stream = Agent(client, middleware=[ModelRetry(3, sleep=Sleeps())]).run(
        "x", stream=True
    )
    seen = []

    async def consume():
        async for update in stream:
            seen.append(update.text)

    with pytest.raises(Transient, match="cut"):
        await consume()
    assert seen == ["par"]
    assert client.calls == 1


# ---------------------------------------------------------------------------------------------
# ModelFallback (ML-3, ML-4)


async def test_fallback_uses_the_next_client(stream):
    """ML-3: a failed call goes to the next client, with the same messages and
    options."""
    primary = ScriptedChatClient([Transient("down")])
    second = ScriptedChatClient([Transient("down too")])
    third = ScriptedChatClient(["from third"])
    agent = Agent(
        primary, instructions="Be brief.", middleware=[ModelFallback(second, third)]
    )
    result = await run(agent, "x", stream=stream)
    assert result.text == "from third"
    assert third.requests[0].texts == ["user: x"]
    assert third.requests[0].options["instructions"] == "Be brief."


async def test_fallback_exhausted(stream):
    """ML-4: when every client failed, FallbackExhaustedError lists the errors in
    order."""
    agent = Agent(
        ScriptedChatClient([Transient("1")]),
        middleware=[ModelFallback(ScriptedChatClient([Transient("2")]))],
    )
    with pytest.raises(FallbackExhaustedError) as info:
        await run(agent, "x", stream=stream)
    assert [str(e) for e in info.value.errors] == ["1", "2"]
    assert info.value.__cause__ is info.value.errors[-1]


async def test_fallback_after_retries_and_filter(stream):
    """ML-3: with [ModelFallback, ModelRetry] the primary is retried first; retry_on
    limits what falls back."""
    sleeps = Sleeps()
    primary = ScriptedChatClient([Transient("1"), Transient("2")])
    backup = ScriptedChatClient(["backup"])
    agent = Agent(
        primary, middleware=[ModelFallback(backup), ModelRetry(1, sleep=sleeps)]
    )
    assert (await run(agent, "x", stream=stream)).text == "backup"
    assert len(primary.requests) == 2
    agent = Agent(
        ScriptedChatClient([ValueError("no")]),
        middleware=[ModelFallback(backup, retry_on=Transient)],
    )
    with pytest.raises(ValueError, match="no"):
        await run(agent, "x", stream=stream)


async def test_retry_walks_the_whole_fallback_chain_again(stream):
    """ML-14, ML-3: with [ModelRetry, ModelFallback], when every client failed with a
    retryable error the chain is tried again from the primary; the exhaustion is
    retryable, its retry_after the shortest hint; a retry_on class matches the failures
    inside it."""
    sleeps = Sleeps()
    primary = ScriptedChatClient([Transient("p1"), "primary answer"])
    backup = ScriptedChatClient([Transient("b1"), "backup answer"])
    agent = Agent(
        primary,
        middleware=[ModelRetry(2, sleep=sleeps, jitter=False), ModelFallback(backup)],
    )
    assert (await run(agent, "x", stream=stream)).text == "primary answer"
    assert (len(primary.requests), len(backup.requests)) == (2, 1)
    assert sleeps.delays == [1.0]
    hinted = RateLimitError("slow down", status=429, headers={"retry-after": "3"})
    exhausted = FallbackExhaustedError([Transient("a"), hinted, ValueError("b")])
    assert exhausted.retryable is True
    assert exhausted.retry_after == 3.0
    assert FallbackExhaustedError([ValueError("no")]).retryable is False
    primary = ScriptedChatClient([Transient("p1"), "primary again"])
    backup = ScriptedChatClient([Transient("b1")])
    agent = Agent(
        primary,
        middleware=[
            ModelRetry(1, retry_on=Transient, sleep=sleeps),
            ModelFallback(backup),
        ],
    )
    assert (await run(agent, "x", stream=stream)).text == "primary again"


async def test_fallback_never_after_a_streamed_update():
    """ML-2: no fallback after an update was streamed."""
    backup = ScriptedChatClient(["backup"])
    stream = Agent(BreaksMidStream(), middleware=[ModelFallback(backup)]).run(
        "x", stream=True
    )
    with pytest.raises(Transient):
        async for _ in stream:
            pass
    assert backup.requests == []


# ---------------------------------------------------------------------------------------------
# Limits (ML-5, ML-6)


async def test_model_call_limit_end(stream):
    """ML-5: "end": the call over the run limit is not made; its answer is the limit
    text; a new run starts from zero."""
    client = ScriptedChatClient([[call("tool_t")], [call("tool_t")], "fresh"])
    agent = Agent(client, tools=[tool_t], middleware=[ModelCallLimit(run_limit=2)])
    result = await run(agent, "x", stream=stream)
    assert len(client.requests) == 2
    assert result.messages[-1].text == ModelCallLimit.TEXT
    assert (await run(agent, "again", stream=stream)).text == "fresh"


async def test_model_call_limit_final_answer(stream):
    """ML-5: "final_answer": the last allowed call is made with tool_choice "none"."""
    client = ScriptedChatClient([[call("tool_t")], "final"])
    agent = Agent(
        client,
        tools=[tool_t],
        middleware=[ModelCallLimit(run_limit=2, exit_behavior="final_answer")],
    )
    result = await run(agent, "x", stream=stream)
    assert result.text == "final"
    assert client.requests[0].options["tool_choice"] == "auto"
    assert client.requests[1].options["tool_choice"] == "none"


async def test_model_call_limit_error_and_thread(stream):
    """ML-5: "error" raises CallLimitExceededError; the thread count spans runs and
    survives serialisation."""
    agent = Agent(
        ScriptedChatClient(["1", "2"]),
        middleware=[ModelCallLimit(thread_limit=2, exit_behavior="error")],
    )
    thread = agent.get_new_thread()
    await run(agent, "a", stream=stream, thread=thread)
    restored = AgentThread.deserialize(thread.serialize())
    await run(agent, "b", stream=stream, thread=restored)
    with pytest.raises(CallLimitExceededError) as info:
        await run(agent, "c", stream=stream, thread=restored)
    assert (info.value.kind, info.value.count, info.value.limit) == ("model", 2, 2)


def test_limits_need_an_agent():
    """ML-5: a limit on a chat client is the agent-middleware error (HK-1)."""
    with pytest.raises(
        MiddlewareException, match="agent middleware cannot run in a chat client"
    ):
        ScriptedChatClient([], middleware=[ModelCallLimit(run_limit=1)])


async def test_tool_call_limit_continue(stream):
    """ML-6: counted before each call, also inside one concurrent batch: the call over
    the limit gets the limit text and the model goes on; tool_name counts only that
    tool."""
    ran = []

    @tool
    def note(text: str) -> str:
        """Note."""
        ran.append(text)
        return "noted"

    client = ScriptedChatClient(
        [
            [call("note", {"text": "a"}), call("note", {"text": "b"}), call("tool_t")],
            "ok",
        ]
    )
    limit = ToolCallLimit(tool_name="note", run_limit=1)
    result = await run(
        Agent(client, tools=[note, tool_t], middleware=[limit]), "x", stream=stream
    )
    assert ran == ["a"]
    assert [c.result for c in result.messages[1].contents] == [
        "noted",
        ToolCallLimit.TEXT,
        "ok",
    ]
    assert result.text == "ok"


async def test_tool_call_limit_end_and_error(stream):
    """ML-6: "end" finishes the batch and ends the run with the end text; "error" raises
    out of the run."""
    client = ScriptedChatClient([[call("tool_t"), call("tool_t")]])
    agent = Agent(
        client,
        tools=[tool_t],
        middleware=[ToolCallLimit(run_limit=1, exit_behavior="end")],
    )
    result = await run(agent, "x", stream=stream)
    assert [c.result for c in result.messages[1].contents] == ["ok", ToolCallLimit.TEXT]
    assert result.messages[-1].text == ToolCallLimit.END_TEXT
    assert len(client.requests) == 1
    client = ScriptedChatClient([[call("tool_t"), call("tool_t")]])
    agent = Agent(
        client,
        tools=[tool_t],
        middleware=[ToolCallLimit(run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(CallLimitExceededError, match="tool call limit of 1 per run"):
        await run(agent, "x", stream=stream)


async def test_run_state_does_not_outlive_a_failed_run(stream):
    """ML-5: the per-run counts are gone after the run, also when it failed."""
    from minagent.middleware.per_run import _RUN

    agent = Agent(
        ScriptedChatClient([Transient("x")]), middleware=[ModelCallLimit(run_limit=1)]
    )
    with pytest.raises(Transient):
        await run(agent, "x", stream=stream)
    assert _RUN.get({}) == {}
    await run(
        Agent(ScriptedChatClient(["ok"]), middleware=[ModelCallLimit(run_limit=1)]),
        "x",
        stream=stream,
    )
    assert _RUN.get({}) == {}


async def test_concurrent_runs_count_apart():
    """ML-5: two runs at once on one agent each have their own count."""
    client = ScriptedChatClient(["a", "b"])
    agent = Agent(
        client, middleware=[ModelCallLimit(run_limit=1, exit_behavior="error")]
    )
    results = await asyncio.gather(agent.run("1"), agent.run("2"))
    assert sorted(r.text for r in results) == ["a", "b"]


# ---------------------------------------------------------------------------------------------
# ToolRetry (ML-7)


async def test_tool_retry(stream):
    """ML-7: a failing tool is run again; when retries run out the error result (or the
    message) remains."""
    attempts = []

    @tool
    def flaky() -> str:
        """Fails twice."""
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("flake")
        return "fine"

    sleeps = Sleeps()
    client = ScriptedChatClient([[call("flaky")], "ok"])
    result = await run(
        Agent(client, tools=[flaky], middleware=[ToolRetry(2, sleep=sleeps)]),
        "x",
        stream=stream,
    )
    assert result.messages[1].contents[0].result == "fine"
    assert len(sleeps.delays) == 2
    attempts.clear()
    client = ScriptedChatClient([[call("flaky")], "ok"])
    result = await run(
        Agent(client, tools=[flaky], middleware=[ToolRetry(1, sleep=sleeps)]),
        "x",
        stream=stream,
    )
    assert result.messages[1].contents[0].exception == "flake"
    attempts.clear()
    client = ScriptedChatClient([[call("flaky")], "ok"])
    retry = ToolRetry(0, on_failure="message", sleep=sleeps)
    result = await run(
        Agent(client, tools=[flaky], middleware=[retry]), "x", stream=stream
    )
    assert (
        result.messages[1].contents[0].result
        == "Error: flaky failed after 1 attempt(s): RuntimeError: flake"
    )


async def test_tool_retry_skips_declarations_and_other_tools(stream):
    """ML-7: declaration-only calls and tools not named are not retried."""
    declared = {"name": "ask", "parameters": {"type": "object", "properties": {}}}
    client = ScriptedChatClient([[call("ask")]])
    result = await run(
        Agent(client, tools=[declared], middleware=[ToolRetry(3, sleep=Sleeps())]),
        "x",
        stream=stream,
    )
    assert [c.name for c in result.user_input_requests] == ["ask"]

    @tool
    def boom() -> str:
        """Fails."""
        raise RuntimeError("x")

    sleeps = Sleeps()
    client = ScriptedChatClient([[call("boom")], "ok"])
    await run(
        Agent(
            client,
            tools=[boom],
            middleware=[ToolRetry(3, tool_names=["other"], sleep=sleeps)],
        ),
        "x",
        stream=stream,
    )
    assert sleeps.delays == []


# ---------------------------------------------------------------------------------------------
# HumanApproval (ML-8)


def _recorder():
    ran = []

    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    return delete, ran


async def test_approval_decided_in_process(stream):
    """ML-8: a decider approves, edits the arguments, or rejects with a message; "never"
    tools just run."""
    delete, ran = _recorder()

    async def decide(request):
        path = request.arguments["path"]
        if path == "a":
            return Approve()
        if path == "b":
            return Edit({"path": "b.bak"})
        return Reject("Not that one.")

    calls = [call("delete", {"path": p}) for p in "abc"]
    client = ScriptedChatClient([[*calls, call("tool_t")], "done"])
    agent = Agent(
        client, tools=[delete, tool_t], middleware=[HumanApproval({"delete": decide})]
    )
    result = await run(agent, "x", stream=stream)
    assert ran == ["a", "b.bak"]
    assert [c.result for c in result.messages[1].contents] == [
        "deleted a",
        "deleted b.bak",
        "Not that one.",
        "ok",
    ]


@pytest.mark.parametrize("answer", ["approve", "reject", "edit", "respond"])
async def test_approval_pauses_for_the_caller(stream, answer):
    """ML-8: "always" pauses the call with a function_approval_request (other calls
    run); the caller's answer resumes it: approved runs, edited runs with the new
    arguments, rejected gets the rejection result, and a result sent instead (reject
    with a message) reaches the model as the call's result."""
    delete, ran = _recorder()
    client = ScriptedChatClient(
        [
            [call("delete", {"path": "a"}, call_id="c1"), call("tool_t", call_id="c2")],
            "done",
        ]
    )
    agent = Agent(
        client, tools=[delete, tool_t], middleware=[HumanApproval({"delete": "always"})]
    )
    thread = agent.get_new_thread()
    paused = await run(agent, "x", stream=stream, thread=thread)
    assert ran == []
    requests = [
        c
        for m in paused.messages
        for c in m.contents
        if c.type == "function_approval_request"
    ]
    assert [r.function_call.call_id for r in requests] == ["c1"]
    assert paused.messages[1].contents[0].result == "ok"  # the other call ran
    request = requests[0]
    if answer == "edit":
        edited = Content.from_function_call("c1", "delete", {"path": "z"})
        reply = Message(
            "user", [Content.from_function_approval_response(True, request.id, edited)]
        )
    elif answer == "respond":
        reply = Message(
            "tool",
            [
                Content.from_function_result(
                    "c1", "Not now: the disk is being backed up."
                )
            ],
        )
    else:
        reply = Message(
            "user", [request.to_function_approval_response(answer == "approve")]
        )
    result = await run(agent, reply, stream=stream, thread=thread)
    assert result.text == "done"
    assert ran == {"approve": ["a"], "edit": ["z"], "reject": [], "respond": []}[answer]
    sent = client.requests[-1].messages
    assert is_valid_history(sent)
    results = {
        c.call_id: c.result
        for m in sent
        for c in m.contents
        if c.type == "function_result"
    }
    expected = {
        "approve": "deleted a",
        "edit": "deleted z",
        "reject": "Error: Tool call invocation was rejected by user.",
        "respond": "Not now: the disk is being backed up.",
    }
    assert results["c1"] == expected[answer]


def test_approval_policy_is_checked():
    """ML-13: a policy value that is neither "always", "never" nor callable is a
    ValueError naming the tool."""
    with pytest.raises(ValueError, match="'delete'"):
        HumanApproval({"delete": "sometimes"})


async def test_approval_decider_must_decide():
    """ML-8: a decider returning something else is a TypeError saying what to return."""
    agent = Agent(
        ScriptedChatClient([[call("tool_t")], "x"]),
        tools=[tool_t],
        middleware=[HumanApproval({"tool_t": lambda r: 1})],
    )
    with pytest.raises(TypeError, match=r"must return Approve\(\)"):
        await agent.run("x")


# ---------------------------------------------------------------------------------------------
# HistoryTrimmer (ML-9) and Summarizer (ML-10)


def _history(shape: list[str]) -> list[Message]:
    """system, then per letter: u = user text, a = assistant text, p = a call/result
    pair, b = two calls answered in one tool message."""
    out = [Message("system", ["rules"])]
    for n, kind in enumerate(shape):
        if kind == "u":
            out.append(Message("user", [f"u{n}"]))
        elif kind == "a":
            out.append(Message("assistant", [f"a{n}"]))
        elif kind == "p":
            out += [
                Message("assistant", [call("f", call_id=f"p{n}")]),
                Message("tool", [Content.from_function_result(f"p{n}", "r")]),
            ]
        else:
            out += [
                Message(
                    "assistant",
                    [call("f", call_id=f"b{n}"), call("g", call_id=f"c{n}")],
                ),
                Message(
                    "tool",
                    [
                        Content.from_function_result(f"b{n}", "r"),
                        Content.from_function_result(f"c{n}", "r"),
                    ],
                ),
            ]
    return out


@given(st.lists(st.sampled_from("uapb"), min_size=1, max_size=8))
def test_trimming_never_splits_a_pair(shape):
    """ML-9: at every limit — so at every boundary position around each call/result pair
    — the trimmed history keeps the system message, is a suffix of the input, stays
    valid (HI-1), and holds at most the limit unless only a longer suffix is clean."""
    history = _history(shape)
    rest = history[1:]
    for limit in range(1, len(rest) + 1):
        trimmed = HistoryTrimmer(max_messages=limit).trim(history)
        assert trimmed[0] is history[0]
        kept = trimmed[1:]
        assert kept == rest[len(rest) - len(kept) :]
        assert is_valid_history(trimmed)
        assert kept
        if len(kept) > limit:  # no clean cut with at most `limit` messages exists
            assert all(
                not is_valid_history(rest[cut:])
                for cut in range(len(rest) - limit, len(rest))
            )


@given(st.lists(st.sampled_from("uapb"), min_size=1, max_size=8), st.integers(5, 80))
def test_token_trimming_never_splits_a_pair(shape, budget):
    """ML-9: the token budget (with a pluggable counter) cuts the same way; system
    messages count."""
    history = _history(shape)
    rest = history[1:]
    trimmed = HistoryTrimmer(max_tokens=budget, counter=lambda m: 10).trim(history)
    assert trimmed[0] is history[0]
    assert is_valid_history(trimmed)
    kept = trimmed[1:]
    assert kept
    assert kept == rest[len(rest) - len(kept) :]
    allowed = budget // 10 - 1  # the system message counts too
    if len(kept) > allowed:  # no clean suffix fits the budget
        assert all(
            not is_valid_history(rest[cut:])
            for cut in range(max(len(rest) - allowed, 0), len(rest))
        )


async def test_trimmer_changes_one_call_not_the_transcript(stream):
    """ML-9: each model call gets the trimmed history; the thread keeps everything."""
    client = ScriptedChatClient([[call("tool_t")], "done"])
    agent = Agent(client, tools=[tool_t], middleware=[HistoryTrimmer(max_messages=2)])
    thread = agent.get_new_thread(
        messages=[Message("user", ["old"]), Message("assistant", ["older answer"])]
    )
    await run(agent, "new", stream=stream, thread=thread)
    assert client.requests[0].texts == ["assistant: older answer", "user: new"]
    assert [m.role for m in client.requests[1].messages] == ["assistant", "tool"]
    assert len(thread.messages) == 6
    assert approx_tokens(Message("user", ["abcdefgh"])) == 6


async def test_history_processors_quiet_paths(stream):
    """ML-9, ML-10: under their limits the trimmer and the summarizer send the call
    unchanged."""
    summarizer = Summarizer(ScriptedChatClient([]), trigger_messages=5, keep_last=1)
    client = ScriptedChatClient(["a"])
    agent = Agent(client, middleware=[HistoryTrimmer(max_messages=5), summarizer])
    await run(agent, "x", stream=stream)
    assert client.requests[0].texts == ["user: x"]
    tangled = (  # every cut separates a call from its result: nothing can be summarised
        Message("assistant", [call("f", call_id="a")]),
        Message("assistant", [call("f", call_id="b")]),
        Message("tool", [Content.from_function_result("a", "r")]),
        Message("tool", [Content.from_function_result("b", "r")]),
    )
    request = ModelRequest(tangled, None, (), None, None, {}, None, HookState((), {}))
    sent = []

    async def handler(req):
        sent.append(req)
        return ChatResponse([Message("assistant", ["ok"])])

    summarizer = Summarizer(ScriptedChatClient([]), trigger_messages=3, keep_last=1)
    await summarizer.wrap_model_call(request, handler)
    assert sent == [request]


def test_token_counting_and_cuts():
    """ML-9: approx_tokens counts arguments and results; clean_cut falls back to keeping
    everything."""
    assert (
        approx_tokens(Message("assistant", [call("f", {"a": "12345678"})]))
        == 4 + len('{"a": "12345678"}') // 4
    )
    assert (
        approx_tokens(Message("tool", [Content.from_function_result("k", {"x": 1})]))
        == 4 + len('{"x": 1}') // 4
    )
    history = [
        Message("assistant", [call("f", call_id="a")]),
        Message("tool", [Content.from_function_result("a", "r")]),
    ]
    assert clean_cut(history, 1) == 0


async def test_summarizer(stream):
    """ML-10: older turns become one summary message written by another client; the
    summary is cached."""
    summarizer_client = ScriptedChatClient(["SUMMARY"])
    client = ScriptedChatClient(["answer"])
    summarizer = Summarizer(summarizer_client, trigger_messages=3, keep_last=1)
    agent = Agent(client, instructions="sys", middleware=[summarizer])
    old = [
        Message("user", ["q1"]),
        Message("assistant", [call("f", call_id="k")]),
        Message("tool", [Content.from_function_result("k", "r")]),
    ]
    thread = agent.get_new_thread(messages=[*old, Message("assistant", ["a1"])])
    result = await run(agent, "q2", stream=stream, thread=thread)
    assert result.text == "answer"
    assert client.requests[0].texts == [f"user: {Summarizer.PREFIX}SUMMARY", "user: q2"]
    assert "[called f({})]" in summarizer_client.requests[0].texts[0]
    # cached: no new call
    assert await summarizer.summarize([*old, Message("assistant", ["a1"])]) == "SUMMARY"
    assert streamed_text(result) == ("answer" if stream else "")


def test_constructor_checks():
    """ML-13: bad arguments are ValueError / TypeError naming the parameter."""
    cases = [
        (lambda: ModelRetry(-1), ValueError, "max_retries"),
        (lambda: ModelRetry(on_failure="maybe"), ValueError, "on_failure"),
        (lambda: ModelRetry(initial_delay=-1), ValueError, "initial_delay"),
        (lambda: ModelRetry(retry_on=3), TypeError, "retry_on"),
        (lambda: ModelFallback(), ValueError, "at least one"),
        (lambda: ModelFallback(object()), TypeError, "BaseChatClient"),
        (lambda: ModelCallLimit(), ValueError, "run_limit or thread_limit"),
        (lambda: ModelCallLimit(run_limit=0), ValueError, "run_limit"),
        (
            lambda: ModelCallLimit(run_limit=1, exit_behavior="x"),
            ValueError,
            "exit_behavior",
        ),
        (lambda: ToolCallLimit(), ValueError, "run_limit or thread_limit"),
        (lambda: ToolRetry(True), ValueError, "max_retries"),
        (lambda: HistoryTrimmer(), ValueError, "max_messages or max_tokens"),
        (lambda: Summarizer(object()), TypeError, "chat client"),
        (
            lambda: Summarizer(ScriptedChatClient([]), trigger_messages=2, keep_last=2),
            ValueError,
            "keep_last",
        ),
        (lambda: Redact([]), ValueError, "non-empty"),
        (lambda: Redact(["a*"]), ValueError, "empty string"),
        (lambda: Redact(["a"], max_secret_length=0), ValueError, "max_secret_length"),
    ]
    for make, kind, text in cases:
        with pytest.raises(kind, match=text):
            make()


# ---------------------------------------------------------------------------------------------
# Redact (ML-11, ML-12)

SECRET = "sk-ABCDEF0123456789"
TEXT = f"key {SECRET} and {SECRET[:10]}... done"
PATTERNS = [r"sk-[A-Za-z0-9]{16}"]


@settings(max_examples=150)
@given(st.sets(st.integers(1, len(TEXT) - 1), max_size=6))
def test_streamed_secret_split_anywhere_is_redacted(cuts):
    """ML-12: wherever the chunk boundaries fall, the streamed text and the final text
    equal the redacted full text."""
    bounds = [0, *sorted(cuts), len(TEXT)]
    chunks = [TEXT[a:b] for a, b in itertools.pairwise(bounds)]
    expected = TEXT.replace(SECRET, "[REDACTED]")
    client = ScriptedChatClient([text_chunks(*chunks)])
    result = asyncio.run(
        ask(
            client,
            "x",
            stream=True,
            middleware=[Redact(PATTERNS, max_secret_length=30)],
        )
    )
    assert streamed_text(result) == expected
    assert result.text == expected


@pytest.mark.parametrize("boundary", range(1, len(SECRET)))
async def test_every_boundary_inside_the_secret(boundary):
    """ML-12: every single boundary inside the secret (exhaustively), with the default
    hold-back."""
    chunks = ["key ", SECRET[:boundary], SECRET[boundary:], " end"]
    client = ScriptedChatClient([text_chunks(*chunks)])
    result = await ask(client, "x", stream=True, middleware=[Redact(PATTERNS)])
    assert streamed_text(result) == "key [REDACTED] end"


async def test_redact_outputs_and_inputs(stream):
    """ML-11: response text is redacted in both modes; with inputs=True so are the
    messages the model gets (tool results included); the caller's messages are not
    mutated."""
    client = ScriptedChatClient(
        [[Content.from_text(f"here: {SECRET}"), call("tool_t")], f"again {SECRET}"]
    )
    mine = Message("user", [f"my key is {SECRET}"])
    redact = Redact(PATTERNS, inputs=True)
    result = await run(
        Agent(client, tools=[tool_t], middleware=[redact]), mine, stream=stream
    )
    assert SECRET not in str([m.to_dict() for m in result.messages])
    assert client.requests[0].texts == ["user: my key is [REDACTED]"]
    assert mine.text == f"my key is {SECRET}"
    if stream:
        assert SECRET not in streamed_text(result)


async def test_redact_flushes_before_other_contents():
    """ML-12: a non-text content ends the held text: it is flushed, redacted, before
    it."""
    updates = [
        ChatResponseUpdate([Content.from_text(f"a {SECRET[:5]}")], "assistant"),
        ChatResponseUpdate(
            [Content.from_text(SECRET[5:]), call("tool_t", call_id="q")], "assistant"
        ),
    ]
    client = ScriptedChatClient([updates, "done"])
    result = await ask(
        client,
        "x",
        stream=True,
        options={"tools": [tool_t]},
        middleware=[Redact(PATTERNS)],
    )
    first = result.messages[0]
    assert [c.type for c in first.contents][-1] == "function_call"
    assert first.text == "a [REDACTED]"


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (Redact.EMAIL, "mail ann.lee+x@mail.example.org now", "mail [REDACTED] now"),
        (
            Redact.IPV4,
            "host 192.168.10.255 and 999.1.1.1",
            "host [REDACTED] and 999.1.1.1",
        ),
        (
            Redact.CREDIT_CARD,
            "card 4111 1111 1111 1111 ok, order 12345",
            "card [REDACTED] ok, order 12345",
        ),
        (
            Redact.API_KEY,
            "key sk-proj_abcdefghijklmnop1234 and AKIAABCDEFGHIJKLMNOP",
            "key [REDACTED] and [REDACTED]",
        ),
    ],
)
def test_ready_made_patterns(pattern, text, expected):
    """ML-11: the ready-made patterns find what they name and leave look-alikes
    alone."""
    assert Redact([pattern]).redact(text) == expected


async def test_redact_tool_results_sent_to_the_model():
    """ML-11: with inputs=True string tool results are redacted before the model sees
    them."""
    from minagent.middleware import Redact

    @tool
    def leak() -> str:
        """Returns a secret."""
        return "token sk-ABCDEF0123456789"

    client = ScriptedChatClient([[call("leak")], "done"])
    await Agent(
        client, tools=[leak], middleware=[Redact([r"sk-[A-Za-z0-9]{16}"], inputs=True)]
    ).run("x")
    assert client.requests[1].messages[-1].contents[0].result == "token [REDACTED]"
