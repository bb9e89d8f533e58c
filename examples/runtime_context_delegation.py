"""Values known only at run time (an API token, the caller's id) reach the tools without
the model ever seeing them: `run(..., function_invocation_kwargs={...})` puts them in
every `FunctionInvocationContext.kwargs`. Middleware can check them before a tool runs,
and an agent used as a tool (`as_tool`) hands them on to its own run, so a sub-agent's
tools get them too.
"""

import asyncio
from collections.abc import Awaitable, Callable

from minagent import Agent, FunctionInvocationContext, tool
from minagent.testing import ScriptedChatClient, call

VALID_TOKENS = {"tok-alpha": "alice", "tok-beta": "bob"}


@tool
def open_ticket(summary: str, ctx: FunctionInvocationContext) -> str:
    """Open a support ticket on behalf of the caller."""
    return f"ticket opened for {ctx.kwargs['user']}: {summary}"


async def require_token(
    context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
) -> None:
    token = context.kwargs.get("api_token")
    if token not in VALID_TOKENS:
        print(f"[auth] {context.function.name}: rejected token {token!r}")
        context.result = "refused: the caller is not authenticated"
        return
    print(f"[auth] {context.function.name}: token of {VALID_TOKENS[token]}")
    context.kwargs["user"] = VALID_TOKENS[token]
    await call_next()


def relay_model(messages, options):
    """Calls the first tool it is offered with the user's request, then reports the
    tool's result."""
    last = messages[-1]
    if last.role == "tool":
        return str(last.contents[0].result)
    tool_name = options["tools"][0].name
    argument = "summary" if tool_name == "open_ticket" else "task"
    return [call(tool_name, {argument: last.text})]


async def main() -> None:
    client = ScriptedChatClient([relay_model] * 12)
    helpdesk = Agent(
        client=client,
        name="helpdesk",
        instructions="Open tickets for users.",
        tools=[open_ticket],
        middleware=[require_token],
    )

    print("One agent:")
    for token in ("tok-alpha", "tok-wrong"):
        result = await helpdesk.run(
            "Printer on floor 2 jams", function_invocation_kwargs={"api_token": token}
        )
        print(f"  helpdesk: {result}")

    print("Through a coordinator that uses the helpdesk as a tool:")
    coordinator = Agent(
        client=client,
        name="coordinator",
        instructions="Hand support requests to the helpdesk.",
        tools=[helpdesk.as_tool(name="helpdesk", description="Files support tickets.")],
    )
    for token in ("tok-beta", "tok-wrong"):
        result = await coordinator.run(
            "VPN drops every hour", function_invocation_kwargs={"api_token": token}
        )
        print(f"  coordinator: {result}")

    sent = " ".join(
        message.text for request in client.requests for message in request.messages
    )
    print(f"A token in anything the model was sent: {'tok-' in sent}")


if __name__ == "__main__":
    asyncio.run(main())
