"""MCP servers run as subprocesses: `MCPStdioTool` and its transport (spec/mcp.md,
MCP-2, MCP-9, MCP-10).

Rules
-----
1. Everything about the subprocess lives here: starting it, framing messages as lines on
   its stdin/stdout (MCP-2), forwarding its stderr to `logging` (MCP-9), and stopping it
   (MCP-10).
2. Nothing here speaks MCP: the protocol is `MCPTool`'s (`client.py`) and the session's
   (`jsonrpc.py`).
3. The process is always reaped, whatever stops it, cancellation included; it runs in a
   process group of its own, and closing ends the group too (MCP-43).
4. Closing never waits for a pipe without a bound: a process outside the group (a
   daemon) that holds the server's stdout or stderr does not keep the client waiting
   (MCP-43).

Theory of operation
-------------------
``MCPStdioTool._open_transport`` starts the process and wraps it in a `_StdioTransport`,
which the `Session` reads and writes. One task forwards the server's stderr, line by
line, for as long as the process runs. Closing follows the specification's order: close
stdin, wait; terminate, wait; kill — the signals go to the server's process group, which
it leads (``start_new_session``). Once the server has exited, whatever it left in its
group is ended the same way (SIGTERM, then SIGKILL), and its stderr gets a bounded wait
for its end; a pipe still held by a process outside the group (a daemon) is then closed
on our side, so the process is reaped and nothing of ours waits on it. Exit is read from
the child watcher's return code, not from ``process.wait()``, which (Python 3.11) also
waits for every pipe to close. Closing is shielded, so a cancelled close still finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .client import MCPTool, ProgressCallback
from .jsonrpc import (
    MAX_MESSAGE_BYTES,
    MCPConnectionError,
    MCPProtocolError,
    Transport,
    decode_message,
    encode_message,
)

__all__ = ["MCPStdioTool"]

logger = logging.getLogger("minagent.mcp")

MAX_LINE_BYTES = MAX_MESSAGE_BYTES
STDERR_TAIL = 10  # lines of a server's stderr kept for the error that says it exited
# seconds for the rest of stderr once nothing of the server's group holds the pipe
_DRAIN = 0.2
_POLL = 0.01


class _StdioTransport:
    """Newline-delimited JSON-RPC over a subprocess's stdin/stdout (MCP-2, MCP-9,
    MCP-10)."""

    def __init__(
        self, process: asyncio.subprocess.Process, name: str, shutdown_timeout: float
    ) -> None:
        self.process = process
        self.name = name
        self.shutdown_timeout = shutdown_timeout
        self._write_lock = asyncio.Lock()
        # its last lines, for MCP-9's error
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._stderr = asyncio.create_task(
            self._forward_stderr(), name=f"mcp-stderr:{name}"
        )

    async def send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise MCPConnectionError(
                f"MCP server {self.name!r} is not running", server=self.name
            )
        async with self._write_lock:
            try:
                stdin.write(encode_message(message))
                await stdin.drain()
            except (ConnectionError, BrokenPipeError) as exc:
                raise MCPConnectionError(
                    f"MCP server {self.name!r} stopped reading: {exc}", server=self.name
                ) from None

    async def receive(self) -> dict[str, Any] | None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            try:
                line = await stdout.readline()
            except ValueError:  # LimitOverrunError surfaces as ValueError from readline
                raise MCPProtocolError(
                    f"MCP server {self.name!r} sent a message longer than {MAX_LINE_BYTES} bytes",
                    server=self.name,
                ) from None
            if not line:
                code = await self._exit_code()
                detail = f" (exit code {code})" if code is not None else ""
                # what it said last, before it went (MCP-9)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._stderr), 1.0)
                if self.stderr_tail:
                    detail += "; its last lines on stderr:\n" + "\n".join(
                        f"  {line}" for line in self.stderr_tail
                    )
                raise MCPConnectionError(
                    f"MCP server {self.name!r} exited{detail}", server=self.name
                )
            if line.strip():
                return decode_message(line, server=self.name)

    async def _exit_code(self) -> int | None:
        await self._exited(1.0)
        return self.process.returncode

    async def _exited(self, seconds: float) -> bool:
        """Whether the server has exited within ``seconds``: its return code, never its
        pipes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while self.process.returncode is None:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(_POLL)
        return True

    async def _forward_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        with contextlib.suppress(ValueError, ConnectionError):
            while line := await stderr.readline():
                text = line.decode("utf-8", "replace").rstrip()
                self.stderr_tail.append(text[:500])
                logger.info("MCP %s stderr: %s", self.name, text)

    async def aclose(self) -> None:
        """Close stdin, wait; terminate, wait; kill; always reap (MCP-10). Survives
        cancellation."""
        await asyncio.shield(self._shutdown())

    async def _shutdown(self) -> None:
        process = self.process
        try:
            if process.stdin is not None and not process.stdin.is_closing():
                process.stdin.close()
            if not await self._exited(self.shutdown_timeout):
                self._signal(signal.SIGTERM)
                if not await self._exited(self.shutdown_timeout):
                    self._signal(signal.SIGKILL)
                    await self._exited(self.shutdown_timeout)
            await self._end_group()
        finally:
            if not self._stderr.done():
                self._stderr.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr
            # asyncio offers no public way to close them
            pipes = getattr(process, "_transport", None)
            if pipes is not None:
                # after the exit: closes our ends only (it kills a process still
                # running)
                pipes.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.shutdown_timeout):
                    await process.wait()  # the pipes are closed: this reaps

    def _signal(self, sig: signal.Signals) -> bool:
        """Send ``sig`` to the server's process group (MCP-43); False when nobody is
        left in it."""
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, sig)
            else:  # pragma: no cover - no process groups (Windows): the process alone
                self.process.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    async def _end_group(self) -> None:
        """MCP-43: after the server exited, what it left in its group is ended; stderr
        then gets a bounded wait for its end (a daemon outside the group may hold it for
        ever)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not self._signal(sig):
                break
            await asyncio.wait({self._stderr}, timeout=self.shutdown_timeout)
            if self._stderr.done():
                return
        await asyncio.wait({self._stderr}, timeout=_DRAIN)


class MCPStdioTool(MCPTool):
    """An MCP server run as a subprocess, spoken to over its stdin/stdout (MCP-2)."""

    def __init__(
        self,
        name: str,
        command: str,
        *,
        args: Sequence[str] | None = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        tool_name_prefix: str | None = None,
        allowed_tools: Collection[str] | None = None,
        request_timeout: float | None = 60.0,
        load_prompts: bool = False,
        description: str | None = None,
        approval_mode: Any = "never_require",
        progress_callback: ProgressCallback | None = None,
        shutdown_timeout: float = 2.0,
        load_tools: bool = True,
        encoding: str | None = None,
        additional_properties: Mapping[str, Any] | None = None,
        **unsupported: Any,
    ) -> None:
        if (
            encoding is not None
            and encoding.replace("-", "").replace("_", "").lower() != "utf8"
        ):
            raise ValueError(
                f"encoding={encoding!r}: MCP messages are UTF-8 by the specification; leave encoding out"
            )
        super().__init__(
            name,
            description=description,
            tool_name_prefix=tool_name_prefix,
            allowed_tools=allowed_tools,
            request_timeout=request_timeout,
            load_prompts=load_prompts,
            approval_mode=approval_mode,
            progress_callback=progress_callback,
            load_tools=load_tools,
            additional_properties=additional_properties,
            **unsupported,
        )
        if isinstance(args, str):
            raise TypeError("args must be a sequence of strings, not one string")
        self.command = command
        self.args = list(args or ())
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.shutdown_timeout = shutdown_timeout

    @property
    def pid(self) -> int | None:
        """The server process's id while connected (for diagnostics)."""
        transport = self._transport
        return transport.process.pid if isinstance(transport, _StdioTransport) else None

    async def _open_transport(self) -> Transport:
        env = {**os.environ, **self.env} if self.env is not None else None
        try:
            process = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=self.cwd,
                limit=MAX_LINE_BYTES,
                # its own process group, ended when it closes (MCP-43)
                start_new_session=True,
            )
        except OSError as exc:
            raise MCPConnectionError(
                f"MCP server {self.name!r} could not be started: {exc}",
                server=self.name,
            ) from exc
        return _StdioTransport(process, self.name, self.shutdown_timeout)
