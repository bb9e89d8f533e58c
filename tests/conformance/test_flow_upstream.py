"""The flow conformance kit against upstream's `agent-framework-core`
(spec/conformance.md CF-7)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from minagent.conformance.flow_report import Report, run_report

from .upstream_adapter import EXPECTED, UpstreamAdapter

SPEC = Path(__file__).resolve().parents[2] / "spec"


@pytest.fixture(scope="module")
def report() -> Report:
    return asyncio.run(run_report(UpstreamAdapter()))


def decisions() -> dict[int, str]:
    """Decision number -> its text, from spec/decisions.md's numbered list."""
    text = (SPEC / "decisions.md").read_text(encoding="utf-8")
    found: dict[int, str] = {}
    for match in re.finditer(r"^(\d+)\. (.*?)(?=^\d+\. |^## |\Z)", text, re.M | re.S):
        found[int(match.group(1))] = match.group(2)
    return found


def test_upstream_differs_exactly_where_a_decision_says_it_does(report: Report) -> None:
    """CF-7: upstream differs in exactly the rules its adapter expects, nothing
    unexpected and nothing stale; every expected difference names a decision of
    spec/decisions.md that says where upstream departs, and every decision that says
    upstream departs is behind some difference (or missing feature) the kit shows."""
    differs = {rule for rule, v in report.rules.items() if v.verdict == "differs"}
    assert differs == set(EXPECTED)
    assert report.unexpected == []
    assert report.stale == []
    known = decisions()
    assert len(known) >= 18
    for rule, why in EXPECTED.items():
        numbers = [int(n) for n in re.findall(r"\d+", why.split(":")[0])]
        assert numbers, rule
        assert why.startswith("design decision"), rule
        for number in numbers:
            assert "Upstream" in known[number] or "upstream" in known[number], (
                rule,
                number,
            )
        assert report.rules[rule].expected == why
    cited: set[int] = set()
    for why in [*EXPECTED.values(), *UpstreamAdapter.notes.values()]:
        for group in re.findall(r"decisions? ([\d and]+)", why):
            cited |= {int(n) for n in re.findall(r"\d+", group)}
    departing = {
        n
        for n, text in known.items()
        if "(Upstream" in text and "has since adopted" not in text
    }
    assert departing <= cited, sorted(departing - cited)


def test_what_upstream_cannot_do_is_not_applicable_with_a_reason(
    report: Report,
) -> None:
    """CF-7, CF-2: the rules upstream has no feature for are not applicable, with the
    adapter's note."""
    missing = {
        rule: v.reason
        for rule, v in report.rules.items()
        if v.verdict == "not applicable"
    }
    assert set(missing) == {"LP-15"}
    assert "transcript" in (missing["LP-15"] or "")
    assert "design decision 2" in (missing["LP-15"] or "")
    assert report.to_json()["adapter"]["missing"] == {
        "transcript": UpstreamAdapter.notes["transcript"]
    }


def test_the_spec_page_shows_upstreams_current_report(report: Report) -> None:
    """CF-7: the report on spec/conformance.md is the one the kit gives today (verdict
    and checks per rule, and the explanation of each difference)."""
    page = (
        (SPEC / "conformance.md")
        .read_text(encoding="utf-8")
        .split("## Upstream's report", 1)[1]
    )
    rows = re.findall(
        r"^\| `([A-Z]{2,4}-[A-Z]?\d+)` \| ([a-z ]+) \| (\d+) \| (.*?) ?\|$", page, re.M
    )
    shown = {rule: (verdict, int(checks), why) for rule, verdict, checks, why in rows}
    current = {
        rule: (v.verdict, v.checks, v.expected or v.reason or "")
        for rule, v in report.rules.items()
    }
    assert shown == current
    summary = report.to_json()["summary"]
    assert f"{summary['holds']} rules hold, {summary['differs']} differ" in page
    assert f"{summary['not applicable']} is not applicable" in page
    assert f"({report.runs} runs;" in page
