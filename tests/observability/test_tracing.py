"""Spans of a run through the tracer protocol (spec/observability.md OB-1 .. OB-10)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

import minagent
from minagent import (
    Agent,
    ChatResponse,
    Content,
    Message,
    UsageDetails,
    set_tracer,
    tool,
)
from minagent.testing import ScriptedChatClient, call, text_chunks
from minagent.tracing import genai
from tests._support.modes import run

from ._recording import RecordingTracer


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
    """The weather."""
    return f"sunny in {city}"


@tool
def broken(city: str) -> str:
    """Always fails."""
    raise ValueError("no weather today")


def weather_agent(*steps: Any, tools: Any = (get_weather,), **kwargs: Any) -> Agent:
    client = ScriptedChatClient(list(steps))
    return Agent(client, "be brief", name="Bot", tools=list(tools), **kwargs)


def test_set_tracer_checks_its_argument() -> None:
    """OB-1: set_tracer takes a Tracer or None; anything else is a TypeError naming the
    methods."""
    with pytest.raises(TypeError, match="start_span"):
        set_tracer(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record_content"):
        set_tracer(RecordingTracer(), record_content="yes")  # type: ignore[arg-type]
    assert minagent.get_tracer() is None
    recording = RecordingTracer()
    set_tracer(recording)
    try:
        assert minagent.get_tracer() is recording
    finally:
        set_tracer(None)
    assert minagent.get_tracer() is None


async def test_no_tracer_no_tracing_code(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OB-2: with no tracer the flow never enters the tracing module's span code."""

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("tracing code ran without a tracer")

    for name in ("_messages_json", "_usage_attributes"):
        monkeypatch.setattr(genai, name, forbidden)
    for name in (
        "run",
        "model_call",
        "tool_call",
        "step",
        "model_turn",
        "tool_raised",
        "_start",
        "_fail",
        "_event",
    ):
        monkeypatch.setattr(genai.GenAIObserver, name, forbidden)
    agent = weather_agent(
        call("get_weather", {"city": "Oslo"}, call_id="c1"),
        "done",
        tools=[get_weather, broken],
    )
    response = await run(agent, "weather?", stream=stream)
    assert response.text == "done"
    assert minagent.current_span() is None


def test_no_tracer_loads_no_tracing(tmp_path: Any) -> None:
    """OB-2: a run in both modes, a tool call and a failing tool included, with no
    tracer set imports nothing of minagent.tracing; set_tracer(None) afterwards installs
    the pass-through observer."""
    import subprocess
    import sys

    script = """
import asyncio, sys
from minagent import Agent, tool
from minagent._observe import OBSERVER, Observer
from minagent.testing import ScriptedChatClient, call

@tool
def broken(city: str) -> str:
    raise ValueError("no")

async def main():
    for stream in (False, True):
        client = ScriptedChatClient([call("broken", {"city": "Oslo"}, call_id="c1"), "done"])
        agent = Agent(client, tools=[broken])
        if stream:
            text = (await agent.run("hi", stream=True).get_final_response()).text
        else:
            text = (await agent.run("hi")).text
        assert text == "done", text
    assert type(OBSERVER) is Observer
    print(sorted(m for m in sys.modules if m.startswith("minagent.tracing")))

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    set_tracer(RecordingTracer())
    set_tracer(None)
    from minagent import _observe

    assert type(_observe.OBSERVER) is _observe.Observer


async def test_tool_loop_span_tree(tracer: RecordingTracer, stream: bool) -> None:
    """OB-3, OB-5, OB-10, OB-1: invoke_agent holds chat, execute_tool, chat; every span
    ends once."""
    agent = weather_agent(call("get_weather", {"city": "Oslo"}, call_id="c1"), "done")
    await run(agent, "weather?", stream=stream)
    assert tracer.tree() == [
        ("invoke_agent Bot", None),
        ("chat scripted", "invoke_agent Bot"),
        ("execute_tool get_weather", "invoke_agent Bot"),
        ("chat scripted", "invoke_agent Bot"),
    ]
    assert [s.ended for s in tracer.spans] == [1, 1, 1, 1]
    assert tracer.order[-1] == ("end", "invoke_agent Bot")
    agent_span, chat, tool_span, _ = tracer.spans
    assert agent_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent_span.attributes["gen_ai.agent.name"] == "Bot"
    assert agent_span.attributes["gen_ai.agent.id"] == agent.id
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "scripted"
    assert tool_span.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "The weather.",
    }
    assert all(None not in s.attributes.values() for s in tracer.spans)
    assert minagent.current_span() is None


async def test_concurrent_calls_are_sibling_spans(
    tracer: RecordingTracer, stream: bool
) -> None:
    """OB-10, OB-3: two calls of one batch get two execute_tool spans under the run's
    span."""
    calls = [
        call("get_weather", {"city": "Oslo"}, call_id="c1"),
        call("get_weather", {"city": "Rome"}, call_id="c2"),
    ]
    agent = weather_agent(calls, "done")
    await run(agent, "weather?", stream=stream)
    tools = tracer.named("execute_tool")
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == ["c1", "c2"]
    assert all(s.parent is tracer.spans[0] and s.ended == 1 for s in tools)


async def test_agent_as_tool_nests_under_execute_tool(
    tracer: RecordingTracer, stream: bool
) -> None:
    """OB-3: an agent run inside a tool has the tool's span as parent."""
    inner = Agent(ScriptedChatClient(["inner answer"]), name="Inner")
    outer = Agent(
        ScriptedChatClient(
            [call("Inner", {"task": "help"}, call_id="c1"), "outer answer"]
        ),
        name="Outer",
        tools=[inner.as_tool()],
    )
    response = await run(outer, "go", stream=stream)
    assert response.text == "outer answer"
    assert tracer.tree() == [
        ("invoke_agent Outer", None),
        ("chat scripted", "invoke_agent Outer"),
        ("execute_tool Inner", "invoke_agent Outer"),
        ("invoke_agent Inner", "execute_tool Inner"),
        ("chat scripted", "invoke_agent Inner"),
        ("chat scripted", "invoke_agent Outer"),
    ]
    assert all(s.ended == 1 for s in tracer.spans)


async def test_current_span_never_leaks_between_pulls(tracer: RecordingTracer) -> None:
    """OB-3, OB-8: the run's span is current only inside the run, not in the caller
    between pulls."""
    agent = weather_agent(call("get_weather", {"city": "Oslo"}, call_id="c1"), "done")
    stream = agent.run("weather?", stream=True)
    assert tracer.spans == []  # OB-8: nothing before the first pull (AG-3)
    async for _ in stream:
        assert minagent.current_span() is None
    await stream.get_final_response()
    assert minagent.current_span() is None
    assert [s.ended for s in tracer.spans] == [1, 1, 1, 1]


async def test_bare_client_call_has_no_parent(tracer: RecordingTracer) -> None:
    """OB-3: a chat span outside any run gets parent None."""
    client = ScriptedChatClient(["hi"], model="m1")
    await client.get_response("hello")
    assert tracer.tree() == [("chat m1", None)]


async def test_tool_runs_with_its_span_activated(
    tracer: RecordingTracer, stream: bool
) -> None:
    """OB-4: the tracer's activate(span) is entered around the tool, and current_span()
    is its span."""
    seen: list[tuple[str, str]] = []

    @tool
    def probe(x: int) -> int:
        """Probe."""
        current = minagent.current_span()
        seen.append((tracer.active[-1].name, getattr(current, "name", "")))
        return x

    agent = weather_agent(call("probe", {"x": 1}, call_id="c1"), "done", tools=[probe])
    await run(agent, "go", stream=stream)
    assert seen == [("execute_tool probe", "execute_tool probe")]
    assert tracer.active == []


def usage_response(text: str, response_id: str, inp: int, out: int) -> ChatResponse:
    response = ChatResponse(
        [Message("assistant", [text])],
        response_id=response_id,
        usage_details=UsageDetails(input_token_count=inp, output_token_count=out),
        finish_reason="stop",
        model="scripted-2025",
    )
    return response


async def test_usage_and_response_attributes(
    tracer: RecordingTracer, stream: bool
) -> None:
    """OB-5: response id, model, finish reasons and token usage on chat spans and the
    run's span; request parameters from the options."""
    first = ChatResponse(
        [Message("assistant", [call("get_weather", {"city": "Oslo"}, call_id="c1")])],
        response_id="r1",
        usage_details=UsageDetails(input_token_count=10, output_token_count=3),
        finish_reason="tool_calls",
    )
    agent = weather_agent(first, usage_response("done", "r2", 20, 5))
    options = {
        "temperature": 0.5,
        "max_tokens": 99,
        "seed": 7,
        "stop": "END",
        "top_p": 0.9,
    }
    await run(agent, "weather?", stream=stream, options=options)
    chat1, chat2 = tracer.named("chat")
    assert chat1.attributes["gen_ai.response.id"] == "r1"
    assert chat1.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert (
        chat1.attributes["gen_ai.usage.input_tokens"],
        chat1.attributes["gen_ai.usage.output_tokens"],
    ) == (10, 3)
    assert chat2.attributes["gen_ai.response.model"] == "scripted-2025"
    assert (
        chat2.attributes["gen_ai.usage.input_tokens"],
        chat2.attributes["gen_ai.usage.output_tokens"],
    ) == (20, 5)
    for key, value in {
        "gen_ai.request.temperature": 0.5,
        "gen_ai.request.max_tokens": 99,
        "gen_ai.request.seed": 7,
        "gen_ai.request.stop_sequences": ["END"],
        "gen_ai.request.top_p": 0.9,
    }.items():
        assert chat1.attributes[key] == value, key
    agent_span = tracer.spans[0]
    usage = (
        agent_span.attributes["gen_ai.usage.input_tokens"],
        agent_span.attributes["gen_ai.usage.output_tokens"],
    )
    assert usage == (30, 8)
    assert agent_span.attributes["gen_ai.response.id"] == "r2"


async def test_contents_only_when_asked(tracer: RecordingTracer, stream: bool) -> None:
    """OB-6: no messages, arguments or results by default; all of them with
    record_content=True."""
    agent = weather_agent(call("get_weather", {"city": "Oslo"}, call_id="c1"), "done")
    await run(agent, "secret weather question", stream=stream)
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    assert all(not (content_keys & set(s.attributes)) for s in tracer.spans)
    assert "secret" not in repr([s.attributes for s in tracer.spans])

    recording = RecordingTracer()
    set_tracer(recording, record_content=True)
    agent = weather_agent(call("get_weather", {"city": "Oslo"}, call_id="c1"), "done")
    await run(agent, "secret weather question", stream=stream)
    agent_span, chat, tool_span, last = recording.spans
    assert "secret weather question" in agent_span.attributes["gen_ai.input.messages"]
    assert (
        json.loads(agent_span.attributes["gen_ai.output.messages"])[-1]["contents"][0][
            "text"
        ]
        == "done"
    )
    assert "secret weather question" in chat.attributes["gen_ai.input.messages"]
    assert "get_weather" in chat.attributes["gen_ai.output.messages"]
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {
        "city": "Oslo"
    }
    assert tool_span.attributes["gen_ai.tool.call.result"] == "sunny in Oslo"
    assert "done" in last.attributes["gen_ai.output.messages"]


async def test_errors_are_recorded(tracer: RecordingTracer, stream: bool) -> None:
    """OB-7: a failing tool, an unknown tool and a failing model each mark their
    span."""
    steps = [
        [
            call("broken", {"city": "x"}, call_id="c1"),
            call("nope", call_id="c2"),
            call("get_weather", call_id="c3"),
        ],
        RuntimeError("model down"),
    ]
    agent = weather_agent(*steps, tools=[get_weather, broken])
    with pytest.raises(RuntimeError, match="model down"):
        await run(agent, "go", stream=stream)
    by_id = {
        s.attributes.get("gen_ai.tool.call.id"): s for s in tracer.named("execute_tool")
    }
    assert by_id["c1"].attributes["error.type"] == "ValueError"
    # its text is not recorded (OB-21)
    assert [genai.error_type(e) for e in by_id["c1"].errors] == ["ValueError"]
    assert by_id["c2"].attributes["error.type"] == "unknown_tool"
    assert by_id["c3"].attributes["error.type"] == "invalid_arguments"
    failed_chat = tracer.named("chat")[-1]
    assert failed_chat.attributes["error.type"] == "RuntimeError"
    assert tracer.spans[0].attributes["error.type"] == "RuntimeError"
    assert all(s.ended == 1 for s in tracer.spans)


async def test_cancellation_ends_every_span(
    tracer: RecordingTracer, stream: bool
) -> None:
    """OB-7, OB-1: cancelling a run in a tool ends every span once, as cancelled."""
    started = asyncio.Event()

    @tool
    async def slow(x: int) -> int:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        return x

    agent = weather_agent(call("slow", {"x": 1}, call_id="c1"), "done", tools=[slow])
    task = asyncio.ensure_future(run(agent, "go", stream=stream))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [s.name for s in tracer.spans] == [
        "invoke_agent Bot",
        "chat scripted",
        "execute_tool slow",
    ]
    assert all(s.ended == 1 for s in tracer.spans)
    for span in (tracer.spans[0], tracer.spans[2]):
        assert span.attributes["error.type"] == "asyncio.exceptions.CancelledError"
    assert "error.type" not in tracer.spans[1].attributes


async def test_closing_the_stream_early_ends_the_spans(tracer: RecordingTracer) -> None:
    """OB-8, OB-9: a stream closed after its first update ends the chat and agent spans,
    without error."""
    agent = weather_agent(text_chunks("one ", "two ", "three"))
    stream = agent.run("go", stream=True)
    async for _update in stream:
        break
    await stream.aclose()
    assert [s.name for s in tracer.spans] == ["invoke_agent Bot", "chat scripted"]
    assert all(s.ended == 1 for s in tracer.spans)
    assert all("error.type" not in s.attributes and not s.errors for s in tracer.spans)


async def test_chat_span_ends_with_the_model_stream(tracer: RecordingTracer) -> None:
    """OB-9: in streaming the chat span ends when the provider's stream ends, before the
    tool runs."""
    agent = weather_agent(call("get_weather", {"city": "Oslo"}, call_id="c1"), "done")
    await agent.run("go", stream=True).get_final_response()
    assert tracer.order[:5] == [
        ("start", "invoke_agent Bot"),
        ("start", "chat scripted"),
        ("end", "chat scripted"),
        ("start", "execute_tool get_weather"),
        ("end", "execute_tool get_weather"),
    ]


async def test_span_of_a_run_without_a_name(tracer: RecordingTracer) -> None:
    """OB-5: an agent without a name gets the span name invoke_agent and no
    gen_ai.agent.name."""
    agent = Agent(ScriptedChatClient([Content.from_text("hi")]))
    await agent.run("go")
    assert tracer.spans[0].name == "invoke_agent"
    assert "gen_ai.agent.name" not in tracer.spans[0].attributes


async def test_an_observer_may_stand_in_for_each_middleware(stream: bool) -> None:
    """OB-31: the observer's ``middleware`` wrap point is asked for each layer's
    pipeline that has middleware — the agent layer once per run, chat and function once
    per request — and what it returns runs in the middleware's place, each stand-in
    calling its middleware with a call_next that runs the rest; the default observer
    returns the very sequence it is given."""
    from minagent import (
        AgentContext,
        ChatContext,
        FunctionInvocationContext,
        _observe,
        agent_middleware,
        chat_middleware,
        function_middleware,
    )

    seen: list[str] = []

    @agent_middleware
    async def outer(context: AgentContext, call_next: Any) -> None:
        seen.append("agent in")
        await call_next()

    @chat_middleware
    async def shape(context: ChatContext, call_next: Any) -> None:
        seen.append("chat in")
        await call_next()

    @function_middleware
    async def audit(context: FunctionInvocationContext, call_next: Any) -> None:
        seen.append("function in")
        await call_next()
        seen.append("function out")

    asked: list[tuple[str, tuple[str, ...]]] = []

    class StandIns(_observe.Observer):
        def middleware(self, layer: str, middleware: Any) -> Any:
            asked.append((layer, tuple(m.__name__ for m in middleware)))

            def stand_in(fn: Any) -> Any:
                async def wrapped(context: Any, call_next: Any) -> None:
                    seen.append(f"<{fn.__name__}")
                    await fn(context, call_next)
                    seen.append(f"{fn.__name__}>")

                return wrapped

            return [stand_in(m) for m in middleware]

    base = _observe.Observer()
    fns = (outer, shape)
    assert base.middleware("agent", fns) is fns
    agent = weather_agent(
        call("get_weather", {"city": "Oslo"}, call_id="c1"),
        "done",
        middleware=[outer, shape, audit],
    )
    before = _observe.install(StandIns())
    try:
        response = await run(agent, "weather?", stream=stream)
    finally:
        _observe.install(before)
    assert response.text == "done"
    assert asked == [
        ("agent", ("outer",)),
        ("chat", ("shape",)),
        ("function", ("audit",)),
    ]
    assert seen[:2] == ["<outer", "agent in"]
    assert seen.count("<shape") == seen.count("chat in") == 2
    start = seen.index("<audit")
    assert seen[start : start + 4] == [
        "<audit",
        "function in",
        "function out",
        "audit>",
    ]
    # a run without middleware asks nothing
    asked.clear()
    before = _observe.install(StandIns())
    try:
        await run(weather_agent("plain"), "hi", stream=stream)
    finally:
        _observe.install(before)
    assert asked == []
