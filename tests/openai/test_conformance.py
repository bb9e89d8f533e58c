"""The provider conformance kit run against the OpenAI plugin's loopback server (PV-33,
PV-34).

One test per check of ``minagent.testing.CHECKS``; each docstring cites the rules the
check proves. The last tests check the kit itself: every check is run here, and a client
that breaks a rule makes the matching check fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from minagent_openai import OpenAIChatClient

from minagent import ChatResponse, ChatResponseUpdate, Message
from minagent.testing import (
    CHECKS,
    ConformanceError,
    ProviderHarness,
    run_check,
    run_conformance,
)

from ._fake_server import FakeOpenAI


async def test_conformance_text() -> None:
    """PV-34, PV-8: plain text, non-streaming, through a real client and server."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "text")


async def test_conformance_streaming_text() -> None:
    """PV-34, PV-16: plain text, streaming."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "streaming_text")


async def test_conformance_tool_round_trip() -> None:
    """PV-34, PV-5, PV-7: a tool call round trip through Agent.run with a real @tool."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "tool_round_trip")


async def test_conformance_parallel_tool_calls() -> None:
    """PV-34, PV-13: parallel calls all run; results go back in call order."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "parallel_tool_calls")


async def test_conformance_usage() -> None:
    """PV-34, PV-8: usage is reported as usage_details in both modes."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "usage")


async def test_conformance_error_status() -> None:
    """PV-23, PV-24: each error status becomes its typed error, in both modes."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "error_status")


async def test_conformance_secrets() -> None:
    """PV-24: the API key is in neither repr nor error text."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "secrets")


async def test_conformance_retry() -> None:
    """PV-25, PV-27, PV-32: retries with the server's delay and full jitter, injected
    sleep."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "retry")


async def test_conformance_stream_equals_non_stream() -> None:
    """PV-34, PV-9: equal final responses in both modes, tool loop included."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "stream_equals_non_stream")


async def test_conformance_cancellation() -> None:
    """PV-30: cancelled and early-closed streams close their connections; no task is
    left."""
    async with FakeOpenAI() as harness:
        await run_check(harness, "cancellation")


# =============================================================================================
# The kit itself


def test_every_check_has_a_test_here() -> None:
    """PV-33: this file runs every check of the kit, one test per check."""
    source = Path(__file__).read_text(encoding="utf-8")
    for check in CHECKS:
        assert f'run_check(harness, "{check.name}")' in source, check.name
        assert check.rules
        assert all(r.startswith("PV-") for r in check.rules)


async def test_run_conformance_reports_every_check() -> None:
    """PV-33: run_conformance returns one passing result per check, naming its rules."""
    async with FakeOpenAI() as harness:
        assert isinstance(harness, ProviderHarness)
        results = await run_conformance(harness)
    assert [r.name for r in results] == [c.name for c in CHECKS]
    assert all(r.passed for r in results), [r for r in results if not r.passed]
    assert {r.name: r.rules for r in results}["error_status"] == ("PV-23", "PV-24")


async def test_unknown_check_name() -> None:
    """PV-33: run_check with an unknown name is a KeyError listing the known checks."""
    async with FakeOpenAI() as harness:
        with pytest.raises(KeyError, match="tool_round_trip"):
            await run_check(harness, "nope")


class _DropsUsage(OpenAIChatClient):
    """Breaks PV-8: loses usage in both modes."""

    async def _inner_get_response(self, **kw: Any) -> ChatResponse:
        response = await super()._inner_get_response(**kw)
        response.usage_details = None
        return response

    async def _inner_get_streaming_response(self, **kw: Any) -> Any:
        async for update in super()._inner_get_streaming_response(**kw):
            contents = [c for c in update.contents if c.type != "usage"]
            yield ChatResponseUpdate(
                contents, update.role, message_id=update.message_id
            )


class _WrongErrors(OpenAIChatClient):
    """Breaks PV-23: every failure is a RuntimeError."""

    async def _inner_get_response(self, **kw: Any) -> ChatResponse:
        try:
            return await super()._inner_get_response(**kw)
        except Exception as exc:
            raise RuntimeError(str(exc)) from None


class _BrokenHarness(FakeOpenAI):
    def __init__(self, cls: type[OpenAIChatClient]) -> None:
        super().__init__()
        self.cls = cls

    def make_client(self, **kwargs: Any) -> OpenAIChatClient:
        kwargs.setdefault("api_key", "sk-test-harness")
        return self.cls(self.model, base_url=self.base_url, **kwargs)


@pytest.mark.parametrize(
    ("cls", "failing"),
    [
        (_DropsUsage, {"usage", "stream_equals_non_stream"}),
        (_WrongErrors, {"error_status"}),
    ],
)
async def test_a_broken_client_fails_the_matching_checks(
    cls: type[OpenAIChatClient], failing: set[str]
) -> None:
    """PV-33: the kit catches a client that breaks a rule; the other checks still
    run."""
    async with _BrokenHarness(cls) as harness:
        results = await run_conformance(harness)
        failed = {r.name for r in results if not r.passed}
        assert failing <= failed, results
        with pytest.raises(ConformanceError, match=r"\(PV-"):
            await run_check(harness, sorted(failing)[0])
    assert len(results) == len(CHECKS)


async def test_unscripted_request_is_reported() -> None:
    """PV-33: a request the script does not answer fails loudly, not silently."""
    async with FakeOpenAI() as harness:
        client = harness.make_client(max_retries=0)
        async with client:
            with pytest.raises(Exception, match="not scripted"):
                await client.get_response([Message("user", ["hi"])])
