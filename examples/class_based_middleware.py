"""Middleware written as classes: an `AgentMiddleware` that answers some requests itself
by setting `context.result` (the model is never called), and a `FunctionMiddleware` with
its own state, an audit log of every tool call.
"""

import asyncio
from typing import Annotated

from pydantic import Field

from minagent import (
    Agent,
    AgentMiddleware,
    AgentResponse,
    FunctionMiddleware,
    Message,
    tool,
)
from minagent.testing import ScriptedChatClient, call

BALANCES = {"savings": "1,250.00 EUR", "current": "310.42 EUR"}


@tool(approval_mode="never_require")
def balance(
    account: Annotated[str, Field(description="Which account: savings or current.")],
) -> str:
    """Read the balance of one of the user's accounts."""
    return BALANCES[account]


class ReadOnlyGuard(AgentMiddleware):
    """Payments need a person; the agent only reads."""

    async def process(self, context, call_next):
        if "transfer" in context.messages[-1].text.lower():
            print("[guard] payment request answered without the model")
            context.result = AgentResponse(
                messages=[
                    Message(
                        "assistant",
                        [
                            "I can only read balances; please ask a banker to move money."
                        ],
                    )
                ]
            )
            return
        await call_next()


class AuditTrail(FunctionMiddleware):
    """Keeps a record of every tool call and its result."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    async def process(self, context, call_next):
        await call_next()
        self.entries.append(
            f"{context.function.name} {context.arguments} -> {context.result}"
        )


def bank_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return f"Your savings account holds {last.contents[0].result}."
    return [call("balance", {"account": "savings"})]


async def main() -> None:
    audit = AuditTrail()
    agent = Agent(
        client=ScriptedChatClient([bank_model] * 2),
        name="Teller",
        instructions="Answer questions about the user's accounts.",
        tools=[balance],
        middleware=[ReadOnlyGuard(), audit],
    )

    for question in ("How much is in my savings?", "Transfer 100 EUR to my landlord."):
        print(f"User: {question}")
        print(f"Teller: {await agent.run(question)}")

    print("Audit trail:")
    for entry in audit.entries:
        print(f"  {entry}")


if __name__ == "__main__":
    asyncio.run(main())
