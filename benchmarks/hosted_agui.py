"""The hosted turn over AG-UI (issue 41 item 4): one agent turn (a tool round, then a
streamed answer of 500 chunks, the model a fake that answers instantly, `agui_turn.py`)
served over AG-UI to many concurrent streaming clients, by minagent and by
agent-framework's AG-UI endpoint.

    python benchmarks/hosted_agui.py                        # 200 clients x 5 turns, all servers
    python benchmarks/hosted_agui.py --server dev --server uvicorn   # minagent only
    python benchmarks/hosted_agui.py --clients 20 --turns 3 --peer-python PATH

The servers, each a subprocess on loopback serving one agent at ``POST /agui/bench``:

* ``dev``: ``python -m minagent serve agui_minagent_app:agent`` (the dev server with its
  guard, run and connection caps raised above the load);
* ``uvicorn``: minagent's ``HostingApp`` (`agui_minagent_app.py`) on uvicorn, 1 worker;
* ``af``: agent-framework's AG-UI endpoint (`agui_af_app.py`) on uvicorn, 1 worker, run by
  the peer's interpreter (``--peer-python``, default ``$HOSTED_PEER_PYTHON`` or
  /work/venv-afagui/bin/python; requirements-hosted-peers.txt).

Both uvicorn servers run with uvicorn's defaults (its best event loop and HTTP parser
installed: uvloop and httptools, the same versions in both environments).

The client (this process: standard-library asyncio HTTP/1.1 from `hosting_load`, one
connection per request) starts every client at once; each runs its turns one after the
other, each turn a new thread: ``POST /agui/bench`` with one user message, the SSE stream
read to its end. After a few unmeasured warm-up turns, every turn is checked
(`check_turn`): the events come in AG-UI order (``RUN_STARTED`` first, ``RUN_FINISHED``
last and once, no ``RUN_ERROR``, every text message and tool call started, then its
content, then ended), the tool call is ``add`` with its arguments and its result is
present, and the text is the 500 chunks concatenated. A failed check is printed and makes
the exit status 1.

Figures, printed as a Markdown table: turns per second (all turns over the load's wall
time), time to the first AG-UI event and the whole turn's time (p50/p99, from opening the
connection), the server process's CPU time per turn (from /proc) and this client's, and
the events per turn. These are figures, never assertions: nothing fails because a
machine is slow.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from agui_turn import (  # noqa: E402
    AGENT,
    ANSWER,
    ARGUMENTS,
    CHUNKS,
    RESULT,
    TOOL_NAME,
    USER_TEXT,
)
from hosting_load import (  # noqa: E402
    HOST,
    READY_ATTEMPTS,
    READY_PAUSE,
    _body_pieces,
    _head,
    _request_bytes,
    free_port,
    log_tail,
    machine,
    percentile,
    server_process,
)

PATH = f"/agui/{AGENT}"
PEER_PYTHON_ENV = "HOSTED_PEER_PYTHON"
# the peer's venv beside the checkout, as benchmarks/README.md sets it up
DEFAULT_PEER_PYTHON = str(ROOT.parent / "venv-afagui" / "bin" / "python")
WARMUP_TURNS = 5


class TurnError(Exception):
    """A turn's stream is not the turn it should be."""


class ServerError(Exception):
    """A server did not come up."""


# -- the servers ----------------------------------------------------------------------


def _uvicorn(python: str, app: str, port: int) -> list[str]:
    return [
        python,
        "-m",
        "uvicorn",
        app,
        "--app-dir",
        str(BENCH),
        "--host",
        HOST,
        "--port",
        str(port),
        "--no-access-log",
        "--log-level",
        "warning",
    ]


def server_command(server: str, port: int, peer_python: str) -> list[str]:
    """The command line that serves the turn on ``server`` at ``port``."""
    if server == "dev":
        return [
            sys.executable,
            "-m",
            "minagent",
            "serve",
            "agui_minagent_app:agent",
            "--port",
            str(port),
            "--max-runs",
            "1000",
            "--max-connections",
            "1000",
        ]
    if server == "uvicorn":
        return _uvicorn(sys.executable, "agui_minagent_app:app", port)
    if server == "af":
        return _uvicorn(peer_python, "agui_af_app:app", port)
    raise ValueError(f"unknown server {server!r}")


NAMES = {
    "dev": "minagent, dev server (`minagent serve`)",
    "uvicorn": "minagent, uvicorn 1 worker",
    "af": "agent-framework AG-UI, uvicorn 1 worker",
}


async def until_ready(port: int, process: subprocess.Popen[str], log: IO[str]) -> None:
    """Wait until the server answers an HTTP request (any status: a GET of the AG-UI
    path is refused by both servers, and that is an answer)."""
    for _ in range(READY_ATTEMPTS):
        if process.poll() is not None:
            raise ServerError(
                f"the server exited ({process.returncode}):\n{log_tail(log)}"
            )
        # a server still starting refuses or closes the connection
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            reader, writer = await asyncio.open_connection(HOST, port)
            try:
                writer.write(_request_bytes("GET", PATH, b""))
                await _head(reader)
                return
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
        await asyncio.sleep(READY_PAUSE)
    raise ServerError(f"the server did not answer:\n{log_tail(log)}")


def cpu_seconds(pid: int) -> float | None:
    """The process's user + system CPU time so far, from /proc (None elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the fields after the command name (which may hold spaces) in parentheses
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- server-sent events ---------------------------------------------------------------


async def sse_events(pieces: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """The AG-UI events of an SSE body arriving in ``pieces``: each event's ``data``
    lines as one JSON object. Lines end with CR LF, LF or CR (the SSE format allows
    each; agent-framework's keep-alive comments end with CR LF); comments and events
    without data are skipped."""
    carry = b""  # complete lines, normalised to LF, of an event not yet complete
    held = b""  # a trailing CR, which may be the first half of CR LF
    async for piece in pieces:
        raw = held + piece
        held = b""
        if raw.endswith(b"\r"):
            raw, held = raw[:-1], b"\r"
        carry += raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *blocks, carry = carry.split(b"\n\n")
        for block in blocks:
            event = _event(block)
            if event is not None:
                yield event
    # the stream's end ends a line whose CR was held, but dispatches no event of its
    # own: an event needs its blank line
    *blocks, carry = (carry + held.replace(b"\r", b"\n")).split(b"\n\n")
    for block in blocks:
        event = _event(block)
        if event is not None:
            yield event
    if carry.strip(b"\n"):
        raise TurnError(f"the stream ended inside an event: {carry[:200]!r}")


def _event(block: bytes) -> dict[str, Any] | None:
    data = [
        line[5:].removeprefix(b" ")
        for line in block.split(b"\n")
        if line.startswith(b"data:")
    ]
    if not data:
        return None
    try:
        event = json.loads(b"\n".join(data))
    except ValueError as error:
        raise TurnError(f"an event that is not JSON: {block[:200]!r}") from error
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise TurnError(f"an event that is not an AG-UI event: {block[:200]!r}")
    return event


# -- one turn -------------------------------------------------------------------------


def turn_input(thread_id: str, run_id: str) -> dict[str, Any]:
    """The turn's ``RunAgentInput``: a new thread with one user message."""
    return {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [{"id": f"{run_id}-user", "role": "user", "content": USER_TEXT}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def check_turn(events: Sequence[dict[str, Any]], thread_id: str, run_id: str) -> None:
    """Raise `TurnError` unless ``events`` are the whole turn in AG-UI order.

    The run: ``RUN_STARTED`` first and ``RUN_FINISHED`` last, each once and naming the
    thread and run; no ``RUN_ERROR``. Each text message and tool call: started once,
    its content (``TEXT_MESSAGE_CONTENT``, ``TOOL_CALL_ARGS``) only while it is open,
    ended once; nothing left open; a ``TOOL_CALL_RESULT`` only for a call that ended.
    The turn: exactly one tool call, ``add`` with `ARGUMENTS`, and its result `RESULT`;
    the text deltas, all after that result, are the `CHUNKS` chunks concatenated. Other
    events (steps, state, snapshots) may come between the first and the last."""
    if not events:
        raise TurnError("no event")
    kinds = [event["type"] for event in events]
    for kind, at in (("RUN_STARTED", 0), ("RUN_FINISHED", len(events) - 1)):
        event = events[at]
        if event["type"] != kind or kinds.count(kind) != 1:
            raise TurnError(f"{kind} is not once, at {at}: {kinds[:3]}..{kinds[-3:]}")
        if (event.get("threadId"), event.get("runId")) != (thread_id, run_id):
            raise TurnError(f"{kind} names another run: {event}")
    if "RUN_ERROR" in kinds:
        raise TurnError(f"RUN_ERROR: {events[kinds.index('RUN_ERROR')]}")
    texts: dict[str, str] = {}  # message id -> "open" / "ended"
    calls: dict[str, str] = {}  # call id -> "open" / "ended"
    names: dict[str, str] = {}
    arguments: dict[str, list[str]] = {}
    results: dict[str, str] = {}
    deltas: list[str] = []
    text_after_result = True
    for index, event in enumerate(events):
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            _open(texts, event.get("messageId"), index, kind)
        elif kind == "TEXT_MESSAGE_CONTENT":
            _in(texts, event.get("messageId"), index, kind)
            deltas.append(str(event.get("delta")))
            text_after_result = text_after_result and bool(results)
        elif kind == "TEXT_MESSAGE_END":
            _close(texts, event.get("messageId"), index, kind)
        elif kind == "TOOL_CALL_START":
            call = event.get("toolCallId")
            _open(calls, call, index, kind)
            names[str(call)] = str(event.get("toolCallName"))
            arguments[str(call)] = []
        elif kind == "TOOL_CALL_ARGS":
            call = event.get("toolCallId")
            _in(calls, call, index, kind)
            arguments[str(call)].append(str(event.get("delta")))
        elif kind == "TOOL_CALL_END":
            _close(calls, event.get("toolCallId"), index, kind)
        elif kind == "TOOL_CALL_RESULT":
            call = str(event.get("toolCallId"))
            if calls.get(call) != "ended" or call in results:
                raise TurnError(f"event {index}: a result for call {call} out of turn")
            results[call] = str(event.get("content"))
    left_open = [i for i, s in {**texts, **calls}.items() if s == "open"]
    if left_open:
        raise TurnError(f"left open at RUN_FINISHED: {left_open}")
    if len(calls) != 1:
        raise TurnError(f"{len(calls)} tool calls, not 1")
    (call,) = calls
    if names[call] != TOOL_NAME or _json("".join(arguments[call])) != ARGUMENTS:
        raise TurnError(f"the call is {names[call]}({''.join(arguments[call])})")
    if call not in results or _json(results[call]) != RESULT:
        raise TurnError(f"the call's result is {results.get(call)!r}, not {RESULT}")
    if not text_after_result:
        raise TurnError("text came before the tool's result")
    if len(deltas) != CHUNKS or "".join(deltas) != ANSWER:
        raise TurnError(
            f"{len(deltas)} text deltas, {''.join(deltas)[:60]!r}..., "
            f"not the {CHUNKS} chunks"
        )


def _open(book: dict[str, str], key: Any, index: int, kind: str) -> None:
    if not isinstance(key, str) or key in book:
        raise TurnError(f"event {index}: {kind} of {key!r} again or without an id")
    book[key] = "open"


def _in(book: dict[str, str], key: Any, index: int, kind: str) -> None:
    if book.get(key) != "open":
        raise TurnError(f"event {index}: {kind} of {key!r}, which is not open")


def _close(book: dict[str, str], key: Any, index: int, kind: str) -> None:
    _in(book, key, index, kind)
    book[key] = "ended"


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class Turn:
    """One checked turn's timings (seconds from opening the connection)."""

    first_event: float
    total: float
    events: int


async def read_turn(
    port: int, thread_id: str, run_id: str
) -> tuple[list[dict[str, Any]], Turn]:
    """One ``POST /agui/bench`` read to the end of its stream, not checked: its events
    and timings."""
    body = json.dumps(turn_input(thread_id, run_id)).encode()
    started = time.perf_counter()
    first_event = 0.0
    events: list[dict[str, Any]] = []
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(_request_bytes("POST", PATH, body))
        status, headers = await _head(reader)
        if status != 200:
            rest = b"".join([p async for p in _body_pieces(reader, headers)])
            raise TurnError(f"status {status}: {rest[:300]!r}")
        async for event in sse_events(_body_pieces(reader, headers)):
            if not events:
                first_event = time.perf_counter() - started
            events.append(event)
        total = time.perf_counter() - started
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return events, Turn(first_event, total, len(events))


async def streamed_turn(port: int, thread_id: str, run_id: str) -> Turn:
    """One turn read to the end of its stream and checked (`check_turn`)."""
    events, turn = await read_turn(port, thread_id, run_id)
    check_turn(events, thread_id, run_id)
    return turn


async def client(port: int, run: str, index: int, turns: int) -> list[Turn | str]:
    """One client: ``turns`` turns one after the other, each a new thread; a failed
    turn is its message, and the client goes on."""
    done: list[Turn | str] = []
    for turn in range(turns):
        thread_id = f"{run}-{index}-{turn}"
        try:
            done.append(await streamed_turn(port, thread_id, f"run-{index}-{turn}"))
        except (TurnError, OSError, asyncio.IncompleteReadError, ValueError) as error:
            done.append(f"{thread_id}: {type(error).__name__}: {error}")
    return done


# -- one load run -----------------------------------------------------------------------


@dataclass
class Result:
    server: str
    clients: int
    turns: int
    seconds: float
    cpu: float | None
    # this process's CPU time over the load: the client's share of the machine
    client_cpu: float
    done: list[Turn] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def load(server: str, clients: int, turns: int, peer_python: str) -> Result:
    """Start ``server``, warm it up, run the load, stop it."""
    run = f"agui-{os.getpid()}-{time.time_ns()}"
    port = free_port()
    with (
        tempfile.TemporaryFile("w+") as log,
        server_process(
            server_command(server, port, peer_python), log, paths=[BENCH]
        ) as process,
    ):
        await until_ready(port, process, log)
        warm = await client(port, f"{run}-warmup", 0, WARMUP_TURNS)
        failures = [turn for turn in warm if isinstance(turn, str)]
        cpu_before = cpu_seconds(process.pid)
        client_before = _own_cpu()
        started = time.perf_counter()
        outcomes = await asyncio.gather(
            *(client(port, run, i, turns) for i in range(clients))
        )
        seconds = time.perf_counter() - started
        client_cpu = _own_cpu() - client_before
        cpu_after = cpu_seconds(process.pid)
    result = Result(
        server, clients, turns, seconds, None, client_cpu, failures=failures
    )
    if cpu_before is not None and cpu_after is not None:
        result.cpu = cpu_after - cpu_before
    for outcome in outcomes:
        for turn in outcome:
            if isinstance(turn, str):
                result.failures.append(turn)
            else:
                result.done.append(turn)
    return result


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- the report -------------------------------------------------------------------------

HEADER = (
    "| server | clients x turns | turns/s | first event p50 / p99 (ms) "
    "| turn p50 / p99 (ms) | server CPU per turn (ms) | client CPU per turn (ms) "
    "| events per turn | failed turns |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def _pair(values: list[float]) -> str:
    return (
        f"{percentile(values, 0.5) * 1000:.1f} / {percentile(values, 0.99) * 1000:.1f}"
    )


def row(result: Result) -> str:
    done = result.done
    measured = max(1, len(done))
    cpu = "-" if result.cpu is None else f"{result.cpu * 1000 / measured:.2f}"
    events = sorted({turn.events for turn in done})
    return (
        f"| {NAMES[result.server]} | {result.clients} x {result.turns} "
        f"| {len(done) / result.seconds:.1f} "
        f"| {_pair([t.first_event for t in done])} "
        f"| {_pair([t.total for t in done])} | {cpu} "
        f"| {result.client_cpu * 1000 / measured:.2f} "
        f"| {', '.join(map(str, events)) or '-'} | {len(result.failures)} |"
    )


def check_line(result: Result) -> str:
    total = result.clients * result.turns + WARMUP_TURNS
    state = "ok" if not result.failures else "FAILED"
    return (
        f"{result.server}: checked {total} turns ({WARMUP_TURNS} warm-up): "
        f"{len(result.failures)} failed: {state}"
    )


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line's options; a bad one exits with status 2."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument(
        "--server",
        action="append",
        choices=["dev", "uvicorn", "af"],
        help="a server to load (repeatable); all three by default",
    )
    parser.add_argument(
        "--peer-python",
        default=os.environ.get(PEER_PYTHON_ENV, DEFAULT_PEER_PYTHON),
        help="the interpreter with agent-framework installed "
        f"(default ${PEER_PYTHON_ENV} or {DEFAULT_PEER_PYTHON})",
    )
    options = parser.parse_args(argv)
    if options.clients < 1 or options.turns < 1:
        parser.error("--clients and --turns must be at least 1")
    options.server = options.server or ["dev", "uvicorn", "af"]
    if "af" in options.server and not Path(options.peer_python).exists():
        parser.error(
            f"no peer interpreter at {options.peer_python}: make it as "
            "benchmarks/README.md says, or leave out --server af"
        )
    return options


async def main(options: argparse.Namespace) -> int:
    servers: list[str] = options.server
    print(f"before: {machine()}", flush=True)
    results = []
    for server in servers:
        try:
            result = await load(
                server, options.clients, options.turns, options.peer_python
            )
        except ServerError as error:
            # the server did not come up: nothing was measured
            print(f"{server}: {error}", flush=True)
            return 1
        results.append(result)
        print(check_line(result), flush=True)
        for failure in result.failures[:5]:
            print(f"  {failure}", flush=True)
    print(f"after: {machine()}")
    print(HEADER)
    for result in results:
        print(row(result))
    return 1 if any(result.failures for result in results) else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse(None))))
