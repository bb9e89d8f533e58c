"""``python -m minagent serve`` in real processes on loopback, with the `openai` SDK and
hostile clients; the README's serve commands from a fresh copy of the repository
(spec/hosting.md HS-113, HS-115, HS-130 .. HS-135)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
import redis as redis_client

from minagent import Agent
from minagent.cli.serve import add_serve_parser, serve_command

from .._support.redis_server import SERVER as REDIS_SERVER
from .._support.redis_server import RedisServer
from ._served import (
    JOURNAL,
    ROOT,
    EchoModel,
    Served,
    read_response,
    request_once,
    served_process,
    start_serve,
    status_of,
    wait_banner,
)

TOKEN = "serve-test-token"


@contextlib.asynccontextmanager
async def sdk(served: Served, key: str = "unused") -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(
        base_url=f"{served.base}/v1", api_key=key, max_retries=0
    )
    try:
        yield client
    finally:
        await client.close()
        for _ in range(10):
            await asyncio.sleep(0)


def run_serve(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command expected to exit at once (a usage error)."""
    environment = {"PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "minagent", "serve", *args],
        cwd=ROOT,
        env={**_base_env(), **environment},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "MINAGENT_TOKEN"}


def chat(model: str, text: str = "hi") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


async def test_targets_are_served_and_urls_printed(stream: bool) -> None:
    """HS-130, HS-132: agents and factories (async ones too) named module:attribute are
    served by name; the banner names them, the bound port and each endpoint."""
    with served_process(
        "tests.hosting._served:echo", "tests.hosting._served:async_factory"
    ) as served:
        assert "echo, made-async" in served.banner
        assert f"POST {served.base}/v1/chat/completions" in served.banner
        assert f"GET  {served.base}/v1/models" in served.banner
        for line in (
            "POST {base}/v1/responses",
            "POST {base}/a2a/{{agent}}",
            "GET  {base}/a2a/{{agent}}/.well-known/agent-card.json",
            "POST {base}/agui/{{agent}}",
            "POST {base}/mcp/{{agent}}",
        ):
            assert line.format(base=served.base) in served.banner
        assert "no token" in served.banner
        async with sdk(served) as client:
            assert [m.id async for m in client.models.list()] == ["echo", "made-async"]
            if stream:
                events = await client.chat.completions.create(
                    **chat("made-async", "two words"), stream=True
                )
                async with events:
                    parts = [
                        c.choices[0].delta.content async for c in events if c.choices
                    ]
                text = "".join(p for p in parts if p)
            else:
                completion = await client.chat.completions.create(
                    **chat("made-async", "two words")
                )
                text = completion.choices[0].message.content or ""
        assert text == "echo: two words"
        code, errors = served.stop()
    assert code == 0
    assert "POST /v1/chat/completions 200" in errors


def test_bad_targets_and_options_are_one_error_line() -> None:
    """HS-130, HS-131, HS-134: a bad target, a bad option or a non-loopback address
    without a token is one `error:` line and exit status 2, before anything is bound."""
    cases = {
        ("tests.hosting._served:not_an_agent",): "not an agent",
        ("tests.hosting._served:needs_arguments",): "raised TypeError",
        ("tests.hosting._served:nothing",): "has no attribute",
        ("no_such_module_here:agent",): "cannot import",
        ("no-colon",): "module:attribute",
        (): "--demo",
        ("--demo", "--host", "0.0.0.0"): "without a token",
        ("--demo", "--host", "192.0.2.1"): "without a token",
        ("--demo", "--host", "example.com"): "without a token",
        ("--demo", "--store", "mongodb://x"): "sqlite:PATH or redis://",
        ("--demo", "--store", "redis://127.0.0.1:1/0"): "cannot open the store",
        ("--demo", "--store", "redis://:pw@127.0.0.1:1/0"): "127.0.0.1:1/0: cannot",
        ("--demo", "--store", "sqlite:/no/such/folder/x.db"): "does not exist",
        ("--demo", "--max-runs", "0"): "--max-runs",
        ("--demo", "--run-timeout", "0"): "--run-timeout",
        ("--demo", "--max-connections", "0"): "--max-connections",
        ("--demo", "--cors", "example.com"): "origin",
        ("--demo", "--port", "70000"): "--port",
        ("--demo", "--host", "0.0.0.0", "--token", " "): "token",
    }
    # HS-130: an address that cannot be bound (taken here), localhost counting as
    # loopback (HS-131)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = str(taken.getsockname()[1])
    cases[("--demo", "--port", port)] = f"cannot serve at 127.0.0.1:{port}: "
    cases[("--demo", "--host", "localhost", "--port", port)] = (
        f"cannot serve at localhost:{port}: "
    )
    with taken:
        for args, words in cases.items():
            done = run_serve(*args)
            assert done.returncode == 2, (args, done.stderr)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1, (args, done.stderr)
            assert lines[0].startswith("error: ")
            assert words in lines[0], (args, lines[0])
            assert "Traceback" not in done.stderr
            assert done.stdout == ""
    # an empty MINAGENT_TOKEN counts as unset
    done = run_serve("--demo", "--host", "0.0.0.0", env={"MINAGENT_TOKEN": ""})
    assert done.returncode == 2
    assert "without a token" in done.stderr


async def test_a_token_guards_a_non_loopback_bind() -> None:
    """HS-131: with MINAGENT_TOKEN set, a non-loopback address is served, and requests
    need the token; `--insecure` serves it open."""
    with served_process(
        "--demo", "--host", "0.0.0.0", env={"MINAGENT_TOKEN": TOKEN}
    ) as served:
        assert "bearer token required" in served.banner
        async with sdk(served, "wrong") as client:
            with pytest.raises(openai.AuthenticationError) as caught:
                await client.models.list()
        assert caught.value.status_code == 401
        async with sdk(served, TOKEN) as client:
            assert [m.id async for m in client.models.list()] == ["WeatherBot"]
        code, errors = served.stop()
        assert code == 0
        assert TOKEN not in errors
    with served_process("--demo", "--host", "0.0.0.0", "--insecure") as served:
        async with sdk(served) as client:
            assert [m.id async for m in client.models.list()] == ["WeatherBot"]


async def test_the_demo_answers_offline(stream: bool) -> None:
    """HS-133: `--demo` serves WeatherBot, which answers with its tools and scripted
    model, no key and no network."""
    with served_process("--demo") as served:
        async with sdk(served) as client:
            request: Any = chat("WeatherBot", "Weather in Paris, in Fahrenheit?")
            if stream:
                events = await client.chat.completions.create(**request, stream=True)
                async with events:
                    parts = [
                        c.choices[0].delta.content async for c in events if c.choices
                    ]
                text = "".join(p for p in parts if p)
            else:
                completion = await client.chat.completions.create(**request)
                text = completion.choices[0].message.content or ""
        assert served.stop()[0] == 0
    assert text == "In Paris it is 18 °C, which is 64.4 °F."


async def test_options_reach_the_guard_and_the_store(tmp_path: Path) -> None:
    """HS-134: --cors, --max-runs and --run-timeout are the guard's; --store
    sqlite:PATH is accepted and used as the application's store."""
    store = tmp_path / "conversations.db"
    journal = tmp_path / "journal.txt"
    with served_process(
        "tests.hosting._served:slow",
        "tests.hosting._served:echo",
        "--cors",
        "http://ui.example",
        "--max-runs",
        "1",
        "--run-timeout",
        "1",
        "--store",
        f"sqlite:{store}",
        env={
            "MINAGENT_TEST_TICK": "0.05",
            "MINAGENT_TEST_TICKS": "1000",
            JOURNAL: str(journal),
        },
    ) as served:
        preflight = (
            b"OPTIONS /v1/chat/completions HTTP/1.1\r\norigin: http://ui.example\r\n"
            b"access-control-request-method: POST\r\nconnection: close\r\n\r\n"
        )
        answer = await request_once(served.port, preflight)
        assert status_of(answer) == 204
        async with sdk(served) as client:
            slow = asyncio.ensure_future(client.chat.completions.create(**chat("slow")))
            for _ in range(1000):
                if journal.exists() and "started" in journal.read_text():
                    break
                await asyncio.sleep(0.01)
            with pytest.raises(openai.RateLimitError) as refused:
                await client.chat.completions.create(**chat("echo"))
            assert refused.value.response.headers["retry-after"] == "1"
            with pytest.raises(openai.InternalServerError) as cut:
                await slow
            assert cut.value.status_code == 504
        served.stop()


async def test_sigterm_lets_a_running_stream_finish() -> None:
    """HS-135, HS-115: SIGTERM while a stream runs: the stream is completed
    (`data: [DONE]`), new connections are refused, and the command exits 0."""
    with served_process(
        "tests.hosting._served:slow",
        env={"MINAGENT_TEST_TICK": "0.05", "MINAGENT_TEST_TICKS": "30"},
    ) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        body = json.dumps({**chat("slow"), "stream": True}).encode()
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: %d\r\n\r\n"
            % len(body)
            + body
        )
        await writer.drain()
        await reader.readuntil(b"tick 0")
        served.process.send_signal(signal.SIGTERM)
        refused = False
        for _ in range(1000):
            try:
                _r, probe = await asyncio.open_connection("127.0.0.1", served.port)
            # refused, or reset when the listener closed with it in the backlog
            except (ConnectionRefusedError, ConnectionResetError):
                refused = True
                break
            probe.close()
            await asyncio.sleep(0.01)
        rest = await reader.read()
        writer.close()
        assert refused
        assert b"tick 29" in rest
        assert b"data: [DONE]" in rest
        assert rest.endswith(b"0\r\n\r\n")
        code = served.process.wait(timeout=60)
    assert code == 0


async def test_a_thousand_idle_connections_stay_bounded() -> None:
    """HS-113: 1,000 idle connections against `--max-connections 50`: a real request is
    still answered, the excess connections are closed, and the process holds no more
    sockets than the cap (beside its own) while the 1,000 are open."""
    with served_process(
        "tests.hosting._served:echo", "--max-connections", "50"
    ) as served:
        # the listening socket and the event loop's own pair
        baseline = served.socket_count()
        idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        for _ in range(10):
            idle += await asyncio.gather(
                *(asyncio.open_connection("127.0.0.1", served.port) for _ in range(100))
            )
        async with sdk(served) as client:
            completion = await client.chat.completions.create(
                **chat("echo", "still here")
            )
        assert completion.choices[0].message.content == "echo: still here"
        for _ in range(1000):
            closed = sum(reader.at_eof() for reader, _writer in idle)
            if closed >= 1000 - 50:
                break
            await asyncio.sleep(0.01)
        # all 1,000 are still open on this side; the server holds at most the cap
        assert closed >= 1000 - 50
        assert served.socket_count() <= baseline + 50
        for _reader, writer in idle:
            writer.close()


def copy_tracked_files(copy: Path) -> None:
    """The repository's tracked files, as they are in the working tree, into ``copy``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)


async def test_the_readme_serve_commands_from_a_fresh_copy(tmp_path: Path) -> None:
    """HS-130, HS-133: the README's `python -m minagent serve` lines, run in a copy of
    the repository's tracked files with the README's `my_app.py`, serve: the agent is
    listed, and the demo answers."""
    copy = tmp_path / "repo"
    copy_tracked_files(copy)
    readme = (copy / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Serve an agent", 1)[1].split("\n## ", 1)[0]
    app_code = re.search(r"```python\n(# my_app\.py.*?)```", section, re.S)
    assert app_code is not None
    (copy / "my_app.py").write_text(app_code.group(1), encoding="utf-8")
    commands = re.findall(r"^python -m minagent serve (.*)$", section, re.M)
    assert commands == ["my_app:assistant", "--demo"]
    for command in commands:
        process, errors = start_serve(*command.split(), "--port", "0", cwd=copy)
        try:
            served = Served(process, wait_banner(process, errors), errors)
            async with sdk(served) as client:
                names = [m.id async for m in client.models.list()]
                if command == "--demo":
                    completion = await client.chat.completions.create(
                        **chat("WeatherBot")
                    )
                    assert "°F" in (completion.choices[0].message.content or "")
            assert names == ["WeatherBot" if command == "--demo" else "assistant"]
            code, _ = served.stop()
            assert code == 0
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=60)
            errors.close()


async def test_keep_alive_through_the_command() -> None:
    """HS-130: the command's server keeps connections alive (HS-110) behind the
    guard."""
    with served_process("tests.hosting._served:echo") as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        for _ in range(3):
            writer.write(b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n")
            status, headers, _body = await read_response(reader)
            assert (status, headers["connection"]) == (200, "keep-alive")
        writer.close()


async def test_agents_are_entered_while_served(tmp_path: Path) -> None:
    """HS-130: an agent that is an async context manager is entered before serving and
    exited at shutdown."""
    journal = tmp_path / "journal.txt"
    with served_process(
        "tests.hosting._served:with_context", env={JOURNAL: str(journal)}
    ) as served:
        assert journal.read_text().split() == ["entered"]
        async with sdk(served) as client:
            completion = await client.chat.completions.create(**chat("ctx", "x"))
        assert completion.choices[0].message.content == "echo: x"
        code, _errors = served.stop()
    assert code == 0
    assert journal.read_text().split() == ["entered", "exited"]


async def test_a_second_signal_cancels_at_once(tmp_path: Path) -> None:
    """HS-115, HS-135: a second SIGTERM during the graceful shutdown cancels the running
    request (its run is cancelled, the stream is cut) and the command exits 0."""
    journal = tmp_path / "journal.txt"
    with served_process(
        "tests.hosting._served:slow",
        env={
            "MINAGENT_TEST_TICK": "0.05",
            "MINAGENT_TEST_TICKS": "100000",
            JOURNAL: str(journal),
        },
    ) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        body = json.dumps({**chat("slow"), "stream": True}).encode()
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: %d\r\n\r\n"
            % len(body)
            + body
        )
        await writer.drain()
        await reader.readuntil(b"tick 0")
        served.process.send_signal(signal.SIGTERM)
        await reader.readuntil(b"tick 3")
        served.process.send_signal(signal.SIGTERM)
        rest = await reader.read()
        writer.close()
        assert b"data: [DONE]" not in rest
        assert not rest.endswith(b"0\r\n\r\n")
        code = served.process.wait(timeout=60)
    assert code == 0
    assert journal.read_text().split() == ["started", "cancelled"]


def test_demo_without_a_demo_agent_is_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """HS-133: `serve_command` given no demo agent refuses `--demo` with one `error:`
    line and exit status 2, before anything is bound."""
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--demo", "--port", "0"])
    out = io.StringIO()
    assert serve_command(args, out) == 2
    assert capsys.readouterr().err == "error: this command line has no demo agent\n"
    assert out.getvalue() == ""


class PlainAgent:
    """A served agent that is not an async context manager: a name and a `run`."""

    def __init__(self) -> None:
        self.name = "plain"
        self._inner = Agent(EchoModel(), name="plain")

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.run(*args, **kwargs)


plain = PlainAgent()


async def test_an_agent_that_is_no_context_manager_is_served(stream: bool) -> None:
    """HS-130: an agent that is not an async context manager (anything with a `run`)
    is served as it is, and the command stops cleanly."""
    with served_process("tests.hosting.test_serve_command:plain") as served:
        async with sdk(served) as client:
            if stream:
                events = await client.chat.completions.create(
                    **chat("plain", "x"), stream=True
                )
                async with events:
                    parts = [
                        c.choices[0].delta.content async for c in events if c.choices
                    ]
                text = "".join(p for p in parts if p)
            else:
                completion = await client.chat.completions.create(**chat("plain", "x"))
                text = completion.choices[0].message.content or ""
        code, errors = served.stop()
    assert text == "echo: x"
    assert code == 0
    assert "Traceback" not in errors


@pytest.mark.skipif(REDIS_SERVER is None, reason="no redis-server on this machine")
async def test_a_redis_store_keeps_the_conversation_and_stops_cleanly(
    tmp_path: Path,
) -> None:
    """HS-134, HS-135: with `--store redis://...` a conversation is kept in that Redis
    database, and SIGTERM stops the command with exit status 0 and no traceback."""
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        with served_process(
            "tests.hosting._served:echo",
            "--store",
            redis.url,
        ) as served:
            async with sdk(served) as client:
                response = await client.responses.create(
                    model="echo", input="hi", conversation="kept", store=False
                )
            code, errors = served.stop()
        stored = redis_client.Redis.from_url(redis.url, decode_responses=True)
        try:
            keys = [str(key) for key in stored.keys("*")]
        finally:
            stored.close()
    finally:
        redis.stop()
    assert response.output_text == "echo: hi"
    assert code == 0
    assert any("kept" in key for key in keys), keys
    assert "Traceback" not in errors
