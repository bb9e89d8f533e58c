"""minagent-mcp-http: MCP's Streamable HTTP transport for minagent, both ways
(spec/mcp.md).

- `MCPStreamableHTTPTool(name, url, *, headers=None, ...)`: an MCP server reached over
  HTTP, given to an agent like `minagent.MCPStdioTool` (MCP-40, MCP-41);
- `make_app(server)` / `serve_http(server, host, port)`: an agent's ``as_mcp_server()``
  served over HTTP with aiohttp (MCP-42).

`SSEDecoder` is the sans-I/O event-stream decoder both use (`minagent.providers`); the
client sends through the chat providers' transport (`minagent_http`), the server is
aiohttp.web.
"""

from minagent.providers import SSEDecoder, SSEEvent

from ._client import MCPStreamableHTTPTool
from ._server import make_app, serve_http

__all__ = ["MCPStreamableHTTPTool", "SSEDecoder", "SSEEvent", "make_app", "serve_http"]
