"""The Responses client against a real third-party server: ``llmock`` (its ``POST
/v1/responses``), started as a subprocess on 127.0.0.1 and stopped after the tests
(OR-20, PV-34).

llmock answers like a model: offered tools, it calls the best-matching one with example
arguments; once the last input item is a function call output, it answers in text. Its
scenario queue injects faults (``/_llmock/scenario``) and its journal records every
request with its body (``/_llmock/requests``).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from minagent_openai import OpenAIProtocolError, OpenAIResponsesClient

from minagent import (
    Agent,
    ChatResponse,
    Message,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    tool,
)
from tests._support.modes import run_with_updates


class LLMock:
    def __init__(self, port: int, process: subprocess.Popen[bytes]) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.process = process

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read() or b"null")

    def reset(self) -> None:
        self.call("POST", "/_llmock/reset")

    def script(self, *behaviors: dict[str, Any]) -> None:
        self.call("POST", "/_llmock/scenario", {"behaviors": list(behaviors)})

    def bodies(self) -> list[Any]:
        return [
            r["body"]
            for r in self.call("GET", "/_llmock/requests")["requests"]
            if r["path"] == "/v1/responses"
        ]

    def client(self, **kwargs: Any) -> OpenAIResponsesClient:
        kwargs.setdefault("api_key", "llmock-test-key")
        return OpenAIResponsesClient("gpt-5-mini", base_url=f"{self.url}/v1", **kwargs)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def llmock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMock]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMOCK_")}
    command = [
        sys.executable,
        "-m",
        "llmock.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    # a file never fills up
    log = (tmp_path_factory.mktemp("llmock") / "stderr.log").open("w+b")
    process = subprocess.Popen(
        [*command, "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=env,
    )
    server = LLMock(port, process)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                server.call("GET", "/health")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    text = log.read()[-2000:].decode(errors="replace")
                    raise RuntimeError(f"llmock did not start: {text}") from None
                time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
    assert process.poll() is not None, "llmock is still running"


async def _run(agent: Agent, text: str, stream: bool, **kwargs: Any) -> Any:
    final, updates = await run_with_updates(agent, text, stream=stream, **kwargs)
    if stream:
        texts = [u.text for u in updates]
        assert "".join(texts).endswith(final.messages[-1].text)
    return final


async def test_text(llmock: LLMock, stream: bool) -> None:
    """PV-34, OR-13, OR-17: a text answer from llmock through Agent.run, with usage."""
    llmock.reset()
    llmock.script({"type": "reply", "text": "Hello from llmock."})
    async with llmock.client() as client:
        response = await _run(Agent(client, "Be brief."), "Say hello.", stream)
    assert response.text == "Hello from llmock."
    assert response.usage_details is not None
    assert response.usage_details.total_token_count
    [body] = llmock.bodies()
    assert body["instructions"] == "Be brief."


async def test_tool_round_trip_and_thread(llmock: LLMock, stream: bool) -> None:
    """PV-34, OR-10, OR-15: llmock calls the tool, the output goes back with
    previous_response_id, and the thread continues on the service."""
    llmock.reset()
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        seen.append(city)
        return f"Sunny in {city}"

    async with llmock.client() as client:
        agent = Agent(client, "Weather bot.", tools=[get_weather])
        thread = agent.get_new_thread()
        first = await _run(
            agent, "What is the weather in Paris?", stream, thread=thread
        )
        after_first = thread.service_thread_id
        await _run(agent, "And in Rome?", stream, thread=thread)
    assert seen == ["mock-city", "mock-city"]  # llmock's example argument for a string
    assert first.text
    bodies = llmock.bodies()
    assert len(bodies) == 4
    call_response = first.messages[0].message_id
    assert call_response is not None
    assert call_response.startswith("resp_")
    assert "previous_response_id" not in bodies[0]
    assert bodies[1]["previous_response_id"] == call_response
    assert bodies[1]["input"] == [
        {
            "type": "function_call_output",
            "call_id": bodies[1]["input"][0]["call_id"],
            "output": "Sunny in mock-city",
        }
    ]
    assert after_first is not None
    assert after_first != call_response
    assert bodies[2]["previous_response_id"] == after_first
    assert bodies[2]["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "And in Rome?"}],
        }
    ]
    assert [i["type"] for i in bodies[3]["input"]] == ["function_call_output"]


class _Sleeps:
    """asyncio.sleep that records its delays (llmock's verdict checks the real
    timing)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await asyncio.sleep(seconds)


class _Half:
    def random(self) -> float:
        return 0.5


async def test_rate_limit_and_bursts_are_retried(llmock: LLMock, stream: bool) -> None:
    """OR-20, PV-25, PV-27: llmock's 429 with Retry-After and a 503 burst are retried;
    the verdict passes."""
    llmock.reset()
    llmock.script(
        {"type": "fail", "status": 429, "retry_after": 0.2},
        {"type": "fail", "status": 503, "times": 2, "retry_after": 0.1},
        {"type": "reply", "text": "Finally."},
    )
    sleep = _Sleeps()
    async with llmock.client(max_retries=3, sleep=sleep, rng=_Half()) as client:
        response = await _run(Agent(client), "Hi", stream)
    assert response.text == "Finally."
    assert sleep.calls == [
        pytest.approx(0.2, abs=0.01),
        pytest.approx(0.1, abs=0.01),
        pytest.approx(0.1, abs=0.01),
    ]
    verdict = llmock.call("GET", "/_llmock/verdict")
    assert verdict["passed"], verdict


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, RateLimitError), (503, ServerError), (408, ProviderTimeoutError)],
)
async def test_errors_without_retries(
    llmock: LLMock, status: int, error: type[Exception]
) -> None:
    """OR-20, PV-23: llmock's error answers become typed errors with their status."""
    llmock.reset()
    llmock.script({"type": "fail", "status": status, "message": "llmock says no"})
    async with llmock.client(max_retries=0) as client:
        with pytest.raises(error) as info:
            await client.get_response([Message("user", ["Hi"])])
    assert getattr(info.value, "status", None) == status


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ({"kind": "disconnect", "after_chunks": 3}, StreamInterruptedError),
        ({"kind": "truncate", "after_chunks": 3}, StreamInterruptedError),
        ({"kind": "malformed", "after_chunks": 3}, OpenAIProtocolError),
        (
            {"kind": "stall", "after_chunks": 3, "stall_seconds": 5.0},
            StreamInterruptedError,
        ),
    ],
)
async def test_stream_faults(
    llmock: LLMock, fault: dict[str, Any], error: type[Exception]
) -> None:
    """OR-18, OR-20, PV-15, PV-29: llmock's stream faults are typed errors; nothing
    hangs or is taken for a whole answer."""
    llmock.reset()
    llmock.script(
        {"type": "reply", "text": "one two three four five six seven eight nine ten"},
        {"type": "stream_fault", **fault},
    )
    async with llmock.client(max_retries=0, timeout=0.5) as client:
        stream = client.get_response([Message("user", ["Hi"])], stream=True)
        with pytest.raises(error):
            await _consume(stream)


async def _consume(stream: Any) -> ChatResponse:
    async for _ in stream:
        pass
    final: ChatResponse = await stream.get_final_response()
    return final
