"""A Streamable HTTP MCP server that attacks its client on purpose (spec/mcp.md, MCP-45,
MCP-46).

``python hostile_http_server.py MODE [MIB]`` binds 127.0.0.1 on a free port and prints
``PORT <n>`` on stdout. ``initialize``, notifications and ``tools/list`` (no tools) are
answered normally; ``ping`` is the attack:

``huge-json``    a JSON answer MIB MiB long (a valid JSON-RPC answer with a long
string); ``huge-sse``     an SSE answer whose one event is MIB MiB long; ``huge-error``
HTTP 500 with a body that never ends; ``sse-no-answer`` an SSE answer with a
notification, then the end of the stream, no answer; ``sse-resumed-no-answer`` an SSE
answer with one event (id 1) that then breaks; the GET that
                 resumes it (``Last-Event-ID: 1``) sends a notification and ends, no
                 answer;
``flood``        an SSE answer carrying MIB x 1,000 ``ping`` requests of the server and
never the
                 answer; the client's answers to them (POSTs) are never answered;
``normal``       every answer is normal.
"""

from __future__ import annotations

import asyncio
import json
import sys

from aiohttp import web

MODE = sys.argv[1]
MIB = int(sys.argv[2]) if len(sys.argv) > 2 else 33
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "hostile", "version": "1"},
}
CHUNK = b"x" * (1024 * 1024)
NOTE = {
    "jsonrpc": "2.0",
    "method": "notifications/message",
    "params": {"level": "info", "data": "working"},
}


async def long_text(response: web.StreamResponse, mib: int) -> None:
    for _ in range(mib):
        await response.write(CHUNK)


async def post(request: web.Request) -> web.StreamResponse:
    message = json.loads(await request.read())
    if MODE == "flood" and "method" not in message:
        # never reads an answer: the client's POST waits for ever
        await asyncio.Event().wait()
    if "id" not in message or "method" not in message:
        return web.Response(status=202)
    method, request_id = message["method"], message["id"]
    if method == "initialize":
        answer = {"jsonrpc": "2.0", "id": request_id, "result": INIT}
        return web.json_response(answer, headers={"Mcp-Session-Id": "hostile-1"})
    if method != "ping":
        return web.json_response(
            {"jsonrpc": "2.0", "id": request_id, "result": {"tools": []}}
        )
    if MODE == "huge-error":
        response = web.StreamResponse(
            status=500, headers={"Content-Type": "text/plain"}
        )
        await response.prepare(request)
        while True:
            await response.write(CHUNK)
    if MODE == "huge-json":
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(
            b'{"jsonrpc": "2.0", "id": '
            + json.dumps(request_id).encode()
            + b', "result": {"pad": "'
        )
        await long_text(response, MIB)
        await response.write(b'"}}')
        return response
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    if MODE == "huge-sse":
        await response.write(
            b'data: {"jsonrpc": "2.0", "id": '
            + json.dumps(request_id).encode()
            + b', "result": {"p": "'
        )
        await long_text(response, MIB)
        await response.write(b'"}}\n\n')
        return response
    if MODE == "flood":
        for n in range(MIB * 1000):
            ping = {"jsonrpc": "2.0", "id": f"flood-{n}", "method": "ping"}
            await response.write(f"data: {json.dumps(ping)}\n\n".encode())
        await asyncio.Event().wait()
    if MODE == "sse-resumed-no-answer":
        await response.write(f"id: 1\ndata: {json.dumps(NOTE)}\n\n".encode())
        assert request.transport is not None
        request.transport.abort()  # the stream breaks (no end of the chunked body)
        return response
    await response.write(f"data: {json.dumps(NOTE)}\n\n".encode())
    if MODE != "sse-no-answer":
        await response.write(
            f"data: {json.dumps({'jsonrpc': '2.0', 'id': request_id, 'result': {}})}\n\n".encode()
        )
    return response


async def get(request: web.Request) -> web.StreamResponse:
    """No stream of the server's own (405), except the resumption of a broken answer."""
    if MODE != "sse-resumed-no-answer" or request.headers.get("Last-Event-ID") != "1":
        return web.Response(status=405)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(f"id: 2\ndata: {json.dumps(NOTE)}\n\n".encode())
    return response


async def main() -> None:
    app = web.Application(client_max_size=1024**2)
    app.router.add_post("/mcp", post)
    app.router.add_get("/mcp", get)
    app.router.add_delete("/mcp", lambda request: web.Response(status=200))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"PORT {port}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


asyncio.run(main())
