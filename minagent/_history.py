"""The history invariant and its deterministic repair (spec/hooks.md, HI-1 .. HI-4).

A history is **valid** when (HI-1):

* every function call (a ``function_call`` content that is not ``informational_only``) has a
  call id no other call of the history has;
* every call has exactly one ``function_result`` with its id, either in the call's own message
  (a hosted tool answered by the service) or in the run of ``role="tool"`` messages right after
  the call's message, before any other message;
* every ``function_result`` answers such a call: no orphans, no second answers.

A call awaiting approval (some ``function_approval_request`` carries it) is exempt: the loop
answers it before the model is called (LP-14).

`repair_history` is a pure function: it never mutates its input, returns the same message
objects when the history is valid (HI-2), and otherwise (HI-3, in ``minagent.repair``) renames later duplicate call ids
``<id>~2``, ``<id>~3``... (as LP-26 does), moves each result right after its call, gives each call
without a result a synthesised "not executed" error result, and drops orphan results and
messages left empty — logging each repair at debug level on the ``minagent.history`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ._types import Content, Message

__all__ = ["NOT_EXECUTED_TEXT", "awaiting_approval", "is_call", "is_valid_history", "repair_history"]

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


_CALL_KINDS = frozenset({"function_call", "function_result", "function_approval_request"})


def is_valid_history(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` satisfy the history invariant (HI-1)."""
    if not any(c.type in _CALL_KINDS for m in messages for c in m.contents):
        return True  # the common case before the first tool call: nothing to pair
    exempt = awaiting_approval(messages)
    seen: set[str | None] = set()
    i = 0
    n = len(messages)
    while i < n:
        m = messages[i]
        calls = [c.call_id for c in m.contents if is_call(c)]
        if len(set(calls)) != len(calls) or seen & set(calls):
            return False
        seen.update(calls)
        open_ids = set(calls) - exempt
        own = [c.call_id for c in m.contents if c.type == "function_result"]
        j = i + 1
        block: list[str | None] = []
        while calls and j < n and messages[j].role == "tool" and not any(is_call(c) for c in messages[j].contents):
            block.extend(c.call_id for c in messages[j].contents if c.type == "function_result")
            j += 1
        results = own + block
        if m.role == "tool" and not calls:
            # a tool message not right after calls: only allowed when empty of results
            if own:
                return False
            i += 1
            continue
        if len(set(results)) != len(results) or set(results) - set(calls) or open_ids - set(results):
            return False
        i = j
    return True


def repair_history(messages: Sequence[Message]) -> list[Message]:
    """A valid history from any history (HI-2, HI-3); a valid one is returned as it is. An invalid one
    is repaired by ``minagent.repair``, reached through this seam only then (spec/decisions.md)."""
    if is_valid_history(messages):
        return list(messages)
    from .repair import repair_invalid_history

    return repair_invalid_history(messages)
