"""Pauses and early exits of the tool loop (spec/loop.md LP-11, LP-13, LP-14, LP-20 ..
LP-23, LP-31).

Every scenario runs in both modes with the same script (`run_both`), except where the
run raises or is cancelled, which is checked once per mode.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minagent import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    MiddlewareTermination,
    function_middleware,
    tool,
)
from minagent._loop import LIMIT_FALLBACK_TEXT, REJECTED_TEXT
from minagent.testing import ScriptedChatClient, call, reply
from tests._support import modes
from tests._support.modes import run
from tests.loop._script import (
    Script,
    add,
    assert_paired,
    describe,
    results,
    run_both,
    run_mode,
)

ASK_USER = FunctionTool(
    name="ask_user",
    description="Ask the user a question.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)
LOOKUP_DECLARATION = {
    "name": "lookup",
    "description": "Look something up on the caller's side.",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
}


def _approval_kinds(messages: list[Message]) -> list[str]:
    return [
        c.type
        for m in messages
        for c in m.contents
        if c.type in ("function_approval_request", "function_approval_response")
    ]


# ---------------------------------------------------------------------------------------------
# LP-11 declaration-only tools


@pytest.mark.parametrize(
    ("tools", "config"),
    [
        pytest.param([ASK_USER, add], None, id="declaration-only-tool"),
        pytest.param(
            [{**LOOKUP_DECLARATION, "name": "ask_user"}, add],
            None,
            id="declaration-dict",
        ),
        pytest.param(
            [add],
            FunctionInvocationConfiguration(additional_tools=[ASK_USER]),
            id="additional-tools",
        ),
    ],
)
async def test_declaration_only_call_is_returned_with_the_batch_results(
    tools: list[Any], config: FunctionInvocationConfiguration | None
) -> None:
    """LP-11: a call to a declaration-only tool, a declaration dict or an additional
    tool is never executed: the run ends after the batch with the other calls' results,
    and the call is flagged user_input_request."""
    script = Script(
        reply(
            call("ask_user", {"question": "Which city?"}, call_id="q1"),
            call("add", {"a": 1, "b": 2}, call_id="c1"),
        ),
        "never used",
        config=config,
    )
    ns, streamed, updates = await run_both(script, "go", options={"tools": tools})
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call q1 ask_user, call c1 add",
        "tool: result c1=3",
    ]
    assert len(script.requests) == 1
    (pending,) = ns.user_input_requests
    assert (pending.type, pending.call_id, pending.user_input_request) == (
        "function_call",
        "q1",
        True,
    )
    assert [u.role for u in updates] == ["assistant", "tool"]


async def test_additional_tool_with_a_function_is_not_executed() -> None:
    """LP-11: a tool in additional_tools is never executed, even when it has a
    function."""
    ran: list[str] = []

    @tool
    def secret() -> str:
        ran.append("ran")
        return "x"

    script = Script(
        reply(call("secret", {}, call_id="s1")),
        config=FunctionInvocationConfiguration(additional_tools=[secret]),
    )
    ns, streamed, _ = await run_both(script, "go")
    assert streamed == ns
    assert ran == []
    assert [c.call_id for c in ns.user_input_requests] == ["s1"]


async def test_caller_answers_a_pending_call_in_the_next_request() -> None:
    """LP-11: the caller answers a pending call with a function_result and the run
    continues."""
    first = Script(reply(call("ask_user", {"question": "Which city?"}, call_id="q1")))
    ns, streamed, _ = await run_both(first, "weather?", options={"tools": [ASK_USER]})
    assert streamed == ns
    answer = Message("tool", [Content.from_function_result("q1", "Oslo")])
    conversation = [Message("user", ["weather?"]), *ns.messages, answer]

    second = Script("It is sunny in Oslo.")
    ns2, streamed2, _ = await run_both(
        second, conversation, options={"tools": [ASK_USER]}
    )
    assert streamed2 == ns2
    assert ns2.text == "It is sunny in Oslo."
    assert describe(second.requests[0].messages) == [
        "user: weather?",
        "assistant: call q1 ask_user",
        "tool: result q1=Oslo",
    ]


async def test_function_middleware_answers_a_declaration_only_call() -> None:
    """LP-11: declaration-only calls go through function middleware, which may answer
    them by setting context.result without call_next; the loop then continues."""
    seen: list[tuple[str, dict[str, Any]]] = []

    @function_middleware
    async def answer_questions(
        context: FunctionInvocationContext, call_next: Any
    ) -> None:
        seen.append((context.function.name, context.arguments))
        if context.function.name == "ask_user":
            context.result = "Oslo"
            return
        await call_next()

    script = Script(
        reply(call("ask_user", {"question": "Which city?"}, call_id="q1")),
        "Oslo it is.",
        middleware=[answer_questions],
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [ASK_USER]})
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call q1 ask_user",
        "tool: result q1=Oslo",
        "assistant: Oslo it is.",
    ]
    assert ns.user_input_requests == []
    assert seen == [("ask_user", {"question": "Which city?"})] * 2


async def test_declaration_only_call_with_invalid_arguments_gets_an_error_result() -> (
    None
):
    """LP-11, LP-6: a declaration's schema is checked before the call is returned:
    invalid arguments are an error result for the model, not a pending call."""
    script = Script(reply(call("ask_user", {"question": 42}, call_id="q1")), "retrying")
    ns, streamed, _ = await run_both(script, "go", options={"tools": [ASK_USER]})
    assert streamed == ns
    assert results(ns)["q1"].startswith(
        "Error: Argument parsing failed. Invalid arguments for ask_user:"
    )
    assert ns.user_input_requests == []


# ---------------------------------------------------------------------------------------------
# LP-13 / LP-14 approvals


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def list_files() -> list[str]:
    """List files."""
    return ["a.txt"]


def _approval_script() -> Script:
    return Script(
        reply(
            call("list_files", {}, call_id="c1"),
            call("delete_file", {"path": "a.txt"}, call_id="c2"),
        ),
    )


async def test_approval_needed_pauses_the_batch() -> None:
    """LP-13, LP-2: a batch with an always_require tool runs nothing; the assistant
    message gets one function_approval_request per such call (id = call_id) and the run
    returns; the stream yields one assistant update with the requests."""
    ran: list[str] = []

    @function_middleware
    async def spy(context: FunctionInvocationContext, call_next: Any) -> None:
        ran.append(context.function.name)
        await call_next()

    script = _approval_script()
    script.middleware = [spy]
    ns, streamed, updates = await run_both(
        script, "clean up", options={"tools": [list_files, delete_file]}
    )
    assert streamed == ns
    assert ran == []
    (message,) = ns.messages
    assert [c.type for c in message.contents] == [
        "function_call",
        "function_call",
        "function_approval_request",
    ]
    (request,) = ns.user_input_requests
    assert request.id == "c2"
    assert request.function_call is not None
    assert request.function_call.call_id == "c2"
    assert [u.role for u in updates] == ["assistant", "assistant"]
    assert [c.type for c in updates[-1].contents] == ["function_approval_request"]


async def _pause() -> tuple[list[Message], ChatResponse]:
    script = _approval_script()
    ns, streamed, _ = await run_both(
        script, "clean up", options={"tools": [list_files, delete_file]}
    )
    assert streamed == ns
    return [Message("user", ["clean up"]), *ns.messages], ns


@pytest.mark.parametrize("approved", [True, False])
async def test_resume_runs_or_rejects_and_sends_a_clean_transcript(
    approved: bool,
) -> None:
    """LP-14: on resume the approved calls and the calls needing no approval run through
    function middleware; a rejected call gets the rejection result; the model sees a
    clean call/result sequence without approval contents; the response starts with the
    tool message."""
    conversation, paused = await _pause()
    (request,) = paused.user_input_requests
    conversation.append(
        Message("user", [request.to_function_approval_response(approved)])
    )
    script: Script

    @function_middleware
    async def spy(context: FunctionInvocationContext, call_next: Any) -> None:
        script.log.append(context.function.name)
        await call_next()

    script = Script("Done.", middleware=[spy])
    ns, streamed, updates = await run_both(
        script, conversation, options={"tools": [list_files, delete_file]}
    )
    assert streamed == ns
    expected_result = "deleted a.txt" if approved else REJECTED_TEXT
    assert describe(ns.messages) == [
        f"tool: result c1=['a.txt'], result c2={expected_result}",
        "assistant: Done.",
    ]
    assert (
        script.logs
        == [["list_files", "delete_file"] if approved else ["list_files"]] * 2
    )
    (model_call,) = script.requests
    assert describe(model_call.messages) == [
        "user: clean up",
        "assistant: call c1 list_files, call c2 delete_file",
        f"tool: result c1=['a.txt'], result c2={expected_result}",
    ]
    assert _approval_kinds(model_call.messages) == []
    assert _approval_kinds(ns.messages) == []
    assert [u.role for u in updates] == ["tool", "assistant"]
    if not approved:
        assert ns.messages[0].contents[1].exception


async def test_unanswered_approval_requests_are_rejected() -> None:
    """LP-14: a request left unanswered is rejected like a rejected one."""
    script = Script(
        reply(
            call("delete_file", {"path": "a"}, call_id="d1"),
            call("delete_file", {"path": "b"}, call_id="d2"),
        ),
    )
    ns, streamed, _ = await run_both(script, "clean", options={"tools": [delete_file]})
    assert streamed == ns
    first, _second = ns.user_input_requests
    conversation = [
        Message("user", ["clean"]),
        *ns.messages,
        Message("user", [first.to_function_approval_response(True)]),
    ]
    resume = Script("ok")
    ns2, streamed2, _ = await run_both(
        resume, conversation, options={"tools": [delete_file]}
    )
    assert streamed2 == ns2
    assert results(ns2) == {"d1": "deleted a", "d2": REJECTED_TEXT}
    assert_paired(resume.requests[0].messages)
    assert _approval_kinds(resume.requests[0].messages) == []


async def test_resume_keeps_a_message_sent_with_the_approval_after_the_results() -> (
    None
):
    """LP-14: the tool message goes right after the calls' message; other contents of
    the caller's message stay, after it."""
    conversation, paused = await _pause()
    (request,) = paused.user_input_requests
    conversation.append(
        Message("user", [request.to_function_approval_response(True), "and then stop"])
    )
    script = Script("Stopped.")
    ns, streamed, _ = await run_both(
        script, conversation, options={"tools": [list_files, delete_file]}
    )
    assert streamed == ns
    assert describe(script.requests[0].messages) == [
        "user: clean up",
        "assistant: call c1 list_files, call c2 delete_file",
        "tool: result c1=['a.txt'], result c2=deleted a.txt",
        "user: and then stop",
    ]


async def test_approval_resumed_with_only_the_request_and_its_answer(stream):
    """LP-14: the upstream sample sends back the query, the request in an assistant
    message and the approval in a user message (no thread, no original call): the
    approved call runs."""
    ran = []

    @tool(approval_mode="always_require")
    def delete_file(path):
        """Delete a file."""
        ran.append(path)
        return "deleted"

    client = ScriptedChatClient(
        [reply(call("delete_file", {"path": "a.txt"}, call_id="d1")), "Done."]
    )
    agent = Agent(client, tools=[delete_file])
    query = "Delete a.txt"
    result = await run(agent, query, stream=stream)
    assert len(result.user_input_requests) == 1
    assert ran == []
    new_inputs = [query]
    for request in result.user_input_requests:
        new_inputs.append(Message("assistant", [request]))
        new_inputs.append(
            Message("user", [request.to_function_approval_response(True)])
        )
    result = await run(agent, new_inputs, stream=stream)
    assert ran == ["a.txt"]
    assert result.text == "Done."
    sent = client.requests[-1].messages
    assert [(m.role, [c.type for c in m.contents]) for m in sent] == [
        ("user", ["text"]),
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
    ]


# ---------------------------------------------------------------------------------------------
# LP-20 termination, LP-21 middleware exceptions


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("context-result", "stopped by policy"),
        ("exception-result", "from the exception"),
        ("after-call-next", "deleted a.txt"),
    ],
)
async def test_termination_finishes_the_batch_and_stops(
    how: str, expected: str
) -> None:
    """LP-20: MiddlewareTermination in function middleware lets the parallel sibling
    finish, appends the batch's results and returns without another model call; the
    terminated call's result is context.result, else the exception's result."""
    script: Script

    @tool
    async def slow() -> str:
        await asyncio.sleep(0.05)
        script.log.append("slow finished")
        return "slow result"

    @tool
    def remove(path: str) -> str:
        return f"deleted {path}"

    @function_middleware
    async def guard(context: FunctionInvocationContext, call_next: Any) -> None:
        if context.function.name != "remove":
            await call_next()
            return
        if how == "context-result":
            context.result = "stopped by policy"
            raise MiddlewareTermination
        if how == "exception-result":
            raise MiddlewareTermination(result="from the exception")
        await call_next()
        raise MiddlewareTermination(result="ignored: context.result is set")

    script = Script(
        reply(
            call("slow", {}, call_id="c1"),
            call("remove", {"path": "a.txt"}, call_id="c2"),
        ),
        "never used",
        middleware=[guard],
    )
    ns, streamed, updates = await run_both(
        script, "go", options={"tools": [slow, remove]}
    )
    assert streamed == ns
    assert script.logs == [["slow finished"]] * 2
    assert results(ns) == {"c1": "slow result", "c2": expected}
    assert len(script.requests) == 1
    assert [u.role for u in updates] == ["assistant", "tool"]


async def test_middleware_exception_propagates_and_cancels_siblings(
    stream: bool,
) -> None:
    """LP-21: an exception other than MiddlewareTermination raised by function
    middleware propagates out of the run; the other calls of the batch are cancelled and
    awaited first."""
    started = asyncio.Event()
    events: list[str] = []

    @tool
    async def slow() -> str:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            events.append("slow cancelled")
            raise
        return "never"

    @tool
    def forbidden() -> str:
        return "never"

    @function_middleware
    async def policy(context: FunctionInvocationContext, call_next: Any) -> None:
        if context.function.name == "forbidden":
            await started.wait()
            raise PermissionError("not allowed")
        await call_next()

    script = Script(
        reply(call("slow", {}, call_id="c1"), call("forbidden", {}, call_id="c2")),
        "never used",
        middleware=[policy],
    )
    with pytest.raises(PermissionError, match="not allowed"):
        await run_mode(script, "go", stream, options={"tools": [slow, forbidden]})
    assert events == ["slow cancelled"]
    assert len(script.requests) == 1


async def test_tool_exception_through_middleware_is_an_error_result() -> None:
    """LP-21, LP-6: a tool's own exception, also when middleware lets it through or
    re-raises it unchanged, becomes an error result; a different exception from
    middleware propagates."""
    script: Script

    @tool
    def flaky() -> str:
        raise ConnectionError("down")

    @function_middleware
    async def passthrough(context: FunctionInvocationContext, call_next: Any) -> None:
        try:
            await call_next()
        except ConnectionError:
            script.log.append("saw it")
            raise

    script = Script(
        reply(call("flaky", {}, call_id="c1")), "ok", middleware=[passthrough]
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [flaky]})
    assert streamed == ns
    assert results(ns) == {"c1": "Error: Function failed."}
    assert script.logs == [["saw it"]] * 2

    @function_middleware
    async def wrapper(context: FunctionInvocationContext, call_next: Any) -> None:
        try:
            await call_next()
        except ConnectionError as exc:
            raise RuntimeError("wrapped") from exc

    for stream in (False, True):
        wrapped = Script(
            reply(call("flaky", {}, call_id="c1")), "ok", middleware=[wrapper]
        )
        with pytest.raises(RuntimeError, match="wrapped"):
            await run_mode(wrapped, "go", stream, options={"tools": [flaky]})


# ---------------------------------------------------------------------------------------------
# LP-22 cancellation


async def test_cancelling_a_run_mid_tool_cancels_the_tools(stream: bool) -> None:
    """LP-22: cancelling the consumer task while slow tools run cancels and awaits them;
    no task is left running (checked by the test harness) and each tool saw
    CancelledError."""
    started: list[str] = []
    cancelled: list[str] = []
    both_started = asyncio.Event()

    @tool
    async def slow(tag: str) -> str:
        started.append(tag)
        if len(started) == 2:
            both_started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(tag)
            raise
        return tag

    client = ScriptedChatClient(
        [
            reply(
                call("slow", {"tag": "a"}, call_id="a"),
                call("slow", {"tag": "b"}, call_id="b"),
            )
        ]
    )
    consumed: list[ChatResponseUpdate] = []

    async def consume() -> None:
        if stream:
            async for update in client.get_response(
                "go", stream=True, options={"tools": [slow]}
            ):
                consumed.append(update)
        else:
            await client.get_response("go", options={"tools": [slow]})

    task = asyncio.create_task(consume())
    await both_started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["a", "b"]
    assert len(client.requests) == 1
    if stream:
        assert [u.role for u in consumed] == ["assistant"]


class ClosingProbe(BaseChatClient):
    """A streaming provider that records whether its stream was closed."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        try:
            for word in ("one ", "two ", "three"):
                self.events.append(f"sent {word.strip()}")
                yield ChatResponseUpdate([word], "assistant")
        finally:
            self.events.append("closed")


async def test_closing_the_stream_early_closes_the_model_stream() -> None:
    """LP-22: closing a run's stream early closes the model's stream."""
    client = ClosingProbe()
    stream = client.get_response("count", stream=True)
    async for update in stream:
        assert update.text == "one "
        break
    await stream.aclose()
    assert client.events == ["sent one", "closed"]


async def test_cancelling_while_the_model_streams_closes_the_model_stream() -> None:
    """LP-22: cancelling the consumer while the model streams closes the model's
    stream."""
    gate = asyncio.Event()

    class Slow(ClosingProbe):
        async def _inner_get_streaming_response(
            self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
        ) -> AsyncIterator[ChatResponseUpdate]:
            try:
                yield ChatResponseUpdate(["partial"], "assistant")
                gate.set()
                await asyncio.sleep(10)
                yield ChatResponseUpdate(["never"], "assistant")
            finally:
                self.events.append("closed")

    client = Slow()

    async def consume() -> None:
        async for _ in client.get_response("hi", stream=True):
            pass

    task = asyncio.create_task(consume())
    await gate.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert client.events == ["closed"]


# ---------------------------------------------------------------------------------------------
# LP-23 early returns in iteration 2+ keep the whole transcript


def _second_step(kind: str) -> Any:
    if kind == "approval":
        return reply(call("delete_file", {"path": "x"}, call_id="c2"))
    if kind == "declaration-only":
        return reply(call("ask_user", {"question": "ok?"}, call_id="c2"))
    if kind == "termination":
        return reply(call("halt", {}, call_id="c2"))
    if kind == "limit":
        return reply(call("add", {"a": 9, "b": 9}, call_id="c2"))
    return reply("All done.")


@pytest.mark.parametrize(
    ("kind", "tail"),
    [
        ("final", ["assistant: All done."]),
        ("approval", ["assistant: call c2 delete_file, function_approval_request"]),
        ("declaration-only", ["assistant: call c2 ask_user"]),
        ("termination", ["assistant: call c2 halt", "tool: result c2=halted"]),
        ("limit", [f"assistant: {LIMIT_FALLBACK_TEXT}"]),
    ],
)
async def test_every_return_keeps_the_whole_transcript(
    kind: str, tail: list[str]
) -> None:
    """LP-23: every return in iteration 2 or later — final answer, approval pause,
    pending declaration-only call, termination, limit — returns every earlier call,
    result and injected message, in order."""

    @tool
    def halt() -> str:
        return "unused"

    @tool
    def note(context: FunctionInvocationContext) -> str:
        assert context.messages is not None
        context.messages.append(Message("user", ["injected"]))
        return "noted"

    @function_middleware
    async def terminator(context: FunctionInvocationContext, call_next: Any) -> None:
        if context.function.name == "halt":
            context.result = "halted"
            raise MiddlewareTermination
        await call_next()

    script = Script(
        reply(
            call("add", {"a": 1, "b": 2}, call_id="c1"), call("note", {}, call_id="n1")
        ),
        _second_step(kind),
        middleware=[terminator],
        config=FunctionInvocationConfiguration(
            max_iterations=1 if kind == "limit" else 40
        ),
    )
    tools = [add, note, halt, delete_file, ASK_USER]
    ns, streamed, _ = await run_both(script, "go", options={"tools": tools})
    assert streamed == ns
    assert describe(ns.messages) == [
        "assistant: call c1 add, call n1 note",
        "tool: result c1=3, result n1=noted",
        "user: injected",
        *tail,
    ]
    assert len(script.requests) == 2
    script.assert_consumed()


@pytest.mark.parametrize("with_middleware", [False, True])
async def test_a_tool_raising_termination_stops_the_loop(with_middleware: bool) -> None:
    """LP-20, MW-6: a tool that raises MiddlewareTermination ends the loop the same way
    with or without function middleware; its result is the exception's result."""

    @tool
    async def stop_here() -> str:
        """Stop."""
        raise MiddlewareTermination(result="stopped by the tool")

    async def passthrough(context: FunctionInvocationContext, call_next: Any) -> None:
        await call_next()

    def make() -> ScriptedChatClient:
        return ScriptedChatClient(
            [reply(call("stop_here", {}, call_id="s1")), "never"],
            middleware=[passthrough] if with_middleware else None,
        )

    non_streamed, streamed, _ = await run_both(
        make, "go", options={"tools": [stop_here]}
    )
    assert non_streamed == streamed
    assert [m.role for m in non_streamed.messages] == ["assistant", "tool"]
    assert non_streamed.messages[-1].contents[0].result == "stopped by the tool"
    assert non_streamed.messages[-1].contents[0].exception is None


async def test_wire_shaped_declaration_dict_is_known_and_validated() -> None:
    """LP-11, LP-6: a declaration dict in the {"type": "function", "function": {...}}
    shape is a known tool: a valid call is returned unexecuted, an invalid one gets the
    schema's error result."""
    declaration = {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
            },
        },
    }

    def make(arguments: dict[str, Any]) -> ScriptedChatClient:
        return ScriptedChatClient(
            [reply(call("lookup", arguments, call_id="d1")), "fixed"]
        )

    pending, streamed, _ = await run_both(
        lambda: make({"q": "x"}), "go", options={"tools": [declaration]}
    )
    assert pending == streamed
    assert [c.user_input_request for c in pending.messages[0].contents] == [True]
    invalid, _, _ = await run_both(
        lambda: make({}), "go", options={"tools": [declaration]}
    )
    error = invalid.messages[1].contents[0]
    assert "$.q: required property is missing" in error.result


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await modes.run(target, *args, stream=stream, **kwargs)
    return await modes.get_response(target, *args, stream=stream, **kwargs)


def function_results(response):
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


async def test_user_input_required_without_contents_answers_the_call(stream):
    """LP-11: a tool raising `UserInputRequiredError` with no contents gets an error
    result and the loop goes on."""
    from minagent import UserInputRequiredError

    @tool
    def ask(question):
        raise UserInputRequiredError(contents=[])

    client = ScriptedChatClient(
        [reply(call("ask", {"question": "?"})), reply("carried on")]
    )
    response = await run_or_get_response(
        Agent(client, tools=[ask]), "go", stream=stream
    )
    assert response.text == "carried on"
    assert function_results(response)[0].exception is not None


async def test_hosted_approval_passes_through(stream):
    """LP-31: an approval response for a call the service runs (its call names a
    `server_label`) is passed to the provider as it is; nothing local runs or is
    rejected."""
    hosted_call = Content.from_function_call(
        "mcp_1", "search", "{}", additional_properties={"server_label": "docs"}
    )
    answer = Content.from_function_approval_response(True, "mcp_1", hosted_call)
    client = ScriptedChatClient([reply("searched")])
    response = await run_or_get_response(
        client, [Message("user", [answer])], stream=stream
    )
    sent = [c for m in client.requests[0].messages for c in m.contents]
    assert [c.type for c in sent] == ["function_approval_response"]
    assert sent[0].approved is True
    assert function_results(response) == []
    assert response.text == "searched"
