"""``python -m minagent serve``: agents served over HTTP by the dev server, behind the
guard (spec/hosting.md HS-130 .. HS-136).

The command builds the hosting application from ``module:attribute`` targets (an agent,
or a zero-argument factory returning one, possibly async) or the offline demo agent,
wraps it in `minagent.hosting.guard.Guard`, and serves it with
`minagent.hosting.server` until SIGTERM or SIGINT. It binds loopback unless told
otherwise, and refuses a non-loopback address without a token unless ``--insecure``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import ipaddress
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .._clients import BaseChatClient
from .._responses import ChatResponse, ChatResponseUpdate
from .._types import Message

if TYPE_CHECKING:
    from ..hosting.server import Server

__all__ = ["add_serve_parser", "demo_agent", "serve_command"]

TOKEN_VARIABLE = "MINAGENT_TOKEN"

# What the application serves, printed at start (HS-132): (protocol, method, path).
# HS-132: one line per protocol endpoint; {agent} is each served agent's name
ENDPOINTS: list[tuple[str, str, str]] = [
    ("OpenAI Chat Completions", "POST", "/v1/chat/completions"),
    ("OpenAI Responses", "POST", "/v1/responses"),
    ("OpenAI models list", "GET", "/v1/models"),
    ("A2A agent card", "GET", "/a2a/{agent}/.well-known/agent-card.json"),
    ("A2A JSON-RPC", "POST", "/a2a/{agent}"),
    ("AG-UI", "POST", "/agui/{agent}"),
    ("MCP Streamable HTTP", "POST", "/mcp/{agent}"),
]


class ServeError(Exception):
    """A serve command that cannot be carried out (exit status 2)."""


def add_serve_parser(sub: Any) -> None:
    """The ``serve`` subcommand's options."""
    serve = sub.add_parser(
        "serve",
        help="serve agents over HTTP (OpenAI-compatible API) with the dev server",
    )
    serve.add_argument(
        "targets",
        nargs="*",
        metavar="MODULE:AGENT",
        help="module:attribute naming an agent or a zero-argument factory",
    )
    serve.add_argument(
        "--demo", action="store_true", help="serve the offline demo agent"
    )
    serve.add_argument(
        "--ui",
        action="store_true",
        help="serve the dev UI at / (on by default with --demo)",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument(
        "--token",
        default=None,
        help=f"bearer token clients must send (default: ${TOKEN_VARIABLE})",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback address without a token",
    )
    serve.add_argument(
        "--cors",
        nargs="+",
        default=[],
        metavar="ORIGIN",
        help="browser origins allowed to call the API (default: none)",
    )
    serve.add_argument(
        "--store",
        default=None,
        metavar="sqlite:PATH|redis://HOST:PORT/DB",
        help="keep conversations in a SQLite file or in Redis, to share them between "
        "processes (default: in memory)",
    )
    serve.add_argument(
        "--max-runs", type=int, default=16, help="concurrent runs at most (default 16)"
    )
    serve.add_argument(
        "--run-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="time limit of one run (default 300)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=100,
        help="open connections at most (default 100)",
    )


def serve_command(
    args: argparse.Namespace, out: TextIO, demo: Callable[[], Any] | None = None
) -> int:
    """Run the ``serve`` command: 0 after a clean shutdown, 2 for a usage error.
    ``demo`` builds the agent of ``--demo``."""
    import asyncio

    try:
        asyncio.run(_serve(args, out, demo))
    except ServeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def is_loopback(host: str) -> bool:
    """HS-131: only ``localhost`` and loopback IP addresses count as loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check(args: argparse.Namespace) -> str | None:
    """The token to require, after checking the options (HS-131)."""
    if not args.targets and not args.demo:
        raise ServeError("name at least one agent as module:attribute, or use --demo")
    token = args.token
    if token is None:
        token = os.environ.get(TOKEN_VARIABLE) or None
    if token is not None and (not token.strip() or token != token.strip()):
        raise ServeError("the token must be non-empty, without surrounding spaces")
    if not is_loopback(args.host) and token is None and not args.insecure:
        raise ServeError(
            f"refusing to serve on {args.host} without a token: set --token or "
            f"${TOKEN_VARIABLE}, or pass --insecure to serve it open"
        )
    if not 0 <= args.port <= 65535:
        raise ServeError(f"--port must be 0..65535, got {args.port}")
    for name in ("max_runs", "max_connections"):
        if getattr(args, name) < 1:
            option = "--" + name.replace("_", "-")
            raise ServeError(f"{option} must be at least 1, got {getattr(args, name)}")
    if not args.run_timeout > 0:
        raise ServeError(f"--run-timeout must be positive, got {args.run_timeout}")
    return str(token) if token is not None else None


def _store(spec: str | None) -> Any:
    """HS-134: the session store ``--store`` names, or None (in memory)."""
    if spec is None:
        return None
    scheme, sep, path = spec.partition(":")
    if scheme in ("redis", "rediss") and path.startswith("//"):
        # the Redis plugin, found by name: the core never imports a plugin
        try:
            redis = importlib.import_module("minagent_redis")
        except ImportError:
            from ..providers.registry import install_command

            raise ServeError(
                f"--store {scheme}://...: keeping conversations in Redis needs the "
                f"Redis plugin, from a checkout of minagent: "
                f"`{install_command('redis')}`"
            ) from None
        return redis.RedisSessionStore(url=spec)
    if scheme != "sqlite" or not sep or not path:
        raise ServeError(
            f"--store expects sqlite:PATH or redis://HOST:PORT/DB, got {spec!r}"
        )
    if not Path(path).parent.is_dir():
        raise ServeError(
            f"--store {spec}: the folder {str(Path(path).parent)!r} does not exist"
        )
    from ..stores.sqlite import SQLiteSessionStore

    return SQLiteSessionStore(path)


async def load_target(target: str) -> Any:
    """The agent named by ``module:attribute``: the object, or what a zero-argument
    factory returns (awaited when it is a coroutine)."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ServeError(
            f"expected module:attribute (e.g. myapp.agents:assistant), got {target!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ServeError(f"cannot import module {module_name!r}: {exc}") from None
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ServeError(f"module {module_name!r} has no attribute {attribute!r}")
        obj = getattr(obj, part)
    if not callable(getattr(obj, "run", None)) and callable(obj):
        try:
            obj = obj()
            if inspect.isawaitable(obj):
                obj = await obj
        except Exception as exc:
            raise ServeError(f"{target}() raised {type(exc).__name__}") from None
    if not callable(getattr(obj, "run", None)):
        raise ServeError(
            f"{target} is {type(obj).__name__}, not an agent (or a factory returning one)"
        )
    return obj


class _DemoModel(BaseChatClient):
    """The demo's scripted model, answering every conversation the same way."""

    def __init__(self, script: Callable[[list[Message], dict[str, Any]], Any]) -> None:
        super().__init__()
        self.script = script

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        step = self.script(messages, options)
        if isinstance(step, ChatResponse):
            return step
        return ChatResponse.from_updates(step)

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        step = self.script(messages, options)
        updates = step.as_updates() if isinstance(step, ChatResponse) else step
        for update in updates:
            yield update


def demo_agent(
    script: Callable[[list[Message], dict[str, Any]], Any], tools: Sequence[Any]
) -> Any:
    """HS-133: the offline demo agent, ``WeatherBot``: the ``demo`` command's scripted
    model and tools (given by the command line, which owns them), without its printing
    middleware."""
    from .._agents import Agent

    return Agent(
        _DemoModel(script),
        "You answer weather questions.",
        name="WeatherBot",
        tools=list(tools),
    )


def _urls(
    server: Server,
    host: str,
    names: Sequence[str],
    token: str | None,
    ui: bool = False,
) -> str:
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{server.port}"
    lines = [f"minagent serving {', '.join(names)} at {base}"]
    # HS-230: the dev UI's line comes first, when it is served
    endpoints = [("Dev UI", "GET", "/"), *ENDPOINTS] if ui else ENDPOINTS
    width = max(len(p) for p, _, _ in endpoints)
    for protocol, method, path in endpoints:
        lines.append(f"  {protocol:<{width}}  {method:<4} {base}{path}")
    lines.append("  bearer token required" if token else "  no token (loopback only)")
    return "\n".join(lines)


def page_origins(host: str, port: int) -> frozenset[str]:
    """HS-231: the origins the dev UI is loaded from: the bound address, and on
    loopback each loopback name of it."""
    shown = f"[{host}]" if ":" in host else host
    names = {shown}
    if is_loopback(host):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return frozenset(f"http://{name}:{port}" for name in names)


async def _serve(
    args: argparse.Namespace, out: TextIO, demo: Callable[[], Any] | None
) -> None:
    token = _check(args)
    store = _store(args.store)
    from ..hosting import HostingApp
    from ..hosting.devui import PUBLIC_PATHS
    from ..hosting.guard import Guard
    from ..hosting.server import ServerLimits, serve_until_signalled

    if store is not None:
        # HS-134: a store that cannot be reached or opened fails the command before
        # the server listens, not the first request
        try:
            await store.get("minagent-serve-check")
        except Exception as exc:
            raise ServeError(
                f"--store {args.store.split('@')[-1]}: cannot open the store "
                f"({type(exc).__name__})"
            ) from None
    # HS-230: --ui, on by default with --demo; with a token the page's files are
    # public and the page asks for the token before calling the API
    ui = bool(args.ui or args.demo)
    agents = [await load_target(t) for t in args.targets]
    if args.demo:
        if demo is None:
            raise ServeError("this command line has no demo agent")
        agents.append(demo())
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    # HS-127: the guard's access log is the one line per request; the application's
    # own request lines and the server's are kept for warnings and errors.
    logging.getLogger("minagent.hosting").setLevel(logging.WARNING)
    logging.getLogger("minagent.hosting.access").setLevel(logging.INFO)
    async with contextlib.AsyncExitStack() as stack:
        # a store with connections (Redis) closes them when the server stops
        if callable(getattr(store, "aclose", None)):
            stack.push_async_callback(store.aclose)
        for agent in agents:
            if hasattr(agent, "__aenter__") and hasattr(agent, "__aexit__"):
                await stack.enter_async_context(agent)
        try:
            app = HostingApp(agents, store=store, ui=ui)
            guarded = Guard(
                app,
                token=token,
                cors_origins=args.cors,
                max_runs=args.max_runs,
                run_timeout=args.run_timeout,
                public_paths=PUBLIC_PATHS if ui else (),
            )
        except ValueError as exc:
            raise ServeError(str(exc)) from None
        limits = ServerLimits(max_connections=args.max_connections)

        def ready(server: Server) -> None:
            if ui:
                # HS-231: the page's POSTs carry its own origin, allowed once the
                # port is known; every other origin is still refused (HS-122)
                guarded.cors_origins |= page_origins(args.host, server.port)
            print(
                _urls(server, args.host, list(app.agents), token, ui),
                file=out,
                flush=True,
            )

        try:
            await serve_until_signalled(
                guarded, args.host, args.port, limits, ready=ready
            )
        except OSError as exc:
            raise ServeError(
                f"cannot serve at {args.host}:{args.port}: {exc.strerror or exc}"
            ) from None
