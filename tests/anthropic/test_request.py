"""The request half of the Anthropic codec: minagent messages and options -> Messages
API body."""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minagent_anthropic import build_request, wire_tool_id, wire_tool_ids

from minagent import Content, FunctionTool, Message, tool


def body(
    messages: list[Message], options: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    kw.setdefault("model", "claude-sonnet-4-5")
    kw.setdefault("stream", False)
    return build_request(messages, options, **kw)


def call(
    call_id: str = "toolu_1", name: str = "get_weather", args: Any = '{"city": "Paris"}'
) -> Content:
    return Content.from_function_call(call_id, name, args)


def result(call_id: str = "toolu_1", value: Any = "sunny", **kw: Any) -> Content:
    return Content.from_function_result(call_id, value, **kw)


# -- AN-1 ---------------------------------------------------------------------------------------


def test_model_max_tokens_and_stream_flag() -> None:
    """AN-1: model, max_tokens (default 4096) and messages; stream only when
    streaming."""
    plain = body([Message("user", ["Hi"])])
    assert plain == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    assert body([Message("user", ["Hi"])], stream=True)["stream"] is True
    assert (
        body([Message("user", ["Hi"])], {"model": "claude-opus-4-1"})["model"]
        == "claude-opus-4-1"
    )
    assert body([Message("user", ["Hi"])], {"max_tokens": 10})["max_tokens"] == 10
    assert (
        body([Message("user", ["Hi"])], {"max_completion_tokens": 11})["max_tokens"]
        == 11
    )
    assert body([Message("user", ["Hi"])], max_tokens=12)["max_tokens"] == 12


def test_missing_model_and_bad_max_tokens_are_errors() -> None:
    """AN-1: no model is a ValueError; so is a max_tokens that is not a positive int."""
    with pytest.raises(ValueError, match="model"):
        build_request([Message("user", ["Hi"])], {}, model="", stream=False)
    with pytest.raises(ValueError, match="max_tokens"):
        body([Message("user", ["Hi"])], {"max_tokens": 0})


# -- AN-2, PV-4 ---------------------------------------------------------------------------------


def test_instructions_and_system_messages_become_the_system_field() -> None:
    """AN-2, PV-4: instructions, then system and developer texts, joined into
    `system`."""
    messages = [
        Message("system", ["Be brief."]),
        Message("user", ["Hi"]),
        Message("developer", ["No emoji."]),
    ]
    sent = body(messages, {"instructions": "You are a pirate."})
    assert sent["system"] == "You are a pirate.\n\nBe brief.\n\nNo emoji."
    assert [m["role"] for m in sent["messages"]] == ["user"]


def test_instructions_equal_to_the_first_system_message_are_sent_once() -> None:
    """PV-4: instructions identical to the leading system message are not repeated."""
    sent = body(
        [Message("system", ["Be brief."]), Message("user", ["Hi"])],
        {"instructions": "Be brief."},
    )
    assert sent["system"] == "Be brief."
    assert "system" not in body([Message("user", ["Hi"])])


def test_system_with_cache_control_is_a_block_list() -> None:
    """AN-2, AN-4: a cache_control on a system text turns `system` into text blocks."""
    marker = {"type": "ephemeral"}
    system = Message(
        "system",
        [
            Content.from_text(
                "Long manual...", additional_properties={"cache_control": marker}
            )
        ],
    )
    sent = body([system, Message("user", ["Hi"])], {"instructions": "Short."})
    assert sent["system"] == [
        {"type": "text", "text": "Short."},
        {
            "type": "text",
            "text": "Long manual...",
            "cache_control": {"type": "ephemeral"},
        },
    ]


def test_system_message_with_an_image_is_an_error() -> None:
    """AN-2: a system message can carry only text."""
    image = Content.from_data(b"\x89PNG", "image/png")
    with pytest.raises(ValueError, match=r"messages\[0\].*system"):
        body([Message("system", ["x", image]), Message("user", ["Hi"])])


# -- AN-3 ---------------------------------------------------------------------------------------


def test_roles_alternate_and_same_role_turns_merge() -> None:
    """AN-3: consecutive user messages merge into one message with their blocks in
    order."""
    sent = body(
        [
            Message("user", ["Hello"]),
            Message("user", ["there"]),
            Message("assistant", ["Hi!"]),
        ]
    )
    assert sent["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hello"},
                {"type": "text", "text": "there"},
            ],
        },
        {"role": "assistant", "content": "Hi!"},
    ]


def test_tool_results_travel_in_a_user_message_before_other_blocks() -> None:
    """AN-3, AN-7: tool results and a following user text merge; tool_result blocks come
    first."""
    messages = [
        Message("user", ["Weather?"]),
        Message("assistant", [call()]),
        Message("tool", [result()]),
        Message("user", ["And tomorrow?"]),
    ]
    sent = body(messages)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
        {"type": "text", "text": "And tomorrow?"},
    ]
    # a user text *before* the results (out of order) is moved behind them
    swapped = body(
        [
            Message("assistant", [call()]),
            Message("user", ["Hm"]),
            Message("tool", [result()]),
        ]
    )
    assert [b["type"] for b in swapped["messages"][1]["content"]] == [
        "tool_result",
        "text",
    ]


def test_results_inside_an_assistant_message_go_to_a_user_turn_first() -> None:
    """AN-3: a message's function results are a user turn placed before its other
    contents."""
    sent = body(
        [
            Message("assistant", [call()]),
            Message("assistant", [result(), Content.from_text("Done.")]),
        ]
    )
    assert [m["role"] for m in sent["messages"]] == ["assistant", "user", "assistant"]


def test_unknown_role_is_an_error() -> None:
    """AN-3: a role the API cannot carry is a ValueError naming it."""
    with pytest.raises(ValueError, match="'critic'"):
        body([Message("critic", ["Nope"])])


def test_bookkeeping_contents_are_not_sent_and_empty_messages_are_omitted() -> None:
    """PV-6: usage, error, approvals and foreign reasoning are not sent; empty turns
    vanish."""
    usage = Content.from_usage(__import__("minagent").UsageDetails(input_token_count=1))
    messages = [
        Message("user", ["Hi"]),
        Message(
            "assistant",
            [usage, Content.from_error("boom"), Content.from_text_reasoning("hmm")],
        ),
        Message("user", [""]),
    ]
    assert body(messages)["messages"] == [{"role": "user", "content": "Hi"}]


def test_informational_calls_and_their_results_are_not_sent() -> None:
    """PV-6: a function_call marked informational_only is not sent, nor is its
    result."""
    info = Content.from_function_call(
        "srv_1", "web_search", "{}", informational_only=True
    )
    sent = body(
        [
            Message("user", ["q"]),
            Message("assistant", [info, Content.from_text("A")]),
            Message("tool", [result("srv_1")]),
        ]
    )
    assert sent["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "A"},
    ]


# -- AN-4, AN-5 ---------------------------------------------------------------------------------


def test_images_base64_and_url_and_pdf() -> None:
    """AN-5: images as base64 or url sources, PDFs as document blocks, in content
    order."""
    png = b"\x89PNG\r\n\x1a\n"
    contents = [
        Content.from_text("Look:"),
        Content.from_data(png, "image/png"),
        Content.from_uri("https://example.com/cat.jpg", media_type="image/jpeg"),
        Content.from_data(b"%PDF-1.4", "application/pdf"),
        Content.from_uri("https://example.com/a.pdf", media_type="application/pdf"),
    ]
    blocks = body([Message("user", contents)])["messages"][0]["content"]
    assert blocks == [
        {"type": "text", "text": "Look:"},
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(png).decode(),
            },
        },
        {
            "type": "image",
            "source": {"type": "url", "url": "https://example.com/cat.jpg"},
        },
        {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": "application/pdf",
                "data": "JVBERi0xLjQ=",
            },
        },
        {
            "type": "document",
            "source": {"type": "url", "url": "https://example.com/a.pdf"},
        },
    ]


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (Message("user", [Content.from_data(b"RIFF", "audio/wav")]), "audio/wav"),
        (Message("user", [Content.from_data(b"BM", "image/bmp")]), "image/bmp"),
        (
            Message("assistant", [Content.from_data(b"\x89PNG", "image/png")]),
            "assistant",
        ),
    ],
)
def test_unsupported_media_is_an_error_naming_the_message(
    message: Message, match: str
) -> None:
    """AN-5, PV-6: media the API cannot carry where it stands is a ValueError, never
    dropped."""
    with pytest.raises(
        ValueError,
        match=rf"messages\[1\].*{match}|{match}.*messages\[1\]|messages\[1\]",
    ):
        body([Message("user", ["x"]), message])
    with pytest.raises(ValueError, match=match):
        body([Message("user", ["x"]), message])


def test_cache_control_on_contents_and_top_level() -> None:
    """AN-4, AN-12: a content's cache_control marks its block; the option is the
    top-level key."""
    marker = {"type": "ephemeral", "ttl": "1h"}
    text = Content.from_text(
        "Big document", additional_properties={"cache_control": marker}
    )
    sent = body([Message("user", [text])], {"cache_control": {"type": "ephemeral"}})
    assert sent["messages"][0]["content"] == [
        {"type": "text", "text": "Big document", "cache_control": marker}
    ]
    assert sent["cache_control"] == {"type": "ephemeral"}


# -- AN-6, AN-7 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [('{"a": 1}', {"a": 1}), ({"a": 1}, {"a": 1}), (None, {}), ("", {})],
)
def test_tool_use_input_is_an_object(args: Any, expected: dict[str, Any]) -> None:
    """AN-6: arguments become the tool_use input object."""
    sent = body([Message("user", ["q"]), Message("assistant", [call(args=args)])])
    assert sent["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": expected}
    ]


@pytest.mark.parametrize(
    "args", ["[1, 2]", "{not json", '"text"', '{"city": "Par', "[" * 5000]
)
def test_arguments_that_are_not_an_object_are_sent_as_an_empty_input(args: str) -> None:
    """AN-6, AN-25: arguments that are not a JSON object (partial JSON cut off by
    max_tokens, a list, a string, nesting too deep to parse) are sent as tool_use input
    {}: encoding never fails."""
    sent = body([Message("user", ["q"]), Message("assistant", [call(args=args)])])
    assert sent["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    ]


def test_function_call_outside_assistant_is_an_error() -> None:
    """AN-6: a function_call in a user message is a ValueError."""
    with pytest.raises(ValueError, match="assistant"):
        body([Message("user", [call()])])


@pytest.mark.parametrize(
    ("content", "payload", "is_error"),
    [
        (result(value="plain"), "plain", False),
        (result(value={"t": 21}), '{"t": 21}', False),
        (result(value=None), "", False),
        (
            Content.from_function_result(
                "toolu_1", None, exception="Error: city unknown"
            ),
            "Error: city unknown",
            True,
        ),
    ],
)
def test_tool_result_payload_and_is_error(
    content: Content, payload: str, is_error: bool
) -> None:
    """AN-7, PV-7: the payload of PV-7; is_error only for results with an exception."""
    sent = body(
        [
            Message("user", ["q"]),
            Message("assistant", [call()]),
            Message("tool", [content]),
        ]
    )
    block = sent["messages"][2]["content"][0]
    assert block["content"] == payload
    assert block.get("is_error", False) is is_error
    assert ("is_error" in block) is is_error


# -- AN-8 ---------------------------------------------------------------------------------------

_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_valid_ids_are_sent_unchanged() -> None:
    """AN-8: ids the API accepts pass through; wire_tool_ids lists none."""
    messages = [
        Message("assistant", [call("toolu_01A-b")]),
        Message("tool", [result("toolu_01A-b")]),
    ]
    assert wire_tool_ids(messages) == {}
    assert body(messages)["messages"][0]["content"][0]["id"] == "toolu_01A-b"


def test_rejected_ids_are_normalised_in_both_blocks_and_mapped() -> None:
    """AN-8: an id with characters outside the pattern is rewritten the same way in the
    tool_use and its tool_result; wire_tool_ids maps the wire id back to the
    original."""
    original = "functions.Bash:0"
    messages = [
        Message("user", ["q"]),
        Message("assistant", [call(original)]),
        Message("tool", [result(original)]),
    ]
    sent = body(messages)["messages"]
    wire = sent[1]["content"][0]["id"]
    assert _PATTERN.fullmatch(wire)
    assert wire.startswith("functions_Bash_0_")
    assert sent[2]["content"][0]["tool_use_id"] == wire
    assert wire_tool_ids(messages) == {wire: original}
    # the caller's message is untouched
    assert messages[1].contents[0].call_id == original


@given(st.text(min_size=1, max_size=200))
def test_wire_ids_always_match_the_pattern_and_are_deterministic(call_id: str) -> None:
    """AN-8: every id becomes one the API accepts, the same every time; valid ids are
    kept."""
    wire = wire_tool_id(call_id)
    assert _PATTERN.fullmatch(wire)
    assert wire_tool_id(call_id) == wire
    if _PATTERN.fullmatch(call_id):
        assert wire == call_id


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80))
def test_distinct_ids_stay_distinct(a: str, b: str) -> None:
    """AN-8: normalisation keeps distinct ids distinct (the hash suffix separates
    collisions)."""
    if a != b:
        assert wire_tool_id(a) != wire_tool_id(b)


def test_long_ids_are_cut() -> None:
    """AN-8: ids longer than 64 characters are normalised to at most 64."""
    long_id = "call_" + "x" * 100
    assert len(wire_tool_id(long_id)) <= 64
    assert wire_tool_id("a.b") != wire_tool_id("a|b")


# -- AN-9 ---------------------------------------------------------------------------------------


def test_thinking_blocks_are_replayed_unchanged() -> None:
    """AN-9: Anthropic thinking and redacted_thinking go back in place, with their
    signature."""
    thinking = Content.from_text_reasoning(
        "Let me think.",
        id="thinking_0",
        protected_data="sig==",
        additional_properties={"anthropic_type": "thinking"},
    )
    redacted = Content.from_text_reasoning(
        protected_data="opaque",
        additional_properties={"anthropic_type": "redacted_thinking"},
    )
    foreign = Content.from_text_reasoning("OpenAI reasoning summary")
    messages = [
        Message("user", ["q"]),
        Message("assistant", [thinking, redacted, foreign, call()]),
        Message("tool", [result()]),
    ]
    assert body(messages)["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "Let me think.", "signature": "sig=="},
        {"type": "redacted_thinking", "data": "opaque"},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "get_weather",
            "input": {"city": "Paris"},
        },
    ]


def test_unmodelled_blocks_are_replayed_unchanged() -> None:
    """AN-9: a content carrying an anthropic_block (e.g. server tool use) is sent as
    that block."""
    block = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "x"},
    }
    content = Content(
        "server_tool_use", additional_properties={"anthropic_block": block}
    )
    sent = body(
        [
            Message("user", ["q"]),
            Message("assistant", [content, Content.from_text("Found.")]),
        ]
    )
    assert sent["messages"][1]["content"] == [block, {"type": "text", "text": "Found."}]


# -- AN-10, AN-11, PV-5 -------------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return city


def test_tools_are_declared_with_input_schema() -> None:
    """AN-10: FunctionTool, plain dicts and wire declarations."""
    wire = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    custom = {"name": "raw", "input_schema": {"type": "object"}}
    sent = body(
        [Message("user", ["q"])],
        {"tools": [get_weather, {"name": "noop", "description": ""}, wire, custom]},
    )
    assert isinstance(get_weather, FunctionTool)
    assert sent["tools"][0] == {
        "name": "get_weather",
        "description": "Weather for a city.",
        "input_schema": get_weather.parameters,
    }
    assert sent["tools"][1] == {
        "name": "noop",
        "input_schema": {"type": "object", "properties": {}},
    }
    assert sent["tools"][2:] == [wire, custom]


def test_a_bad_tool_is_a_type_error() -> None:
    """AN-10: anything else is a TypeError naming the tool."""
    with pytest.raises(TypeError, match="42"):
        body([Message("user", ["q"])], {"tools": [42]})


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ({"mode": "required"}, {"type": "any"}),
        (
            {"mode": "required", "required_function_name": "get_weather"},
            {"type": "tool", "name": "get_weather"},
        ),
        ({"type": "tool", "name": "x"}, {"type": "tool", "name": "x"}),
    ],
)
def test_tool_choice_mapping(choice: Any, wire: dict[str, Any]) -> None:
    """AN-11: tool_choice strings and modes map to the API's objects."""
    assert (
        body([Message("user", ["q"])], {"tools": [get_weather], "tool_choice": choice})[
            "tool_choice"
        ]
        == wire
    )


@pytest.mark.parametrize(
    "choice", [{"mode": "auto", "allowed_tools": ["a"]}, "sometimes", 3]
)
def test_unsupported_tool_choice_is_an_error(choice: Any) -> None:
    """AN-11: allowed_tools and unknown choices are ValueErrors."""
    with pytest.raises(ValueError, match="tool_choice"):
        body([Message("user", ["q"])], {"tools": [get_weather], "tool_choice": choice})


def test_sequential_opt_out_is_disable_parallel_tool_use() -> None:
    """AN-11: parallel_tool_calls=False adds disable_parallel_tool_use (auto by default,
    not with none)."""
    base = {"tools": [get_weather], "parallel_tool_calls": False}
    assert body([Message("user", ["q"])], base)["tool_choice"] == {
        "type": "auto",
        "disable_parallel_tool_use": True,
    }
    assert body([Message("user", ["q"])], {**base, "tool_choice": "required"})[
        "tool_choice"
    ] == {
        "type": "any",
        "disable_parallel_tool_use": True,
    }
    assert body([Message("user", ["q"])], {**base, "tool_choice": "none"})[
        "tool_choice"
    ] == {"type": "none"}
    assert "tool_choice" not in body(
        [Message("user", ["q"])], {"tools": [get_weather], "parallel_tool_calls": True}
    )


def test_no_tools_means_no_tool_keys() -> None:
    """PV-5: without tools neither tools nor tool_choice is sent, whatever the options
    say."""
    sent = body(
        [Message("user", ["q"])],
        {"tools": [], "tool_choice": "required", "parallel_tool_calls": False},
    )
    assert "tools" not in sent
    assert "tool_choice" not in sent


# -- AN-12, PV-3 --------------------------------------------------------------------------------


def test_pass_through_and_renamed_options() -> None:
    """AN-12: known options pass through; stop becomes stop_sequences; user becomes
    metadata."""
    options = {
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "service_tier": "auto",
        "stop": "END",
        "user": "u-1",
    }
    sent = body([Message("user", ["q"])], options)
    for key in ("thinking", "service_tier"):
        assert sent[key] == options[key]
    assert sent["stop_sequences"] == ["END"]
    assert sent["metadata"] == {"user_id": "u-1"}
    both = body(
        [Message("user", ["q"])],
        {
            "stop": ["a"],
            "stop_sequences": ["b"],
            "metadata": {"user_id": "m"},
            "user": "u",
        },
    )
    assert both["stop_sequences"] == ["b"]
    assert both["metadata"] == {"user_id": "m"}


def test_sampling_options_depend_on_the_api_version() -> None:
    """AN-12: temperature, top_p and top_k pass through for API version 2023-06-01; from
    2026-10-21 on (the default) they are a ValueError that says what to do, never
    dropped."""
    sampling = {"temperature": 0.2, "top_p": 0.9, "top_k": 5}
    old = body([Message("user", ["q"])], sampling, api_version="2023-06-01")
    assert {k: old[k] for k in sampling} == sampling
    with pytest.raises(
        ValueError,
        match=r"temperature, top_p, top_k.*2026-10-21.*anthropic_version='2023-06-01'",
    ):
        body([Message("user", ["q"])], sampling)
    with pytest.raises(ValueError, match="top_k"):
        body([Message("user", ["q"])], {"top_k": 1}, api_version="2027-01-01")
    assert "temperature" not in body([Message("user", ["q"])], {"temperature": None})


def test_internal_and_unknown_options_never_reach_the_wire() -> None:
    """PV-3, PV-2: conversation_id, instructions, _private, None values and unknown keys
    are not sent; extra_body is merged last and wins, its None values remove a field;
    non-finite floats are refused (the body must be plain JSON)."""
    options = {
        "conversation_id": "c1",
        "_secret": 1,
        "seed": 7,
        "temperature": None,
        "frobnicate": True,
        "extra_body": {"temperature": 0.5, "container": "c"},
    }
    sent = body([Message("user", ["q"])], options)
    assert sent == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "q"}],
        "temperature": 0.5,
        "container": "c",
    }
    with pytest.raises(TypeError, match="extra_body"):
        body([Message("user", ["q"])], {"extra_body": 3})
    dropped = body(
        [Message("user", ["q"])],
        {"stop": "x", "extra_body": {"stop_sequences": None, "absent": None}},
    )
    assert "stop_sequences" not in dropped
    assert "absent" not in dropped
    with pytest.raises(TypeError, match="metadata"):
        body([Message("user", ["q"])], {"metadata": {"score": float("nan")}})


# -- PV-2 ---------------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    texts=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4),
    metadata=st.dictionaries(st.text(max_size=5), _json_values, max_size=3),
    extra=st.dictionaries(
        st.sampled_from(["container", "top_k", "x"]), _json_values, max_size=2
    ),
    stream=st.booleans(),
)
def test_body_is_plain_json_deterministic_and_inputs_are_untouched(
    texts: list[str], metadata: dict[str, Any], extra: dict[str, Any], stream: bool
) -> None:
    """PV-2: the body is plain JSON, equal for equal inputs, and shares nothing with
    them."""
    messages = [
        Message("user", [*texts]),
        Message("assistant", [call("a.b", args={"k": texts[0]})]),
        Message("tool", [result("a.b", {"r": texts[-1]})]),
    ]
    options = {
        "metadata": metadata,
        "extra_body": extra,
        "tools": [get_weather],
        "instructions": "I",
    }
    before = (
        copy.deepcopy([m.to_dict() for m in messages]),
        copy.deepcopy(metadata),
        copy.deepcopy(extra),
    )
    first = body(messages, options, stream=stream)
    assert json.loads(json.dumps(first)) == first
    assert body(messages, options, stream=stream) == first
    first["metadata"]["mutated"] = True
    first["messages"][1]["content"][0]["input"]["k"] = "changed"
    assert ([m.to_dict() for m in messages], metadata, extra) == before


# --------------------------------------------------------------------------------------------
# Structured output (AN-23)


def test_response_format_becomes_output_config_format() -> None:
    """AN-23, SO-4: a dataclass gives output_config.format with its strict schema;
    nothing else changes."""
    import dataclasses

    from minagent import ResponseFormat

    @dataclasses.dataclass
    class City:
        name: str
        population: int = 0

    from minagent_anthropic._request import output_schema

    sent = body([Message("user", ["x"])], {"response_format": City})
    derived = ResponseFormat.of(City).schema
    assert derived is not None
    assert sent["output_config"] == {
        "format": {"type": "json_schema", "schema": output_schema(derived)}
    }
    assert "response_format" not in sent
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    for value in (
        schema,
        {
            "type": "json_schema",
            "json_schema": {"name": "n", "schema": schema, "strict": True},
        },
    ):
        assert body([Message("user", ["x"])], {"response_format": value})[
            "output_config"
        ] == {
            "format": {
                "type": "json_schema",
                "schema": {**schema, "additionalProperties": False},
            }
        }


def test_response_format_merges_into_output_config() -> None:
    """AN-23: output_config passes through; the format is merged into it; a different
    one is an error."""
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    sent = body(
        [Message("user", ["x"])],
        {"output_config": {"effort": "high"}, "response_format": schema},
    )
    assert sent["output_config"] == {
        "effort": "high",
        "format": {"type": "json_schema", "schema": schema},
    }
    assert body([Message("user", ["x"])], {"output_config": {"effort": "low"}})[
        "output_config"
    ] == {"effort": "low"}
    same = {"format": {"type": "json_schema", "schema": schema}}
    assert (
        body(
            [Message("user", ["x"])], {"output_config": same, "response_format": schema}
        )["output_config"]
        == same
    )
    other = {"type": "object", "properties": {"a": {"type": "integer"}}}
    with pytest.raises(ValueError, match="disagree"):
        body(
            [Message("user", ["x"])], {"output_config": same, "response_format": other}
        )
    with pytest.raises(TypeError, match="output_config"):
        body([Message("user", ["x"])], {"output_config": "high"})


def test_response_format_json_and_text() -> None:
    """AN-23: "text" sends nothing; "json" is a ValueError saying to give a schema (no
    free-form JSON mode)."""
    assert "output_config" not in body(
        [Message("user", ["x"])], {"response_format": "text"}
    )
    with pytest.raises(ValueError, match=r"no free-form JSON mode.*give a schema"):
        body([Message("user", ["x"])], {"response_format": "json"})
    with pytest.raises(TypeError, match="unsupported response_format"):
        body([Message("user", ["x"])], {"response_format": 42})
