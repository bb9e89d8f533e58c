"""The hosting application under uvicorn with 2 worker processes on loopback, with the
`openai` SDK, one SQLite store for both workers (spec/hosting.md HS-136, HS-125)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from minagent.stores import SQLiteSessionStore

from ._served import JOURNAL, ROOT, request_once, status_of

TOKEN = "uvicorn-test-token"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def children(pid: int) -> list[int]:
    """uvicorn's worker processes (multiprocessing's resource tracker left out)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"spawn_main" in command:
                    found.append(int(child))
    return found


@contextlib.contextmanager
def uvicorn_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MINAGENT_TEST_STORE": str(tmp_path / "conversations.db"),
        "MINAGENT_TEST_TOKEN": TOKEN,
        "MINAGENT_TEST_TICK": "0.05",
        JOURNAL: str(tmp_path / "journal.txt"),
    }
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "tests.hosting._uvicorn_app:app",
                "--workers",
                "2",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            cwd=ROOT,
            env=env,
            stdout=errors,
            stderr=errors,
            text=True,
        )
        try:
            yield process, port
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def until_ready(port: int, process: subprocess.Popen[str]) -> None:
    """Wait for both workers to serve (a condition, not a duration)."""
    request = (
        f"GET /v1/models HTTP/1.1\r\nauthorization: Bearer {TOKEN}\r\n"
        "connection: close\r\n\r\n"
    ).encode()
    for _ in range(3000):
        assert process.poll() is None, "uvicorn exited"
        with contextlib.suppress(OSError):
            if (
                len(children(process.pid)) == 2
                and status_of(await request_once(port, request)) == 200
            ):
                return
        await asyncio.sleep(0.02)
    raise AssertionError("uvicorn never became ready")


@contextlib.asynccontextmanager
async def sdk(port: int, key: str = TOKEN) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0
    )
    try:
        yield client
    finally:
        await client.close()
        for _ in range(10):
            await asyncio.sleep(0)


def turn_request(conversation: str, text: str) -> bytes:
    body = json.dumps({"conversation": conversation, "input": text}).encode()
    return (
        f"POST /turn HTTP/1.1\r\nauthorization: Bearer {TOKEN}\r\n"
        "content-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def test_two_workers_serve_the_sdk_and_share_conversations(
    tmp_path: Path, stream: bool
) -> None:
    """HS-136: under `uvicorn --workers 2` the guarded application answers the SDK
    (streamed and not) and refuses a wrong token; every turn of a conversation, each on
    a new connection to whichever worker takes it, sees all earlier turns, also when the
    conversation moves from one worker to the other, because it lives in the one SQLite
    store both workers use."""
    with uvicorn_process(tmp_path) as (process, port):
        await until_ready(port, process)
        workers = set(children(process.pid))
        assert len(workers) == 2
        request: Any = {
            "model": "echo",
            "messages": [{"role": "user", "content": "from uvicorn"}],
        }
        async with sdk(port) as client:
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
        assert text == "echo: from uvicorn"
        async with sdk(port, "wrong") as client:
            with pytest.raises(openai.AuthenticationError):
                await client.models.list()
        # turns go on (12 at least) until both workers have answered some: the
        # conversation then continued from one worker on the other
        pids: set[int] = set()
        turns = 0
        while turns < 12 or (len(pids) < 2 and turns < 200):
            answer = await request_once(port, turn_request("c1", f"turn {turns}"))
            assert status_of(answer) == 200
            data = json.loads(answer.split(b"\r\n\r\n", 1)[1])
            turns += 1
            assert data["user_turns"] == turns
            pids.add(data["pid"])
        assert pids == workers
    stored = await SQLiteSessionStore(tmp_path / "conversations.db").get("counter/c1")
    assert stored is not None
    assert json.dumps(stored.to_dict()).count('"role": "user"') == turns


async def test_a_disconnect_cancels_the_run_under_uvicorn(tmp_path: Path) -> None:
    """HS-125, HS-136: the guard cancels the run of a client that leaves mid-stream under
    uvicorn too."""
    journal = tmp_path / "journal.txt"
    with uvicorn_process(tmp_path) as (process, port):
        await until_ready(port, process)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = json.dumps(
            {
                "model": "slow",
                "stream": True,
                "messages": [{"role": "user", "content": "go"}],
            }
        ).encode()
        writer.write(
            f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
            f"authorization: Bearer {TOKEN}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        await reader.readuntil(b"tick 1")
        writer.close()
        await writer.wait_closed()
        for _ in range(3000):
            if journal.exists() and "cancelled" in journal.read_text():
                break
            await asyncio.sleep(0.01)
        assert journal.read_text().split() == ["started", "cancelled"]
