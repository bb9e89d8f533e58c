"""Token usage per model call, from chat middleware, in both modes: without streaming it
reads `context.result.usage_details` after `call_next`; when streaming the result is a
stream, so it adds a transform hook that spots the usage update as it passes. The run's
own usage is the sum.
"""

import asyncio

from minagent import Agent, UsageDetails, chat_middleware, tool
from minagent.testing import ScriptedChatClient, call, reply

CALL_USAGE = UsageDetails(
    input_token_count=40, output_token_count=12, total_token_count=52
)
ANSWER_USAGE = UsageDetails(
    input_token_count=75, output_token_count=20, total_token_count=95
)


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def editor_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return reply(
            f"That sentence has {last.contents[0].result} words.", usage=ANSWER_USAGE
        )
    sentence = last.text.split(": ", 1)[1]
    return reply(call("word_count", {"text": sentence}), usage=CALL_USAGE)


def show(label, usage):
    print(
        f"  [{label}] in={usage.input_token_count} out={usage.output_token_count} total={usage.total_token_count}"
    )


@chat_middleware
async def usage_per_call(context, call_next):
    if not context.stream:
        await call_next()
        show("model call", context.result.usage_details)
        return

    def spot_usage(update):
        for content in update.contents:
            if content.type == "usage":
                show("model call, streamed", content.usage_details)
        return update

    context.stream_transform_hooks.append(spot_usage)
    await call_next()


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([editor_model] * 4),
        name="Editor",
        instructions="Help with writing.",
        tools=[word_count],
        middleware=[usage_per_call],
    )
    question = "How many words are in this: the quick brown fox jumps"

    print("Without streaming:")
    result = await agent.run(question)
    print(f"Editor: {result}")
    show("whole run", result.usage_details)

    print("Streaming:")
    stream = agent.run(question, stream=True)
    async for update in stream:
        if update.text:
            print(f"Editor: {update.text}")
    final = await stream.get_final_response()
    show("whole run", final.usage_details)


if __name__ == "__main__":
    asyncio.run(main())
