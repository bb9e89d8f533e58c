"""Tools that need the user's approval (`approval_mode="always_require"`), without a
session.

The run stops before such a call and returns an approval request
(`result.user_input_requests`). With no session the caller sends the whole exchange
back: the question, the request and the user's answer
(`request.to_function_approval_response(approved)`); the agent then runs or skips the
call and the model continues. Done once without streaming and once streaming; the
answers are read from standard input.
"""

import asyncio

from minagent import Agent, AgentResponse, Message, tool
from minagent.testing import ScriptedChatClient, call

FILES = {"notes.txt": 120, "draft.docx": 5400, "old_backup.zip": 880000}


@tool
async def list_files() -> str:
    """List the files in the user's folder."""
    return ", ".join(FILES)


@tool(approval_mode="always_require")
async def delete_file(name: str) -> str:
    """Delete a file (asks the user first)."""
    FILES.pop(name)
    return f"{name} deleted"


def cleaner_model(messages, options):
    """Lists the files and deletes the backup in one go, then reports every result."""
    results = [
        c.result for m in messages for c in m.contents if c.type == "function_result"
    ]
    if results:
        return "Results: " + "; ".join(str(r) for r in results)
    return [call("list_files"), call("delete_file", {"name": "old_backup.zip"})]


def ask(request) -> bool:
    call = request.function_call
    answer = input(f"Allow {call.name}({call.arguments})? [y/n] ")
    print(answer)
    return answer.strip().lower() == "y"


async def run_with_approvals(agent, question: str, stream: bool) -> str:
    sent: list = [Message("user", [question])]
    while True:
        if stream:
            updates = [update async for update in agent.run(sent, stream=True)]
            result = AgentResponse.from_updates(updates)
        else:
            result = await agent.run(sent)
        if not result.user_input_requests:
            return result.text
        sent += result.messages
        sent.append(
            Message(
                "user",
                [
                    r.to_function_approval_response(ask(r))
                    for r in result.user_input_requests
                ],
            )
        )


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([cleaner_model] * 4),
        name="Cleaner",
        instructions="Tidy up the user's folder.",
        tools=[list_files, delete_file],
    )
    for stream in (False, True):
        print(f"--- {'streaming' if stream else 'not streaming'}")
        print(
            f"Cleaner: {await run_with_approvals(agent, 'Free up some space.', stream)}"
        )
        print(f"Files left: {sorted(FILES)}")


if __name__ == "__main__":
    asyncio.run(main())
