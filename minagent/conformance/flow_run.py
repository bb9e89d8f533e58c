"""Running the flow kit: scenarios, checks and verdicts (spec/conformance.md CF-2, CF-3,
CF-6).

A `Scenario` is a plan, the rules it checks, the features it needs, and a ``check``
function that compares what one run recorded (the `World`) with what the rules say, one
`Check` per comparison, each for exactly one rule. `run_kit` runs every scenario in both
modes (and the generated ones, drawn with a fixed seed and count) and folds the checks
into one verdict per rule.

Rules
-----
1. A check belongs to one rule; a rule holds when every check of it held, differs when
   one did not (the first such check is its observation), and is not applicable when
   every scenario that checks it needs a feature the adapter lacks (CF-2).
2. Parity (LP-2, design decision 11): a check that holds in one mode and not in the
   other is a difference of its rule in that mode only, and also a difference of LP-2
   (both modes run one flow); both observations name the rule and the mode (CF-2).
3. Reproducible: generated scenarios draw from ``random.Random`` seeded with the seed,
   the family and the example's index, so one seed and count give one report (CF-3).
4. No run hangs the kit: each run has ``TIMEOUT`` seconds; an adapter that fails or
   times out is a difference of the scenario's first rule, never a crash of the kit.
5. No adapter ends the kit: ``sys.exit()``, ``KeyboardInterrupt``, ``GeneratorExit``
   or a stray ``CancelledError`` out of the adapter's run is a difference of the
   scenario's first rule, like any other error (CF-4).
"""

from __future__ import annotations

import asyncio
import fnmatch
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from .flow import FlowAdapter, Plan, World

__all__ = [
    "PARITY",
    "TIMEOUT",
    "Check",
    "Draw",
    "Expect",
    "Family",
    "RandomDraw",
    "RuleVerdict",
    "Scenario",
    "describe_error",
    "run_kit",
    "run_scenario",
    "select",
]

T = TypeVar("T")
PARITY = "LP-2"
TIMEOUT = 10.0
Verdict = Literal["holds", "differs", "not applicable"]


class Draw(Protocol):
    """Where a generated scenario takes its choices from (``random`` in the kit;
    hypothesis in tests)."""

    def integer(self, low: int, high: int) -> int: ...

    def choice(self, options: Sequence[T]) -> T: ...


class RandomDraw:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


@dataclass(frozen=True)
class Check:
    rule: str
    what: str
    holds: bool
    expected: Any = None
    observed: Any = None


class Expect:
    """Collects the checks of one run (rule 1)."""

    def __init__(self) -> None:
        self.checks: list[Check] = []

    def equal(self, rule: str, what: str, observed: Any, expected: Any) -> None:
        self.checks.append(Check(rule, what, observed == expected, expected, observed))

    def true(self, rule: str, what: str, condition: bool, observed: Any) -> None:
        self.checks.append(Check(rule, what, bool(condition), what, observed))

    def response(
        self,
        rule: str,
        world: World,
        expected: Any,
        what: str = "the response's messages",
        view: Callable[[Any], Any] | None = None,
    ) -> None:
        """The last run's messages (seen through ``view``); a run that raised shows its
        error."""
        last = world.last
        if last.error is not None:
            self.equal(
                rule, what, f"the run raised {describe_error(last.error)}", expected
            )
        else:
            self.equal(
                rule,
                what,
                last.messages if view is None else view(last.messages),
                expected,
            )

    def raised(
        self,
        rule: str,
        world: World,
        expected: str | None,
        what: str = "the run's error",
    ) -> None:
        """The last run's error, described; ``expected`` is its description or None (no
        error)."""
        self.equal(rule, what, describe_error(world.last.error), expected)


def describe_error(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class Scenario:
    """A plan and the rules it checks (``rules[0]`` takes the adapter's own failures,
    rule 4)."""

    name: str
    plan: Plan
    rules: tuple[str, ...]
    check: Callable[[World, Expect], None]
    needs: frozenset[str] = frozenset()
    modes: tuple[bool, ...] = (False, True)


Family = Callable[[Draw, str], Scenario]  # (draw, name) -> a scenario


@dataclass
class RuleVerdict:
    """One rule's verdict: its checks, the first difference, and why (CF-2)."""

    rule: str
    verdict: Verdict = "not applicable"
    checks: int = 0
    observation: dict[str, Any] | None = None
    reason: str | None = None  # why not applicable
    expected: str | None = None  # the adapter's explanation of a difference
    # the modes that differed
    modes: set[str] = field(default_factory=set)
    # the modes any check of the rule ran in
    ran: set[str] = field(default_factory=set)

    @property
    def only(self) -> str | None:
        """The one mode the rule differs in while its checks held in the other (a
        mode-specific difference, rule 2), or None."""
        # LP-2's own observations already name the rule and mode that differed
        if self.rule == PARITY:
            return None
        if self.verdict == "differs" and len(self.modes) == 1 and len(self.ran) > 1:
            return next(iter(self.modes))
        return None


@dataclass
class _Outcome:
    scenario: Scenario
    mode: str
    checks: list[Check] | None  # None: not applicable
    missing: frozenset[str] = frozenset()


async def run_scenario(
    adapter: FlowAdapter, scenario: Scenario, *, stream: bool
) -> list[Check]:
    """One run of ``scenario`` in one mode, and its checks (rule 4)."""
    world = World(scenario.plan, stream=stream)
    try:
        escaped = await asyncio.wait_for(_contained(adapter.run(world)), TIMEOUT)
    except TimeoutError:
        return [
            Check(
                scenario.rules[0],
                "the run finishes",
                False,
                f"within {TIMEOUT:g} s",
                "timed out",
            )
        ]
    except Exception as exc:
        return [
            Check(
                scenario.rules[0],
                "the adapter runs the plan",
                False,
                "no error",
                describe_error(exc),
            )
        ]
    if escaped is not None:
        return [
            Check(
                scenario.rules[0],
                "the adapter runs the plan",
                False,
                "no error",
                _describe_escape(escaped),
            )
        ]
    expect = Expect()
    try:
        scenario.check(world, expect)
    except Exception as exc:  # an observation of a shape the check did not foresee
        expect.checks.append(
            Check(
                scenario.rules[0],
                "the observation can be read",
                False,
                "a readable run",
                describe_error(exc),
            )
        )
    return expect.checks


# What adapter code may raise that is no `Exception`: `sys.exit()`, a
# `KeyboardInterrupt` or a `GeneratorExit` raised by the adapter (not a Ctrl-C, which
# asyncio turns into the cancellation of the kit's task), and a `CancelledError` that
# no one asked for. Each is caught inside the task that runs the adapter, before it can
# stop the event loop or reach the command, and becomes a difference of the scenario
# (rule 5, CF-4): an adapter that escapes fails its report, it never ends it.
_ESCAPES = (SystemExit, KeyboardInterrupt, GeneratorExit)


async def _contained(run: Awaitable[object]) -> BaseException | None:
    """Await the adapter's run; what escapes it is returned (rule 5)."""
    try:
        await run
    except _ESCAPES as exc:
        return exc
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        # a cancellation of this task (the timeout, a Ctrl-C) goes on
        if task is None or task.cancelling():
            raise
        return exc
    return None


def _describe_escape(exc: BaseException) -> str:
    """``SystemExit: 0``, ``KeyboardInterrupt``: the type, and the text when there is
    one."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def select(rules: Iterable[str], patterns: Sequence[str] | None) -> bool:
    """Whether any of ``rules`` matches one of ``patterns`` (``MW-*``, ``LP-T1``); no
    patterns: all."""
    return not patterns or any(
        fnmatch.fnmatchcase(r, p) for r in rules for p in patterns
    )


def _mode(stream: bool) -> str:
    return "streaming" if stream else "non-streaming"


async def run_kit(
    adapter: FlowAdapter,
    scenarios: Sequence[Scenario],
    *,
    patterns: Sequence[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[dict[str, RuleVerdict], float]:
    """Every scenario in every mode it names; the verdict per rule and the seconds it
    took."""
    chosen = [s for s in scenarios if select(s.rules, patterns)]
    runs = [(s, m) for s in chosen for m in s.modes]
    outcomes: list[_Outcome] = []
    started = time.perf_counter()
    for done, (scenario, stream) in enumerate(runs, 1):
        if progress is not None:
            progress(done, len(runs), f"{scenario.name} ({_mode(stream)})")
        missing = scenario.needs - adapter.features
        if missing:
            outcomes.append(_Outcome(scenario, _mode(stream), None, frozenset(missing)))
            continue
        checks = await run_scenario(adapter, scenario, stream=stream)
        outcomes.append(_Outcome(scenario, _mode(stream), checks))
    elapsed = time.perf_counter() - started
    return verdicts(adapter, outcomes, patterns), elapsed


def verdicts(
    adapter: FlowAdapter, outcomes: Sequence[_Outcome], patterns: Sequence[str] | None
) -> dict[str, RuleVerdict]:
    """Fold the checks into one verdict per rule (rules 1, 2)."""
    table: dict[str, RuleVerdict] = {}
    notes: Mapping[str, str] = getattr(adapter, "notes", {}) or {}

    def entry(rule: str) -> RuleVerdict:
        return table.setdefault(rule, RuleVerdict(rule))

    # (scenario, rule, what) -> mode -> check
    by_check: dict[tuple[str, str, str], dict[str, Check]] = {}
    for outcome in outcomes:
        if outcome.checks is None:
            why = "; ".join(
                f"{f}: {notes[f]}" if f in notes else f for f in sorted(outcome.missing)
            )
            for rule in outcome.scenario.rules:
                item = entry(rule)
                item.reason = item.reason or f"needs {why}"
            continue
        for check in outcome.checks:
            by_check.setdefault((outcome.scenario.name, check.rule, check.what), {})[
                outcome.mode
            ] = check
    parity_selected = select([PARITY], patterns)
    for (scenario, rule, _what), modes in by_check.items():
        failing = {m: c for m, c in modes.items() if not c.holds}
        entry(rule).ran |= set(modes)
        if failing and len(failing) < len(modes) and rule != PARITY:
            # rule 2: the rule differs in the failing mode only, and (when LP-2 is
            # among the rules run) LP-2 differs too; both rows say which mode
            mode, check = next(iter(failing.items()))
            holding = next(m for m in modes if m not in failing)
            note = f"{rule} holds {holding} but not {mode}"
            _count(entry(rule), _observation(scenario, mode, check, note), {mode})
            if parity_selected:
                _count(entry(PARITY), _observation(scenario, mode, check, note), {mode})
            continue
        first = next(iter(failing.items()), None)
        observation = (
            None if first is None else _observation(scenario, first[0], first[1])
        )
        _count(entry(rule), observation, set(failing or modes))
    expected = adapter.expected
    for rule, item in table.items():
        if item.verdict == "differs" and rule in expected:
            item.expected = expected[rule]
    return {
        rule: table[rule]
        for rule in sorted(table, key=_rule_key)
        if select([rule], patterns)
    }


def _count(
    item: RuleVerdict, observation: dict[str, Any] | None, modes: set[str]
) -> None:
    item.checks += 1
    if observation is not None:
        if item.verdict != "differs":
            item.verdict, item.observation, item.modes = "differs", observation, set()
        item.modes |= modes
    elif item.verdict == "not applicable":
        item.verdict = "holds"


def _observation(
    scenario: str, mode: str, check: Any, note: str | None = None
) -> dict[str, Any]:
    out = {
        "scenario": scenario,
        "mode": mode,
        "check": f"{check.rule}: {check.what}",
        "expected": _jsonable(check.expected),
        "observed": _jsonable(check.observed),
    }
    if note:
        out["note"] = note
    return out


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return repr(value)


def _rule_key(rule: str) -> tuple[str, int, str]:
    """MW-T2 before MW-T10, LP-2 before LP-10: area, then the number."""
    area, _, rest = rule.partition("-")
    digits = "".join(ch for ch in rest if ch.isdigit())
    prefix = "".join(ch for ch in rest if not ch.isdigit())
    return (f"{area}-{prefix}", int(digits or 0), rest)
