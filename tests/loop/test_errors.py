"""Error results of the tool loop (spec/loop.md LP-6, LP-12), in both modes."""

from __future__ import annotations

import asyncio

import pytest

from minagent import Content, FunctionInvocationConfiguration, UnknownToolError, tool
from minagent.testing import call, reply
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
