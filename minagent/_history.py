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
objects when the history is valid (HI-2), and otherwise (HI-3) renames later duplicate call ids
``<id>~2``, ``<id>~3``... (as LP-26 does), moves each result right after its call, gives each call
without a result a synthesised "not executed" error result, and drops orphan results and
messages left empty — logging each repair at debug level on the ``minagent.history`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from ._types import Content, Message

__all__ = ["NOT_EXECUTED_TEXT", "is_valid_history", "repair_history"]

logger = logging.getLogger("minagent.history")

NOT_EXECUTED_TEXT = "Error: this call was not executed; its result is missing from the conversation history."


def _is_call(c: Content) -> bool:
    return c.type == "function_call" and not c.informational_only


def _awaiting_approval(messages: Sequence[Message]) -> set[str | None]:
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
    exempt = _awaiting_approval(messages)
    seen: set[str | None] = set()
    i = 0
    n = len(messages)
    while i < n:
        m = messages[i]
        calls = [c.call_id for c in m.contents if _is_call(c)]
        if len(set(calls)) != len(calls) or seen & set(calls):
            return False
        seen.update(calls)
        open_ids = set(calls) - exempt
        own = [c.call_id for c in m.contents if c.type == "function_result"]
        j = i + 1
        block: list[str | None] = []
        while calls and j < n and messages[j].role == "tool" and not any(_is_call(c) for c in messages[j].contents):
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
    """A valid history from any history (HI-2, HI-3); a valid one is returned as it is."""
    if is_valid_history(messages):
        return list(messages)
    exempt = _awaiting_approval(messages)
    # 1. unique call ids (LP-26's renaming), in order of appearance
    used: set[str] = set()
    renamed: dict[tuple[int, int], str] = {}
    calls: list[tuple[int, int, str, str]] = []  # (message, content, original id, id)
    for i, m in enumerate(messages):
        for k, c in enumerate(m.contents):
            if not _is_call(c):
                continue
            original = c.call_id or ""
            new = original
            n = 2
            while new in used:
                new = f"{original}~{n}"
                n += 1
            if new != original:
                renamed[(i, k)] = new
                logger.debug("history repair: duplicate call id %r renamed %r", original, new)
            used.add(new)
            calls.append((i, k, original, new))
    # 2. each result answers the earliest unanswered call with its id at or before it
    answer: dict[tuple[int, int], Content] = {}  # call position -> its result (renamed)
    same_message: dict[tuple[int, int], Content] = {}  # results kept in place (a call's own message)
    for i, m in enumerate(messages):
        for k, c in enumerate(m.contents):
            if c.type != "function_result":
                continue
            match = next(
                (
                    (ci, ck, new)
                    for ci, ck, original, new in calls
                    if original == (c.call_id or "") and ci <= i and (ci, ck) not in answer
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
    # 3. rebuild: calls' messages followed by one tool message with their results in call order
    out: list[Message] = []
    for i, m in enumerate(messages):
        kept: list[Content] = []
        pending: list[Content] = []
        for k, c in enumerate(m.contents):
            if c.type == "function_result":
                if (i, k) in same_message:
                    kept.append(same_message[(i, k)])
                continue
            if _is_call(c):
                call = replace(c, call_id=renamed[(i, k)]) if (i, k) in renamed else c
                kept.append(call)
                result = answer.get((i, k))
                if result is None and call.call_id in exempt:
                    continue
                if result is None:
                    logger.debug("history repair: call %r had no result; 'not executed' result added", call.call_id)
                    result = Content.from_function_result(
                        call.call_id or "", NOT_EXECUTED_TEXT, exception="not executed"
                    )
                pending.append(result)
                continue
            kept.append(c)
        own_ids = {c.call_id for c in kept if c.type == "function_result"}
        pending = [r for r in pending if r.call_id not in own_ids]
        if kept:
            out.append(m if kept == m.contents and len(kept) == len(m.contents) else m.with_contents(kept))
        elif m.contents:
            logger.debug("history repair: %s message left empty dropped", m.role)
        if pending:
            out.append(Message("tool", pending))
    return out
