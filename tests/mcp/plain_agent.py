"""``mcp-serve tests.mcp.plain_agent:agent``: an agent-like object with ``as_tool()``
and no async context (MCP-34 serves it without entering one)."""

from __future__ import annotations

from typing import Any

from .served_agent import make_agent


class PlainAgent:
    """Only what `MCPServer` needs: a name and ``as_tool()``."""

    name = "Plain"

    def as_tool(self) -> Any:
        return make_agent().as_tool(name="Plain")


agent = PlainAgent()
