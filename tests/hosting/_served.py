"""Agents and helpers the serving tests share (spec/hosting.md HS-110 .. HS-136): agents
named as ``tests.hosting._served:NAME`` targets of ``python -m minagent serve`` and of
the uvicorn app, a raw HTTP/1.1 client on loopback, and the served process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

from minagent import (
    Agent,
    AgentContext,
    AgentMiddleware,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    Message,
    function_middleware,
    tool,
)
from minagent.hosting.agui import STATE_KEY

ROOT = Path(__file__).resolve().parents[2]

# A file the slow model and tool write their progress to, when the variable names one:
# the test in another process reads what happened to the run.
JOURNAL = "MINAGENT_TEST_JOURNAL"


def journal(line: str) -> None:
    path = os.environ.get(JOURNAL)
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(line + "\n")


class EchoModel(BaseChatClient):
    """Answers ``echo: <last user text>``, streamed a word at a time, forever."""

    def _answer(self, messages: list[Message]) -> list[str]:
        last = next((m.text for m in reversed(messages) if m.role == "user"), "")
        words = f"echo: {last}".split(" ")
        return [w if i == 0 else " " + w for i, w in enumerate(words)]

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        text = "".join(self._answer(messages))
        return ChatResponse([Message("assistant", [Content.from_text(text)])])

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        for word in self._answer(messages):
            yield ChatResponseUpdate([Content.from_text(word)], "assistant")


class SlowModel(BaseChatClient):
    """Streams ``tick 0``, ``tick 1``, ... one per ``MINAGENT_TEST_TICK`` seconds
    (default 0.05), ``MINAGENT_TEST_TICKS`` of them (default 1000); a non-streamed call
    waits as long and answers ``done``. Progress and cancellation go to the journal."""

    def _plan(self) -> tuple[float, int]:
        return (
            float(os.environ.get("MINAGENT_TEST_TICK", "0.05")),
            int(os.environ.get("MINAGENT_TEST_TICKS", "1000")),
        )

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        tick, ticks = self._plan()
        journal("started")
        try:
            await asyncio.sleep(tick * ticks)
        except asyncio.CancelledError:
            journal("cancelled")
            raise
        journal("finished")
        return ChatResponse([Message("assistant", [Content.from_text("done")])])

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        tick, ticks = self._plan()
        journal("started")
        try:
            for index in range(ticks):
                yield ChatResponseUpdate(
                    [Content.from_text(f"tick {index} ")], "assistant"
                )
                await asyncio.sleep(tick)
        except (asyncio.CancelledError, GeneratorExit):
            journal("cancelled")
            raise
        journal("finished")


@tool
def worker_pid() -> int:
    """The process id of the worker answering."""
    return os.getpid()


class CountingModel(BaseChatClient):
    """Answers ``turn N``, N the number of user messages the call received: the answer
    shows whether the run saw its conversation's whole history."""

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        turn = sum(1 for m in messages if m.role == "user")
        return ChatResponse([Message("assistant", [Content.from_text(f"turn {turn}")])])


def echo() -> Agent:
    return Agent(EchoModel(), name="echo")


def counting() -> Agent:
    return Agent(CountingModel(), name="counting")


def slow() -> Agent:
    return Agent(SlowModel(), name="slow")


async def async_factory() -> Agent:
    return Agent(EchoModel(), name="made-async")


class ContextAgent(Agent):
    """An agent whose context entry and exit go to the journal."""

    async def __aenter__(self) -> ContextAgent:
        journal("entered")
        await super().__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        journal("exited")
        await super().__aexit__(*exc_info)


def with_context() -> Agent:
    return ContextAgent(EchoModel(), name="ctx")


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file (a served test tool that needs approval; it deletes nothing)."""
    return f"deleted {path}"


class ApprovingModel(BaseChatClient):
    """Calls ``delete_file`` for the last user text, then streams what the call's result
    was, a word at a time, and its usage (7 tokens in, 3 out): the dev UI's approval
    tests (spec/hosting.md HS-222, HS-223)."""

    def _step(self, messages: list[Message]) -> list[ChatResponseUpdate]:
        results = [
            c for m in messages for c in m.contents if c.type == "function_result"
        ]
        users = [m for m in messages if m.role == "user"]
        if len(results) < len(users):
            call = Content.from_function_call(
                f"del-{len(users)}", "delete_file", {"path": users[-1].text}
            )
            return [ChatResponseUpdate([call], "assistant")]
        words = f"result: {results[-1].result}".split(" ")
        usage = Content.from_usage({"input_token_count": 7, "output_token_count": 3})
        return [
            ChatResponseUpdate(
                [Content.from_text(w if i == 0 else " " + w)], "assistant"
            )
            for i, w in enumerate(words)
        ] + [ChatResponseUpdate([usage], "assistant")]

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        return ChatResponse.from_updates(self._step(messages))

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        for update in self._step(messages):
            yield update


@function_middleware
async def audit_calls(context: FunctionInvocationContext, call_next: Any) -> None:
    """A pass-through function middleware: the dev UI names it (HS-213, HS-222)."""
    await call_next()


class Timing(AgentMiddleware):
    """A pass-through agent middleware class: named by its class (HS-213)."""

    async def process(self, context: AgentContext, call_next: Any) -> None:
        await call_next()


def approving() -> Agent:
    return Agent(
        ApprovingModel(),
        name="approving",
        tools=[delete_file],
        middleware=[Timing(), audit_calls],
    )


class AskingModel(BaseChatClient):
    """Asks the user through the page's client tool ``ask_user`` (it has no tool of
    that name: the page declares it), keeps the answer in the thread's shared state with
    ``keep_colour``, then says what it kept: the dev UI's client tool and shared state
    tests (spec/hosting.md HS-234, HS-235)."""

    def _step(self, messages: list[Message]) -> list[ChatResponseUpdate]:
        last = messages[-1]
        results = [c for c in last.contents if c.type == "function_result"]
        if not results:
            turn = sum(1 for m in messages if m.role == "user")
            call = Content.from_function_call(
                f"ask-{turn}", "ask_user", {"question": "Which colour?"}
            )
            return [ChatResponseUpdate([call], "assistant")]
        result = results[-1]
        if str(result.call_id).startswith("ask-"):
            call = Content.from_function_call(
                f"keep-{result.call_id}", "keep_colour", {"colour": str(result.result)}
            )
            return [ChatResponseUpdate([call], "assistant")]
        text = Content.from_text(f"kept {result.result}")
        return [ChatResponseUpdate([text], "assistant")]

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        return ChatResponse.from_updates(self._step(messages))

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        for update in self._step(messages):
            yield update


@tool
def keep_colour(colour: str, context: FunctionInvocationContext) -> str:
    """Keep the colour in the thread's shared state (HS-92)."""
    assert context.session is not None
    state = context.session.state.get(STATE_KEY) or {}
    colours = [*state.get("colours", []), colour]
    context.session.state[STATE_KEY] = {"colours": colours, "last": {"colour": colour}}
    return colour


def asking() -> Agent:
    return Agent(AskingModel(), name="asking", tools=[keep_colour])


not_an_agent = 42


def needs_arguments(x: int) -> Agent:
    return Agent(EchoModel(), name=f"echo{x}")


# ---- a raw HTTP/1.1 client ---------------------------------------------------------------


async def exchange(
    port: int, data: bytes, *, read_all: bool = True
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """Send raw bytes, read the answer until the server closes (``read_all``) or one
    response head."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    if read_all:
        answer = await reader.read()
    else:
        answer = await reader.readuntil(b"\r\n\r\n")
    return reader, writer, answer


async def request_once(port: int, data: bytes) -> bytes:
    """One raw request on its own connection; everything the server sent until it
    closed."""
    _reader, writer, answer = await exchange(port, data)
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
    return answer


def status_of(answer: bytes) -> int:
    match = re.match(rb"HTTP/1\.1 (\d{3}) ", answer)
    assert match is not None, answer[:200]
    return int(match.group(1))


async def read_response(
    reader: asyncio.StreamReader,
) -> tuple[int, dict[str, str], bytes]:
    """One response off a kept-alive connection: status, headers, body (by length or
    chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(parts)
    else:
        body = b""
    return status, headers, body


# ---- the served process ------------------------------------------------------------------


class Served:
    """``python -m minagent serve ...`` in a process of its own."""

    def __init__(
        self, process: subprocess.Popen[str], banner: str, errors: IO[str]
    ) -> None:
        self.process = process
        self.banner = banner
        self.errors = errors
        match = re.search(r"http://[^/\s]+:(\d+)", banner)
        assert match is not None, banner
        self.port = int(match.group(1))
        self.base = f"http://127.0.0.1:{self.port}"

    def socket_count(self) -> int:
        """Sockets the served process holds open right now (listening one included)."""
        count = 0
        for entry in Path(f"/proc/{self.process.pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(entry).startswith("socket:"):
                    count += 1
        return count

    def stderr(self) -> str:
        self.errors.seek(0)
        return self.errors.read()

    def stop(self) -> tuple[int, str]:
        """SIGTERM; then the exit status and everything written to stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=60)
        return self.process.returncode, self.stderr()


def start_serve(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], IO[str]]:
    """The command in a new process; stderr goes to a temporary file (read it with
    `Served.stderr`), so a long access log never fills a pipe."""
    environment = {k: v for k, v in os.environ.items() if k != "MINAGENT_TOKEN"}
    environment["PYTHONPATH"] = str(cwd)
    environment.update(env or {})
    errors = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed by served_process)
    process = subprocess.Popen(
        [sys.executable, "-m", "minagent", "serve", *args],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    return process, errors


def wait_banner(process: subprocess.Popen[str], errors: IO[str]) -> str:
    """The lines the command prints once it listens (up to the token line)."""
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if "token" in line:
            return "".join(lines)
    process.communicate(timeout=60)
    errors.seek(0)
    raise AssertionError(f"serve exited {process.returncode}: {errors.read()}")


@contextlib.contextmanager
def served_process(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> Iterator[Served]:
    process, errors = start_serve("--port", "0", *args, cwd=cwd, env=env)
    try:
        yield Served(process, wait_banner(process, errors), errors)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=60)
        errors.close()
