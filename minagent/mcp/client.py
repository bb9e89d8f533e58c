"""MCP servers as tools: `MCPTool`, whatever the transport (spec/mcp.md).

Rules
-----
1. Everything a client does over a `Session` lives here: the handshake, the tool and
   prompt lists, calls, notifications, and mapping results to what the loop sees (MCP-3
   .. MCP-8, MCP-11 .. MCP-15, MCP-20).
2. This module does not know how bytes move: a subclass opens a `Transport`
   (``_open_transport``), and nothing else about the transport is visible here.
3. A failed ``connect()`` leaves nothing running; ``close()`` leaves nothing running
   either.

Theory of operation
-------------------
An `MCPTool` stands for one MCP server. It is an async context manager and a *tool set*:
it is given to an agent like a tool, and once connected its ``functions`` — one
`FunctionTool` per server tool — are what the model sees and the loop calls (MCP-20).

    closed --connect()--> connected --close()--> closed        (connect again is
    allowed)

``connect()`` opens the transport (the subclass's ``_open_transport``), starts a
`Session`, sends ``initialize`` with our protocol version, checks the server's answer
(MCP-3), sends ``notifications/initialized`` and loads ``tools/list`` page by page
(MCP-4). A failure on the way closes whatever was opened, so a failed connect leaves
nothing running. ``notifications/tools/list_changed`` starts one background reload;
``functions`` always returns the last complete list (MCP-5). A call sends ``tools/call``
and maps the result (MCP-11, MCP-12); cancelling the caller sends
``notifications/cancelled`` (MCP-7).

Transports are elsewhere: `stdio.py` here, streamable HTTP in the ``minagent-mcp-http``
plugin.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import inspect
import json
import logging
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

from .._tools import SKIP_PARSING, FunctionTool
from .._types import Content
from .._version import __version__
from .jsonrpc import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    MCPConnectionError,
    MCPError,
    MCPProtocolError,
    MCPToolError,
    Session,
    Transport,
)

__all__ = ["MCPTool", "ProgressCallback"]

logger = logging.getLogger("minagent.mcp")

ProgressCallback = Callable[[float, float | None, str | None], Any]
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
MAX_LIST_PAGES = 100  # pages of one tools/list or prompts/list (MCP-4)


# MCP's syslog levels (RFC 5424) as logging levels (MCP-9).
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class MCPTool:
    """One MCP server as a set of tools; subclasses provide ``_open_transport``
    (MCP-1)."""

    def __init__(
        self,
        name: str,
        *,
        description: str | None = None,
        tool_name_prefix: str | None = None,
        allowed_tools: Collection[str] | None = None,
        request_timeout: float | None = 60.0,
        load_prompts: bool = False,
        approval_mode: Any = "never_require",
        progress_callback: ProgressCallback | None = None,
        load_tools: bool = True,
        additional_properties: Mapping[str, Any] | None = None,
        **unsupported: Any,
    ) -> None:
        _reject_unsupported(unsupported)  # MCP-14
        if not isinstance(name, str) or not name:
            raise ValueError(f"an MCP tool needs a non-empty name, got {name!r}")
        if isinstance(allowed_tools, str):
            raise TypeError(
                "allowed_tools must be a collection of tool names, not one string"
            )
        if request_timeout is not None and request_timeout <= 0:
            raise ValueError(
                f"request_timeout must be positive or None, got {request_timeout!r}"
            )
        self.name = name
        self.description = description or ""
        self.tool_name_prefix = tool_name_prefix or ""
        self.allowed_tools = (
            frozenset(allowed_tools) if allowed_tools is not None else None
        )
        self.request_timeout = request_timeout
        self.load_prompts = load_prompts
        self.approval_mode: Any = _check_approval_mode(approval_mode)
        self.load_tools_on_connect = load_tools
        self.additional_properties = dict(additional_properties or {})
        self.progress_callback = progress_callback
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self.protocol_version: str | None = None
        self._session: Session | None = None
        self._transport: Transport | None = None
        self._functions: list[FunctionTool] = []
        self._reload: asyncio.Task[None] | None = None
        self._progress = 0
        self._users = 0
        self._callbacks: set[asyncio.Future[Any]] = set()

    def __repr__(self) -> str:
        state = "connected" if self.is_connected else "not connected"
        return f"<{type(self).__name__} {self.name!r} ({state})>"

    # -- what a transport provides --------------------------------------------------------------

    async def _open_transport(self) -> Transport:
        raise NotImplementedError(
            f"{type(self).__name__} must implement _open_transport"
        )

    # -- life cycle -----------------------------------------------------------------------------

    @property
    def is_connected(self) -> bool:
        return self._session is not None and self._session.failure is None

    async def __aenter__(self) -> MCPTool:
        await self.connect()
        self._users += 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """The last context to exit closes: a tool shared by two agents outlives the
        first (MCP-20)."""
        self._users = max(self._users - 1, 0)
        if self._users == 0:
            await self.close()

    async def connect(self) -> None:
        """Start the transport, initialize, load the tools (MCP-3, MCP-4); no-op when
        connected.

        A connection whose server has gone is closed and started again (MCP-8)."""
        if self._session is not None:
            if self._session.failure is None:
                return
            await self._disconnect()
        try:
            self._transport = await self._open_transport()
            self._session = Session(
                self._transport, name=self.name, on_notification=self._notified
            )
            self._session.start()
            await self._initialize()
            if self.load_tools_on_connect or self.load_prompts:
                await self.load_tools()
        except BaseException:
            await self._disconnect()
            raise

    async def close(self) -> None:
        """Stop the reload task, the session and the transport; idempotent (MCP-10)."""
        self._users = 0
        await self._disconnect()

    async def _disconnect(self) -> None:
        reload, self._reload = self._reload, None
        background = [
            t for t in (reload, *self._callbacks) if t is not None and not t.done()
        ]
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        session, self._session = self._session, None
        transport, self._transport = self._transport, None
        try:
            if session is not None:
                await session.aclose()
        finally:
            if transport is not None:
                await transport.aclose()

    async def _initialize(self) -> None:
        session = self._require_session()
        params = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "minagent", "version": __version__},
        }
        result = await session.request(
            "initialize", params, timeout=self.request_timeout, cancellable=False
        )
        if not isinstance(result, dict):
            raise MCPProtocolError(
                f"MCP server {self.name!r}: initialize result is not an object",
                server=self.name,
            )
        version = result.get("protocolVersion")
        if version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise MCPProtocolError(
                f"MCP server {self.name!r} speaks protocol version {version!r}; minagent supports "
                f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}",
                server=self.name,
            )
        self.protocol_version = version
        self.server_capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo") or {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._initialized(version)
        await session.notify("notifications/initialized")

    def _initialized(self, protocol_version: str) -> None:
        """Hook for transports that need the negotiated version (HTTP sends it as a
        header)."""

    def _require_session(self) -> Session:
        if self._session is None:
            raise MCPConnectionError(
                f"MCP server {self.name!r} is not connected: use `async with` or give it to an agent",
                server=self.name,
            )
        return self._session

    # -- tools ----------------------------------------------------------------------------------

    @property
    def functions(self) -> list[FunctionTool]:
        """The server's tools as `FunctionTool`s, as of the last complete ``tools/list``
        (MCP-4, MCP-5)."""
        self._require_session()
        return list(self._functions)

    async def _list(self, method: str, key: str) -> list[dict[str, Any]]:
        """Every page of a paginated list (MCP-4): follow ``nextCursor`` until it is
        absent, at most `MAX_LIST_PAGES` pages."""
        session = self._require_session()
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            result = await session.request(
                method,
                {"cursor": cursor} if cursor else {},
                timeout=self.request_timeout,
            )
            page = result.get(key) if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise MCPProtocolError(
                    f"MCP server {self.name!r}: {method} result has no {key!r} list",
                    server=self.name,
                )
            items.extend(item for item in page if isinstance(item, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                return items
            if not isinstance(cursor, str):
                raise MCPProtocolError(
                    f"MCP server {self.name!r}: {method} nextCursor is not a string",
                    server=self.name,
                )
            if cursor in seen:
                raise MCPProtocolError(
                    f"MCP server {self.name!r}: {method} repeats cursor {str(cursor)[:100]!r}",
                    server=self.name,
                )
            if len(seen) + 1 >= MAX_LIST_PAGES:
                raise MCPProtocolError(
                    f"MCP server {self.name!r}: {method} has more than {MAX_LIST_PAGES} pages (each with a new "
                    "nextCursor); minagent stops there",
                    server=self.name,
                )
            seen.add(cursor)

    async def load_tools(self) -> list[FunctionTool]:
        """Load (or reload) the server's tools; returns the new ``functions``."""
        found: list[FunctionTool] = []
        specs = (
            await self._list("tools/list", "tools")
            if self.load_tools_on_connect
            else []
        )
        for spec in specs:
            name = spec.get("name")
            if not isinstance(name, str) or (
                self.allowed_tools is not None and name not in self.allowed_tools
            ):
                continue  # MCP-6
            found.append(self._make_function(name, spec))
        if self.load_prompts and "prompts" in self.server_capabilities:
            for spec in await self._list("prompts/list", "prompts"):
                name = spec.get("name")
                if isinstance(name, str) and (
                    self.allowed_tools is None or name in self.allowed_tools
                ):
                    found.append(self._make_prompt_function(name, spec))
        self._functions = found
        return list(found)

    def _public_name(self, name: str) -> str:
        public = f"{self.tool_name_prefix}{name}"
        if not _NAME.fullmatch(public):
            raise MCPProtocolError(
                f"MCP server {self.name!r} has a tool named {name!r}, which is not a valid tool name "
                "(1-128 of letters, digits, '_', '.', '-'); leave it out with allowed_tools",
                server=self.name,
            )
        return public

    def _make_function(self, name: str, spec: Mapping[str, Any]) -> FunctionTool:
        schema = spec.get("inputSchema")
        if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
            raise MCPProtocolError(
                f"MCP server {self.name!r}: tool {name!r} has no inputSchema of type 'object'",
                server=self.name,
            )

        async def call(**arguments: Any) -> Any:
            return await self.call_tool(name, arguments)

        description = spec.get("description")
        return FunctionTool(
            name=self._public_name(name),
            description=description if isinstance(description, str) else "",
            func=call,
            parameters=schema,
            approval_mode=self._approval(name),
            # TL-14: invoke returns the server's result as it is
            result_parser=SKIP_PARSING,
        )

    def _make_prompt_function(self, name: str, spec: Mapping[str, Any]) -> FunctionTool:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for argument in spec.get("arguments") or []:
            if isinstance(argument, Mapping) and isinstance(argument.get("name"), str):
                properties[argument["name"]] = {
                    "type": "string",
                    "description": str(argument.get("description", "")),
                }
                if argument.get("required"):
                    required.append(argument["name"])

        async def get(**arguments: Any) -> Any:
            return await self.get_prompt(name, arguments)

        description = spec.get("description")
        return FunctionTool(
            name=self._public_name(name),
            description=description if isinstance(description, str) else "",
            func=get,
            parameters={
                "type": "object",
                "properties": properties,
                "required": required,
            },
            approval_mode=self._approval(name),
            result_parser=SKIP_PARSING,
        )

    def _approval(self, name: str) -> Literal["never_require", "always_require"]:
        """The approval mode of one server tool (MCP-15)."""
        mode = self.approval_mode
        if isinstance(mode, Mapping):
            return (
                "always_require"
                if name in mode.get("always_require_approval", ())
                else "never_require"
            )
        return "always_require" if mode == "always_require" else "never_require"

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/tools/list_changed":  # MCP-5
            if self._reload is None or self._reload.done():
                self._reload = asyncio.create_task(
                    self._reload_tools(), name=f"mcp-reload:{self.name}"
                )
        elif method == "notifications/progress":
            self._on_progress(params)
        elif method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            logger.log(level, "MCP %s: %s", self.name, params.get("data"))

    async def _reload_tools(self) -> None:
        try:
            await self.load_tools()
        except MCPError as exc:
            logger.warning("MCP %s: reloading the tool list failed: %s", self.name, exc)

    def _on_progress(self, params: dict[str, Any]) -> None:
        callback = self.progress_callback
        if callback is None:
            return
        progress, total = params.get("progress"), params.get("total")
        if not isinstance(progress, int | float):
            return
        outcome = callback(
            float(progress),
            float(total) if isinstance(total, int | float) else None,
            params.get("message"),
        )
        if inspect.isawaitable(outcome):
            task = asyncio.ensure_future(outcome)
            # awaited or cancelled by close(): nothing outlives the tool
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)

    # -- calls ----------------------------------------------------------------------------------

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> Any:
        """Call a server tool by its server-side name; the result as the loop should see
        it (MCP-11)."""
        session = self._require_session()
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if self.progress_callback is not None:
            self._progress += 1
            params["_meta"] = {"progressToken": f"{self.name}-{self._progress}"}
        result = await session.request(
            "tools/call", params, timeout=self.request_timeout
        )
        return self._tool_result(name, result)

    def _tool_result(self, name: str, result: Any) -> Any:
        if not isinstance(result, dict):
            raise MCPProtocolError(
                f"MCP server {self.name!r}: tools/call result is not an object",
                server=self.name,
            )
        blocks = result.get("content") or []
        if not isinstance(blocks, list):
            raise MCPProtocolError(
                f"MCP server {self.name!r}: tools/call content is not a list",
                server=self.name,
            )
        contents = [self._content(block) for block in blocks]
        if result.get("isError"):  # MCP-12
            text = (
                "\n".join(c.text for c in contents if c.type == "text" and c.text)
                or "the tool reported an error"
            )
            raise MCPToolError(text, server=self.name)
        structured = result.get("structuredContent")
        if isinstance(structured, dict) and all(c.type == "text" for c in contents):
            return dict(structured)  # MCP-11: the text blocks only repeat it as JSON
        if isinstance(structured, dict):
            contents.append(
                Content.from_text(json.dumps(structured, ensure_ascii=False))
            )
        if len(contents) == 1 and contents[0].type == "text":
            return contents[0].text
        return contents

    def _content(self, block: Any) -> Content:
        """One MCP content block as a `Content` (MCP-11)."""
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            return Content.from_text(block["text"])
        if kind in ("image", "audio") and isinstance(block.get("data"), str):
            return self._data(
                block["data"], str(block.get("mimeType") or "application/octet-stream")
            )
        if kind == "resource_link" and isinstance(block.get("uri"), str):
            extra = {
                k: block[k] for k in ("name", "title", "description") if k in block
            }
            return Content.from_uri(
                block["uri"], block.get("mimeType"), additional_properties=extra
            )
        if kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            extra = {"uri": resource.get("uri")}
            if isinstance(resource.get("text"), str):
                return Content.from_text(resource["text"], additional_properties=extra)
            if isinstance(resource.get("blob"), str):
                content = self._data(
                    resource["blob"],
                    str(resource.get("mimeType") or "application/octet-stream"),
                )
                content.additional_properties.update(extra)
                return content
        raise MCPProtocolError(
            f"MCP server {self.name!r} returned a content block minagent cannot read: {str(block)[:120]!r}",
            server=self.name,
        )

    def _data(self, data: str, media_type: str) -> Content:
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise MCPProtocolError(
                f"MCP server {self.name!r} sent {media_type} data that is not base64",
                server=self.name,
            ) from None
        return Content.from_uri(f"data:{media_type};base64,{data}", media_type)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> str:
        """``prompts/get``: the prompt's messages as ``role: text`` lines
        (``load_prompts=True``)."""
        session = self._require_session()
        result = await session.request(
            "prompts/get",
            {"name": name, "arguments": dict(arguments or {})},
            timeout=self.request_timeout,
        )
        lines = []
        for message in result.get("messages", []) if isinstance(result, dict) else []:
            content = self._content(message.get("content"))
            lines.append(
                f"{message.get('role')}: {content.text if content.type == 'text' else content.uri}"
            )
        return "\n".join(lines)

    async def ping(self) -> None:
        """Ask the server for a sign of life; raises `MCPTimeoutError` when it gives
        none."""
        await self._require_session().request("ping", timeout=self.request_timeout)


# Upstream keywords minagent does not take, and what to do instead (MCP-14).
_UNSUPPORTED = {
    "session": "minagent's MCP tools own their connection; an MCP SDK ClientSession cannot be passed in",
    "parse_tool_results": "minagent maps tool results itself; post-process them in function middleware instead",
    "parse_prompt_results": "minagent maps prompt results itself; post-process them in function middleware instead",
    "client": "sampling is not supported (spec/mcp.md, 'Not covered'); remove the argument",
    "chat_client": "sampling is not supported (spec/mcp.md, 'Not covered'); remove the argument",
    "sampling_approval_callback": "sampling is not supported (spec/mcp.md, 'Not covered'); remove the argument",
    "sampling_max_tokens": "sampling is not supported (spec/mcp.md, 'Not covered'); remove the argument",
    "sampling_max_requests": "sampling is not supported (spec/mcp.md, 'Not covered'); remove the argument",
    "additional_tool_argument_names": "not supported; pass values to tools through function middleware",
}


def _check_approval_mode(mode: Any) -> Any:
    """None, "never_require", "always_require", or upstream's per-tool mapping
    (MCP-15)."""
    if mode is None:
        return "never_require"
    if mode in ("never_require", "always_require"):
        return mode
    if isinstance(mode, Mapping) and set(mode) <= {
        "always_require_approval",
        "never_require_approval",
    }:
        lists = {key: value for key, value in mode.items() if value is not None}
        if all(
            not isinstance(v, str) and isinstance(v, Collection) for v in lists.values()
        ):
            return {key: frozenset(value) for key, value in lists.items()}
    raise ValueError(
        "approval_mode must be 'never_require', 'always_require', None, or a mapping with "
        f"'always_require_approval' and/or 'never_require_approval' lists of tool names, got {mode!r}"
    )


def _reject_unsupported(unsupported: Mapping[str, Any]) -> None:
    for key in unsupported:
        hint = _UNSUPPORTED.get(key, "it is not a parameter of minagent's MCP tools")
        raise TypeError(f"MCP tool argument {key}=...: {hint}")
