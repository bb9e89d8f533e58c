"""The deterministic repair of an invalid history (spec/hooks.md HI-3).

``minagent.repair_history`` returns a valid history as it is and reaches this module
only for an invalid one: later duplicate call ids become ``<id>~2``, ``<id>~3``... (as
LP-26 does), each result moves right after its call, a call without a result gets a
synthesised "not executed" error result, and orphan results and messages left empty are
dropped — each repair logged at debug level on the ``minagent.history`` logger. Pure:
the input is never changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from minagent import Content, Message
from minagent._history import NOT_EXECUTED_TEXT, awaiting_approval, is_call

__all__ = ["repair_invalid_history"]

logger = logging.getLogger("minagent.history")


def repair_invalid_history(messages: Sequence[Message]) -> list[Message]:
    """HI-3: a valid history from an invalid one (see the module docstring)."""
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
