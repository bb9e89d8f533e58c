"""A tool restored from its serialised form, with the Python function supplied at load
time (`FunctionTool.from_dict(data, dependencies=...)`): the definition can live in a
config file while the implementation stays in code.
"""

import asyncio

from minagent import Agent, FunctionTool
from minagent.testing import ScriptedChatClient, call

SAVED_DEFINITION = {
    "type": "function_tool",
    "name": "multiply",
    "description": "Multiply two whole numbers.",
    "input_model": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def multiply(a: int, b: int) -> int:
    return a * b


def arithmetic_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return f"6 times 7 is {last.contents[0].result}."
    return [call("multiply", {"a": 6, "b": 7})]


async def main() -> None:
    restored = FunctionTool.from_dict(
        SAVED_DEFINITION,
        dependencies={"function_tool": {"name:multiply": {"func": multiply}}},
    )
    agent = Agent(
        client=ScriptedChatClient([arithmetic_model] * 2),
        name="Arithmetic",
        instructions="Use your tools for arithmetic.",
        tools=[restored],
    )
    print(f"Arithmetic: {await agent.run('What is 6 times 7?')}")


if __name__ == "__main__":
    asyncio.run(main())
