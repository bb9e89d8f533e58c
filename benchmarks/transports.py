"""The two HTTP transports side by side: aiohttp's and the standard library's
(spec/providers.md PV-41, PV-42).

    python benchmarks/transports.py            # needs aiohttp (plugins/http) for its column
    python benchmarks/transports.py --quick    # fewer requests: for trying things, noisy

A loopback HTTP/1.1 server runs in a subprocess (``--serve``: plain asyncio,
keep-alive). Each transport sends to it directly (``send``, ``read_chunk`` to the end,
``release``), so the figures are the transport's own, without a codec:

* requests/s: small JSON answers (``Content-Length``), one after the other on one
  kept-alive connection, and 8 at a time;
* per-chunk cost: a chunked answer of 4,000 small SSE events, minus a one-event answer,
  divided by 4,000 (microseconds per HTTP chunk read and de-chunked).

Median of a few rounds, rounds interleaved between the transports. These are figures,
not targets: nothing fails because a machine is slow.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugins" / "http"))

from minagent.providers import Request, StdlibTransport, Timeouts  # noqa: E402

CHUNKS = 4000
EVENT = b'data: {"choices":[{"delta":{"content":"tok"}}]}\n\n'


async def serve(port: int) -> None:
    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                target = head.split(b" ", 2)[1]
                if target.startswith(b"/stream/"):
                    count = int(target.rsplit(b"/", 1)[1])
                    chunk = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                    )
                    writer.write(chunk * count + b"0\r\n\r\n")
                else:
                    body = b'{"id":"r1","choices":[{"message":{"content":"hello"}}]}'
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                        % (len(body), body)
                    )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def transports() -> dict[str, Any]:
    found: dict[str, Any] = {"stdlib": lambda: StdlibTransport(trust_env=False)}
    try:
        from minagent_http import AiohttpTransport
    except ImportError:
        print("aiohttp (plugins/http) is not importable: the stdlib column only\n")
        return found
    return {"aiohttp": lambda: AiohttpTransport(trust_env=False), **found}


async def exchange(transport: Any, url: str) -> int:
    times = Timeouts(connect=10, read=10, total=60)
    response = await transport.send(
        Request("POST", url, {"Content-Type": "application/json"}, b"{}", times)
    )
    size = 0
    while chunk := await response.read_chunk():
        size += len(chunk)
    response.release()
    return size


async def requests_per_second(make: Any, root: str, count: int, parallel: int) -> float:
    transport = make()
    try:
        # the connection is open before the clock starts
        await exchange(transport, f"{root}/json")
        start = time.perf_counter()
        for _ in range(count // parallel):
            await asyncio.gather(
                *(exchange(transport, f"{root}/json") for _ in range(parallel))
            )
        return (count // parallel * parallel) / (time.perf_counter() - start)
    finally:
        await transport.aclose()


async def per_chunk_us(make: Any, root: str, repeats: int) -> float:
    transport = make()
    try:
        await exchange(transport, f"{root}/stream/1")
        one, many = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            await exchange(transport, f"{root}/stream/1")
            one.append(time.perf_counter() - start)
            start = time.perf_counter()
            size = await exchange(transport, f"{root}/stream/{CHUNKS}")
            many.append(time.perf_counter() - start)
            assert size == CHUNKS * len(EVENT), size
        return (statistics.median(many) - statistics.median(one)) / CHUNKS * 1e6
    finally:
        await transport.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--quick", action="store_true", help="fewer requests and rounds"
    )
    args = parser.parse_args()
    if args.serve is not None:
        asyncio.run(serve(args.serve))
        return
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready"
        root = f"http://127.0.0.1:{port}"
        count, rounds, repeats = (200, 1, 3) if args.quick else (2000, 3, 9)
        found = transports()
        figures: dict[str, dict[str, list[float]]] = {
            name: {"seq": [], "par": [], "chunk": []} for name in found
        }
        for _ in range(rounds):
            for name, make in found.items():
                figures[name]["seq"].append(
                    asyncio.run(requests_per_second(make, root, count, 1))
                )
                figures[name]["par"].append(
                    asyncio.run(requests_per_second(make, root, count, 8))
                )
                figures[name]["chunk"].append(
                    asyncio.run(per_chunk_us(make, root, repeats))
                )
        print(
            f"Python {sys.version.split()[0]}, loopback server in a subprocess, median of {rounds} round(s)\n"
        )
        print(
            f"| transport | requests/s, one at a time | requests/s, 8 at a time | us per chunk ({CHUNKS} chunks) |"
        )
        print("|---|---:|---:|---:|")
        for name, data in figures.items():
            seq, par, chunk = (
                statistics.median(data[k]) for k in ("seq", "par", "chunk")
            )
            print(f"| {name} | {seq:,.0f} | {par:,.0f} | {chunk:.2f} |")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
