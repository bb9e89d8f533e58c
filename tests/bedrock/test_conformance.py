"""The provider conformance kit run against the Bedrock plugin's loopback server
(PV-33, PV-34).

One test per check of ``minagent.testing.CHECKS``; each docstring cites the rules the
check proves (BR-21: the kit drives `BedrockChatClient`, signing with SigV4, end to end).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minagent.providers import StdlibTransport
from minagent.testing import CHECKS, ProviderHarness, run_check, run_conformance

from ._fake_server import FakeBedrock


async def test_conformance_text() -> None:
    """PV-34, PV-8: plain text, non-streaming, through a real client and server."""
    async with FakeBedrock() as harness:
        await run_check(harness, "text")


async def test_conformance_streaming_text() -> None:
    """PV-34, PV-16: plain text, streaming."""
    async with FakeBedrock() as harness:
        await run_check(harness, "streaming_text")


async def test_conformance_tool_round_trip() -> None:
    """PV-34, PV-5, PV-7: a tool call round trip through Agent.run with a real @tool."""
    async with FakeBedrock() as harness:
        await run_check(harness, "tool_round_trip")


async def test_conformance_parallel_tool_calls() -> None:
    """PV-34, PV-13: parallel calls all run; results go back in call order."""
    async with FakeBedrock() as harness:
        await run_check(harness, "parallel_tool_calls")


async def test_conformance_usage() -> None:
    """PV-34, PV-8: usage is reported as usage_details in both modes."""
    async with FakeBedrock() as harness:
        await run_check(harness, "usage")


async def test_conformance_error_status() -> None:
    """PV-23, PV-24: each error status becomes its typed error, in both modes."""
    async with FakeBedrock() as harness:
        await run_check(harness, "error_status")


async def test_conformance_secrets() -> None:
    """PV-24: the API key is in neither repr nor error text."""
    async with FakeBedrock() as harness:
        await run_check(harness, "secrets")


async def test_conformance_retry() -> None:
    """PV-25, PV-27, PV-32: retries with the server's delay and full jitter, injected
    sleep."""
    async with FakeBedrock() as harness:
        await run_check(harness, "retry")


async def test_conformance_stream_equals_non_stream() -> None:
    """PV-34, PV-9: equal final responses in both modes, tool loop included."""
    async with FakeBedrock() as harness:
        await run_check(harness, "stream_equals_non_stream")


async def test_conformance_cancellation() -> None:
    """PV-30: cancelled and early-closed streams close their connections; no task is
    left."""
    async with FakeBedrock() as harness:
        await run_check(harness, "cancellation")


def test_every_check_has_a_test_here() -> None:
    """PV-33: this file runs every check of the kit, one test per check."""
    source = Path(__file__).read_text(encoding="utf-8")
    for check in CHECKS:
        assert f'run_check(harness, "{check.name}")' in source, check.name


async def test_run_conformance_reports_every_check() -> None:
    """PV-33: run_conformance over the Bedrock harness passes every check."""
    async with FakeBedrock() as harness:
        assert isinstance(harness, ProviderHarness)
        results = await run_conformance(harness)
    assert [r.name for r in results] == [c.name for c in CHECKS]
    assert all(r.passed for r in results), [r for r in results if not r.passed]


class StdlibFakeBedrock(FakeBedrock):
    """The same server; clients send through the standard library's transport."""

    def make_client(self, **kwargs: Any) -> Any:
        kwargs.setdefault("transport", StdlibTransport(trust_env=False))
        return super().make_client(**kwargs)


async def test_run_conformance_over_the_stdlib_transport() -> None:
    """PV-33, PV-41, BR-21: every check passes with StdlibTransport too (signed
    requests, event streams, cancellation) — what a vendored copy without aiohttp
    uses."""
    async with StdlibFakeBedrock() as harness:
        client = harness.make_client()
        assert type(client.signing.inner) is StdlibTransport
        await client.aclose()
        results = await run_conformance(harness)
    assert all(r.passed for r in results), [r for r in results if not r.passed]
