"""Error results of the tool loop and what model output can never do to a run
(spec/loop.md LP-6, LP-12, LP-27 .. LP-29): bad calls and raising tools are error
results, bounded; nothing that cannot be sent enters the transcript; a broken history is
repaired before it is sent. In both modes."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from minagent import (
    Agent,
    ChatResponse,
    Content,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    Message,
    UnknownToolError,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run
from tests.loop._script import (
    Script,
    add,
    exceptions,
    get_weather,
    results,
    run_both,
    run_mode,
)

# ---------------------------------------------------------------------------------------------
# LP-6 error results


@pytest.mark.parametrize(
    ("bad_call", "expected", "exception"),
    [
        pytest.param(
            call("forecast", {"city": "Oslo"}, call_id="c1"),
            [
                'Error: Requested function "forecast" not found. Available functions: add, get_weather.'
            ],
            "unknown function 'forecast'",
            id="unknown-tool",
        ),
        pytest.param(
            call("get_weather", '{"city": "Oslo"', call_id="c1"),
            [
                "Error: Argument parsing failed. Invalid arguments for get_weather: arguments are not valid JSON"
            ],
            "invalid arguments",
            id="invalid-json",
        ),
        pytest.param(
            call("get_weather", "[1, 2]", call_id="c1"),
            [
                "Error: Argument parsing failed. Invalid arguments for get_weather: "
                "arguments must be a JSON object, got list"
            ],
            "invalid arguments",
            id="not-an-object",
        ),
        pytest.param(
            call("get_weather", {"city": "Oslo", "unit": "kelvin"}, call_id="c1"),
            [
                "Error: Argument parsing failed. Invalid arguments for get_weather:",
                "$.unit",
                '"celsius", "fahrenheit"',
                '"kelvin"',
            ],
            "invalid arguments",
            id="enum",
        ),
        pytest.param(
            call("get_weather", {"unit": "celsius"}, call_id="c1"),
            [
                "Error: Argument parsing failed. Invalid arguments for get_weather:",
                "city",
            ],
            "invalid arguments",
            id="missing-required",
        ),
        pytest.param(
            call("add", {"a": "one", "b": 2.5}, call_id="c1"),
            [
                "Error: Argument parsing failed. Invalid arguments for add:",
                "$.a: expected integer",
                "$.b: expected integer",
            ],
            "invalid arguments",
            id="every-failing-parameter",
        ),
    ],
)
async def test_bad_calls_become_error_results(
    bad_call: Content, expected: list[str], exception: str
) -> None:
    """LP-6: an unknown tool lists the available ones; arguments that are not a JSON
    object or fail the schema name every failing path, what was expected and what is
    allowed; the tool is not called and the model is called again."""
    script = Script(reply(bad_call), "sorry")
    ns, streamed, _ = await run_both(
        script, "go", options={"tools": [get_weather, add]}
    )
    assert streamed == ns
    text = results(ns)["c1"]
    assert text.startswith(expected[0])
    for fragment in expected[1:]:
        assert fragment in text
    assert "argument parsing failed" not in text
    assert exceptions(ns)["c1"] == exception
    assert ns.text == "sorry"
    assert len(script.requests) == 2
    script.assert_consumed()


@pytest.mark.parametrize("detailed", [False, True])
async def test_tool_exception_becomes_error_result(detailed: bool) -> None:
    """LP-6: a tool that raises gives "Error: Function failed." (plus the exception's
    type and message only with include_detailed_errors); `exception` holds the
    message."""

    @tool
    async def fragile(x: int) -> int:
        raise ValueError(f"bad value {x}")

    script = Script(
        reply(call("fragile", {"x": 7}, call_id="c1")),
        "it failed",
        config=FunctionInvocationConfiguration(include_detailed_errors=detailed),
    )
    ns, streamed, _ = await run_both(script, "go", options={"tools": [fragile]})
    assert streamed == ns
    expected = "Error: Function failed."
    if detailed:
        expected += " Exception: ValueError: bad value 7"
    assert results(ns) == {"c1": expected}
    assert exceptions(ns) == {"c1": "bad value 7"}
    assert script.requests[1].messages[-1].contents[0].result == expected
    assert ns.text == "it failed"


async def test_sync_tool_exception_without_message() -> None:
    """LP-6: a sync tool (run in a worker thread) that raises is an error result too;
    with an empty message `exception` holds the type name."""

    @tool
    def broken() -> None:
        raise KeyError

    script = Script(reply(call("broken", {}, call_id="c1")), "ok")
    ns, streamed, _ = await run_both(script, "go", options={"tools": [broken]})
    assert streamed == ns
    assert results(ns) == {"c1": "Error: Function failed."}
    assert exceptions(ns) == {"c1": "KeyError"}


def function_results(response: Any) -> list[Content]:
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


class ToolLike:
    """A tool without FunctionTool: name, description, parameters and invoke."""

    name = "lookup"
    description = "Look up a key."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"key": {"type": "string", "maxLength": 3}},
        "required": ["key"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def invoke(self, arguments: Any, *, context: Any = None) -> str:
        self.seen.append(dict(arguments))
        return "found"


async def test_tool_like_objects_are_validated_like_function_tools(
    stream: bool,
) -> None:
    """LP-6: arguments that violate a tool-like object's schema never reach its invoke;
    the model gets the validation error."""
    lookup = ToolLike()
    client = ScriptedChatClient(
        [
            reply(
                call("lookup", {"key": "toolong"}, call_id="a"),
                call("lookup", {"key": "ok"}, call_id="b"),
            ),
            "done",
        ]
    )
    response = await run(Agent(client, tools=[lookup]), "go", stream=stream)
    assert lookup.seen == [{"key": "ok"}]
    bad, good = function_results(response)
    assert bad.exception == "invalid arguments"
    assert "$.key" in bad.result
    assert good.result == "found"


# ---------------------------------------------------------------------------------------------
# LP-12 unknown tools may terminate


async def test_terminate_on_unknown_calls_raises(stream: bool) -> None:
    """LP-12: with terminate_on_unknown_calls=True a call to an unknown tool raises
    UnknownToolError (a KeyError) out of the run; known sibling calls are cancelled."""
    started = asyncio.Event()
    cancelled: list[bool] = []

    @tool
    async def slow() -> str:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    script = Script(
        reply(call("slow", {}, call_id="c1"), call("nope", {}, call_id="c2")),
        "never used",
        config=FunctionInvocationConfiguration(terminate_on_unknown_calls=True),
    )
    with pytest.raises(UnknownToolError, match="nope") as info:
        await run_mode(script, "go", stream, options={"tools": [slow]})
    assert isinstance(info.value, KeyError)
    assert info.value.name == "nope"
    assert len(script.requests) == 1
    assert cancelled == ([True] if started.is_set() else [])


async def test_a_client_without_inner_get_response_says_so() -> None:
    """LP-2: a BaseChatClient subclass that implements no provider call fails with a
    clear error."""

    from minagent import BaseChatClient

    class Empty(BaseChatClient):
        pass

    with pytest.raises(
        NotImplementedError, match="Empty must implement _inner_get_response"
    ):
        await Empty().get_response("hi")


def test_agent_middleware_on_a_client_is_refused() -> None:
    """MW-4: a chat client runs chat and function middleware only; agent middleware is a
    clear error."""

    from minagent import AgentContext, MiddlewareException
    from minagent.testing import ScriptedChatClient

    async def outer(context: AgentContext, call_next: object) -> None:
        await call_next()  # type: ignore[operator]

    with pytest.raises(
        MiddlewareException, match="agent middleware cannot run in a chat client"
    ):
        ScriptedChatClient([], middleware=[outer])


async def test_surrogates_in_call_arguments_and_results_of_a_response_are_repaired(
    stream: bool,
) -> None:
    """LP-27: a function call's arguments and a hosted result in the model's own
    response are repaired too."""
    hosted = Content.from_function_result("h1", "bad \udc00")
    calling = Content.from_function_call("c1", "echo", '{"text": "x \ud800"}')

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    first = ChatResponse(
        [
            Message(
                "assistant",
                [Content.from_function_call("h1", "hosted", "{}"), hosted, calling],
            )
        ]
    )
    client = ScriptedChatClient([first, "done"])
    response = await run(Agent(client, tools=[echo]), "go", stream=stream)
    calls = [
        c for m in response.messages for c in m.contents if c.type == "function_call"
    ]
    texts = [c.arguments for c in calls if c.name == "echo"]
    assert texts == ['{"text": "x \ufffd"}']
    results = [
        c.result
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    ]
    assert "bad \ufffd" in results


async def test_lone_surrogates_never_poison_a_thread(stream: bool) -> None:
    """LP-27: model text with a lone surrogate, a surrogate pair split across two
    streamed chunks, and a tool result with a lone surrogate are repaired before they
    are stored: the next request can be encoded (utf-8)."""
    from minagent import ChatResponseUpdate

    @tool
    def broken() -> str:
        """Returns a lone surrogate."""
        return "bad \udc00 result"

    split_pair = [
        ChatResponseUpdate([Content.from_text("smile \ud83d")], "assistant"),
        ChatResponseUpdate([Content.from_text("\ude00 and \ud800")], "assistant"),
    ]
    client = ScriptedChatClient(
        [reply(call("broken", {}, call_id="b")), split_pair, "next"]
    )
    agent = Agent(client, tools=[broken])
    thread = agent.get_new_thread()
    first = await run(agent, "go", stream=stream, thread=thread)
    assert first.messages[-1].text == "smile \U0001f600 and \ufffd"
    assert function_results(first)[0].result == "bad \ufffd result"
    await run(agent, "again", stream=stream, thread=thread)
    for message in client.requests[-1].messages:
        message.to_json().encode("utf-8")  # would raise on a lone surrogate
        for content in message.contents:
            for value in (content.text, content.result):
                if isinstance(value, str):
                    value.encode("utf-8")


async def test_a_broken_history_is_repaired_before_it_is_sent(stream: bool) -> None:
    """LP-28, HI-1: a thread restored with a dangling call and an orphan result is sent
    valid."""
    from minagent import AgentThread, is_valid_history

    broken = [
        Message("user", ["hi"]),
        Message("assistant", [call("lookup", {}, call_id="dangling")]),
        Message("tool", [Content.from_function_result("orphan", "stale")]),
        Message("assistant", ["earlier answer"]),
    ]
    client = ScriptedChatClient(["fine"])
    thread = AgentThread(messages=list(broken))
    await run(Agent(client), "next", stream=stream, thread=thread)
    sent = client.requests[0].messages
    assert is_valid_history(sent)
    assert [
        c.call_id for m in sent for c in m.contents if c.type == "function_result"
    ] == ["dangling"]
    assert thread.messages[: len(broken)] == broken  # the thread keeps what it had


async def test_a_foreign_orphan_result_added_mid_run_is_not_sent(stream: bool) -> None:
    """LP-28: a tool that appends a message with an orphan result to the live transcript
    does not make the next model call receive an invalid history (the loop checks
    again)."""
    from minagent import is_valid_history

    @tool
    def meddle(ctx: FunctionInvocationContext) -> str:
        """Appends an orphan result."""
        ctx.messages.append(
            Message("tool", [Content.from_function_result("ghost", "boo")])
        )
        return "done"

    client = ScriptedChatClient([reply(call("meddle", {}, call_id="m1")), "fine"])
    await run(Agent(client, tools=[meddle]), "go", stream=stream)
    assert all(is_valid_history(r.messages) for r in client.requests)
    assert "ghost" not in {
        c.call_id for m in client.requests[1].messages for c in m.contents
    }


async def test_error_results_are_bounded(stream: bool) -> None:
    """LP-29: a 1 MB tool name and 10,000 unexpected properties give error results of a
    few KB."""

    @tool
    def f(a: int) -> int:
        """f"""
        return a

    args = {"a": 1, **{f"x{i}": i for i in range(10_000)}, "y" * 100_000: 1}
    client = ScriptedChatClient(
        [
            reply(call("f", args, call_id="1"), call("g" * 1_000_000, {}, call_id="2")),
            "ok",
        ]
    )
    response = await run(Agent(client, tools=[f]), "go", stream=stream)
    invalid, unknown = function_results(response)
    assert len(invalid.result) < 8_000
    assert invalid.result.endswith("more problems")
    assert len(unknown.result) < 300
    assert ("g" * 61 + "...") in unknown.result
    assert response.text == "ok"


async def test_the_history_is_checked_only_when_it_may_be_invalid(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LP-28: no check for a history without calls and results, nor after the loop's own
    appends; one check for a restored history with calls (then valid, kept valid by the
    loop)."""
    import minagent._transcript as loop_module

    checks: list[int] = []
    real = loop_module.repair_history

    def counting(messages: Any) -> Any:
        checks.append(len(messages))
        return real(messages)

    monkeypatch.setattr(loop_module, "repair_history", counting)

    @tool
    def lookup(key: str) -> str:
        """Look up."""
        return key

    client = ScriptedChatClient(
        [reply(call("lookup", {"key": "a"}, call_id="k1")), "found"]
    )
    await run(Agent(client, tools=[lookup]), "plain", stream=stream)
    assert checks == []
    restored = [
        Message("user", ["earlier"]),
        Message("assistant", [call("lookup", {"key": "z"}, call_id="old")]),
        Message("tool", [Content.from_function_result("old", "z")]),
    ]
    client = ScriptedChatClient(
        [reply(call("lookup", {"key": "b"}, call_id="k2")), "found"]
    )
    await run(
        Agent(client, tools=[lookup]),
        [*restored, Message("user", ["again"])],
        stream=stream,
    )
    assert checks == [4]  # before the first model call only
