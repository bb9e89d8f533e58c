"""Middleware written as plain async functions, its layer given by the annotation of the
first parameter: an agent middleware that refuses requests containing an e-mail address
(it returns without calling `call_next`, so the run answers with nothing), and a
function middleware that reports each tool call and how long it took.
"""

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import Annotated

from pydantic import Field

from minagent import Agent, AgentContext, FunctionInvocationContext, tool
from minagent.testing import ScriptedChatClient, call

CATALOGUE = {
    "The Hobbit": "shelf F-12, 2 copies available",
    "Emma": "shelf A-03, on loan until Friday",
}


@tool(approval_mode="never_require")
def find_book(
    title: Annotated[str, Field(description="Exact title of the book.")],
) -> str:
    """Look a book up in the library catalogue."""
    return CATALOGUE.get(title, "not in the catalogue")


async def no_personal_data(
    context: AgentContext, call_next: Callable[[], Awaitable[None]]
) -> None:
    text = context.messages[-1].text
    if re.search(r"\S+@\S+", text):
        print("[privacy] request contains an e-mail address: not sent to the model")
        return
    await call_next()


async def time_tool_calls(
    context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
) -> None:
    print(f"[tools] {context.function.name}({context.arguments})")
    started = time.perf_counter()
    await call_next()
    print(
        f"[tools] {context.function.name} answered in {time.perf_counter() - started:.4f}s"
    )


def catalogue_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return f"The Hobbit: {last.contents[0].result}."
    return [call("find_book", {"title": "The Hobbit"})]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([catalogue_model] * 2),
        name="Librarian",
        instructions="Help visitors find books.",
        tools=find_book,
        middleware=[no_personal_data, time_tool_calls],
    )

    for question in (
        "Where can I find The Hobbit?",
        "Send the list of my loans to jo@example.org",
    ):
        print(f"User: {question}")
        result = await agent.run(question)
        print(f"Librarian: {result.text if result and result.text else '(no answer)'}")


if __name__ == "__main__":
    asyncio.run(main())
