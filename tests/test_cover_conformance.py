"""The conformance kit's helpers on inputs the scenarios do not give (coverage, tests
only).

Rules: CF-1 (the adapter maps minagent's objects to the neutral forms and the operations
a middleware scenario performs onto one context of any layer).
"""

from __future__ import annotations

import pytest

from minagent import ChatContext, Content, FunctionInvocationContext, Message
from minagent.conformance.flow_loop import mask, without_flags, without_request_ids
from minagent.conformance.flow_minagent import Ops, neutral_content


@pytest.mark.parametrize("helper", [without_request_ids, without_flags, mask])
def test_normalisers_leave_what_is_not_a_message_list_alone(helper: object) -> None:
    """CF-1: the loop scenarios' normalisers change only a list of neutral messages; any
    other observed value (None, an error text) is compared as it is."""
    assert helper(None) is None  # type: ignore[operator]
    assert helper("boom") == "boom"  # type: ignore[operator]


def test_neutral_content_of_another_kind_is_its_type() -> None:
    """CF-1: a content kind the neutral form does not model is compared by its type
    alone."""
    assert neutral_content(
        Content.from_uri("https://example.com/a.png", "image/png")
    ) == {"type": "uri"}


def test_ops_refuse_operations_the_layer_does_not_have() -> None:
    """CF-1: a function middleware has no options and adds no messages; only a function
    middleware has arguments, and only one running in the loop has the transcript."""

    def f() -> None:
        pass

    function_ops = Ops(FunctionInvocationContext(f, {}))
    with pytest.raises(TypeError, match="no options"):
        function_ops.set_option("temperature", 0)
    with pytest.raises(TypeError, match="adds messages with append"):
        function_ops.add_message("hi")
    with pytest.raises(TypeError, match="transcript"):
        function_ops.append("hi")  # outside the loop: no transcript
    chat_ops = Ops(ChatContext(None, [Message("user", "q")]))
    with pytest.raises(TypeError, match="only a function middleware has arguments"):
        chat_ops.set_arguments({"a": 1})
    chat_ops.add_message("more")
    assert [m.text for m in chat_ops.context.messages] == ["q", "more"]


def test_result_text_is_compact_sorted_json_for_data() -> None:
    """CF-1: a tool result compares as text: None is empty, a str as it is, data as
    compact sorted JSON."""
    from minagent.conformance.flow import result_text

    assert result_text(None) == ""
    assert result_text("ok") == "ok"
    assert result_text({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_jsonable_turns_any_observed_value_into_json_data() -> None:
    """CF-1: what a scenario observes is reported as JSON data: containers recursively,
    other objects by their repr."""
    from minagent.conformance.flow_run import _jsonable

    class Thing:
        def __repr__(self) -> str:
            return "<thing>"

    assert _jsonable({1: (Thing(), None)}) == {"1": ["<thing>", None]}
