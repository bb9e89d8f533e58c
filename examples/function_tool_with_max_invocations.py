"""A tool that may run only a fixed number of times (`@tool(max_invocations=...)`): once
the limit is reached, further calls get an error result instead of running, and the
tool's counters say what happened. The session keeps the whole exchange, calls and
results included.
"""

import asyncio

from minagent import Agent, tool
from minagent.testing import ScriptedChatClient, call


@tool(max_invocations=2)
def free_sample(product: str) -> str:
    """Send the user a free sample of a product."""
    return f"a sample of {product} is on its way"


def shop_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return f"Result: {last.contents[0].result}"
    return [call("free_sample", {"product": last.text.split()[-1].rstrip(".")})]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([shop_model] * 6),
        name="SampleDesk",
        instructions="Send free samples on request.",
        tools=[free_sample],
    )
    session = agent.create_session()
    for product in ("tea", "coffee", "cocoa"):
        result = await agent.run(f"Send me a sample of {product}.", session=session)
        print(f"SampleDesk: {result}")

    ran, raised = free_sample.invocation_count, free_sample.invocation_exception_count
    print(f"Calls that ran: {ran}, calls that raised: {raised}")
    print("The session's history:")
    for message in session.state["in_memory"]["messages"]:
        for content in message.contents:
            if content.type == "function_call":
                print(f"  {message.role}: call {content.name} {content.arguments}")
            elif content.type == "function_result":
                print(f"  {message.role}: result {content.result}")
            else:
                print(f"  {message.role}: {content.text}")


if __name__ == "__main__":
    asyncio.run(main())
