"""A minimal stdio MCP server that misbehaves on purpose (fault injection for the stdio
transport).

``python faulty_server.py MODE``; every mode answers ``initialize``, ``tools/list`` (no
tools) and ``ping`` until its fault:

``blank``          writes blank lines before every answer (they must be skipped);
``huge``           answers ``initialize`` with one line longer than 32 MiB;
``close-stdout``   closes its stdout at ``initialize`` but keeps running until its stdin
ends; ``deaf``           after ``tools/list`` closes its stdin and sleeps (killed by the
client's close); ``stops-reading``  after ``tools/list`` stops reading its stdin, then
exits with status 4.
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = sys.argv[1]
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "faulty", "version": "1"},
}
RESULTS = {"initialize": INIT, "tools/list": {"tools": []}, "ping": {}}


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message["method"]
    if method == "initialize" and MODE == "huge":
        write(
            b'{"jsonrpc": "2.0", "id": 1, "result": "'
            + b"x" * (33 * 1024 * 1024)
            + b'"}\n'
        )
        continue
    if method == "initialize" and MODE == "close-stdout":
        os.close(1)
        continue
    if MODE == "blank":
        write(b"\n  \n")
    write(
        json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": RESULTS.get(method, {})}
        ).encode()
        + b"\n"
    )
    if method == "tools/list" and MODE == "deaf":
        os.close(0)
        time.sleep(60)
    if method == "tools/list" and MODE == "stops-reading":
        time.sleep(0.5)
        sys.exit(4)
