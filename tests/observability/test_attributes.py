"""Attribute details of the spans and the run trace (spec/observability.md OB-5, OB-6,
OB-7, OB-13, OB-16)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from minagent import (
    Agent,
    ChatResponse,
    Content,
    FunctionTool,
    Message,
    RunTrace,
    UsageDetails,
    set_tracer,
)
from minagent.testing import ScriptedChatClient, call
from minagent.tracing.genai import _arguments_text, _messages_json

from ._recording import RecordingTracer

SECRET_SCHEMA = {
    "type": "object",
    "properties": {"token": {"type": "string", "writeOnly": True}, "n": {}},
}


@pytest.fixture
def tracer() -> Iterator[RecordingTracer]:
    recording = RecordingTracer()
    set_tracer(recording, record_content=True)
    try:
        yield recording
    finally:
        set_tracer(None)


class NamedClient(ScriptedChatClient):
    provider_name = "acme"


async def test_agent_and_chat_attributes_from_agent_client_and_options(
    tracer: RecordingTracer,
) -> None:
    """OB-5: description, default model, provider name, conversation id; a usage with
    only input tokens gives only the input attribute."""
    response = ChatResponse(
        [Message("assistant", ["hi"])],
        conversation_id="conv-1",
        usage_details=UsageDetails(input_token_count=3),
    )
    agent = Agent(
        NamedClient([response]),
        name="Bot",
        description="Says hi.",
        default_options={"model": "big-model"},
    )
    await agent.run("hello", options={"conversation_id": "conv-0"})
    agent_span, chat = tracer.spans
    assert agent_span.attributes["gen_ai.agent.description"] == "Says hi."
    assert agent_span.attributes["gen_ai.request.model"] == "big-model"
    assert chat.name == "chat big-model"
    assert chat.attributes["gen_ai.provider.name"] == "acme"
    # the request's conv-0, then the response's
    assert chat.attributes["gen_ai.conversation.id"] == "conv-1"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 3
    assert "gen_ai.usage.output_tokens" not in chat.attributes


async def test_a_result_that_cannot_be_converted_is_a_tool_error(
    tracer: RecordingTracer,
) -> None:
    """OB-7: an error result the runner makes itself (the value did not convert) is
    tool_error."""

    class Unconvertible:
        def to_dict(self) -> Any:
            raise RuntimeError("cannot")

    def odd() -> Any:
        return Unconvertible()

    tool = FunctionTool(
        name="odd", func=odd, parameters={"type": "object", "properties": {}}
    )
    agent = Agent(
        ScriptedChatClient([call("odd", {}, call_id="c1"), "done"]), tools=[tool]
    )
    await agent.run("go")
    [span] = tracer.named("execute_tool")
    assert span.attributes["error.type"] == "tool_error"


def test_secret_arguments_are_hidden_in_every_shape() -> None:
    """OB-16: parsed, unparsable and non-object arguments of a tool with secrets show no
    value."""
    tool = FunctionTool(name="auth", parameters=SECRET_SCHEMA)
    good = Content.from_function_call(
        "c1", "auth", json.dumps({"token": "s3cr3t", "n": 1})
    )
    assert json.loads(_arguments_text(good, tool)) == {"token": "[secret]", "n": 1}
    assert (
        _arguments_text(Content.from_function_call("c2", "auth", "{not json"), tool)
        == "[secret]"
    )
    plain = FunctionTool(
        name="plain", parameters={"type": "object", "properties": {"n": {}}}
    )
    assert (
        _arguments_text(Content.from_function_call("c3", "plain", '{"n": 1}'), plain)
        == '{"n": 1}'
    )
    messages = [
        Message("assistant", [Content.from_function_call("c4", "auth", "{broken")]),
        Message("assistant", [Content.from_function_call("c5", "auth", "[1, 2]")]),
        Message(
            "assistant",
            [Content.from_function_call("c6", "auth", '{"token": "s3cr3t"}')],
        ),
    ]
    recorded = _messages_json(messages, [tool])
    assert "s3cr3t" not in recorded
    assert [c["arguments"] for m in json.loads(recorded) for c in m["contents"]] == [
        "[secret]",
        "[secret]",
        {"token": "[secret]"},
    ]


async def test_the_run_trace_shows_usage_of_the_run() -> None:
    """OB-13: the run's return arrow carries its token usage when the model reported
    it."""
    usage = UsageDetails(input_token_count=5, output_token_count=2)
    agent = Agent(
        ScriptedChatClient(
            [ChatResponse([Message("assistant", ["hi"])], usage_details=usage)]
        )
    )
    trace = RunTrace()
    with trace.recording():
        await agent.run("go", middleware=trace.middleware)
    assert "AM-->>Caller: AgentResponse (5 in / 2 out tokens)" in trace.to_mermaid()


async def test_a_provider_that_fails_before_streaming_ends_its_chat_span(
    tracer: RecordingTracer,
) -> None:
    """OB-7, OB-9: a provider whose streaming call raises at once still ends its chat
    span, marked."""

    class Refusing(ScriptedChatClient):
        def _inner_get_streaming_response(self, **kwargs: Any) -> Any:  # type: ignore[override]
            raise ConnectionError("refused")

    with pytest.raises(ConnectionError):
        await Refusing([]).get_response("hi", stream=True).get_final_response()
    [chat] = tracer.spans
    assert chat.ended == 1
    assert chat.attributes["error.type"] == "ConnectionError"
