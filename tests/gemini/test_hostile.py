"""Hostile wire data into the Gemini decoders (hypothesis; PV-49, PV-10, PV-14).

Valid answers and streams are mutated: values replaced by other JSON, by 5000-digit
integers, deep nesting, ``NaN``, escaped lone surrogates; streams cut anywhere and
random bytes. Only the codec's typed errors may come out; ``parse_error`` never
raises."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from minagent_gemini import GeminiCodec, parse_error

from minagent import ChatResponse, ProviderError, UsageDetails

from ._fake_server import events, whole

HOSTILE = {
    "__HUGE__": "9" * 5000,
    "__DEEP__": "[" * 100_000 + "]" * 100_000,
    "__DEEPOBJ__": '{"a":' * 3000 + "1" + "}" * 3000,
    "__NAN__": "NaN",
    "__BIGFLOAT__": "1e20",
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
    | st.sampled_from([5, "", {}, [], None, True, -1, 1.5, "SAFETY", "STOP"])
)
USAGE = UsageDetails(input_token_count=3, output_token_count=4)
CALLS = [{"name": "f", "args": {"a": 1}}, {"id": "g", "name": "h", "args": {}}]
BODY: dict[str, Any] = {
    **whole("Hi there", CALLS, USAGE),
    "promptFeedback": {"safetyRatings": [{"category": "C", "probability": "LOW"}]},
}
BODY["candidates"][0]["content"]["parts"].insert(
    0, {"text": "hmm", "thought": True, "thoughtSignature": "s"}
)
EVENTS = events("Hi there you", CALLS, USAGE)


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


@settings(max_examples=200)
@given(data=st.data())
def test_a_hostile_body_gives_a_response_or_a_typed_error(data: st.DataObject) -> None:
    """PV-49, PV-10, GM-12: whatever the body, decode returns a response or raises a
    ProviderError."""
    text = data.draw(mutated(BODY))
    try:
        response = GeminiCodec().decode(text.encode("utf-8", "surrogatepass"), "seed")
    except ProviderError:
        return
    assert isinstance(response, ChatResponse)
    json.dumps([m.to_dict() for m in response.messages]).encode("utf-8")


@settings(max_examples=200)
@given(data=st.data())
def test_a_hostile_stream_gives_updates_or_a_typed_error(data: st.DataObject) -> None:
    """PV-49, PV-14, GM-20: a mutated stream cut anywhere gives updates, or a
    ProviderError carrying the updates decoded by the same call before it."""
    texts = [json.dumps(e) for e in EVENTS]
    index = data.draw(st.integers(0, len(texts) - 1))
    texts[index] = data.draw(mutated(EVENTS[index]))
    raw = "".join(f"data: {t}\r\n\r\n" for t in texts).encode("utf-8", "surrogatepass")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=5)))
    decoder = GeminiCodec().stream_decoder("seed", max_line_size=1 << 20)
    bounds = [0, *cuts, len(raw)]
    try:
        for start, end in itertools.pairwise(bounds):
            for update in decoder.feed(raw[start:end]):
                json.dumps(update.to_dict())
        decoder.close()
    except ProviderError as error:
        for update in getattr(error, "updates", []):
            json.dumps(update.to_dict())


@settings(max_examples=200)
@given(st.binary(max_size=400))
def test_random_bytes_into_the_stream_decoder(raw: bytes) -> None:
    """PV-49, GM-20: random bytes give updates or a typed error, never anything
    else."""
    decoder = GeminiCodec().stream_decoder("", max_line_size=256)
    try:
        decoder.feed(raw)
        decoder.close()
    except ProviderError:
        pass


@settings(max_examples=200)
@given(status=st.integers(100, 599), data=st.data())
def test_parse_error_never_raises(status: int, data: st.DataObject) -> None:
    """PV-11, GM-18: any error body gives a message; parse_error never raises."""
    body = data.draw(
        mutated(
            {
                "error": {
                    "code": status,
                    "message": "m",
                    "status": "S",
                    "details": [{"@type": "x.ErrorInfo", "reason": "R"}],
                }
            }
        )
        | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
    )
    message, _ = parse_error(status, body.encode("utf-8", "surrogatepass"), {})
    assert isinstance(message, str)
    assert message
