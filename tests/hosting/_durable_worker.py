"""One worker serving a durable agent through `HostingApp`, in a process of its own
(spec/hosting.md HS-190 .. HS-195).

    python -m tests.hosting._durable_worker

The environment says where: ``DBOS_URL`` (the DBOS system database, shared by every
worker), ``STORE`` (the SQLite session store, shared too), ``COUNTS`` (a file the
``refund`` tool appends one line to each time it runs, naming the worker),
``EXECUTOR`` (this worker's DBOS executor id). The worker prints ``{"port": N}`` once
it serves on loopback, and serves until its standard input closes (or it is killed).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS
from minagent_dbos import DurableAgent

from minagent import Agent, Message, tool
from minagent.hosting import HostingApp
from minagent.hosting.server import serve
from minagent.stores import SQLiteSessionStore
from minagent.testing import ScriptedChatClient, call

APP = "minagent-served"


@tool(approval_mode="always_require")
def refund(order: str, amount: int) -> str:
    """Refund an order (a human approves first)."""
    with Path(os.environ["COUNTS"]).open("a") as counts:
        counts.write(f"refund {order} {os.environ['EXECUTOR']}\n")
    return f"refunded {amount} on {order}"


def model(messages: list[Message], options: Any) -> Any:
    """Answers from the conversation, so a replay takes the same path."""
    results = [
        c.result for m in messages for c in m.contents if c.type == "function_result"
    ]
    if results:
        return f"Result: {results[-1]}"
    return [call("refund", {"order": "A-17", "amount": 30})]


def configure() -> HostingApp:
    DBOS(
        config={
            "name": APP,
            "system_database_url": os.environ["DBOS_URL"],
            "log_level": "ERROR",
            "executor_id": os.environ["EXECUTOR"],
        }
    )
    agent = Agent(
        ScriptedChatClient([model] * 10),
        "You handle refunds.",
        tools=[refund],
        name="cashier",
        description="Refunds orders.",
    )
    durable = DurableAgent(agent, name="cashier", return_at_pause=True)
    store = SQLiteSessionStore(os.environ["STORE"])
    # DurableAgent is not a SupportsAgentRun to mypy (no id, no threads)
    return HostingApp([durable], store=store)  # type: ignore[list-item]


async def main() -> None:
    app = configure()
    DBOS.launch()  # also takes up this executor's runs a killed process left
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(json.dumps({"port": port}), flush=True)
    loop = asyncio.get_running_loop()
    try:
        await loop.run_in_executor(None, sys.stdin.read)
    finally:
        server.close()
        await server.wait_closed()
        DBOS.destroy()


if __name__ == "__main__":
    asyncio.run(main())
