"""The flow kit's loop scenarios (spec/loop.md: every row LP-T1 .. LP-T18, the tool
rules LP-4 .. LP-23, LP-30; spec/conformance.md CF-3).

Each row of the loop table is reached by a request whose first step ends in the row's
outcome, with room (the default ``max_iterations``) or without (``max_iterations=1``),
and checked by the step that follows: another model call, the last call
(``tool_choice="none"``), a batch, a pause or the end. The generated family ``rounds``
plays random tool rounds (calls that succeed, fail, or name no tool) and checks the
whole conversation.

Rules
-----
1. A row's checks observe only what tells its next step apart: the model calls made, the
   ``tool_choice`` of the call after, whether the tool ran, the response.
2. Error results are compared by their flag where their text is not the point
   (``mask``), so an error text is checked once, against LP-6.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._loop_table import NEXT_STEP
from .flow import (
    Answer,
    Approval,
    Call,
    Mw,
    Plan,
    Tool,
    Turn,
    World,
    call,
    message,
    result,
    text,
)
from .flow_run import Draw, Expect, Scenario

__all__ = [
    "LIMIT_TEXT",
    "NOT_EXECUTED_TEXT",
    "REJECTED_TEXT",
    "mask",
    "rounds",
    "scenarios",
    "unknown_text",
]

LIMIT_TEXT = (
    "Function invocation limit reached before a final answer could be produced."
)
REJECTED_TEXT = "Error: Tool call invocation was rejected by user."
NOT_EXECUTED_TEXT = "Error: Function call limit reached; this call was not executed."
FAILED_TEXT = "Error: Function failed."

F = Tool("f", results=("r",))
BAD = Tool("bad", fail="kaput")
GUARD = Tool("guard", results=("ran",), approval=True)
ASK = Tool("ask", declaration_only=True)
GO = message("user", [text("go")])


def unknown_text(name: str, available: Sequence[str]) -> str:
    return f'Error: Requested function "{name}" not found. Available functions: {", ".join(sorted(available))}.'


def said(value: str) -> dict[str, Any]:
    return message("assistant", [text(value)])


def asked(*ids: tuple[str, str], pending: Sequence[str] = ()) -> dict[str, Any]:
    """An assistant message with these calls; those in ``pending`` flagged as user-input
    requests."""
    return message(
        "assistant", [call(i, n, user_input_request=i in pending) for i, n in ids]
    )


def answered(*results: tuple[str, str, bool]) -> dict[str, Any]:
    return message("tool", [result(i, v, error=e) for i, v, e in results])


def user(value: str) -> dict[str, Any]:
    return message("user", [text(value)])


def asking(call_id: str, name: str) -> dict[str, Any]:
    """An approval request for the call ``call_id``, as `without_request_ids` shows
    it."""
    return {"type": "function_approval_request", "call_id": call_id, "name": name}


def without_request_ids(messages: Any) -> Any:
    """The messages with every approval request's own id left out (LP-13 checks the
    ids)."""
    if not isinstance(messages, list):
        return messages
    return [
        {
            **m,
            "contents": [
                {
                    k: v
                    for k, v in c.items()
                    if not (k == "id" and c.get("type") == "function_approval_request")
                }
                for c in m.get("contents", [])
            ],
        }
        for m in messages
    ]


def without_flags(messages: Any) -> Any:
    """The messages with every result's error flag false (where a rule names the text
    only)."""
    if not isinstance(messages, list):
        return messages
    return [
        {
            **m,
            "contents": [
                {**c, "error": False} if c.get("type") == "function_result" else c
                for c in m.get("contents", [])
            ],
        }
        for m in messages
    ]


def mask(messages: Any) -> Any:
    """Rule 2: every error result's text as ``<error>``."""
    if not isinstance(messages, list):
        return messages
    return [
        {
            **m,
            "contents": [
                {**c, "result": "<error>"}
                if c.get("type") == "function_result" and c.get("error")
                else c
                for c in m.get("contents", [])
            ],
        }
        for m in messages
    ]


def _plan(
    *script: Answer, tools: Sequence[Tool] = (F,), room: bool = True, **fields: Any
) -> Plan:
    config = dict(fields.pop("config", {}))
    if not room:
        config["max_iterations"] = 1
    return Plan(script=tuple(script), tools=tuple(tools), config=config, **fields)


def _ask(name: str, call_id: str = "c1", **arguments: Any) -> Answer:
    return Answer(calls=(Call(name, arguments, call_id),))


def _choice(world: World, index: int) -> Any:
    return (
        world.requests[index].options.get("tool_choice")
        if len(world.requests) > index
        else "no such call"
    )


def _ran(world: World, name: str) -> bool:
    return f"tool:{name}" in world.events


# --------------------------------------------------------------------------------------------
# The loop table, row by row


# one branch per outcome, as the table reads
def _row(rule: str, room: bool) -> Scenario:
    outcome = {
        1: "answered",
        3: "steered",
        5: "calls",
        7: "approval",
        9: "ran",
        11: "limited",
        13: "terminated",
        15: "pending",
        17: "forced",
    }[int(rule[4:]) - (0 if room else 1)]
    needs: frozenset[str] = frozenset()
    if outcome == "answered":
        plan = _plan(Answer("a1"), room=room)

        def check(world: World, expect: Expect) -> None:
            expect.equal(rule, "model calls", len(world.requests), 1)
            expect.response(rule, world, [said("a1")])

    elif outcome == "steered":
        needs = frozenset({"inbox"})
        plan = _plan(Answer("a1", inject=("more",)), Answer("a2"), room=room)

        def check(world: World, expect: Expect) -> None:
            expect.equal(
                rule,
                "the next call's tool_choice",
                _choice(world, 1),
                "auto" if room else "none",
            )
            sent = world.requests[1].messages if len(world.requests) > 1 else None
            expect.equal(
                rule,
                "what the next call received",
                sent,
                [GO, said("a1"), user("more")],
            )

    elif outcome in ("calls", "ran"):
        plan = _plan(_ask("f"), Answer("done"), room=room)

        def check(world: World, expect: Expect) -> None:
            expect.true(rule, "the batch ran", _ran(world, "f"), world.events)
            if outcome == "ran":
                expect.equal(
                    rule,
                    "the next call's tool_choice",
                    _choice(world, 1),
                    "auto" if room else "none",
                )
                expect.response(
                    rule,
                    world,
                    [asked(("c1", "f")), answered(("c1", "r", False)), said("done")],
                )

    elif outcome == "approval":
        needs = frozenset({"approvals"})
        plan = _plan(_ask("guard"), tools=(GUARD,), room=room)

        def check(world: World, expect: Expect) -> None:
            expect.equal(rule, "model calls", len(world.requests), 1)
            expect.true(
                rule, "the tool did not run", not _ran(world, "guard"), world.events
            )
            paused = [
                message("assistant", [call("c1", "guard"), asking("c1", "guard")])
            ]
            expect.response(rule, world, paused, view=without_request_ids)

    elif outcome == "limited":
        plan = _plan(
            _ask("bad"),
            Answer("done"),
            tools=(BAD,),
            room=room,
            config={"max_consecutive_errors_per_request": 1},
        )

        def check(world: World, expect: Expect) -> None:
            expect.equal(rule, "the next call's tool_choice", _choice(world, 1), "none")

    elif outcome == "terminated":
        stop = Mw("T", "function", exit="terminate", calls=0, result="stopped")
        plan = _plan(_ask("f"), Answer("done"), room=room, middleware=(stop,))

        def check(world: World, expect: Expect) -> None:
            expect.equal(rule, "model calls", len(world.requests), 1)
            expect.response(
                rule, world, [asked(("c1", "f")), answered(("c1", "stopped", False))]
            )

    elif outcome == "pending":
        plan = _plan(_ask("ask"), tools=(ASK,), room=room)

        def check(world: World, expect: Expect) -> None:
            expect.equal(rule, "model calls", len(world.requests), 1)
            expect.response(rule, world, [asked(("c1", "ask"), pending=["c1"])])

    else:  # forced
        plan = _plan(
            _ask("f"),
            Answer("done"),
            room=room,
            turns=(Turn(options={"tool_choice": "required"}),),
        )

        def check(world: World, expect: Expect) -> None:
            expect.equal(rule, "model calls", len(world.requests), 1)
            expect.response(
                rule, world, [asked(("c1", "f")), answered(("c1", "r", False))]
            )

    room_text = "room" if room else "no room (max_iterations=1)"
    return Scenario(f"{rule} {outcome}, {room_text}", plan, (rule,), check, needs)


# --------------------------------------------------------------------------------------------
# The tool rules


def _batch() -> Scenario:
    """LP-4: the calls of a response run concurrently; one tool message, in call
    order."""
    plan = _plan(
        Answer(calls=(Call("a", call_id="c1"), Call("b", call_id="c2"))),
        Answer("done"),
        tools=(Tool("a", results=("ra",), wait_for="b"), Tool("b", results=("rb",))),
    )

    def check(world: World, expect: Expect) -> None:
        batch = [
            asked(("c1", "a"), ("c2", "b")),
            answered(("c1", "ra", False), ("c2", "rb", False)),
        ]
        expect.response("LP-4", world, [*batch, said("done")])

    return Scenario(
        "LP-4 two calls run concurrently, results in call order", plan, ("LP-4",), check
    )


def _errors() -> list[Scenario]:
    """LP-6: a call never fails the run; an unknown tool, bad arguments, a failing tool
    are error results."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    typed = Tool("typed", schema=schema)

    def unknown(world: World, expect: Expect) -> None:
        expect.response(
            "LP-6",
            world,
            [
                asked(("c1", "nope")),
                answered(("c1", unknown_text("nope", ["f"]), True)),
                said("done"),
            ],
        )

    def invalid(world: World, expect: Expect) -> None:
        expect.true(
            "LP-6", "the tool was not called", not _ran(world, "typed"), world.events
        )
        results = [
            c
            for m in world.last.messages or []
            for c in m["contents"]
            if c["type"] == "function_result"
        ]
        said_ = results[0]["result"] if results else ""
        named = (
            bool(results)
            and results[0]["error"]
            and "n" in said_
            and "integer" in said_
        )
        expect.true(
            "LP-6",
            "the error result names the parameter and the expected type",
            named,
            said_,
        )
        expect.equal("LP-6", "model calls", len(world.requests), 2)

    def failing(world: World, expect: Expect) -> None:
        expect.response(
            "LP-6",
            world,
            [asked(("c1", "bad")), answered(("c1", FAILED_TEXT, True)), said("done")],
        )

    def terminating(world: World, expect: Expect) -> None:
        expect.true(
            "LP-12", "the run raised", world.last.error is not None, world.last.messages
        )

    return [
        Scenario(
            "LP-6 unknown tool", _plan(_ask("nope"), Answer("done")), ("LP-6",), unknown
        ),
        Scenario(
            "LP-6 invalid arguments",
            _plan(_ask("typed", n="x"), Answer("done"), tools=(typed,)),
            ("LP-6",),
            invalid,
        ),
        Scenario(
            "LP-6 failing tool",
            _plan(_ask("bad"), Answer("done"), tools=(BAD,)),
            ("LP-6",),
            failing,
        ),
        Scenario(
            "LP-12 terminate_on_unknown_calls",
            _plan(
                _ask("nope"),
                Answer("done"),
                config={"terminate_on_unknown_calls": True},
            ),
            ("LP-12",),
            terminating,
        ),
    ]


def _limits() -> list[Scenario]:
    """LP-7, LP-8 (design decision 8): limits stop; LP-9, LP-10: tool_choice none and
    required."""
    always = [_ask("f", f"c{i}") for i in range(1, 4)]

    def iterations(world: World, expect: Expect) -> None:
        expect.equal(
            "LP-7",
            "each call's tool_choice",
            [r.options.get("tool_choice") for r in world.requests],
            ["auto", "auto", "none"],
        )
        rounds = [
            m
            for i in (1, 2)
            for m in (asked((f"c{i}", "f")), answered((f"c{i}", "r", False)))
        ]
        expect.response("LP-7", world, [*rounds, said(LIMIT_TEXT)])

    def errors(world: World, expect: Expect) -> None:
        expect.equal("LP-8", "the next call's tool_choice", _choice(world, 1), "none")
        expect.true(
            "LP-8",
            "the call after the limit did not run",
            not _ran(world, "f"),
            world.events,
        )
        expect.response(
            "LP-8",
            world,
            [
                asked(("c1", "bad")),
                answered(("c1", FAILED_TEXT, True)),
                said(LIMIT_TEXT),
            ],
        )

    def budget(world: World, expect: Expect) -> None:
        expect.equal(
            "LP-8",
            "tool invocations",
            [e for e in world.events if e.startswith("tool:")],
            ["tool:f"],
        )
        results = answered(("c1", "r", False), ("c2", NOT_EXECUTED_TEXT, True))
        expect.response(
            "LP-8", world, [asked(("c1", "f"), ("c2", "f")), results, said("done")]
        )
        expect.equal("LP-8", "the next call's tool_choice", _choice(world, 1), "none")

    def none(world: World, expect: Expect) -> None:
        expect.true("LP-9", "the call did not run", not _ran(world, "f"), world.events)
        expect.response("LP-9", world, [said("a")])

    def required(world: World, expect: Expect) -> None:
        expect.equal("LP-10", "model calls", len(world.requests), 1)
        expect.response(
            "LP-10", world, [asked(("c1", "f")), answered(("c1", "r", False))]
        )

    def auto(world: World, expect: Expect) -> None:
        expect.equal(
            "LP-10",
            "each call's tool_choice",
            [r.options.get("tool_choice") for r in world.requests],
            ["auto", "auto"],
        )

    two = Answer(calls=(Call("f", call_id="c1"), Call("f", call_id="c2")))
    by_name = {"mode": "required", "required_function_name": "f"}
    return [
        Scenario(
            "LP-7 max_iterations=2",
            _plan(*always, config={"max_iterations": 2}),
            ("LP-7",),
            iterations,
        ),
        Scenario(
            "LP-8 error limit, then the model calls again",
            _plan(
                _ask("bad"),
                _ask("f", "c2"),
                tools=(BAD, F),
                config={"max_consecutive_errors_per_request": 1},
            ),
            ("LP-8",),
            errors,
        ),
        Scenario(
            "LP-8 max_function_calls=1",
            _plan(two, Answer("done"), config={"max_function_calls": 1}),
            ("LP-8",),
            budget,
        ),
        Scenario(
            "LP-9 tool_choice none",
            _plan(
                Answer("a", calls=(Call("f", call_id="c1"),)),
                turns=(Turn(options={"tool_choice": "none"}),),
            ),
            ("LP-9",),
            none,
        ),
        Scenario(
            "LP-10 required by name",
            _plan(
                _ask("f"),
                Answer("done"),
                turns=(Turn(options={"tool_choice": by_name}),),
            ),
            ("LP-10",),
            required,
        ),
        Scenario(
            "LP-10 auto",
            _plan(
                _ask("f"),
                Answer("done"),
                turns=(Turn(options={"tool_choice": "auto"}),),
            ),
            ("LP-10",),
            auto,
        ),
    ]


def _pauses() -> list[Scenario]:
    """LP-11, LP-13, LP-14, LP-30, LP-20, LP-23: pauses and early returns keep the
    transcript."""
    mixed = Answer(calls=(Call("f", call_id="c1"), Call("ask", call_id="q1")))

    def pending(world: World, expect: Expect) -> None:
        expect.true("LP-11", "the other call ran", _ran(world, "f"), world.events)
        expect.response(
            "LP-11",
            world,
            [
                asked(("c1", "f"), ("q1", "ask"), pending=["q1"]),
                answered(("c1", "r", False)),
            ],
        )

    def answered_by_middleware(world: World, expect: Expect) -> None:
        expect.response(
            "LP-11",
            world,
            [asked(("q1", "ask")), answered(("q1", "answered", False)), said("done")],
        )

    def approval(world: World, expect: Expect) -> None:
        expect.true(
            "LP-13", "nothing in the batch ran", not _ran(world, "f"), world.events
        )
        contents = [call("g1", "guard"), call("c1", "f"), asking("g1", "guard")]
        expect.response(
            "LP-13", world, [message("assistant", contents)], view=without_request_ids
        )
        requests = [
            c
            for m in world.last.messages or []
            for c in m["contents"]
            if c["type"] == "function_approval_request"
        ]
        ids = [(c["id"], c["call_id"]) for c in requests]
        expect.equal(
            "LP-13",
            "each request's id is its call's call_id",
            ids,
            [(c, c) for _, c in ids],
        )

    def resume(approved: bool) -> Any:
        def check(world: World, expect: Expect) -> None:
            # LP-14 names the text, not a flag
            value = ("g1", "ran" if approved else REJECTED_TEXT, False)
            sent = world.requests[1].messages if len(world.requests) > 1 else None
            received = [GO, asked(("g1", "guard")), answered(value)]
            expect.equal(
                "LP-14",
                "what the model received after the answer",
                without_flags(sent),
                received,
            )
            expect.response(
                "LP-14", world, [answered(value), said("done")], view=without_flags
            )
            if approved:
                turn = world.events[world.events.index("model") + 1 :]
                expect.equal(
                    "LP-30",
                    "the approved call runs before the model is called",
                    turn[:2],
                    ["tool:guard", "model"],
                )

        return check

    def terminated(world: World, expect: Expect) -> None:
        expect.equal("MW-8", "model calls", len(world.requests), 1)
        expect.response(
            "LP-20",
            world,
            [
                asked(("c1", "f"), ("c2", "g")),
                answered(("c1", "stopped", False), ("c2", "rg", False)),
            ],
        )

    def early(kind: str, last: list[dict[str, Any]]) -> Any:
        def check(world: World, expect: Expect) -> None:
            whole = [asked(("c1", "f")), answered(("c1", "r", False)), *last]
            expect.response(
                "LP-23",
                world,
                whole,
                f"the response after a {kind}",
                view=without_request_ids,
            )

        return check

    stop_f = Mw("T", "function", exit="terminate", calls=0, result="stopped", only="f")
    stop_h = Mw(
        "T", "function", exit="terminate", calls=0, result="halted", only="halt"
    )
    answer_ask = Mw("M", "function", calls=0, result="answered", only="ask")
    resume_plan = {
        approved: _plan(
            _ask("guard", "g1"),
            Answer("done"),
            tools=(GUARD,),
            session=True,
            turns=(Turn(), Turn(input=(Approval("g1", approved),))),
        )
        for approved in (True, False)
    }
    g = Tool("g", results=("rg",))
    halt = Tool("halt", results=("never",))
    first = _ask("f")
    return [
        Scenario(
            "LP-11 a declaration-only call with another",
            _plan(mixed, tools=(F, ASK)),
            ("LP-11",),
            pending,
        ),
        Scenario(
            "LP-11 middleware answers a declaration-only call",
            _plan(
                _ask("ask", "q1"),
                Answer("done"),
                tools=(ASK,),
                middleware=(answer_ask,),
            ),
            ("LP-11",),
            answered_by_middleware,
        ),
        Scenario(
            "LP-13 approval pause",
            _plan(
                Answer(calls=(Call("guard", call_id="g1"), Call("f", call_id="c1"))),
                tools=(GUARD, F),
            ),
            ("LP-13",),
            approval,
            frozenset({"approvals"}),
        ),
        Scenario(
            "LP-14 resume, approved",
            resume_plan[True],
            ("LP-14", "LP-30"),
            resume(True),
            frozenset({"approvals", "sessions"}),
        ),
        Scenario(
            "LP-14 resume, rejected",
            resume_plan[False],
            ("LP-14",),
            resume(False),
            frozenset({"approvals", "sessions"}),
        ),
        Scenario(
            "LP-20 a terminated call and another",
            _plan(
                Answer(calls=(Call("f", call_id="c1"), Call("g", call_id="c2"))),
                Answer("done"),
                tools=(F, g),
                middleware=(stop_f,),
            ),
            ("LP-20", "MW-8"),
            terminated,
        ),
        Scenario(
            "LP-23 an approval in round 2",
            _plan(first, _ask("guard", "g1"), tools=(F, GUARD)),
            ("LP-23",),
            early(
                "pause",
                [message("assistant", [call("g1", "guard"), asking("g1", "guard")])],
            ),
            frozenset({"approvals"}),
        ),
        Scenario(
            "LP-23 a termination in round 2",
            _plan(first, _ask("halt", "h1"), tools=(F, halt), middleware=(stop_h,)),
            ("LP-23",),
            early(
                "termination",
                [asked(("h1", "halt")), answered(("h1", "halted", False))],
            ),
        ),
        Scenario(
            "LP-23 a pending call in round 2",
            _plan(first, _ask("ask", "q1"), tools=(F, ASK)),
            ("LP-23",),
            early("pending call", [asked(("q1", "ask"), pending=["q1"])]),
        ),
    ]


def scenarios() -> list[Scenario]:
    rows = [_row(f"LP-T{n}", room) for n, (_, room) in enumerate(NEXT_STEP, 1)]
    return [*rows, _batch(), *_errors(), *_limits(), *_pauses()]


# --------------------------------------------------------------------------------------------
# Generated: random tool rounds


def rounds(draw: Draw, name: str) -> Scenario:
    """One to three rounds of one to three calls each — a tool that answers, one that
    fails, a name no tool has — then an answer (LP-4, LP-6, LP-T9, LP-23)."""
    tools = (Tool("a", results=("ra",)), Tool("b", results=("rb",)), BAD)
    script: list[Answer] = []
    transcript: list[dict[str, Any]] = []
    sent: list[list[dict[str, Any]]] = [[GO]]
    errors: dict[str, str] = {}
    for r in range(1, draw.integer(1, 3) + 1):
        names = [
            draw.choice(("a", "b", "bad", "nope")) for _ in range(draw.integer(1, 3))
        ]
        ids = [f"c{r}{i}" for i in range(1, len(names) + 1)]
        script.append(
            Answer(
                calls=tuple(Call(n, call_id=i) for n, i in zip(names, ids, strict=True))
            )
        )
        values = []
        for n, i in zip(names, ids, strict=True):
            if n in ("a", "b"):
                values.append((i, f"r{n}", False))
            else:
                errors[i] = (
                    FAILED_TEXT if n == "bad" else unknown_text(n, ["a", "b", "bad"])
                )
                values.append((i, errors[i], True))
        transcript += [asked(*zip(ids, names, strict=True)), answered(*values)]
        sent.append([GO, *transcript])
    script.append(Answer("done"))
    plan = Plan(
        script=tuple(script),
        tools=tools,
        config={"max_consecutive_errors_per_request": 10},
    )
    expected = [*transcript, said("done")]

    def check(world: World, expect: Expect) -> None:
        received = [r.messages for r in world.requests]
        expect.equal(
            "LP-T9",
            "what each model call received",
            [mask(r) for r in received[1:]],
            [mask(s) for s in sent[1:]],
        )
        expect.response("LP-23", world, mask(expected), view=mask)
        tool_messages = [m for m in world.last.messages or [] if m["role"] == "tool"]
        expect.equal(
            "LP-4",
            "one tool message per batch, in call order",
            mask(tool_messages),
            mask(expected[1::2][: len(script) - 1]),
        )
        results = {
            c["call_id"]: c["result"]
            for m in tool_messages
            for c in m["contents"]
            if c.get("error")
        }
        expect.equal("LP-6", "the error results' texts", results, errors)

    shape = " | ".join(",".join(c.name for c in a.calls) for a in script[:-1])
    return Scenario(
        f"{name} ({shape})", plan, ("LP-T9", "LP-23", "LP-4", "LP-6"), check
    )
