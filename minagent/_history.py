"""The history invariant, its check and its deterministic repair (spec/hooks.md HI-1 ..
HI-4; spec/loop.md LP-28).

This module owns what a request may send as its history: `is_valid_history` checks the
invariant and `repair_history` makes any history valid. The loop never sends a call
without its result, nor a result without its call (LP-28), so a history that a cancelled
run left behind (a call whose result never came) is repaired here, in the core, before
it is sent.

A history is **valid** when (HI-1):

* every function call (a ``function_call`` content that is not ``informational_only``)
  has a call id no other call of the history has;
* every call has exactly one ``function_result`` with its id, either in the call's own
  message (a hosted tool answered by the service) or in the run of ``role="tool"``
  messages right after the call's message, before any other message;
* every ``function_result`` answers such a call: no orphans, no second answers.

A call awaiting approval (some ``function_approval_request`` carries it) is exempt: the
loop answers it before the model is called (LP-14).

`own_copy` is the copy a layer is shown instead of a message the run was given (a
session's stored history, the caller's input; spec/sessions.md SE-53) and the copy a
store keeps (SE-7): nothing a layer may edit in place is shared with the original.

`repair_history` is a pure function: it never mutates its input, returns the same
message objects when the history is valid (HI-2), and otherwise (HI-3) renames later
duplicate call ids ``<id>~2``, ``<id>~3``... (as LP-26 does), moves each result right
after its call, gives each call without a result a synthesised "not executed" error
result, and drops orphan results and messages left empty — logging each repair at debug
level on the ``minagent.history`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from ._types import Content, Message

__all__ = [
    "NOT_EXECUTED_TEXT",
    "awaiting_approval",
    "is_call",
    "is_valid_history",
    "own_copy",
    "repair_history",
]

logger = logging.getLogger("minagent.history")

NOT_EXECUTED_TEXT = "Error: this call was not executed; its result is missing from the conversation history."


def own_copy(message: Message) -> Message:
    """SE-53: a copy of ``message`` that shares nothing a layer may edit in place with
    it: its own contents list, ``additional_properties`` and ``extra``, and a shallow copy
    of each content with its own ``additional_properties`` and ``extra`` (a value nested
    deeper in a content, a call's ``arguments`` dict or a result's value, is shared, as
    LP-3 shares it)."""
    contents = []
    for c in message.contents:
        # a content's fields are its instance dict (TY-50); `copy.copy` would take
        # the pickling route, about 20 times slower
        fresh = object.__new__(type(c))
        fields = fresh.__dict__
        fields.update(c.__dict__)
        fields["additional_properties"] = dict(c.additional_properties)
        if "extra" in fields:  # made on first access (TY-50)
            fields["extra"] = dict(fields["extra"])
        contents.append(fresh)
    return message.with_contents(contents)


def is_call(c: Content) -> bool:
    return c.type == "function_call" and not c.informational_only


def awaiting_approval(messages: Sequence[Message]) -> set[str | None]:
    return {
        c.function_call.call_id
        for m in messages
        for c in m.contents
        if c.type == "function_approval_request" and c.function_call is not None
    }


_CALL_KINDS = frozenset(
    {"function_call", "function_result", "function_approval_request"}
)


def is_valid_history(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` satisfy the history invariant (HI-1), in one pass: a message
    without calls or results costs a look at its contents' types."""
    kinds, exempt, seen = _CALL_KINDS, None, set[str | None]()
    i, n = 0, len(messages)
    while i < n:
        contents = messages[i].contents
        i += 1
        if not any(c.type in kinds for c in contents):
            continue
        calls = [
            c.call_id
            for c in contents
            if c.type == "function_call" and not c.informational_only
        ]
        results = [c.call_id for c in contents if c.type == "function_result"]
        if not calls:  # results nothing asked for here, or approvals only
            if results:
                return False
            continue
        asked = set(calls)
        if len(asked) != len(calls) or not seen.isdisjoint(asked):
            return False
        seen |= asked
        while (
            i < n
            and messages[i].role == "tool"
            and not any(is_call(c) for c in messages[i].contents)
        ):
            results += [
                c.call_id for c in messages[i].contents if c.type == "function_result"
            ]
            i += 1
        answered = set(results)
        if len(answered) != len(results) or not answered <= asked:
            return False
        if exempt is None:
            exempt = awaiting_approval(messages)
        if asked - answered - exempt:
            return False
    return True


def repair_history(messages: Sequence[Message]) -> list[Message]:
    """A valid history from any history (HI-2, HI-3); a valid one is returned as it is
    (the same message objects), an invalid one is repaired (see the module docstring)."""
    if is_valid_history(messages):
        return list(messages)
    return _repair(messages)


def _repair(messages: Sequence[Message]) -> list[Message]:
    """HI-3: a valid history from an invalid one, in three passes (see the module
    docstring); the input is never changed."""
    exempt = awaiting_approval(messages)
    # 1. unique call ids (LP-26's renaming), in order of appearance
    used: set[str] = set()
    renamed: dict[tuple[int, int], str] = {}
    calls: list[tuple[int, int, str, str]] = []  # (message, content, original id, id)
    for i, m in enumerate(messages):
        for k, c in enumerate(m.contents):
            if not is_call(c):
                continue
            original = c.call_id or ""
            new = original
            n = 2
            while new in used:
                new = f"{original}~{n}"
                n += 1
            if new != original:
                renamed[(i, k)] = new
                logger.debug(
                    "history repair: duplicate call id %r renamed %r", original, new
                )
            used.add(new)
            calls.append((i, k, original, new))
    # 2. each result answers the earliest unanswered call with its id at or before it
    answer: dict[tuple[int, int], Content] = {}  # call position -> its result (renamed)
    # results kept in place (a call's own message)
    same_message: dict[tuple[int, int], Content] = {}
    for i, m in enumerate(messages):
        for k, c in enumerate(m.contents):
            if c.type != "function_result":
                continue
            match = next(
                (
                    (ci, ck, new)
                    for ci, ck, original, new in calls
                    if original == (c.call_id or "")
                    and ci <= i
                    and (ci, ck) not in answer
                ),
                None,
            )
            if match is None:
                logger.debug("history repair: orphan result %r dropped", c.call_id)
                continue
            ci, ck, new = match
            answer[(ci, ck)] = c if c.call_id == new else replace(c, call_id=new)
            if ci == i:
                same_message[(i, k)] = answer[(ci, ck)]
    # 3. rebuild: calls' messages followed by one tool message with their results in
    #    call order
    out: list[Message] = []
    for i, m in enumerate(messages):
        kept: list[Content] = []
        pending: list[Content] = []
        for k, c in enumerate(m.contents):
            if c.type == "function_result":
                if (i, k) in same_message:
                    kept.append(same_message[(i, k)])
                continue
            if is_call(c):
                call = replace(c, call_id=renamed[(i, k)]) if (i, k) in renamed else c
                kept.append(call)
                result = answer.get((i, k))
                if result is None and call.call_id in exempt:
                    continue
                if result is None:
                    logger.debug(
                        "history repair: call %r had no result; 'not executed' result added",
                        call.call_id,
                    )
                    result = Content.from_function_result(
                        call.call_id or "", NOT_EXECUTED_TEXT, exception="not executed"
                    )
                pending.append(result)
                continue
            kept.append(c)
        own_ids = {c.call_id for c in kept if c.type == "function_result"}
        pending = [r for r in pending if r.call_id not in own_ids]
        if kept:
            out.append(
                m
                if kept == m.contents and len(kept) == len(m.contents)
                else m.with_contents(kept)
            )
        elif m.contents:
            logger.debug("history repair: %s message left empty dropped", m.role)
        if pending:
            out.append(Message("tool", pending))
    return out
