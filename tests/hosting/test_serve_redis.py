"""``python -m minagent serve --store redis://...``: conversations shared by several
serving processes through a real redis-server (spec/hosting.md HS-134, HS-140)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import openai
import pytest

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
