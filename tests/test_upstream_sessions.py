"""Structured service session ids and streaming providers with finalizers, as upstream
users write them (spec/sessions.md SE-65, spec/providers.md PV-60)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Sequence
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ResponseStream,
)
from minagent.testing import ScriptedChatClient
from minagent.upstream import AgentInvalidRequestException

STRUCTURED = {"context_id": "ctx-1", "task_id": "task-2", "task_state": "working"}


def test_a_structured_service_session_id_is_kept_and_round_trips() -> None:
    """SE-65: a dict id is taken by get_session and the constructor, and
    to_dict/from_dict copy it."""
    agent = Agent(ScriptedChatClient([]))
    session = agent.get_session(service_session_id=STRUCTURED)
    assert session.service_session_id == STRUCTURED
    data = session.to_dict()
    assert data["service_session_id"] == STRUCTURED
    assert data["service_session_id"] is not STRUCTURED
    plain = json.loads(json.dumps(data))
    restored = AgentSession.from_dict(plain)
    assert restored.service_session_id == STRUCTURED
    assert restored.service_session_id is not plain["service_session_id"]


@pytest.mark.parametrize("bad", [{}, "", 3, ["a"]])
def test_get_session_refuses_what_is_not_an_id(bad: Any) -> None:
    """SE-65: an empty dict or str, or anything else, is a ValueError."""
    with pytest.raises(ValueError, match="non-empty string or dict"):
        Agent(ScriptedChatClient([])).get_session(service_session_id=bad)


async def test_a_chat_client_agent_refuses_a_structured_id_before_calling(
    stream: bool,
) -> None:
    """SE-65: the run fails before any model call, saying a string is expected."""
    client = ScriptedChatClient(["never"])
    agent = Agent(client)
    session = agent.get_session(service_session_id={"context_id": "ctx-1"})
    run = (
        agent.run("Hello", session=session, stream=True).get_final_response()
        if stream
        else agent.run("Hello", session=session)
    )
    with pytest.raises(
        AgentInvalidRequestException, match="expects a string service_session_id"
    ):
        await run
    assert client.requests == []


class FinalizingClient(BaseChatClient):
    """Upstream's single hook; the conversation id is known only to the stream's
    finalizer."""

    def __init__(self) -> None:
        super().__init__()
        self.finalized = False

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: dict[str, Any],
        **kw: Any,
    ):  # type: ignore[no-untyped-def]
        async def updates() -> AsyncIterable[ChatResponseUpdate]:
            yield ChatResponseUpdate([Content.from_text("Hel")], "assistant")
            yield ChatResponseUpdate([Content.from_text("lo")], "assistant")

        def finalize(got: Sequence[ChatResponseUpdate]) -> ChatResponse:
            self.finalized = True
            response = ChatResponse.from_updates(got)
            response.conversation_id = "conv-9"
            response.response_id = "resp-9"
            return response

        return ResponseStream(updates(), finalizer=finalize)


async def test_a_finalizers_ids_reach_the_response_and_the_session() -> None:
    """PV-60: the finalizer's conversation and response ids reach the final response
    and, through it, the session; the text is unchanged."""
    agent = Agent(FinalizingClient())
    session = AgentSession()
    stream = agent.run("Hi", session=session, stream=True)
    texts = [update.text async for update in stream]
    final = await stream.get_final_response()
    assert "".join(texts) == "Hello"
    assert final.text == "Hello"
    assert session.service_session_id == "conv-9"
    direct = (
        await FinalizingClient().get_response("Hi", stream=True).get_final_response()
    )
    assert direct.conversation_id == "conv-9"
    assert direct.response_id == "resp-9"


async def test_a_stream_left_early_does_not_run_the_finalizer() -> None:
    """PV-60: leaving early reads no final response from the provider."""
    client = FinalizingClient()
    stream = client.get_response("Hi", stream=True)
    async for _ in stream:
        break
    await stream.aclose()
    assert not client.finalized
    whole = FinalizingClient()
    await whole.get_response("Hi", stream=True).get_final_response()
    assert whole.finalized
