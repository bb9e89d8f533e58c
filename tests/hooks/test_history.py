"""The history invariant and its repair (HI-1 .. HI-3): property tests over hostile
histories."""

from __future__ import annotations

import copy
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Content, Message
from minagent._history import NOT_EXECUTED_TEXT, is_valid_history, repair_history

IDS = st.sampled_from(["a", "b", "c", "a~2"])


def _call(i: str) -> Content:
    return Content.from_function_call(i, "f", "{}")


def _result(i: str) -> Content:
    return Content.from_function_result(i, f"r-{i}")


contents = st.one_of(
    st.builds(lambda t: Content.from_text(t), st.sampled_from(["x", "y"])),
    st.builds(_call, IDS),
    st.builds(_result, IDS),
    st.builds(
        lambda i: Content.from_function_call(
            i, "hosted", "{}", informational_only=True
        ),
        IDS,
    ),
)
messages = st.builds(
    lambda role, cs: Message(role, cs),
    st.sampled_from(["user", "assistant", "tool", "system"]),
    st.lists(contents, min_size=0, max_size=4),
)
histories = st.lists(messages, max_size=8)


def _valid_history(draw_calls: list[list[str]]) -> list[Message]:
    out = [Message("user", ["hi"])]
    for n, ids in enumerate(draw_calls):
        unique = [f"{i}{n}" for i in dict.fromkeys(ids)]
        out.append(Message("assistant", [_call(i) for i in unique] or ["text"]))
        if unique:
            out.append(Message("tool", [_result(i) for i in unique]))
    return out


@given(histories)
def test_any_history_becomes_valid(history):
    """HI-3: whatever the input, the repaired history satisfies HI-1, and the input is
    not mutated."""
    before = copy.deepcopy(history)
    repaired = repair_history(history)
    assert is_valid_history(repaired)
    assert history == before
    assert repair_history(repaired) == repaired  # HI-2: repair is idempotent


@given(st.lists(st.lists(IDS, max_size=3), max_size=5))
def test_valid_history_is_untouched(calls):
    """HI-2: a valid history comes back as the same message objects."""
    history = _valid_history(calls)
    assert is_valid_history(history)
    repaired = repair_history(history)
    assert len(repaired) == len(history)
    assert all(a is b for a, b in zip(repaired, history, strict=True))


@given(histories)
def test_real_results_are_kept(history):
    """HI-3: a result that answers a call earlier in the history is never lost (it is
    moved, not dropped)."""
    repaired = repair_history(history)
    kept = [
        c.result
        for m in repaired
        for c in m.contents
        if c.type == "function_result" and c.result != NOT_EXECUTED_TEXT
    ]
    calls_so_far: dict[str, int] = {}
    expected = 0
    # a result may answer a call of its own message or of an earlier one
    for m in history:
        for c in m.contents:
            if c.type == "function_call" and not c.informational_only:
                calls_so_far[c.call_id] = calls_so_far.get(c.call_id, 0) + 1
        for c in m.contents:
            if c.type == "function_result" and calls_so_far.get(c.call_id, 0) > 0:
                calls_so_far[c.call_id] -= 1
                expected += 1
    assert len(kept) == expected


def test_repairs_named_cases(caplog):
    """HI-3: a dangling call gets a synthesised result right after it; an orphan result
    is dropped; a duplicate call id is renamed <id>~2 with its result; each repair is
    logged at debug level."""
    history = [
        Message("user", ["hi"]),
        Message("assistant", [_call("a")]),
        Message("user", ["trimmed in between"]),
        Message("tool", [_result("zzz")]),
        Message("assistant", [_call("b")]),
        Message("tool", [_result("b")]),
        Message("assistant", [_call("b")]),
        Message("tool", [_result("b")]),
    ]
    with caplog.at_level(logging.DEBUG, logger="minagent.history"):
        repaired = repair_history(history)
    assert [
        (m.role, [(c.type, c.call_id) for c in m.contents if c.call_id])
        for m in repaired
    ] == [
        ("user", []),
        ("assistant", [("function_call", "a")]),
        ("tool", [("function_result", "a")]),
        ("user", []),
        ("assistant", [("function_call", "b")]),
        ("tool", [("function_result", "b")]),
        ("assistant", [("function_call", "b~2")]),
        ("tool", [("function_result", "b~2")]),
    ]
    assert repaired[2].contents[0].result == NOT_EXECUTED_TEXT
    assert repaired[2].contents[0].exception == "not executed"
    text = caplog.text
    assert "orphan result 'zzz'" in text
    assert "'a' had no result" in text
    assert "renamed 'b~2'" in text


def test_result_moved_next_to_its_call():
    """HI-3: a result separated from its call by another message is moved right after
    the call."""
    history = [
        Message("assistant", [_call("a")]),
        Message("user", ["x"]),
        Message("tool", [_result("a")]),
    ]
    repaired = repair_history(history)
    assert [m.role for m in repaired] == ["assistant", "tool", "user"]
    assert repaired[1].contents[0].result == "r-a"


def test_call_awaiting_approval_is_exempt():
    """HI-1: a call carried by a pending approval request is answered by the loop
    (LP-14), not here."""
    call = _call("a")
    history = [
        Message("user", ["hi"]),
        Message("assistant", [call, Content.from_function_approval_request("a", call)]),
    ]
    assert is_valid_history(history)
    assert repair_history(history) == history
    # invalid elsewhere: the pending call stays as it is
    broken = [*history, Message("tool", [_result("zzz")])]
    assert repair_history(broken) == history


@pytest.mark.parametrize("role", ["assistant", "tool"])
def test_hosted_call_answered_in_its_own_message(role):
    """HI-1: a call answered in its own message (a hosted tool) is valid as it is."""
    history = [Message(role, [_call("a"), _result("a")])]
    assert is_valid_history(history)


def _valid_by_the_first_algorithm(messages: list[Message]) -> bool:
    """HI-1 as it was first written (message by message, a set per question): the
    reference."""
    if not any(
        c.type in ("function_call", "function_result", "function_approval_request")
        for m in messages
        for c in m.contents
    ):
        return True
    exempt = {
        c.function_call.call_id
        for m in messages
        for c in m.contents
        if c.type == "function_approval_request" and c.function_call is not None
    }
    seen: set[str | None] = set()
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        calls = [
            c.call_id
            for c in m.contents
            if c.type == "function_call" and not c.informational_only
        ]
        if len(set(calls)) != len(calls) or seen & set(calls):
            return False
        seen.update(calls)
        own = [c.call_id for c in m.contents if c.type == "function_result"]
        j, block = i + 1, []
        while (
            calls
            and j < n
            and messages[j].role == "tool"
            and not any(
                c.type == "function_call" and not c.informational_only
                for c in messages[j].contents
            )
        ):
            block.extend(
                c.call_id for c in messages[j].contents if c.type == "function_result"
            )
            j += 1
        results = own + block
        if m.role == "tool" and not calls:
            if own:
                return False
            i += 1
            continue
        if (
            len(set(results)) != len(results)
            or set(results) - set(calls)
            or (set(calls) - exempt) - set(results)
        ):
            return False
        i = j
    return True


_approval = st.builds(
    lambda i: Content.from_function_approval_request(i, _call(i)), IDS
)


@settings(max_examples=500)
@given(
    st.lists(
        st.builds(
            lambda role, cs: Message(role, cs),
            st.sampled_from(["user", "assistant", "tool"]),
            st.lists(st.one_of(contents, _approval), max_size=4),
        ),
        max_size=10,
    )
)
def test_the_one_pass_check_agrees_with_the_first_algorithm(
    history: list[Message],
) -> None:
    """HI-1: the one-pass `is_valid_history` answers as the first, message-by-message
    algorithm did, for any history of texts, calls (hosted ones too), results and
    approval requests."""
    assert is_valid_history(history) == _valid_by_the_first_algorithm(history)
