"""The Responses transport over a loopback server (spec/openai-responses.md, OR-20,
OR-21; OR-10 and OR-15 through Agent.run, with the thread on the service and on this
side)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minagent_openai import (
    OpenAIProtocolError,
    OpenAIResponsesClient,
    OpenAIStreamError,
    ResponsesStreamDecoder,
)

from minagent import (
    Agent,
    ChatResponse,
    Content,
    FunctionInvocationConfiguration,
    Message,
    StreamInterruptedError,
    get_client,
    tool,
)
from tests._support.modes import get_response, run

from ._fake_server import (
    FakeResponses,
    disconnect_after,
    events,
    raw,
    replay,
    response_body,
    send_chunks,
    sse,
    transcript,
)

NO_TOOLS = FunctionInvocationConfiguration(enabled=False)
NAMES = [
    "plain_text.sse",
    "one_tool_call.sse",
    "parallel_tool_calls.sse",
    "reasoning_tool_call.sse",
    "hosted_web_search.sse",
    "keepalive_crlf.sse",
]


async def respond(
    client: OpenAIResponsesClient,
    stream: bool,
    messages: list[Message] | None = None,
    **options: Any,
) -> ChatResponse:
    messages = messages or [Message("user", ["Hi"])]
    response: ChatResponse = await get_response(
        client, messages, stream=stream, options=options
    )
    return response


async def test_path_headers_and_body(stream: bool) -> None:
    """OR-20: POST {base_url}/responses with the OA-20 headers and the OR-1 body."""
    async with FakeResponses() as server:
        server.script_text("ok")
        async with server.make_client(api_key="sk-abc") as client:
            response = await respond(
                client, stream, model="gpt-5", instructions="Be brief.", temperature=0.3
            )
        assert response.text == "ok"
        assert server.paths == ["/v1/responses"]
        headers = server.headers[0]
        assert headers["Authorization"] == "Bearer sk-abc"
        assert headers["Content-Type"] == "application/json"
        assert headers["Accept"] == (
            "text/event-stream" if stream else "application/json"
        )
        assert headers["User-Agent"].startswith("minagent-openai")
        [body] = server.requests()
        expected = {
            "model": "gpt-5",
            "instructions": "Be brief.",
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Hi"}],
                }
            ],
            "temperature": 0.3,
        }
        if stream:
            expected["stream"] = True
        assert body == expected


async def test_store_false_keeps_the_thread_here(stream: bool) -> None:
    """OR-15, OR-20: the request's store option reaches the codec: no
    conversation_id."""
    async with FakeResponses() as server:
        server.script_text("ok")
        server.script_text("ok")
        async with server.make_client() as client:
            assert (await respond(client, stream, store=False)).conversation_id is None
            assert (await respond(client, stream)).conversation_id == "resp_fake2"
        assert server.requests()[0]["store"] is False


async def _run(agent: Agent, text: str, thread: Any, stream: bool) -> Any:
    return await run(agent, text, thread=thread, stream=stream)


async def test_thread_lives_on_the_service(stream: bool) -> None:
    """OR-10, OR-15: through Agent.run the response id becomes the thread's service id,
    and the next run sends only its new message with previous_response_id."""
    async with FakeResponses() as server:
        server.script_text("Hello Ada.")
        server.script_text("Your name is Ada.")
        async with server.make_client() as client:
            agent = Agent(client, "You remember names.")
            thread = agent.get_new_thread()
            await _run(agent, "My name is Ada.", thread, stream)
            assert thread.service_thread_id == "resp_fake1"
            assert thread.messages == []
            second = await _run(agent, "What is my name?", thread, stream)
        assert second.text == "Your name is Ada."
        assert thread.service_thread_id == "resp_fake2"
        first, follow = server.requests()
        assert "previous_response_id" not in first
        assert follow["previous_response_id"] == "resp_fake1"
        assert follow["instructions"] == "You remember names."
        assert follow["input"] == [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "What is my name?"}],
            }
        ]


async def test_tool_loop_on_the_service(stream: bool) -> None:
    """OR-10, OR-15, LP-19: after a tool call only the call's output goes back, with the
    thread id."""

    @tool
    def get_weather(location: str) -> str:
        """Weather."""
        return f"Sunny in {location}"

    async with FakeResponses() as server:
        server.script_tool_call("get_weather", {"location": "Paris"}, "call_1")
        server.script_text("It is sunny.")
        async with server.make_client() as client:
            agent = Agent(client, "Weather bot.", tools=[get_weather])
            response = await _run(agent, "Paris?", None, stream)
        assert response.text == "It is sunny."
        second = server.requests()[1]
        assert second["previous_response_id"] == "resp_fake1"
        assert second["input"] == [
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": "Sunny in Paris",
            }
        ]


async def test_stateless_thread_replays_reasoning(stream: bool) -> None:
    """OR-5, OR-14, OR-15: with store=False the whole history goes back, reasoning items
    with their encrypted content and calls with their item ids, and no
    previous_response_id."""

    @tool
    def get_weather(location: str) -> str:
        """Weather."""
        return "Sunny"

    async with FakeResponses() as server:
        server.add(replay(transcript("reasoning_tool_call.sse")))
        server.script_text("Sunny in Paris.")
        server.script_text("You asked about Paris.")
        async with server.make_client() as client:
            agent = Agent(
                client,
                "Weather bot.",
                tools=[get_weather],
                default_options={
                    "store": False,
                    "include": ["reasoning.encrypted_content"],
                },
            )
            thread = agent.get_new_thread()
            await _run(agent, "Paris?", thread, stream)
            assert thread.service_thread_id is None
            await _run(agent, "What did I ask?", thread, stream)
        first, second, third = server.requests()
        assert first["include"] == ["reasoning.encrypted_content"]
        assert first["store"] is False
        assert "previous_response_id" not in second
        assert second["input"][1:] == [
            {
                "type": "reasoning",
                "id": "rs_T004",
                "summary": [
                    {
                        "type": "summary_text",
                        "text": "**Checking the weather**\n\nThe user wants Paris.",
                    },
                    {"type": "summary_text", "text": "I will call the tool."},
                ],
                "encrypted_content": "gAAAAABo-ENCRYPTED-REASONING==",
            },
            {
                "type": "function_call",
                "call_id": "call_r1",
                "name": "get_weather",
                "arguments": '{"location":"Paris"}',
                "id": "fc_T004_0",
            },
            {"type": "function_call_output", "call_id": "call_r1", "output": "Sunny"},
        ]
        assert [i["type"] for i in third["input"]] == [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "message",
            "message",
        ]


async def test_streamed_json_answer() -> None:
    """OR-20: a streaming request answered with a JSON body is parsed whole and
    yielded."""
    body = response_body(
        "resp_j",
        "m",
        text="Whole.",
        usage={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    )
    async with FakeResponses() as server:
        server.add(raw(200, json.dumps(body)))
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            final = await respond(client, True)
        assert final.text == "Whole."
        assert final.finish_reason == "stop"
        assert final.usage_details is not None
        assert final.usage_details.total_token_count == 3


async def test_failed_response_raises_with_request_id(stream: bool) -> None:
    """OR-13, OR-18, OR-20: a failed response is OpenAIStreamError with the answer's
    request id."""
    data = transcript("failed.sse")

    async def handler(server: FakeResponses, request: Any, body: dict[str, Any]) -> Any:
        if body.get("stream"):
            return await send_chunks(request, data, headers={"x-request-id": "req_f"})
        failed = events(response_body("resp_T009", "m"))[-1]["response"]
        failed.update(
            status="failed",
            error={
                "code": "server_error",
                "message": "The model failed to generate a response.",
            },
        )
        from aiohttp import web

        return web.json_response(failed, headers={"x-request-id": "req_f"})

    async with FakeResponses() as server:
        server.add(handler)
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(OpenAIStreamError, match="failed to generate") as info:
                await respond(client, stream)
        assert info.value.request_id == "req_f"
        assert info.value.code == "server_error"
        assert len(server.requests()) == 1


async def test_stream_without_terminal_event_is_interrupted() -> None:
    """OR-20, PV-15: a stream that ends before response.completed is
    StreamInterruptedError."""
    data = transcript("plain_text.sse")
    cut = data.rindex(b"event: response.completed")

    async def handler(server: FakeResponses, request: Any, body: dict[str, Any]) -> Any:
        return await send_chunks(request, data[:cut])

    async with FakeResponses() as server:
        server.add(handler)
        texts: list[str] = []

        async def consume(client: OpenAIResponsesClient) -> None:
            async for update in client.get_response(
                [Message("user", ["Hi"])], stream=True
            ):
                texts.append(update.text)

        async with server.make_client(max_retries=3) as client:
            with pytest.raises(StreamInterruptedError, match=r"response\.completed"):
                await consume(client)
        assert "".join(texts).startswith("Bonjour")
        assert len(server.requests()) == 1


async def test_dropped_connection_mid_stream() -> None:
    """OR-20, PV-29: a connection dropped after the first byte is
    StreamInterruptedError, not retried."""
    data = transcript("plain_text.sse")
    async with FakeResponses() as server:
        server.add(disconnect_after(data, len(data) // 2))
        async with server.make_client(max_retries=3) as client:
            with pytest.raises(StreamInterruptedError):
                await respond(client, True)
        assert len(server.requests()) == 1


async def test_body_that_is_not_json() -> None:
    """OR-20, PV-10: a 2xx body that is not JSON is an OpenAIProtocolError."""
    async with FakeResponses() as server:
        server.add(raw(200, "<html>proxy page</html>", content_type="application/json"))
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(OpenAIProtocolError, match="not valid JSON"):
                await respond(client, False)


async def test_bad_options_fail_before_sending() -> None:
    """OR-11, OR-20: an option the API cannot take is a ValueError and nothing is
    sent."""
    async with FakeResponses() as server:
        async with server.make_client() as client:
            with pytest.raises(ValueError, match="'stop' cannot be sent"):
                await respond(client, False, stop=["\n"])
        assert server.requests() == []


async def served(
    data: bytes, cuts: list[int], pauses: list[float]
) -> tuple[list[Any], ChatResponse]:
    async with FakeResponses() as server:
        server.add(replay(data, cuts, pauses))
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            stream = client.get_response([Message("user", ["Hi"])], stream=True)
            updates = [u async for u in stream]
            final = await stream.get_final_response()
    return updates, final


def reference(data: bytes) -> list[dict[str, Any]]:
    decoder = ResponsesStreamDecoder()
    return [u.to_dict() for u in decoder.feed(data) + decoder.close()]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_network_chunking(data: st.DataObject) -> None:
    """PV-12, OR-16, OR-20: a transcript written in random pieces over the network gives
    the same updates as the codec decoding it whole."""
    name = data.draw(st.sampled_from(NAMES), label="transcript")
    body = transcript(name)
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=30), label="cuts")
    pauses = data.draw(
        st.lists(st.sampled_from([0.0, 0.001]), max_size=len(cuts) + 1), label="pauses"
    )
    updates, final = asyncio.run(served(body, cuts, pauses))
    expected = reference(body)
    got = [u.to_dict() for u in updates]
    for update in got:
        update.get("additional_properties", {}).pop("request_id", None)
        if update.get("additional_properties") == {}:
            del update["additional_properties"]
    assert got == expected
    assert final == ChatResponse.from_updates(ResponsesStreamDecoder().feed(body))


def test_entry_point_and_lazy_import() -> None:
    """OR-21, PV-22, PV-41: get_client("openai-responses") builds the client; importing
    the package and touching the class load no aiohttp; building a client does (its
    default transport, where aiohttp is installed)."""
    client = get_client(
        "openai-responses", model="gpt-5", api_key="k", base_url="http://h/v1"
    )
    assert isinstance(client, OpenAIResponsesClient)
    assert (
        repr(client)
        == "OpenAIResponsesClient(model='gpt-5', base_url='http://h/v1', api_key='***')"
    )
    code = (
        "import sys, minagent_openai\n"
        "from minagent_openai import build_responses_request, ResponsesStreamDecoder\n"
        "assert 'aiohttp' not in sys.modules, 'aiohttp imported'\n"
        "minagent_openai.OpenAIResponsesClient\n"
        "assert 'aiohttp' not in sys.modules\n"
        "minagent_openai.OpenAIResponsesClient('gpt-5', base_url='http://h/v1')\n"
        "assert 'aiohttp' in sys.modules\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )


def test_kept_contents_survive_a_thread_round_trip() -> None:
    """OR-6, OR-13: a hosted item kept as a content serialises and is replayed
    unchanged."""
    item = {"id": "ws_1", "type": "web_search_call", "status": "completed"}
    content = Content(
        "web_search_call", id="ws_1", additional_properties={"openai_item": item}
    )
    again = Content.from_dict(json.loads(json.dumps(content.to_dict())))
    from minagent_openai import build_responses_request

    body = build_responses_request(
        [Message("assistant", [again])], {}, model="m", stream=False
    )
    assert body["input"] == [item]


async def test_request_id_is_kept(stream: bool) -> None:
    """OR-20: the answer's x-request-id is in additional_properties["request_id"], in
    both modes."""
    async with FakeResponses() as server:
        server.add(replay(transcript("plain_text.sse"), x_request_id="req_77"))
        async with server.make_client(
            function_invocation_configuration=NO_TOOLS
        ) as client:
            response = await respond(client, stream)
        assert response.additional_properties["request_id"] == "req_77"
        assert response.text.startswith("Bonjour")


async def test_credentials_in_the_base_url() -> None:
    """OR-20: user:password@ in the base URL is sent as Basic auth, as by
    OpenAIChatClient."""
    async with FakeResponses() as server:
        server.script_text("ok")
        url = server.base_url.replace("http://", "http://alice:s3cret-pass@")
        async with OpenAIResponsesClient("m", base_url=url, api_key="") as client:
            assert (await respond(client, False)).text == "ok"
            assert "s3cret-pass" not in repr(client)
        assert server.headers[0]["Authorization"] == "Basic YWxpY2U6czNjcmV0LXBhc3M="


async def test_size_limits(stream: bool) -> None:
    """OR-16, OR-20, PV-36: an overlong event or body is an OpenAIProtocolError naming
    the bound."""
    body = response_body("resp_big", "m", text="x" * 5000)
    async with FakeResponses() as server:
        server.add(replay(sse(events(body))))
        async with server.make_client(
            max_line_size=1000, max_body_size=1000, max_retries=0
        ) as client:
            with pytest.raises(
                OpenAIProtocolError, match=r"max_line_size=1000|max_body_size=1000"
            ):
                await respond(client, stream)


def test_sending_is_the_chat_clients() -> None:
    """OR-20: the Responses client sends through OpenAIChatClient's own attempt, with
    its path."""
    import inspect

    from minagent_openai._client import OpenAIChatClient

    assert "_attempt" not in OpenAIResponsesClient.__dict__
    assert OpenAIResponsesClient.path == "/responses"
    assert "self.path" in inspect.getsource(OpenAIChatClient._attempt)


async def test_serialized_threads_keep_what_replay_needs(stream: bool) -> None:
    """OR-5, OR-14, OR-15: a local thread (store=False) and a service thread survive
    serialize/deserialize with what the next request needs: reasoning with its encrypted
    content and item ids, or the service's thread id."""
    from minagent import AgentThread

    async with FakeResponses() as server:
        server.add(replay(transcript("reasoning_tool_call.sse")))
        server.script_text("Done.")
        server.script_text("Again.")
        server.script_text("Stored.")
        server.script_text("Continued.")
        async with server.make_client() as client:

            @tool
            def get_weather(location: str) -> str:
                """Weather."""
                return "Sunny"

            local = Agent(client, tools=[get_weather], default_options={"store": False})
            thread = local.get_new_thread()
            await _run(local, "Paris?", thread, stream)
            restored = AgentThread.deserialize(
                json.loads(json.dumps(thread.serialize()))
            )
            await _run(local, "Again?", restored, stream)

            remote = Agent(client)
            service = remote.get_new_thread()
            await _run(remote, "Store this.", service, stream)
            again = AgentThread.deserialize(json.loads(json.dumps(service.serialize())))
            await _run(remote, "Continue.", again, stream)
        replayed = server.requests()[2]["input"]
        assert [i["type"] for i in replayed] == [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "message",
            "message",
        ]
        assert replayed[1]["encrypted_content"] == "gAAAAABo-ENCRYPTED-REASONING=="
        assert replayed[2]["id"] == "fc_T004_0"
        assert server.requests()[4]["previous_response_id"] == "resp_fake4"
