"""minagent-mcp-http: MCP's Streamable HTTP transport for minagent, both ways (spec/mcp.md).

- `MCPStreamableHTTPTool(name, url, *, headers=None, ...)`: an MCP server reached over HTTP, given
  to an agent like `minagent.MCPStdioTool` (MCP-40, MCP-41);
- `make_app(server)` / `serve_http(server, host, port)`: an agent's ``as_mcp_server()`` served
  over HTTP with aiohttp (MCP-42).

`SSEDecoder` is the sans-I/O event-stream decoder both use; it does not import aiohttp.
"""

from ._client import MCPStreamableHTTPTool
from ._server import make_app, serve_http
from ._sse import SSEDecoder, SSEEvent

__all__ = ["MCPStreamableHTTPTool", "SSEDecoder", "SSEEvent", "make_app", "serve_http"]
