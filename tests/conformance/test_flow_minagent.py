"""The flow conformance kit against minagent itself (spec/conformance.md CF-3, CF-5)."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import ChatContext, Content, FunctionInvocationContext, Message
from minagent.conformance.flow_loop import mask, without_flags, without_request_ids
from minagent.conformance.flow_minagent import MinagentAdapter, Ops, neutral_content
from minagent.conformance.flow_report import FAMILIES, generated, run_report, scenarios
from minagent.conformance.flow_run import Scenario, run_scenario

ROOT = Path(__file__).resolve().parents[2]


def defined_rules() -> set[str]:
    """Every rule ID spec/ defines, as tools/spec_trace.py reads them."""
    loader = importlib.util.spec_from_file_location(
        "spec_trace", ROOT / "tools" / "spec_trace.py"
    )
    assert loader is not None
    assert loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return set(module.defined_rules(ROOT / "spec"))


T = TypeVar("T")


async def test_every_rule_holds_on_minagent_in_both_modes() -> None:
    """CF-5, CF-2: with the default seed and examples, every rule the kit checks holds
    on minagent, and every scenario but the streaming-only ones ran in both modes."""
    report = await run_report(MinagentAdapter())
    verdicts = {rule: v.verdict for rule, v in report.rules.items()}
    assert set(verdicts.values()) == {"holds"}, {
        r: v for r, v in verdicts.items() if v != "holds"
    }
    assert report.unexpected == []
    assert report.stale == []
    chosen = scenarios()
    assert report.runs == sum(len(s.modes) for s in chosen)
    streaming_only = [s.name for s in chosen if s.modes != (False, True)]
    assert all(s.modes == (True,) for s in chosen if s.modes != (False, True))
    assert len(streaming_only) <= 2


def test_the_scenarios_cover_the_flow() -> None:
    """CF-3: the scenarios check every row of the control-flow table and of the loop
    table, the limits, approvals and their resume, mid-run injection, parity, options
    merging, sessions and context providers, and structured output."""
    rules = {r for s in scenarios(examples=1) for r in s.rules}
    assert {f"MW-T{n}" for n in range(1, 8)} <= rules
    assert {f"LP-T{n}" for n in range(1, 19)} <= rules
    assert {
        "LP-7",
        "LP-8",
        "LP-12",
        "LP-13",
        "LP-14",
        "LP-30",
        "LP-15",
        "LP-16",
        "LP-17",
        "LP-2",
    } <= rules
    assert {
        "AG-3",
        "AG-5",
        "OP-1",
        "OP-4",
        "OP-5",
        "OP-6",
        "SE-3",
        "SE-5",
        "SE-6",
        "TH-1",
    } <= rules
    assert {
        "SO-7",
        "SO-8",
        "SO-9",
        "MW-4",
        "MW-5",
        "MW-6",
        "MW-7",
        "MW-8",
        "LP-3",
        "LP-21",
    } <= rules


async def test_every_scenario_cites_defined_rules_and_checks_only_those() -> None:
    """CF-3: every rule a scenario names is defined in spec/, and each of its checks is
    of a rule it names (so a report never attributes a check to a rule the scenario does
    not cite)."""
    defined = defined_rules()
    adapter = MinagentAdapter()
    for scenario in scenarios(examples=3):
        assert set(scenario.rules) <= defined, scenario.name
        for stream in scenario.modes:
            checks = await run_scenario(adapter, scenario, stream=stream)
            assert checks, scenario.name
            assert {c.rule for c in checks} <= set(scenario.rules), scenario.name


def _shape(s: Scenario) -> tuple[str, Any, tuple[str, ...]]:
    return (s.name, s.plan, s.rules)


def test_generated_scenarios_are_reproducible() -> None:
    """CF-3: a seed and an example count give the same scenarios every time; another
    seed others."""
    first = [_shape(s) for s in generated(seed=7, examples=10)]
    assert first == [_shape(s) for s in generated(seed=7, examples=10)]
    assert first != [_shape(s) for s in generated(seed=8, examples=10)]
    assert len(first) == 10 * len(FAMILIES)
    assert [s.name.split(" ")[0] for s in generated(seed=7, examples=2)] == [
        f"{family}#{i}" for family in FAMILIES for i in range(2)
    ]


class HypothesisDraw:
    """The kit's `Draw`, fed by hypothesis (the kit itself draws from a seeded
    `random`)."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def choice(self, options: Sequence[T]) -> T:
        return self.data.draw(st.sampled_from(list(options)))


@settings(max_examples=60)
@given(data=st.data())
def test_generated_families_hold_on_minagent_for_any_draw(data: st.DataObject) -> None:
    """CF-3, CF-5, MW-6, MW-7, MW-8, LP-21, LP-4, LP-6, LP-T9, LP-23, LP-2: any chain of
    middleware, any tool rounds and any chunking the families can draw holds on minagent
    in both modes."""
    name = data.draw(st.sampled_from(sorted(FAMILIES)))
    scenario = FAMILIES[name](HypothesisDraw(data), name)
    for stream in scenario.modes:
        checks = asyncio.run(run_scenario(MinagentAdapter(), scenario, stream=stream))
        failed = [c for c in checks if not c.holds]
        assert failed == [], (scenario.name, stream, failed[:1])


@pytest.mark.parametrize("helper", [without_request_ids, without_flags, mask])
def test_normalisers_leave_what_is_not_a_message_list_alone(helper: object) -> None:
    """CF-1: the loop scenarios' normalisers change only a list of neutral messages; any
    other observed value (None, an error text) is compared as it is."""
    assert helper(None) is None  # type: ignore[operator]
    assert helper("boom") == "boom"  # type: ignore[operator]


def test_neutral_content_of_another_kind_is_its_type() -> None:
    """CF-1: a content kind the neutral form does not model is compared by its type
    alone."""
    assert neutral_content(
        Content.from_uri("https://example.com/a.png", "image/png")
    ) == {"type": "uri"}


def test_ops_refuse_operations_the_layer_does_not_have() -> None:
    """CF-1: a function middleware has no options and adds no messages; only a function
    middleware has arguments, and only one running in the loop has the transcript."""

    def f() -> None:
        pass

    function_ops = Ops(FunctionInvocationContext(f, {}))
    with pytest.raises(TypeError, match="no options"):
        function_ops.set_option("temperature", 0)
    with pytest.raises(TypeError, match="adds messages with append"):
        function_ops.add_message("hi")
    with pytest.raises(TypeError, match="transcript"):
        function_ops.append("hi")  # outside the loop: no transcript
    chat_ops = Ops(ChatContext(None, [Message("user", "q")]))
    with pytest.raises(TypeError, match="only a function middleware has arguments"):
        chat_ops.set_arguments({"a": 1})
    chat_ops.add_message("more")
    assert [m.text for m in chat_ops.context.messages] == ["q", "more"]


def test_result_text_is_compact_sorted_json_for_data() -> None:
    """CF-1: a tool result compares as text: None is empty, a str as it is, data as
    compact sorted JSON."""
    from minagent.conformance.flow import result_text

    assert result_text(None) == ""
    assert result_text("ok") == "ok"
    assert result_text({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_jsonable_turns_any_observed_value_into_json_data() -> None:
    """CF-1: what a scenario observes is reported as JSON data: containers recursively,
    other objects by their repr."""
    from minagent.conformance.flow_run import _jsonable

    class Thing:
        def __repr__(self) -> str:
            return "<thing>"

    assert _jsonable({1: (Thing(), None)}) == {"1": ["<thing>", None]}
