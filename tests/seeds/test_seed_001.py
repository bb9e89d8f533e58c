"""Seed 001: seed 000 after the rename, and what the rename itself says.

Seed 001's commit message: "Rename ChatAgent -> Agent, RawChatAgent -> RawAgent,
ChatMessage -> Message, ChatClientProtocol -> SupportsChatGetResponse ... Rename Agent
chat_client parameter to client". The document's examples are the same as seed 000's and
are tested in ``test_seed_000.py`` with these names; this module tests the places where
seed 001's text differs:
the renamed names, ``client=``, the ``ChatContext.client`` field, ``RawAgent.run()``,
and ``self.client.get_response(stream=False / stream=True, ...)`` in "Streaming vs
Non-Streaming".
"""

import pytest

from minagent import (
    Agent,
    AgentMiddleware,
    AgentResponse,
    BaseChatClient,
    ChatMiddleware,
    ChatResponse,
    Message,
    MiddlewareException,
    RawAgent,
    ResponseStream,
    SupportsChatGetResponse,
)
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run


def get_weather(location):
    """Get the weather for a location."""
    return f"It's sunny in {location}."


async def test_agent_takes_client(stream):
    """Seed 001, "[BREAKING] Rename Agent chat_client parameter to client":
    `Agent(client=...)` (and the client as the first positional argument) runs;
    `Message` is the message type the agent middleware sees (`messages | list[Message]`)
    and that responses hold. AG-1, TY-5."""
    seen = []

    class Inspect(AgentMiddleware):
        async def process(self, context, call_next):
            seen.extend(context.messages)
            await call_next(context)

    for make in (
        lambda c: Agent(client=c, middleware=[Inspect()]),
        lambda c: Agent(c, middleware=[Inspect()]),
    ):
        seen.clear()
        client = ScriptedChatClient(["Hello!"])
        response = await run(make(client), [Message("user", ["Hi"])], stream=stream)
        assert [type(m) for m in seen] == [Message]
        assert all(isinstance(m, Message) for m in response.messages)
        assert response.text == "Hello!"


def test_agent_rejects_chat_client_keyword_naming_client():
    """Seed 000 spells the parameter `chat_client=`; seed 001 renamed it to `client=`
    ("No backward compatibility aliases"). The old keyword is an error that names the
    new one. AG-12."""
    client = ScriptedChatClient([])
    with pytest.raises(TypeError, match=r"\bclient\b"):
        Agent(chat_client=client)


def test_supports_chat_get_response():
    """Seed 001, "2. Chat Middleware Layer" table: `client | SupportsChatGetResponse`
    (was `ChatClientProtocol`): the clients an agent takes satisfy the runtime-checkable
    protocol; other objects are refused. AG-1."""
    assert isinstance(ScriptedChatClient([]), SupportsChatGetResponse)
    with pytest.raises(TypeError):
        Agent(client=object())


async def test_chat_context_client_field(stream):
    """Seed 001, "2. Chat Middleware Layer" table: the `ChatContext` field is `client`
    (seed 000:
    `chat_client`), the chat client that `Agent` was given. MW-11."""
    seen = []

    class Inspect(ChatMiddleware):
        async def process(self, context, call_next):
            seen.append(context.client)
            await call_next(context)

    client = ScriptedChatClient(["Hello!"])
    await run(Agent(client=client, middleware=[Inspect()]), "Hi", stream=stream)
    assert seen == [client]
    assert isinstance(seen[0], SupportsChatGetResponse)


async def test_raw_agent_runs_without_agent_middleware(stream):
    """Seed 001, "Flow Diagram": `RawAgent.run()` (was `RawChatAgent`) is what the agent
    middleware's final handler calls: it runs the client without the agent middleware
    layer, and refuses agent middleware; chat (and function) middleware given to it go
    to its client. AG-1."""
    client = ScriptedChatClient(["Hello!"])
    response = await run(RawAgent(client=client), "Hi", stream=stream)
    assert isinstance(response, AgentResponse)
    assert response.text == "Hello!"

    class Logging(AgentMiddleware):
        async def process(self, context, call_next):
            await call_next(context)

    with pytest.raises(MiddlewareException):
        RawAgent(client=client, middleware=[Logging()])

    class Shout(ChatMiddleware):
        async def process(self, context, call_next):
            await call_next(context)
            if not context.stream:
                context.result = ChatResponse(
                    messages=[Message("assistant", [context.result.text.upper()])]
                )

    loud = await run(
        RawAgent(client=ScriptedChatClient(["Hello!"]), middleware=[Shout()]),
        "Hi",
        stream=stream,
    )
    assert loud.text == ("Hello!" if stream else "HELLO!")


class RecordingClient(ScriptedChatClient):
    """A provider that overrides the public `get_response`, as subclasses do."""

    def __init__(self, steps):
        super().__init__(steps)
        self.calls = []

    def get_response(self, messages, *, stream=False, options=None, **kwargs):
        self.calls.append(stream)
        return super().get_response(messages, stream=stream, options=options, **kwargs)


async def test_agent_calls_client_get_response_in_both_modes(stream):
    """Seed 001, "Streaming vs Non-Streaming": non-streaming runs `await
    self.client.get_response(stream=False, ...)`; streaming returns
    `self.client.get_response(stream=True, ...)` from the deferred `_get_stream()`. A
    client that overrides `get_response` sees one call per run, in both modes, with the
    tool loop inside it. AG-13, LP-2."""
    client = RecordingClient([[call("get_weather", {"location": "Paris"})], "Sunny."])
    response = await run(
        Agent(client=client, tools=[get_weather]), "Weather?", stream=stream
    )
    assert client.calls == [stream]
    assert response.text == "Sunny."


class ProtocolOnlyClient:
    """A chat client that implements `SupportsChatGetResponse` without
    `BaseChatClient`."""

    def __init__(self, text):
        self.text = text
        self.calls = []

    def get_response(self, messages, *, stream=False, options=None, **kwargs):
        self.calls.append((stream, [m.text for m in messages], dict(options or {})))
        response = ChatResponse(messages=[Message("assistant", [self.text])])
        if stream:

            async def updates():
                for update in response.as_updates():
                    yield update

            return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

        async def respond():
            return response

        return respond()


async def test_agent_with_protocol_only_client(stream):
    """Seed 001, "Flow Diagram" (`RawAgent->>CML:
    client.get_response(stream=False|True)`) and the `client | SupportsChatGetResponse`
    field: an agent runs any client that satisfies the protocol, in both modes, through
    its `get_response`. AG-13, AG-1."""
    client = ProtocolOnlyClient("Hello!")
    assert isinstance(client, SupportsChatGetResponse)
    assert not isinstance(client, BaseChatClient)
    response = await run(
        Agent(client=client, instructions="Be nice."), "Hi", stream=stream
    )
    assert response.text == "Hello!"
    assert client.calls == [(stream, ["Hi"], {"instructions": "Be nice."})]
