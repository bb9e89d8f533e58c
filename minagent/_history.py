"""The history invariant and its deterministic repair (spec/hooks.md, HI-1 .. HI-4).

A history is **valid** when (HI-1):

* every function call (a ``function_call`` content that is not ``informational_only``)
  has a call id no other call of the history has;
* every call has exactly one ``function_result`` with its id, either in the call's own
  message (a hosted tool answered by the service) or in the run of ``role="tool"``
  messages right after the call's message, before any other message;
* every ``function_result`` answers such a call: no orphans, no second answers.

A call awaiting approval (some ``function_approval_request`` carries it) is exempt: the
loop answers it before the model is called (LP-14).

`repair_history` is a pure function: it never mutates its input, returns the same
message objects when the history is valid (HI-2), and otherwise (HI-3, in
``minagent.repair``) renames later duplicate call ids ``<id>~2``, ``<id>~3``... (as
LP-26 does), moves each result right after its call, gives each call without a result a
synthesised "not executed" error result, and drops orphan results and messages left
empty — logging each repair at debug level on the ``minagent.history`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ._types import Content, Message

__all__ = [
    "NOT_EXECUTED_TEXT",
    "awaiting_approval",
    "is_call",
    "is_valid_history",
    "repair_history",
]

logger = logging.getLogger("minagent.history")

NOT_EXECUTED_TEXT = "Error: this call was not executed; its result is missing from the conversation history."


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
    """A valid history from any history (HI-2, HI-3); a valid one is returned as it is.
    An invalid one is repaired by ``minagent.repair``, reached through this seam only
    then (spec/decisions.md)."""
    if is_valid_history(messages):
        return list(messages)
    from .repair import repair_invalid_history

    return repair_invalid_history(messages)
