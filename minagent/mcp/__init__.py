"""MCP: tools from MCP servers (stdio), and an agent served over MCP (spec/mcp.md).

Optional: loaded on first use of an MCP name (``minagent.MCPTool``,
``agent.as_mcp_server()``).

Rules
-----
1. ``__init__`` only re-exports: the session and its errors are in `jsonrpc.py`, the
   client in `client.py`, the stdio transport in `stdio.py`, the server in `server.py`.
2. Only `server.py` reaches another folder, and only `minagent.providers.registry` (to
   find the HTTP transport a plugin registers, MCP-35).
"""

from .client import MCPTool
from .jsonrpc import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    MCPConnectionError,
    MCPError,
    MCPProtocolError,
    MCPRequestError,
    MCPTimeoutError,
    MCPToolError,
)
from .server import MCPServer
from .stdio import MCPStdioTool

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "MCPConnectionError",
    "MCPError",
    "MCPProtocolError",
    "MCPRequestError",
    "MCPServer",
    "MCPStdioTool",
    "MCPTimeoutError",
    "MCPTool",
    "MCPToolError",
]
