"""The merge algorithm's corners (coverage, tests only): spec/types.md TY-10, ST-50."""

from __future__ import annotations

from minagent import ChatResponse, ChatResponseUpdate, Content, Message
from minagent._fold import PIECES, Fold


def call(call_id: str, name: str, arguments: object) -> Content:
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
        ChatResponseUpdate([call("c1", "f", {"a": 1})], role="assistant")
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
        ChatResponseUpdate([call("c1", "f", '{"a": 1}')], role="assistant"),
        ChatResponseUpdate([call("c1", "f", "")], role="assistant"),
    ]
    contents = ChatResponse.from_updates(updates).messages[0].contents
    assert [(c.call_id, c.name, c.arguments) for c in contents] == [
        ("c1", "f", '{"a": 1}')
    ]


def test_a_delta_continues_a_call_the_response_held_already() -> None:
    """TY-14, TY-10: a Fold over a response that already holds a call merges a delta of
    that call's id into it (the argument text concatenates) rather than starting a new
    call."""
    held = ChatResponse(messages=[Message("assistant", [call("c1", "f", '{"a": ')])])
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
