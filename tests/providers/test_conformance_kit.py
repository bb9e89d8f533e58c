"""The provider conformance kit's harness (spec/providers.md PV-33)."""

from __future__ import annotations

import pytest

from minagent.conformance.provider_harness import ConformanceError, ScriptedHarness


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
