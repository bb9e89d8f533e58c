"""The provider conformance kit run against the Gemini plugin's loopback server (PV-33,
PV-34).

One test per check of ``minagent.testing.CHECKS``; each docstring cites the rules the
check proves. The server speaks the Gemini API (``generateContent``, SSE streams, function
calls whole and without ids), so the tool checks also prove the generated call ids
(GM-14).
"""

from __future__ import annotations

from pathlib import Path

from minagent.testing import CHECKS, ProviderHarness, run_check, run_conformance

from ._fake_server import FakeGemini


async def test_conformance_text() -> None:
    """PV-34, PV-8, GM-12: plain text, non-streaming, through a real client and
    server."""
    async with FakeGemini() as harness:
        await run_check(harness, "text")


async def test_conformance_streaming_text() -> None:
    """PV-34, PV-16, GM-20: plain text, streamed as server-sent events."""
    async with FakeGemini() as harness:
        await run_check(harness, "streaming_text")


async def test_conformance_tool_round_trip() -> None:
    """PV-34, PV-5, PV-7, GM-5, GM-14: a function call without an id round-trips
    through Agent.run."""
    async with FakeGemini() as harness:
        await run_check(harness, "tool_round_trip")


async def test_conformance_parallel_tool_calls() -> None:
    """PV-34, PV-13, GM-14: two whole calls in one event both run; results go back
    in order."""
    async with FakeGemini() as harness:
        await run_check(harness, "parallel_tool_calls")


async def test_conformance_usage() -> None:
    """PV-34, PV-8, GM-16: usageMetadata arrives as usage_details in both modes."""
    async with FakeGemini() as harness:
        await run_check(harness, "usage")


async def test_conformance_error_status() -> None:
    """PV-23, PV-24, GM-18: each error status raises its typed error with message and
    request id."""
    async with FakeGemini() as harness:
        await run_check(harness, "error_status")


async def test_conformance_secrets() -> None:
    """PV-24, GM-23: the API key is in neither the repr nor an error."""
    async with FakeGemini() as harness:
        await run_check(harness, "secrets")


async def test_conformance_retry() -> None:
    """PV-25, PV-27, PV-32, GM-24: retries with the server's delay, injected sleep
    and rng."""
    async with FakeGemini() as harness:
        await run_check(harness, "retry")


async def test_conformance_stream_equals_non_stream() -> None:
    """PV-34, PV-9, GM-14: equal final responses in both modes, generated call ids
    included."""
    async with FakeGemini() as harness:
        await run_check(harness, "stream_equals_non_stream")


async def test_conformance_cancellation() -> None:
    """PV-30: cancelled and early-closed streams close their connections; no task is
    left."""
    async with FakeGemini() as harness:
        await run_check(harness, "cancellation")


def test_every_check_has_a_test_here() -> None:
    """PV-33: this file runs every check of the kit, one test per check."""
    source = Path(__file__).read_text(encoding="utf-8")
    for check in CHECKS:
        assert f'run_check(harness, "{check.name}")' in source, check.name


async def test_run_conformance_passes_everything() -> None:
    """PV-33: run_conformance over the Gemini harness reports every check passed."""
    async with FakeGemini() as harness:
        assert isinstance(harness, ProviderHarness)
        results = await run_conformance(harness)
    assert [r.name for r in results] == [c.name for c in CHECKS]
    assert [r for r in results if not r.passed] == []
