"""The agent turn `hosted_agui.py` serves over AG-UI (issue 41 item 4), framework-free so
that both served applications share it: the minagent one (`agui_minagent_app.py`) and
agent-framework's (`agui_af_app.py`).

One turn is one user message and two model calls. The fake model answers instantly, in
process: its first call (no tool result in the conversation yet) streams one call of the
``add`` tool with `ARGUMENTS`; its second call (the tool's result seen) streams `CHUNKS`
text chunks, `chunk(0)` .. `chunk(CHUNKS - 1)`, whose concatenation is `ANSWER`. Each
model call yields to the event loop once before it answers (standing in for the network,
as ``concurrent_100`` of ../shared/bench does), and never between chunks.

Standard library only: it is imported by the minagent side, the peer's side and the load
client alike.
"""

from __future__ import annotations

import json

__all__ = [
    "AGENT",
    "ANSWER",
    "ARGUMENTS",
    "ARGUMENTS_JSON",
    "CALL_ID",
    "CHUNKS",
    "RESULT",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "USER_TEXT",
    "add_numbers",
    "chunk",
]

# the served agent's name: the path is /agui/{AGENT} on both servers
AGENT = "bench"
USER_TEXT = "Please add 2 and 3, then tell me about it."
TOOL_NAME = "add"
TOOL_DESCRIPTION = "Add two integers."
CALL_ID = "call_add_1"
ARGUMENTS = {"a": 2, "b": 3}
# the arguments as a provider streams them: JSON text
ARGUMENTS_JSON = json.dumps(ARGUMENTS)
RESULT = 5
CHUNKS = 500


def add_numbers(a: int, b: int) -> int:
    """The body of the ``add`` tool of both frameworks."""
    return a + b


def chunk(index: int) -> str:
    """The ``index``-th text chunk of the answer: distinct, so a lost, repeated or
    reordered chunk changes the concatenation."""
    return f"w{index} "


ANSWER = "".join(chunk(i) for i in range(CHUNKS))
