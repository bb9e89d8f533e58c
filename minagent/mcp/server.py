"""An agent as an MCP server: `MCPServer`, built by ``agent.as_mcp_server()``
(spec/mcp.md).

Rules
-----
1. The server holds nothing per client; what one client's session knows lives in its
   `Connection` (MCP-31).
2. Every ``tools/call`` is an agent run, and a task of its session: the session's end or
   the client's ``notifications/cancelled`` cancels it (MCP-32).
3. Serving over HTTP is a plugin's: this module only finds it (MCP-35); stdio is served
   here (MCP-33, MCP-34).

Theory of operation
-------------------
`MCPServer` holds what every client sees — the agent's tool (its ``as_tool()``), the
server's name, version and instructions — and no per-client state. Each client gets a
`Connection`, which knows whether that client has initialized and answers its requests
(MCP-31):

    initialize  -> version chosen, capabilities, server info   (then the connection is
    ready) ping        -> {}                                          (answered by the
    session) tools/list  -> the one tool tools/call  -> the agent run, as a task of the
    session: notifications/cancelled cancels it

A transport feeds a `Session` whose request handler is the connection (``serve``): stdio
here, HTTP in the plugin, which drives `Connection.handle` per POST. When the session
ends (the client closed stdin), ``serve`` closes it, which cancels every running call
(MCP-32).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._validate import describe_issues
from .._version import __version__

if TYPE_CHECKING:
    from .http import StreamableHTTPEndpoint

from .jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_PROTOCOL_VERSION,
    MAX_MESSAGE_BYTES,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SUPPORTED_PROTOCOL_VERSIONS,
    MCPProtocolError,
    MCPRequestError,
    Session,
    decode_message,
    encode_message,
)

__all__ = ["Connection", "MCPServer", "serve_command"]

MAX_LINE_BYTES = MAX_MESSAGE_BYTES


class MCPServer:
    """An agent exposed as one MCP tool (MCP-30); serve it with ``run_stdio()`` or the
    HTTP plugin."""

    def __init__(
        self,
        agent: Any,
        *,
        server_name: str | None = None,
        version: str | None = None,
        instructions: str | None = None,
    ) -> None:
        if not callable(getattr(agent, "as_tool", None)):
            raise TypeError(
                f"MCPServer needs an agent with as_tool(), got {type(agent).__name__}"
            )
        self.agent = agent
        self.tool = agent.as_tool()
        self.name = server_name or getattr(agent, "name", None) or "minagent"
        self.version = version or __version__
        self.instructions = instructions

    def __repr__(self) -> str:
        return f"<MCPServer {self.name!r} tool={self.tool.name!r}>"

    def tool_declaration(self) -> dict[str, Any]:
        """The agent's tool as an MCP tool declaration."""
        return {
            "name": self.tool.name,
            "description": self.tool.description,
            "inputSchema": self.tool.parameters,
        }

    def connection(self) -> Connection:
        """State for one client."""
        return Connection(self)

    async def serve(self, transport: Any) -> None:
        """Serve one client over ``transport`` until it goes away (MCP-32)."""
        connection = self.connection()
        session = Session(transport, name=self.name, on_request=connection.handle)
        session.start()
        try:
            await session.wait_closed()
        finally:
            await session.aclose()
            await transport.aclose()

    def http_endpoint(self, **limits: Any) -> StreamableHTTPEndpoint:
        """This server as a Streamable HTTP endpoint any HTTP server can carry
        (MCP-42, HS-170): ``limits`` are `StreamableHTTPEndpoint`'s keywords
        (``allowed_origins``, ``max_sessions``, ``session_timeout``,
        ``read_timeout``)."""
        from .http import StreamableHTTPEndpoint

        return StreamableHTTPEndpoint(self, **limits)

    async def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        path: str = "/mcp",
        ready: Callable[[str], Any] | None = None,
    ) -> None:
        """Serve over Streamable HTTP until cancelled, with the transport that a plugin
        registers in the entry-point group ``minagent.mcp_servers`` as ``http``
        (``minagent-mcp-http``) (MCP-35). ``ready(url)`` is called once the server
        listens, with the URL it serves."""
        from ..providers.registry import (
            PluginNotFoundError,
            entry_points,
            install_command,
        )

        found = [
            ep for ep in entry_points(group="minagent.mcp_servers") if ep.name == "http"
        ]
        if not found:
            raise PluginNotFoundError(
                "serving MCP over HTTP needs the plugin plugins/mcp-http, from a checkout of minagent: "
                f"`{install_command('mcp-http')}` (stdio needs none: run_stdio())"
            )
        serve = found[0].load()
        await (
            serve(self, host, port, path=path, ready=ready)
            if ready
            else serve(self, host, port, path=path)
        )

    async def run_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout (MCP-33)."""
        sys.stdout.flush()
        protocol_fd = os.dup(1)
        saved_stdout = os.dup(1)
        # MCP-33: stray writes to stdout go to stderr; fd 1's old target is the
        # protocol's
        os.dup2(2, 1)
        try:
            transport = await _StdioServerTransport.open(os.dup(0), protocol_fd)
            await self.serve(transport)
        finally:
            sys.stdout.flush()
            os.dup2(saved_stdout, 1)
            os.close(saved_stdout)


class Connection:
    """One client of an `MCPServer`: the initialize state and the request handlers
    (MCP-31)."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.initialized = False
        self.protocol_version = LATEST_PROTOCOL_VERSION

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if not self.initialized:
            raise MCPRequestError(INVALID_REQUEST, f"{method} before initialize")
        if method == "tools/list":
            return {"tools": [self.server.tool_declaration()]}
        if method == "tools/call":
            return await self._call(params)
        raise MCPRequestError(METHOD_NOT_FOUND, f"method not found: {method}")

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        self.protocol_version = (
            asked if asked in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        )
        self.initialized = True
        result: dict[str, Any] = {
            "protocolVersion": self.protocol_version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": self.server.name, "version": self.server.version},
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        tool = self.server.tool
        if params.get("name") != tool.name:
            raise MCPRequestError(
                INVALID_PARAMS,
                f"unknown tool: {params.get('name')!r}; this server has {tool.name!r}",
            )
        arguments = params.get("arguments") or {}
        issues = tool.validate_arguments(arguments)
        if issues:
            return _error_result(
                f"Invalid arguments for {tool.name}:\n{describe_issues(issues)}"
            )
        try:
            text = await tool.invoke(arguments, skip_parsing=True)
        # the run failed: the client's model is told why (MCP-31)
        except Exception as exc:
            return _error_result(f"{type(exc).__name__}: {exc}")
        return {"content": [{"type": "text", "text": str(text)}], "isError": False}


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class _StdioServerTransport:
    """The server side of stdio: lines from a read pipe, lines to a write pipe (MCP-2,
    MCP-33)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        read_transport: asyncio.BaseTransport,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.reader = reader
        self.read_transport = read_transport
        self.writer = writer

    @classmethod
    async def open(cls, read_fd: int, write_fd: int) -> _StdioServerTransport:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        read_pipe = os.fdopen(read_fd, "rb", buffering=0)
        write_pipe = os.fdopen(write_fd, "wb", buffering=0)
        try:
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), read_pipe
            )
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, write_pipe
            )
        except (ValueError, OSError) as exc:
            read_pipe.close()
            write_pipe.close()
            raise MCPProtocolError(
                f"run_stdio needs stdin and stdout to be pipes or sockets: {exc}"
            ) from exc
        return cls(
            reader,
            read_transport,
            asyncio.StreamWriter(transport, protocol, None, loop),
        )

    async def send(self, message: dict[str, Any]) -> None:
        self.writer.write(encode_message(message))
        await self.writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self.reader.readline()
            except ValueError:
                await self._parse_error(f"message longer than {MAX_LINE_BYTES} bytes")
                continue
            if not line:
                return None
            if not line.strip():
                continue
            try:
                return decode_message(line)
            # JSON-RPC: answer a parse error, keep serving
            except MCPProtocolError as exc:
                await self._parse_error(str(exc))

    async def _parse_error(self, text: str) -> None:
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": PARSE_ERROR, "message": text},
            }
        )

    async def aclose(self) -> None:
        # the pipe transport writes what it holds, then closes the pipe
        self.writer.close()
        self.read_transport.close()
        await asyncio.sleep(0)


# ------------------------------------------------------------------------------------------------
# python -m minagent mcp-serve module:attribute


class ServeTargetError(Exception):
    """``mcp-serve`` was pointed at something that is not an agent (MCP-34)."""


async def load_agent(target: str) -> Any:
    """The agent named by ``module:attribute``: the object, or what a zero-argument
    factory returns."""
    import importlib
    import inspect

    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ServeTargetError(
            f"expected module:attribute (e.g. myapp.agents:assistant), got {target!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ServeTargetError(f"cannot import module {module_name!r}: {exc}") from exc
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ServeTargetError(
                f"module {module_name!r} has no attribute {attribute!r}"
            )
        obj = getattr(obj, part)
    if not callable(getattr(obj, "as_tool", None)) and callable(obj):
        try:
            inspect.signature(obj).bind()
        # a callable that needs arguments is no factory (MCP-34)
        except TypeError as exc:
            raise ServeTargetError(
                f"{target} is not an agent, and calling it with no arguments fails: {exc}"
            ) from None
        except ValueError:  # no signature to read (some builtins): call it and see
            pass
        try:
            obj = obj()
            if inspect.isawaitable(obj):
                obj = await obj
        except Exception as exc:
            raise ServeTargetError(
                f"{target}() raised {type(exc).__name__}: {exc}"
            ) from exc
    if not callable(getattr(obj, "as_tool", None)):
        raise ServeTargetError(
            f"{target} is {type(obj).__name__}, not an agent (or a factory returning one)"
        )
    return obj


async def serve_target(
    target: str, name: str | None = None, *, http: str | None = None
) -> None:
    """Load the agent, enter its context, serve it over stdio, or over HTTP at
    ``HOST:PORT`` (MCP-34)."""
    address = _address(http) if http is not None else None
    agent = await load_agent(target)
    server = MCPServer(agent, server_name=name)

    def listening(url: str) -> None:
        print(
            f"serving {server.name!r} over MCP Streamable HTTP at {url}",
            file=sys.stderr,
            flush=True,
        )

    serving = (
        server.run_stdio()
        if address is None
        else server.run_http(*address, ready=listening)
    )
    if hasattr(agent, "__aenter__") and hasattr(agent, "__aexit__"):
        async with agent:
            await serving
    else:
        await serving


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ServeTargetError(
            f"--http expects HOST:PORT (e.g. 127.0.0.1:8000), got {text!r}"
        )
    return host.strip("[]"), int(port)


def serve_command(
    target: str, name: str | None = None, *, http: str | None = None
) -> int:
    """The ``mcp-serve`` command: exit status 0, or 2 with a message on stderr
    (MCP-34)."""
    from ..providers.registry import PluginNotFoundError

    try:
        asyncio.run(serve_target(target, name, http=http))
    except (ServeTargetError, MCPProtocolError, PluginNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the address cannot be bound
        print(f"error: cannot serve at {http}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
