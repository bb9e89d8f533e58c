"""Merging updates into a response: `from_updates`, the `Fold` it is, the call chunks it
joins, the usage it sums and the fields it keeps (spec/types.md TY-10, TY-11, TY-14)."""

from __future__ import annotations

import contextlib
import copy
import json
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ContentError,
    Message,
)
from tests.types._strategies import (
    expected_usage,
    json_values,
    opt_text,
    plain_usage,
)

# --------------------------------------------------------------------------------------------
# TY-10 .. TY-11: from_updates


def test_from_updates_message_boundaries() -> None:
    """TY-10: a new message starts on the first update, a role change, or differing
    message ids."""
    updates = [
        ChatResponseUpdate(["a"]),  # no message yet: assistant
        ChatResponseUpdate(["b"], "assistant"),  # same role: continues
        # sets the id on the current message
        ChatResponseUpdate(["c"], message_id="m1"),
        ChatResponseUpdate(["d"], message_id="m1"),
        ChatResponseUpdate(["e"], message_id="m2"),  # differing ids: new message
        ChatResponseUpdate(["f"]),  # no role, no id: continues
        # role change
        ChatResponseUpdate([Content.from_function_result("c", 1)], "tool"),
        ChatResponseUpdate(["g"], "tool", author_name="fn"),
        ChatResponseUpdate(["h"], "assistant", author_name="bot", message_id="m3"),
    ]
    r = ChatResponse.from_updates(updates)
    assert r.messages == [
        Message("assistant", ["abcd"], message_id="m1"),
        Message("assistant", ["ef"], message_id="m2"),
        Message("tool", [Content.from_function_result("c", 1), "g"], author_name="fn"),
        Message("assistant", ["h"], author_name="bot", message_id="m3"),
    ]
    assert AgentResponse.from_updates(updates).messages == r.messages
    assert ChatResponse.from_updates([]) == ChatResponse()


def test_from_updates_merges_reasoning_by_id() -> None:
    """TY-10: adjacent text_reasoning with equal or missing ids concatenate; other
    adjacent kinds do not."""
    updates = [
        ChatResponseUpdate([Content.from_text_reasoning("a", id="r1")], "assistant"),
        ChatResponseUpdate([Content.from_text_reasoning("b")]),
        ChatResponseUpdate(
            [Content.from_text_reasoning("c", id="r1", protected_data="p")]
        ),
        ChatResponseUpdate([Content.from_text_reasoning("d", id="r2")]),
        ChatResponseUpdate(["x"]),
        ChatResponseUpdate([Content.from_text_reasoning("e", id="r2")]),
        ChatResponseUpdate(["y"]),
    ]
    assert ChatResponse.from_updates(updates).messages[0].contents == [
        Content.from_text_reasoning("abc", id="r1", protected_data="p"),
        Content.from_text_reasoning("d", id="r2"),
        Content.from_text("x"),
        Content.from_text_reasoning("e", id="r2"),
        Content.from_text("y"),
    ]


def test_from_updates_merges_calls() -> None:
    """TY-10: a call delta merges into the latest call with its call_id; no call_id
    continues the latest call; string arguments concatenate, dict arguments merge; first
    non-empty call_id, name, exception."""
    updates = [
        ChatResponseUpdate([Content.from_function_call("a", "f", '{"x"')], "assistant"),
        ChatResponseUpdate([Content.from_function_call("b", "g", {"k": 1})]),
        ChatResponseUpdate(
            [Content("function_call", call_id="a", arguments=": 1}", exception="late")]
        ),
        ChatResponseUpdate(
            [Content("function_call", arguments={"j": 2}, name="ignored")]
        ),
        ChatResponseUpdate(
            [Content.from_function_call("b", "", {"k": 3}, exception="first")]
        ),
        ChatResponseUpdate([Content("function_call", call_id="b", exception="second")]),
    ]
    merged = ChatResponse.from_updates(updates).messages[0].contents
    assert merged == [
        Content.from_function_call("a", "f", '{"x": 1}', exception="late"),
        Content.from_function_call("b", "g", {"k": 3, "j": 2}, exception="first"),
    ]


@st.composite
def splits(draw: st.DrawFn, whole: str) -> list[str]:
    """`whole` cut at random points (repeated cuts give empty chunks)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(whole)), max_size=6)))
    bounds = [0, *cuts, len(whole)]
    return [whole[a:b] for a, b in pairwise(bounds)]


@st.composite
def groups(draw: st.DrawFn, items: list[Any]) -> list[list[Any]]:
    """`items` in order, grouped into consecutive non-empty runs (the contents of one
    update each)."""
    out: list[list[Any]] = []
    for item in items:
        if not out or draw(st.booleans()):
            out.append([])
        out[-1].append(item)
    return out


PAIRS = st.sampled_from(
    [(ChatResponseUpdate, ChatResponse), (AgentResponseUpdate, AgentResponse)]
)


@settings(max_examples=100, deadline=None)
@given(
    data=st.data(), text=st.text(max_size=30), role_on_every=st.booleans(), pair=PAIRS
)
def test_any_split_of_a_text_merges_to_the_unsplit_response(
    data: st.DataObject, text: str, role_on_every: bool, pair: Any
) -> None:
    """TY-10, TY-6: any split of a text into updates merges to the same response as the
    unsplit text."""
    update_cls, response_cls = pair
    chunks = data.draw(splits(text))
    updates = [
        update_cls(
            [Content.from_text(c) for c in group],
            "assistant" if i == 0 or role_on_every else None,
        )
        for i, group in enumerate(data.draw(groups(chunks)))
    ]
    whole = response_cls.from_updates(
        [update_cls([Content.from_text(text)], "assistant")]
    )
    merged = response_cls.from_updates(updates)
    assert merged == whole
    assert merged.messages == [Message("assistant", [text])]
    assert merged.text == text


json_args = st.dictionaries(st.text(max_size=5), json_values, max_size=4)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), args=json_args, call_id_on_every=st.booleans(), pair=PAIRS)
def test_any_split_of_call_arguments_merges_to_the_whole_call(
    data: st.DataObject, args: dict[str, Any], call_id_on_every: bool, pair: Any
) -> None:
    """TY-10: a JSON arguments string split into deltas (call_id and name only on the
    first, or call_id on every delta) merges to the same response as the unsplit
    call."""
    update_cls, response_cls = pair
    whole_args = json.dumps(args)
    first, *rest = data.draw(splits(whole_args))
    deltas = [Content.from_function_call("call_1", "get_weather", first)] + [
        Content(
            "function_call",
            call_id="call_1" if call_id_on_every else None,
            arguments=chunk,
        )
        for chunk in rest
    ]
    updates = [
        update_cls(group, "assistant" if i == 0 else None)
        for i, group in enumerate(data.draw(groups(deltas)))
    ]
    whole_call = Content.from_function_call("call_1", "get_weather", whole_args)
    merged = response_cls.from_updates(updates)
    assert merged == response_cls.from_updates([update_cls([whole_call], "assistant")])
    assert merged.messages == [Message("assistant", [whole_call])]
    assert merged.messages[0].contents[0].parse_arguments() == args


@settings(max_examples=100, deadline=None)
@given(data=st.data(), args_a=json_args, args_b=json_args)
def test_interleaved_deltas_of_parallel_calls_merge_to_both_calls(
    data: st.DataObject, args_a: dict[str, Any], args_b: dict[str, Any]
) -> None:
    """TY-10: interleaved deltas of two calls, each carrying its call_id, merge to the
    two full calls."""

    def deltas(call_id: str, name: str, whole: str) -> list[Content]:
        first, *rest = data.draw(splits(whole))
        return [Content.from_function_call(call_id, name, first)] + [
            Content("function_call", call_id=call_id, arguments=chunk) for chunk in rest
        ]

    a, b = json.dumps(args_a), json.dumps(args_b)
    queues = {"a": deltas("call_a", "f", a), "b": deltas("call_b", "g", b)}
    order = data.draw(
        st.permutations(["a"] * len(queues["a"]) + ["b"] * len(queues["b"]))
    )
    stream = [queues[key].pop(0) for key in order]
    updates = [
        ChatResponseUpdate(group, "assistant") for group in data.draw(groups(stream))
    ]
    full = {
        "a": Content.from_function_call("call_a", "f", a),
        "b": Content.from_function_call("call_b", "g", b),
    }
    merged = ChatResponse.from_updates(updates)
    assert merged.messages == [
        Message("assistant", [full[order[0]], full["b" if order[0] == "a" else "a"]])
    ]


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(
        st.lists(
            st.text(max_size=4).map(Content.from_text)
            | plain_usage.map(Content.from_usage),
            max_size=3,
        ),
        max_size=6,
    ),
    pair=PAIRS,
)
def test_usage_contents_are_summed_and_removed(
    parts: list[list[Content]], pair: Any
) -> None:
    """TY-11, TY-12: usage contents leave the messages and their sum becomes
    usage_details."""
    update_cls, response_cls = pair
    updates = [update_cls(group) for group in parts]
    merged = response_cls.from_updates(updates)
    usages = [c.usage_details for group in parts for c in group if c.type == "usage"]
    assert merged.usage_details == expected_usage(usages)
    assert all(c.type != "usage" for m in merged.messages for c in m.contents)
    assert merged.text == "".join(
        c.text for group in parts for c in group if c.type == "text"
    )


def test_response_level_fields_take_the_last_non_none_value() -> None:
    """TY-11: response_id, conversation_id, model, created_at, finish_reason, agent_id:
    last non-None wins; additional_properties are dict-updated in order."""
    updates = [
        ChatResponseUpdate(
            ["a"],
            "assistant",
            response_id="r1",
            model="m1",
            additional_properties={"x": 1, "y": 1},
        ),
        ChatResponseUpdate(
            ["b"], conversation_id="c1", created_at="t1", additional_properties={"y": 2}
        ),
        ChatResponseUpdate(["c"], response_id="r2", finish_reason="length"),
        ChatResponseUpdate(
            ["d"], model=None, finish_reason="stop", additional_properties={"z": 3}
        ),
    ]
    r = ChatResponse.from_updates(updates)
    assert (
        r.response_id,
        r.conversation_id,
        r.model,
        r.created_at,
        r.finish_reason,
    ) == (
        "r2",
        "c1",
        "m1",
        "t1",
        "stop",
    )
    assert r.additional_properties == {"x": 1, "y": 2, "z": 3}
    agent_updates = [
        AgentResponseUpdate(["a"], agent_id="ag1", response_id="r1"),
        AgentResponseUpdate(["b"], agent_id="ag2"),
        AgentResponseUpdate(["c"], agent_id=None, created_at="t"),
    ]
    a = AgentResponse.from_updates(agent_updates)
    assert (a.agent_id, a.response_id, a.created_at, a.text) == (
        "ag2",
        "r1",
        "t",
        "abc",
    )


call_ids = st.none() | st.sampled_from(["c1", "c2"])


mergeable_contents = st.one_of(
    st.text(max_size=4).map(Content.from_text),
    st.builds(
        Content.from_text_reasoning,
        opt_text,
        id=st.none() | st.sampled_from(["r1", "r2"]),
    ),
    st.builds(
        lambda call_id, name, args, props: Content(
            "function_call",
            call_id=call_id,
            name=name,
            arguments=args,
            additional_properties=props,
        ),
        call_ids,
        st.none() | st.sampled_from(["f", "g"]),
        st.none() | st.text(max_size=4),
        st.dictionaries(st.sampled_from(["p", "q"]), st.integers(), max_size=1),
    ),
    st.builds(
        lambda call_id, args: Content("function_call", call_id=call_id, arguments=args),
        call_ids,
        st.dictionaries(st.sampled_from(["k", "j"]), st.integers(), max_size=2),
    ),
    plain_usage.map(Content.from_usage),
    st.builds(Content.from_function_result, st.sampled_from(["c1", "c2"]), json_values),
)


mergeable_updates = st.builds(
    lambda cls, cs, role, mid, props: cls(
        cs, role, message_id=mid, additional_properties=props
    ),
    st.sampled_from([ChatResponseUpdate, AgentResponseUpdate]),
    st.lists(mergeable_contents, max_size=4),
    st.none() | st.sampled_from(["assistant", "tool"]),
    st.none() | st.sampled_from(["m1", "m2"]),
    st.dictionaries(st.sampled_from(["a", "b"]), json_values, max_size=1),
)


@settings(max_examples=150, deadline=None)
@given(updates=st.lists(mergeable_updates, max_size=6))
def test_from_updates_does_not_mutate_the_updates(updates: list[Any]) -> None:
    """TY-11: from_updates never mutates the updates or their contents (deep
    comparison)."""
    before = copy.deepcopy(updates)
    dicts_before = [u.to_dict() for u in updates]
    for response_cls in (ChatResponse, AgentResponse):
        # str and dict arguments of one call cannot merge; the updates must stay intact
        # anyway
        with contextlib.suppress(ContentError):
            response_cls.from_updates(updates)
    assert updates == before
    assert [u.to_dict() for u in updates] == dicts_before
