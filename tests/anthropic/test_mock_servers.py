"""`AnthropicChatClient` against third-party mock servers from PyPI, run as subprocesses
on 127.0.0.1.

* ``fakellm`` (pinned in requirements-test.txt) answers ``POST /v1/messages`` from YAML
  rules:
  a plain run and a streamed run of an agent with a real tool succeed, and a rule
  answering 429 is a typed `RateLimitError`.
* ``llmock`` (pinned too) serves the Messages API under ``/anthropic`` and injects
  faults through its ``/_llmock/scenario`` control API: rate limits and overload (529)
  are survived by the client's retries honouring ``retry-after``, a dropped, a truncated
  and a malformed stream are reported as typed errors and not retried. Its own journal
  counts the requests the client made.

Every test checks that no child process is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from minagent_anthropic import AnthropicChatClient, AnthropicProtocolError

from minagent import (
    Agent,
    Message,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    tool,
)
from tests._support.modes import run_with_updates

pytestmark = pytest.mark.skipif(
    not (shutil.which("fakellm") and shutil.which("llmock")),
    reason="fakellm/llmock not installed",
)

_BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _children() -> list[int]:
    """Live child processes of this test process (from /proc)."""
    me, out = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            out.append(int(entry.name))
    return out


@contextlib.asynccontextmanager
async def serving(
    args: list[str], ready_url: str, *, cwd: Path | None = None
) -> AsyncIterator[None]:
    """Run a server subprocess until ``ready_url`` answers; stop it (and reap it) on
    exit."""
    before = set(_children())
    process = await asyncio.create_subprocess_exec(
        *args,
        cwd=cwd,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(300):
                if process.returncode is not None:
                    err = await process.stderr.read() if process.stderr else b""
                    raise AssertionError(
                        f"{args[0]} exited with {process.returncode}: {err.decode()[-2000:]}"
                    )
                try:
                    async with session.get(ready_url) as response:
                        if response.status < 500:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"{args[0]} did not start")
        yield
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()
        if process.stderr is not None:
            await process.stderr.read()
    assert process.returncode is not None
    assert set(_children()) <= before, (
        f"child processes left: {set(_children()) - before}"
    )


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def weather_tool(seen: list[str]) -> Any:
    @tool
    def get_weather(location: str) -> str:
        """Current weather for a city."""
        seen.append(location)
        return f"Sunny, 21 degrees in {location}"

    return get_weather


async def run_agent(
    client: AnthropicChatClient, tools: list[Any], prompt: str, *, stream: bool
) -> Any:
    agent = Agent(client, "You report the weather.", tools=tools)
    final, updates = await run_with_updates(agent, prompt, stream=stream)
    if stream:
        texts = [u.text for u in updates]
        assert "".join(texts).strip()
    return final


# -- fakellm -------------------------------------------------------------------------------------

FAKELLM_RULES = """\
version: 1
defaults:
  fallback: deterministic_echo
rules:
  - name: weather_answer
    when:
      tool_result_contains: "Sunny"
    respond:
      content: "It is sunny in Paris."
  - name: weather_call
    when:
      messages_contain: "weather in paris"
    respond:
      tool_calls:
        - name: get_weather
          arguments: {location: Paris}
  - name: limited
    when:
      header.x-test-scenario: rate_limit
    respond:
      status: 429
      error: "Rate limit exceeded (mock)"
"""


@contextlib.asynccontextmanager
async def fakellm(tmp_path: Path) -> AsyncIterator[str]:
    config = tmp_path / "fakellm.yaml"
    config.write_text(FAKELLM_RULES)
    port = _free_port()
    args = [
        str(_BIN / "fakellm"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--config",
        str(config),
    ]
    async with serving(args, f"http://127.0.0.1:{port}/_fakellm/stats"):
        yield f"http://127.0.0.1:{port}"


async def test_fakellm_plain_and_streamed_agent_runs(
    tmp_path: Path, stream: bool
) -> None:
    """AN-19, AN-20, PV-34: against fakellm (a third-party Anthropic mock), an agent run
    with a real tool succeeds in both modes: the tool runs, its result goes back, the
    answer arrives."""
    seen: list[str] = []
    async with fakellm(tmp_path) as base_url:
        client = AnthropicChatClient(
            "claude-sonnet-4-5", base_url=base_url, api_key="sk-ant-fake"
        )
        async with client:
            response = await run_agent(
                client,
                [weather_tool(seen)],
                "What is the weather in Paris?",
                stream=stream,
            )
    assert seen == ["Paris"]
    assert response.text.endswith("It is sunny in Paris.")
    calls = [
        c for m in response.messages for c in m.contents if c.type == "function_call"
    ]
    results = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert [c.call_id for c in calls] == [r.call_id for r in results]
    assert calls[0].call_id.startswith("toolu_")


async def test_fakellm_rate_limit_is_a_typed_error(tmp_path: Path) -> None:
    """AN-20, PV-23: fakellm's 429 rule is a RateLimitError carrying its message, after
    the configured retries."""
    sleep = Sleeps()
    async with fakellm(tmp_path) as base_url:
        client = AnthropicChatClient(
            "claude-sonnet-4-5",
            base_url=base_url,
            api_key="sk-ant-fake",
            default_headers={"x-test-scenario": "rate_limit"},
            max_retries=1,
            sleep=sleep,
        )
        async with client:
            with pytest.raises(RateLimitError, match="Rate limit exceeded") as info:
                await client.get_response([Message("user", ["Hello"])])
    assert info.value.status == 429
    assert len(sleep.calls) == 1


# -- llmock --------------------------------------------------------------------------------------


class LLMock:
    def __init__(self, root: str, session: aiohttp.ClientSession) -> None:
        self.root = root
        self.session = session
        self.base_url = f"{root}/anthropic"

    async def scenario(self, *behaviors: dict[str, Any]) -> None:
        async with self.session.post(
            f"{self.root}/_llmock/scenario", json={"behaviors": list(behaviors)}
        ) as r:
            assert r.status == 201, await r.text()

    async def reset(self) -> None:
        async with self.session.post(f"{self.root}/_llmock/reset") as r:
            assert r.status == 200

    async def requests(self) -> list[dict[str, Any]]:
        async with self.session.get(f"{self.root}/_llmock/requests") as r:
            data: dict[str, Any] = await r.json()
        return [q for q in data["requests"] if q["path"].endswith("/v1/messages")]


@contextlib.asynccontextmanager
async def llmock() -> AsyncIterator[LLMock]:
    port = _free_port()
    args = [
        str(_BIN / "llmock"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    async with (
        serving(args, f"http://127.0.0.1:{port}/health"),
        aiohttp.ClientSession() as session,
    ):
        yield LLMock(f"http://127.0.0.1:{port}", session)


def client_for(mock: LLMock, **kw: Any) -> AnthropicChatClient:
    kw.setdefault("api_key", "sk-ant-llmock")
    return AnthropicChatClient("claude-sonnet-4-6", base_url=mock.base_url, **kw)


async def test_llmock_plain_and_streamed_runs_and_faults() -> None:
    """AN-19, AN-20, PV-25, PV-27, PV-29: against llmock (a third-party Anthropic mock
    with fault injection): a plain and a streamed run succeed; 429 and 529 with
    retry-after are survived by retrying after the server's delay; a 529 beyond the
    retries is a ServerError; a stream dropped, truncated or malformed after its first
    byte is a typed error and not retried."""
    async with llmock() as mock:
        # plain and streamed runs, with a scripted reply and a tool call through an
        # agent
        await mock.scenario({"type": "reply", "text": "Hello from llmock."})
        async with client_for(mock) as client:
            plain = await client.get_response([Message("user", ["Hi"])])
        assert plain.text == "Hello from llmock."
        assert plain.finish_reason == "stop"
        await mock.scenario(
            {
                "type": "reply",
                "tool_calls": [
                    {"name": "get_weather", "arguments": {"location": "Oslo"}}
                ],
            },
            {"type": "reply", "text": "Sunny in Oslo."},
        )
        seen: list[str] = []
        async with client_for(mock) as client:
            streamed = await run_agent(
                client, [weather_tool(seen)], "Weather in Oslo?", stream=True
            )
        assert seen == ["Oslo"]
        assert streamed.text.endswith("Sunny in Oslo.")

        # rate limit and overload, each answered with retry-after, survived by retries
        await mock.reset()
        await mock.scenario(
            {"type": "fail", "status": 429, "retry_after": 2},
            {"type": "fail", "status": 529, "retry_after": 1},
            {"type": "reply", "text": "Survived."},
        )
        sleep = Sleeps()
        async with client_for(mock, max_retries=2, sleep=sleep) as client:
            survived = await client.get_response([Message("user", ["Hi"])])
        assert survived.text == "Survived."
        assert sleep.calls == [2.0, 1.0]
        assert [q["status"] for q in await mock.requests()] == [429, 529, 200]

        # overload beyond the retries: a typed, retryable ServerError with the server's
        # delay
        await mock.reset()
        await mock.scenario(
            {"type": "fail", "status": 529, "retry_after": 3, "times": 2}
        )
        async with client_for(mock, max_retries=1, sleep=Sleeps()) as client:
            with pytest.raises(ServerError) as info:
                await consume(client)
        assert info.value.status == 529
        assert info.value.retryable
        assert info.value.retry_after == 3.0

        # broken streams: typed errors, never retried after the first byte
        for kind, error in (
            ("disconnect", StreamInterruptedError),
            ("truncate", StreamInterruptedError),
            ("malformed", AnthropicProtocolError),
        ):
            await mock.reset()
            await mock.scenario(
                {"type": "reply", "text": "one two three four five six seven eight"},
                {"type": "stream_fault", "kind": kind, "after_chunks": 3},
            )
            async with client_for(mock, max_retries=3, sleep=Sleeps()) as client:
                with pytest.raises(error):
                    await consume(client)
            assert len(await mock.requests()) == 1, kind


async def consume(client: AnthropicChatClient) -> None:
    async for _ in client.get_response([Message("user", ["Hi"])], stream=True):
        pass


def test_mock_server_packages_are_the_pinned_ones() -> None:
    """AN-20: the mock servers used above are the PyPI releases pinned in
    requirements-test.txt."""
    from importlib.metadata import version

    assert version("fakellm") == "0.3.5"
    assert version("llmock") == "0.2.2"
