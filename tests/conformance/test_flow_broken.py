"""A deliberately broken minagent: each break is caught by the rules that name it, and
by no other (spec/conformance.md CF-8)."""

from __future__ import annotations

import pytest

from minagent.conformance.flow_broken import BREAKS, BrokenAdapter
from minagent.conformance.flow_report import run_report, scenarios


@pytest.mark.parametrize("broken", sorted(BREAKS))
async def test_each_break_is_caught_by_its_rules_and_no_other(broken: str) -> None:
    """CF-8, CF-2, LP-3, LP-7, LP-T4, LP-T10, LP-2: the rules that differ are exactly
    the ones the break names; the first observation of each shows the break; a break of
    streaming alone shows in each rule it breaks, streaming only."""
    report = await run_report(BrokenAdapter((broken,)))
    differs = {rule for rule, v in report.rules.items() if v.verdict == "differs"}
    assert differs == set(BREAKS[broken])
    assert sorted(report.unexpected) == sorted(BREAKS[broken])
    if broken == "stream-skips-function-middleware":
        observation = report.rules["LP-2"].observation or {}
        assert observation["mode"] == "streaming"
        assert "holds non-streaming but not streaming" in observation["note"]
        assert report.rules["LP-2"].modes == {"streaming"}
        # CF-2: each rule whose check saw the break shows it, streaming only
        assert differs - {"LP-2"} == _rules_with_function_middleware_in_both_modes()
        for rule in differs - {"LP-2"}:
            assert report.rules[rule].modes == {"streaming"}, rule
            assert report.rules[rule].only == "streaming", rule
            assert (report.rules[rule].observation or {})["mode"] == "streaming"
    if broken == "chat-once-per-run":
        observation = report.rules["LP-3"].observation or {}
        assert observation["scenario"] == "LP-3 chat middleware per model call"


async def test_all_breaks_together_are_caught_each_by_its_rules() -> None:
    """CF-8: with the three breaks at once, the differing rules are the union of
    theirs."""
    report = await run_report(BrokenAdapter())
    differs = {rule for rule, v in report.rules.items() if v.verdict == "differs"}
    assert differs == {rule for rules in BREAKS.values() for rule in rules}


def _rules_with_function_middleware_in_both_modes() -> set[str]:
    """The rules of the kit's scenarios (default seed and examples) that have function
    middleware and run in both modes."""
    rules: set[str] = set()
    for scenario in scenarios():
        plan = scenario.plan
        layers = {m.layer for m in plan.middleware} | {
            m.layer for turn in plan.turns for m in turn.middleware
        }
        if "function" in layers and set(scenario.modes) == {False, True}:
            rules |= set(scenario.rules)
    return rules


def test_an_unknown_break_is_refused() -> None:
    """CF-8: the broken adapter takes only the breaks it has."""
    with pytest.raises(ValueError, match="unknown breaks"):
        BrokenAdapter(("chat-twice",))
