"""Agent-level middleware (given to `Agent(...)`, runs on every run) and run-level
middleware (given to one `run(...)`): the agent's wrap the run's, `context.metadata`
carries notes inward, and a run-level cache answers a repeated question without reaching
the agent at all.
"""

import asyncio
from collections.abc import Awaitable, Callable

from minagent import (
    Agent,
    AgentContext,
    AgentMiddleware,
    FunctionInvocationContext,
    tool,
)
from minagent.testing import ScriptedChatClient, call

PRICES = {"ACME": 41.5, "GLOBEX": 12.25}


@tool
def quote(symbol: str) -> str:
    """The last traded price of a share."""
    return f"{symbol} last traded at {PRICES[symbol]:.2f} USD"


class TradingHours(AgentMiddleware):
    """Agent level: refuses order requests, marks everything else as checked."""

    async def process(self, context, call_next):
        if "buy" in context.messages[-1].text.lower():
            print("[hours] orders are not taken here")
            return
        context.metadata["checked_by"] = "TradingHours"
        await call_next()


async def log_tool(
    context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
) -> None:
    print(f"[tool] {context.function.name} {context.arguments}")
    await call_next()


async def show_metadata(
    context: AgentContext, call_next: Callable[[], Awaitable[None]]
) -> None:
    print(f"[run] metadata seen: {context.metadata}")
    await call_next()


class AnswerCache(AgentMiddleware):
    """Run level: keeps answers by question and replays them."""

    def __init__(self) -> None:
        self.answers = {}

    async def process(self, context, call_next):
        question = context.messages[-1].text
        if question in self.answers:
            print("[cache] hit")
            context.result = self.answers[question]
            return
        print("[cache] miss")
        await call_next()
        self.answers[question] = context.result


def broker_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return last.contents[0].result + "."
    symbol = next(word for word in last.text.rstrip("?").split() if word.isupper())
    return [call("quote", {"symbol": symbol})]


async def main() -> None:
    client = ScriptedChatClient([broker_model] * 6)
    agent = Agent(
        client=client,
        name="Broker",
        instructions="Quote share prices.",
        tools=[quote],
        middleware=[TradingHours(), log_tool],
    )
    cache = AnswerCache()

    runs = [
        ("What does ACME trade at?", []),
        ("What does GLOBEX trade at?", [show_metadata]),
        ("What does ACME trade at?", [cache]),
        ("What does ACME trade at?", [cache]),
        ("Buy 10 ACME for me.", [cache]),
    ]
    for number, (question, run_middleware) in enumerate(runs, 1):
        names = [getattr(m, "__name__", type(m).__name__) for m in run_middleware]
        print(f"--- run {number}, run-level middleware: {names}")
        print(f"User: {question}")
        result = await agent.run(question, middleware=run_middleware)
        print(f"Broker: {result.text if result and result.text else '(nothing)'}")
    print(f"Model calls made: {len(client.requests)}")


if __name__ == "__main__":
    asyncio.run(main())
