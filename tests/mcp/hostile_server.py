"""A stdio MCP server that attacks its client on purpose (spec/mcp.md, MCP-10, MCP-43 ..
MCP-46).

``python hostile_server.py MODE [ARG]``; every mode answers ``initialize``,
``tools/list`` and ``ping`` like a normal server, plus its attack:

``grandchild``   starts a child that inherits stdout and stderr and sleeps for an hour;
its pid
                 is written to the file ARG;
``daemon``       forks a daemon (a new session, out of the server's process group) that
keeps
                 stdout and stderr open and sleeps for an hour; its pid is written to
                 ARG;
``flood``        after ``initialize`` sends ARG ``ping`` requests as fast as it can and
never reads
                 an answer (it stops reading its stdin);
``endless``      ``tools/list`` always answers one tool and a fresh ``nextCursor``;
``deep``         answers ``initialize`` with a line nested 100,000 levels deep;
``js-schema``    offers a tool whose schema uses ECMAScript regular expressions and
``type: any``
                 (which Python's ``re`` and minagent's validator cannot apply) and
                 echoes its calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

MODE = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "hostile", "version": "1"},
}
TOOL = {"name": "echo", "inputSchema": {"type": "object"}}
JS_TOOL = {
    "name": "greet",
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^\\p{L}+$"},
            "extra": {"type": "any"},
        },
        "required": ["name"],
    },
}


def write(message: dict[str, object]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def start_grandchild() -> None:
    # inherits 1 and 2
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    with open(ARG, "w") as out:
        out.write(str(child.pid))


def start_daemon() -> None:
    if os.fork() == 0:  # the first child: a new session, then the daemon itself
        os.setsid()
        if os.fork() == 0:
            with open(ARG + ".tmp", "w") as out:
                out.write(str(os.getpid()))
            os.replace(ARG + ".tmp", ARG)
            # stdout and stderr stay open: the client's pipes never end
            time.sleep(3600)
        os._exit(0)
    os.wait()


if MODE == "grandchild":
    start_grandchild()
elif MODE == "daemon":
    start_daemon()

page = 0
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message["method"]
    if method == "tools/call" and MODE == "js-schema":
        arguments = message["params"].get("arguments", {})
        text = f"hello {arguments.get('name')}"
        write(
            {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": {"content": [{"type": "text", "text": text}]},
            }
        )
        continue
    if method == "tools/list":
        result: dict[str, object] = {
            "tools": [JS_TOOL if MODE == "js-schema" else TOOL]
        }
        if MODE == "endless":
            page += 1
            result = {
                "tools": [{**TOOL, "name": f"echo{page}"}],
                "nextCursor": f"page-{page}",
            }
        write({"jsonrpc": "2.0", "id": message["id"], "result": result})
        continue
    if method == "initialize" and MODE == "deep":
        sys.stdout.buffer.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        sys.stdout.buffer.flush()
        continue
    write(
        {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": INIT if method == "initialize" else {},
        }
    )
    if method == "initialize" and MODE == "flood":
        for n in range(int(ARG)):
            write({"jsonrpc": "2.0", "id": f"flood-{n}", "method": "ping"})
        time.sleep(3600)  # never reads an answer
