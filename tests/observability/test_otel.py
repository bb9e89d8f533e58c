"""The OpenTelemetry bridge, checked with the SDK's in-memory span exporter
(spec/observability.md OB-17 .. OB-19)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
minagent_otel = pytest.importorskip("minagent_otel")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

import minagent  # noqa: E402
from minagent import Agent, ChatResponse, Message, UsageDetails, tool  # noqa: E402
from minagent.testing import ScriptedChatClient, call  # noqa: E402
from tests._support.modes import run  # noqa: E402


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    minagent_otel.instrument(tracer_provider)
    try:
        yield tracer_provider, exporter
    finally:
        minagent_otel.uninstrument()


def finished(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)


def tree(spans: list[ReadableSpan]) -> list[tuple[str, str | None]]:
    by_id = {s.context.span_id: s.name for s in spans if s.context is not None}
    return [
        (s.name, by_id.get(s.parent.span_id) if s.parent is not None else None)
        for s in spans
    ]


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


async def test_span_tree_of_a_tool_loop_run(provider: Any, stream: bool) -> None:
    """OB-17, OB-18: a tool-loop run exports invoke_agent with chat, execute_tool, chat
    under it, with the GenAI attributes, span kinds and the loop's events."""
    _, exporter = provider
    usage = UsageDetails(input_token_count=7, output_token_count=2)
    first = ChatResponse(
        [Message("assistant", [call("lookup", {"key": "a"}, call_id="c1")])],
        usage_details=usage,
    )
    last = ChatResponse(
        [Message("assistant", ["A"])],
        response_id="r2",
        finish_reason="stop",
        usage_details=usage,
    )
    agent = Agent(ScriptedChatClient([first, last]), name="Bot", tools=[lookup])
    assert (await run(agent, "go", stream=stream)).text == "A"
    spans = finished(exporter)
    assert tree(spans) == [
        ("invoke_agent Bot", None),
        ("chat scripted", "invoke_agent Bot"),
        ("execute_tool lookup", "invoke_agent Bot"),
        ("chat scripted", "invoke_agent Bot"),
    ]
    agent_span, _chat1, tool_span, chat2 = spans
    assert {s.instrumentation_scope.name for s in spans if s.instrumentation_scope} == {
        "minagent"
    }
    assert [s.kind for s in spans] == [
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
    ]
    assert agent_span.attributes is not None
    assert chat2.attributes is not None
    assert tool_span.attributes is not None
    assert agent_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent_span.attributes["gen_ai.usage.input_tokens"] == 14
    assert agent_span.attributes["gen_ai.usage.output_tokens"] == 4
    assert chat2.attributes["gen_ai.request.model"] == "scripted"
    assert chat2.attributes["gen_ai.response.id"] == "r2"
    assert tuple(chat2.attributes["gen_ai.response.finish_reasons"]) == ("stop",)  # type: ignore[arg-type]
    assert chat2.attributes["gen_ai.usage.input_tokens"] == 7
    assert tool_span.attributes["gen_ai.tool.name"] == "lookup"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "c1"
    steps = [
        dict(e.attributes or {}) for e in agent_span.events if e.name == "minagent.step"
    ]
    assert [s["outcome"] for s in steps] == ["calls", "ran", "answered"]
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)


async def test_errors_set_status_and_error_type(provider: Any, stream: bool) -> None:
    """OB-18, OB-21: a failing tool and a failing model mark their spans ERROR, with
    error.type and the exception event; the tool's exception is recorded by its class,
    without its text."""
    _, exporter = provider

    @tool
    def broken(key: str) -> str:
        """Fails."""
        raise ValueError("nope")

    steps = [call("broken", {"key": "a"}, call_id="c1"), RuntimeError("model down")]
    agent = Agent(ScriptedChatClient(steps), name="Bot", tools=[broken])
    with pytest.raises(RuntimeError):
        await run(agent, "go", stream=stream)
    spans = {s.name: s for s in finished(exporter)}
    tool_span, agent_span = spans["execute_tool broken"], spans["invoke_agent Bot"]
    assert tool_span.status.status_code is StatusCode.ERROR
    assert tool_span.attributes is not None
    assert tool_span.attributes["error.type"] == "ValueError"
    assert [e.name for e in tool_span.events] == ["exception"]
    assert tool_span.status.description == "ValueError"
    event = dict(tool_span.events[0].attributes or {})
    # OB-21: the tool's class, its text not recorded
    assert event["exception.type"] == "ValueError"
    assert "nope" not in str(event)
    assert agent_span.status.status_code is StatusCode.ERROR
    assert agent_span.attributes is not None
    assert agent_span.attributes["error.type"] == "RuntimeError"
    failed_chat = [s for s in finished(exporter) if s.name.startswith("chat")][-1]
    assert failed_chat.status.status_code is StatusCode.ERROR


async def test_cancellation_ends_every_span(provider: Any, stream: bool) -> None:
    """OB-18: a run cancelled inside a tool exports all its spans, ended, marked
    cancelled."""
    _, exporter = provider
    started = asyncio.Event()

    @tool
    async def slow(key: str) -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        return key

    agent = Agent(
        ScriptedChatClient([call("slow", {"key": "a"}, call_id="c1"), "done"]),
        name="Bot",
        tools=[slow],
    )
    task = asyncio.ensure_future(run(agent, "go", stream=stream))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    spans = finished(exporter)
    assert [s.name for s in spans] == [
        "invoke_agent Bot",
        "chat scripted",
        "execute_tool slow",
    ]
    assert all(s.end_time is not None for s in spans)
    for span in (spans[0], spans[2]):
        assert span.attributes is not None
        assert span.attributes["error.type"] == "asyncio.exceptions.CancelledError"


async def test_a_tools_own_spans_nest_under_execute_tool(
    provider: Any, stream: bool
) -> None:
    """OB-19: a span the tool starts with OpenTelemetry's API is a child of
    execute_tool, and an application span around the run is the run's parent (OB-17)."""
    tracer_provider, exporter = provider
    app_tracer = trace.get_tracer("app", tracer_provider=tracer_provider)

    @tool
    def fetch(key: str) -> str:
        """Fetch."""
        with app_tracer.start_as_current_span("database query"):
            return key

    agent = Agent(
        ScriptedChatClient([call("fetch", {"key": "a"}, call_id="c1"), "done"]),
        name="Bot",
        tools=[fetch],
    )
    with app_tracer.start_as_current_span("request"):
        await run(agent, "go", stream=stream)
    spans = finished(exporter)
    assert tree(spans) == [
        ("request", None),
        ("invoke_agent Bot", "request"),
        ("chat scripted", "invoke_agent Bot"),
        ("execute_tool fetch", "invoke_agent Bot"),
        ("database query", "execute_tool fetch"),
        ("chat scripted", "invoke_agent Bot"),
    ]


def test_uninstrument_restores_the_previous_tracer() -> None:
    """OB-17: instrument() installs the bridge, uninstrument() puts back what was
    there."""
    assert minagent.get_tracer() is None
    tracer = minagent_otel.instrument(TracerProvider(), record_content=True)
    assert minagent.get_tracer() is tracer
    minagent_otel.uninstrument()
    assert minagent.get_tracer() is None
    minagent_otel.uninstrument()  # nothing to restore: stays off
    assert minagent.get_tracer() is None


def test_attribute_values_are_what_opentelemetry_accepts() -> None:
    """OB-18: scalars pass, lists of one type pass, anything else becomes strings; None
    is dropped."""
    from minagent_otel import _attributes

    converted = _attributes(
        {"a": 1, "b": ["x", "y"], "c": [1, "x"], "d": None, "e": {"k": 1}, "f": 0.5}
    )
    assert converted == {
        "a": 1,
        "b": ["x", "y"],
        "c": ["1", "x"],
        "e": "{'k': 1}",
        "f": 0.5,
    }
