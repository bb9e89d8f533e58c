"""A turn over real sockets, on minagent and on its peers (issue 41 item 3, PK-20).

    python benchmarks/e2e.py                    # every framework, 1 and 100 concurrent turns
    python benchmarks/e2e.py --check            # one turn per framework: the equivalence table
    python benchmarks/e2e.py --quick            # fewer turns: for trying things, noisy
    python benchmarks/e2e.py --frameworks minagent-stdlib,minagent-aiohttp

The turn is the same everywhere: the user asks for the weather, the model answers with one
call of the tool ``get_weather(city)``, the framework runs the tool and sends its result
back, and the model streams its answer in 500 chunks, which the caller reads one by one.

A loopback OpenAI-compatible Chat Completions server, written here with the standard
library (``--serve``: asyncio, HTTP/1.1 keep-alive, every answer written at once), runs
in its own process, so its CPU is not counted. It is scripted per turn: a request
without a tool result answers the tool call (streamed or not, as the request asks), a
request with one answers the 500 chunks (SSE ``data:`` lines, then ``[DONE]``). It
records per turn every request (method, path, the messages' roles and tool call ids,
the tool result, the stream flag) and the chunks it wrote; ``GET /records`` hands them
to the harness.

Each framework runs in a subprocess of its own (``--client NAME``) with the interpreter
that has it: minagent from this checkout with the standard library's transport and
with the aiohttp one (``plugins/http``) on this interpreter; agent-framework (its
``OpenAIChatCompletionClient``, from ``agent-framework-openai``), Pydantic AI
(``OpenAIChatModel``) and the OpenAI Agents SDK (``OpenAIChatCompletionsModel``) on
the peers' interpreter (``--peers-python``, default ``../shared/bench/.venv``), each
with its own OpenAI client pointed at the server. A client process measures its own CPU
(``time.process_time``) and the wall time of a batch of turns, at 1 and at 100 turns at
a time, and reports the chunks and the text each turn read.

Every turn measured is checked (PK-20): two requests, the tool result sent back under
the call's id, 500 chunks written and 500 read, and the answer equal to their
concatenation. Any difference is printed and the exit status is 1. The harness itself
uses the standard library only; the frameworks are imported only in their client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEERS_PYTHON = ROOT.parent / "shared" / "bench" / ".venv" / "bin" / "python"

CHUNKS = 500
CITY = "Paris"
TOOL = "get_weather"
MODEL = "e2e-model"
PATH = "/v1/chat/completions"
PIECES = [f"w{i} " for i in range(CHUNKS)]
ANSWER = "".join(PIECES)
TURN = re.compile(r"\[turn ([A-Za-z0-9_.-]+)\]")

# minagent on this interpreter; the peers on theirs
FRAMEWORKS = {
    "minagent-stdlib": "local",
    "minagent-aiohttp": "local",
    "agent-framework": "peers",
    "pydantic-ai": "peers",
    "openai-agents": "peers",
}


def weather(city: str) -> str:
    """The tool's body, the same in every framework."""
    return f"Sunny, 21 C in {city}"


def prompt(turn: str) -> str:
    return f"What is the weather in {CITY}? [turn {turn}]"


def call_id(turn: str) -> str:
    return f"call_{turn}"


# ------------------------------------------------------------------------------------
# The loopback server
# ------------------------------------------------------------------------------------


def _sse(payload: dict[str, Any]) -> bytes:
    event = b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"
    # one HTTP chunk per SSE event, as a real server flushes them
    return b"%x\r\n%s\r\n" % (len(event), event)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-e2e",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE = {"prompt_tokens": 20, "completion_tokens": CHUNKS, "total_tokens": CHUNKS + 20}
USAGE_EVENT = _sse({**_chunk({}), "choices": [], "usage": USAGE})
DONE = b"%x\r\n%s\r\n" % (len(b"data: [DONE]\n\n"), b"data: [DONE]\n\n")
END = b"0\r\n\r\n"
STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)
# the answer's body is the same for every turn: built once
TEXT_BODY = (
    _sse(_chunk({"role": "assistant", "content": PIECES[0]}))
    + b"".join(_sse(_chunk({"content": piece})) for piece in PIECES[1:])
    + _sse(_chunk({}, "stop"))
)
ARGUMENTS = json.dumps({"city": CITY})


def _tool_call_body(turn: str, stream: bool, usage: bool) -> bytes:
    call = {
        "id": call_id(turn),
        "type": "function",
        "function": {"name": TOOL, "arguments": ARGUMENTS},
    }
    if stream:
        first = {**call, "index": 0, "function": {"name": TOOL, "arguments": ""}}
        args = {"index": 0, "function": {"arguments": ARGUMENTS}}
        body = (
            _sse(_chunk({"role": "assistant", "content": None, "tool_calls": [first]}))
            + _sse(_chunk({"tool_calls": [args]}))
            + _sse(_chunk({}, "tool_calls"))
        )
        return STREAM_HEAD + body + (USAGE_EVENT if usage else b"") + DONE + END
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    payload = {
        "id": "chatcmpl-e2e",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": USAGE,
    }
    data = json.dumps(payload).encode()
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(data), data)
    )


def _json_answer(status: int, payload: Any) -> bytes:
    data = json.dumps(payload).encode()
    reason = b"OK" if status == 200 else b"Bad Request"
    return (
        b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (
            status,
            reason,
            len(data),
            data,
        )
    )


def _content_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def describe(method: str, target: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the server records of one request: what the check compares."""
    messages = body.get("messages", [])
    roles, call_ids, results = [], [], []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            roles.append("assistant(tool_calls)")
            call_ids += [c.get("id") for c in message["tool_calls"]]
        elif role == "tool":
            roles.append("tool")
            call_ids.append(message.get("tool_call_id"))
            results.append(_content_text(message.get("content")))
        else:
            roles.append(str(role))
    return {
        "method": method,
        "path": target,
        "roles": roles,
        "call_ids": call_ids,
        "tool_results": results,
        "stream": bool(body.get("stream")),
        "tools": [t.get("function", {}).get("name") for t in body.get("tools", [])],
    }


class Recorder:
    """Per turn, the requests received and the answer chunks written."""

    def __init__(self) -> None:
        self.turns: dict[str, dict[str, Any]] = {}
        self.unmatched = 0

    def answer(self, method: str, target: str, raw: bytes) -> bytes:
        if method == "GET" and target.startswith("/records"):
            prefix = target.partition("prefix=")[2]
            found = {k: v for k, v in self.turns.items() if k.startswith(prefix)}
            return _json_answer(200, {"turns": found, "unmatched": self.unmatched})
        try:
            body = json.loads(raw)
            text = " ".join(
                _content_text(m.get("content"))
                for m in body["messages"]
                if m.get("role") == "user"
            )
            turn = TURN.findall(text)[-1]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            self.unmatched += 1
            return _json_answer(400, {"error": {"message": "not a turn of e2e.py"}})
        seen = describe(method, target, body)
        record = self.turns.setdefault(turn, {"requests": [], "chunks_written": 0})
        record["requests"].append(seen)
        options = body.get("stream_options") or {}
        usage = bool(options.get("include_usage"))
        if "tool" not in seen["roles"]:
            return _tool_call_body(turn, seen["stream"], usage)
        record["chunks_written"] += CHUNKS
        if not seen["stream"]:
            # a framework that does not stream the answer: the check says so
            return _json_answer(
                400, {"error": {"message": "the answer must be streamed"}}
            )
        return STREAM_HEAD + TEXT_BODY + (USAGE_EVENT if usage else b"") + DONE + END


async def serve(port: int) -> None:
    recorder = Recorder()

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                method, target, _ = lines[0].decode("latin-1").split(" ", 2)
                length, chunked = 0, False
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"transfer-encoding" and b"chunked" in value.lower():
                        chunked = True
                if chunked:
                    parts = []
                    while size := int((await reader.readline()).split(b";")[0], 16):
                        parts.append(await reader.readexactly(size + 2))
                    await reader.readline()
                    raw = b"".join(p[:-2] for p in parts)
                else:
                    raw = await reader.readexactly(length)
                writer.write(recorder.answer(method, target, raw))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


class Server:
    """The loopback server in a subprocess of this interpreter; a context manager."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(self.port)],
            stdout=subprocess.PIPE,
            text=True,
        )

    def __enter__(self) -> Server:
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("the loopback server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def records(self, prefix: str) -> tuple[dict[str, dict[str, Any]], int]:
        url = f"http://127.0.0.1:{self.port}/records?prefix={prefix}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=60) as answer:
            data = json.loads(answer.read())
        return data["turns"], int(data["unmatched"])


# ------------------------------------------------------------------------------------
# The check
# ------------------------------------------------------------------------------------


@dataclass
class Read:
    """What a client read of one turn's answer."""

    chunks: int
    text: str
    final: str


def expected_requests(turn: str) -> list[dict[str, Any]]:
    """The two requests of a turn, as the server records them (the first one's stream
    flag is the framework's choice and is not compared)."""
    first = {"method": "POST", "path": PATH, "roles": ["user"], "call_ids": []}
    first.update(tool_results=[], tools=[TOOL])
    second = {
        "method": "POST",
        "path": PATH,
        "roles": ["user", "assistant(tool_calls)", "tool"],
        "call_ids": [call_id(turn), call_id(turn)],
        "tool_results": [weather(CITY)],
        "stream": True,
        "tools": [TOOL],
    }
    return [first, second]


def problems(turn: str, record: dict[str, Any] | None, read: Read | None) -> list[str]:
    """How one turn differs from the expected one; empty when it does not."""
    if record is None:
        return [f"turn {turn}: the server saw no request"]
    found = []
    requests = record["requests"]
    if len(requests) != 2:
        found.append(f"turn {turn}: {len(requests)} requests, expected 2")
    for index, (got, want) in enumerate(
        zip(requests, expected_requests(turn), strict=False), 1
    ):
        for key, value in want.items():
            have = got.get(key)
            # a tool result may come back JSON-quoted: the same text either way
            if key == "tool_results" and have is not None:
                have = [_unquote(r) for r in have]
            if have != value:
                found.append(
                    f"turn {turn}: request {index} {key} {have!r}, expected {value!r}"
                )
    if record["chunks_written"] != CHUNKS:
        found.append(
            f"turn {turn}: {record['chunks_written']} chunks written, expected {CHUNKS}"
        )
    if read is None:
        found.append(f"turn {turn}: the client reported nothing")
        return found
    if read.chunks != CHUNKS:
        found.append(f"turn {turn}: {read.chunks} chunks read, expected {CHUNKS}")
    if read.text != ANSWER:
        found.append(f"turn {turn}: the chunks read are not the answer written")
    if read.final != ANSWER:
        found.append(
            f"turn {turn}: the final text is not the concatenation of the chunks"
        )
    return found


def _unquote(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str) else text


# ------------------------------------------------------------------------------------
# The frameworks, each in its client process
# ------------------------------------------------------------------------------------

TurnFn = Callable[[str], Awaitable[Read]]


async def read_run(stream: Any) -> Read:
    """Read a streamed run the way minagent and agent-framework both spell it: each
    update's text, then the final response."""
    parts = []
    async for update in stream:
        if text := update.text:
            parts.append(text)
    final = await stream.get_final_response()
    return Read(len(parts), "".join(parts), final.text)


async def minagent_turn(transport_name: str, base_url: str) -> tuple[TurnFn, Any]:
    sys.path[:0] = [str(ROOT), str(ROOT / "plugins" / "openai")]
    if transport_name == "aiohttp":
        sys.path.insert(0, str(ROOT / "plugins" / "http"))
        from minagent_http import AiohttpTransport

        transport: Any = AiohttpTransport(trust_env=False)
    else:
        from minagent.providers import StdlibTransport

        transport = StdlibTransport(trust_env=False)
    from minagent_openai import OpenAIChatClient

    from minagent import Agent, tool

    @tool(name=TOOL, description="The weather in a city.")
    def get_weather(city: str) -> str:
        return weather(city)

    client = OpenAIChatClient(
        MODEL, api_key="e2e", base_url=base_url, transport=transport, trust_env=False
    )
    agent = Agent(client, tools=[get_weather])

    async def turn(tid: str) -> Read:
        return await read_run(agent.run(prompt(tid), stream=True))

    return turn, client.aclose


async def agent_framework_turn(base_url: str) -> tuple[TurnFn, Any]:
    from agent_framework import Agent, tool
    from agent_framework.openai import OpenAIChatCompletionClient

    @tool(name=TOOL, description="The weather in a city.")
    def get_weather(city: str) -> str:
        return weather(city)

    client = OpenAIChatCompletionClient(MODEL, api_key="e2e", base_url=base_url)
    agent = Agent(client=client, name="e2e", tools=[get_weather])

    async def turn(tid: str) -> Read:
        return await read_run(agent.run(prompt(tid), stream=True))

    return turn, None


async def pydantic_ai_turn(base_url: str) -> tuple[TurnFn, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=base_url, api_key="e2e")
    agent = Agent(OpenAIChatModel(MODEL, provider=provider), name="e2e")

    @agent.tool_plain(name=TOOL)
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    async def turn(tid: str) -> Read:
        parts = []
        async with agent.run_stream(prompt(tid)) as result:
            async for delta in result.stream_text(delta=True, debounce_by=None):
                if delta:
                    parts.append(delta)
            final = await result.get_output()
        return Read(len(parts), "".join(parts), final)

    return turn, None


async def openai_agents_turn(base_url: str) -> tuple[TurnFn, Any]:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    openai_client = AsyncOpenAI(base_url=base_url, api_key="e2e")
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=openai_client)
    tool = function_tool(get_weather, name_override=TOOL)
    agent = Agent(name="e2e", model=model, tools=[tool])

    async def turn(tid: str) -> Read:
        result = Runner.run_streamed(agent, prompt(tid))
        parts = []
        async for event in result.stream_events():
            if event.type == "raw_response_event":
                data = event.data
                if data.type == "response.output_text.delta" and data.delta:
                    parts.append(data.delta)
        return Read(len(parts), "".join(parts), str(result.final_output))

    return turn, openai_client.close


async def make_turn(name: str, base_url: str) -> tuple[TurnFn, Any]:
    if name == "minagent-stdlib":
        return await minagent_turn("stdlib", base_url)
    if name == "minagent-aiohttp":
        return await minagent_turn("aiohttp", base_url)
    if name == "agent-framework":
        return await agent_framework_turn(base_url)
    if name == "pydantic-ai":
        return await pydantic_ai_turn(base_url)
    if name == "openai-agents":
        return await openai_agents_turn(base_url)
    raise SystemExit(f"unknown framework {name!r}")


async def client_main(args: argparse.Namespace) -> dict[str, Any]:
    """One framework's client: the turns asked for, timed or not, and what each read."""
    base_url = f"http://127.0.0.1:{args.port}/v1"
    turn, close = await make_turn(args.client, base_url)
    reads: dict[str, Any] = {}
    results: list[dict[str, float]] = []
    try:
        # warm-up (imports, connections, first-call caches): not timed, but checked
        for index in range(args.warmup):
            tid = f"{args.prefix}w{index}"
            read = await turn(tid)
            reads[tid] = [read.chunks, read.text == ANSWER, read.final == ANSWER]
        for concurrency in args.concurrency:
            batches = max(1, args.turns // concurrency)
            count = 0
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for batch in range(batches):
                ids = [
                    f"{args.prefix}c{concurrency}b{batch}t{i}"
                    for i in range(concurrency)
                ]
                done = await asyncio.gather(*(turn(tid) for tid in ids))
                for tid, read in zip(ids, done, strict=True):
                    reads[tid] = [
                        read.chunks,
                        read.text == ANSWER,
                        read.final == ANSWER,
                    ]
                count += concurrency
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            results.append(
                {"concurrency": concurrency, "turns": count, "cpu": cpu, "wall": wall}
            )
    finally:
        if close is not None:
            await close()
    return {"framework": args.client, "results": results, "reads": reads}


# ------------------------------------------------------------------------------------
# The harness
# ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    framework: str
    results: list[dict[str, float]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    turn: dict[str, Any] | None = None
    read: Read | None = None


def python_for(framework: str, peers_python: str) -> str:
    return sys.executable if FRAMEWORKS[framework] == "local" else peers_python


def run_client(
    server: Server,
    framework: str,
    peers_python: str,
    prefix: str,
    turns: int,
    concurrency: list[int],
    warmup: int,
) -> Outcome:
    command = [
        python_for(framework, peers_python),
        __file__,
        "--client",
        framework,
        "--port",
        str(server.port),
        "--prefix",
        prefix,
        "--turns",
        str(turns),
        "--warmup",
        str(warmup),
        "--concurrency",
        ",".join(map(str, concurrency)),
    ]
    env = {**os.environ, "NO_PROXY": "*", "no_proxy": "*"}
    # where a peer's package missing from the peers' interpreter was installed
    # (agent-framework-openai: `pip install --target DIR`), for the peers only
    extra = os.environ.get("MINAGENT_PEERS_PATH")
    if extra and FRAMEWORKS[framework] == "peers":
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [extra, env.get("PYTHONPATH")])
        )
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env.pop(name, None)
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=1800
    )
    outcome = Outcome(framework)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        outcome.problems.append(f"{framework}: the client failed: {tail}")
        return outcome
    report = json.loads(done.stdout.strip().splitlines()[-1])
    outcome.results = report["results"]
    records, unmatched = server.records(prefix)
    if unmatched:
        outcome.problems.append(
            f"{framework}: {unmatched} requests the server could not place"
        )
    reads = report["reads"]
    for tid, (chunks, text_ok, final_ok) in sorted(reads.items()):
        read = Read(chunks, ANSWER if text_ok else "?", ANSWER if final_ok else "?")
        found = problems(tid, records.get(tid), read)
        outcome.problems += [f"{framework}: {p}" for p in found]
        if outcome.turn is None:
            outcome.turn, outcome.read = records.get(tid), read
    unreported = set(records) - set(reads)
    outcome.problems += [
        f"{framework}: turn {t}: not reported by the client" for t in sorted(unreported)
    ]
    return outcome


def cell_requests(turn: dict[str, Any] | None) -> str:
    if turn is None:
        return "-"
    return " + ".join(
        f"{r['method']} {r['path']} {'stream' if r['stream'] else 'json'} [{','.join(r['roles'])}]"
        for r in turn["requests"]
    )


def check_table(outcomes: list[Outcome]) -> str:
    """The side-by-side table of one turn per framework (--check)."""
    rows = [
        "| framework | requests | tool call id sent back | tool result | chunks written / read | answer |",
        "|---|---|---|---|---|---|",
    ]
    for outcome in outcomes:
        turn, read = outcome.turn, outcome.read
        second = turn["requests"][-1] if turn and turn["requests"] else {}
        ids = second.get("call_ids", [])
        same_id = "yes" if len(ids) == 2 and ids[0] == ids[1] else "no"
        results = [_unquote(r) for r in second.get("tool_results", [])]
        written = turn["chunks_written"] if turn else 0
        chunks = read.chunks if read else 0
        answer = "= the chunks" if read and read.final == ANSWER else "differs"
        mark = "" if not outcome.problems else " ≠ expected"
        rows.append(
            f"| {outcome.framework}{mark} | {cell_requests(turn)} | {same_id} | "
            f"{'; '.join(results) or '-'} | {written} / {chunks} | {answer} |"
        )
    return "\n".join(rows)


def figures_table(rounds: dict[str, list[Outcome]], concurrency: list[int]) -> str:
    head = "| framework | " + " | ".join(
        f"CPU us/turn @{c} | turns/s @{c}" for c in concurrency
    )
    rows = [head + " |", "|---|" + "---:|---:|" * len(concurrency)]
    for framework, outcomes in rounds.items():
        cells = []
        for c in concurrency:
            found = [r for o in outcomes for r in o.results if r["concurrency"] == c]
            if not found:
                cells += ["-", "-"]
                continue
            cpu = statistics.median(r["cpu"] / r["turns"] for r in found) * 1e6
            rate = statistics.median(r["turns"] / r["wall"] for r in found)
            cells += [f"{cpu:,.0f}", f"{rate:,.1f}"]
        rows.append(f"| {framework} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def available(framework: str, peers_python: str) -> str | None:
    """Why a framework cannot run here, or None."""
    python = python_for(framework, peers_python)
    probe = {
        "minagent-stdlib": "import asyncio",
        "minagent-aiohttp": "import aiohttp",
        "agent-framework": "from agent_framework.openai import OpenAIChatCompletionClient",
        "pydantic-ai": "import pydantic_ai.models.openai",
        "openai-agents": "import agents",
    }[framework]
    if not Path(python).exists():
        return f"no interpreter {python}"
    env = dict(os.environ)
    extra = os.environ.get("MINAGENT_PEERS_PATH")
    if extra and FRAMEWORKS[framework] == "peers":
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [extra, env.get("PYTHONPATH")])
        )
    done = subprocess.run(
        [python, "-c", probe], capture_output=True, text=True, env=env
    )
    if done.returncode:
        return (done.stderr.strip().splitlines() or ["?"])[-1]
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--prefix", default="t", help=argparse.SUPPRESS)
    parser.add_argument(
        "--warmup", type=int, default=10, help="turns before the clock starts"
    )
    parser.add_argument(
        "--check", action="store_true", help="one turn per framework: the table"
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer turns and one round"
    )
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--turns", type=int, default=None, help="turns per measurement")
    parser.add_argument(
        "--rounds", type=int, default=None, help="rounds (median over them)"
    )
    parser.add_argument(
        "--concurrency", default="1,100", help="turns at a time, comma-separated"
    )
    parser.add_argument(
        "--peers-python",
        default=os.environ.get("MINAGENT_PEERS_PYTHON", str(PEERS_PYTHON)),
        help="the interpreter that has the peers",
    )
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    if args.serve is not None:
        asyncio.run(serve(args.serve))
        return 0
    if args.client:
        report = asyncio.run(client_main(args))
        print(json.dumps(report), flush=True)
        return 0

    wanted = [f.strip() for f in args.frameworks.split(",") if f.strip()]
    for name in wanted:
        if name not in FRAMEWORKS:
            parser.error(f"unknown framework {name!r}; known: {', '.join(FRAMEWORKS)}")
    frameworks = []
    for name in wanted:
        why = available(name, args.peers_python)
        if why is None:
            frameworks.append(name)
        else:
            print(f"{name}: skipped ({why})")
    if args.check:
        turns, rounds, concurrency, warmup = 1, 1, [1], 0
    else:
        turns = args.turns or (100 if args.quick else 200)
        rounds = args.rounds or (1 if args.quick else 3)
        concurrency, warmup = args.concurrency, args.warmup

    bad: list[str] = []
    collected: dict[str, list[Outcome]] = {name: [] for name in frameworks}
    with Server() as server:
        # rounds interleaved between the frameworks, as run.py does
        for round_ in range(rounds):
            for index, name in enumerate(frameworks):
                prefix = f"r{round_}f{index}x"
                outcome = run_client(
                    server, name, args.peers_python, prefix, turns, concurrency, warmup
                )
                collected[name].append(outcome)
                bad += outcome.problems
                if args.check:
                    continue
                # progress, as each client ends (a full run takes minutes)
                figures = ", ".join(
                    f"@{r['concurrency']:.0f}: {r['cpu'] / r['turns'] * 1e6:,.0f} us CPU/turn, "
                    f"{r['turns'] / r['wall']:,.1f} turns/s"
                    for r in outcome.results
                )
                print(
                    f"round {round_ + 1}, {name}: {figures or 'failed'}",
                    file=sys.stderr,
                )
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, loopback server in a subprocess"
    )
    if args.check:
        print(check_table([o for outcomes in collected.values() for o in outcomes]))
    else:
        print(
            f"{turns} turns per measurement, median of {rounds} round(s); CPU: the client process's"
        )
        print(figures_table(collected, concurrency))
    for line in bad[:50]:
        print(line)
    if len(bad) > 50:
        print(f"... and {len(bad) - 50} more")
    checked = sum(
        len(o.results) and 1 for outcomes in collected.values() for o in outcomes
    )
    print(f"{'FAIL' if bad else 'ok'}: {len(bad)} differences in {checked} client runs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
