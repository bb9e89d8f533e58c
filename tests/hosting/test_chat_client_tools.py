"""Tools declared by the client in Chat Completions, against the official `openai` SDK
(spec/hosting.md HS-28 .. HS-30, HS-32)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from minagent import Agent, ChatResponseUpdate, Content, tool
from minagent.hosting import HostingApp
from minagent.testing import ScriptedChatClient, call
from tests.hosting.test_chat_completions import raw, served

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


async def complete(sdk: openai.AsyncOpenAI, stream: bool, **request: Any) -> Any:
    """One completion in the mode given: streamed through the SDK's stream helper (which
    accumulates the chunks into a completion), or not."""
    if stream:
        async with sdk.chat.completions.stream(**request) as events:
            async for _ in events:
                pass
            return await events.get_final_completion()
    return await sdk.chat.completions.create(**request)


async def test_a_client_tool_call_is_handed_back_and_answered(stream: bool) -> None:
    """HS-32, HS-28: a call of a declared tool comes back as `tool_calls` with
    finish_reason "tool_calls"; the client's assistant message with the calls and its
    `tool` message continue the run."""
    script = [
        [
            ChatResponseUpdate(
                [Content.from_function_call("c1", "get_weather", '{"city":')],
                "assistant",
            ),
            ChatResponseUpdate(
                [Content.from_function_call("", "", ' "Oslo"}')], "assistant"
            ),
        ],
        "It is sunny.",
    ]
    client = ScriptedChatClient(script)
    app = HostingApp([Agent(client, name="weather")])
    question = {"role": "user", "content": "weather in Oslo?"}
    async with served(app) as sdk:
        first = await complete(
            sdk, stream, model="weather", messages=[question], tools=[WEATHER]
        )
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content in (None, "")
        [handed] = choice.message.tool_calls
        assert (handed.id, handed.type, handed.function.name) == (
            "c1",
            "function",
            "get_weather",
        )
        assert json.loads(handed.function.arguments) == {"city": "Oslo"}
        second = await complete(
            sdk,
            stream,
            model="weather",
            tools=[WEATHER],
            messages=[
                question,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [handed.model_dump(exclude_none=True)],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            ],
        )
    assert second.choices[0].message.content == "It is sunny."
    assert second.choices[0].finish_reason == "stop"
    declared = client.requests[0].options["tools"]
    assert [t.name for t in declared] == ["get_weather"]
    sent = client.requests[1].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool"]
    assert sent[1].contents[0].name == "get_weather"
    assert (sent[2].contents[0].call_id, sent[2].contents[0].result) == ("c1", "sunny")


async def test_text_beside_a_handed_back_call_is_the_content(stream: bool) -> None:
    """HS-32: the run's text before the call is the message's content."""
    client = ScriptedChatClient(
        [[Content.from_text("Let me check."), call("get_weather", {"city": "Oslo"})]]
    )
    app = HostingApp([Agent(client, name="weather")])
    async with served(app) as sdk:
        completion = await complete(
            sdk,
            stream,
            model="weather",
            messages=[{"role": "user", "content": "weather?"}],
            tools=[WEATHER],
        )
    message = completion.choices[0].message
    assert message.content == "Let me check."
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]


BAD: list[tuple[dict[str, Any], str]] = [
    ({"tools": [{"type": "function"}]}, "unsupported_tool"),
    ({"tools": [{"type": "function", "function": {"name": 3}}]}, "invalid_tools"),
    ({"tools": [WEATHER, WEATHER]}, "invalid_tools"),
    (
        {"tools": [{"type": "function", "function": {"name": "lookup"}}]},
        "invalid_tools",
    ),
    ({"tools": "get_weather"}, "invalid_tools"),
    ({"tools": [{"type": "function", "function": {"name": ""}}]}, "invalid_tools"),
    (
        {"tools": [{"type": "function", "function": {"name": "f", "description": 5}}]},
        "invalid_tools",
    ),
    (
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]},
        "invalid_tools",
    ),
    (
        {"tools": [{"type": "function", "function": {"name": "remote"}}]},
        "invalid_tools",
    ),
    ({"messages": [{"role": "assistant", "tool_calls": "c"}]}, "invalid_messages"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "invalid_messages"),
    (
        {"messages": [{"role": "tool", "tool_call_id": "c", "content": 5}]},
        "invalid_messages",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]},
        "invalid_messages",
    ),
    (
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "function": {"name": "f", "arguments": {}}}
                    ],
                }
            ]
        },
        "invalid_messages",
    ),
]


@tool
def lookup(city: str) -> str:
    """The agent's own tool."""
    return city


async def test_malformed_tools_and_tool_messages_are_400s() -> None:
    """HS-29, HS-32: a malformed declaration, a duplicate or clashing name, a malformed
    tool message or tool call entry is a 400 in OpenAI's shape whose `param` names the
    field (`tools`, `messages`); no model is called."""
    client = ScriptedChatClient()
    # the agent's own tools: a FunctionTool, a declaration given as a mapping, and
    # one without a name (which no client tool can clash with)
    remote = {"type": "function", "function": {"name": "remote"}}
    nameless = {"type": "function", "function": {}}
    agent = Agent(client, name="weather", tools=[lookup, remote, nameless])
    app = HostingApp([agent])
    base = {"model": "weather", "messages": [{"role": "user", "content": "hi"}]}
    for fields, code in BAD:
        body = json.dumps({**base, **fields}).encode()
        status, data = await raw(app, "POST", "/v1/chat/completions", body)
        assert (status, data["error"]["code"]) == (400, code), fields
        assert data["error"]["param"] == next(iter(fields)), fields
    assert client.requests == []


async def test_an_approval_request_is_refused(stream: bool) -> None:
    """HS-30: a run pausing for an approval is a 501 `unsupported_agent_request`, or,
    once streaming, HS-4's error event with that code."""

    @tool(approval_mode="always_require")
    def delete_all() -> str:
        """Deletes everything."""
        return "gone"

    client = ScriptedChatClient([[call("delete_all", {})]])
    app = HostingApp([Agent(client, name="admin", tools=[delete_all])])
    request: dict[str, Any] = {
        "model": "admin",
        "messages": [{"role": "user", "content": "clean up"}],
    }
    async with served(app) as sdk:
        if stream:
            chunks = await sdk.chat.completions.create(stream=True, **request)

            async def drain() -> None:
                async with chunks:
                    async for _ in chunks:
                        pass

            with pytest.raises(openai.APIError) as caught:
                await drain()
            assert isinstance(caught.value.body, dict)
            assert caught.value.body["code"] == "unsupported_agent_request"
        else:
            with pytest.raises(openai.InternalServerError) as raised:
                await sdk.chat.completions.create(**request)
            assert raised.value.status_code == 501
            assert raised.value.code == "unsupported_agent_request"


async def test_calls_continued_with_text_and_arguments_of_any_shape(
    stream: bool,
) -> None:
    """HS-32: a call whose arguments the model gave as an object, or not at all, is
    handed back with its arguments as JSON text (`{}` for none); the assistant message
    that continues it keeps its text beside the calls, and a `tool` message's content
    may be text parts."""
    client = ScriptedChatClient(
        [
            [
                Content.from_function_call("c1", "get_weather", {"city": "Oslo"}),
                Content.from_function_call("c2", "now", None),
            ],
            "Sunny, twice.",
        ]
    )
    app = HostingApp([Agent(client, name="weather")])
    question = {"role": "user", "content": "weather?"}
    tools = [WEATHER, {"type": "function", "function": {"name": "now"}}]
    async with served(app) as sdk:
        first = await complete(
            sdk, stream, model="weather", messages=[question], tools=tools
        )
        handed = first.choices[0].message.tool_calls
        assert [(c.id, c.function.arguments) for c in handed] == [
            ("c1", '{"city": "Oslo"}'),
            ("c2", "{}"),
        ]
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.function.name,
                    "arguments": c.function.arguments,
                },
            }
            for c in handed
        ]
        parts = [{"type": "text", "text": "sun"}, {"type": "text", "text": "ny"}]
        second = await complete(
            sdk,
            stream,
            model="weather",
            tools=tools,
            messages=[
                question,
                {"role": "assistant", "content": "Checking.", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "c1", "content": parts},
                {"role": "tool", "tool_call_id": "c2", "content": "sunny"},
            ],
        )
    assert second.choices[0].message.content == "Sunny, twice."
    sent = client.requests[-1].messages
    assistant = sent[1]
    assert assistant.role == "assistant"
    assert [c.type for c in assistant.contents] == [
        "text",
        "function_call",
        "function_call",
    ]
    assert assistant.contents[0].text == "Checking."
    results = [c for m in sent for c in m.contents if c.type == "function_result"]
    assert [(r.call_id, r.result) for r in results] == [
        ("c1", "sunny"),
        ("c2", "sunny"),
    ]


async def test_an_empty_content_beside_calls_adds_no_text() -> None:
    """HS-32: an assistant message with `tool_calls` whose `content` is empty or null
    is the calls alone."""
    client = ScriptedChatClient(["one", "two"])
    app = HostingApp([Agent(client, name="weather")])
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    ]
    for content in ("", None):
        body = {
            "model": "weather",
            "tools": [WEATHER],
            "messages": [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": content, "tool_calls": calls},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            ],
        }
        status, _ = await raw(
            app, "POST", "/v1/chat/completions", json.dumps(body).encode()
        )
        assert status == 200
        assistant = client.requests[-1].messages[1]
        assert [c.type for c in assistant.contents] == ["function_call"], content
