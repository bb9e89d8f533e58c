"""The most common agent in one program: tools, one of which needs the user's approval,
answers streamed as they are written, and a session that keeps the conversation.

With a session the caller sends back only the user's decision
(`request.to_function_approval_response(approved)`): the session already holds the
question and the approval request. The usual loop is
`while response.user_input_requests:`. Each turn streams its text chunk by chunk
(`agent.run(..., stream=True, session=session)`) and reads the final response with
`get_final_response()`. The second turn is answered from the history the session kept.
"""

import asyncio

from minagent import Agent, Message, tool
from minagent.testing import ScriptedChatClient, call

FLIGHTS = {"Oslo": "SK 4035 at 09:10", "Rome": "AZ 611 at 14:25"}
BOOKED: list[str] = []


@tool
async def find_flight(city: str) -> str:
    """Find the next flight to a city."""
    return FLIGHTS[city]


@tool(approval_mode="always_require")
async def book_flight(flight: str) -> str:
    """Book a flight (asks the user first)."""
    BOOKED.append(flight)
    return f"booked {flight}"


def travel_model(messages, options):
    """Finds a flight, books it, then reports; answers a follow-up from the history."""
    last = messages[-1]
    results = [c.result for c in last.contents if c.type == "function_result"]
    if last.role == "user" and last.text == "Which flight was it?":
        found = [
            c.result
            for m in messages
            for c in m.contents
            if c.type == "function_result" and str(c.result).startswith("booked")
        ]
        return f"It was {str(found[-1]).removeprefix('booked ')}."
    if not results:
        return call("find_flight", {"city": "Oslo"})
    if str(results[0]).startswith("booked"):
        return f"Done: {results[0]}."
    return call("book_flight", {"flight": results[0]})


async def stream_turn(agent, session, message) -> object:
    """One streamed turn: print the text as it arrives; return the final response."""
    stream = agent.run(message, stream=True, session=session)
    print(f"{agent.name}: ", end="")
    async for update in stream:
        if update.text:
            print(update.text, end="", flush=True)
    response = await stream.get_final_response()
    print()
    return response


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([travel_model] * 5),
        name="Travel",
        instructions="Book the user's flights.",
        tools=[find_flight, book_flight],
    )
    session = agent.create_session()
    response = await stream_turn(agent, session, "Book me the next flight to Oslo.")
    while response.user_input_requests:
        decisions = []
        for request in response.user_input_requests:
            call_ = request.function_call
            print(f"Approve {call_.name}({call_.arguments})? yes")
            decisions.append(request.to_function_approval_response(True))
        response = await stream_turn(agent, session, Message("user", decisions))
    print(f"Booked: {BOOKED}")
    await stream_turn(agent, session, "Which flight was it?")


if __name__ == "__main__":
    asyncio.run(main())
