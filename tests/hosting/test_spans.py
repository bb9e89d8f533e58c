"""Each request a server span, the parent of the runs it makes (spec/hosting.md
HS-180 .. HS-186): a recording tracer and the OpenTelemetry SDK through
`minagent_otel`, every protocol driven by its official client over loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import minagent
from minagent import Agent, tool
from minagent._observe import Observer, current
from minagent.hosting import HostingApp
from minagent.hosting.routes import route_of
from minagent.hosting.server import serve
from minagent.testing import ScriptedChatClient, call
from tests.hosting import _a2a, _agui
from tests.observability._recording import RecordedSpan, RecordingTracer

ROOT = Path(__file__).resolve().parents[2]


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def helper(name: str = "helper") -> Agent:
    """An agent whose one run is a tool loop: chat, execute_tool, chat."""
    client = ScriptedChatClient([call("lookup", {"key": "k"}), "found K"])
    return Agent(client, name=name, description="Looks keys up.", tools=[lookup])


@pytest.fixture
def recording() -> Iterator[RecordingTracer]:
    tracer = RecordingTracer()
    minagent.set_tracer(tracer)
    try:
        yield tracer
    finally:
        minagent.set_tracer(None)


@asynccontextmanager
async def served(app: HostingApp) -> AsyncIterator[str]:
    """The app on loopback; yields its base URL."""
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
        # the clients' streams are finalised in tasks of their own
        for _ in range(10):
            await asyncio.sleep(0)


async def asgi(
    app: Any,
    method: str,
    path: str,
    body: bytes = b"",
    **scope: Any,
) -> tuple[int, bytes]:
    """One request straight through ASGI: the status and the body."""
    sent: list[dict[str, Any]] = []
    chunks = [body]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": method, "path": path, **scope}, receive, send)
    return int(sent[0]["status"]), b"".join(m.get("body", b"") for m in sent[1:])


def server_spans(tracer: RecordingTracer) -> list[RecordedSpan]:
    return [s for s in tracer.spans if "http.request.method" in s.attributes]


def check_run_tree(tracer: RecordingTracer, name: str, runs: int = 1) -> RecordedSpan:
    """A request named ``name``, a span without a parent, is the parent of every
    ``invoke_agent`` span (``runs`` of them), each with its chat, execute_tool, chat;
    every span ended once, the request's after all of its runs'."""
    agents = tracer.named("invoke_agent")
    assert len(agents) == runs
    request: RecordedSpan = agents[0].parent
    assert isinstance(request, RecordedSpan)
    assert request in server_spans(tracer)
    assert request.name == name
    assert request.parent is None
    for span in agents:
        assert span.parent is request
        children = [s.name for s in tracer.spans if s.parent is span]
        assert children == ["chat scripted", "execute_tool lookup", "chat scripted"], (
            children
        )
    for span in tracer.spans:
        assert span.ended == 1, span
    ends = [n for kind, n in tracer.order if kind == "end"]
    assert ends.index(name) > max(
        i for i, n in enumerate(ends) if n.startswith("invoke_agent")
    )
    return request


# -- every protocol, streamed and not (HS-180, HS-182) --------------------------------


async def test_chat_completions_through_the_sdk(
    recording: RecordingTracer, stream: bool
) -> None:
    """HS-180, HS-181, HS-182: a Chat Completions request (the `openai` SDK) is one
    server span `POST /v1/chat/completions`, the parent of the run's invoke_agent span
    in both modes; the span ends after the run's."""
    app = HostingApp([helper()])
    async with served(app) as base:
        sdk = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
        messages: Any = [{"role": "user", "content": "find k"}]
        if stream:
            chunks = await sdk.chat.completions.create(
                model="helper", messages=messages, stream=True
            )
            text = "".join(
                [c.choices[0].delta.content or "" async for c in chunks if c.choices]
            )
        else:
            done = await sdk.chat.completions.create(model="helper", messages=messages)
            text = done.choices[0].message.content or ""
        await sdk.close()
    assert text == "found K"
    request = check_run_tree(recording, "POST /v1/chat/completions")
    port = int(base.rpartition(":")[2])
    assert {
        k: v
        for k, v in request.attributes.items()
        if k not in ("client.address", "client.port")
    } == {
        "http.request.method": "POST",
        "http.route": "/v1/chat/completions",
        "url.path": "/v1/chat/completions",
        "url.scheme": "http",
        "network.protocol.version": "1.1",
        "server.address": "127.0.0.1",
        "server.port": port,
        "http.response.status_code": 200,
    }


async def test_responses_through_the_sdk(
    recording: RecordingTracer, stream: bool
) -> None:
    """HS-180, HS-182: a Responses request (the `openai` SDK) is one server span
    `POST /v1/responses`, the parent of the run in both modes; reading the response
    back is a span of its own, `GET /v1/responses/{response_id}`, with no run."""
    app = HostingApp([helper()])
    async with served(app) as base:
        sdk = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
        if stream:
            events = await sdk.responses.create(
                model="helper", input="find k", stream=True
            )
            response_id = ""
            async for event in events:
                if event.type == "response.completed":
                    response_id = event.response.id
        else:
            response_id = (
                await sdk.responses.create(model="helper", input="find k")
            ).id
        kept = await sdk.responses.retrieve(response_id)
        await sdk.close()
    assert kept.output_text == "found K"
    check_run_tree(recording, "POST /v1/responses")
    [read] = [s for s in server_spans(recording) if s.name.startswith("GET")]
    assert read.name == "GET /v1/responses/{response_id}"
    assert read.attributes["url.path"] == f"/v1/responses/{response_id}"
    assert not [s for s in recording.spans if s.parent is read]


async def test_a2a_through_the_sdk(recording: RecordingTracer, stream: bool) -> None:
    """HS-180, HS-181: an A2A message (the `a2a-sdk` client, `message/send` or
    `message/stream`) is one server span `POST /a2a/{agent}`, the parent of the task's
    run; the card the client reads first is a span `GET
    /a2a/{agent}/.well-known/agent-card.json` without a run."""
    app = HostingApp([helper()])
    async with (
        served(app) as base,
        _a2a.sdk(base, "helper", streaming=stream) as client,
    ):
        events = await _a2a.send(client, _a2a.user("find k"))
        task = await _a2a.settled(client, events)
    await app.a2a.aclose()
    texts = [p.text for a in task.artifacts for p in a.parts]
    assert "found K" in "".join(texts)
    check_run_tree(recording, "POST /a2a/{agent}")
    names = {s.name for s in server_spans(recording)}
    assert "GET /a2a/{agent}/.well-known/agent-card.json" in names


async def test_a_run_that_outlives_its_request(recording: RecordingTracer) -> None:
    """HS-182: a run that goes on after its request was answered (an A2A
    `message/send` with `blocking: false`) keeps that request's span as its parent;
    the request's span ends with the answer, before the run's."""
    release, started = asyncio.Event(), asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "released"

    client = ScriptedChatClient([call("wait", {}), "done"])
    app = HostingApp([Agent(client, name="helper", tools=[wait])])
    params = {**_a2a.text_message("go"), "configuration": {"blocking": False}}
    answer = await _a2a.rpc(app, "helper", "message/send", params)
    await started.wait()
    [request] = server_spans(recording)
    assert request.ended == 1
    [agent] = recording.named("invoke_agent")
    assert agent.parent is request
    assert agent.ended == 0
    release.set()
    run = app.a2a.tasks[answer["result"]["id"]].run
    assert run is not None
    await run
    assert agent.ended == 1
    await app.a2a.aclose()


async def test_agui_through_http(recording: RecordingTracer) -> None:
    """HS-180, HS-182: an AG-UI run (an SSE stream, the only mode AG-UI has) is one
    server span `POST /agui/{agent}`, the parent of the run; the span ends after the
    stream's last event was sent."""
    app = HostingApp([helper()])
    async with served(app) as base, httpx.AsyncClient(base_url=base) as http:
        result = await _agui.post(
            http, _agui.run_input([_agui.user("find k", "m1")]), "/agui/helper"
        )
    assert result.text == "found K"
    check_run_tree(recording, "POST /agui/{agent}")


async def test_mcp_through_the_sdk(recording: RecordingTracer) -> None:
    """HS-180: an MCP tool call (the `mcp` SDK's Streamable HTTP client) runs the agent
    under the server span of the `POST /mcp/{agent}` request that carried the call;
    the session's other requests are spans without runs."""
    app = HostingApp([helper()])
    async with served(app) as base:
        async with (
            streamable_http_client(f"{base}/mcp/helper") as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("helper", {"task": "find k"})
        await app.mcp.close()
    assert not result.isError
    [agent] = recording.named("invoke_agent")
    request = agent.parent
    assert isinstance(request, RecordedSpan)
    assert request.name == "POST /mcp/{agent}"
    assert request.attributes["http.route"] == "/mcp/{agent}"
    others = [s for s in server_spans(recording) if s is not request]
    assert others
    assert all(s.name.endswith("/mcp/{agent}") for s in others)
    assert not [s for s in recording.spans if s.parent in others]
    assert all(s.ended == 1 for s in recording.spans)


# -- names, attributes, errors (HS-181, HS-183, HS-184, HS-186) -----------------------


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/v1/models", "/v1/models"),
        ("/v1/chat/completions", "/v1/chat/completions"),
        ("/v1/responses", "/v1/responses"),
        ("/v1/responses/resp_1", "/v1/responses/{response_id}"),
        ("/v1/responses/resp_1/input_items", None),
        ("/mcp/helper", "/mcp/{agent}"),
        ("/mcp/", None),
        ("/agui", "/agui"),
        ("/agui/helper", "/agui/{agent}"),
        ("/a2a/helper", "/a2a/{agent}"),
        ("/a2a/helper/", "/a2a/{agent}/"),
        (
            "/a2a/helper/.well-known/agent-card.json",
            "/a2a/{agent}/.well-known/agent-card.json",
        ),
        ("/a2a/helper/other", None),
        ("/.well-known/agent-card.json", "/.well-known/agent-card.json"),
        ("/nowhere", None),
    ],
)
def test_route_templates(path: str, route: str | None) -> None:
    """HS-181: a path is named by the template of its route; a path no route takes has
    none."""
    assert route_of(path) == route


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="/abcv1.-_{}%", max_size=30))
def test_a_template_never_holds_a_name_or_an_id(path: str) -> None:
    """HS-181: whatever the path, its route is None or one of the fixed templates:
    never a segment taken from the request."""
    templates = {
        "/v1/models",
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/responses/{response_id}",
        "/mcp/{agent}",
        "/agui",
        "/agui/{agent}",
        "/agui/{agent}/",
        "/a2a/{agent}",
        "/a2a/{agent}/",
        "/a2a/{agent}/.well-known/agent-card.json",
        "/a2a/{agent}/.well-known/agent.json",
        "/.well-known/agent-card.json",
        "/.well-known/agent.json",
    }
    route = route_of(path)
    assert route is None or route in templates


async def test_an_unrouted_path_and_an_unknown_method(
    recording: RecordingTracer,
) -> None:
    """HS-181, HS-183: a path no route takes is named by its method alone; a method
    the conventions do not know is `_OTHER` (its span name `HTTP`) with the original
    kept; a 4xx answer is no error of the server's. The ASGI root path is part of the
    path and the route."""
    app = HostingApp([helper()])
    assert (await asgi(app, "GET", "/nowhere"))[0] == 404
    assert (await asgi(app, "BREW", "/v1/models", root_path="/api"))[0] == 404
    first, second = server_spans(recording)
    assert first.name == "GET"
    assert "http.route" not in first.attributes
    assert first.attributes["http.response.status_code"] == 404
    assert "error.type" not in first.attributes
    assert second.name == "HTTP /api/v1/models"
    assert second.attributes["http.request.method"] == "_OTHER"
    assert second.attributes["http.request.method_original"] == "BREW"
    assert second.attributes["url.path"] == "/api/v1/models"
    assert second.attributes["http.route"] == "/api/v1/models"


async def test_server_address_from_the_host_header_else_the_socket(
    recording: RecordingTracer,
) -> None:
    """HS-181: `server.address` and `server.port` are the `Host` header's, else the
    scope's `server`; `client.address`/`client.port` the scope's `client`; unknown
    ones are absent."""
    app = HostingApp([helper()])
    await asgi(
        app,
        "GET",
        "/v1/models",
        headers=[(b"host", b"agents.example:8443")],
        server=("10.0.0.1", 80),
        client=("10.0.0.9", 50000),
    )
    await asgi(app, "GET", "/v1/models", server=("10.0.0.1", 80))
    await asgi(app, "GET", "/v1/models")
    first, second, third = (s.attributes for s in server_spans(recording))
    assert (first["server.address"], first["server.port"]) == ("agents.example", 8443)
    assert (first["client.address"], first["client.port"]) == ("10.0.0.9", 50000)
    assert (second["server.address"], second["server.port"]) == ("10.0.0.1", 80)
    assert "client.address" not in second
    for key in ("server.address", "server.port", "client.address"):
        assert key not in third


async def test_a_5xx_answer_and_an_exception(recording: RecordingTracer) -> None:
    """HS-183: a run that fails is answered 500 and its request's span gets
    `error.type` "500"; an exception that leaves the application (a send that fails)
    is recorded on the span and propagates unchanged."""
    failing = Agent(ScriptedChatClient([RuntimeError("model down")]), name="helper")
    app = HostingApp([failing])
    body = json.dumps(
        {"model": "helper", "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    status, _ = await asgi(app, "POST", "/v1/chat/completions", body)
    assert status == 500
    [request] = server_spans(recording)
    assert request.attributes["error.type"] == "500"
    assert request.attributes["http.response.status_code"] == 500

    class Gone(Exception):
        pass

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        raise Gone

    scope = {"type": "http", "method": "GET", "path": "/v1/models"}
    with pytest.raises(Gone):
        await app(scope, receive, send)
    broken = server_spans(recording)[-1]
    assert broken.errors
    assert isinstance(broken.errors[0], Gone)
    assert broken.attributes["error.type"].endswith("Gone")
    assert broken.ended == 1
    assert minagent.current_span() is None


async def test_a_cancelled_stream_ends_its_span(
    recording: RecordingTracer,
) -> None:
    """HS-182, HS-183: a streamed request cancelled mid-stream (its client gone) ends
    its span once, recorded as a cancellation, and its run's spans with it."""
    release, started = asyncio.Event(), asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "never"

    client = ScriptedChatClient([call("wait", {}), "never"])
    agent = Agent(client, name="helper", tools=[wait])
    app = HostingApp([agent])
    body = json.dumps(
        {
            "model": "helper",
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
    ).encode()
    task = asyncio.ensure_future(asgi(app, "POST", "/v1/chat/completions", body))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [request] = server_spans(recording)
    assert request.attributes["error.type"] == "asyncio.exceptions.CancelledError"
    assert all(s.ended == 1 for s in recording.spans)
    assert recording.named("invoke_agent")[0].parent is request


class FailingServerTracer(RecordingTracer):
    """Fails wherever it meets a request's span: starting it (``fail_start``), or
    setting its attributes, activating it and ending it."""

    def __init__(self, fail_start: bool) -> None:
        super().__init__()
        self.fail_start = fail_start

    def start_span(
        self, name: str, attributes: Mapping[str, Any], parent: Any
    ) -> RecordedSpan:
        if self.fail_start and "http.request.method" in attributes:
            raise RuntimeError("tracer down")
        span = super().start_span(name, attributes, parent)
        if "http.request.method" in attributes:

            def fail(*args: Any) -> None:
                raise RuntimeError("tracer down")

            span.set_attributes = fail  # type: ignore[method-assign,assignment]
            span.end = fail  # type: ignore[method-assign]
        return span

    @contextlib.contextmanager
    def activate(self, span: Any) -> Iterator[None]:
        if "http.request.method" in span.attributes:
            raise RuntimeError("tracer down")
        with super().activate(span):
            yield


@pytest.mark.parametrize("fail_start", [True, False], ids=["start", "the-span"])
async def test_a_failing_tracer_never_changes_the_answer(
    fail_start: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """HS-183, OB-22: a tracer that raises on the request's span (starting it, or
    setting its attributes, activating and ending it) leaves the answer and the run as
    they were; a span it failed to start leaves the run's spans its parent (None)."""
    tracer = FailingServerTracer(fail_start)
    minagent.set_tracer(tracer)
    try:
        app = HostingApp([helper()])
        body = json.dumps(
            {"model": "helper", "messages": [{"role": "user", "content": "find k"}]}
        ).encode()
        status, data = await asgi(app, "POST", "/v1/chat/completions", body)
    finally:
        minagent.set_tracer(None)
    assert status == 200
    assert json.loads(data)["choices"][0]["message"]["content"] == "found K"
    [agent] = tracer.named("invoke_agent")
    if fail_start:
        assert server_spans(tracer) == []
        assert agent.parent is None
    else:
        assert agent.parent is server_spans(tracer)[0]
    assert agent.ended == 1
    assert "tracer down" in caplog.text


async def test_no_header_query_or_body_reaches_the_span(
    recording: RecordingTracer,
) -> None:
    """HS-184: the request's token, its query string and its body are on no span; the
    only header recorded is Host's name and port."""
    app = HostingApp([helper()])
    body = json.dumps(
        {"model": "helper", "messages": [{"role": "user", "content": "sk-body-secret"}]}
    ).encode()
    await asgi(
        app,
        "POST",
        "/v1/chat/completions",
        body,
        query_string=b"key=sk-query-secret",
        headers=[
            (b"authorization", b"Bearer sk-header-secret"),
            (b"x-api-key", b"sk-other-secret"),
            (b"host", b"h.example"),
        ],
    )
    text = repr([(s.name, s.attributes) for s in recording.spans])
    assert "secret" not in text
    assert server_spans(recording)[0].attributes["server.address"] == "h.example"


@settings(max_examples=60, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "DELETE"]) | st.text("ABCXYZ", min_size=1),
    path=st.sampled_from(["/v1/models", "/agui/helper", "/x"]),
    headers=st.lists(
        st.tuples(
            st.sampled_from([b"authorization", b"x-api-key", b"cookie", b"x-other"]),
            st.binary(max_size=12).map(lambda b: b"sk-secret-" + b.hex().encode()),
        ),
        max_size=4,
    ),
    query=st.binary(max_size=12).map(lambda b: b"key=sk-secret-" + b.hex().encode()),
)
def test_no_header_value_reaches_the_span_whatever_the_request(
    method: str, path: str, headers: list[tuple[bytes, bytes]], query: bytes
) -> None:
    """HS-181, HS-184: for any method and any headers, the request's span has the
    conventions' name, no attribute holds a header value or the query string, and
    none is None."""
    from minagent.tracing import GenAIObserver

    tracer = RecordingTracer()
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": headers,
        "query_string": query,
    }

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        return None

    wrapped = GenAIObserver(tracer).request(scope, route_of(path), app)

    async def answer() -> None:
        await wrapped(scope, receive, send)

    asyncio.run(answer())
    [span] = tracer.spans
    route = route_of(path)
    known = method in ("GET", "POST", "DELETE", "PUT", "PATCH", "HEAD")
    shown = method if known else "HTTP"
    assert span.name == (f"{shown} {route}" if route else shown)
    assert "secret" not in repr(span.attributes)
    assert None not in span.attributes.values()
    assert span.attributes["http.response.status_code"] == 204
    assert span.ended == 1


async def test_incoming_trace_context_is_not_read(
    recording: RecordingTracer,
) -> None:
    """HS-186: a `traceparent` header does not make a remote parent: the request's
    span starts under the tracer's current span (None here)."""
    app = HostingApp([helper()])
    header = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    await asgi(app, "GET", "/v1/models", headers=[(b"traceparent", header)])
    [request] = server_spans(recording)
    assert request.parent is None


async def test_the_span_is_current_and_activated_while_answering(
    recording: RecordingTracer,
) -> None:
    """HS-182: while the application answers, the request's span is `current_span()`
    and the tracer's activated span; afterwards the caller's current span is back."""
    seen: list[Any] = []
    app = HostingApp([helper()])

    async def send(message: dict[str, Any]) -> None:
        seen.append((minagent.current_span(), list(recording.active)))

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    await app({"type": "http", "method": "GET", "path": "/v1/models"}, receive, send)
    [request] = server_spans(recording)
    assert seen
    assert all(s == (request, [request]) for s in seen)
    assert minagent.current_span() is None
    assert recording.active == []


async def test_lifespan_has_no_span(recording: RecordingTracer) -> None:
    """HS-180: the lifespan scope is no request and has no span."""
    app = HostingApp([helper()])
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "lifespan"}, receive, send)
    assert [m["type"] for m in sent] == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]
    assert recording.spans == []


# -- no tracer (HS-180) ----------------------------------------------------------------


def test_without_a_tracer_the_app_is_handed_back_unchanged() -> None:
    """HS-180: the default observer's request wrap point returns the application it was
    given: no span, no wrapper."""
    assert type(current()) is Observer

    async def app(scope: Any, receive: Any, send: Any) -> None:
        return None

    assert current().request({"type": "http"}, "/v1/models", app) is app


def test_serving_without_a_tracer_does_not_import_tracing() -> None:
    """HS-180, OB-2: a process that serves runs over HTTP in every protocol with no
    tracer set never imports `minagent.tracing`."""
    script = textwrap.dedent(
        """
        import asyncio, json, sys
        from minagent import Agent
        from minagent.hosting import HostingApp
        from minagent.testing import ScriptedChatClient

        async def request(app, path, body):
            sent = []
            chunks = [json.dumps(body).encode()]

            async def receive():
                return {"type": "http.request", "body": chunks.pop() if chunks else b""}

            async def send(message):
                sent.append(message)

            scope = {"type": "http", "method": "POST", "path": path}
            await app(scope, receive, send)
            return sent[0]["status"]

        async def main():
            agent = Agent(ScriptedChatClient(["a", "b", "c", "d", "e"]), name="helper")
            app = HostingApp([agent])
            chat = {"model": "helper", "messages": [{"role": "user", "content": "x"}]}
            print(await request(app, "/v1/chat/completions", chat))
            print(await request(app, "/v1/chat/completions", {**chat, "stream": True}))
            print(await request(app, "/v1/responses", {"model": "helper", "input": "x"}))
            run = {"threadId": "t", "runId": "r",
                   "messages": [{"id": "m", "role": "user", "content": "x"}]}
            print(await request(app, "/agui", run))
            a2a = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                   "params": {"message": {"kind": "message", "role": "user",
                              "messageId": "m", "parts": [{"kind": "text",
                                                           "text": "x"}]}}}
            print(await request(app, "/a2a/helper", a2a))
            mcp = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}}
            print(await request(app, "/mcp/helper", mcp))
            await app.a2a.aclose()
            await app.mcp.close()
            print("minagent.tracing" in sys.modules)

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.stdout.split() == [*["200"] * 6, "False"], done.stderr


# -- the OpenTelemetry SDK through minagent_otel (HS-180, HS-182, HS-185) -------------


async def _chat(app: HostingApp, base: str, stream: bool) -> None:
    sdk = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": "find k"}]
    if stream:
        chunks = await sdk.chat.completions.create(
            model="helper", messages=messages, stream=True
        )
        text = "".join(
            [c.choices[0].delta.content or "" async for c in chunks if c.choices]
        )
    else:
        done = await sdk.chat.completions.create(model="helper", messages=messages)
        text = done.choices[0].message.content or ""
    await sdk.close()
    assert text == "found K"


async def _responses(app: HostingApp, base: str, stream: bool) -> None:
    sdk = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
    if stream:
        events = await sdk.responses.create(model="helper", input="find k", stream=True)
        kinds = [event.type async for event in events]
        assert kinds[-1] == "response.completed"
    else:
        response = await sdk.responses.create(model="helper", input="find k")
        assert response.output_text == "found K"
    await sdk.close()


async def _a2a_send(app: HostingApp, base: str, stream: bool) -> None:
    async with _a2a.sdk(base, "helper", streaming=stream) as client:
        events = await _a2a.send(client, _a2a.user("find k"))
    assert events
    await app.a2a.aclose()


async def _agui_run(app: HostingApp, base: str, stream: bool) -> None:
    async with httpx.AsyncClient(base_url=base) as http:
        result = await _agui.post(
            http, _agui.run_input([_agui.user("find k", "m1")]), "/agui/helper"
        )
    assert result.text == "found K"


async def _mcp_call(app: HostingApp, base: str, stream: bool) -> None:
    async with (
        streamable_http_client(f"{base}/mcp/helper") as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("helper", {"task": "find k"})
    assert not result.isError
    await app.mcp.close()


DRIVERS = {
    "chat-completions": (_chat, "POST /v1/chat/completions"),
    "responses": (_responses, "POST /v1/responses"),
    "a2a": (_a2a_send, "POST /a2a/{agent}"),
    "agui": (_agui_run, "POST /agui/{agent}"),
    "mcp": (_mcp_call, "POST /mcp/{agent}"),
}
CASES = [
    pytest.param(name, stream, id=f"{name}-{'streaming' if stream else 'plain'}")
    for name in DRIVERS
    for stream in (
        (False, True)
        if name in ("chat-completions", "responses", "a2a")
        else (True,)
        if name == "agui"
        else (False,)
    )
]


@pytest.fixture
def otel() -> Iterator[Any]:
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    memory = pytest.importorskip(
        "opentelemetry.sdk.trace.export.in_memory_span_exporter"
    )
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    minagent_otel = pytest.importorskip("minagent_otel")
    exporter = memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    minagent_otel.instrument(provider)
    try:
        yield provider, exporter
    finally:
        minagent_otel.uninstrument()


@pytest.mark.parametrize(("protocol", "streamed"), CASES)
async def test_otel_server_span_parents_the_run(
    otel: Any, protocol: str, streamed: bool
) -> None:
    """HS-180, HS-182, HS-185: through `minagent_otel` and the OpenTelemetry SDK, the
    request that runs the agent is one SERVER span in every protocol, streamed and not;
    the run's invoke_agent span is its child in the same trace, chat and execute_tool
    under that, and the server span ends last."""
    from opentelemetry.trace import SpanKind

    _, exporter = otel
    drive, name = DRIVERS[protocol]
    app = HostingApp([helper()])
    async with served(app) as base:
        await drive(app, base, streamed)
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    [agent] = [s for s in spans if s.name == "invoke_agent helper"]
    assert agent.parent is not None
    request = by_id[agent.parent.span_id]
    assert request.name == name
    assert request.kind is SpanKind.SERVER
    assert request.parent is None
    assert request.context.trace_id == agent.context.trace_id
    assert request.attributes is not None
    assert request.attributes["http.response.status_code"] == 200
    children = sorted(
        s.name for s in spans if s.parent and s.parent.span_id == agent.context.span_id
    )
    assert children == ["chat scripted", "chat scripted", "execute_tool lookup"]
    assert request.end_time is not None
    assert agent.end_time is not None
    assert request.end_time >= agent.end_time
    assert all(
        s.kind is SpanKind.SERVER for s in spans if "http.route" in (s.attributes or {})
    )


async def test_otel_outer_span_encloses_and_5xx_is_an_error(otel: Any) -> None:
    """HS-185, HS-183: the request's SERVER span starts under OpenTelemetry's current
    span when the application is called; a request answered 500 has the status ERROR
    and `error.type` "500", one answered 404 stays unset."""
    from opentelemetry.trace import SpanKind, StatusCode

    provider, exporter = otel
    outer_tracer = provider.get_tracer("the-application")
    failing = Agent(ScriptedChatClient([RuntimeError("model down")]), name="helper")
    app = HostingApp([failing])
    body = json.dumps(
        {"model": "helper", "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    with outer_tracer.start_as_current_span("outer") as outer:
        assert (await asgi(app, "POST", "/v1/chat/completions", body))[0] == 500
        assert (await asgi(app, "GET", "/nowhere"))[0] == 404
    spans = {s.name: s for s in exporter.get_finished_spans()}
    failed, missing = spans["POST /v1/chat/completions"], spans["GET"]
    for span in (failed, missing):
        assert span.kind is SpanKind.SERVER
        assert span.parent is not None
        assert span.parent.span_id == outer.get_span_context().span_id
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None
    assert failed.attributes["error.type"] == "500"
    assert missing.status.status_code is StatusCode.UNSET
