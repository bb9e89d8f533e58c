"""Two function middleware that share state because they are methods of one object: the
first counts tool calls, the second stamps each result with the count. Registered in
that order, the first wraps the second, and the stamped result is what the model gets.
"""

import asyncio
from collections.abc import Awaitable, Callable

from minagent import Agent, FunctionInvocationContext, tool
from minagent.testing import ScriptedChatClient, call


@tool
def km_to_miles(km: float) -> str:
    """Convert kilometres to miles."""
    return f"{km} km = {km * 0.621371:.1f} miles"


@tool
def kg_to_pounds(kg: float) -> str:
    """Convert kilograms to pounds."""
    return f"{kg} kg = {kg * 2.204623:.1f} lb"


class ConversionLedger:
    def __init__(self) -> None:
        self.count = 0

    async def count_calls(
        self,
        context: FunctionInvocationContext,
        call_next: Callable[[], Awaitable[None]],
    ) -> None:
        self.count += 1
        await call_next()

    async def stamp_result(
        self,
        context: FunctionInvocationContext,
        call_next: Callable[[], Awaitable[None]],
    ) -> None:
        await call_next()
        context.result = f"#{self.count}: {context.result}"


def converter_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return str(last.contents[0].result)
    amount = float(
        next(word for word in last.text.split() if word.replace(".", "").isdigit())
    )
    if "km" in last.text:
        return [call("km_to_miles", {"km": amount})]
    return [call("kg_to_pounds", {"kg": amount})]


async def main() -> None:
    ledger = ConversionLedger()
    agent = Agent(
        client=ScriptedChatClient([converter_model] * 6),
        name="Converter",
        instructions="Convert units with your tools.",
        tools=[km_to_miles, kg_to_pounds],
        middleware=[ledger.count_calls, ledger.stamp_result],
    )
    for question in (
        "How far is 42.2 km in miles?",
        "What is 20 kg in pounds?",
        "And 5 km?",
    ):
        print(f"User: {question}")
        print(f"Converter: {await agent.run(question)}")
    print(f"Conversions counted: {ledger.count}")


if __name__ == "__main__":
    asyncio.run(main())
