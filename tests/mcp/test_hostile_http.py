"""Hostile HTTP peers as real subprocesses on real sockets: a server that answers too
much or too little (MCP-45, MCP-46), and a client that abuses our server (MCP-49).

Every test leaves no process, task or file descriptor of its own behind."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from minagent_mcp_http import MCPStreamableHTTPTool, make_app

from minagent import MCPConnectionError, MCPProtocolError
from minagent.mcp.jsonrpc import MAX_PEER_REQUESTS
from minagent.mcp.server import MCPServer

from .conftest import HERE, PYTHON, eventually
from .served_agent import make_agent

ROOT = Path(__file__).resolve().parents[2]
ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18"},
}


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def no_descriptor_left() -> Iterator[None]:
    """Every test closes what it opened: as many file descriptors after it as before."""
    before = open_fds()
    yield
    assert open_fds() == before


@asynccontextmanager
async def process(*args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    child = await asyncio.create_subprocess_exec(
        PYTHON,
        *args,
        cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        yield child
    finally:
        if child.returncode is None:
            child.kill()
        await child.wait()


@asynccontextmanager
async def hostile_server(mode: str, mib: int = 33) -> AsyncIterator[str]:
    async with process(str(HERE / "hostile_http_server.py"), mode, str(mib)) as child:
        assert child.stdout is not None
        async with asyncio.timeout(30):
            port = int((await child.stdout.readline()).split()[1])
        yield f"http://127.0.0.1:{port}/mcp"


# -- a hostile server --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["huge-json", "huge-sse"])
async def test_an_answer_longer_than_the_bound_is_a_protocol_error(mode: str) -> None:
    """MCP-45: a JSON answer or an SSE event longer than 32 MiB is an MCPProtocolError
    naming the server and the bound, read no further than the bound."""
    async with (
        hostile_server(mode) as url,
        MCPStreamableHTTPTool("hostile", url) as tool,
    ):
        async with asyncio.timeout(60):
            with pytest.raises(
                MCPProtocolError,
                match=r"'hostile' sent a message longer than 33554432 bytes",
            ):
                await tool.ping()


async def test_an_error_body_that_never_ends_fails_the_request_at_once() -> None:
    """MCP-45: an HTTP 500 whose body never ends is read to 64 KiB: the request fails
    with MCPConnectionError naming the status, quoting the start of the body."""
    async with (
        hostile_server("huge-error") as url,
        MCPStreamableHTTPTool("hostile", url) as tool,
    ):
        async with asyncio.timeout(60):
            with pytest.raises(
                MCPConnectionError,
                match=r"'hostile' answered HTTP 500 Internal Server Error: x{200}$",
            ):
                await tool.ping()
        assert tool.is_connected  # an HTTP error fails the request, not the session


@pytest.mark.parametrize("mode", ["sse-no-answer", "sse-resumed-no-answer"])
@pytest.mark.parametrize("request_timeout", [None, 60.0])
async def test_an_event_stream_without_the_answer_fails_the_request_at_once(
    request_timeout: float | None, mode: str
) -> None:
    """MCP-46, MCP-40: an SSE answer that ends without the JSON-RPC answer — at once, or
    after it broke and was resumed with Last-Event-ID — fails the request at once, even
    with
    request_timeout=None; the session goes on."""
    async with (
        hostile_server(mode) as url,
        MCPStreamableHTTPTool("hostile", url, request_timeout=request_timeout) as tool,
        asyncio.timeout(30),
    ):
        with pytest.raises(
            MCPConnectionError,
            match=r"the event stream ended without the answer to request",
        ):
            await tool.ping()
        assert await tool.load_tools() == []
        assert tool.is_connected


async def test_a_flood_of_server_requests_over_http_holds_a_bounded_number() -> None:
    """MCP-44, MCP-45: a server that sends 5,000 requests in an event stream and never
    answers the client's POSTed answers makes the session hold at most 64 of them and
    the transport queue at most 64 messages (the stream's reader waits for room);
    closing ends it all."""
    async with (
        hostile_server("flood", 5) as url,
        MCPStreamableHTTPTool("hostile", url) as tool,
    ):
        session = tool._session
        assert session is not None
        queue = session.transport._queue  # type: ignore[attr-defined]
        ping = asyncio.create_task(tool.ping())
        try:
            most = queued = 0
            # at least 0.5 s of flood, until both are full (at most 10 s)
            for turn in range(1000):
                most = max(most, len(session._handlers) + len(session._sending))
                queued = max(queued, queue.qsize())
                assert len(asyncio.all_tasks()) <= 2 * MAX_PEER_REQUESTS + 8
                if turn >= 50 and most == queued == MAX_PEER_REQUESTS:
                    break
                await asyncio.sleep(0.01)
            assert most == MAX_PEER_REQUESTS
            assert queued == MAX_PEER_REQUESTS
        finally:
            ping.cancel()
            await asyncio.gather(ping, return_exceptions=True)


# -- a hostile client --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def our_server(
    max_sessions: int = 1024,
    session_timeout: float = 3600.0,
    read_timeout: float = 30.0,
    started: list[asyncio.subprocess.Process] | None = None,
) -> AsyncIterator[str]:
    port = free_port()
    args = [str(port), str(max_sessions), str(session_timeout), str(read_timeout)]
    async with process("-m", "tests.mcp.http_served", *args) as child:
        if started is not None:
            started.append(child)
        async with asyncio.timeout(30):
            while True:
                try:
                    _reader, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                await writer.wait_closed()
                break
        yield f"http://127.0.0.1:{port}/mcp"


async def initialize(http: aiohttp.ClientSession, url: str) -> dict[str, str]:
    async with http.post(url, json=INIT, headers=ACCEPT) as response:
        assert response.status == 200
        return {**ACCEPT, "Mcp-Session-Id": response.headers["Mcp-Session-Id"]}


def call(request_id: int, task: str) -> dict[str, object]:
    arguments = {"name": "Task_Runner", "arguments": {"task": task}}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": arguments,
    }


@pytest.mark.parametrize("cancel", ["DELETE", "notifications/cancelled", "shutdown"])
async def test_a_request_reusing_a_running_id_is_refused_and_the_first_stays_cancellable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cancel: str
) -> None:
    """MCP-49, MCP-36, MCP-42: a second request with the id of a running call gets 400
    and error -32600 naming the id; the first call runs on, and DELETE or
    notifications/cancelled still cancels it (answered with -32800), as does the
    server's shutdown (SIGINT)."""
    marker = tmp_path / "marker"
    monkeypatch.setenv("MCP_TEST_MARKER", str(marker))
    started: list[asyncio.subprocess.Process] = []
    async with our_server(started=started) as url, aiohttp.ClientSession() as http:
        headers = await initialize(http, url)
        first = asyncio.create_task(
            http.post(url, json=call(5, "slow one"), headers=headers)
        )
        try:
            await asyncio.sleep(0.5)
            async with http.post(
                url, json=call(5, "quick"), headers=headers
            ) as response:
                assert response.status == 400
                answer = await response.json()
            assert answer == {
                "jsonrpc": "2.0",
                "id": 5,
                "error": {"code": -32600, "message": "request id 5 is already in use"},
            }
            if cancel == "shutdown":
                started[0].send_signal(signal.SIGINT)
                await eventually(marker.exists)  # the first run was cancelled
                async with asyncio.timeout(30):
                    assert await started[0].wait() is not None
                return
            if cancel == "DELETE":
                async with http.delete(url, headers=headers) as response:
                    assert response.status == 200
            else:
                cancelled = {
                    "jsonrpc": "2.0",
                    "method": cancel,
                    "params": {"requestId": 5},
                }
                async with http.post(url, json=cancelled, headers=headers) as response:
                    assert response.status == 202
            await eventually(marker.exists)  # the first run was cancelled
            async with asyncio.timeout(30):
                async with await first as response:
                    assert (await response.json())["error"]["code"] == -32800
        finally:
            first.cancel()
            await asyncio.gather(first, return_exceptions=True)


BAD = {
    "id-list": (b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32600),
    "id-object": (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600),
    "id-null": (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600),
    "id-true": (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600),
    "deep": (b"[" * 100_000 + b"]" * 100_000, -32700),
}


async def test_malformed_messages_are_4xx_and_serving_goes_on() -> None:
    """MCP-49: a body nested 100,000 deep is 400 with -32700, an id that is a list, an
    object, null or a bool is 400 with -32600 (id null); the server answers the next
    request."""
    async with our_server() as url, aiohttp.ClientSession() as http:
        headers = {**(await initialize(http, url)), "Content-Type": "application/json"}
        for name, (body, code) in BAD.items():
            async with http.post(url, data=body, headers=headers) as response:
                assert response.status == 400, name
                error = await response.json()
            assert error["id"] is None
            assert error["error"]["code"] == code, name
        async with http.post(
            url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers
        ) as response:
            assert await response.json() == {"jsonrpc": "2.0", "id": 9, "result": {}}


async def test_sessions_are_capped_and_expire() -> None:
    """MCP-49: with max_sessions=3, once the sessions have been idle longer than
    session_timeout they are forgotten: a new initialize succeeds and an old id is
    404."""
    async with (
        our_server(max_sessions=3, session_timeout=1.0) as url,
        aiohttp.ClientSession() as http,
    ):
        sessions = [await initialize(http, url) for _ in range(3)]
        await asyncio.sleep(1.2)
        await initialize(http, url)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        async with http.post(url, json=ping, headers=sessions[0]) as response:
            assert response.status == 404


async def test_slow_connections_are_closed() -> None:
    """MCP-49: with read_timeout=0.5, a connection that never finishes its headers is
    closed, and a body that does not arrive is answered 408 and closed."""
    async with our_server(read_timeout=0.5) as url:
        port = int(url.split(":")[2].split("/")[0])
        for data, expected in (
            (b"POST /mcp HTTP/1.1\r\nHost: x\r\n", b""),
            (
                b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n{",
                b"408",
            ),
        ):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(data)
                await writer.drain()
                async with asyncio.timeout(20):
                    answer = await reader.read()  # the server closes the connection
                assert (answer.split(b" ")[1] if answer else b"") == expected
            finally:
                writer.close()
                await writer.wait_closed()


def test_bad_bounds_are_refused() -> None:
    """MCP-49: max_sessions below 1, or a timeout that is not a positive number, is a
    ValueError."""
    server = MCPServer(make_agent())
    with pytest.raises(ValueError, match="max_sessions must be an int >= 1, got 0"):
        make_app(server, max_sessions=0)
    with pytest.raises(
        ValueError, match="session_timeout must be a positive number of seconds, got -1"
    ):
        make_app(server, session_timeout=-1)
    with pytest.raises(
        ValueError, match="read_timeout must be a positive number of seconds, got True"
    ):
        make_app(server, read_timeout=True)


async def test_a_full_table_evicts_the_least_recently_used_idle_session() -> None:
    """MCP-49: idle sessions do not lock new clients out until they expire: with
    max_sessions=3 (and an hour's timeout), a fourth initialize forgets the least
    recently used session with no running call (404 after) and keeps the others; an
    initialize is 429 only while every session has a call running."""
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    async with (
        our_server(max_sessions=3) as url,
        aiohttp.ClientSession() as http,
    ):
        sessions = [await initialize(http, url) for _ in range(3)]
        # the first is used again: the second is now the least recently used
        async with http.post(url, json=ping, headers=sessions[0]) as response:
            assert response.status == 200
        fourth = await initialize(http, url)
        statuses = []
        for headers in (*sessions, fourth):
            async with http.post(url, json=ping, headers=headers) as response:
                statuses.append(response.status)
        assert statuses == [200, 404, 200, 200]
        live = [sessions[0], sessions[2], fourth]
        calls = [
            asyncio.create_task(http.post(url, json=call(10, "slow"), headers=h))
            for h in live
        ]
        try:
            await asyncio.sleep(1.0)
            async with http.post(url, json=INIT, headers=ACCEPT) as response:
                assert response.status == 429
                assert (await response.json())["error"][
                    "message"
                ] == "too many sessions (3)"
        finally:
            for running in calls:
                running.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
