"""Response and tool-call transcript corners (coverage, tests only).

Rules: SO-9 (structured value), TY-9 (response messages), LP-15 (a call's view of the
transcript).
"""

from __future__ import annotations

import dataclasses

import pytest

from minagent import ChatResponse, Content, ContentError, Message
from minagent._calls import _CallView


@dataclasses.dataclass
class Answer:
    a: int


def test_value_reads_the_last_assistant_message_with_text() -> None:
    """SO-9: value parses the last assistant message with non-empty text: a later tool
    message, and a later assistant message with only a call, are skipped."""
    messages = [
        Message("assistant", '{"a": 1}'),
        Message("assistant", [Content.from_function_call("c", "f", "{}")]),
        Message("tool", [Content.from_function_result("c", "x")]),
    ]
    response = ChatResponse(messages=messages, response_format=Answer)
    assert response.value == Answer(1)
    assert response.try_value == Answer(1)


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


def test_a_calls_view_inserts_into_the_transcript_or_its_own_part() -> None:
    """LP-15: a tool call's messages view reads the transcript then what the call added;
    an insert before the end of the transcript goes into it, a later one (negative
    indexes counted from the end) stays with the call."""
    base = [Message("user", "0"), Message("assistant", "1")]
    view = _CallView(base)
    view.append(Message("tool", "2"))
    assert [m.text for m in view] == ["0", "1", "2"]
    # the append stays with the call
    assert base == [Message("user", "0"), Message("assistant", "1")]
    # before the call's own message: still the call's part
    view.insert(-1, Message("tool", "x"))
    assert [m.text for m in view.added] == ["x", "2"]
    # clamped to the start: into the transcript
    view.insert(-10, Message("system", "s"))
    assert [m.text for m in base] == ["s", "0", "1"]
    view.insert(1, Message("user", "y"))
    assert [m.text for m in view] == ["s", "y", "0", "1", "x", "2"]
