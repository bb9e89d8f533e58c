"""The tool loop as a table: outcomes, steps and every decision (spec/loop.md, "The loop
as a table").

Rules
-----
1. Every decision of the tool loop lives here: where a request starts (LP-14), what a
   model response or a batch comes to (its `Outcome`), whether there is room for another
   tool round (LP-7), whether a limit is reached (LP-8), and which `Step` follows. The
   driver (`minagent._loop.ToolLoop`) decides nothing; it runs the step named here.
2. Everything here is a pure function of its arguments: no I/O, no state, no awaiting.
   Tests drive it with hand-built values (as h11's state tests drive its connection
   state).
3. `NEXT_STEP` is the table of spec/loop.md, row for row; a test reads the spec and
   compares.

Theory of operation
-------------------
A request starts with `Step.RESUME` when its conversation holds answered approval
requests, else with `Step.CALL_MODEL` (`start`). Each step ends in an outcome;
``NEXT_STEP[outcome, room]`` is the next step, where *room* is: the loop is enabled and
fewer than ``max_iterations`` model calls were made. The steps:

    step         what the driver does
    outcomes resume       run the calls the caller approved or rejected (LP-14)
    ran, limited,
                                                                                    terminated,
                                                                                    pending
    call model   drain the inbox (LP-16); call the model through chat middleware
    answered, steered,
                 (LP-3); record the response (LP-9, LP-26, LP-27)
                 calls, approval
    last call    the same with tool_choice "none" (LP-7, LP-8)
    answered run batch    run the calls; append ONE tool message in call order, then
    what    ran, limited,
                 the calls appended (LP-4, LP-15)
                 terminated, pending,
                                                                                    forced
    pause        add the approval requests and end (LP-13)                          -
    finish       end                                                                -
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

__all__ = [
    "NEXT_STEP",
    "Outcome",
    "Step",
    "classify_batch",
    "classify_response",
    "limit_reached",
    "next_step",
    "start",
]


class Outcome(enum.Enum):
    """How a step ended (spec/loop.md, "The loop as a table")."""

    # members are singletons: identity hashing, no Python frame per table lookup
    __hash__ = object.__hash__

    ANSWERED = "answered"  # the model's response has no call to act on
    # ... but the inbox received messages while the model answered (LP-17)
    STEERED = "steered"
    CALLS = "calls"  # the response has calls to run (LP-4)
    APPROVAL = "approval"  # a call needs the caller's approval (LP-13)
    RAN = "ran"  # the batch ran and nothing stops the loop
    LIMITED = "limited"  # the error or call limit is reached (LP-8)
    TERMINATED = "terminated"  # a call raised MiddlewareTermination (LP-20)
    PENDING = "pending"  # a declaration-only call reached the missing function (LP-11)
    FORCED = "forced"  # the batch was forced by tool_choice "required" (LP-10)


class Step(enum.Enum):
    """What the driver does next."""

    __hash__ = object.__hash__  # as `Outcome`

    RESUME = "resume"
    CALL_MODEL = "call model"
    LAST_CALL = "last call"
    RUN_BATCH = "run batch"
    PAUSE = "pause"
    FINISH = "finish"


# (outcome, room for another tool round) -> the next step: the table of spec/loop.md.
NEXT_STEP: dict[tuple[Outcome, bool], Step] = {
    (Outcome.ANSWERED, True): Step.FINISH,
    (Outcome.ANSWERED, False): Step.FINISH,
    (Outcome.STEERED, True): Step.CALL_MODEL,
    (Outcome.STEERED, False): Step.LAST_CALL,
    (Outcome.CALLS, True): Step.RUN_BATCH,
    (Outcome.CALLS, False): Step.RUN_BATCH,
    (Outcome.APPROVAL, True): Step.PAUSE,
    (Outcome.APPROVAL, False): Step.PAUSE,
    (Outcome.RAN, True): Step.CALL_MODEL,
    (Outcome.RAN, False): Step.LAST_CALL,
    (Outcome.LIMITED, True): Step.LAST_CALL,
    (Outcome.LIMITED, False): Step.LAST_CALL,
    (Outcome.TERMINATED, True): Step.FINISH,
    (Outcome.TERMINATED, False): Step.FINISH,
    (Outcome.PENDING, True): Step.FINISH,
    (Outcome.PENDING, False): Step.FINISH,
    (Outcome.FORCED, True): Step.FINISH,
    (Outcome.FORCED, False): Step.FINISH,
}


def start(resuming: bool) -> Step:
    """LP-14: the first step: the resumed batch when the conversation holds approval
    answers."""
    return Step.RESUME if resuming else Step.CALL_MODEL


def next_step(outcome: Outcome, config: Any, model_calls: int) -> Step:
    """The table's answer; room: the loop is enabled and fewer than max_iterations model
    calls (LP-7)."""
    return NEXT_STEP[outcome, config.enabled and model_calls < config.max_iterations]


def limit_reached(config: Any, calls_made: int, errors_in_a_row: int) -> bool:
    """LP-8: the call budget is spent, or max_consecutive_errors_per_request batches
    failed in a row."""
    if (
        config.max_function_calls is not None
        and calls_made >= config.max_function_calls
    ):
        return True
    return (
        errors_in_a_row > 0
        and errors_in_a_row >= config.max_consecutive_errors_per_request
    )


def classify_response(
    asked: Sequence[Any],
    *,
    enabled: bool,
    last: bool,
    steered: bool,
    approval_names: frozenset[str] | set[str],
) -> tuple[Outcome, Sequence[Any]]:
    """A recorded model response: its outcome and the calls the next step acts on.

    ``asked`` are the response's calls to act on (LP-4); with ``enabled=False`` or on
    the last call they are returned unexecuted (LP-1, LP-7); ``steered``: the inbox
    holds messages (LP-17)."""
    calls = asked if enabled and not last else ()
    if not calls:
        return (
            Outcome.STEERED if steered and enabled and not last else Outcome.ANSWERED
        ), ()
    if approval_names and any(c.name in approval_names for c in calls):
        return Outcome.APPROVAL, calls
    return Outcome.CALLS, calls


def classify_batch(
    *, terminated: bool, pending: bool, forced: bool, limited: bool
) -> Outcome:
    """A batch's outcome: the first of terminated, pending, forced, limited that
    applies, else ran."""
    if terminated:
        return Outcome.TERMINATED
    if pending:
        return Outcome.PENDING
    if forced:
        return Outcome.FORCED
    return Outcome.LIMITED if limited else Outcome.RAN
