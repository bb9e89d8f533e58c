"""MCP: tools from MCP servers (stdio), and an agent served over MCP (spec/mcp.md).

Optional: loaded on first use of an MCP name (``minagent.MCPTool``, ``agent.as_mcp_server()``).
"""

from .client import MCPStdioTool, MCPTool
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
