# Copyright (c) Microsoft. All rights reserved.
# Ported from microsoft/agent-framework python/samples/02-agents/tools/function_tool_with_approval_and_threads.py
# (commit a2856d3b92a0); changed: imports, and the chat client -> ScriptedChatClient.

import asyncio
from typing import Annotated

from minagent import Agent, Message, tool
from minagent.testing import ScriptedChatClient, call, reply

"""
Tool Approvals with Threads

This sample demonstrates using tool approvals with threads.
With threads, you don't need to manually pass previous messages -
the thread stores and retrieves them automatically.
"""


@tool(approval_mode="always_require")
def add_to_calendar(event_name: Annotated[str, "Name of the event"], date: Annotated[str, "Date of the event"]) -> str:
    """Add an event to the calendar (requires approval)."""
    print(f">>> EXECUTING: add_to_calendar(event_name='{event_name}', date='{date}')")
    return f"Added '{event_name}' to calendar on {date}"


def calendar_answer(messages, options):
    """The scripted model's second turn: report what the tool call did."""
    result = str(messages[-1].contents[-1].result)
    return f"Done: {result}." if result.startswith("Added") else "Understood, I did not add the event to your calendar."


async def approval_example() -> None:
    """Example showing approval with threads."""
    print("=== Tool Approval with Thread ===\n")

    agent = Agent(
        client=ScriptedChatClient(
            [
                reply(call("add_to_calendar", {"event_name": "Dentist appointment", "date": "March 15th"})),
                calendar_answer,
            ]
        ),
        name="CalendarAgent",
        instructions="You are a helpful calendar assistant.",
        tools=[add_to_calendar],
    )

    thread = agent.get_new_thread()

    # Step 1: Agent requests to call the tool
    query = "Add a dentist appointment on March 15th"
    print(f"User: {query}")
    result = await agent.run(query, thread=thread)

    # Check for approval requests
    if result.user_input_requests:
        for request in result.user_input_requests:
            print("\nApproval needed:")
            print(f"  Function: {request.function_call.name}")
            print(f"  Arguments: {request.function_call.arguments}")

            # User approves (in real app, this would be user input)
            approved = True  # Change to False to see rejection
            print(f"  Decision: {'Approved' if approved else 'Rejected'}")

            # Step 2: Send approval response
            approval_response = request.to_function_approval_response(approved=approved)
            result = await agent.run(Message("user", [approval_response]), thread=thread)

    print(f"Agent: {result}\n")


async def rejection_example() -> None:
    """Example showing rejection with threads."""
    print("=== Tool Rejection with Thread ===\n")

    agent = Agent(
        client=ScriptedChatClient(
            [
                reply(call("add_to_calendar", {"event_name": "Team meeting", "date": "December 20th"})),
                calendar_answer,
            ]
        ),
        name="CalendarAgent",
        instructions="You are a helpful calendar assistant.",
        tools=[add_to_calendar],
    )

    thread = agent.get_new_thread()

    query = "Add a team meeting on December 20th"
    print(f"User: {query}")
    result = await agent.run(query, thread=thread)

    if result.user_input_requests:
        for request in result.user_input_requests:
            print("\nApproval needed:")
            print(f"  Function: {request.function_call.name}")
            print(f"  Arguments: {request.function_call.arguments}")

            # User rejects
            print("  Decision: Rejected")

            # Send rejection response
            rejection_response = request.to_function_approval_response(approved=False)
            result = await agent.run(Message("user", [rejection_response]), thread=thread)

    print(f"Agent: {result}\n")


async def main() -> None:
    await approval_example()
    await rejection_example()


if __name__ == "__main__":
    asyncio.run(main())
