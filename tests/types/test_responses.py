"""Responses and updates: their fields, user input requests and usage details
(spec/types.md TY-9, TY-12)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ContentError,
    Message,
    UsageDetails,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests.types._strategies import (
    COUNT_FIELDS,
    expected_usage,
    plain_usage,
)

# --------------------------------------------------------------------------------------------
# TY-9: responses and updates


def test_chat_response_constructor_fields() -> None:
    """TY-9: ChatResponse(messages=[...]) with keyword-only response fields."""
    usage = UsageDetails(total_token_count=3)
    r = ChatResponse(
        messages=[Message("assistant", "x")],
        response_id="r",
        conversation_id="c",
        model="m",
        created_at="t",
        finish_reason="stop",
        usage_details=usage,
        additional_properties={"k": 1},
    )
    assert r.messages == [Message("assistant", "x")]
    assert (
        r.response_id,
        r.conversation_id,
        r.model,
        r.created_at,
        r.finish_reason,
    ) == (
        "r",
        "c",
        "m",
        "t",
        "stop",
    )
    assert r.usage_details is usage
    assert r.additional_properties == {"k": 1}
    assert ChatResponse().messages == []
    assert ChatResponse(Message("assistant", "x")).messages == [
        Message("assistant", "x")
    ]
    with pytest.raises(TypeError):
        ChatResponse([], "r")  # type: ignore[misc]
    with pytest.raises(ContentError):
        ChatResponse(["not a message"])  # type: ignore[list-item]


def test_agent_response_has_agent_id_instead_of_conversation_and_model() -> None:
    """TY-9: AgentResponse has agent_id and no conversation_id or model."""
    r = AgentResponse(
        messages=[Message("assistant", "x")], agent_id="a", response_id="r"
    )
    assert (r.agent_id, r.response_id) == ("a", "r")
    for name in ("conversation_id", "model"):
        with pytest.raises(TypeError):
            AgentResponse(**{name: "x"})


def test_update_constructors() -> None:
    """TY-9: ChatResponseUpdate(contents, role, *, ...) and AgentResponseUpdate with
    agent_id."""
    u = ChatResponseUpdate(
        contents=[Content.from_text("x")],
        role="assistant",
        author_name="bot",
        response_id="r",
        message_id="m",
        conversation_id="c",
        model="gpt",
        created_at="t",
        finish_reason="stop",
        additional_properties={"k": 1},
    )
    assert (u.contents, u.role, u.author_name, u.message_id, u.model) == (
        [Content.from_text("x")],
        "assistant",
        "bot",
        "m",
        "gpt",
    )
    assert (u.response_id, u.conversation_id, u.created_at, u.finish_reason) == (
        "r",
        "c",
        "t",
        "stop",
    )
    a = AgentResponseUpdate(["x"], "assistant", agent_id="ag", message_id="m")
    assert (a.contents, a.role, a.agent_id, a.message_id) == (
        [Content.from_text("x")],
        "assistant",
        "ag",
        "m",
    )
    assert ChatResponseUpdate().contents == []
    assert ChatResponseUpdate().role is None
    with pytest.raises(TypeError):
        ChatResponseUpdate([], "assistant", "bot")  # type: ignore[misc]
    with pytest.raises(TypeError):
        AgentResponseUpdate(model="m")  # type: ignore[call-arg]


def test_user_input_requests_lists_flagged_contents_in_order() -> None:
    """TY-9: user_input_requests is every content flagged user_input_request, in
    order."""
    c1 = Content.from_function_call("c1", "a")
    c2 = Content.from_function_call("c2", "b")
    r1 = Content.from_function_approval_request("r1", c1)
    r2 = Content.from_function_approval_request("r2", c2)
    custom = Content("hologram", user_input_request=True)
    messages = [
        Message("assistant", ["x", r1, c1]),
        Message("assistant", [Content.from_function_approval_response(True, "r0", c2)]),
        Message("assistant", [custom, r2]),
    ]
    assert ChatResponse(messages).user_input_requests == [r1, custom, r2]
    assert AgentResponse(messages).user_input_requests == [r1, custom, r2]
    assert ChatResponse([Message("assistant", "x")]).user_input_requests == []


# --------------------------------------------------------------------------------------------
# TY-12: UsageDetails


def test_usage_details_fields_and_defaults() -> None:
    """TY-12: six optional counts and additional_counts; the empty usage is falsy."""
    u = UsageDetails()
    assert all(getattr(u, name) is None for name in COUNT_FIELDS)
    assert u.additional_counts == {}
    assert not u
    assert UsageDetails(input_token_count=0)
    assert UsageDetails(reasoning_output_token_count=1)
    assert UsageDetails(additional_counts={"images": 1})


def test_usage_details_addition() -> None:
    """TY-12: a + b sums field by field (None + n is n, None + None is None); additional
    counts by key."""
    a = UsageDetails(1, None, 3, None, 5, None, additional_counts={"x": 1, "y": 2})
    b = UsageDetails(10, 20, None, None, 50, 60, additional_counts={"y": 3, "z": 4})
    total = a + b
    assert total == UsageDetails(
        11, 20, 3, None, 55, 60, additional_counts={"x": 1, "y": 5, "z": 4}
    )
    # the operands are unchanged
    assert a == UsageDetails(
        1, None, 3, None, 5, None, additional_counts={"x": 1, "y": 2}
    )
    assert b.additional_counts == {"y": 3, "z": 4}
    assert a + None == a
    assert None + a == a
    assert (a + None) is not a
    assert UsageDetails() + UsageDetails() == UsageDetails()
    assert not (UsageDetails() + UsageDetails())


@settings(max_examples=100, deadline=None)
@given(usages=st.lists(plain_usage, min_size=1, max_size=4))
def test_usage_sum_matches_field_by_field_arithmetic(
    usages: list[UsageDetails],
) -> None:
    """TY-12: summing with + equals the independently computed field-by-field sum."""
    total = usages[0]
    for u in usages[1:]:
        total = total + u
    assert total == expected_usage(usages)
    assert bool(total) == any(bool(u) for u in usages)


def test_as_updates_round_trips_through_from_updates() -> None:
    """TY-9, TY-10: as_updates is what a stream of the response carries; merging it
    gives the response back."""
    from minagent import ChatResponse, UsageDetails

    response = ChatResponse(
        [
            Message(
                "assistant",
                [
                    Content.from_text("hi"),
                    Content.from_function_call("c1", "f", '{"a": 1}'),
                ],
            ),
            Message("tool", [Content.from_function_result("c1", 2)]),
            Message("assistant", ["done"], author_name="bot"),
        ],
        response_id="r1",
        conversation_id="conv",
        model="m",
        created_at="2026-01-01T00:00:00Z",
        finish_reason="stop",
        usage_details=UsageDetails(input_token_count=3, output_token_count=4),
        additional_properties={"k": "v"},
    )
    updates = response.as_updates()
    assert [u.role for u in updates] == ["assistant", "tool", "assistant", None]
    assert [u.finish_reason for u in updates] == [None, None, "stop", None]
    assert updates[-1].contents == [
        Content.from_usage(UsageDetails(input_token_count=3, output_token_count=4))
    ]
    assert ChatResponse.from_updates(updates) == response


def test_from_chat_update_equals_the_constructed_update() -> None:
    """TY-9: AgentResponseUpdate.from_chat_update fills every field as the constructor
    would."""
    from dataclasses import fields

    from minagent import AgentResponseUpdate, ChatResponseUpdate

    chat = ChatResponseUpdate(
        [Content.from_text("x")],
        "assistant",
        response_id="r",
        message_id="m",
        conversation_id="c",
        model="gpt",
        created_at="t",
        finish_reason="stop",
        additional_properties={"k": 1},
        extra={"future": True},
    )
    fast = AgentResponseUpdate.from_chat_update(chat, agent_id="a", author_name="bot")
    slow = AgentResponseUpdate(
        [Content.from_text("x")],
        "assistant",
        author_name="bot",
        response_id="r",
        message_id="m",
        agent_id="a",
        created_at="t",
        finish_reason="stop",
        additional_properties={"k": 1},
        extra={"future": True},
    )
    assert fast == slow
    assert set(vars(fast)) == {f.name for f in fields(AgentResponseUpdate)}
    assert fast.raw_representation is chat


def test_response_messages_take_none_a_tuple_and_refuse_other_items() -> None:
    """TY-9: a response's messages are a list of Message: None is none, a tuple becomes
    a list, and an item that is not a Message is a ContentError."""
    assert ChatResponse(messages=None).messages == []
    first = Message("user", "a")
    response = ChatResponse(messages=(first,))
    assert response.messages == [first]
    assert isinstance(response.messages, list)
    with pytest.raises(ContentError, match="must be a list of Message"):
        ChatResponse(messages=[first, "x"])  # type: ignore[list-item]


async def test_updates_list_their_user_input_requests(stream):
    """TY-9: a streaming caller collects approval requests from the updates."""

    @tool(approval_mode="always_require")
    def pay(amount):
        """Pay."""
        return "paid"

    client = ScriptedChatClient([reply(call("pay", {"amount": 3}, call_id="p1"))])
    agent = Agent(client, tools=[pay])
    stream_ = agent.run("pay 3", stream=True)
    requests = [
        r for update in [u async for u in stream_] for r in update.user_input_requests
    ]
    assert [r.function_call.call_id for r in requests] == ["p1"]
    assert (await stream_.get_final_response()).user_input_requests == requests


@given(
    counts=st.dictionaries(
        st.sampled_from(
            [
                "input_token_count",
                "output_token_count",
                "total_token_count",
                "tool_calls",
            ]
        ),
        st.integers(0, 10**6),
    )
)
def test_usage_details_from_one_mapping_or_pairs_as_dict_takes_them(
    counts: dict[str, int],
) -> None:
    """TY-12: one mapping or iterable of pairs alone builds the usage dict() would
    (upstream's TypedDict form): the same counts as by name, never the mapping taken as
    the first count; so `dataclasses.asdict` of a usage content keeps its counts."""
    by_name = UsageDetails(**counts)
    assert UsageDetails(counts) == by_name
    assert UsageDetails(list(counts.items())) == by_name
    assert UsageDetails(counts).input_token_count == counts.get("input_token_count")
    usage = Content.from_usage(by_name)
    assert dataclasses.asdict(usage)["usage_details"] == dict(by_name)


def test_usage_sum_skips_none_and_refuses_non_mappings() -> None:
    """TY-12: a + b sums field by field, a None on the right keeps the left; a
    non-mapping is not addable."""
    a = UsageDetails(input_token_count=3)
    s = a + {"input_token_count": None, "output_token_count": 2}
    assert s.input_token_count == 3
    assert s.output_token_count == 2
    with pytest.raises(TypeError):
        a + 5  # type: ignore[operator]


def test_usage_count_properties_set_and_clear() -> None:
    """TY-12: the named counts are int or None; setting None removes the count."""
    u = UsageDetails()
    assert not u
    u.input_token_count = 5
    assert u["input_token_count"] == 5
    assert u
    u.input_token_count = None
    assert "input_token_count" not in u
    assert u.input_token_count is None
