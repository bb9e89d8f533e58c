"""Replacing and rewriting results in middleware, in both modes.

On the client, a chat middleware replaces what the model said while a maintenance notice
is active: a `ChatResponse` without streaming, a `ResponseStream` of its own updates
when streaming. On the agent, an agent middleware removes the internal `[ops]` tags from
whatever comes back: it rewrites the response, or, when streaming, adds a transform hook
for the updates the caller sees and a result hook for the final response (a transform
hook never changes the final response).
"""

import asyncio

from minagent import (
    Agent,
    AgentContext,
    AgentResponse,
    ChatContext,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ResponseStream,
)
from minagent.testing import ScriptedChatClient

NOTICE = ["[ops] Bookings are paused ", "until 14:00 ", "for maintenance."]


async def maintenance_notice(context: ChatContext, call_next):
    await call_next()
    if context.stream:

        async def notice_updates():
            for piece in NOTICE:
                yield ChatResponseUpdate(
                    contents=[Content.from_text(piece)], role="assistant"
                )

        context.result = ResponseStream(
            notice_updates(), finalizer=ChatResponse.from_updates
        )
    else:
        context.result = ChatResponse(
            messages=[Message("assistant", ["".join(NOTICE)])]
        )


def untag(text):
    return text.replace("[ops] ", "")


async def strip_ops_tags(context: AgentContext, call_next):
    await call_next()
    if context.stream:

        def clean_update(update):
            update.contents = [
                Content.from_text(untag(c.text)) if c.type == "text" else c
                for c in update.contents
            ]
            return update

        def sign(response):
            messages = [Message(m.role, [untag(m.text)]) for m in response.messages]
            return AgentResponse(
                messages=[*messages, Message("assistant", [" (Front desk)"])]
            )

        context.result.with_transform_hook(clean_update).with_result_hook(sign)
    else:
        messages = [Message(m.role, [untag(m.text)]) for m in context.result.messages]
        context.result = AgentResponse(
            messages=[*messages, Message("assistant", [" (Front desk)"])]
        )


async def main() -> None:
    client = ScriptedChatClient(
        ["Your table for two is booked."] * 2, middleware=[maintenance_notice]
    )
    agent = Agent(
        client=client,
        name="FrontDesk",
        instructions="Book tables.",
        middleware=[strip_ops_tags],
    )

    result = await agent.run("Book a table for two at 19:00.")
    print(f"FrontDesk: {result.text}")

    print("FrontDesk (streamed): ", end="")
    stream = agent.run("Book a table for two at 20:00.", stream=True)
    async for update in stream:
        print(update.text, end="|")
    print()
    final = await stream.get_final_response()
    print(f"Final response: {final.text}")


if __name__ == "__main__":
    asyncio.run(main())
