"""The tool loop's last call (coverage, tests only): spec/loop.md LP-7, LP-9, both
modes."""

from __future__ import annotations

from minagent import Agent, FunctionInvocationConfiguration, tool
from minagent._loop import LIMIT_FALLBACK_TEXT
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run


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
