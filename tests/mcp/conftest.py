"""MCP tests: helpers to start peers, and a session-wide check that no MCP process
outlives the tests.

Every server these tests start carries ``MCP_TEST_MARKER_ROOT`` in its command line or
runs one of the scripts in this directory; after the session none of them may still
exist (MCP-10).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "fastmcp_server.py",
    "silent_server.py",
    "stubborn_server.py",
    "mcp-serve",
    "hostile_server.py",
    "hostile_http_server.py",
    "tests.mcp.http_served",
)


def our_processes() -> list[tuple[int, str, str]]:
    """(pid, state, command line) of every live process running one of our MCP peers."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (
                (entry / "cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode("utf-8", "replace")
            )
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state = stat.rpartition(")")[2].split()[0]
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == me and any(s in cmdline for s in SCRIPTS):
            found.append((int(entry.name), state, cmdline))
    return found


@pytest.fixture(scope="session", autouse=True)
def no_mcp_process_survives() -> Iterator[None]:
    """MCP-10: after the whole session, no server process we started is alive (or a
    zombie)."""
    yield
    left = our_processes()
    assert not left, f"MCP server processes outlived the tests: {left}"


def server_args(mode: str = "normal") -> list[str]:
    return [str(HERE / "fastmcp_server.py"), mode]


PYTHON = sys.executable


async def eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait until ``check()`` is true; fail after ``seconds`` (for effects in another
    process)."""
    async with asyncio.timeout(seconds):
        while not check():  # noqa: ASYNC110 - the condition lives in another process: polling is the only way
            await asyncio.sleep(0.02)


def gone(pid: int) -> bool:
    """The process no longer exists (not even as a zombie)."""
    return not Path(f"/proc/{pid}").exists()
