"""Cancellation closes the HTTP response: no connection or task leaks (PV-30).

The server holds every stream open (one text delta, then keep-alive comments) until the
client goes away, so a connection is closed only if the client closes it. The conftest
fails any test that leaves a task running.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from minagent import Agent, Message

from ._fake_server import FakeOpenAI, silence

ROUNDS = 50


async def _until_no_connections(server: FakeOpenAI, at_most: int = 0) -> int:
    """The server's open connections, polled until ``at_most`` or about 5 s have
    passed."""
    for _ in range(500):
        count = await server.open_connections()
        if count <= at_most and server.handlers_running == 0:
            return count
        await asyncio.sleep(0.01)
    return await server.open_connections()


def _acquired(client: Any) -> int:
    """Connections the client's pool has handed out and not got back (aiohttp
    internals)."""
    session = client.session
    return len(session.connector._acquired) if session is not None else 0


async def _consume_until_cancelled(client: Any, started: asyncio.Event) -> None:
    async for update in client.get_response([Message("user", ["Go"])], stream=True):
        if update.text:
            started.set()


async def test_many_cancelled_streams_leave_nothing_open() -> None:
    """PV-30: 50 consumers cancelled mid-stream: every connection is closed, none
    acquired."""
    async with FakeOpenAI() as server, server.make_client() as client:
        for i in range(ROUNDS):
            server.script_stalled_stream(f"partial {i}")
            started = asyncio.Event()
            task = asyncio.create_task(_consume_until_cancelled(client, started))
            await asyncio.wait_for(started.wait(), 5)
            task.cancel()
            await asyncio.wait([task])
            assert task.cancelled()
            assert _acquired(client) == 0  # closed before the cancellation completed
        assert await _until_no_connections(server) == 0
        assert len(server.requests()) == ROUNDS


async def test_many_streams_closed_early_through_agent_run() -> None:
    """PV-30: 50 agent streams left early (break + aclose): connections closed, none
    acquired."""
    async with FakeOpenAI() as server, server.make_client() as client:
        agent = Agent(client)
        for i in range(ROUNDS):
            server.script_stalled_stream(f"partial {i}")
            stream = agent.run("Go", stream=True)
            async for update in stream:
                if update.text:
                    break
            await stream.aclose()
            assert _acquired(client) == 0
        assert await _until_no_connections(server) == 0


async def test_a_pool_of_one_connection_survives_cancellations() -> None:
    """PV-30: with a pool of one connection, 50 cancelled streams then a normal call
    works — no connection was kept; the session passed in stays open (PV-31)."""
    connector = aiohttp.TCPConnector(limit=1)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        FakeOpenAI() as server,
    ):
        async with server.make_client(session=session, timeout=5) as client:
            for i in range(ROUNDS):
                server.script_stalled_stream(f"partial {i}")
                started = asyncio.Event()
                task = asyncio.create_task(_consume_until_cancelled(client, started))
                await asyncio.wait_for(started.wait(), 5)
                task.cancel()
                await asyncio.wait([task])
            server.script_text("still works")
            response = await asyncio.wait_for(client.get_response("Hi"), 5)
            assert response.text == "still works"
            assert _acquired(client) == 0
        assert not session.closed
        # only the finished call's connection is left, idle in the pool for reuse
        assert await _until_no_connections(server, at_most=1) <= 1


async def test_cancelling_a_call_that_waits_for_headers() -> None:
    """PV-30: cancelled while the server has not answered: the connection is closed
    too."""
    async with FakeOpenAI() as server, server.make_client() as client:
        for stream in (False, True):
            server.add(silence())
            if stream:
                call: Any = _drain(client.get_response("Hi", stream=True))
            else:
                call = client.get_response("Hi")
            task = asyncio.ensure_future(call)
            for _ in range(500):  # until the request reached the server
                if server.handlers_running:
                    break
                await asyncio.sleep(0.01)
            task.cancel()
            await asyncio.wait([task])
            assert task.cancelled()
            assert _acquired(client) == 0
        assert await _until_no_connections(server) == 0


async def _drain(stream: Any) -> None:
    async for _ in stream:
        pass
