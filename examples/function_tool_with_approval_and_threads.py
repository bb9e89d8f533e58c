"""Approvals with a thread (the thread-era spelling of a session): the thread already
holds the question and the approval request, so the caller sends back only the user's
decision. One request is approved and runs; the next is rejected and the tool never
runs.
"""

import asyncio

from minagent import Agent, Message, tool
from minagent.testing import ScriptedChatClient, call

sent_invoices: list[str] = []


@tool(approval_mode="always_require")
def send_invoice(customer: str, amount_eur: float) -> str:
    """Send an invoice to a customer."""
    sent_invoices.append(customer)
    return f"invoice of {amount_eur:.2f} EUR sent to {customer}"


def billing_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        result = str(last.contents[0].result)
        return (
            f"Done: {result}."
            if result.startswith("invoice")
            else "Understood, nothing was sent."
        )
    customer, amount = last.text.removeprefix("Invoice ").split(" for ")
    return [
        call(
            "send_invoice",
            {"customer": customer, "amount_eur": float(amount.removesuffix(" EUR."))},
        )
    ]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([billing_model] * 4),
        name="Billing",
        instructions="Send invoices when asked.",
        tools=[send_invoice],
    )

    for question, decision in (
        ("Invoice Acme Ltd for 250 EUR.", True),
        ("Invoice Globex for 990 EUR.", False),
    ):
        thread = agent.get_new_thread()
        print(f"User: {question}")
        result = await agent.run(question, thread=thread)
        for request in result.user_input_requests:
            print(
                f"Approval asked for {request.function_call.name} {request.function_call.arguments}"
            )
            print(f"Decision: {'approve' if decision else 'reject'}")
            answer = Message(
                "user", [request.to_function_approval_response(approved=decision)]
            )
            result = await agent.run(answer, thread=thread)
        print(f"Billing: {result}")
        print(
            f"The thread holds: {[(m.role, [c.type for c in m.contents]) for m in thread.messages]}"
        )

    print(f"Invoices actually sent: {sent_invoices}")


if __name__ == "__main__":
    asyncio.run(main())
