"""The Gemini codec, sans-I/O: request bodies, whole answers, streams and errors
(spec/gemini.md GM-1 .. GM-21)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from minagent_gemini import (
    GeminiCodec,
    GeminiProtocolError,
    GeminiSafetyError,
    GeminiStreamDecoder,
    GeminiStreamError,
    build_request,
    call_id_seed,
    finish_reason,
    model_path,
    parse_error,
    parse_response,
    usage_details,
)

from minagent import (
    AuthenticationError,
    BadRequestError,
    ChatResponse,
    Content,
    Message,
    ProviderError,
    RateLimitError,
    ServerError,
)

from ._fake_server import events, sse, whole

MODEL = "gemini-2.5-flash"


def user(text: str) -> Message:
    return Message("user", [Content.from_text(text)])


def body_of(messages: list[Message], **options: Any) -> dict[str, Any]:
    return build_request(messages, options, model=MODEL)


def decode_stream(data: bytes, seed: str = "", *, cut: int = 7) -> list[Any]:
    decoder = GeminiStreamDecoder(seed)
    out: list[Any] = []
    for start in range(0, len(data), cut):
        out += decoder.feed(data[start : start + cut])
    out += decoder.close()
    return out


# --------------------------------------------------------------------------------------------
# Request


def test_model_path() -> None:
    """GM-1: a bare name gets the models/ collection, a resource name is kept, segments
    are percent-encoded, an empty name is refused."""
    assert model_path("gemini-2.5-flash") == "models/gemini-2.5-flash"
    assert model_path("models/gemini-2.5-pro") == "models/gemini-2.5-pro"
    assert model_path("tunedModels/my-model") == "tunedModels/my-model"
    assert model_path("a b?c") == "models/a%20b%3Fc"
    with pytest.raises(ValueError, match="model name"):
        model_path("  ")


def test_options_model_must_be_the_clients() -> None:
    """GM-1: the model is in the URL; another model in the options is refused, the same
    one accepted."""
    assert "model" not in body_of([user("hi")], model=MODEL)
    with pytest.raises(ValueError, match="create a GeminiChatClient"):
        body_of([user("hi")], model="gemini-2.5-pro")


def test_roles_and_parts() -> None:
    """GM-2: user is user, assistant is model, tool is user; each content its own part;
    an empty message is not sent; another role is refused."""
    body = body_of(
        [
            Message("user", [Content.from_text("a"), Content.from_text("b")]),
            Message("assistant", [Content.from_text("c")]),
            Message("assistant", [Content.from_text("")]),
        ]
    )
    assert body == {
        "contents": [
            {"role": "user", "parts": [{"text": "a"}, {"text": "b"}]},
            {"role": "model", "parts": [{"text": "c"}]},
        ]
    }
    with pytest.raises(ValueError, match=r"messages\[0\]: role 'critic'"):
        body_of([Message("critic", [Content.from_text("x")])])


def test_system_instruction() -> None:
    """GM-3: instructions first, then every system message's texts, without a role;
    not repeated when the first message says the same; non-text refused."""
    body = body_of(
        [
            Message("system", [Content.from_text("rule one")]),
            user("hi"),
            Message("system", [Content.from_text("rule two")]),
        ],
        instructions="be brief",
    )
    assert body["systemInstruction"] == {
        "parts": [{"text": "be brief"}, {"text": "rule one"}, {"text": "rule two"}]
    }
    assert [c["role"] for c in body["contents"]] == ["user"]
    same = body_of(
        [Message("system", [Content.from_text("be brief")]), user("hi")],
        instructions="be brief",
    )
    assert same["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert "systemInstruction" not in body_of([user("hi")])
    with pytest.raises(ValueError, match="system message can only hold text"):
        body_of([Message("system", [Content.from_data(b"x", "image/png")])])


def test_media_parts() -> None:
    """GM-4: data as inlineData (re-encoded when not base64), uri as fileData."""
    body = body_of(
        [
            Message(
                "user",
                [
                    Content.from_data(b"\x89PNG", "image/png"),
                    Content.from_uri("data:text/plain,hello%20there"),
                    Content.from_uri("gs://bucket/doc.pdf", "application/pdf"),
                    Content.from_uri("https://example.com/x"),
                ],
            )
        ]
    )
    assert body["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
        {"inlineData": {"mimeType": "text/plain", "data": "aGVsbG8gdGhlcmU="}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/doc.pdf"}},
        {"fileData": {"fileUri": "https://example.com/x"}},
    ]


def _round(result: Any = None, exception: str | None = None) -> list[Message]:
    return [
        user("weather?"),
        Message(
            "assistant",
            [
                Content.from_function_call("c1", "get_weather", '{"city": "Paris"}'),
                Content.from_function_call("c2", "get_time", None),
            ],
        ),
        Message(
            "tool",
            [
                Content.from_function_result("c1", result, exception=exception),
                Content.from_function_result("c2", "12:00"),
            ],
        ),
    ]


def test_function_calls_and_responses() -> None:
    """GM-5: calls with id, name and args as an object; results with id, the call's
    name and {"result": ...}; a failed call without result as {"error": ...}."""
    body = body_of(_round({"sky": "clear"}))
    assert body["contents"][1] == {
        "role": "model",
        "parts": [
            {
                "functionCall": {
                    "id": "c1",
                    "name": "get_weather",
                    "args": {"city": "Paris"},
                }
            },
            {"functionCall": {"id": "c2", "name": "get_time", "args": {}}},
        ],
    }
    assert body["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "c1",
                    "name": "get_weather",
                    "response": {"result": {"sky": "clear"}},
                }
            },
            {
                "functionResponse": {
                    "id": "c2",
                    "name": "get_time",
                    "response": {"result": "12:00"},
                }
            },
        ],
    }
    failed = body_of(_round(None, exception="boom"))
    part = failed["contents"][2]["parts"][0]["functionResponse"]
    assert part["response"] == {"error": "boom"}


def test_function_call_errors() -> None:
    """GM-5: arguments that are not an object, a call outside an assistant message and
    a result whose name cannot be found are ValueErrors naming the message."""
    bad_args = [Message("assistant", [Content.from_function_call("c1", "f", "[1, 2]")])]
    with pytest.raises(ValueError, match=r"messages\[0\].*not a JSON object"):
        body_of(bad_args)
    with pytest.raises(ValueError, match="belong in an assistant message"):
        body_of([Message("user", [Content.from_function_call("c1", "f", "{}")])])
    with pytest.raises(ValueError, match="requires the function's name"):
        body_of([Message("tool", [Content.from_function_result("zz", "r")])])
    named = body_of(
        [Message("tool", [Content.from_function_result("zz", "r", name="f")])]
    )
    assert named["contents"][0]["parts"][0]["functionResponse"]["name"] == "f"


def test_what_is_not_sent() -> None:
    """GM-5: reasoning, usage and informational calls (with their results) are not
    sent."""
    body = body_of(
        [
            user("hi"),
            Message(
                "assistant",
                [
                    Content.from_text_reasoning("thinking..."),
                    Content.from_function_call(
                        "h1", "hosted", "{}", informational_only=True
                    ),
                    Content.from_text("answer"),
                ],
            ),
            Message("tool", [Content.from_function_result("h1", "done")]),
        ]
    )
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "answer"}]},
    ]


def test_tools() -> None:
    """GM-6: our tools as one functionDeclarations entry with parametersJsonSchema
    (missing parameters: an empty object schema); a hosted tool dict as its own entry."""
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "additionalProperties": False,
    }
    body = body_of(
        [user("hi")],
        tools=[
            {"name": "get_weather", "description": "Weather", "parameters": schema},
            {"name": "ping"},
            {"googleSearch": {}},
        ],
    )
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather",
                    "parametersJsonSchema": schema,
                },
                {
                    "name": "ping",
                    "parametersJsonSchema": {"type": "object", "properties": {}},
                },
            ]
        },
        {"googleSearch": {}},
    ]
    assert body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"] is not (
        schema
    )


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ({"mode": "auto"}, {"mode": "AUTO"}),
        (
            {"mode": "required", "required_function_name": "f"},
            {"mode": "ANY", "allowedFunctionNames": ["f"]},
        ),
        (
            {"mode": "required", "allowed_tools": ["f", "g"]},
            {"mode": "ANY", "allowedFunctionNames": ["f", "g"]},
        ),
    ],
)
def test_tool_choice(choice: Any, config: dict[str, Any]) -> None:
    """GM-7: tool_choice as functionCallingConfig."""
    body = body_of([user("hi")], tools=[{"name": "f"}], tool_choice=choice)
    assert body["toolConfig"] == {"functionCallingConfig": config}


def test_tool_choice_refusals() -> None:
    """GM-7: what Gemini cannot honour is a ValueError; without tools nothing is
    examined or sent."""
    with pytest.raises(ValueError, match="only when a call is required"):
        body_of(
            [user("hi")],
            tools=[{"name": "f"}],
            tool_choice={"mode": "auto", "allowed_tools": ["f"]},
        )
    with pytest.raises(ValueError, match="unsupported tool_choice"):
        body_of([user("hi")], tools=[{"name": "f"}], tool_choice="sometimes")
    with pytest.raises(ValueError, match="parallel_tool_calls=False"):
        body_of([user("hi")], tools=[{"name": "f"}], parallel_tool_calls=False)
    bare = body_of([user("hi")], tool_choice="sometimes", parallel_tool_calls=False)
    assert "toolConfig" not in bare
    assert "tools" not in bare
    assert "toolConfig" not in body_of([user("hi")], tools=[{"name": "f"}])


def test_structured_output() -> None:
    """GM-8: a schema as responseJsonSchema, json as the MIME type alone,
    response_schema as responseSchema; both at once refused; an explicit MIME type
    wins."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    config = body_of([user("x")], response_format=schema)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"] == schema["properties"]
    assert body_of([user("x")], response_format={"type": "json_object"})[
        "generationConfig"
    ] == {"responseMimeType": "application/json"}
    assert "generationConfig" not in body_of(
        [user("x")], response_format={"type": "text"}
    )
    openapi = {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}}
    assert body_of([user("x")], response_schema=openapi)["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseSchema": openapi,
    }
    with pytest.raises(ValueError, match="cannot both be set"):
        body_of([user("x")], response_schema=openapi, response_format=schema)
    explicit = body_of(
        [user("x")], response_schema=openapi, response_mime_type="text/x.enum"
    )
    assert explicit["generationConfig"]["responseMimeType"] == "text/x.enum"


def test_generation_config_and_top_level_options() -> None:
    """GM-9: the option table; a str stop becomes a list; safety settings and cached
    content at the top level; values are copies."""
    settings = [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}]
    body = body_of(
        [user("x")],
        temperature=0.5,
        top_p=0.8,
        top_k=4,
        max_tokens=9,
        stop="END",
        seed=1,
        presence_penalty=0.1,
        frequency_penalty=0.2,
        thinking_config={"thinkingBudget": 0},
        safety_settings=settings,
        cached_content="cachedContents/abc",
    )
    assert body["generationConfig"] == {
        "temperature": 0.5,
        "topP": 0.8,
        "topK": 4,
        "maxOutputTokens": 9,
        "stopSequences": ["END"],
        "seed": 1,
        "presencePenalty": 0.1,
        "frequencyPenalty": 0.2,
        "thinkingConfig": {"thinkingBudget": 0},
    }
    assert body["safetySettings"] == settings
    assert body["safetySettings"] is not settings
    assert body["cachedContent"] == "cachedContents/abc"
    assert "generationConfig" not in body_of([user("x")])


def test_extra_body() -> None:
    """GM-10: extra_body replaces and removes top-level keys, merges generationConfig."""
    body = body_of(
        [user("x")],
        temperature=0.5,
        instructions="sys",
        extra_body={
            "systemInstruction": None,
            "labels": {"a": "b"},
            "generationConfig": {"candidateCount": 1, "temperature": None},
        },
    )
    assert "systemInstruction" not in body
    assert body["labels"] == {"a": "b"}
    assert body["generationConfig"] == {"candidateCount": 1}
    with pytest.raises(TypeError, match="extra_body"):
        body_of([user("x")], extra_body=["no"])


@pytest.mark.parametrize(
    ("option", "hint"),
    [
        ("candidate_count", "one candidate"),
        ("n", "one candidate"),
        ("reasoning_effort", "thinking_config"),
        ("max_completion_tokens", "max_tokens"),
        ("logit_bias", "no logit bias"),
        ("frobnicate", "extra_body"),
    ],
)
def test_unknown_options_are_refused(option: str, hint: str) -> None:
    """GM-11: no option is dropped silently; private and None options are not
    options."""
    with pytest.raises(ValueError, match=hint):
        body_of([user("x")], **{option: 2})
    assert body_of([user("x")], **{"_private": 1, option: None}) == body_of([user("x")])


# --------------------------------------------------------------------------------------------
# Whole answers


def answer(parts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}
    candidate.update(extra.pop("candidate", {}))
    return {"candidates": [candidate], **extra}


def test_parse_response_parts() -> None:
    """GM-12: text, inline data and file data parts in order; unknown parts stay in the
    raw representation; ids, model and wire finish facts are kept."""
    body = answer(
        [
            {"text": "Hello"},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/x.pdf"}},
            {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        ],
        responseId="r-1",
        modelVersion="gemini-2.5-flash-001",
        candidate={"finishMessage": "fine"},
    )
    response = parse_response(body)
    contents = response.messages[0].contents
    assert [c.type for c in contents] == ["text", "data", "uri"]
    assert contents[0].text == "Hello"
    assert contents[1].uri == "data:image/png;base64,iVBORw=="
    assert (contents[2].uri, contents[2].media_type) == (
        "gs://b/x.pdf",
        "application/pdf",
    )
    assert response.messages[0].role == "assistant"
    assert response.response_id == "r-1"
    assert response.model == "gemini-2.5-flash-001"
    assert response.finish_reason == "stop"
    assert response.additional_properties == {
        "finish_reason": "STOP",
        "finish_message": "fine",
    }
    assert response.raw_representation is body


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"candidates": []},
        {"candidates": "x"},
        {"candidates": [5]},
        answer([], candidate={"content": "x"}),
        answer([5]),
        answer([{"text": 5}]),
        answer([{"inlineData": {"mimeType": "image/png"}}]),
        answer([{"fileData": {}}]),
        answer([{"functionCall": {"args": {}}}]),
        answer([{"functionCall": {"name": "f", "args": [1]}}]),
        answer([{"functionCall": "f"}]),
    ],
)
def test_parse_response_protocol_errors(body: Any) -> None:
    """GM-12, GM-14: a body of the wrong shape is a GeminiProtocolError (PV-10)."""
    with pytest.raises(GeminiProtocolError):
        parse_response(body)


def test_thoughts_and_signatures() -> None:
    """GM-13: thought parts are reasoning; signatures are kept and sent back on the
    same part."""
    body = answer(
        [
            {"text": "pondering", "thought": True, "thoughtSignature": "sig-t"},
            {"text": "visible", "thoughtSignature": "sig-x"},
            {
                "functionCall": {"name": "f", "args": {"a": 1}},
                "thoughtSignature": "sig-f",
            },
        ]
    )
    contents = parse_response(body, id_seed="s").messages[0].contents
    assert [c.type for c in contents] == ["text_reasoning", "text", "function_call"]
    assert contents[0].protected_data == "sig-t"
    assert contents[1].additional_properties == {"thought_signature": "sig-x"}
    assert contents[2].additional_properties == {"thought_signature": "sig-f"}
    again = body_of([user("q"), Message("assistant", contents)])
    assert again["contents"][1]["parts"] == [
        {"text": "visible", "thoughtSignature": "sig-x"},
        {
            "functionCall": {
                "id": contents[2].call_id,
                "name": "f",
                "args": {"a": 1},
            },
            "thoughtSignature": "sig-f",
        },
    ]


def test_call_ids() -> None:
    """GM-14: the wire's id when there is one; otherwise a deterministic id from the
    seed, position, name and arguments; missing args are {}."""
    parts = [
        {"functionCall": {"id": "wire-1", "name": "f", "args": {"a": 1}}},
        {"functionCall": {"name": "f", "args": {"a": 1}}},
        {"functionCall": {"name": "g"}},
    ]
    first = parse_response(answer(parts), id_seed="seed").messages[0].contents
    again = parse_response(answer(parts), id_seed="seed").messages[0].contents
    other = parse_response(answer(parts), id_seed="other").messages[0].contents
    assert first[0].call_id == "wire-1"
    assert first[1].call_id.startswith("call_")
    assert len(first[1].call_id) == 29
    assert [c.call_id for c in first] == [c.call_id for c in again]
    assert first[1].call_id != other[1].call_id
    assert first[1].call_id != first[2].call_id
    assert json.loads(first[1].arguments) == {"a": 1}
    assert first[2].arguments == "{}"
    seed = call_id_seed({"contents": [{"role": "user", "parts": [{"text": "x"}]}]})
    assert len(seed) == 32
    assert seed != call_id_seed({"contents": []})


@pytest.mark.parametrize(
    ("wire", "calls", "ours"),
    [
        ("STOP", False, "stop"),
        ("STOP", True, "tool_calls"),
        ("MAX_TOKENS", False, "length"),
        ("RECITATION", False, "content_filter"),
        ("LANGUAGE", False, "content_filter"),
        ("MALFORMED_FUNCTION_CALL", False, "malformed_function_call"),
        ("OTHER", False, "other"),
        ("FINISH_REASON_UNSPECIFIED", False, None),
        (None, False, None),
        (5, False, None),
    ],
)
def test_finish_reasons(wire: Any, calls: bool, ours: str | None) -> None:
    """GM-15: Gemini's finish reasons as ours."""
    assert finish_reason(wire, calls=calls) == ours


def test_usage() -> None:
    """GM-16: usageMetadata as UsageDetails; thoughts count as output."""
    usage = usage_details(
        {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 7,
            "cachedContentTokenCount": 4,
            "toolUsePromptTokenCount": 2,
            "totalTokenCount": 24,
        }
    )
    assert usage is not None
    assert usage.input_token_count == 10
    assert usage.output_token_count == 12
    assert usage.total_token_count == 24
    assert usage.reasoning_output_token_count == 7
    assert usage.cache_read_input_token_count == 4
    assert usage["tool_use_prompt_token_count"] == 2
    assert usage_details({"promptTokenCount": "10"}) is None
    assert usage_details(None) is None
    only = usage_details({"promptTokenCount": 3, "candidatesTokenCount": True})
    assert only is not None
    assert only.output_token_count is None


def test_prompt_block_is_a_safety_error() -> None:
    """GM-17: promptFeedback.blockReason is a GeminiSafetyError naming the categories,
    blocked first, then HIGH, then MEDIUM; never retried."""
    body = {
        "promptFeedback": {
            "blockReason": "SAFETY",
            "safetyRatings": [
                {"category": "HARM_CATEGORY_HARASSMENT", "probability": "MEDIUM"},
                {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
                {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"},
                {
                    "category": "HARM_CATEGORY_SEXUALLY_EXPLICIT",
                    "probability": "LOW",
                    "blocked": True,
                },
            ],
        }
    }
    with pytest.raises(GeminiSafetyError) as caught:
        parse_response(body)
    error = caught.value
    assert error.prompt is True
    assert error.reason == "SAFETY"
    assert error.categories == (
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
        "HARM_CATEGORY_HARASSMENT",
    )
    assert "prompt was blocked" in str(error)
    assert "HARM_CATEGORY_SEXUALLY_EXPLICIT" in str(error)
    assert error.retryable is False
    assert isinstance(error, ProviderError)


@pytest.mark.parametrize(
    "reason",
    [
        "SAFETY",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
    ],
)
def test_safety_finish_is_a_safety_error(reason: str) -> None:
    """GM-17: a candidate stopped for safety is a GeminiSafetyError with that reason."""
    body = answer(
        [],
        candidate={
            "finishReason": reason,
            "safetyRatings": [
                {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}
            ],
        },
    )
    with pytest.raises(GeminiSafetyError, match=reason) as caught:
        parse_response(body)
    assert caught.value.prompt is False
    assert caught.value.categories == ("HARM_CATEGORY_HARASSMENT",)
    assert "answer was stopped" in str(caught.value)


# --------------------------------------------------------------------------------------------
# Errors


def test_parse_error_google_body() -> None:
    """GM-18: message (STATUS) [REASON]; a one-item list too; plain text and empty
    bodies as PV-11; the request id from x-request-id."""
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.Help"},
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                },
            ],
        }
    }
    message, request_id = parse_error(400, json.dumps(body).encode(), {})
    assert message == (
        "API key not valid. Please pass a valid API key. (INVALID_ARGUMENT) "
        "[API_KEY_INVALID]"
    )
    assert request_id is None
    listed, _ = parse_error(429, json.dumps([google(429, "slow down")]).encode())
    assert listed == "slow down (RESOURCE_EXHAUSTED)"
    assert parse_error(502, b"Bad gateway\n", {"X-Request-Id": "r9"}) == (
        "Bad gateway",
        "r9",
    )
    assert parse_error(503, b"")[0] == "HTTP 503 Service Unavailable"


def google(status: int, message: str) -> dict[str, Any]:
    names = {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT", 500: "INTERNAL"}
    return {"error": {"code": status, "message": message, "status": names[status]}}


def test_status_errors() -> None:
    """GM-18: PV-23's classes, and a 400 for an invalid key is an
    AuthenticationError."""
    codec = GeminiCodec()
    key = codec.status_error(
        400, "bad key (INVALID_ARGUMENT) [API_KEY_INVALID]", None, {}
    )
    assert isinstance(key, AuthenticationError)
    assert key.status == 400
    assert not key.retryable
    plain = codec.status_error(400, "bad (INVALID_ARGUMENT)", None, {})
    assert isinstance(plain, BadRequestError)
    assert not isinstance(plain, AuthenticationError)
    assert isinstance(codec.status_error(429, "x", None, {}), RateLimitError)
    assert isinstance(codec.status_error(503, "x", None, {}), ServerError)


def test_retry_info_is_the_server_delay() -> None:
    """GM-18: RetryInfo's retryDelay is in the message and becomes the error's delay,
    unless a header names one; a delay that is not a Duration is ignored."""
    body = google(429, "quota exceeded")
    body["error"]["details"] = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37.5s"},
    ]
    message, _ = parse_error(429, json.dumps(body).encode(), {})
    assert message == "quota exceeded (RESOURCE_EXHAUSTED) [retry in 37.5s]"
    codec = GeminiCodec()
    error = codec.status_error(429, message, None, {})
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 37.5
    assert codec.status_error(429, message, None, {"Retry-After": "2"}).retry_after == 2
    body["error"]["details"][1]["retryDelay"] = "soon"
    message, _ = parse_error(429, json.dumps(body).encode(), {})
    assert message == "quota exceeded (RESOURCE_EXHAUSTED)"
    assert codec.status_error(429, message, None, {}).retry_after is None


def test_error_body_with_2xx() -> None:
    """GM-19: a 2xx body that is an error object raises GeminiStreamError."""
    with pytest.raises(
        GeminiStreamError, match=r"overloaded \(UNAVAILABLE\)"
    ) as caught:
        parse_response(
            {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
        )
    assert caught.value.error_status == "UNAVAILABLE"


# --------------------------------------------------------------------------------------------
# Streams


def test_stream_maps_each_event_like_a_body() -> None:
    """GM-20: text event by event, calls whole with ids as in a whole answer, usage
    once with the finish reason; CRLF framing; cut anywhere."""
    from minagent import UsageDetails

    calls = [{"name": "f", "args": {"a": 1}}, {"name": "f", "args": {"a": 2}}]
    usage = UsageDetails(input_token_count=3, output_token_count=4)
    data = sse(events("Hello big world", calls, usage))
    for cut in (1, 5, 64, len(data)):
        updates = decode_stream(data, "seed", cut=cut)
        assert "".join(u.text for u in updates) == "Hello big world"
        got = [c for u in updates for c in u.contents if c.type == "function_call"]
        whole_calls = [
            c
            for c in parse_response(
                whole("Hello big world", calls, usage), id_seed="seed"
            )
            .messages[0]
            .contents
            if c.type == "function_call"
        ]
        assert [(c.call_id, c.arguments) for c in got] == [
            (c.call_id, c.arguments) for c in whole_calls
        ]
        usages = [c for u in updates for c in u.contents if c.type == "usage"]
        assert len(usages) == 1
        assert usages[0].usage_details.input_token_count == 3
        assert updates[-1].finish_reason == "tool_calls"
        assert updates[-1].response_id == "resp-fake-1"


def test_stream_usage_is_the_latest_seen() -> None:
    """GM-20: running usage counts in earlier events; the last seen is reported, once;
    empty events and comments give nothing."""
    data = (
        b": comment\n\n"
        + sse(
            [
                {
                    "candidates": [{"content": {"parts": [{"text": "a"}]}}],
                    "usageMetadata": {"promptTokenCount": 2},
                },
                {"candidates": [{"content": {"parts": []}}]},
                {
                    "candidates": [
                        {"content": {"parts": [{"text": "b"}]}, "finishReason": "STOP"}
                    ],
                    "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2},
                },
            ]
        )
        + b"data: \n\n"
    )
    updates = decode_stream(data)
    assert [u.text for u in updates] == ["a", "b"]
    usages = [c for u in updates for c in u.contents if c.type == "usage"]
    assert len(usages) == 1
    assert usages[0].usage_details.output_token_count == 2


def test_stream_line_bound() -> None:
    """GM-20: a line longer than max_line_size is a GeminiProtocolError naming the
    bound."""
    decoder = GeminiStreamDecoder(max_line_size=64)
    with pytest.raises(GeminiProtocolError, match="max_line_size"):
        decoder.feed(b"data: " + b"x" * 200)


def test_stream_is_done_at_the_finish_reason() -> None:
    """GM-21: the finish reason ends the stream; before it, the codec says what is
    missing."""
    codec = GeminiCodec()
    decoder = codec.stream_decoder("", max_line_size=None)
    decoder.feed(sse([{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}]))
    assert not decoder.done
    assert codec.unfinished(decoder, False) == (
        "the stream ended before a candidate's finishReason"
    )
    decoder.feed(sse([{"candidates": [{"finishReason": "MAX_TOKENS"}]}]))
    assert decoder.done
    assert codec.unfinished(decoder, False) is None
    assert (
        decoder.feed(
            sse([{"candidates": [{"content": {"parts": [{"text": "late"}]}}]}])
        )
        == []
    )


def test_stream_error_event_carries_the_updates_before_it() -> None:
    """GM-19: an error event raises GeminiStreamError with the updates decoded by the
    same call."""
    data = sse(
        [
            {"candidates": [{"content": {"parts": [{"text": "part"}]}}]},
            {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}},
        ]
    )
    decoder = GeminiStreamDecoder()
    with pytest.raises(GeminiStreamError, match="internal") as caught:
        decoder.feed(data)
    assert [u.text for u in caught.value.updates] == ["part"]


def test_stream_safety_block_carries_the_updates_before_it() -> None:
    """GM-17: a candidate stopped for safety mid-stream raises GeminiSafetyError with
    what came before."""
    data = sse(
        [
            {"candidates": [{"content": {"parts": [{"text": "Once"}]}}]},
            {"candidates": [{"finishReason": "PROHIBITED_CONTENT"}]},
        ]
    )
    with pytest.raises(GeminiSafetyError) as caught:
        GeminiStreamDecoder().feed(data)
    assert caught.value.reason == "PROHIBITED_CONTENT"
    assert [u.text for u in caught.value.updates] == ["Once"]


def test_codec_decode_and_encode() -> None:
    """GM-12, GM-14: the codec's encode gives the body and the seed, decode reads with
    it; an invalid body is a GeminiProtocolError."""
    codec = GeminiCodec()
    raw, seed = codec.encode([user("hi")], {}, model=MODEL, stream=False)
    assert json.loads(raw) == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}]
    }
    assert seed == call_id_seed(json.loads(raw))
    response = codec.decode(json.dumps(whole("ok")).encode(), seed)
    assert isinstance(response, ChatResponse)
    assert response.text == "ok"
    with pytest.raises(GeminiProtocolError):
        codec.decode(b"{not json", seed)
    assert codec.headers(stream=True)["accept"] == "text/event-stream"
    assert codec.headers(stream=False)["accept"] == "application/json"
