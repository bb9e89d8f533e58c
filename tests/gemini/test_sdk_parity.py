"""Wire parity with the official SDK (``google-genai``, a test-only dependency).

The same conversation goes through `GeminiChatClient` and through
``google.genai.Client(...).aio.models.generate_content`` / ``generate_content_stream``,
both pointed at the same loopback server; the request bodies must be equal field by
field, except for the deliberate differences listed in spec/gemini.md (the system
instruction's role; the SDK's snake_case ``parameters_json_schema``, which the API reads
as ``parametersJsonSchema``). The paths, the query and the key header must be equal too.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from minagent import Content, Message
from minagent.testing import ScriptedStep

from ._fake_server import FakeGemini

# the SDK's own aiohttp session subclass warns when it is first used; not ours to fix
pytestmark = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)
genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")

MODEL = "gemini-2.5-flash"
KEY = "sk-parity-key"
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "the city"}},
    "required": ["city"],
}
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _normalised(value: Any, *, schema: bool = False) -> Any:
    """Keys as the API reads them (snake_case and lowerCamelCase are the same field),
    except inside JSON schemas, whose keys are the user's."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = key if schema else _camel(key)
            inner = schema or name in (
                "parametersJsonSchema",
                "responseJsonSchema",
                "args",
                "response",
            )
            out[name] = _normalised(item, schema=inner)
        return out
    if isinstance(value, list):
        return [_normalised(v, schema=schema) for v in value]
    return value


def _ours(body: dict[str, Any]) -> dict[str, Any]:
    return _normalised(body)


def _sdks(body: dict[str, Any]) -> dict[str, Any]:
    body = _normalised(body)
    # the one deliberate body difference: the SDK gives the system instruction a role
    body["systemInstruction"].pop("role", None)
    return body


def _conversation() -> list[Message]:
    return [
        Message("user", [Content.from_text("What is the weather in Paris and Tokyo?")]),
        Message(
            "assistant",
            [
                Content.from_text("Let me look."),
                Content.from_function_call(
                    "call-1", "get_weather", '{"city": "Paris"}'
                ),
                Content.from_function_call("call-2", "get_weather", {"city": "Tokyo"}),
            ],
        ),
        Message(
            "tool",
            [
                Content.from_function_result("call-1", "sunny, 21 C"),
                Content.from_function_result("call-2", {"sky": "rain", "temp": 14}),
            ],
        ),
        Message("user", [Content.from_text("Summarise.")]),
    ]


def _sdk_conversation() -> list[Any]:
    return [
        types.Content(
            role="user",
            parts=[types.Part(text="What is the weather in Paris and Tokyo?")],
        ),
        types.Content(
            role="model",
            parts=[
                types.Part(text="Let me look."),
                types.Part(
                    function_call=types.FunctionCall(
                        id="call-1", name="get_weather", args={"city": "Paris"}
                    )
                ),
                types.Part(
                    function_call=types.FunctionCall(
                        id="call-2", name="get_weather", args={"city": "Tokyo"}
                    )
                ),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="call-1",
                        name="get_weather",
                        response={"result": "sunny, 21 C"},
                    )
                ),
                types.Part(
                    function_response=types.FunctionResponse(
                        id="call-2",
                        name="get_weather",
                        response={"result": {"sky": "rain", "temp": 14}},
                    )
                ),
            ],
        ),
        types.Content(role="user", parts=[types.Part(text="Summarise.")]),
    ]


def _options() -> dict[str, Any]:
    return {
        "instructions": "You are a weather assistant.",
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather of a city",
                "parameters": WEATHER_SCHEMA,
            }
        ],
        "tool_choice": {"mode": "required", "required_function_name": "get_weather"},
        "temperature": 0.3,
        "top_p": 0.9,
        "top_k": 20,
        "max_tokens": 256,
        "stop": ["END"],
        "seed": 7,
        "presence_penalty": 0.1,
        "frequency_penalty": 0.2,
        "response_format": ANSWER_SCHEMA,
        "thinking_config": {"thinkingBudget": 0},
        "safety_settings": [
            {
                "category": "HARM_CATEGORY_HARASSMENT",
                "threshold": "BLOCK_ONLY_HIGH",
            }
        ],
    }


def _sdk_config() -> Any:
    return types.GenerateContentConfig(
        system_instruction="You are a weather assistant.",
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="get_weather",
                        description="Weather of a city",
                        parameters_json_schema=WEATHER_SCHEMA,
                    )
                ]
            )
        ],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode="ANY", allowed_function_names=["get_weather"]
            )
        ),
        temperature=0.3,
        top_p=0.9,
        top_k=20,
        max_output_tokens=256,
        stop_sequences=["END"],
        seed=7,
        presence_penalty=0.1,
        frequency_penalty=0.2,
        response_mime_type="application/json",
        response_json_schema=ANSWER_SCHEMA,
        thinking_config=types.ThinkingConfig(thinking_budget=0),
        safety_settings=[
            types.SafetySetting(
                category="HARM_CATEGORY_HARASSMENT", threshold="BLOCK_ONLY_HIGH"
            )
        ],
    )


async def test_request_bodies_equal_the_sdks_field_by_field(stream: bool) -> None:
    """GM-2, GM-3, GM-5, GM-6, GM-7, GM-8, GM-9, GM-22, GM-23: the same conversation
    (text, parallel calls with ids, their results, system instruction, tools, tool
    choice, generation options, structured output, safety settings) through our client
    and the SDK gives equal bodies (but for spec/gemini.md's listed differences), the
    same path, query and key header."""
    async with FakeGemini(model=MODEL) as server:
        server.add(ScriptedStep("text", text='{"summary": "ok"}'))
        server.add(ScriptedStep("text", text='{"summary": "ok"}'))
        client = server.make_client(api_key=KEY, base_url=server.root)
        sdk = genai.Client(
            api_key=KEY, http_options=types.HttpOptions(base_url=server.root)
        )
        async with client, sdk.aio:
            if stream:
                ours = [
                    u
                    async for u in client.get_response(
                        _conversation(), options=_options(), stream=True
                    )
                ]
                assert "".join(u.text for u in ours) == '{"summary": "ok"}'
                theirs = [
                    c
                    async for c in await sdk.aio.models.generate_content_stream(
                        model=MODEL, contents=_sdk_conversation(), config=_sdk_config()
                    )
                ]
                assert "".join(c.text or "" for c in theirs) == '{"summary": "ok"}'
            else:
                response = await client.get_response(
                    _conversation(), options=_options()
                )
                assert response.text == '{"summary": "ok"}'
                answer = await sdk.aio.models.generate_content(
                    model=MODEL, contents=_sdk_conversation(), config=_sdk_config()
                )
                assert answer.text == '{"summary": "ok"}'
        mine, sdks = server.requests()
        assert _ours(mine) == _sdks(sdks)
        # the difference the API reads as the same field, seen raw
        declared = sdks["tools"][0]["functionDeclarations"][0]
        assert (
            "parameters_json_schema" in declared or "parametersJsonSchema" in declared
        )
        assert server.paths[0] == server.paths[1]
        method = "streamGenerateContent" if stream else "generateContent"
        assert server.paths[0] == f"/v1/models/{MODEL}:{method}"
        assert server.queries[0] == server.queries[1]
        assert server.queries[0] == ([("alt", "sse")] if stream else [])
        assert server.headers[0]["x-goog-api-key"] == KEY
        assert server.headers[1]["x-goog-api-key"] == KEY


async def test_the_sdk_reads_what_our_fake_server_sends() -> None:
    """GM-12, GM-14, GM-16, GM-20: the fake server's answers are read by the SDK as by
    our codec: the same text, the same function call, the same usage counts."""
    from minagent import FunctionInvocationConfiguration, UsageDetails
    from minagent.testing import ScriptedCall

    usage = UsageDetails(input_token_count=11, output_token_count=5)
    async with FakeGemini(model=MODEL) as server:
        step = ScriptedStep(
            "tool_calls",
            calls=(ScriptedCall("get_weather", {"city": "Paris"}, "ignored"),),
            usage=usage,
        )
        server.add(step, step)
        client = server.make_client(
            api_key=KEY,
            base_url=server.root,
            function_invocation_configuration=FunctionInvocationConfiguration(
                enabled=False
            ),
        )
        sdk = genai.Client(
            api_key=KEY, http_options=types.HttpOptions(base_url=server.root)
        )
        async with client, sdk.aio:
            ours = await client.get_response(
                [Message("user", ["weather?"])], options={}
            )
            theirs = await sdk.aio.models.generate_content(
                model=MODEL, contents="weather?"
            )
    (call,) = [c for c in ours.messages[0].contents if c.type == "function_call"]
    assert theirs.function_calls is not None
    (sdk_call,) = theirs.function_calls
    assert (call.name, call.parse_arguments()) == (sdk_call.name, sdk_call.args)
    assert theirs.usage_metadata is not None
    assert ours.usage_details is not None
    assert ours.usage_details.input_token_count == (
        theirs.usage_metadata.prompt_token_count
    )
    assert ours.usage_details.output_token_count == (
        theirs.usage_metadata.candidates_token_count
    )
    assert ours.finish_reason == "tool_calls"
    assert theirs.candidates is not None
    assert str(theirs.candidates[0].finish_reason.value) == "STOP"
