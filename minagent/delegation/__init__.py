"""An agent as a tool (spec/agent.md AG-8, AG-16).

Optional: loaded when ``agent.as_tool()`` is first called (the seam
``BaseAgent.as_tool``).

Rules
-----
1. Built on the core's public names only.
2. ``__init__`` only re-exports.
"""

from .tool import agent_tool, sanitize_tool_name

__all__ = ["agent_tool", "sanitize_tool_name"]
