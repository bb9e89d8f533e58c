"""The flow kit's middleware scenarios (spec/middleware.md: MW-4 .. MW-8, MW-11, MW-T1
.. MW-T7; spec/loop.md LP-3, LP-21; spec/conformance.md CF-3).

Every row of the control-flow table is run in each of the three layers, and so are
random chains of middleware (a generated family): `interpret` reads the table — how a
middleware exits, how many times it calls ``call_next`` — and gives the events and the
result a chain must produce, in either mode, so the scenarios and the table cannot
drift.

Rules
-----
1. The layer's operation is a model call (agent and chat layers; answers ``m1``, ``m2``,
   ...) or the tool ``f`` (function layer; results ``r1``, ``r2``, ...). When streaming,
   the agent and chat operations are lazy: the chain's code runs first, and the model
   answers only when the stream the chain returned is consumed (MW-9), so only that
   stream's model call happens.
2. A chain's events are checked against the row (or MW-6 for generated chains), its
   result against the row, MW-6 (a termination's own result, design decision 5) or MW-7
   (no result, design decision 6), an error in the function layer against LP-21 (design
   decision 12), and a terminated tool call's end of the run against MW-8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .flow import (
    Answer,
    Call,
    Layer,
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

__all__ = ["LAYERS", "ROWS", "ChainOutcome", "chains", "interpret", "scenarios"]

LAYERS: tuple[Layer, ...] = ("agent", "chat", "function")
# scripted answers: enough for four nested middleware that each call call_next twice
_OPS = 16


@dataclass(frozen=True)
class ChainOutcome:
    """What a chain must produce: its events, and its result (text), or the error it
    raises."""

    events: tuple[str, ...]
    value: str | None
    source: str  # "op", "set", "exception", "empty" or "error"
    error: str | None = None
    terminated: bool = False


class _Termination(Exception):
    pass


class _Raised(Exception):
    pass


def interpret(layer: Layer, chain: Sequence[Mw], stream: bool) -> ChainOutcome:
    """The control-flow table applied to ``chain`` (rule 1)."""
    lazy = stream and layer != "function"
    op_events = ("tool:f",) if layer == "function" else ("model",)
    events: list[str] = []
    # the context's result: ("op", n) or ("set", text)
    state: list[tuple[str, Any]] = []
    count = 0

    def run(i: int) -> None:
        nonlocal count
        if i == len(chain):
            count += 1
            if not lazy:
                events.extend(op_events)
            state[:] = [("op", count)]
            return
        mw = chain[i]
        events.append(f"{mw.name}>")
        if mw.result is not None and mw.when == "before":
            state[:] = [("set", mw.result)]
        for _ in range(mw.calls):
            run(i + 1)
        if mw.result is not None and mw.when == "after":
            state[:] = [("set", mw.result)]
        if mw.exit == "raise":
            raise _Raised(f"FlowFailure: raised by {mw.name}")
        if mw.exit == "terminate":
            raise _Termination(mw.term_result)
        events.append(f"{mw.name}<")

    terminated = False
    try:
        run(0)
    except _Termination as stop:
        terminated = True
        if not state and stop.args[0] is not None:
            state[:] = [("exception", stop.args[0])]
    except _Raised as failure:
        return ChainOutcome(tuple(events), None, "error", str(failure))
    if not state:
        return ChainOutcome(tuple(events), "", "empty", terminated=terminated)
    source, value = state[0]
    if source == "op":
        # only the stream the chain returned is consumed: the model's first answer
        if lazy:
            events.extend(op_events)
            value = 1
        value = f"{'r' if layer == 'function' else 'm'}{value}"
    return ChainOutcome(tuple(events), value, source, terminated=terminated)


def chain_plan(layer: Layer, chain: Sequence[Mw], run_level: Sequence[Mw] = ()) -> Plan:
    turn = Turn(middleware=tuple(run_level))
    if layer == "function":
        script = (Answer(calls=(Call("f", call_id="c1"),)), Answer("done"))
        tool = Tool("f", results=tuple(f"r{i}" for i in range(1, _OPS + 1)))
        return Plan(
            script=script, tools=(tool,), middleware=tuple(chain), turns=(turn,)
        )
    return Plan(
        script=tuple(Answer(f"m{i}") for i in range(1, _OPS + 1)),
        middleware=tuple(chain),
        turns=(turn,),
    )


def check_chain(
    expect: Expect,
    world: World,
    layer: Layer,
    chain: Sequence[Mw],
    *,
    events_rule: str,
    result_rule: str | None = None,
) -> None:
    """Rule 2: the chain's events, result or error, and where the run ends."""
    out = interpret(layer, chain, world.stream)
    events = [e for e in world.events if not (layer == "function" and e == "model")]
    expect.equal(events_rule, f"the {layer} layer's events", events, list(out.events))
    if out.error is not None:
        expect.raised("LP-21" if layer == "function" else events_rule, world, out.error)
        return
    rule = result_rule or {"empty": "MW-7", "exception": "MW-6"}.get(
        out.source, events_rule
    )
    if layer == "function":
        messages = world.last.messages or []
        results = [
            c for m in messages for c in m["contents"] if c["type"] == "function_result"
        ]
        observed: Any = (
            results
            if world.last.error is None
            else f"the run raised {world.last.error!r}"
        )
        expect.equal(
            rule, "the tool call's result", observed, [result("c1", out.value)]
        )
        if out.terminated:
            expect.equal(
                "MW-8",
                "model calls after a terminated tool call",
                len(world.requests),
                1,
            )
        return
    expected = (
        [] if out.source == "empty" else [message("assistant", [text(out.value or "")])]
    )
    expect.response(rule, world, expected)


# --------------------------------------------------------------------------------------------
# The control-flow table, row by row, in each layer


def _rows(layer: Layer) -> dict[str, list[tuple[str, Mw, str | None]]]:
    """Row -> (variant, the inner middleware B, the rule its result is checked
    against)."""
    return {
        "MW-T1": [
            ("passes", Mw("B", layer), None),
            ("overrides the result", Mw("B", layer, result="x"), None),
        ],
        "MW-T2": [
            ("sets a result", Mw("B", layer, calls=0, result="x", when="before"), None),
            ("sets none", Mw("B", layer, calls=0), "MW-7"),
        ],
        "MW-T3": [
            (
                "sets a result",
                Mw("B", layer, calls=0, exit="terminate", result="x", when="before"),
                None,
            ),
            (
                "with the exception's result",
                Mw("B", layer, calls=0, exit="terminate", term_result="y"),
                "MW-6",
            ),
            ("with no result", Mw("B", layer, calls=0, exit="terminate"), "MW-7"),
        ],
        "MW-T4": [
            (
                "after the operation",
                Mw("B", layer, exit="terminate", term_result="y"),
                None,
            )
        ],
        "MW-T5": [
            ("before the operation", Mw("B", layer, calls=0, exit="raise"), None)
        ],
        "MW-T6": [("after the operation", Mw("B", layer, exit="raise"), None)],
        "MW-T7": [("calls call_next twice", Mw("B", layer, calls=2), "MW-5")],
    }


ROWS = tuple(_rows("agent"))


def _row_scenario(
    row: str, layer: Layer, variant: str, inner: Mw, result_rule: str | None
) -> Scenario:
    chain = (Mw("A", layer), inner)
    rules = [row, *([result_rule] if result_rule else [])]
    if layer == "function" and inner.exit == "terminate":
        rules.append("MW-8")
    if layer == "function" and inner.exit == "raise":
        rules.append("LP-21")

    def check(world: World, expect: Expect) -> None:
        check_chain(
            expect, world, layer, chain, events_rule=row, result_rule=result_rule or row
        )

    return Scenario(
        f"{row} {layer}: B {variant}", chain_plan(layer, chain), tuple(rules), check
    )


def _order_scenario(layer: Layer) -> Scenario:
    """MW-4: agent-level middleware wraps run-level middleware, each in registration
    order."""
    agent_level = (Mw("A1", layer), Mw("A2", layer))
    run_level = (Mw("R", layer),)

    def check(world: World, expect: Expect) -> None:
        check_chain(
            expect, world, layer, (*agent_level, *run_level), events_rule="MW-4"
        )

    return Scenario(
        f"MW-4 {layer}: agent-level outside run-level",
        chain_plan(layer, agent_level, run_level),
        ("MW-4",),
        check,
    )


def _arguments_scenario() -> Scenario:
    """MW-11: arguments a function middleware sets before call_next are what the tool
    receives."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    plan = Plan(
        script=(Answer(calls=(Call("f", {"n": 1}, "c1"),)), Answer("done")),
        tools=(Tool("f", schema=schema),),
        middleware=(Mw("M", "function", arguments={"n": 2}),),
    )

    def check(world: World, expect: Expect) -> None:
        expect.equal(
            "MW-11",
            "the arguments the tool received",
            world.arguments,
            [("f", {"n": 2})],
        )

    return Scenario(
        "MW-11 function: middleware changes the arguments", plan, ("MW-11",), check
    )


def _per_call_scenario() -> Scenario:
    """LP-3 (design decision 1): chat middleware runs once per model call, inside the
    loop; what it changes affects that call only."""
    plan = Plan(
        script=(Answer(calls=(Call("f", call_id="c1"),)), Answer("done")),
        tools=(Tool("f", results=("r1",)),),
        middleware=(
            Mw("C", "chat", add_message="extra", option=("temperature", 0.7)),
            Mw("F", "function"),
        ),
    )
    go = message("user", [text("go")])
    extra = message("user", [text("extra")])
    calls = message("assistant", [call("c1", "f")])
    results = message("tool", [result("c1", "r1")])

    def check(world: World, expect: Expect) -> None:
        chat = ["C>", "C<", "model"] if world.stream else ["C>", "model", "C<"]
        expect.equal(
            "LP-3", "the events", world.events, [*chat, "F>", "tool:f", "F<", *chat]
        )
        sent = [r.messages for r in world.requests]
        expect.equal(
            "LP-3",
            "what each model call received",
            sent,
            [[go, extra], [go, calls, results, extra]],
        )
        temperatures = [r.options.get("temperature") for r in world.requests]
        expect.equal("LP-3", "each call's temperature", temperatures, [0.7, 0.7])
        expect.response(
            "LP-3", world, [calls, results, message("assistant", [text("done")])]
        )

    return Scenario("LP-3 chat middleware per model call", plan, ("LP-3",), check)


def _raising_tool_scenario() -> Scenario:
    """LP-21: an exception of the tool itself, passing through middleware unchanged, is
    an error result for the model; the run goes on."""
    plan = Plan(
        script=(Answer(calls=(Call("bad", call_id="c1"),)), Answer("done")),
        tools=(Tool("bad", fail="kaput"),),
        middleware=(Mw("M", "function"),),
    )

    def check(world: World, expect: Expect) -> None:
        expect.raised("LP-21", world, None)
        messages = world.last.messages or []
        errors = [
            c["error"]
            for m in messages
            for c in m["contents"]
            if c["type"] == "function_result"
        ]
        expect.equal("LP-21", "the tool's error is a result", errors, [True])
        expect.equal("LP-21", "model calls", len(world.requests), 2)

    return Scenario("LP-21 a failing tool through middleware", plan, ("LP-21",), check)


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for layer in LAYERS:
        for row, variants in _rows(layer).items():
            out += [_row_scenario(row, layer, *variant) for variant in variants]
        out.append(_order_scenario(layer))
    return [*out, _arguments_scenario(), _per_call_scenario(), _raising_tool_scenario()]


# --------------------------------------------------------------------------------------------
# Generated: random chains


def chains(draw: Draw, name: str) -> Scenario:
    """A random chain of one to four middleware in one layer (MW-4, MW-6, MW-7, MW-8,
    LP-21)."""
    layer = draw.choice(LAYERS)
    chain: list[Mw] = []
    for i in range(1, draw.integer(1, 4) + 1):
        exit_: Literal["return", "terminate", "raise"] = draw.choice(
            ("return", "return", "terminate", "raise")
        )
        calls = draw.choice((0, 1, 1, 2)) if exit_ != "raise" else draw.choice((0, 1))
        result_value = draw.choice((None, None, f"s{i}"))
        when: Literal["before", "after"] = draw.choice(("before", "after"))
        term = draw.choice((None, f"t{i}")) if exit_ == "terminate" else None
        chain.append(
            Mw(
                f"M{i}",
                layer,
                exit=exit_,
                calls=calls,
                result=result_value,
                when=when,
                term_result=term,
            )
        )
    frozen = tuple(chain)

    def check(world: World, expect: Expect) -> None:
        check_chain(expect, world, layer, frozen, events_rule="MW-6")

    rules = (
        ("MW-6", "MW-7", "MW-8", "LP-21") if layer == "function" else ("MW-6", "MW-7")
    )
    return Scenario(
        f"{name} ({layer}: {_describe(frozen)})",
        chain_plan(layer, frozen),
        rules,
        check,
    )


def _describe(chain: Sequence[Mw]) -> str:
    parts = []
    for mw in chain:
        extra = f" result={mw.result}@{mw.when}" if mw.result else ""
        extra += f" term={mw.term_result}" if mw.term_result else ""
        parts.append(f"{mw.name}:{mw.exit}x{mw.calls}{extra}")
    return ", ".join(parts)
