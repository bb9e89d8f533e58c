"""The Responses API against the official `openai` SDK (spec/hosting.md HS-20 .. HS-31),
served on loopback by minagent.hosting.server; malformed requests straight through
ASGI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent, ChatResponseUpdate, Content, UsageDetails, tool
from minagent.hosting import HostingApp
from minagent.hosting.conversations import conversation_key
from minagent.hosting.responses import records_of
from minagent.stores import SessionStore, SQLiteSessionStore
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from tests.hosting.test_chat_completions import raw, served

USAGE = UsageDetails(
    input_token_count=7,
    output_token_count=3,
    total_token_count=10,
    cache_read_input_token_count=2,
)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


async def respond(sdk: openai.AsyncOpenAI, stream: bool, **request: Any) -> Any:
    """One response in the mode given: streamed through the SDK's stream helper (which
    checks the event sequence and rebuilds the response from it), or not."""
    if stream:
        async with sdk.responses.stream(**request) as events:
            async for _ in events:
                pass
            return await events.get_final_response()
    return await sdk.responses.create(**request)


async def events_of(sdk: openai.AsyncOpenAI, **request: Any) -> list[Any]:
    """Every event of a streamed response, as the SDK parsed them."""
    stream = await sdk.responses.create(stream=True, **request)
    async with stream:
        return [event async for event in stream]


def helper(*steps: Any, **agent: Any) -> tuple[ScriptedChatClient, HostingApp]:
    client = ScriptedChatClient(list(steps))
    return client, HostingApp([Agent(client, name="helper", **agent)])


def weather_call(call_id: str = "c1") -> list[ChatResponseUpdate]:
    """Text, then a call whose arguments the model streams in two pieces."""
    return [
        ChatResponseUpdate([Content.from_text("Checking.")], "assistant"),
        ChatResponseUpdate(
            [Content.from_function_call(call_id, "get_weather", '{"city":')],
            "assistant",
        ),
        ChatResponseUpdate(
            [Content.from_function_call("", "", ' "Oslo"}')], "assistant"
        ),
    ]


async def test_a_response_through_the_sdk(stream: bool) -> None:
    """HS-20, HS-23: `model` names the agent; the answer is a completed response whose
    message item holds the agent's text, with usage; `instructions` is joined to the
    agent's for this response only."""
    client, app = helper(reply("hello", usage=USAGE), "again", instructions="agent")
    async with served(app) as sdk:
        first = await respond(
            sdk, stream, model="helper", input="hi", instructions="request"
        )
        second = await respond(
            sdk, stream, model="helper", input="more", previous_response_id=first.id
        )
    assert (first.object, first.status, first.model) == (
        "response",
        "completed",
        "helper",
    )
    assert first.output_text == "hello"
    assert [item.type for item in first.output] == ["message"]
    assert first.usage is not None
    assert (
        first.usage.input_tokens,
        first.usage.output_tokens,
        first.usage.total_tokens,
        first.usage.input_tokens_details.cached_tokens,
    ) == (7, 3, 10, 2)
    assert first.instructions == "request"
    assert client.requests[0].texts == ["user: hi"]
    assert client.requests[0].options["instructions"] == "agent\nrequest"
    assert client.requests[1].options["instructions"] == "agent"
    assert second.output_text == "again"


async def test_the_streamed_event_sequence() -> None:
    """HS-24: created, in_progress, one message item with a delta per chunk and its
    done events, then completed with usage; sequence numbers count from 0."""
    _, app = helper(text_chunks("Hel", "lo", usage=USAGE))
    async with served(app) as sdk:
        events = await events_of(sdk, model="helper", input="hi")
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == [
        "Hel",
        "lo",
    ]
    assert events[0].response.status == "in_progress"
    assert events[0].response.id == events[-1].response.id
    done = events[-1].response
    assert (done.status, done.output_text) == ("completed", "Hello")
    assert done.usage is not None
    assert done.usage.total_tokens == 10
    item_ids = {e.item_id for e in events if hasattr(e, "item_id")}
    assert item_ids == {done.output[0].id}


async def test_previous_response_id_continues_and_branches(stream: bool) -> None:
    """HS-25: a response continues the session saved with the previous one; continuing
    one response twice gives two branches, neither seeing the other."""
    client, app = helper("one", "two", "three")
    async with served(app) as sdk:
        first = await respond(sdk, stream, model="helper", input="hello")
        second = await respond(
            sdk, stream, model="helper", input="again", previous_response_id=first.id
        )
        third = await respond(
            sdk, stream, model="helper", input="other", previous_response_id=first.id
        )
    assert (second.output_text, third.output_text) == ("two", "three")
    assert second.previous_response_id == first.id
    assert client.requests[1].texts == ["user: hello", "assistant: one", "user: again"]
    assert client.requests[2].texts == ["user: hello", "assistant: one", "user: other"]


async def test_a_conversation_continues(stream: bool) -> None:
    """HS-25, HS-140: `conversation` names one session in the application's store; each
    response of it sees the earlier ones."""
    store = SessionStore()
    client = ScriptedChatClient(["one", "two"])
    app = HostingApp([Agent(client, name="helper")], store=store)
    async with served(app) as sdk:
        first = await respond(
            sdk, stream, model="helper", input="hello", conversation="conv_1"
        )
        second = await respond(
            sdk, stream, model="helper", input="again", conversation={"id": "conv_1"}
        )
    assert second.output_text == "two"
    assert first.conversation is not None
    assert first.conversation.id == "conv_1"
    assert client.requests[1].texts == ["user: hello", "assistant: one", "user: again"]
    assert await store.get(conversation_key("helper", "conversation:conv_1"))


async def test_an_unknown_previous_response_is_a_404(stream: bool) -> None:
    """HS-25: an id with no saved session is a 404 before anything runs, streamed or
    not; so is a response kept by another agent."""
    client = ScriptedChatClient(["one"])
    app = HostingApp(
        [Agent(client, name="helper"), Agent(ScriptedChatClient(), name="other")]
    )
    async with served(app) as sdk:
        first = await sdk.responses.create(model="helper", input="hello")
        for model, previous in (("helper", "resp_nope"), ("other", first.id)):
            with pytest.raises(openai.NotFoundError) as caught:
                await respond(
                    sdk, stream, model=model, input="x", previous_response_id=previous
                )
            assert caught.value.code == "previous_response_not_found"
            assert previous in caught.value.message
    assert len(client.requests) == 1


async def test_store_false_keeps_nothing_but_the_conversation() -> None:
    """HS-26: with `store: false` neither GET nor previous_response_id finds the
    response, and its session is not saved; a conversation's session still is."""
    store = SessionStore()
    client = ScriptedChatClient(["one", "two"])
    app = HostingApp([Agent(client, name="helper")], store=store)
    async with served(app) as sdk:
        first = await sdk.responses.create(model="helper", input="hi", store=False)
        with pytest.raises(openai.NotFoundError) as caught:
            await sdk.responses.retrieve(first.id)
        assert caught.value.code == "response_not_found"
        with pytest.raises(openai.NotFoundError):
            await sdk.responses.create(
                model="helper", input="x", previous_response_id=first.id
            )
        second = await sdk.responses.create(
            model="helper", input="hi", store=False, conversation="c"
        )
    assert first.store is False
    assert await store.get(conversation_key("helper", f"response:{first.id}")) is None
    assert await store.get(conversation_key("helper", f"response:{second.id}")) is None
    assert await store.get(conversation_key("helper", "conversation:c")) is not None
    assert len(records_of(app)) == 0


async def test_get_and_delete_a_kept_response(stream: bool) -> None:
    """HS-27: GET answers the response as it was sent (the completed one when
    streamed); DELETE forgets it and its session; then both GET and
    previous_response_id are 404s."""
    _, app = helper("one")
    async with served(app) as sdk:
        sent = await respond(sdk, stream, model="helper", input="hi")
        got = await sdk.responses.retrieve(sent.id)
        assert (got.id, got.created_at) == (sent.id, sent.created_at)
        assert [item.id for item in got.output] == [item.id for item in sent.output]
        assert (got.output_text, got.status) == ("one", "completed")
        await sdk.responses.delete(sent.id)
        with pytest.raises(openai.NotFoundError):
            await sdk.responses.retrieve(sent.id)
        with pytest.raises(openai.NotFoundError):
            await sdk.responses.create(
                model="helper", input="x", previous_response_id=sent.id
            )
        with pytest.raises(openai.NotFoundError) as caught:
            await sdk.responses.input_items.list(sent.id)
        assert caught.value.code == "not_found"


@settings(max_examples=25)
@given(bound=st.integers(0, 4), count=st.integers(0, 7))
def test_the_record_is_bounded(bound: int, count: int) -> None:
    """HS-27: the record keeps the newest `max_stored` responses; keeping one more drops
    the oldest together with its saved session."""

    async def scenario() -> None:
        store = SessionStore()
        client = ScriptedChatClient(["ok"] * count)
        app = HostingApp([Agent(client, name="helper")], store=store)
        records_of(app).max_stored = bound
        ids = []
        for _ in range(count):
            body = json.dumps({"model": "helper", "input": "hi"}).encode()
            status, data = await raw(app, "POST", "/v1/responses", body)
            assert status == 200
            ids.append(data["id"])
        kept = ids[len(ids) - min(bound, count) :]
        for response_id in ids:
            status, _ = await raw(app, "GET", f"/v1/responses/{response_id}", b"")
            saved = await store.get(
                conversation_key("helper", f"response:{response_id}")
            )
            assert (status == 200) == (response_id in kept)
            assert (saved is not None) == (response_id in kept)

    asyncio.run(scenario())


async def test_a_client_tool_call_is_handed_back_and_answered(stream: bool) -> None:
    """HS-28, HS-23, HS-24: a call of a tool the client declared is not run; it comes
    back as a function_call item after the text, and the client's function_call_output
    with previous_response_id continues the run."""
    client, app = helper(weather_call(), "It is sunny.")
    async with served(app) as sdk:
        first = await respond(
            sdk, stream, model="helper", input="weather?", tools=[WEATHER]
        )
        [message, handed] = first.output
        assert (message.type, first.output_text) == ("message", "Checking.")
        assert handed.type == "function_call"
        assert (handed.call_id, handed.name) == ("c1", "get_weather")
        assert json.loads(handed.arguments) == {"city": "Oslo"}
        second = await respond(
            sdk,
            stream,
            model="helper",
            previous_response_id=first.id,
            tools=[WEATHER],
            input=[
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
            ],
        )
    assert second.output_text == "It is sunny."
    declared = client.requests[0].options["tools"]
    assert [(t.name, t.parameters) for t in declared] == [
        ("get_weather", WEATHER["parameters"])
    ]
    last = client.requests[1].messages
    assert [m.role for m in last] == ["user", "assistant", "tool"]
    assert last[1].contents[-1].call_id == "c1"
    assert (last[2].contents[0].call_id, last[2].contents[0].result) == ("c1", "sunny")


async def test_a_handed_back_call_streams_its_argument_deltas() -> None:
    """HS-24: the function_call item is added with empty arguments, then one arguments
    delta per piece the model streamed, the done events with the whole text, then
    completed."""
    _, app = helper(weather_call())
    async with served(app) as sdk:
        events = await events_of(sdk, model="helper", input="weather?", tools=[WEATHER])
    types = [e.type for e in events]
    calls = types[types.index("response.output_item.done") + 1 :]
    assert calls == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    added = events[types.index("response.output_item.added", 3)]
    assert (added.output_index, added.item.arguments) == (1, "")
    deltas = [e.delta for e in events if e.type.endswith("arguments.delta")]
    assert deltas == ['{"city":', ' "Oslo"}']
    done = events[types.index("response.function_call_arguments.done")]
    assert (done.arguments, done.item_id) == ('{"city": "Oslo"}', added.item.id)


async def test_a_call_failing_the_schema_goes_back_to_the_model(stream: bool) -> None:
    """HS-28, HS-24: a call whose arguments fail the declared schema is answered to the
    model with the problem (LP-6) and never shown to the client; the corrected call is
    the one handed back."""
    client, app = helper(
        [call("get_weather", {"town": "Oslo"}, call_id="bad")],
        [call("get_weather", {"city": "Oslo"}, call_id="good")],
    )
    async with served(app) as sdk:
        response = await respond(
            sdk, stream, model="helper", input="weather?", tools=[WEATHER]
        )
    assert [(i.type, i.call_id) for i in response.output] == [("function_call", "good")]
    answer = client.requests[1].messages[-1].contents[0]
    assert (answer.call_id, "city" in str(answer.result)) == ("bad", True)


async def test_a_client_tool_answered_in_a_conversation_and_in_full_history(
    stream: bool,
) -> None:
    """HS-28, HS-21: the output can also come back in a conversation, or, stateless,
    with the whole history as input items (a message with text parts, the call, its
    output)."""
    client, app = helper(
        weather_call("c1"), "sunny, then", "sunny, again", instructions=None
    )
    async with served(app) as sdk:
        await respond(
            sdk,
            stream,
            model="helper",
            input="weather?",
            tools=[WEATHER],
            conversation="conv",
        )
        output = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
        answered = await respond(
            sdk,
            stream,
            model="helper",
            input=[output],
            tools=[WEATHER],
            conversation="conv",
        )
        history = [
            {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
            {
                "type": "function_call",
                "call_id": "c9",
                "name": "get_weather",
                "arguments": '{"city": "Oslo"}',
            },
            {"type": "function_call_output", "call_id": "c9", "output": "sunny"},
        ]
        stateless = await respond(
            sdk, stream, model="helper", input=history, tools=[WEATHER], store=False
        )
    assert (answered.output_text, stateless.output_text) == (
        "sunny, then",
        "sunny, again",
    )
    assert [m.role for m in client.requests[1].messages] == [
        "user",
        "assistant",
        "tool",
    ]
    sent = client.requests[2].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool"]
    assert sent[1].contents[0].call_id == "c9"


BAD_REQUESTS: list[tuple[dict[str, Any], str]] = [
    ({"input": 5}, "invalid_input"),
    ({"input": []}, "invalid_input"),
    ({"input": [{"role": "robot", "content": "x"}]}, "invalid_input"),
    ({"input": ["hi"]}, "invalid_input"),
    ({"input": [{"role": "user", "content": 5}]}, "invalid_input"),
    (
        {
            "input": [
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}
            ]
        },
        "invalid_input",
    ),
    ({"previous_response_id": ""}, "invalid_parameter"),
    (
        {
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}
            ]
        },
        "unsupported_content",
    ),
    ({"input": [{"type": "item_reference", "id": "x"}]}, "unsupported_input_item"),
    ({"input": [{"type": "function_call_output", "output": "x"}]}, "invalid_input"),
    (
        {"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]},
        "invalid_input",
    ),
    ({"tools": [{"type": "web_search"}]}, "unsupported_tool"),
    ({"tools": "get_weather"}, "invalid_tools"),
    ({"tools": [{"type": "function", "name": ""}]}, "invalid_tools"),
    ({"tools": [WEATHER, WEATHER]}, "invalid_tools"),
    ({"tools": [{**WEATHER, "name": "lookup"}]}, "invalid_tools"),
    ({"tools": [{**WEATHER, "parameters": "x"}]}, "invalid_tools"),
    ({"tools": [{**WEATHER, "strict": "yes"}]}, "invalid_tools"),
    ({"tool_choice": {"type": "function", "name": "nope"}}, "invalid_parameter"),
    ({"tool_choice": "sometimes"}, "unsupported_parameter"),
    ({"background": True}, "unsupported_parameter"),
    ({"reasoning": {"effort": "low"}}, "unsupported_parameter"),
    ({"temperature": "hot"}, "invalid_parameter"),
    ({"max_output_tokens": True}, "invalid_parameter"),
    ({"stream": "yes"}, "invalid_parameter"),
    ({"store": 1}, "invalid_parameter"),
    ({"metadata": {"a": 1}}, "invalid_parameter"),
    ({"conversation": "c", "previous_response_id": "r"}, "invalid_parameter"),
    ({"conversation": {"id": ""}}, "invalid_parameter"),
    ({"instructions": 3}, "invalid_parameter"),
    ({"model": None}, "invalid_model"),
]


# the field a code is about; the other codes are about the request's one field
PARAMS = {
    "invalid_input": "input",
    "unsupported_content": "input",
    "unsupported_input_item": "input",
    "invalid_tools": "tools",
    "unsupported_tool": "tools",
    "invalid_model": None,  # HS-5's error, which names no field
}


@tool
def lookup(city: str) -> str:
    """The agent's own tool."""
    return city


async def test_malformed_requests_are_400s_in_openai_shape() -> None:
    """HS-21, HS-22, HS-29, HS-25: each malformed request is a 400 with OpenAI's error
    body, a code naming the problem and `param` naming the field at fault; the model is
    never called."""
    client = ScriptedChatClient()
    app = HostingApp([Agent(client, name="helper", tools=[lookup])])
    for fields, code in BAD_REQUESTS:
        body = json.dumps({"model": "helper", "input": "hi", **fields}).encode()
        status, data = await raw(app, "POST", "/v1/responses", body)
        assert (status, data["error"]["code"]) == (400, code), fields
        assert data["error"]["type"] == "invalid_request_error"
        param = PARAMS.get(code, next(iter(fields)))
        assert data["error"]["param"] == param, fields
        assert set(data["error"]) == {"message", "type", "param", "code"}
    assert client.requests == []
    async with served(app) as sdk:
        with pytest.raises(openai.BadRequestError) as caught:
            await sdk.responses.create(model="helper", input="hi", background=True)
    assert caught.value.code == "unsupported_parameter"
    assert caught.value.param == "background"
    assert "background" in caught.value.message


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["type", "role", "content", "call_id", "output", "name", "x"]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)


@settings(max_examples=80)
@given(
    field=st.sampled_from(["input", "tools", "tool_choice", "conversation", "store"]),
    value=JSON,
)
def test_any_request_is_answered_or_refused_never_a_500(field: str, value: Any) -> None:
    """HS-21, HS-22, HS-29, HS-5: whatever JSON a request field holds, the answer is a
    completed response or a 4xx in OpenAI's error shape, and a refused request calls no
    model."""

    async def scenario() -> None:
        client = ScriptedChatClient(["ok"])
        app = HostingApp([Agent(client, name="helper")])
        body = json.dumps({"model": "helper", "input": "hi", field: value}).encode()
        status, data = await raw(app, "POST", "/v1/responses", body)
        if status == 200:
            assert data["status"] == "completed"
        else:
            assert 400 <= status < 500
            assert set(data["error"]) == {"message", "type", "param", "code"}
            assert client.requests == []

    asyncio.run(scenario())


async def test_an_approval_request_is_refused(stream: bool) -> None:
    """HS-30: a run that pauses for an approval cannot be carried: a 501 in OpenAI's
    shape, or a response.failed event with that code once streaming; the conversation
    is not saved."""

    @tool(approval_mode="always_require")
    def delete_all() -> str:
        """Deletes everything."""
        return "gone"

    _, app = helper([call("delete_all", {})], tools=[delete_all])
    async with served(app) as sdk:
        request: dict[str, Any] = {
            "model": "helper",
            "input": "clean up",
            "conversation": "c",
        }
        if stream:
            events = await events_of(sdk, **request)
            failed = events[-1]
            assert failed.type == "response.failed"
            assert failed.response.status == "failed"
            assert failed.response.error.code == "unsupported_agent_request"
        else:
            with pytest.raises(openai.InternalServerError) as caught:
                await sdk.responses.create(**request)
            assert caught.value.status_code == 501
            assert caught.value.code == "unsupported_agent_request"
    assert await app.conversations.get("helper", "conversation:c") is None


async def test_a_failure_mid_stream_is_response_failed_without_secrets() -> None:
    """HS-31: a run failing after the stream started ends it with response.failed
    (server_error, a fixed text), the message item already open closed first; the
    session is not saved; non-streamed the failure is a 500 without the secret."""
    secret = "sk-SECRET-1234"

    @tool
    def look(city: str) -> str:
        """Looks."""
        return "found"

    steps = [
        [Content.from_text("Let me look."), call("look", {"city": "Oslo"})],
        RuntimeError(f"provider said {secret}"),
    ]
    _, app = helper(*steps, *steps, tools=[look])
    async with served(app) as sdk:
        events = await events_of(sdk, model="helper", input="x", conversation="c")
        with pytest.raises(openai.InternalServerError) as caught:
            await sdk.responses.create(model="helper", input="x", conversation="c")
        failed_id = events[-1].response.id
        kept = await sdk.responses.retrieve(failed_id)
    types = [e.type for e in events]
    assert types[-2:] == ["response.output_item.done", "response.failed"]
    failed = events[-1].response
    assert (failed.status, failed.error.code) == ("failed", "server_error")
    assert [item.type for item in failed.output] == ["message"]
    assert secret not in json.dumps([e.to_dict() for e in events])
    assert secret not in str(caught.value.body)
    assert kept.status == "failed"
    assert await app.conversations.get("helper", "conversation:c") is None
    assert await app.conversations.get("helper", f"response:{failed_id}") is None


async def test_supported_parameters_reach_the_run() -> None:
    """HS-22: the forwarded parameters reach the model as the run's options (with
    `max_output_tokens` as `max_tokens`, a named tool choice as LP-10's required
    function), and the response repeats them with `metadata`; `strict` is accepted
    (HS-29)."""
    client, app = helper([call("get_weather", {"city": "Oslo"})])
    async with served(app) as sdk:
        response = await sdk.responses.create(
            model="helper",
            input="hi",
            temperature=0.5,
            top_p=0.9,
            max_output_tokens=50,
            parallel_tool_calls=False,
            user="u1",
            metadata={"team": "blue"},
            tools=[{**WEATHER, "strict": True}],
            tool_choice={"type": "function", "name": "get_weather"},
        )
    options = client.requests[0].options
    assert {k: options[k] for k in ("temperature", "top_p", "max_tokens", "user")} == {
        "temperature": 0.5,
        "top_p": 0.9,
        "max_tokens": 50,
        "user": "u1",
    }
    assert options["parallel_tool_calls"] is False
    assert options["tool_choice"] == {
        "mode": "required",
        "required_function_name": "get_weather",
    }
    assert "metadata" not in options
    assert response.metadata == {"team": "blue"}
    assert (response.temperature, response.max_output_tokens) == (0.5, 50)
    assert [item.type for item in response.output] == ["function_call"]


async def test_a_response_is_continued_by_another_process(
    stream: bool, tmp_path: Path
) -> None:
    """HS-25, HS-140: a response kept by one application is continued through
    previous_response_id by another sharing the SQLite store (another worker)."""
    path = tmp_path / "sessions.db"
    first_client = ScriptedChatClient(["one"])
    second_client = ScriptedChatClient(["two"])
    first_app = HostingApp(
        [Agent(first_client, name="helper")], store=SQLiteSessionStore(path)
    )
    second_app = HostingApp(
        [Agent(second_client, name="helper")], store=SQLiteSessionStore(path)
    )
    async with served(first_app) as sdk:
        first = await respond(sdk, stream, model="helper", input="hello")
    async with served(second_app) as sdk:
        second = await respond(
            sdk, stream, model="helper", input="again", previous_response_id=first.id
        )
    assert second.output_text == "two"
    assert second_client.requests[0].texts == [
        "user: hello",
        "assistant: one",
        "user: again",
    ]


async def test_a_client_gone_mid_stream_ends_the_run_unsaved() -> None:
    """HS-31, HS-143: when sending fails mid-stream (the client is gone), the run's
    stream is closed, nothing is kept and the conversation's session is not saved."""
    _, app = helper(text_chunks("one ", "two ", "three"))
    body = json.dumps(
        {"model": "helper", "input": "hi", "stream": True, "conversation": "c"}
    ).encode()
    sent: list[dict[str, Any]] = []
    gone: list[bool] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body}

    async def send(message: dict[str, Any]) -> None:
        # the client leaves at the first text delta; every later send fails too
        if gone or b"output_text.delta" in message.get("body", b""):
            gone.append(True)
            raise ConnectionResetError("client gone")
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/responses"}
    with pytest.raises(ConnectionResetError):
        await app(scope, receive, send)
    assert await app.conversations.get("helper", "conversation:c") is None
    assert len(records_of(app)) == 0
    assert b"response.created" in b"".join(m.get("body", b"") for m in sent)


@pytest.mark.parametrize("choice", ["none", "required"])
async def test_tool_choice_none_and_required_reach_the_run(choice: str) -> None:
    """HS-22: `tool_choice` `none` and `required` are sent to the run as they are."""
    client, app = helper("fine")
    async with served(app) as sdk:
        response = await sdk.responses.create(
            model="helper", input="hi", tools=[WEATHER], tool_choice=choice
        )
    assert response.output_text == "fine"
    assert client.requests[0].options["tool_choice"] == choice


async def test_consecutive_calls_in_full_history_are_one_message(stream: bool) -> None:
    """HS-21: consecutive `function_call` input items are one assistant message and
    consecutive `function_call_output` items one tool message."""
    client, app = helper("Both sunny.")
    calls = [
        {
            "type": "function_call",
            "call_id": f"c{n}",
            "name": "get_weather",
            "arguments": json.dumps({"city": city}),
        }
        for n, city in ((1, "Oslo"), (2, "Rome"))
    ]
    outputs = [
        {"type": "function_call_output", "call_id": f"c{n}", "output": "sunny"}
        for n in (1, 2)
    ]
    history = [{"role": "user", "content": "weather?"}, *calls, *outputs]
    async with served(app) as sdk:
        response = await respond(
            sdk, stream, model="helper", input=history, tools=[WEATHER]
        )
    assert response.output_text == "Both sunny."
    sent = client.requests[0].messages
    assert [(m.role, [c.type for c in m.contents]) for m in sent] == [
        ("user", ["text"]),
        ("assistant", ["function_call", "function_call"]),
        ("tool", ["function_result", "function_result"]),
    ]


async def test_a_call_streamed_without_arguments_sends_them_whole() -> None:
    """HS-24: a handed-back call whose streamed pieces do not make its final arguments
    (here: none were streamed) sends the whole argument text as one delta."""
    _, app = helper(
        [
            ChatResponseUpdate(
                [Content.from_function_call("c1", "now", None)], "assistant"
            )
        ]
    )
    tools = [{"type": "function", "name": "now"}]
    async with served(app) as sdk:
        events = await events_of(sdk, model="helper", input="time?", tools=tools)
    deltas = [e.delta for e in events if e.type.endswith("arguments.delta")]
    assert deltas == ["{}"]
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [e.arguments for e in done] == ["{}"]


async def test_each_message_of_the_transcript_is_its_own_item(stream: bool) -> None:
    """HS-23, HS-24: text of two assistant messages (a new message id) is two message
    items, in order; an empty text delta adds nothing."""
    step = [
        ChatResponseUpdate([Content.from_text("First.")], "assistant", message_id="m1"),
        ChatResponseUpdate([Content.from_text("")], "assistant", message_id="m1"),
        ChatResponseUpdate(
            [Content.from_text("Second.")], "assistant", message_id="m2"
        ),
    ]
    _, app = helper(step)
    async with served(app) as sdk:
        response = await respond(sdk, stream, model="helper", input="hi")
    texts = [[p.text for p in item.content] for item in response.output]
    assert texts == [["First."], ["Second."]]
