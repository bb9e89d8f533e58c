"""Chat middleware wraps each call to the model, inside the tool loop: a run with one
tool call makes two model calls, so it runs twice. Shown here: a class that reports what
each model call is sent, a decorated function that swaps a word in what each call sends
(the conversation kept in the session is what the user wrote), and a function that
answers itself and stops the pipeline with `MiddlewareTermination`. Chat middleware can
belong to the agent or to a single run.
"""

import asyncio

from minagent import (
    Agent,
    ChatMiddleware,
    ChatResponse,
    Message,
    MiddlewareTermination,
    chat_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call

WORDS = {
    ("cat", "fr"): "chat",
    ("dog", "fr"): "chien",
    ("cat", "de"): "Katze",
    ("dog", "de"): "Hund",
}


@tool
def translate(word: str, language: str) -> str:
    """Translate an English word into French (fr) or German (de)."""
    return WORDS.get((word, language), "?")


class ModelCallReport(ChatMiddleware):
    """Prints the roles of the messages each model call is sent."""

    def __init__(self) -> None:
        self.calls = 0

    async def process(self, context, call_next):
        self.calls += 1
        roles = ", ".join(m.role for m in context.messages)
        print(f"  [model call {self.calls}] sent: {roles}")
        await call_next()


@chat_middleware
async def prefer_german(context, call_next):
    context.messages = [
        Message(m.role, [m.text.replace("French", "German")]) if m.role == "user" else m
        for m in context.messages
    ]
    await call_next()


@chat_middleware
async def no_homework(context, call_next):
    if "homework" in context.messages[-1].text:
        context.result = ChatResponse(
            messages=[Message("assistant", ["Nice try! Do your homework yourself."])]
        )
        raise MiddlewareTermination
    await call_next()


def translator_model(messages, options):
    """Calls translate with the word and language named in the question, then quotes the
    result."""
    last = messages[-1]
    if last.role == "tool":
        return f"That is '{last.contents[0].result}'."
    words = last.text.rstrip("?").split()
    language = "de" if "German" in words else "fr"
    return [
        call("translate", {"word": words[words.index("for") + 1], "language": language})
    ]


async def main() -> None:
    report = ModelCallReport()
    agent = Agent(
        client=ScriptedChatClient([translator_model] * 4),
        name="Translator",
        instructions="Translate single words.",
        tools=[translate],
        middleware=[report],
    )

    question = "What is the French word for cat?"
    print(f"User: {question}")
    print(f"Translator: {await agent.run(question)}")

    print(f"User (run-level middleware): {question}")
    session = agent.create_session()
    print(
        f"Translator: {await agent.run(question, session=session, middleware=[prefer_german])}"
    )
    kept = session.state["in_memory"]["messages"][0]
    print(f"The session keeps what the user wrote: {kept.text}")

    question = "Translate my homework for me?"
    print(f"User (run-level middleware): {question}")
    print(f"Translator: {await agent.run(question, middleware=[no_homework])}")

    print(f"Model calls seen by the agent's chat middleware: {report.calls}")


if __name__ == "__main__":
    asyncio.run(main())
