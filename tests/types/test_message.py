"""Messages: what a message takes, its text, and normalising a run's input (spec/types.md
TY-5 .. TY-7)."""

from __future__ import annotations

from typing import Any

import pytest

from minagent import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ContentError,
    Message,
    Role,
    SerializationError,
    normalize_messages,
)
from minagent.testing import ScriptedChatClient
from tests._support.modes import run

# --------------------------------------------------------------------------------------------
# TY-5 .. TY-7: Message, .text, normalize_messages


def test_message_accepts_content_str_and_dict_singly_or_in_a_sequence() -> None:
    """TY-5: contents may be Content, str or a content dict, singly or in a sequence;
    None dropped."""
    hi = Content.from_text("hi")
    as_dict = {"type": "text", "text": "hi"}
    for contents in (
        hi,
        "hi",
        as_dict,
        [hi],
        ["hi"],
        [as_dict],
        ("hi",),
        [None, "hi", None],
    ):
        m = Message("user", contents)
        assert m.contents == [hi], contents
    m = Message(
        "assistant",
        ["a", Content.from_function_call("c", "f"), {"type": "error", "message": "m"}],
    )
    assert [c.type for c in m.contents] == ["text", "function_call", "error"]
    assert Message("user").contents == []
    assert Message("user", None).contents == []
    assert Message("user", []).contents == []


def test_message_keyword_fields() -> None:
    """TY-5: author_name, message_id and additional_properties are keyword-only
    fields."""
    m = Message(
        "assistant",
        "x",
        author_name="bot",
        message_id="m1",
        additional_properties={"k": 1},
    )
    assert (m.role, m.author_name, m.message_id, m.additional_properties) == (
        "assistant",
        "bot",
        "m1",
        {"k": 1},
    )
    with pytest.raises(TypeError):
        Message("assistant", "x", "bot")  # type: ignore[misc]


@pytest.mark.parametrize("role", ["", None, 3, b"user"])
def test_message_role_must_be_a_non_empty_str(role: Any) -> None:
    """TY-5: a role that is not a non-empty str is a ContentError."""
    with pytest.raises(ContentError, match="role"):
        Message(role, "x")


@pytest.mark.parametrize(
    ("contents", "index"),
    [
        (["ok", 3], "contents[1]"),
        ([None, "ok", object()], "contents[2]"),
        ([["nested"]], "contents[0]"),
    ],
)
def test_message_rejects_other_items_naming_the_index(
    contents: Any, index: str
) -> None:
    """TY-5: a content item that is not Content, str or dict is a ContentError naming
    its index."""
    with pytest.raises(ContentError) as info:
        Message("user", contents)
    assert index in str(info.value)


@pytest.mark.parametrize("contents", [3, 2.5, object()])
def test_message_rejects_a_single_value_of_another_kind(contents: Any) -> None:
    """TY-5: a single contents value that is not Content, str, dict or a sequence is a
    ContentError."""
    with pytest.raises(ContentError, match="contents"):
        Message("user", contents)


def test_message_with_a_malformed_content_dict_is_an_error() -> None:
    """TY-5: a content dict goes through Content.from_dict, so a malformed one is
    rejected."""
    with pytest.raises(SerializationError, match=r"contents\[0\]\.text"):
        Message("user", [{"type": "text", "text": 5}])


def test_text_of_message_and_updates_concatenates_without_separator() -> None:
    """TY-6: Message.text, ChatResponseUpdate.text, AgentResponseUpdate.text join text
    contents with no separator."""
    parts = [
        Content.from_text("Hel"),
        Content.from_function_call("c", "f"),
        Content.from_text("lo "),
        Content.from_text_reasoning("ignored"),
        Content.from_text(" world\n"),
    ]
    assert Message("assistant", parts).text == "Hello  world\n"
    assert ChatResponseUpdate(parts).text == "Hello  world\n"
    assert AgentResponseUpdate(parts).text == "Hello  world\n"
    no_text = [Content.from_function_call("c", "f")]
    assert Message("assistant", no_text).text == ""
    assert ChatResponseUpdate(no_text).text == ""
    assert AgentResponseUpdate([]).text == ""


def test_text_of_responses_joins_messages_with_newline() -> None:
    """TY-6: ChatResponse.text joins the .text of messages that have text with "\\n";
    AgentResponse.text concatenates them with no separator (upstream's rule)."""
    messages = [
        Message("assistant", [" first ", "part"]),
        Message("assistant", [Content.from_function_call("c", "f")]),
        Message("tool", [Content.from_function_result("c", 1)]),
        Message("assistant", ["second  "]),
    ]
    assert ChatResponse(messages).text == " first part\nsecond  "
    # no separator, as upstream
    assert AgentResponse(messages).text == " first partsecond  "
    assert ChatResponse([]).text == ""
    assert AgentResponse([Message("assistant", [])]).text == ""


def test_text_of_a_streamed_message_reads_the_same_as_merged() -> None:
    """TY-6: the updates' texts concatenated equal the merged message's text."""
    updates = [
        ChatResponseUpdate([t], "assistant") for t in ["Hel", "lo", " ", "there"]
    ]
    assert (
        "".join(u.text for u in updates)
        == ChatResponse.from_updates(updates).text
        == "Hello there"
    )


async def test_print_response_prints_the_text(stream, capsys):
    """TY-6: print(response) and f"{response}" print the answer, as upstream samples
    expect."""
    agent = ScriptedChatClient(["Hello there."]).as_agent(
        name="greeter", instructions="Be nice."
    )
    response = await run(agent, "hi", stream=stream)
    print(response)
    print(f"Agent: {response}")
    assert capsys.readouterr().out == "Hello there.\nAgent: Hello there.\n"
    assert str(response.messages[0]) == "Hello there."
    assert str(ChatResponse([Message("assistant", ["a"])])) == "a"
    assert str(ChatResponseUpdate(["b"], "assistant")) == "b"
    assert str(AgentResponseUpdate(["c"], "assistant")) == "c"


def test_agent_response_text_has_no_separator():
    """TY-6: AgentResponse.text concatenates the messages' texts (upstream's rule)."""
    response = AgentResponse(
        [Message("assistant", ["Sunny."]), Message("assistant", [" Agent: OK"])]
    )
    assert response.text == "Sunny. Agent: OK"


def test_normalize_messages_none_str_content_message() -> None:
    """TY-7: None -> [], a str or Content -> one user message, a Message -> itself."""
    assert normalize_messages(None) == []
    assert normalize_messages("hi") == [Message("user", ["hi"])]
    c = Content.from_data(b"x", "image/png")
    assert normalize_messages(c) == [Message("user", [c])]
    m = Message("system", "be brief")
    out = normalize_messages(m)
    assert out == [m]
    assert out[0] is m


def test_normalize_messages_sequence_keeps_order() -> None:
    """TY-7: each item of a sequence is normalised in order; a str or Content becomes
    its own user message."""
    m = Message("assistant", "a")
    c = Content.from_text("c")
    out = normalize_messages(["one", m, c, "two"])
    assert out == [
        Message("user", "one"),
        m,
        Message("user", [c]),
        Message("user", "two"),
    ]
    assert out[1] is m
    assert normalize_messages([]) == []
    assert normalize_messages(("x",)) == [Message("user", "x")]


@pytest.mark.parametrize(
    ("value", "says"), [(3, "int"), ({"role": "user"}, "dict"), (b"raw", "bytes")]
)
def test_normalize_messages_rejects_other_types(value: Any, says: str) -> None:
    """TY-7: anything else is a ContentError naming the type."""
    with pytest.raises(ContentError, match=says):
        normalize_messages(value)


def test_normalize_messages_names_the_bad_index() -> None:
    """TY-7: an item of the wrong type is a ContentError naming the type and index."""
    with pytest.raises(ContentError, match=r"messages\[2\].*dict"):
        normalize_messages(["a", Message("user", "b"), {"role": "user"}])
    with pytest.raises(ContentError, match=r"messages\[0\].*NoneType"):
        normalize_messages([None])


def test_with_contents_copies_the_metadata() -> None:
    """TY-5: with_contents gives a new message with the same role and metadata; the
    original stays."""
    original = Message(
        "assistant",
        ["a"],
        author_name="bot",
        message_id="m1",
        additional_properties={"k": 1},
    )
    copy = original.with_contents([Content.from_text("b")])
    assert (
        copy.role,
        copy.author_name,
        copy.message_id,
        copy.additional_properties,
    ) == (
        "assistant",
        "bot",
        "m1",
        {"k": 1},
    )
    assert copy.text == "b"
    assert original.text == "a"
    assert copy.additional_properties is not original.additional_properties


def test_message_text_must_be_a_str() -> None:
    """TY-5: Message(role, text=...) takes a str; anything else is a ContentError naming
    the type."""
    with pytest.raises(ContentError, match="must be a str, got int"):
        Message("user", text=5)  # type: ignore[arg-type]


def test_message_keeps_a_tuple_of_contents_as_a_new_list() -> None:
    """TY-5: contents given as a sequence of Content become the message's own list."""
    given = (Content.from_text("a"), Content.from_text("b"))
    message = Message("user", given)
    assert message.text == "ab"
    assert isinstance(message.contents, list)
    assert message.contents == list(given)


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


def test_message_spellings_and_role_constants():
    """TY-5: Message("user", text=...), Message(role=..., text=...), Role constants
    equal the strings."""
    assert Message("user", text="hi") == Message("user", ["hi"])
    assert Message(role="user", text="hi") == Message("user", "hi")
    message = Message(Role.USER, ["hi"])
    assert message.role == "user"
    assert type(message.role) is str
    assert Role.ASSISTANT == "assistant"
    assert Role.SYSTEM == "system"
    assert Role.TOOL == "tool"
    with pytest.raises(Exception, match="not both"):
        Message("user", ["a"], text="b")
