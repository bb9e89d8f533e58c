"""Serve ``served_agent`` over Streamable HTTP in a process of its own (the
hostile-client tests).

``python -m tests.mcp.http_served PORT MAX_SESSIONS SESSION_TIMEOUT READ_TIMEOUT``, run
from the repository root; serves until killed.
"""

from __future__ import annotations

import asyncio
import sys

from minagent_mcp_http import serve_http

from minagent.mcp.server import MCPServer
from tests.mcp.served_agent import make_agent

port, max_sessions, session_timeout, read_timeout = sys.argv[1:5]
asyncio.run(
    serve_http(
        MCPServer(make_agent()),
        "127.0.0.1",
        int(port),
        max_sessions=int(max_sessions),
        session_timeout=float(session_timeout),
        read_timeout=float(read_timeout),
    )
)
