"""The hosting application against the official `openai` SDK (spec/hosting.md), served
on loopback by minagent.hosting.server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import openai
import pytest

from minagent import Agent, UsageDetails, tool
from minagent.hosting import HostingApp
from minagent.hosting.server import serve
from minagent.testing import ScriptedChatClient, call, reply, text_chunks


@asynccontextmanager
async def served(app: HostingApp) -> AsyncIterator[openai.AsyncOpenAI]:
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0
    )
    try:
        yield client
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
        # The SDK's stream is an async generator the event loop finalises in a task
        # of its own once it is dropped; let that task finish before the test ends.
        for _ in range(10):
            await asyncio.sleep(0)


async def raw(app: HostingApp, method: str, path: str, body: bytes) -> tuple[int, Any]:
    """One request straight through ASGI: the status and the JSON body."""
    sent: list[dict[str, Any]] = []
    chunks = [body]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": method, "path": path}, receive, send)
    data = b"".join(m.get("body", b"") for m in sent[1:])
    return int(sent[0]["status"]), json.loads(data)


USAGE = UsageDetails(input_token_count=7, output_token_count=3, total_token_count=10)


async def test_non_streamed_completion_through_the_sdk() -> None:
    """HS-2, HS-3: `model` names the agent; the answer is a chat.completion with the
    agent's text and usage; the request's messages reach the agent's model."""
    client = ScriptedChatClient([reply("hello there", usage=USAGE)])
    app = HostingApp([Agent(client, name="greeter")])
    async with served(app) as sdk:
        completion = await sdk.chat.completions.create(
            model="greeter",
            messages=[
                {"role": "system", "content": "be kind"},
                {"role": "user", "content": "hi"},
            ],
        )
    assert completion.object == "chat.completion"
    assert completion.model == "greeter"
    assert completion.choices[0].message.content == "hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (
        7,
        3,
    )
    assert completion.usage.total_tokens == 10
    assert client.requests[0].texts[-2:] == ["system: be kind", "user: hi"]


async def test_streamed_completion_through_the_sdk() -> None:
    """HS-4: a streamed completion is SSE chunks carrying the deltas, a finishing
    chunk, a usage chunk, then `data: [DONE]` (the SDK ends the stream on it)."""
    client = ScriptedChatClient([text_chunks("Hel", "lo", usage=USAGE)])
    app = HostingApp([Agent(client, name="greeter")])
    async with served(app) as sdk:
        stream = await sdk.chat.completions.create(
            model="greeter",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async with stream:
            chunks = [chunk async for chunk in stream]
    texts = [c.choices[0].delta.content for c in chunks if c.choices]
    assert "".join(t for t in texts if t) == "Hello"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 10
    assert {c.model for c in chunks} == {"greeter"}


async def test_models_lists_the_agents() -> None:
    """HS-2: GET /v1/models lists every hosted agent by name."""
    app = HostingApp(
        [
            Agent(ScriptedChatClient(), name="one"),
            Agent(ScriptedChatClient(), name="two"),
        ]
    )
    async with served(app) as sdk:
        models = [m.id async for m in sdk.models.list()]
    assert models == ["one", "two"]


async def test_a_server_side_tool_runs_inside_the_agent(stream: bool) -> None:
    """HS-3: a tool of the agent is run by the agent; the client sees only the answer."""
    seen: list[str] = []

    @tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return "sunny"

    client = ScriptedChatClient([[call("lookup", {"city": "Oslo"})], "It is sunny."])
    app = HostingApp([Agent(client, name="weather", tools=[lookup])])
    async with served(app) as sdk:
        messages: Any = [{"role": "user", "content": "weather in Oslo?"}]
        if stream:
            events = await sdk.chat.completions.create(
                model="weather", messages=messages, stream=True
            )
            async with events:
                parts = [c.choices[0].delta.content async for c in events if c.choices]
            text = "".join(p for p in parts if p)
        else:
            completion = await sdk.chat.completions.create(
                model="weather", messages=messages
            )
            text = completion.choices[0].message.content or ""
    assert text == "It is sunny."
    assert seen == ["Oslo"]
    assert len(client.requests) == 2


async def test_unknown_agent_is_a_404_in_openai_shape() -> None:
    """HS-5, HS-7: an unknown model is a 404 NotFoundError with OpenAI's error body,
    through the loopback server."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])
    async with served(app) as sdk:
        with pytest.raises(openai.NotFoundError) as caught:
            await sdk.chat.completions.create(
                model="nobody", messages=[{"role": "user", "content": "hi"}]
            )
    assert caught.value.status_code == 404
    assert caught.value.code == "model_not_found"
    assert "nobody" in caught.value.message


async def test_malformed_json_is_a_400() -> None:
    """HS-5: a body that is not JSON, or not an object, is a 400 in OpenAI's shape."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])
    for body in (b"{not json", b"[1, 2]", b"[" * 10_000):
        status, data = await raw(app, "POST", "/v1/chat/completions", body)
        assert status == 400
        assert data["error"]["type"] == "invalid_request_error"
        assert data["error"]["code"] == "invalid_json"


async def test_a_body_over_the_cap_is_a_413() -> None:
    """HS-6: a request body over the cap is refused with 413 before it is parsed."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")], max_body=100)
    async with served(app) as sdk:
        with pytest.raises(openai.APIStatusError) as caught:
            await sdk.chat.completions.create(
                model="greeter", messages=[{"role": "user", "content": "x" * 500}]
            )
    assert caught.value.status_code == 413
    assert caught.value.code == "request_too_large"


async def test_a_failing_run_leaks_no_traceback_or_secret() -> None:
    """HS-5: an exception inside the run is a 500 whose body carries neither the
    exception's text nor a traceback."""
    secret = "sk-SECRET-1234"
    client = ScriptedChatClient([RuntimeError(f"upstream said {secret}")])
    app = HostingApp([Agent(client, name="greeter")])
    body = json.dumps(
        {"model": "greeter", "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    status, data = await raw(app, "POST", "/v1/chat/completions", body)
    assert status == 500
    text = json.dumps(data)
    assert secret not in text
    assert "Traceback" not in text
    assert data["error"]["type"] == "server_error"


async def test_client_tools_and_bad_messages_are_refused() -> None:
    """HS-8, HS-32, HS-3: a tool of a type other than function is refused with a 400,
    never ignored; a message with an unknown role is a 400."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])
    tools = [{"type": "web_search"}]
    body = {"model": "greeter", "messages": [{"role": "user", "content": "hi"}]}
    status, data = await raw(
        app,
        "POST",
        "/v1/chat/completions",
        json.dumps({**body, "tools": tools}).encode(),
    )
    assert (status, data["error"]["code"]) == (400, "unsupported_tool")
    bad = {"model": "greeter", "messages": [{"role": "robot", "content": "hi"}]}
    status, data = await raw(
        app, "POST", "/v1/chat/completions", json.dumps(bad).encode()
    )
    assert (status, data["error"]["code"]) == (400, "invalid_messages")


async def test_lifespan_is_acknowledged() -> None:
    """HS-1: the lifespan scope's startup and shutdown are acknowledged; another scope
    type is a ValueError."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])
    incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    # an event the app does not know is not answered; the next ones still are
    for kind in ("lifespan.startup", "lifespan.other", "lifespan.shutdown"):
        incoming.put_nowait({"type": kind})
    sent: list[str] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan"}, incoming.get, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    with pytest.raises(ValueError, match="websocket"):
        await app({"type": "websocket"}, incoming.get, send)


def test_agents_must_have_distinct_names() -> None:
    """HS-2: a hosted agent needs a name, and names are unique; an app without an
    agent is a ValueError too."""
    with pytest.raises(ValueError, match="at least one agent"):
        HostingApp([])
    with pytest.raises(ValueError, match="non-empty name"):
        HostingApp([Agent(ScriptedChatClient())])
    with pytest.raises(ValueError, match="two hosted agents"):
        HostingApp(
            [
                Agent(ScriptedChatClient(), name="a"),
                Agent(ScriptedChatClient(), name="a"),
            ]
        )


async def test_every_malformed_message_is_a_400_naming_it() -> None:
    """HS-3: messages must be a non-empty array of system/developer/user/assistant
    messages whose content is a string or an array of text parts; anything else is a
    400 `invalid_messages` whose message names what was wrong, and no run starts."""
    client = ScriptedChatClient()
    app = HostingApp([Agent(client, name="greeter")])
    cases: list[tuple[Any, str]] = [
        ([], "'messages' must be a non-empty array"),
        ({"role": "user"}, "'messages' must be a non-empty array"),
        ([{"role": "user", "content": 3}], "messages[0].content must be a string"),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": None}],
            "messages[1].content must be a string",
        ),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            "messages[0].content: only text parts are supported",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": 5}]}],
            "messages[0].content: only text parts are supported",
        ),
    ]
    for messages, said in cases:
        body = json.dumps({"model": "greeter", "messages": messages}).encode()
        status, data = await raw(app, "POST", "/v1/chat/completions", body)
        assert (status, data["error"]["code"]) == (400, "invalid_messages"), messages
        assert data["error"]["message"] == said
    assert client.requests == []


async def test_text_parts_and_the_developer_role_reach_the_run(stream: bool) -> None:
    """HS-3: an array of text parts is the text of its parts joined; a `developer`
    message is taken as a `system` one."""
    client = ScriptedChatClient(["fine"])
    app = HostingApp([Agent(client, name="greeter")])
    parts = [{"type": "text", "text": "how "}, {"type": "text", "text": "are you?"}]
    async with served(app) as sdk:
        messages: Any = [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": parts},
        ]
        if stream:
            answer = ""
            chunks = await sdk.chat.completions.create(
                model="greeter", messages=messages, stream=True
            )
            async for piece in chunks:
                if piece.choices and piece.choices[0].delta.content:
                    answer += piece.choices[0].delta.content
        else:
            done = await sdk.chat.completions.create(model="greeter", messages=messages)
            answer = done.choices[0].message.content or ""
    assert answer == "fine"
    [sent] = client.requests
    assert [(m.role, m.text) for m in sent.messages] == [
        ("system", "be brief"),
        ("user", "how are you?"),
    ]


async def test_a_client_gone_before_its_body_ends_runs_nothing() -> None:
    """HS-5: a request whose client disconnects before the body is complete is a 400
    (`disconnected`) and starts no run."""
    client = ScriptedChatClient()
    app = HostingApp([Agent(client, name="greeter")])
    incoming = [
        {"type": "http.request", "body": b'{"model": "gre', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions"}
    await app(scope, receive, send)
    assert sent[0]["status"] == 400
    body = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert body["error"]["code"] == "disconnected"
    assert client.requests == []


async def test_a_failure_inside_a_started_stream_is_one_error_event() -> None:
    """HS-4, HS-5: a run that raises after the stream started sends one `data:` event
    in the error shape with `internal_error` and no exception text, then
    `data: [DONE]`."""
    secret = "sk-SECRET-STREAM"
    client = ScriptedChatClient([RuntimeError(f"upstream said {secret}")])
    app = HostingApp([Agent(client, name="greeter")])
    body = {
        "model": "greeter",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    sent: list[dict[str, Any]] = []
    chunks = [json.dumps(body).encode()]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions"}
    await app(scope, receive, send)
    assert sent[0]["status"] == 200
    text = b"".join(m.get("body", b"") for m in sent[1:]).decode()
    events = [e.removeprefix("data: ") for e in text.split("\n\n") if e]
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert (error["type"], error["code"]) == ("server_error", "internal_error")
    assert secret not in text
