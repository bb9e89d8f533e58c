"""Hostile wire data into the Anthropic, Ollama and Responses decoders (PV-49, PV-10,
PV-14).

Valid bodies and streams are mutated (hypothesis): values replaced by other JSON, by
5000-digit integers, 100,000-deep nesting, ``NaN``, ``1e20``, escaped lone surrogates;
the bytes cut anywhere. Only the codec's typed errors may come out; ``parse_error``
never raises. Over the loopback servers, a 429 whose body is hostile keeps its status
and is retried, in both modes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_anthropic._codec import MessagesCodec
from minagent_ollama._codec import OllamaCodec
from minagent_openai._codec import ResponsesCodec

from minagent import ChatResponse, Message, ProviderError, RateLimitError

from ..anthropic._fake_server import FakeAnthropic, stream_of, whole_message
from ..ollama._fake_server import CREATED_AT, FakeOllama, stream_chunks
from ..ollama._fake_server import whole as ollama_whole
from ..openai_responses._fake_server import FakeResponses, events, response_body

HOSTILE = {
    "__HUGE__": "9" * 5000,
    "__DEEP__": "[" * 100_000 + "]" * 100_000,
    "__DEEPOBJ__": '{"a":' * 3000 + "1" + "}" * 3000,
    "__NAN__": "NaN",
    "__BIGFLOAT__": "1e20",
    "__NEGBIG__": "-1e300",
    "__SURROGATE__": '"\\udc80"',
}
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)
replacement = (
    st.sampled_from(sorted(HOSTILE))
    | json_values
    | st.sampled_from([5, "", {}, [], None, True, -1, 1.5])
)

META = {"model": "llama3.2", "created_at": CREATED_AT}
USAGE = {
    "input_tokens": 1,
    "output_tokens": 2,
    "total_tokens": 3,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}
ANTHROPIC_BODY = whole_message(
    "msg_1",
    "claude",
    [
        {"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
    ],
    "tool_use",
    None,
)
OLLAMA_BODY = ollama_whole(
    META, "Hi", [{"function": {"name": "f", "arguments": {"a": 1}}}]
)
RESPONSES_BODY = response_body(
    "resp_1", "gpt-5", text="Hi", calls=[("call_1", "f", '{"a": 1}')], usage=USAGE
)


CODECS: dict[str, tuple[Any, Any, dict[str, Any], list[Any], str]] = {
    # name: (codec, context, a whole body, the events of a stream, the stream's framing)
    "anthropic": (
        MessagesCodec(),
        {},
        ANTHROPIC_BODY,
        [
            json.loads(x[6:])
            for x in stream_of(ANTHROPIC_BODY).decode().splitlines()
            if x.startswith("data: ")
        ],
        "sse",
    ),
    "ollama": (
        OllamaCodec(),
        "seed",
        OLLAMA_BODY,
        stream_chunks(
            META, "Hi there", [{"function": {"name": "f", "arguments": {"a": 1}}}]
        ),
        "ndjson",
    ),
    "responses": (
        ResponsesCodec(),
        None,
        RESPONSES_BODY,
        events(RESPONSES_BODY),
        "sse",
    ),
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


def _render(value: Any) -> str:
    text = json.dumps(value)
    for placeholder, hostile in HOSTILE.items():
        text = text.replace(json.dumps(placeholder), hostile)
    return text


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> str:
    value = base
    for _ in range(draw(st.integers(1, 3))):
        value = _mutate(value, draw(st.sampled_from(_paths(value))), draw(replacement))
    return _render(value)


def _frame(framing: str, items: list[str], kinds: list[str]) -> bytes:
    if framing == "ndjson":
        return "".join(f"{text}\n" for text in items).encode("utf-8", "surrogatepass")
    return "".join(
        f"event: {k}\ndata: {t}\n\n" for k, t in zip(kinds, items, strict=True)
    ).encode()


@st.composite
def hostile_stream(draw: st.DrawFn, name: str) -> tuple[bytes, list[int]]:
    _codec, _context, _body, items, framing = CODECS[name]
    texts = [json.dumps(i) for i in items]
    kinds = [str(i.get("type", "message")) for i in items]
    index = draw(st.integers(0, len(items) - 1))
    texts[index] = draw(mutated(items[index]))
    data = _frame(framing, texts, kinds)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=5)))
    return data, cuts


@pytest.mark.parametrize("name", sorted(CODECS))
@settings(max_examples=150)
@given(data=st.data())
def test_a_hostile_body_gives_a_response_or_the_codecs_error(
    name: str, data: st.DataObject
) -> None:
    """PV-49, PV-10: whatever the body, decode returns a response or raises a
    ProviderError."""
    codec, context, body, _items, _framing = CODECS[name]
    text = data.draw(mutated(body))
    try:
        response = codec.decode(text.encode(), context)
    except ProviderError:
        return
    assert isinstance(response, ChatResponse)
    # what it returns can be sent again
    json.dumps([m.to_dict() for m in response.messages]).encode("utf-8")


@pytest.mark.parametrize("name", sorted(CODECS))
@settings(max_examples=150)
@given(data=st.data())
def test_a_hostile_stream_gives_updates_or_the_codecs_error(
    name: str, data: st.DataObject
) -> None:
    """PV-49, PV-14: a mutated stream cut anywhere gives updates, or a ProviderError
    carrying the updates decoded by the same call before it."""
    codec, context, _body, _items, _framing = CODECS[name]
    raw, cuts = data.draw(hostile_stream(name))
    decoder = codec.stream_decoder(context, max_line_size=None)
    failure: ProviderError | None = None
    try:
        for start, end in zip([0, *cuts], [*cuts, len(raw)], strict=True):
            decoder.feed(raw[start:end])
        decoder.close()
    except ProviderError as error:
        failure = error
    if failure is not None:
        assert isinstance(getattr(failure, "updates", []), list)


ERROR_BODIES = [
    '{"error": {"message": __HUGE__, "type": "rate_limit_error"}}',
    "__DEEP__",
    '{"error": __DEEPOBJ__}',
    '{"type": "error", "error": {"type": "rate_limit_error", "message": 5}}',
    '{"error": {"message": {"a": [1, 2]}}}',
    '{"error": "__SURROGATE__", "message": NaN}',
]


def _error_body(template: str) -> str:
    for placeholder, hostile in HOSTILE.items():
        template = template.replace(f'"{placeholder}"', hostile).replace(
            placeholder, hostile
        )
    return template


@pytest.mark.parametrize("name", sorted(CODECS))
@pytest.mark.parametrize("template", ERROR_BODIES)
def test_parse_error_never_raises(name: str, template: str) -> None:
    """PV-49, PV-11: a hostile error body gives a message (its start as plain text),
    never an exception."""
    codec = CODECS[name][0]
    message, _request_id = codec.parse_error(429, _error_body(template).encode(), {})
    assert isinstance(message, str)
    assert message


def hostile_429(template: str) -> Any:
    async def handler(
        server: Any, request: web.Request, _body: dict[str, Any]
    ) -> web.StreamResponse:
        text = _error_body(template)
        return web.Response(
            status=429,
            text=text,
            content_type="application/json",
            headers={"retry-after": "0"},
        )

    return handler


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


SERVERS = {"anthropic": FakeAnthropic, "ollama": FakeOllama, "responses": FakeResponses}


@pytest.mark.parametrize("name", sorted(SERVERS))
@pytest.mark.parametrize("template", [ERROR_BODIES[0], ERROR_BODIES[1]])
async def test_a_429_with_a_hostile_body_keeps_its_status_and_is_retried(
    name: str, stream: bool, template: str
) -> None:
    """PV-49, PV-25: a 429 whose body is a 5000-digit integer or 100,000-deep nesting is
    a RateLimitError with status 429 and is retried: the retry's answer is the call's
    answer; with no retry left it is the error the caller sees."""
    async with SERVERS[name]() as server:
        server.add(hostile_429(template))
        server.script_text("after the retry")
        async with server.make_client(max_retries=1, sleep=Sleeps()) as client:
            if stream:
                result = client.get_response([Message("user", ["hi"])], stream=True)
                async for _ in result:
                    pass
                answer = await result.get_final_response()
            else:
                answer = await client.get_response([Message("user", ["hi"])])
        assert answer.text == "after the retry"
        server.add(hostile_429(template))
        async with server.make_client(max_retries=0) as client:
            with pytest.raises(RateLimitError) as info:
                await client.get_response([Message("user", ["hi"])])
    assert info.value.status == 429


@pytest.mark.parametrize("created", [1e20, 10**30, -5])
def test_a_responses_created_at_out_of_range_counts_as_absent(created: float) -> None:
    """PV-49, OA-13: a Responses created_at that is no representable time (1e20) is
    absent, not an OverflowError."""
    body = {**RESPONSES_BODY, "created_at": created}
    assert ResponsesCodec().decode(json.dumps(body).encode(), None).created_at is None


@pytest.mark.parametrize("name", sorted(CODECS))
def test_content_of_the_wrong_type_is_the_codecs_error(name: str) -> None:
    """PV-49: ``content: 5`` (a number where text or blocks belong) gives a response or
    the codec's ProviderError, never a TypeError."""
    codec, context, body, _items, _framing = CODECS[name]
    changed = (
        {**body, "content": 5}
        if name != "ollama"
        else {**body, "message": {"role": "assistant", "content": 5}}
    )
    if name == "responses":
        changed = {
            **body,
            "output": [
                {"type": "message", "id": "m", "role": "assistant", "content": 5}
            ],
        }
    try:
        response = codec.decode(json.dumps(changed).encode(), context)
    except ProviderError:
        return
    assert isinstance(response, ChatResponse)


@pytest.mark.parametrize("name", sorted(CODECS))
@pytest.mark.parametrize("wrong", [5, True, {"a": 1}])
def test_content_of_the_wrong_type_in_a_stream_is_the_codecs_error(
    name: str, wrong: Any
) -> None:
    """PV-49, PV-14: a stream event whose ``content`` (anywhere in it: the Anthropic
    ``message_start``'s ``message.content``, an Ollama chunk's ``message.content``, a
    Responses item's ``content``) is a number, a bool or an object gives updates or the
    codec's ProviderError, never a TypeError."""
    _codec, context, _body, items, framing = CODECS[name]
    kinds = [str(i.get("type", "message")) for i in items]
    changed = 0
    for index, item in enumerate(items):
        for path in _paths(item):
            if not path or path[-1] != "content":
                continue
            texts = [json.dumps(i) for i in items]
            texts[index] = json.dumps(_mutate(item, path, wrong))
            decoder = CODECS[name][0].stream_decoder(context, max_line_size=None)
            try:
                decoder.feed(_frame(framing, texts, kinds))
                decoder.close()
            except ProviderError:
                pass
            changed += 1
    assert changed  # the stream has a content to make wrong
