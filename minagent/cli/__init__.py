"""The command line: ``python -m minagent [--version | about | demo | run PROMPT ...]``
(spec/package.md PK-3, spec/agent.md AG-10).

``demo`` runs offline: a small agent with two tools and one middleware per layer answers
a question with a built-in scripted model, and every step through the layers is printed
as it happens, followed by the streamed answer.

Rules
-----
1. The command line is a face: it builds agents from public names, runs them and prints;
   it decides nothing about a run.
2. Exit status 0 is success, 1 a provider's failure, 2 a usage error (a bad option, a
   base URL, a session file, a trace file or a serve target that cannot be used), 3 a
   run that stopped at a limit of the tool loop before the model answered, 130 Ctrl-C.
   Every failure is one ``error:`` line on stderr, never a traceback (AG-10, AG-15),
   and no message or help text cites a rule ID. What a path needs is checked before
   the model is called.
3. The MCP server, the run trace, the SQLite stores and the scripted model are imported
   only by the command that needs them, so a copy of the core with the conformance kit's
   folders (conformance/, testing/, cli/, providers/) runs ``conformance`` (PK-2).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .._agents import Agent
from .._loop import LIMIT_FALLBACK_TEXT
from .._middleware import AgentContext, ChatContext, FunctionInvocationContext
from .._responses import ChatResponse, ChatResponseUpdate
from .._sessions import AgentSession
from .._tools import tool
from .._types import Content, Message
from .._version import __version__
from ..providers.registry import get_client
from .serve import add_serve_parser

if TYPE_CHECKING:
    from ..stores.sqlite import SQLiteSessionStore

# The shell's status for a program ended by Ctrl-C (128 + SIGINT).
INTERRUPTED = 130

ABOUT = f"""minagent {__version__}: a dependency-free agent core.

Agent, chat and function middleware pipelines, a tool-calling loop, ResponseStream,
options merging, threads and context providers, in the Python standard library only.

commands:
  python -m minagent demo                    run an agent offline and show the flow through the layers
  python -m minagent run PROMPT --provider NAME --model MODEL [--base-url URL] [--api-key KEY]
                         [--system TEXT] [--session-db FILE --session ID]
                                             ask a real model (needs a provider plugin); with a
                                             session, continue the conversation kept in FILE
  python -m minagent mcp-serve MODULE:AGENT [--http HOST:PORT]
                                             serve an agent as an MCP server (stdio, or HTTP)
  python -m minagent serve MODULE:AGENT [...] [--demo] [--ui] [--host H] [--port P] [--token T]
                                             serve agents over HTTP (OpenAI-compatible API, dev UI)
  python -m minagent conformance --adapter MODULE:FACTORY [--rules MW-*,LP-*] [--json FILE]
                                             run the flow's rules against an implementation
  python -m minagent --version               print the version
"""


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    # AG-15: Ctrl-C (asyncio turns it into the cancellation of the running command,
    # then raises KeyboardInterrupt here) ends a command with one short line and the
    # shell's status for an interrupted program, never a traceback
    try:
        return _main(argv, out)
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return INTERRUPTED


def _main(argv: Sequence[str] | None, out: TextIO | None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="python -m minagent", description="minagent command line"
    )
    parser.add_argument(
        "--version", action="store_true", help="print the version and exit"
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("about", help="what minagent is")
    demo_command = sub.add_parser("demo", help="run the offline demo")
    _trace_options(demo_command)
    run = sub.add_parser("run", help="run a prompt against a provider plugin")
    run.add_argument("prompt", help="what to ask the model")
    run.add_argument(
        "--provider", required=True, help="plugin name, e.g. openai, anthropic, ollama"
    )
    run.add_argument(
        "--model", required=True, help="the provider's model name, e.g. gpt-4o-mini"
    )
    run.add_argument(
        "--base-url",
        default=None,
        help="the server's URL (default: the provider's, or its variable)",
    )
    run.add_argument(
        "--api-key", default=None, help="the API key (default: the provider's variable)"
    )
    run.add_argument(
        "--system",
        "--instructions",
        dest="instructions",
        default=None,
        help="system instructions",
    )
    run.add_argument(
        "--session-db",
        default=None,
        help="SQLite file that keeps conversations (needs --session)",
    )
    run.add_argument(
        "--session",
        default=None,
        help="the conversation to continue (needs --session-db)",
    )
    _trace_options(run)
    serve = sub.add_parser(
        "mcp-serve", help="serve an agent as an MCP server, over stdio or HTTP"
    )
    serve.add_argument(
        "target", help="module:attribute naming an agent or a zero-argument factory"
    )
    serve.add_argument(
        "--name", default=None, help="the MCP server's name (default: the agent's)"
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        default=None,
        help="serve Streamable HTTP at HOST:PORT/mcp",
    )
    add_serve_parser(sub)
    sub.add_parser(
        "conformance",
        add_help=False,
        help="the flow conformance kit (spec/conformance.md)",
    )
    given = list(sys.argv[1:] if argv is None else argv)
    # CF-4: the kit parses its own arguments; loaded only for this command
    if given[:1] == ["conformance"]:
        from ..conformance.flow_report import main as conformance

        return conformance(given[1:], out)
    args = parser.parse_args(given)
    if args.version:
        print(f"minagent {__version__}", file=out)
        return 0
    if args.command in ("demo", "run"):
        # AG-15: a trace file that cannot be written is found before the model is
        # called
        problem = _trace_problem(args)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    if args.command == "demo":
        late: list[str] = []
        with _run_trace(args, late) as middleware:  # OB-14
            asyncio.run(demo(out, middleware))
        return 2 if late else 0
    if args.command == "serve":
        from .serve import demo_agent
        from .serve import serve_command as http_serve

        return http_serve(
            args, out, lambda: demo_agent(scripted_model, [get_weather, to_fahrenheit])
        )
    if args.command == "mcp-serve":
        from ..mcp.server import serve_command  # MCP-34; loaded only for this command

        return serve_command(args.target, args.name, http=args.http)
    if args.command == "run":
        if (args.session is None) != (args.session_db is None):
            print("error: --session and --session-db go together", file=sys.stderr)
            return 2
        where = (args.session_db, args.session)
        connection = {
            k: v
            for k, v in (("base_url", args.base_url), ("api_key", args.api_key))
            if v is not None
        }
        late = []
        with _run_trace(args, late) as middleware:  # OB-14
            status = asyncio.run(
                run_prompt(
                    args.prompt,
                    args.provider,
                    args.model,
                    args.instructions,
                    out,
                    *where,
                    middleware,
                    **connection,
                )
            )
        return 2 if late and status == 0 else status
    print(ABOUT, file=out, end="")
    return 0


def _trace_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--trace",
        metavar="FILE",
        default=None,
        help="write a Mermaid diagram of the run",
    )
    command.add_argument(
        "--trace-json",
        metavar="FILE",
        default=None,
        help="write the run trace's raw events",
    )


def _trace_problem(args: argparse.Namespace) -> str | None:
    """The first --trace/--trace-json path that cannot be written, and why (AG-15)."""
    if args.trace is None and args.trace_json is None:
        return None
    # the kit's check, loaded only when a trace file is asked for
    from ..conformance.flow_report import output_problem

    for option, path in (("--trace", args.trace), ("--trace-json", args.trace_json)):
        if path is not None:
            problem = output_problem(path)
            if problem is not None:
                return f"{option} {path}: {problem}"
    return None


@contextlib.contextmanager
def _run_trace(args: argparse.Namespace, late: list[str]) -> Iterator[list[Any] | None]:
    """OB-14: record the command's runs when --trace or --trace-json asks; the files are
    written also when the run fails. A file that cannot be written then (a full disk)
    is one ``error:`` line, added to ``late`` (AG-15)."""
    if args.trace is None and args.trace_json is None:
        yield None
        return
    from ..tracing.runtrace import RunTrace  # loaded only when asked for

    trace = RunTrace()
    try:
        with trace.recording():
            yield list(trace.middleware)
    finally:
        files = (("--trace", args.trace), ("--trace-json", args.trace_json))
        for option, path in files:
            if path is None:
                continue
            text = (
                f"```mermaid\n{trace.to_mermaid()}```\n"
                if option == "--trace"
                else trace.to_json() + "\n"
            )
            try:
                Path(path).write_text(text, encoding="utf-8")
            except OSError as exc:
                problem = exc.strerror or type(exc).__name__
                late.append(option)
                print(
                    f"error: {option} {path}: it cannot be written ({problem})",
                    file=sys.stderr,
                )


async def run_prompt(
    prompt: str,
    provider: str,
    model: str,
    instructions: str | None,
    out: TextIO,
    session_db: str | None = None,
    session_id: str | None = None,
    middleware: Sequence[Any] | None = None,
    **connection: str,
) -> int:
    try:
        client = get_client(provider, model=model, **connection)
    # no plugin; a bad base URL or key (AG-15)
    except (LookupError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from ..providers.errors import ProviderError  # loaded on first use (import time)

    providers: list[Any] = []
    store: SQLiteSessionStore | None = None
    session: AgentSession | None = None
    # SE-18: the conversation lives in the file
    if session_db is not None and session_id is not None:
        from ..stores.sqlite import (
            SQLiteHistoryProvider,
            SQLiteLockedError,
            SQLiteSchemaError,
            SQLiteSessionStore,
        )

        try:
            providers.append(SQLiteHistoryProvider("history", path=session_db))
            store = SQLiteSessionStore(session_db)
            session = await store.get(session_id) or AgentSession(session_id=session_id)
        # AG-15: not minagent's SQLite database
        except (sqlite3.Error, OSError, SQLiteSchemaError, SQLiteLockedError) as exc:
            print(
                f"error: --session-db {session_db}: {_sqlite_problem(session_db, exc)}",
                file=sys.stderr,
            )
            return 2
    try:
        async with Agent(client, instructions, context_providers=providers) as agent:
            stream = agent.run(
                prompt, stream=True, session=session, middleware=middleware
            )
            async for update in stream:
                print(update.text, end="", file=out, flush=True)
            print(file=out)
            final = await stream.get_final_response()
        if store is not None and session is not None and session_id is not None:
            await store.set(session_id, session)
    # AG-10: a provider's failure is one line, not a traceback
    except ProviderError as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    # AG-15: no answer, a limit
    if final.messages and final.messages[-1].text == LIMIT_FALLBACK_TEXT:
        print(
            "error: the run stopped at a limit of the tool loop before the model answered",
            file=sys.stderr,
        )
        return 3
    return 0


def _sqlite_problem(path: str, exc: BaseException) -> str:
    """What is wrong with a --session-db file, in a user's words (AG-15)."""
    from ..stores.sqlite import SQLiteSchemaError

    folder = Path(path).parent
    if not folder.is_dir():
        return f"its folder {str(folder)!r} does not exist"
    if isinstance(
        exc, sqlite3.DatabaseError | SQLiteSchemaError
    ) and "not a database" in str(exc):
        return "the file is not a SQLite database"
    if isinstance(exc, SQLiteSchemaError):
        return str(exc).removeprefix(f"{path}: ")
    return (
        f"cannot be used as minagent's session database ({type(exc).__name__}: {exc})"
    )


# --------------------------------------------------------------------------------------------
# The demo.

WEATHER = {"paris": 18.0, "oslo": 4.0, "cairo": 31.0}


@tool
def get_weather(city: str) -> dict[str, Any]:
    """Current temperature of a city.

    Args:
        city: The city name.
    """
    return {"city": city, "celsius": WEATHER.get(city.lower(), 20.0)}


@tool
async def to_fahrenheit(celsius: float) -> float:
    """Convert degrees Celsius to Fahrenheit."""
    return round(celsius * 9 / 5 + 32, 1)


def scripted_model(messages: list[Message], options: dict[str, Any]) -> Any:
    """The demo's model: weather first, then the conversion, then the answer in
    chunks."""
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if not results:
        city = "Paris"
        return ChatResponse(
            [
                Message(
                    "assistant",
                    [
                        Content.from_function_call(
                            "c1", "get_weather", json.dumps({"city": city})
                        )
                    ],
                )
            ]
        )
    if len(results) == 1:
        celsius = results[0].result["celsius"]
        return ChatResponse(
            [
                Message(
                    "assistant",
                    [
                        Content.from_function_call(
                            "c2", "to_fahrenheit", json.dumps({"celsius": celsius})
                        )
                    ],
                )
            ]
        )
    weather, fahrenheit = results[0].result, results[1].result
    answer = f"In {weather['city']} it is {weather['celsius']:g} °C, which is {fahrenheit:g} °F."
    words = answer.split(" ")
    return [
        ChatResponseUpdate(
            [Content.from_text(word if i == 0 else " " + word)], "assistant"
        )
        for i, word in enumerate(words)
    ]


async def demo(out: TextIO, middleware: Sequence[Any] | None = None) -> None:
    from ..testing import ScriptedChatClient

    def say(depth: int, text: str) -> None:
        print(f"{'  ' * depth}{text}", file=out, flush=True)

    calls = 0

    async def agent_layer(context: AgentContext, call_next: Any) -> None:
        say(
            0,
            f"agent middleware  > run starts with {len(context.messages)} message(s), stream={context.stream}",
        )
        await call_next()
        say(
            0,
            "agent middleware  < the run's stream is ready (updates follow as they are produced)",
        )

    async def chat_layer(context: ChatContext, call_next: Any) -> None:
        nonlocal calls
        calls += 1
        say(
            1,
            f"chat middleware   > model call {calls} with {len(context.messages)} message(s)",
        )
        await call_next()
        say(1, f"chat middleware   < model call {calls} answered")

    async def function_layer(
        context: FunctionInvocationContext, call_next: Any
    ) -> None:
        say(
            2,
            f"function middleware > {context.function.name}({json.dumps(context.arguments)})",
        )
        await call_next()
        say(
            2,
            f"function middleware < {context.function.name} returned {json.dumps(context.result)}",
        )

    client = ScriptedChatClient([scripted_model] * 3)
    agent = Agent(
        client,
        "You answer weather questions.",
        name="WeatherBot",
        tools=[get_weather, to_fahrenheit],
        middleware=[agent_layer, chat_layer, function_layer],
    )
    question = "What is the weather in Paris, in Fahrenheit?"
    print(f"user: {question}\n", file=out)
    stream = agent.run(question, stream=True, middleware=middleware)
    answering = False
    async for update in stream:
        for content in update.contents:
            if content.type == "function_call" and content.name:
                say(2, f"model asks for {content.name}({content.arguments})")
            elif content.type == "function_result":
                say(
                    2,
                    f"tool result for {content.call_id}: {json.dumps(content.result)}",
                )
        if update.text:
            if not answering:
                print(f"\n{agent.name}: ", end="", file=out)
                answering = True
            print(update.text, end="", file=out, flush=True)
    final = await stream.get_final_response()
    print(
        f"\n\n({len(final.messages)} messages in the response, {calls} model calls)",
        file=out,
    )
