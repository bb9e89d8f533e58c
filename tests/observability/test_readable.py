"""Observability users can read (spec/observability.md OB-28, OB-29): the connection and
the tools on the spans, and a Mermaid picture that names the middleware, shows durations
and says when a limit ended the run."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from minagent_anthropic import AnthropicChatClient
from minagent_openai import AzureOpenAIChatClient, OpenAIChatClient

from minagent import (
    Agent,
    FunctionInvocationConfiguration,
    Message,
    RunTrace,
    UsageDetails,
    chat_middleware,
    set_tracer,
    tool,
)
from minagent.testing import MockResponse, MockTransport, ScriptedChatClient, call
from minagent.tracing import genai

from ._recording import RecordingTracer

CHAT_BODY = {
    "id": "r1",
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
}


@pytest.fixture
def tracer() -> Iterator[RecordingTracer]:
    recording = RecordingTracer()
    set_tracer(recording)
    try:
        yield recording
    finally:
        set_tracer(None)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize(
    ("make", "provider", "address", "port"),
    [
        (
            lambda t: OpenAIChatClient(
                "gpt-4o-mini",
                api_key="k",
                base_url="https://api.example.com/v1",
                transport=t,
            ),
            "openai",
            "api.example.com",
            443,
        ),
        (
            lambda t: OpenAIChatClient(
                "gpt-4o-mini", base_url="http://127.0.0.1:9911/v1", transport=t
            ),
            "openai",
            "127.0.0.1",
            9911,
        ),
        (
            lambda t: AzureOpenAIChatClient(
                "dep",
                endpoint="https://me.openai.azure.com",
                api_key="k",
                api_version="v",
                transport=t,
            ),
            "azure.ai.openai",
            "me.openai.azure.com",
            443,
        ),
    ],
)
async def test_chat_and_agent_spans_carry_provider_server_and_tools(
    tracer: RecordingTracer, make: Any, provider: str, address: str, port: int
) -> None:
    """OB-28: chat and invoke_agent spans carry gen_ai.provider.name, server.address and
    server.port (the scheme's port when the URL has none) and the offered tools as
    gen_ai.tool.definitions, with content recording off."""
    client = make(MockTransport.answering(MockResponse.json(CHAT_BODY)))
    await Agent(client, "Be brief.", name="Bot", tools=[get_weather]).run("hello")
    agent_span, chat = tracer.spans
    for span in (agent_span, chat):
        assert span.attributes["gen_ai.provider.name"] == provider
        assert span.attributes["server.address"] == address
        assert span.attributes["server.port"] == port
        definitions = json.loads(span.attributes["gen_ai.tool.definitions"])
        assert definitions == [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": get_weather.parameters,
            }
        ]
    assert "gen_ai.input.messages" not in chat.attributes


async def test_anthropic_and_a_client_without_a_url(tracer: RecordingTracer) -> None:
    """OB-28: the provider's name comes from its codec; a client with no base URL (a
    scripted one) gets no server attributes; no tools, no definitions."""
    body = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    client = AnthropicChatClient(
        "claude-x",
        api_key="k",
        base_url="https://api.anthropic.com",
        transport=MockTransport.answering(MockResponse.json(body)),
    )
    await client.get_response([Message("user", ["hello"])])
    await ScriptedChatClient(["hi"]).get_response("hello")
    anthropic, scripted = tracer.spans
    assert (
        anthropic.attributes["gen_ai.provider.name"],
        anthropic.attributes["server.port"],
    ) == ("anthropic", 443)
    assert not {"server.address", "server.port", "gen_ai.tool.definitions"} & set(
        scripted.attributes
    )
    assert "gen_ai.tool.definitions" not in anthropic.attributes


def test_connection_attributes_default_the_port_by_scheme() -> None:
    """OB-28: the server address comes from base_url; a missing or unreadable port is
    the scheme's."""

    class Client:
        def __init__(self, url: str) -> None:
            self.base_url = url

    assert genai._connection_attributes(Client("http://host:notaport/v1")) == {
        "server.address": "host",
        "server.port": 80,
    }
    assert genai._connection_attributes(Client("https://api.example.com/v1")) == {
        "server.address": "api.example.com",
        "server.port": 443,
    }


def test_tool_definitions_keep_a_hosted_tools_wire_form() -> None:
    """OB-28: a tool given as its wire form (a hosted tool) is recorded as it is."""
    assert (
        genai._tool_definitions([{"type": "web_search"}]) == '[{"type": "web_search"}]'
    )


def test_usage_attributes_only_for_counts_present() -> None:
    """OB-28: token usage attributes are set for the counts the response has, and only
    those."""
    assert genai._usage_attributes(UsageDetails(output_token_count=3)) == {
        "gen_ai.usage.output_tokens": 3
    }
    assert genai._usage_attributes(None) == {}


TIMED = re.compile(r"^    \w+-->>\w+: .* \((\d+(?:\.\d+)?) (ms|s)\)$")


async def traced(agent: Agent, stream: bool) -> RunTrace:
    trace = RunTrace()
    with trace.recording():
        if stream:
            await agent.run(
                "go", stream=True, middleware=trace.middleware
            ).get_final_response()
        else:
            await agent.run("go", middleware=trace.middleware)
    return trace


async def test_the_picture_names_the_middleware_and_shows_durations(
    stream: bool,
) -> None:
    """OB-29: the diagram names each middleware of the agent and of its client, by layer
    (not the trace's own), and every return arrow says how long its call took."""

    async def audit(context: Any, call_next: Any) -> None:
        await call_next()

    from minagent import AgentMiddleware, FunctionMiddleware

    class Timing(FunctionMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            await call_next()

    class Guard(AgentMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            await call_next()

    client = ScriptedChatClient(
        [call("get_weather", {"city": "Oslo"}), "sunny"],
        middleware=[chat_middleware(audit)],
    )
    agent = Agent(client, tools=[get_weather], middleware=[Guard(), Timing().process])
    trace = await traced(agent, stream)
    diagram = trace.to_mermaid()
    assert "    Note over AM: agent middleware: Guard" in diagram
    assert "    Note over CM: chat middleware: audit" in diagram
    assert "    Note over FM: function middleware: Timing" in diagram
    returns = [line for line in diagram.splitlines() if "-->>" in line]
    assert returns
    assert all(TIMED.match(line) for line in returns), returns
    assert all(isinstance(e["t"], float) for e in trace.events)
    assert [e["t"] for e in trace.events] == sorted(e["t"] for e in trace.events)


async def test_a_limit_ending_is_labelled_as_such(stream: bool) -> None:
    """OB-29: after a limit, the last step says "limit reached → finish" and the run's
    return "after a limit", never "answered → finish"; a run without a limit keeps
    "answered → finish"."""

    @tool
    def fail(city: str) -> str:
        """Always fails."""
        raise KeyError(city)

    client = ScriptedChatClient(
        [call("fail", {"city": "x"}), call("fail", {"city": "y"})]
    )
    client.function_invocation_configuration = FunctionInvocationConfiguration(
        max_consecutive_errors_per_request=1
    )
    diagram = (await traced(Agent(client, tools=[fail]), stream)).to_mermaid()
    assert "Note over A: limit reached → finish" in diagram
    assert "answered → finish" not in diagram
    assert re.search(r"AM-->>Caller: AgentResponse after a limit", diagram)
    plain = (await traced(Agent(ScriptedChatClient(["hi"])), stream)).to_mermaid()
    assert "Note over A: answered → finish" in plain
    assert "limit" not in plain
