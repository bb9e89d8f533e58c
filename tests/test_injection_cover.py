"""LP-32: `MessageInjectionMiddleware`'s own methods, upstream's way of queueing through
the middleware."""

from minagent import (
    MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY,
    Agent,
    AgentSession,
    Message,
    MessageInjectionMiddleware,
)
from minagent.testing import ScriptedChatClient, reply
from tests._support.modes import run


async def test_the_middleware_queues_for_the_next_model_call_and_shows_what_waits(
    stream,
):
    """LP-32: `middleware.enqueue_messages(session, messages)` queues anything a run
    takes in the session's state; `get_pending_messages(session)` is what waits, as a
    new list (changing it changes nothing); the session's next run gives the messages to
    the model once, and then nothing waits."""
    middleware = MessageInjectionMiddleware()
    session = AgentSession()
    assert middleware.get_pending_messages(session) == []
    middleware.enqueue_messages(session, ["be brief", Message("user", ["and polite"])])
    pending = middleware.get_pending_messages(session)
    assert [m.text for m in pending] == ["be brief", "and polite"]
    assert pending is not session.state[MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY]
    pending.clear()
    assert len(middleware.get_pending_messages(session)) == 2
    client = ScriptedChatClient([reply("ok"), reply("again")])
    agent = Agent(client, middleware=[middleware])
    await run(agent, "hello", stream=stream, session=session)
    assert client.requests[0].texts == [
        "user: hello",
        "user: be brief",
        "user: and polite",
    ]
    assert middleware.get_pending_messages(session) == []
    await run(agent, "more", stream=stream, session=session)
    assert client.requests[1].texts.count("user: be brief") == 1
