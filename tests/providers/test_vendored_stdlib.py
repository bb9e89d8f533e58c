"""A provider needs no third-party package: vendored copies against third-party mock
servers (PV-41, PV-43).

``minagent/`` and the plugin packages ``minagent_openai``, ``minagent_anthropic`` and
``minagent_http`` are copied side by side under ``myapp/_vendor/``; a subprocess whose
``sys.path`` holds only that folder and the standard library (``python -I -S``: no
site-packages, so no aiohttp) talks to fakellm and llmock, started here as subprocesses
on 127.0.0.1: a plain answer, a streamed one and a tool round trip in both modes, for
OpenAI Chat Completions, the Responses API and Anthropic Messages.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

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
      tools_include: get_weather
    respond:
      tool_calls:
        - name: get_weather
          arguments: {location: Paris}
  - name: hello
    when:
      messages_contain: "hello"
    respond:
      content: "Hello from fakellm."
"""

SCRIPT = r'''
import asyncio, json, os, sys, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves it out: only the app's folder

from myapp._vendor.minagent import Agent, Message, tool
from myapp._vendor.minagent_anthropic import AnthropicChatClient
from myapp._vendor.minagent_openai import OpenAIChatClient, OpenAIResponsesClient

FAKELLM, LLMOCK = sys.argv[1], sys.argv[2]


def admin(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10):
        pass


seen = []


@tool
def get_weather(location: str) -> str:
    """Current weather for a city."""
    seen.append(location)
    return f"Sunny, 21 degrees in {location}"


async def case(name, make, prepare, tools):
    results = []
    for stream in (False, True):
        prepare()
        seen.clear()
        async with make() as client:
            transport = type(client.transport).__module__ + "." + type(client.transport).__name__
            if tools:
                agent = Agent(client, "You report the weather.", tools=[get_weather])
                run = agent.run("What is the weather in Paris? hello", stream=stream)
            else:
                run = client.get_response([Message("user", ["hello"])], stream=stream)
            if stream:
                texts = [u.text async for u in run]
                final = await run.get_final_response()
                assert "".join(texts) == final.text, (texts, final.text)
            else:
                final = await run
        kinds = [c.type for m in final.messages for c in m.contents]
        results.append({"case": name, "stream": stream, "text": final.text, "seen": list(seen),
                        "kinds": kinds, "transport": transport})
    return results


def fakellm_reset():
    admin(FAKELLM + "/_fakellm/reset")


def llmock_script(*behaviors):
    def prepare():
        admin(LLMOCK + "/_llmock/reset")
        admin(LLMOCK + "/_llmock/scenario", {"behaviors": list(behaviors)})

    return prepare


TEXT = {"type": "reply", "text": "Hello from llmock."}
CALL = {"type": "reply", "tool_calls": [{"name": "get_weather", "arguments": {"location": "Paris"}}]}
DONE = {"type": "reply", "text": "Sunny in Paris."}


async def main():
    out = []
    chat_fake = lambda: OpenAIChatClient("gpt-4o-mini", base_url=FAKELLM + "/v1", api_key="sk-fake")
    chat_mock = lambda: OpenAIChatClient("gpt-4o-mini", base_url=LLMOCK + "/v1", api_key="sk-fake")
    resp_mock = lambda: OpenAIResponsesClient("gpt-5-mini", base_url=LLMOCK + "/v1", api_key="sk-fake")
    anth_fake = lambda: AnthropicChatClient("claude-sonnet-4-5", base_url=FAKELLM, api_key="sk-ant-fake")
    anth_mock = lambda: AnthropicChatClient("claude-sonnet-4-6", base_url=LLMOCK + "/anthropic", api_key="sk-ant")
    out += await case("chat/fakellm/plain", chat_fake, fakellm_reset, False)
    out += await case("chat/fakellm/tool", chat_fake, fakellm_reset, True)
    out += await case("chat/llmock/plain", chat_mock, llmock_script(TEXT, TEXT), False)
    out += await case("chat/llmock/tool", chat_mock, llmock_script(CALL, DONE), True)
    out += await case("responses/llmock/plain", resp_mock, llmock_script(TEXT, TEXT), False)
    out += await case("responses/llmock/tool", resp_mock, llmock_script(CALL, DONE), True)
    out += await case("anthropic/fakellm/plain", anth_fake, fakellm_reset, False)
    out += await case("anthropic/fakellm/tool", anth_fake, fakellm_reset, True)
    out += await case("anthropic/llmock/plain", anth_mock, llmock_script(TEXT, TEXT), False)
    out += await case("anthropic/llmock/tool", anth_mock, llmock_script(CALL, DONE), True)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("aiohttp", "minagent", "minagent_openai", "yarl"))
    print(json.dumps({"results": out, "loaded": loaded, "path": sys.path}))


asyncio.run(main())
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _serve(args: list[str], health: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(health, timeout=1):
                return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                _stop(process)
                raise RuntimeError(
                    f"{args[2]} did not start: {log.read_text()[-2000:]}"
                ) from None
            time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    folder = tmp_path_factory.mktemp("mock-servers")
    (folder / "fakellm.yaml").write_text(FAKELLM_RULES)
    fake_port, mock_port = _free_port(), _free_port()
    serve = [
        sys.executable,
        "-c",
        "from fakellm.cli import main; main()",
        "serve",
        "--host",
        "127.0.0.1",
    ]
    fake = _serve(
        [*serve, "--port", str(fake_port), "--config", str(folder / "fakellm.yaml")],
        f"http://127.0.0.1:{fake_port}/_fakellm/stats",
        folder / "fakellm.log",
    )
    try:
        env_free = [
            sys.executable,
            "-c",
            "from llmock.cli import app; app()",
            "serve",
            "--host",
            "127.0.0.1",
        ]
        mock = _serve(
            [*env_free, "--port", str(mock_port), "--log-level", "warning"],
            f"http://127.0.0.1:{mock_port}/health",
            folder / "llmock.log",
        )
        try:
            yield f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{mock_port}"
        finally:
            _stop(mock)
    finally:
        _stop(fake)
    assert fake.poll() is not None
    assert mock.poll() is not None


def _vendor(tmp_path: Path) -> Path:
    vendor = tmp_path / "app" / "myapp" / "_vendor"
    vendor.mkdir(parents=True)
    (vendor.parent / "__init__.py").write_text("")
    (vendor / "__init__.py").write_text("")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "minagent", vendor / "minagent", ignore=ignore)
    for folder in ("openai", "anthropic", "http"):
        (package,) = (ROOT / "plugins" / folder).glob("minagent_*/__init__.py")
        shutil.copytree(package.parent, vendor / package.parent.name, ignore=ignore)
    return tmp_path / "app"


def test_vendored_providers_talk_to_fakellm_and_llmock_without_aiohttp(
    tmp_path: Path, servers: tuple[str, str]
) -> None:
    """PV-41, PV-43, PV-34: vendored side by side under ``myapp/_vendor`` and run with
    the standard library only, the OpenAI Chat Completions, Responses and Anthropic
    clients choose `StdlibTransport` and get plain, streamed and tool round-trip
    answers, both modes, from fakellm and llmock; no aiohttp and no second (top-level)
    minagent is loaded."""
    app = _vendor(tmp_path)
    script = app / "check.py"
    script.write_text(SCRIPT)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH",) and not k.endswith("_PROXY")
    }
    env = {
        k: v
        for k, v in env.items()
        if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(script), *servers],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    # no aiohttp, no yarl, no top-level minagent or plugin
    assert report["loaded"] == []
    assert all("site-packages" not in p for p in report["path"])
    results = {(r["case"], r["stream"]): r for r in report["results"]}
    assert len(results) == 20
    for (case, stream), result in results.items():
        assert (
            result["transport"]
            == "myapp._vendor.minagent.providers.stdlib.StdlibTransport"
        ), result
        if case.endswith("/plain"):
            expected = (
                "Hello from fakellm." if "fakellm" in case else "Hello from llmock."
            )
            assert result["text"] == expected, (case, stream, result)
            assert result["seen"] == []
        else:
            assert result["seen"] == ["Paris"], (case, stream, result)
            assert result["kinds"].count("function_call") == 1, (case, stream, result)
            assert result["kinds"].count("function_result") == 1, (case, stream, result)
            assert result["text"].endswith(
                ("It is sunny in Paris.", "Sunny in Paris.")
            ), (case, stream, result)
