"""A function middleware that catches what a tool raises and gives the model a result it
can use instead: the model never sees the exception, only the fallback the middleware
wrote.
"""

import asyncio
from collections.abc import Awaitable, Callable

from minagent import Agent, FunctionInvocationContext, tool
from minagent.testing import ScriptedChatClient, call


@tool
def exchange_rate(base: str, quote: str) -> float:
    """Today's exchange rate from the rates service."""
    raise ConnectionError("rates service unreachable")


async def fallback_on_outage(
    context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
) -> None:
    try:
        await call_next()
    except ConnectionError as error:
        print(f"[fallback] {context.function.name} failed: {error}")
        context.result = "UNAVAILABLE: tell the user to try again in a few minutes."


def finance_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        result = last.contents[0].result
        if str(result).startswith("UNAVAILABLE"):
            return "The rates service is down right now; please try again in a few minutes."
        return f"1 EUR buys {result} USD."
    return [call("exchange_rate", {"base": "EUR", "quote": "USD"})]


async def main() -> None:
    client = ScriptedChatClient([finance_model] * 2)
    agent = Agent(
        client=client,
        name="Cashier",
        instructions="Answer currency questions with the exchange_rate tool.",
        tools=[exchange_rate],
        middleware=[fallback_on_outage],
    )
    print(f"Cashier: {await agent.run('How many dollars is one euro?')}")
    tool_message = client.requests[-1].messages[-1]
    print(f"The model was sent: {tool_message.contents[0].result!r}")


if __name__ == "__main__":
    asyncio.run(main())
