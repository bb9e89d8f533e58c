"""The tool loop's settings live on the client, in
`client.function_invocation_configuration`, and can be changed item by item. Here
`include_detailed_errors` lets the model see why a tool failed, and `max_iterations`
caps how many rounds of tool calls one request may take.
"""

import asyncio

from minagent import Agent, tool
from minagent.testing import ScriptedChatClient, call


@tool
def square_root(x: float) -> float:
    """The square root of a non-negative number."""
    if x < 0:
        raise ValueError(f"cannot take the square root of {x}")
    return x**0.5


def calculator_model(messages, options):
    """Asks for -4 once and reports the result; asked to keep going, it never stops by
    itself."""
    last = messages[-1]
    if options.get("tool_choice") == "none":
        results = [
            c.result
            for m in messages
            for c in m.contents
            if c.type == "function_result"
        ]
        return f"Stopped after {len(results)} results: {results}"
    if "-4" in messages[0].text:
        if last.role == "tool":
            return f"The tool said: {last.contents[0].result}"
        return [call("square_root", {"x": -4})]
    return [call("square_root", {"x": 16})]


async def main() -> None:
    client = ScriptedChatClient([calculator_model] * 8)
    client.function_invocation_configuration["include_detailed_errors"] = True
    client.function_invocation_configuration["max_iterations"] = 3
    print(
        f"include_detailed_errors = {client.function_invocation_configuration['include_detailed_errors']}"
    )
    print(
        f"max_iterations = {client.function_invocation_configuration['max_iterations']}"
    )

    agent = Agent(
        client=client,
        name="Calculator",
        instructions="Use your tools.",
        tools=[square_root],
    )

    result = await agent.run("What is the square root of -4?")
    print(f"Calculator: {result}")

    before = len(client.requests)
    result = await agent.run("Keep taking the square root of 16.")
    print(f"Calculator: {result}")
    print(f"Model calls for that request: {len(client.requests) - before}")


if __name__ == "__main__":
    asyncio.run(main())
