"""The aiohttp transport end to end against the loopback server (spec/providers.md,
OA-20 ..).

Recorded transcripts are replayed by the server (as a stream, or merged into the
equivalent body when the request does not stream) and driven through ``get_response``
and ``Agent.run`` with real tools, in both modes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from minagent_openai import (
    ChatCompletionsStreamDecoder,
    OpenAIChatClient,
    OpenAIProtocolError,
    OpenAIStreamError,
)

from minagent import (
    Agent,
    AuthenticationError,
    ChatResponse,
    ChatResponseUpdate,
    Message,
    ProviderError,
    StreamInterruptedError,
    get_client,
    tool,
)
from tests._support.modes import get_response_with_updates

from ._fake_server import (
    CREATED,
    FakeOpenAI,
    collect_texts,
    merge_chunks,
    raw,
    replay,
    sse,
    stream_chunks,
    transcript,
)


async def respond(
    client: OpenAIChatClient, prompt: str = "Hi", *, stream: bool, **kw: Any
) -> tuple[ChatResponse, list[ChatResponseUpdate]]:
    return await get_response_with_updates(
        client, [Message("user", [prompt])], stream=stream, **kw
    )


def weather_tools(seen: list[str]) -> list[Any]:
    @tool
    async def get_weather(location: str, unit: str = "celsius") -> str:
        """Current weather for a city."""
        seen.append(location)
        return f"{location}: 21 {unit}"

    @tool
    async def get_time(zone: str = "UTC") -> str:
        """Current time in a zone."""
        seen.append(f"time:{zone}")
        return f"12:00 {zone}"

    return [get_weather, get_time]


# =============================================================================================
# Transcripts end to end (PV-34)


async def test_plain_text_transcript(stream: bool) -> None:
    """PV-34, PV-8: a recorded text answer, with its usage, ids and finish reason."""
    async with FakeOpenAI() as server:
        server.add(replay(transcript("plain_text.sse"), x_request_id="req_1"))
        async with server.make_client() as client:
            response, updates = await respond(client, stream=stream)
    assert response.text == "Hello, wörld — ünïcode 👋!"
    assert response.response_id == "chatcmpl-AbC1"
    assert response.model == "gpt-4o-mini-2024-07-18"
    assert response.finish_reason == "stop"
    assert response.created_at == "2024-05-06T12:53:20Z"
    assert response.usage_details is not None
    assert response.usage_details.total_token_count == 21
    if stream:
        assert len([u for u in updates if u.text]) == 3  # delivered delta by delta


async def test_both_modes_of_every_transcript_are_equal() -> None:
    """PV-9, PV-34: each transcript, streamed or merged into a body, gives the same
    response."""
    for name in ("plain_text.sse", "one_tool_call.sse", "parallel_tool_calls.sse",
                 "whole_tool_call.sse", "keepalive_crlf.sse"):  # fmt: skip
        finals = []
        async with FakeOpenAI() as server:
            server.add(replay(transcript(name)), replay(transcript(name)))
            client = server.make_client(function_invocation_configuration=None)
            # return calls unexecuted
            client.function_invocation_configuration.enabled = False
            async with client:
                for stream in (False, True):
                    finals.append((await respond(client, stream=stream))[0])
        assert finals[0] == finals[1], name


async def test_agent_runs_a_recorded_tool_call(stream: bool) -> None:
    """PV-34, OA-4, OA-5: Agent.run executes the recorded call and sends its result
    back."""
    seen: list[str] = []
    async with FakeOpenAI() as server:
        server.add(
            replay(transcript("one_tool_call.sse")),
            replay(transcript("plain_text.sse")),
        )
        async with server.make_client() as client:
            agent = Agent(client, "Be brief.", tools=weather_tools(seen))
            if stream:
                run = agent.run("Weather in Paris?", stream=True)
                _ = [u async for u in run]
                response = await run.get_final_response()
            else:
                response = await agent.run("Weather in Paris?")
        first, second = server.requests()
    assert seen == ["Paris"]
    assert response.text.endswith("Hello, wörld — ünïcode 👋!")
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [t["function"]["name"] for t in first["tools"]] == [
        "get_weather",
        "get_time",
    ]
    assert first.get("stream", False) is stream
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_weather1"
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_weather1",
        "content": "Paris: 21 celsius",
    }
    assert response.usage_details is not None
    assert response.usage_details.total_token_count == 97 + 21


@pytest.mark.parametrize("name", ["parallel_tool_calls.sse", "whole_tool_call.sse"])
async def test_agent_runs_recorded_parallel_calls(name: str, stream: bool) -> None:
    """PV-34, PV-13: every call of a recorded parallel batch runs; results go back in
    order."""
    seen: list[str] = []
    async with FakeOpenAI() as server:
        server.add(replay(transcript(name)), replay(transcript("plain_text.sse")))
        async with server.make_client() as client:
            agent = Agent(client, tools=weather_tools(seen))
            run = agent.run("Weather?", stream=stream)
            if stream:
                _ = [u async for u in run]
                response = await run.get_final_response()
            else:
                response = await run
        second = server.requests()[1]
    calls = [
        c for m in response.messages for c in m.contents if c.type == "function_call"
    ]
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [c.call_id for c in calls]
    if name == "parallel_tool_calls.sse":
        assert sorted(seen) == ["Paris", "time:UTC", "東京"]
        assert [m["content"] for m in tool_messages] == [
            "Paris: 21 celsius", "東京: 21 celsius", "12:00 UTC",
        ]  # fmt: skip
    else:
        assert sorted(seen) == ["Paris", "time:Europe/Paris"]


async def test_keepalives_and_crlf_transcript() -> None:
    """PV-34, PV-19: comments, CRLF and multi-line data arrive as the codec decodes
    them."""
    async with FakeOpenAI() as server:
        server.add(replay(transcript("keepalive_crlf.sse")))
        async with server.make_client() as client:
            response, _ = await respond(client, stream=True)
    assert response.text == "Line one\nline two ✓"
    assert response.finish_reason == "length"


# =============================================================================================
# The request (OA-20, OA-21)


async def test_request_line_headers_and_body() -> None:
    """OA-20, OA-21: POST {base}/chat/completions with the documented headers and
    body."""
    async with FakeOpenAI() as server:
        server.script_text("a")
        server.script_text("b")
        client = server.make_client(api_key="sk-abc", default_headers={"X-Trace": "t1"})
        async with client:
            await respond(client, stream=False)
            await respond(
                client, stream=True, options={"model": "gpt-4.1", "max_tokens": 5}
            )
        plain, streamed = server.requests()
        h_plain, h_stream = server.headers
    assert h_plain["Authorization"] == "Bearer sk-abc"
    assert h_plain["Accept"] == "application/json"
    assert h_stream["Accept"] == "text/event-stream"
    assert h_plain["Content-Type"] == "application/json"
    from importlib.metadata import version

    # OA-20
    assert h_plain["User-Agent"] == f"minagent-openai/{version('minagent-openai')}"
    assert h_plain["X-Trace"] == "t1"
    assert plain == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    assert streamed["model"] == "gpt-4.1"  # options["model"] wins for one call
    assert streamed["max_completion_tokens"] == 5
    assert streamed["stream"] is True
    assert streamed["stream_options"] == {"include_usage": True}


async def test_max_tokens_key_and_utf8_body() -> None:
    """OA-21: max_tokens_key reaches the codec; the body is UTF 8 JSON."""
    async with FakeOpenAI() as server:
        server.script_text("ok")
        async with server.make_client(max_tokens_key="max_tokens") as client:
            await respond(client, "Grüße 東京", stream=False, options={"max_tokens": 7})
        body = server.requests()[0]
    assert body["max_tokens"] == 7
    assert "max_completion_tokens" not in body
    assert body["messages"][0]["content"] == "Grüße 東京"


async def test_no_key_sends_no_authorization_and_says_so_on_401(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OA-20: without a key there is no Authorization header; a 401 says no key was
    set."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with FakeOpenAI() as server:
        server.script_text("local servers need no key")
        server.script_error(401, "Missing bearer authentication")
        async with server.make_client(api_key=None, max_retries=0) as client:
            await respond(client, stream=False)
            with pytest.raises(AuthenticationError, match="no API key was configured"):
                await respond(client, stream=False)
        assert "Authorization" not in server.headers[0]
    assert repr(client).endswith("api_key=None)")


async def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """OA-20: OPENAI_API_KEY and OPENAI_BASE_URL are the defaults; the default base is
    OpenAI."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIChatClient("m", api_key="k").base_url == "https://api.openai.com/v1"
    async with FakeOpenAI() as server:
        server.script_text("from env")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/")
        async with OpenAIChatClient("gpt-4o-mini") as client:
            assert client.base_url == server.base_url  # trailing slash removed
            response, _ = await respond(client, stream=False)
        assert server.headers[0]["Authorization"] == "Bearer sk-from-env"
    assert response.text == "from env"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "ftp://example.com"}, "http"),
        ({"base_url": "localhost:8000"}, "http"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.0}, "timeout"),
    ],
)
def test_invalid_configuration(kwargs: dict[str, Any], match: str) -> None:
    """OA-20, OA-23: a base URL that is not http(s) and a timeout <= 0 are
    ValueErrors."""
    with pytest.raises(ValueError, match=match):
        OpenAIChatClient("m", api_key="k", **kwargs)


def test_the_entry_point_and_lazy_import() -> None:
    """PV-22, OA-25, PV-41: get_client("openai") builds the client; importing the
    package and touching OpenAIChatClient do not import aiohttp, building a client does
    (its default transport, where aiohttp is installed)."""
    client = get_client(
        "openai", model="gpt-4o-mini", api_key="k", base_url="http://h/v1"
    )
    assert isinstance(client, OpenAIChatClient)
    code = (
        "import sys, minagent_openai as m\n"
        "before = 'aiohttp' in sys.modules\n"
        "m.OpenAIChatClient\n"
        "touched = 'aiohttp' in sys.modules\n"
        "m.OpenAIChatClient('m', base_url='http://h/v1')\n"
        "print(before, touched, 'aiohttp' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False", "True"]


def test_unknown_attribute_of_the_package() -> None:
    """OA-25: the lazy attribute hook raises AttributeError for other names."""
    import minagent_openai

    with pytest.raises(AttributeError, match="Nope"):
        _ = minagent_openai.Nope


# =============================================================================================
# Life cycle (PV-31)


async def test_session_is_lazy_owned_and_closed() -> None:
    """PV-31: no session before the first call; aclose closes it (idempotent); a new
    call opens a new one; async with closes it."""
    async with FakeOpenAI() as server:
        server.script_text("one")
        server.script_text("two")
        client = server.make_client()
        assert client.session is None
        await respond(client, stream=False)
        first = client.session
        assert first is not None
        assert not first.closed
        await client.aclose()
        await client.aclose()
        assert first.closed
        assert client.session is None
        async with client:
            await respond(client, stream=True)
            second = client.session
            assert second is not None
            assert second is not first
        assert second.closed


async def test_a_session_passed_in_is_not_closed() -> None:
    """PV-31: the client uses a given session and leaves it open."""
    async with FakeOpenAI() as server, aiohttp.ClientSession() as session:
        server.script_text("shared")
        async with server.make_client(session=session) as client:
            response, _ = await respond(client, stream=False)
            assert client.session is session
        assert not session.closed
    assert response.text == "shared"


async def test_agent_context_closes_the_client() -> None:
    """PV-31: `async with agent:` enters the client and closes its session on exit
    (AG-9)."""
    async with FakeOpenAI() as server:
        server.script_text("hi")
        client = server.make_client()
        async with Agent(client) as agent:
            assert (await agent.run("Hi")).text == "hi"
            session = client.session
        assert session is not None
        assert session.closed


# =============================================================================================
# Errors (OA-22, OA-24, PV-29)


async def test_error_body_and_request_id(stream: bool) -> None:
    """OA-22, PV-23, PV-24, PV-45: the message comes from the body, the id from
    x-request-id; the text names the method and URL, and for a 404 says that the base
    URL usually ends in /v1."""
    detail = {
        "message": "The model `gpt-9` does not exist",
        "type": "invalid_request_error",
    }
    body = {"error": {**detail, "param": None, "code": "model_not_found"}}
    async with FakeOpenAI() as server:
        server.add(raw(404, json.dumps(body), headers={"x-request-id": "req_404"}))
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(ProviderError) as info:
                await respond(client, stream=stream)
    error = info.value
    assert type(error).__name__ == "NotFoundError"
    assert error.status == 404
    assert error.provider_message == "The model `gpt-9` does not exist"
    assert error.request_id == "req_404"
    assert str(error) == (
        "openai: HTTP 404 Not Found: The model `gpt-9` does not exist (POST "
        f"{client.base_url}/chat/completions; is the base URL right? an OpenAI-compatible one usually ends "
        "in /v1) (request id req_404)"
    )
    assert error.headers["x-request-id"] == "req_404"


async def test_plain_text_and_huge_error_bodies() -> None:
    """OA-22: a text body is the message (cut to 500 characters); at most 64 KiB is
    read."""
    async with FakeOpenAI() as server:
        server.add(raw(502, "Bad gateway from the proxy\n", content_type="text/plain"))
        server.add(raw(500, b"x" * 2_000_000, content_type="text/plain"))
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(
                ProviderError, match="HTTP 502 Bad Gateway: Bad gateway from"
            ):
                await respond(client, stream=False)
            with pytest.raises(ProviderError) as info:
                await respond(client, stream=False)
    assert info.value.provider_message == "x" * 500


async def test_non_json_success_body_is_a_protocol_error() -> None:
    """OA-22, PV-10: a 200 body that is not JSON is OpenAIProtocolError, not retried."""
    async with FakeOpenAI() as server:
        server.add(raw(200, "<html>oops</html>", headers={"x-request-id": "req_html"}))
        async with server.make_client() as client:
            with pytest.raises(
                OpenAIProtocolError, match=r"not valid JSON.*<html>oops"
            ) as info:
                await respond(client, stream=False)
        assert len(server.requests()) == 1
    assert isinstance(info.value, ProviderError)
    assert isinstance(info.value, ValueError)
    assert info.value.request_id == "req_html"
    assert info.value.status is None


async def test_error_object_in_a_success_body() -> None:
    """OA-22, OA-18: {"error": ...} in a 2xx body raises OpenAIStreamError, not
    retried."""
    async with FakeOpenAI() as server:
        server.add(raw(200, json.dumps({"error": {"message": "upstream failed"}})))
        async with server.make_client() as client:
            with pytest.raises(OpenAIStreamError, match="upstream failed"):
                await respond(client, stream=False)
        assert len(server.requests()) == 1


async def test_stream_error_event_after_updates() -> None:
    """OA-22, PV-14, PV-29: updates before an error event are delivered, then the error
    (with the request id) is raised; nothing is retried."""
    meta = {"id": "chatcmpl-E", "created": CREATED, "model": "m"}
    data = sse(stream_chunks(meta, "Partial answer"), done=False)
    data = data.replace(b'"finish_reason": "stop"', b'"finish_reason": null')
    data += (
        b'data: {"error": {"message": "server overloaded", "type": "server_error"}}\n\n'
    )

    async def handler(
        server: FakeOpenAI, request: web.Request, _: Any
    ) -> web.StreamResponse:
        from ._fake_server import send_chunks

        return await send_chunks(request, data, headers={"x-request-id": "req_stream"})

    async with FakeOpenAI() as server:
        server.add(handler)
        async with server.make_client() as client:
            stream = client.get_response([Message("user", ["Hi"])], stream=True)
            seen = []
            with pytest.raises(OpenAIStreamError, match="server overloaded") as info:
                await collect_texts(stream, seen)
        assert len(server.requests()) == 1
    assert "".join(seen) == "Partial answer"
    assert info.value.request_id == "req_stream"
    assert info.value.type == "server_error"


async def test_stream_answered_with_json() -> None:
    """OA-24: a streaming request answered with a JSON body is decoded as a whole
    body."""
    meta = {"id": "chatcmpl-J", "created": CREATED, "model": "m"}
    body = merge_chunks(sse(stream_chunks(meta, "whole answer")))
    async with FakeOpenAI() as server:
        server.add(raw(200, json.dumps(body)), raw(200, json.dumps(body)))
        server.add(raw(200, json.dumps({"error": {"message": "nope"}})))
        async with server.make_client() as client:
            streamed, updates = await respond(client, stream=True)
            plain, _ = await respond(client, stream=False)
            with pytest.raises(OpenAIStreamError, match="nope"):
                await respond(client, stream=True)
    assert streamed == plain
    assert streamed.text == "whole answer"
    assert updates
    assert updates[0].role == "assistant"


async def test_stream_without_done_but_finished_is_complete() -> None:
    """PV-15, PV-29: a stream that ends without [DONE] after a finish_reason is
    complete."""
    meta = {"id": "chatcmpl-F", "created": CREATED, "model": "m"}
    data = sse(stream_chunks(meta, "done enough"), done=False)
    async with FakeOpenAI() as server:
        server.add(replay(data))
        async with server.make_client() as client:
            response, _ = await respond(client, stream=True)
    assert response.text == "done enough"
    assert response.finish_reason == "stop"


@pytest.mark.parametrize("truncate", ["unfinished", "mid_event"])
async def test_incomplete_stream_is_interrupted(truncate: str) -> None:
    """PV-15, PV-29: a stream that ends cleanly but early — before [DONE] and without a
    finish_reason, or inside an event — is StreamInterruptedError after its updates."""
    meta = {"id": "chatcmpl-I", "created": CREATED, "model": "m"}
    chunks = stream_chunks(meta, "cut short here")[:-1]  # no finish chunk
    data = sse(chunks, done=False)
    if truncate == "mid_event":
        data += b'data: {"id": "chatcmpl-I", "choi'
    async with FakeOpenAI() as server:
        server.add(replay(data))
        async with server.make_client() as client:
            stream = client.get_response([Message("user", ["Hi"])], stream=True)
            texts = []
            with pytest.raises(StreamInterruptedError, match="interrupted") as info:
                await collect_texts(stream, texts)
        assert len(server.requests()) == 1
    assert "".join(texts) == "cut short here"
    assert info.value.retryable is False
    assert info.value.status is None


def test_reference_decoder_matches_fixture_parser() -> None:
    """PV-12: the fixture merger and the codec agree on every transcript (fixture
    sanity)."""
    from minagent_openai import parse_response

    for name in ("plain_text.sse", "one_tool_call.sse", "parallel_tool_calls.sse"):
        data = transcript(name)
        decoder = ChatCompletionsStreamDecoder()
        updates = decoder.feed(data) + decoder.close()
        assert ChatResponse.from_updates(updates) == parse_response(
            merge_chunks(data)
        ), name


async def test_last_event_without_a_blank_line() -> None:
    """PV-21, PV-29: an event the body ends without its blank line is still delivered;
    an error event there still raises."""
    meta = {"id": "chatcmpl-L", "created": CREATED, "model": "m"}
    data = sse(stream_chunks(meta, "tail"), done=False).rstrip(b"\n")
    error = b'data: {"error": {"message": "late failure"}}'
    async with FakeOpenAI() as server:
        server.add(replay(data), replay(error))
        async with server.make_client() as client:
            response, _ = await respond(client, stream=True)
            with pytest.raises(OpenAIStreamError, match="late failure"):
                await respond(client, stream=True)
    assert response.text == "tail"
    assert response.finish_reason == "stop"


async def test_an_empty_stream_is_retried() -> None:
    """PV-29: a 2xx stream that ends before its first byte is a connection failure,
    retried."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    empty = raw(200, b"", content_type="text/event-stream")
    async with FakeOpenAI() as server:
        server.add(empty, empty, empty)
        server.script_text("second try")
        async with server.make_client(sleep=sleep, max_retries=1) as client:
            with pytest.raises(ProviderError, match="before its first byte") as info:
                await respond(client, stream=True)
            assert type(info.value).__name__ == "ProviderConnectionError"
            response, _ = await respond(client, stream=True)
    assert response.text == "second try"
    assert len(waits) == 2


async def test_stream_answered_with_json_keeps_usage() -> None:
    """OA-24, PV-8: usage in a JSON body answering a stream arrives as usage_details."""
    body = {
        "id": "chatcmpl-U", "created": CREATED, "model": "m", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }  # fmt: skip
    async with FakeOpenAI() as server:
        server.add(raw(200, json.dumps(body)))
        async with server.make_client() as client:
            response, _ = await respond(client, stream=True)
    assert response.usage_details is not None
    assert response.usage_details.total_token_count == 4


def test_upstream_chat_completion_client_name() -> None:
    """OA-25: ``OpenAIChatCompletionClient`` (agent-framework-openai 1.17's name for
    the Chat Completions client) is minagent's Chat Completions client, loaded on first
    access without aiohttp, and the README's provider table says so."""
    code = (
        "import sys, minagent_openai as m\n"
        "c = m.OpenAIChatCompletionClient\n"
        "print('aiohttp' in sys.modules, c is m.OpenAIChatClient, c.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "True", "OpenAIChatClient"]
    import minagent_openai

    assert "OpenAIChatCompletionClient" in minagent_openai.__all__
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `openai` |"))
    assert "OpenAIChatCompletionClient" in row
