"""An agent used as another agent's tool: `agent.as_tool(...)` turns a haiku-writing
agent into a function tool with one text argument. The coordinator's function middleware
shows the call going to the sub-agent and the sub-agent's answer coming back as the
tool's result.
"""

import asyncio
from collections.abc import Awaitable, Callable

from minagent import Agent, FunctionInvocationContext
from minagent.testing import ScriptedChatClient, call


async def show_delegation(
    context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
) -> None:
    print(f"[to {context.function.name}] {context.arguments}")
    await call_next()
    print(f"[from {context.function.name}] {context.result!r}")


def poet_model(messages, options):
    """The sub-agent's model: writes a haiku about the topic it is given."""
    topic = messages[-1].text
    return (
        f"Morning {topic} steams / small clouds over the saucer / the day can wait now"
    )


def editor_model(messages, options):
    """The coordinator's model: hands the topic to the haiku tool, then presents its
    poem."""
    last = messages[-1]
    if last.role == "tool":
        return f"Here is your haiku:\n{last.contents[0].result}"
    return [call("haiku_writer", {"topic": "tea"})]


async def main() -> None:
    client = ScriptedChatClient([editor_model, poet_model, editor_model])
    poet = Agent(client=client, name="Poet", instructions="Write haiku.")
    haiku_tool = poet.as_tool(
        name="haiku_writer",
        description="Writes a haiku about a topic.",
        arg_name="topic",
        arg_description="What the haiku is about.",
    )
    editor = Agent(
        client=client,
        name="Editor",
        instructions="Use the haiku writer for poems.",
        tools=[haiku_tool],
        middleware=[show_delegation],
    )
    result = await editor.run("Write me a haiku about tea.")
    print(f"Editor: {result}")


if __name__ == "__main__":
    asyncio.run(main())
