"""A tool that takes a `FunctionInvocationContext` parameter gets the run's context
injected: the parameter is left out of the schema the model sees, and `ctx.kwargs` holds
the values the caller passed with `function_invocation_kwargs=`, here the id of the
customer the app has logged in.
"""

import asyncio
from typing import Annotated

from pydantic import Field

from minagent import Agent, FunctionInvocationContext, tool
from minagent.testing import ScriptedChatClient, call

ORDERS = {
    "cust-17": ["2 x espresso beans", "1 x milk frother"],
    "cust-42": ["1 x teapot"],
}


@tool
def recent_orders(
    limit: Annotated[int, Field(description="How many orders to list.")],
    ctx: FunctionInvocationContext,
) -> str:
    """List the logged-in customer's most recent orders."""
    customer = ctx.kwargs["customer_id"]
    return f"{customer}: " + "; ".join(ORDERS[customer][:limit])


def shop_model(messages, options):
    """Calls the tool with the one argument it knows about, then quotes the result."""
    last = messages[-1]
    if last.role == "tool":
        return f"Your recent orders: {last.contents[0].result}"
    return [call("recent_orders", {"limit": 2})]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([shop_model] * 4),
        name="ShopAssistant",
        instructions="Help customers with their orders.",
        tools=[recent_orders],
    )
    for customer in ("cust-17", "cust-42"):
        result = await agent.run(
            "What did I order lately?",
            function_invocation_kwargs={"customer_id": customer},
        )
        print(f"ShopAssistant: {result}")


if __name__ == "__main__":
    asyncio.run(main())
