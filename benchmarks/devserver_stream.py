"""The dev server's CPU per streamed response (issue 41): an ASGI application that
streams 500 small SSE-sized chunks, one ``send`` each, served by
`minagent.hosting.server`, read by a raw-socket client in a subprocess (so that the
client's CPU is not counted).

    python benchmarks/devserver_stream.py                       # 10 rounds
    python benchmarks/devserver_stream.py --rounds 5 --against /tmp/server_before.py

Each round serves 40 responses on one kept-alive connection and takes this process's
CPU time (`time.process_time`) over them: CPU per response, in ms. ``--against PATH``
also loads another copy of ``server.py`` (it imports only the standard library) and
interleaves its rounds with the current server's, so that a noisy machine disturbs both
alike. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CURRENT = ROOT / "minagent" / "hosting" / "server.py"
CHUNKS = 500
RESPONSES = 40
CHUNK = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"word "}\n\n'

# The client checks each answer: a 200, chunked, holding every chunk sent (HS-110).
CLIENT = r"""
import socket, sys
port, count, chunks = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
chunk = sys.argv[4].encode().decode("unicode_escape").encode("latin-1")
framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
sock = socket.create_connection(("127.0.0.1", port))
request = b"POST /x HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
for _ in range(count):
    sock.sendall(request)
    answer = b""
    while not answer.endswith(b"0\r\n\r\n"):
        data = sock.recv(65536)
        if not data:
            raise SystemExit("the server closed the connection")
        answer += data
    head, _, body = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200 ") or b"transfer-encoding: chunked" not in head:
        raise SystemExit("not a chunked 200: " + repr(head))
    if body != framed * chunks + b"0\r\n\r\n":
        raise SystemExit("the body is not the chunks sent")
sock.close()
"""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Streams `CHUNKS` chunks of `CHUNK` (no lifespan)."""
    if scope["type"] != "http":
        raise RuntimeError("http only")
    await receive()
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for _ in range(CHUNKS):
        await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def load(path: Path, name: str) -> ModuleType:
    """A copy of ``server.py`` as its own module."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def measure(server_module: ModuleType) -> float:
    """One round: the server's CPU per response, in ms."""
    server = await server_module.serve(app)
    try:
        client = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CLIENT,
            str(server.port),
            str(RESPONSES),
            str(CHUNKS),
            CHUNK.decode("latin-1").encode("unicode_escape").decode("ascii"),
        )
        start = time.process_time()
        status = await client.wait()
        spent = time.process_time() - start
    finally:
        await server.shutdown(1)
    if status != 0:
        raise SystemExit("the client failed")
    return spent / RESPONSES * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--against", type=Path, action="append", default=[])
    options = parser.parse_args(argv)
    paths = [CURRENT, *options.against]
    modules = [load(p, f"_devserver_{i}") for i, p in enumerate(paths)]
    figures: dict[Path, list[float]] = {p: [] for p in paths}
    for _ in range(options.rounds):
        for path, module in zip(paths, modules, strict=True):
            figures[path].append(asyncio.run(measure(module)))
    print(f"server CPU per response of {CHUNKS} chunks, {options.rounds} rounds (ms)")
    for path, values in figures.items():
        print(
            f"{path}: median {statistics.median(values):.2f}, "
            f"min {min(values):.2f}, max {max(values):.2f}"
        )


if __name__ == "__main__":
    main()
