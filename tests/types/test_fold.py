"""Merging updates into a response: `from_updates`, the `Fold` it is, the call chunks it
joins, the usage it sums and the fields it keeps (spec/types.md TY-10, TY-11, TY-14)."""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ContentError,
    Message,
    Role,
    UsageDetails,
    tool,
)
from minagent._fold import PIECES, Fold
from minagent.testing import ScriptedChatClient, reply
from tests._support import modes
from tests._support.modes import run
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


def function_call(call_id: str, name: str, arguments: object) -> Content:
    return Content.from_function_call(call_id, name, arguments)  # type: ignore[arg-type]


def test_a_long_run_of_texts_with_properties_joins_in_order() -> None:
    """TY-10, ST-50: adjacent texts concatenate in order, however many (beyond the join
    threshold), also when each carries additional_properties (the slow path); the
    properties are kept."""
    n = PIECES * 2 + 3
    updates = [
        ChatResponseUpdate(
            [Content.from_text(str(i % 10), additional_properties={"k": i})],
            role="assistant",
        )
        for i in range(n)
    ]
    response = ChatResponse.from_updates(updates)
    (content,) = response.messages[0].contents
    assert content.text == "".join(str(i % 10) for i in range(n))
    assert "k" in content.additional_properties


def test_a_repeated_complete_dict_call_is_a_second_call() -> None:
    """TY-10 (LP-26): a delta with a call_id and a name, while the call of that id
    already has a name and whole (dict) arguments, starts a new call: two calls with one
    id stay two calls."""
    updates = [
        ChatResponseUpdate([function_call("c1", "f", {"a": 1})], role="assistant")
        for _ in range(2)
    ]
    contents = ChatResponse.from_updates(updates).messages[0].contents
    assert [(c.call_id, c.name, c.arguments) for c in contents] == [
        ("c1", "f", {"a": 1}),
        ("c1", "f", {"a": 1}),
    ]


def test_a_repeat_of_a_complete_call_without_arguments_is_dropped() -> None:
    """TY-10: a delta repeating a complete call's id and name but bringing no argument
    text adds no call."""
    updates = [
        ChatResponseUpdate([function_call("c1", "f", '{"a": 1}')], role="assistant"),
        ChatResponseUpdate([function_call("c1", "f", "")], role="assistant"),
    ]
    contents = ChatResponse.from_updates(updates).messages[0].contents
    assert [(c.call_id, c.name, c.arguments) for c in contents] == [
        ("c1", "f", '{"a": 1}')
    ]


def test_a_delta_continues_a_call_the_response_held_already() -> None:
    """TY-14, TY-10: a Fold over a response that already holds a call merges a delta of
    that call's id into it (the argument text concatenates) rather than starting a new
    call."""
    held = ChatResponse(
        messages=[Message("assistant", [function_call("c1", "f", '{"a": ')])]
    )
    fold = Fold(held)
    fold.add(
        ChatResponseUpdate(
            [Content.from_function_call("c1", "", "1}")], role="assistant"
        )
    )
    contents = fold.result().messages[0].contents
    assert [(c.call_id, c.name, c.arguments) for c in contents] == [
        ("c1", "f", '{"a": 1}')
    ]


def test_coalescing_keeps_joined_texts_and_their_properties() -> None:
    """TY-10: adjacent texts (also across a usage content) join; on a clash the first
    one's properties win."""
    from minagent import UsageDetails

    updates = [
        ChatResponseUpdate(
            [Content("text", text="a", additional_properties={"k": 1})], "assistant"
        ),
        ChatResponseUpdate([Content.from_usage(UsageDetails(1, 1))]),
        ChatResponseUpdate(
            [Content("text", text="b", additional_properties={"k": 2})], "assistant"
        ),
    ]
    merged = ChatResponse.from_updates(updates).messages[0].contents
    assert [(c.text, c.additional_properties) for c in merged] == [("ab", {"k": 1})]


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await modes.run(target, *args, stream=stream, **kwargs)
    return await modes.get_response(target, *args, stream=stream, **kwargs)


calls_made = []


@tool
def get_weather(location):
    """Get the weather for a location."""
    calls_made.append(location)
    return f"Sunny in {location}."


def results(response):
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


def upstream_chunks(call_id, name, arguments, cuts):
    """A call streamed as upstream's tests build it: call_id and name repeated on every
    chunk."""
    points = sorted({0, *cuts, len(arguments)})
    return [
        ChatResponseUpdate(
            [Content.from_function_call(call_id, name, arguments[a:b])], "assistant"
        )
        for a, b in itertools.pairwise(points)
    ]


ARGUMENTS = json.dumps({"location": 'Paris, "the city" {of} [light] \\ ok'})


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=len(ARGUMENTS) - 1), max_size=12)
)
def test_repeated_id_and_name_chunks_fold_into_one_call(cuts):
    """TY-10: chunks that repeat call_id and name, the arguments split anywhere, fold
    into one call."""
    folded = ChatResponse.from_updates(
        upstream_chunks("call_1", "get_weather", ARGUMENTS, cuts)
    )
    found = [c for c in folded.messages[0].contents if c.type == "function_call"]
    assert len(found) == 1
    assert found[0].call_id == "call_1"
    assert found[0].name == "get_weather"
    assert found[0].parse_arguments() == {
        "location": 'Paris, "the city" {of} [light] \\ ok'
    }


async def test_upstream_style_streamed_call_runs(stream):
    """TY-10, LP-26: a call streamed with repeated id and name runs once, in both
    modes."""
    calls_made.clear()
    chunks = upstream_chunks(
        "call_1", "get_weather", json.dumps({"location": "Paris"}), [1, 5, 9, 14]
    )
    client = ScriptedChatClient([chunks, reply("It is sunny.")])
    response = await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather?", stream=stream
    )
    assert calls_made == ["Paris"]
    assert [r.result for r in results(response)] == ["Sunny in Paris."]
    assert response.text == "It is sunny."


async def test_two_separate_calls_sharing_an_id_stay_two(stream):
    """TY-10, LP-26: two complete calls with one id are two calls; the second is renamed
    and runs too."""
    calls_made.clear()
    first = upstream_chunks(
        "call_1", "get_weather", json.dumps({"location": "Paris"}), [3]
    )
    second = upstream_chunks(
        "call_1", "get_weather", json.dumps({"location": "Rome"}), [4]
    )
    client = ScriptedChatClient([first + second, reply("Both sunny.")])
    response = await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather?", stream=stream
    )
    assert sorted(calls_made) == ["Paris", "Rome"]
    assert sorted(r.call_id for r in results(response)) == ["call_1", "call_1~2"]


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


_chunk = st.builds(
    lambda text, role, message_id, props, response_id, usage: ChatResponseUpdate(
        [Content.from_text(text, additional_properties=props)]
        if usage is None
        else [Content.from_usage(UsageDetails(usage, 1))],
        role,
        message_id=message_id,
        response_id=response_id,
    ),
    st.text(max_size=3),
    st.sampled_from([None, "assistant", "assistant", "tool"]),
    st.sampled_from([None, None, "m1", "m2"]),
    st.sampled_from([{}, {}, {"k": 1}]),
    st.sampled_from([None, None, "r1"]),
    st.sampled_from([None, None, None, 3]),
)


@settings(max_examples=200, deadline=None)
@given(updates=st.lists(_chunk, max_size=12))
def test_the_folds_quick_step_merges_as_the_full_step(
    updates: list[ChatResponseUpdate],
) -> None:
    """TY-14: folding chunk by chunk (with the quick step for one more text of the run)
    gives the same response as the full merge step alone, for any sequence of chunks."""
    from minagent._fold import Fold

    quick, full = Fold(ChatResponse()), Fold(ChatResponse())
    for update in updates:
        quick.add(update)
        full._add(update)
    assert quick.result() == full.result()


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


class ChunkClient(BaseChatClient):
    """A provider written as upstream's samples write one: chunks spelled with
    keywords."""

    def __init__(self, words):
        super().__init__()
        self.words = words

    async def _inner_get_response(self, *, messages, options, **kwargs):
        return ChatResponse(
            messages=[Message(role="assistant", text="".join(self.words))], model="m1"
        )

    async def _inner_get_streaming_response(self, *, messages, options, **kwargs):
        for i, word in enumerate(self.words):
            last = i == len(self.words) - 1
            yield ChatResponseUpdate(
                contents=[Content.from_text(text=word)],
                role=Role.ASSISTANT if i == 0 else None,
                model="m1" if last else None,
                finish_reason="stop" if last else None,
            )


async def test_upstream_spelled_chunks_fold_into_the_final_response(stream):
    """TY-14, TY-11: chunks spelled with keywords (`contents=`, `Role.ASSISTANT`, the
    model and finish reason on the last chunk) give the same final response in both
    modes; the chunks are not changed by the run."""
    words = ["The ", "weather ", "is ", "sunny."]
    client = ChunkClient(words)
    response = await run(Agent(client, name="Helper"), "weather?", stream=stream)
    assert response.text == "The weather is sunny."
    assert [m.author_name for m in response.messages] == ["Helper"]
    chat = response.raw_representation
    assert chat.model == "m1"
    if stream:
        assert chat.finish_reason == "stop"
        kept = ChatResponseUpdate(
            contents=[Content.from_text(text="x")], role="assistant"
        )
        agent_update = AgentResponseUpdate.from_chat_update(
            kept, agent_id="a", author_name="Helper"
        )
        assert agent_update.contents == kept.contents
        assert agent_update.contents is not kept.contents
        assert kept.author_name is None
