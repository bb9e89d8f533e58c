"""Argument limits beyond Python's int-to-text limit, and the provider harness's script
queue (coverage, tests only). Rules: SC-48, PV-33 (the provider conformance kit)."""

from __future__ import annotations

import sys

import pytest

from minagent import ArgumentLimits
from minagent._validate import check_limits
from minagent.conformance.provider_harness import ConformanceError, ScriptedHarness


def test_an_integer_python_cannot_write_as_text_is_refused_at_the_limit() -> None:
    """SC-48: limits made while CPython's int-to-text limit was off (0) and used after
    it is back at 4300: an integer at the digit limit whose digits Python will not count
    as text is treated as over the limit (never accepted without being counted); made
    with the limit on, they are refused."""
    saved = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)
        limits = ArgumentLimits(max_integer_digits=4400)
        sys.set_int_max_str_digits(4300)
        # 4400 digits: at the limit, beyond what str() writes
        (issue,) = check_limits(10**4399, limits)
        assert "at most 4400 digits" in issue.problem
        # counted, within
        assert check_limits(10**4000, ArgumentLimits(max_integer_digits=4001)) == []
        with pytest.raises(ValueError, match="max_integer_digits must be <= 4300"):
            ArgumentLimits(max_integer_digits=4400)
    finally:
        sys.set_int_max_str_digits(saved)


def test_scripted_harness_serves_steps_in_order_then_says_none_is_scripted() -> None:
    """PV-33: the scripted harness answers requests with its steps in order, records
    each request, and a request beyond the script is a ConformanceError naming its
    number."""
    harness = ScriptedHarness()
    harness.script_stalled_stream("one")
    harness.record({"n": 1})
    assert harness.next_step().text == "one"
    harness.record({"n": 2})
    with pytest.raises(
        ConformanceError,
        match="request 2 reached the fake server, but no answer is scripted",
    ):
        harness.next_step()
    assert harness.requests() == [{"n": 1}, {"n": 2}]
