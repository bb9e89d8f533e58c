"""``python -m minagent serve --store redis://...``: conversations shared by several
serving processes through a real redis-server (spec/hosting.md HS-134, HS-140)."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import signal
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path

import openai
import pytest

from minagent.cli.serve import add_serve_parser, serve_command

from .._support.redis_server import SERVER, RedisServer
from ._served import ROOT, served_process
from .test_serve_command import run_serve

pytestmark = pytest.mark.skipif(
    SERVER is None, reason="no redis-server on this machine"
)


async def test_two_serving_processes_share_conversations_in_redis(
    tmp_path: Path,
) -> None:
    """HS-134, HS-140: the turns of one conversation alternate between two serve
    processes on one Redis database; each turn's run sees every earlier turn."""
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        target = "tests.hosting._served:counting"
        with (
            served_process(target, "--store", redis.url) as first,
            served_process(target, "--store", redis.url) as second,
        ):
            answers = []
            for turn, served in enumerate([first, second, first, second], 1):
                client = openai.AsyncOpenAI(
                    base_url=f"{served.base}/v1", api_key="unused", max_retries=0
                )
                try:
                    response = await client.responses.create(
                        model="counting",
                        input=f"message {turn}",
                        conversation="shared",
                        store=False,
                    )
                finally:
                    await client.close()
                    for _ in range(10):
                        await asyncio.sleep(0)
                answers.append(response.output_text)
    finally:
        redis.stop()
    assert answers == ["turn 1", "turn 2", "turn 3", "turn 4"]


def test_redis_without_the_plugin_names_the_install_command(tmp_path: Path) -> None:
    """HS-134: a Redis store where the plugin cannot be imported is one error line
    naming the command that installs it, exit status 2."""
    (tmp_path / "minagent_redis.py").write_text("raise ImportError('not here')\n")
    done = run_serve(
        "tests.hosting._served:echo",
        "--store",
        "redis://127.0.0.1:1/0",
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}"},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: --store redis://...")
    assert "pip install" in done.stderr
    assert "plugins/redis" in done.stderr


class _Banner(io.StringIO):
    """The command's output: once the banner is printed, a request is made to the
    served agent and the process is sent SIGTERM (HS-135)."""

    def __init__(self, clients: Callable[[], int]) -> None:
        super().__init__()
        self.clients = clients
        self.while_serving: list[int] = []
        self.thread: threading.Thread | None = None

    def write(self, text: str) -> int:
        written = super().write(text)
        if "GET" in text and self.thread is None:
            base = text.split("GET ", 1)[1].split()[0].rsplit("/v1", 1)[0]
            # the server answers on this thread's event loop: ask from another
            self.thread = threading.Thread(target=self._ask, args=(base,))
            self.thread.start()
        return written

    def _ask(self, base: str) -> None:
        try:
            with urllib.request.urlopen(f"{base}/v1/models", timeout=10) as answer:
                assert answer.status == 200
            self.while_serving.append(self.clients())
        finally:
            os.kill(os.getpid(), signal.SIGTERM)


def test_the_store_connections_close_when_the_server_stops(tmp_path: Path) -> None:
    """HS-134: the Redis store's connections are closed when the server stops: in the
    same process, after `serve_command` returns, Redis counts no client of it."""
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        import redis as redis_py

        probe = redis_py.Redis.from_url(redis.url)

        def clients() -> int:
            # every client but this probe
            return len(probe.client_list()) - 1

        parser = argparse.ArgumentParser()
        add_serve_parser(parser.add_subparsers())
        args = parser.parse_args(
            ["serve", "tests.hosting._served:echo", "--port", "0", "--store", redis.url]
        )
        out = _Banner(clients)
        assert serve_command(args, out) == 0
        assert out.thread is not None
        out.thread.join(10)
        # the store had a connection open while serving, none once stopped
        assert out.while_serving[0] >= 1
        assert clients() == 0
        probe.close()
    finally:
        redis.stop()


async def test_the_dev_ui_lists_the_threads_stored_in_redis(tmp_path: Path) -> None:
    """HS-228, RD-11, SE-69: with ``--store redis://...`` the dev UI's thread list
    comes from the store: a conversation made through the API (not the page) is
    listed, ``"listed": true``, the last saved first, titled by its first prompt (the
    Responses API's conversations are stored as ``conversation:{id}``)."""
    redis = RedisServer(tmp_path)
    redis.start()
    # the plugin of this tree, before any installed one
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'plugins' / 'redis'}"}
    try:
        target = "tests.hosting._served:counting"
        with served_process(target, "--store", redis.url, "--ui", env=env) as served:
            client = openai.AsyncOpenAI(
                base_url=f"{served.base}/v1", api_key="unused", max_retries=0
            )
            try:
                for conversation, prompt in (
                    ("first", "hello first"),
                    ("second", "hello second"),
                ):
                    await client.responses.create(
                        model="counting",
                        input=prompt,
                        conversation=conversation,
                        store=False,
                    )
            finally:
                await client.close()
                for _ in range(10):
                    await asyncio.sleep(0)

            def threads() -> bytes:
                url = f"{served.base}/ui/api/threads/counting"
                with urllib.request.urlopen(url, timeout=10) as answer:
                    body: bytes = answer.read()
                    return body

            listed = json.loads(await asyncio.to_thread(threads))
    finally:
        redis.stop()
    assert listed == {
        "agent": "counting",
        "listed": True,
        "threads": [
            {"threadId": "conversation:second", "title": "hello second"},
            {"threadId": "conversation:first", "title": "hello first"},
        ],
    }
