"""The hosting application under load (issue 37): many concurrent streamed
conversations over the Responses API, on the dev server and on uvicorn with 2 workers.

    python benchmarks/hosting_load.py                          # 200 x 5, both servers
    python benchmarks/hosting_load.py --server uvicorn
    python benchmarks/hosting_load.py --conversations 20 --turns 3

Each server runs `hosting_app.py`'s application in a subprocess on loopback, its
conversations in a fresh SQLite file (shared by uvicorn's workers). The client (this
process: standard-library asyncio HTTP/1.1, one connection per request, so it stays
light on the CPUs it shares with the server) runs every conversation at once, each a
sequence of turns: ``POST /v1/responses`` with ``stream: true``, ``conversation`` and
``store: false``, the SSE stream read to ``response.completed``.

Checked, for every turn: the streamed text and the completed response are the model's
answer to that turn with the whole conversation before it (the answer names the number of
user messages the run saw), and the stream's sequence numbers count from 0 without a gap
or a repeat. Checked afterwards through the store, with the server stopped: every
conversation's session holds exactly its 2 x turns messages, in order, none lost or
duplicated. A failed check is reported and makes the exit status 1.

Figures, printed as a Markdown table: turns per second (all turns over the load's wall
time), time to the first SSE event and to the first text delta (from opening the
connection), a whole turn's time (p50/p99 each), and for uvicorn how many conversations
were served by more than one worker (those crossed workers through the shared store).
These are figures, never assertions: nothing fails because a machine is slow.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from hosting_app import AGENT, STORE_ENV, WORKER_HEADER, answer_for  # noqa: E402

from minagent.hosting.conversations import conversation_key  # noqa: E402
from minagent.hosting.responses import CONVERSATION  # noqa: E402
from minagent.stores import SQLiteSessionStore  # noqa: E402

HOST = "127.0.0.1"
UVICORN_WORKERS = 2
# bounds on waiting for a server to come up (a condition polled, not a duration)
READY_ATTEMPTS = 3000
READY_PAUSE = 0.02


class LoadError(Exception):
    """A turn did not get the answer it should have."""


# -- the servers ----------------------------------------------------------------------


def dev_server_command(port: int, store: Path) -> list[str]:
    """The dev server as users start it: ``python -m minagent serve`` with the
    conversations in ``store``, its run and connection caps raised above the load."""
    return [
        sys.executable,
        "-m",
        "minagent",
        "serve",
        "benchmarks.hosting_app:echo_agent",
        "--port",
        str(port),
        "--store",
        f"sqlite:{store}",
        "--max-runs",
        "1000",
        "--max-connections",
        "1000",
    ]


def uvicorn_command(port: int, store: Path) -> list[str]:
    """uvicorn serving ``hosting_app:app`` with 2 worker processes (the store comes
    from the environment, `server_process`)."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "hosting_app:app",
        "--app-dir",
        str(BENCH),
        "--workers",
        str(UVICORN_WORKERS),
        "--host",
        HOST,
        "--port",
        str(port),
        "--no-access-log",
        "--log-level",
        "warning",
    ]


SERVERS = {
    "dev": (dev_server_command, 1),
    "uvicorn": (uvicorn_command, UVICORN_WORKERS),
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def server_process(
    command: list[str],
    log: IO[str],
    *,
    env: Mapping[str, str] | None = None,
    paths: Sequence[Path] = (),
) -> Iterator[subprocess.Popen[str]]:
    """Run ``command`` with the project (and ``paths``) importable and ``env`` set;
    SIGTERM (then kill) at the end."""
    importable = [str(ROOT), *map(str, paths)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [*importable, *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        **(env or {}),
    }
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=log, text=True
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def log_tail(log: IO[str]) -> str:
    log.flush()
    log.seek(0)
    return log.read()[-2000:]


async def until_ready(
    port: int, process: subprocess.Popen[str], workers: int, log: IO[str]
) -> None:
    """Wait until ``workers`` distinct processes have answered ``GET /v1/models``."""
    seen: set[str] = set()
    for _ in range(READY_ATTEMPTS):
        if process.poll() is not None:
            raise LoadError(
                f"the server exited ({process.returncode}):\n{log_tail(log)}"
            )
        # a worker still starting may close or refuse the connection
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            status, headers, _ = await request(port, "GET", "/v1/models")
            if status == 200:
                seen.add(headers.get(WORKER_HEADER.decode(), "?"))
                if len(seen) >= workers:
                    return
        await asyncio.sleep(READY_PAUSE)
    raise LoadError(f"{len(seen)} of {workers} worker(s) answered:\n{log_tail(log)}")


# -- the client: HTTP/1.1 and SSE over asyncio streams ---------------------------------


def _request_bytes(method: str, path: str, body: bytes) -> bytes:
    head = (
        f"{method} {path} HTTP/1.1\r\nhost: {HOST}\r\n"
        "content-type: application/json\r\naccept: text/event-stream\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _body_pieces(
    reader: asyncio.StreamReader, headers: dict[str, str]
) -> AsyncIterator[bytes]:
    """The body as it arrives: de-chunked, by length, or to the end."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return
            piece = await reader.readexactly(size + 2)
            yield piece[:-2]
    elif "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    else:
        while piece := await reader.read(65_536):
            yield piece


async def request(
    port: int, method: str, path: str, body: bytes = b""
) -> tuple[int, dict[str, str], bytes]:
    """One plain request: status, headers, the whole body."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(_request_bytes(method, path, body))
        status, headers = await _head(reader)
        data = b"".join([piece async for piece in _body_pieces(reader, headers)])
        return status, headers, data
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


@dataclass
class Turn:
    """One streamed turn's timings (seconds from opening the connection) and worker."""

    first_event: float
    first_delta: float
    total: float
    worker: str


async def streamed_turn(port: int, conversation: str, text: str, expected: str) -> Turn:
    """One ``POST /v1/responses`` streamed to ``response.completed``, checked."""
    body = json.dumps(
        {
            "model": AGENT,
            "input": text,
            "stream": True,
            "conversation": conversation,
            "store": False,
        }
    ).encode()
    started = time.perf_counter()
    first_event = first_delta = 0.0
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(_request_bytes("POST", "/v1/responses", body))
        status, headers = await _head(reader)
        if status != 200:
            rest = b"".join([p async for p in _body_pieces(reader, headers)])
            raise LoadError(f"{conversation}: status {status}: {rest[:300]!r}")
        buffer = b""
        sequence = 0
        deltas: list[str] = []
        completed: dict[str, Any] | None = None
        async for piece in _body_pieces(reader, headers):
            buffer += piece
            *events, buffer = buffer.split(b"\n\n")
            for event in events:
                data = _event_data(event)
                now = time.perf_counter() - started
                if not first_event:
                    first_event = now
                if data.get("sequence_number") != sequence:
                    raise LoadError(
                        f"{conversation}: event {sequence} came as "
                        f"{data.get('sequence_number')}"
                    )
                sequence += 1
                kind = data.get("type")
                if kind == "response.output_text.delta":
                    first_delta = first_delta or now
                    deltas.append(str(data["delta"]))
                elif kind == "response.completed":
                    completed = data["response"]
                elif kind in ("response.failed", "error"):
                    raise LoadError(f"{conversation}: {json.dumps(data)[:300]}")
        total = time.perf_counter() - started
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if completed is None or completed.get("status") != "completed":
        raise LoadError(f"{conversation}: the stream ended without response.completed")
    final = "".join(
        part.get("text", "")
        for item in completed.get("output", [])
        for part in item.get("content", [])
    )
    if "".join(deltas) != expected or final != expected:
        raise LoadError(
            f"{conversation}: expected {expected!r}, streamed {''.join(deltas)!r}, "
            f"completed {final!r}"
        )
    worker = headers.get(WORKER_HEADER.decode(), "?")
    return Turn(first_event, first_delta, total, worker)


def _event_data(event: bytes) -> dict[str, Any]:
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            data = json.loads(line[5:])
            if isinstance(data, dict):
                return data
    raise LoadError(f"an SSE event without a JSON object: {event[:200]!r}")


def turn_text(conversation: int, turn: int) -> str:
    return f"conversation {conversation}, turn {turn}"


async def conversation(port: int, run: str, index: int, turns: int) -> list[Turn]:
    """One conversation: ``turns`` streamed turns, one after the other."""
    cid = f"{run}-{index}"
    done: list[Turn] = []
    for turn in range(1, turns + 1):
        text = turn_text(index, turn)
        done.append(await streamed_turn(port, cid, text, answer_for(turn, text)))
    return done


# -- checking the store -----------------------------------------------------------------


@dataclass
class Verification:
    sessions: int = 0
    messages: int = 0
    missing_sessions: int = 0
    lost: int = 0
    duplicated: int = 0
    unexpected: int = 0
    out_of_order: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.missing_sessions
            or self.lost
            or self.duplicated
            or self.unexpected
            or self.out_of_order
        )


async def verify(
    store_path: Path, run: str, conversations: int, turns: int
) -> Verification:
    """Every conversation's session holds exactly its messages, in order."""
    from minagent import InMemoryHistoryProvider

    store = SQLiteSessionStore(store_path)
    history = InMemoryHistoryProvider()
    found = Verification()
    for index in range(conversations):
        # the Responses API's conversations, as HS-25 keeps them (HS-141)
        key = conversation_key(AGENT, CONVERSATION + f"{run}-{index}")
        expected: list[tuple[str, str]] = []
        for turn in range(1, turns + 1):
            text = turn_text(index, turn)
            expected += [("user", text), ("assistant", answer_for(turn, text))]
        session = await store.get(key)
        if session is None:
            found.missing_sessions += 1
            found.lost += len(expected)
            found.examples.append(f"{key}: no session")
            continue
        state = session.state.get(history.DEFAULT_SOURCE_ID, {})
        stored = await history.get_messages(key, state=state)
        actual = [(str(m.role), m.text) for m in stored]
        found.sessions += 1
        found.messages += len(actual)
        if actual == expected:
            continue
        counts, wanted = Counter(actual), Counter(expected)
        lost = sum((wanted - counts).values())
        duplicated = sum(
            counts[item] - wanted[item]
            for item in wanted
            if counts[item] > wanted[item]
        )
        unexpected = sum(count for item, count in counts.items() if item not in wanted)
        found.lost += lost
        found.duplicated += duplicated
        found.unexpected += unexpected
        if not (lost or duplicated or unexpected):
            found.out_of_order += 1
        if len(found.examples) < 5:
            found.examples.append(f"{key}: {actual!r:.300}")
    return found


# -- one load run -----------------------------------------------------------------------


@dataclass
class Result:
    server: str
    conversations: int
    turns: int
    seconds: float
    done: list[Turn]
    failures: list[str]
    verification: Verification
    # conversations whose turns were served by more than one process
    crossed: int = 0


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(share * len(ordered))))
    return ordered[rank - 1]


async def load(server: str, conversations: int, turns: int) -> Result:
    """Start ``server``, run the load against it, stop it, check its store."""
    command, workers = SERVERS[server]
    run = f"load-{os.getpid()}-{time.time_ns()}"
    with tempfile.TemporaryDirectory(prefix="hosting-load-") as folder:
        store = Path(folder) / "conversations.db"
        port = free_port()
        with (
            tempfile.TemporaryFile("w+") as log,
            server_process(
                command(port, store), log, env={STORE_ENV: str(store)}
            ) as process,
        ):
            await until_ready(port, process, workers, log)
            started = time.perf_counter()
            outcomes = await asyncio.gather(
                *(conversation(port, run, i, turns) for i in range(conversations)),
                return_exceptions=True,
            )
            seconds = time.perf_counter() - started
        done: list[Turn] = []
        failures: list[str] = []
        crossed = 0
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                failures.append(f"{type(outcome).__name__}: {outcome}")
            else:
                done += outcome
                crossed += len({turn.worker for turn in outcome}) > 1
        verification = await verify(store, run, conversations, turns)
    return Result(
        server, conversations, turns, seconds, done, failures, verification, crossed
    )


# -- the report -------------------------------------------------------------------------

HEADER = (
    "| server | conversations x turns | turns/s | first event p50 / p99 (ms) "
    "| first text delta p50 / p99 (ms) | turn p50 / p99 (ms) "
    "| conversations across workers | lost / duplicated messages |\n"
    "|---|---|---|---|---|---|---|---|"
)


def _pair(values: list[float]) -> str:
    return (
        f"{percentile(values, 0.5) * 1000:.1f} / {percentile(values, 0.99) * 1000:.1f}"
    )


def row(result: Result) -> str:
    done = result.done
    found = result.verification
    name = (
        "dev server"
        if result.server == "dev"
        else f"uvicorn, {UVICORN_WORKERS} workers"
    )
    crossed = (
        "-" if result.server == "dev" else f"{result.crossed} of {result.conversations}"
    )
    return (
        f"| {name} | {result.conversations} x {result.turns} "
        f"| {len(done) / result.seconds:.0f} "
        f"| {_pair([t.first_event for t in done])} "
        f"| {_pair([t.first_delta for t in done])} "
        f"| {_pair([t.total for t in done])} | {crossed} "
        f"| {found.lost} / {found.duplicated} |"
    )


def verification_line(result: Result) -> str:
    found = result.verification
    state = "ok" if found.ok and not result.failures else "FAILED"
    return (
        f"{result.server}: verified {found.sessions} of {result.conversations} sessions, "
        f"{found.messages} messages: {found.lost} lost, {found.duplicated} duplicated, "
        f"{found.unexpected} unexpected, {found.out_of_order} out of order; "
        f"{len(result.failures)} failed conversations: {state}"
    )


def machine() -> str:
    load1, load5, _ = os.getloadavg()
    return (
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load1:.1f} (1 min) / {load5:.1f} (5 min)"
    )


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--server", choices=["dev", "uvicorn", "both"], default="both")
    options = parser.parse_args(argv)
    if options.conversations < 1 or options.turns < 1:
        parser.error("--conversations and --turns must be at least 1")
    servers = ["dev", "uvicorn"] if options.server == "both" else [options.server]
    print(f"before: {machine()}", flush=True)
    results = []
    for server in servers:
        try:
            results.append(await load(server, options.conversations, options.turns))
        except LoadError as error:
            # the server did not come up: nothing was measured
            print(f"{server}: {error}", flush=True)
            return 1
        print(verification_line(results[-1]), flush=True)
        for failure in results[-1].failures[:5]:
            print(f"  {failure}", flush=True)
        for example in results[-1].verification.examples:
            print(f"  {example}", flush=True)
    print(f"after: {machine()}")
    print(HEADER)
    for result in results:
        print(row(result))
    failed = any(r.failures or not r.verification.ok for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
