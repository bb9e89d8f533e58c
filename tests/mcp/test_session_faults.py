"""The JSON-RPC session under faults a real peer cannot produce on demand: a transport
that breaks, answers racing the end of the stream, cancellations racing a closing peer
(MCP-7, MCP-8)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from minagent.mcp.jsonrpc import (
    MCPConnectionError,
    MCPRequestError,
    MCPTimeoutError,
    Session,
)

from .conftest import eventually
from .test_session import pipes


class Broken:
    """A transport whose ``receive`` raises ``error`` once the test sets it, and whose
    ``send`` can block or raise."""

    def __init__(self) -> None:
        self.failing: asyncio.Future[BaseException] = (
            asyncio.get_running_loop().create_future()
        )
        self.sent: list[dict[str, Any]] = []
        self.block_send = False
        self.send_error: BaseException | None = None

    async def send(self, message: dict[str, Any]) -> None:
        if self.send_error is not None and "id" not in message:
            raise self.send_error
        self.sent.append(message)
        if self.block_send:
            await asyncio.Event().wait()

    async def receive(self) -> dict[str, Any] | None:
        raise await self.failing

    async def aclose(self) -> None:
        pass


async def test_start_twice_runs_one_reader() -> None:
    """MCP-8: starting a session again keeps its one reader (the only consumer of the
    stream)."""
    client_end, _server_end = pipes()
    session = Session(client_end, name="s")
    session.start()
    reader = session._reader
    session.start()
    assert session._reader is reader
    await session.aclose()
    assert reader is not None
    assert reader.done()


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (OSError("pipe broke"), "MCP server 's': pipe broke"),
        (ValueError("bad chunk"), "MCP server 's': bad chunk"),
        (RuntimeError("transport bug"), "MCP server 's': RuntimeError: transport bug"),
    ],
)
async def test_transport_failure_fails_waiting_requests(
    error: BaseException, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    """MCP-8: whatever the transport raises while reading, every waiting request and
    every later one fails with MCPConnectionError naming the server; a transport bug is
    logged with its traceback."""
    transport = Broken()
    session = Session(transport, name="s")
    session.start()
    try:
        waiting = asyncio.create_task(session.request("tools/list", timeout=30))
        await asyncio.sleep(0)
        transport.failing.set_result(error)
        with pytest.raises(MCPConnectionError, match=message) as info:
            await waiting
        assert info.value.server == "s"
        with pytest.raises(MCPConnectionError, match=message):
            await session.request("ping")
        logged = any(
            "reading failed" in r.getMessage() and r.exc_info for r in caplog.records
        )
        assert logged is isinstance(error, RuntimeError)
    finally:
        await session.aclose()


async def test_peer_gone_while_sending_is_not_a_timeout() -> None:
    """MCP-7, MCP-8: when the peer goes away while a request is still being sent and
    then its timeout passes, the caller gets the connection error, not a timeout, and no
    cancellation is sent."""
    transport = Broken()
    transport.block_send = True
    session = Session(transport, name="s")
    session.start()
    try:
        waiting = asyncio.create_task(session.request("tools/call", timeout=0.2))
        await asyncio.sleep(0.01)
        transport.failing.set_result(OSError("gone"))
        with pytest.raises(MCPConnectionError, match="gone"):
            await waiting
        assert [m.get("method") for m in transport.sent] == ["tools/call"]
    finally:
        await session.aclose()


async def test_cancellation_that_cannot_be_sent_still_times_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """MCP-7: when the `notifications/cancelled` after a timeout cannot be sent (the
    peer is going), the caller still gets MCPTimeoutError naming the method, without
    waiting for the send (a task of the session sends it); the failure is logged at
    DEBUG."""
    client_end, _server_end = pipes()
    session = Session(client_end, name="s")
    session.start()

    async def refuse(message: dict[str, Any]) -> None:
        raise MCPConnectionError("peer is going", server="s")

    try:
        with caplog.at_level(logging.DEBUG, logger="minagent.mcp"):
            waiting = asyncio.create_task(session.request("tools/call", timeout=0.05))
            await asyncio.sleep(0.01)
            client_end.send = refuse  # type: ignore[method-assign]
            with pytest.raises(
                MCPTimeoutError, match=r"did not answer 'tools/call' within 0\.05 s"
            ):
                await waiting
            sent = "could not send the cancellation of 1: peer is going"
            await eventually(
                lambda: any(sent in r.getMessage() for r in caplog.records)
            )
    finally:
        await session.aclose()


async def test_cancelled_as_the_peer_goes_sends_no_cancellation() -> None:
    """MCP-7, MCP-8: a caller cancelled in the same moment the stream ends re-raises
    CancelledError and sends nothing to the peer that is gone."""
    client_end, server_end = pipes()
    session = Session(client_end, name="s")
    session.start()
    try:
        waiting = asyncio.create_task(session.request("tools/call", timeout=30))
        await asyncio.sleep(0)
        assert server_end.inbox.qsize() == 1  # the request
        server_end.inbox.get_nowait()
        # the end of the stream is queued before the cancellation
        await server_end.aclose()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert isinstance(session.failure, MCPConnectionError)
        assert server_end.inbox.empty()  # no notifications/cancelled
    finally:
        await session.aclose()


async def test_answer_arriving_with_the_end_of_stream_is_delivered() -> None:
    """MCP-8: an answer read just before the stream ended is the request's result
    (nothing is lost)."""
    client_end, server_end = pipes()
    session = Session(client_end, name="s")
    session.start()
    try:
        waiting = asyncio.create_task(session.request("tools/list", timeout=5))
        await asyncio.sleep(0)
        await server_end.send({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
        await server_end.aclose()
        assert await waiting == {"tools": []}
        await session.wait_closed()
        assert isinstance(session.failure, MCPConnectionError)
    finally:
        await session.aclose()


async def test_cancellation_of_an_unknown_request_is_ignored() -> None:
    """MCP-7, MCP-32: `notifications/cancelled` for no running request changes
    nothing."""
    client_end, server_end = pipes()
    seen: list[str] = []
    session = Session(
        client_end, name="s", on_notification=lambda method, params: seen.append(method)
    )
    peer = Session(server_end, name="peer")
    session.start()
    peer.start()
    try:
        await peer.notify(
            "notifications/cancelled", {"requestId": 99, "reason": "nothing"}
        )
        assert await peer.request("ping", timeout=5) == {}
        assert seen == []  # cancellations are the session's own business
    finally:
        await session.aclose()
        await peer.aclose()


async def test_handler_errors_become_error_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """MCP-31: a handler's MCPRequestError is answered with its code, message and data;
    any other exception is logged and answered with -32603 naming it; the session keeps
    serving."""

    async def handle(method: str, params: dict[str, Any]) -> Any:
        if method == "typed":
            raise MCPRequestError(-32602, "bad params", {"field": "x"})
        if method == "bug":
            raise KeyError("oops")
        return {"method": method}

    client_end, server_end = pipes()
    server = Session(server_end, name="srv", on_request=handle)
    client = Session(client_end, name="cli")
    server.start()
    client.start()
    try:
        with pytest.raises(MCPRequestError) as typed:
            await client.request("typed", timeout=5)
        assert (typed.value.code, typed.value.error_message, typed.value.data) == (
            -32602,
            "bad params",
            {"field": "x"},
        )
        with pytest.raises(MCPRequestError) as bug:
            await client.request("bug", timeout=5)
        assert bug.value.code == -32603
        assert bug.value.error_message == "KeyError: 'oops'"
        assert any("handler for 'bug' failed" in r.getMessage() for r in caplog.records)
        assert await client.request("other", timeout=5) == {"method": "other"}
    finally:
        await client.aclose()
        await server.aclose()


@pytest.mark.parametrize("serving", [False, True], ids=["client-side", "server-side"])
async def test_requests_that_cannot_run_are_refused(serving: bool) -> None:
    """MCP-36: either side answers a request with a null, float, bool or object id with
    -32600 and id null; a request reusing the id of a running one gets -32600 with that
    id while the running one is answered as usual; the session keeps serving."""
    release = asyncio.Event()

    async def handle(method: str, params: dict[str, Any]) -> Any:
        if method == "slow":
            await release.wait()
        return {"method": method}

    session_end, raw = pipes()
    session = Session(session_end, name="s", on_request=handle if serving else None)
    session.start()
    try:
        for bad in (None, 1.5, True, {"n": 1}):
            await raw.send({"jsonrpc": "2.0", "id": bad, "method": "ping"})
            async with asyncio.timeout(5):
                answer = await raw.receive()
            assert answer is not None
            assert answer["id"] is None
            assert answer["error"]["code"] == -32600
        if serving:
            await raw.send({"jsonrpc": "2.0", "id": 5, "method": "slow"})
            await raw.send({"jsonrpc": "2.0", "id": 5, "method": "other"})
            async with asyncio.timeout(5):
                refused = await raw.receive()
            assert refused == {
                "jsonrpc": "2.0",
                "id": 5,
                "error": {
                    "code": -32600,
                    "message": "request id 5 is already in use by a running request",
                },
            }
            release.set()
            async with asyncio.timeout(5):
                assert await raw.receive() == {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "result": {"method": "slow"},
                }
        await raw.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
        async with asyncio.timeout(5):
            assert await raw.receive() == {"jsonrpc": "2.0", "id": 6, "result": {}}
    finally:
        await session.aclose()
