"""The shared transport's life cycle and its parts (spec/providers.md, PV-31, PV-37,
PV-39, PV-40).

`LoopBound` and the aiohttp transport's sessions across event loops, the one exception
table, and the in-memory transport itself.
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from minagent_http import EXCEPTIONS, AiohttpTransport, transport_error, transport_for

from minagent import Message
from minagent.providers import LoopBound, Request, TransportError
from minagent.testing import MockResponse, MockTransport

from ._toy import ToyClient, Wire, text


class FakePool:
    """A pool with the two things `LoopBound` needs: ``closed`` and ``close()``."""

    opened = 0

    def __init__(self) -> None:
        FakePool.opened += 1
        self.closed = False
        self.loop = asyncio.get_running_loop()

    async def close(self) -> None:
        self.closed = True


def test_a_pool_belongs_to_the_event_loop_it_was_opened_on() -> None:
    """PV-37: opened lazily on the running loop, closed when that loop shuts down its
    async generators (asyncio.run), reopened on the next loop; another loop that is
    still open is a RuntimeError saying what to do; aclose() closes it (idempotent) and
    the next get() reopens."""
    bound: LoopBound[FakePool] = LoopBound(FakePool)
    assert bound.value is None
    first = asyncio.run(bound.get())
    # asyncio.run shut its async generators down: the keeper closed it
    assert first.closed
    second = asyncio.run(bound.get())
    assert second is not first
    other = asyncio.new_event_loop()
    try:
        third = other.run_until_complete(bound.get())
        assert other.run_until_complete(bound.get()) is third  # same loop, same pool
        with pytest.raises(RuntimeError, match=r"await client\.aclose\(\)"):
            asyncio.run(bound.get())
        other.run_until_complete(bound.aclose())
        other.run_until_complete(bound.aclose())
        assert third.closed
        assert bound.value is None
    finally:
        other.close()
    abandoned = asyncio.new_event_loop()
    fourth = abandoned.run_until_complete(bound.get())
    abandoned.close()  # closed without shutting its async generators down
    fifth = asyncio.run(bound.get())
    assert fourth.closed
    assert fifth is not fourth

    async def closed_by_its_user() -> FakePool:
        pool = await bound.get()
        await pool.close()  # the keeper, at the loop's end, finds it closed already
        return pool

    assert asyncio.run(closed_by_its_user()).closed
    still = asyncio.new_event_loop()
    try:
        sixth = still.run_until_complete(bound.get())
        # from another loop: the pool is closed, its keeper left to its loop
        asyncio.run(bound.aclose())
        assert sixth.closed
        assert bound.value is None
    finally:
        still.run_until_complete(still.shutdown_asyncgens())
        still.close()


def test_sessions_across_event_loops() -> None:
    """PV-37, PV-31: one client under two asyncio.run() calls opens a fresh aiohttp
    session on the second, and nothing warns about an unclosed session; a session of
    another loop that is still open is a RuntimeError until aclose() on that loop."""
    transport = AiohttpTransport(trust_env=False)
    client = ToyClient(transport=transport, base_url="http://127.0.0.1:1/v1")

    async def ask() -> str:
        return (await client.get_response([Message("user", ["Hi"])])).text

    async def served(then: Callable[[], Awaitable[Any]]) -> Any:
        async with Wire("aiohttp") as wire:  # a loopback server on this loop
            wire.add(text(False), text(False))
            assert wire.server is not None
            client._init_url(f"{wire.server.root}/v1", "")
            return await then()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert asyncio.run(served(ask)) == "Hello"
        first = client.session
        assert first is not None
        assert first.closed  # closed by its loop's shutdown of async generators
        assert asyncio.run(served(ask)) == "Hello"
        assert client.session is not first
        gc.collect()
    assert [w for w in caught if "nclosed" in str(w.message)] == []

    other = asyncio.new_event_loop()

    async def on_two_loops() -> None:
        assert await asyncio.to_thread(other.run_until_complete, ask()) == "Hello"
        with pytest.raises(RuntimeError, match=r"aclose\(\)"):
            await ask()
        await asyncio.to_thread(other.run_until_complete, client.aclose())
        assert await ask() == "Hello"
        await client.aclose()

    try:
        asyncio.run(served(on_two_loops))
    finally:
        other.close()


async def test_the_aiohttp_transport_opens_lazily_and_closes() -> None:
    """PV-31: no session before the first call; aclose() closes it (idempotent) and the
    next call opens a new one; `async with client:` closes it; a session passed in is
    used and never closed; a transport passed in is refused together with a session."""
    async with Wire("aiohttp") as wire:
        wire.add(text(False), text(True), text(False))
        client = wire.client()
        assert client.session is None
        await client.get_response([Message("user", ["Hi"])])
        first = client.session
        assert first is not None
        await client.aclose()
        await client.aclose()
        assert first.closed
        assert client.session is None
        async with client:
            async for _ in client.get_response([Message("user", ["Hi"])], stream=True):
                pass
            second = client.session
        assert second is not first
        assert second.closed
        async with aiohttp.ClientSession() as session:
            given = ToyClient(
                transport=AiohttpTransport(session=session), base_url=client.base_url
            )
            async with given:
                await given.get_response([Message("user", ["Hi"])])
                assert given.session is session
            assert not session.closed
    mock = MockTransport.answering()
    assert transport_for(mock, session=None, trust_env=True) is mock
    assert isinstance(
        transport_for(None, session=None, trust_env=False), AiohttpTransport
    )
    with pytest.raises(ValueError, match="not both"):
        transport_for(mock, session=session, trust_env=True)


async def test_aclose_closes_the_transport() -> None:
    """PV-31: the client's aclose() (and leaving `async with`) closes its transport."""
    wire = Wire("memory")
    async with wire.client() as client:
        pass
    await client.aclose()
    assert wire.mock.aclosed == 2
    assert client.session is None


def test_the_exception_table() -> None:
    """PV-39: one table maps every exception of aiohttp and of the OS to a
    TransportError kind; the first match wins, so a subclass is listed before its base;
    anything else is "other"."""
    cases: list[tuple[BaseException, str]] = [
        (aiohttp.ConnectionTimeoutError("connect"), "connect_timeout"),
        (aiohttp.SocketTimeoutError("read"), "read_timeout"),
        (aiohttp.ServerTimeoutError("read"), "read_timeout"),
        (TimeoutError(), "total_timeout"),
        (aiohttp.ClientResponseError(None, (), message="bad status line"), "protocol"),  # type: ignore[arg-type]
        (aiohttp.ServerDisconnectedError(), "network"),
        (aiohttp.ClientPayloadError("cut"), "network"),
        (aiohttp.ClientOSError(104, "reset"), "network"),
        (ConnectionResetError(104, "reset"), "network"),
        (aiohttp.InvalidURL("nowhere"), "other"),
        (RuntimeError("Session is closed"), "other"),
    ]
    for exc, kind in cases:
        error = transport_error(exc)  # type: ignore[arg-type]
        assert error.kind == kind, (exc, error.kind)
        assert error.detail.startswith(type(exc).__name__)
    assert transport_error(
        aiohttp.ClientResponseError(None, (), message="bad")
    ).detail == (  # type: ignore[arg-type]
        "ClientResponseError: bad"
    )
    kinds = [kind for _, kind in EXCEPTIONS]
    assert len(kinds) == len(set(kinds))
    for i, (earlier, _) in enumerate(EXCEPTIONS):
        for later, _ in EXCEPTIONS[i + 1 :]:
            for cls in later if isinstance(later, tuple) else (later,):
                shadowed = cls in (
                    earlier if isinstance(earlier, tuple) else (earlier,)
                )
                assert not shadowed


async def test_the_mock_transport() -> None:
    """PV-40: MockTransport answers from a handler (plain or async) or in order; a
    TransportError the handler raises fails the send, one among the chunks fails the
    read where it stands; an async body may wait; every request and response is recorded
    with how it ended."""

    async def handler(request: Request) -> MockResponse:
        return MockResponse(201, [b"a", b"", b"b"], headers={"X-One": "1"})

    transport = MockTransport(handler)
    response = await transport.send(Request("POST", "http://h/x", {"a": "b"}, b"{}"))
    assert (response.status, response.headers) == (201, {"x-one": "1"})
    assert [await response.read_chunk() for _ in range(3)] == [b"a", b"b", b""]
    response.release()
    assert transport.open_responses() == []
    assert transport.requests[0].body == b"{}"

    async def slowly() -> Any:
        yield b"x"
        await asyncio.sleep(0)
        yield b"y"

    broken = MockResponse(200, [b"a", TransportError("network", "Cut: gone")])
    queued = MockTransport.answering(
        TransportError("connect", "Refused: no"), broken, MockResponse(body=slowly())
    )
    with pytest.raises(TransportError, match="no"):
        await queued.send(Request("POST", "http://h"))
    first = await queued.send(Request("POST", "http://h"))
    assert await first.read_chunk() == b"a"
    with pytest.raises(TransportError) as info:
        await first.read_chunk()
    assert info.value.kind == "network"
    assert queued.open_responses() == [first]
    first.close()
    with pytest.raises(TransportError):
        await first.read_chunk()
    second = await queued.send(Request("POST", "http://h"))
    assert [await second.read_chunk() for _ in range(3)] == [b"x", b"y", b""]
    with pytest.raises(AssertionError, match="not expected"):
        await queued.send(Request("POST", "http://h"))
    data = MockResponse.json({"a": 1}, headers={"x-request-id": "r"})
    assert data.headers == {"content-type": "application/json", "x-request-id": "r"}
    await queued.aclose()
    assert queued.aclosed == 1
