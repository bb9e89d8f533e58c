"""AG-UI against the official TypeScript client (`@ag-ui/client` from npm, under node):
one thread driven by `HttpAgent` through a server tool, a client tool, an approval and
the shared state (spec/hosting.md HS-80 .. HS-93).

The client is installed once with ``npm install`` into a cache directory; the test is
skipped, with the reason, only when node or npm is missing or npm cannot reach its
registry.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from minagent import Agent, FunctionInvocationContext, tool
from minagent.hosting import HostingApp
from minagent.hosting.agui import STATE_KEY
from minagent.hosting.server import serve
from minagent.testing import ScriptedChatClient, call, reply, text_chunks

CLIENT_VERSION = "1.0.0"
CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    / "minagent-tests"
    / f"ag-ui-client-{CLIENT_VERSION}"
)

# The front end: one HttpAgent, four runs on one thread. It answers the client tool
# with a tool message and the approval with a resume entry, as an application does, and
# prints what it holds after each run.
SCRIPT = r"""
import { HttpAgent } from "@ag-ui/client";

const agent = new HttpAgent({
  url: process.argv[2],
  threadId: "node-thread",
  initialState: { items: [] },
});
const tools = [{
  name: "pick_color",
  description: "Ask the user for a color",
  parameters: { type: "object", properties: { hint: { type: "string" } } },
}];
const report = [];

async function run(runId, extra) {
  const events = [];
  let finished = null;
  await agent.runAgent({ runId, tools, ...extra }, {
    onEvent({ event }) {
      events.push(event.type);
      if (event.type === "RUN_FINISHED") finished = event;
    },
  });
  // a copy: the agent's own lists change with the next run
  report.push(JSON.parse(JSON.stringify({
    runId,
    events,
    outcome: finished && finished.outcome,
    messages: agent.messages,
    state: agent.state,
    pendingInterrupts: agent.pendingInterrupts,
  })));
  return finished;
}

agent.addMessage({
  id: "u1", role: "user", content: "remember milk, then pick a color",
});
const first = await run("r1", {});
for (const id of first.outcome.pendingToolCallIds ?? []) {
  agent.addMessage({
    id: "answer-" + id, role: "tool", toolCallId: id, content: "red",
  });
}
await run("r2", {});
agent.addMessage({ id: "u2", role: "user", content: "now delete /tmp/x" });
const third = await run("r3", {});
const resume = third.outcome.interrupts.map((i) => ({
  interruptId: i.id, status: "resolved", payload: { approved: true },
}));
await run("r4", { resume });
console.log(JSON.stringify(report));
"""


@tool
def remember(item: str, context: FunctionInvocationContext) -> str:
    """Add an item to the shared list."""
    assert context.session is not None
    context.session.state[STATE_KEY]["items"].append(item)
    return f"remembered {item}"


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


async def _sh(*argv: str, cwd: Path) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode(errors="replace")


async def _client_dir() -> Path:
    """The cached install of the client, made on first use."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node or npm is not installed")
    if (CACHE / "node_modules" / "@ag-ui" / "client" / "package.json").exists():
        return CACHE
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / "package.json").write_text('{"private": true, "type": "module"}\n')
    code, out = await _sh(
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        f"@ag-ui/client@{CLIENT_VERSION}",
        cwd=CACHE,
    )
    if code != 0:
        unreachable = any(
            word in out
            for word in (
                "ENOTFOUND",
                "EAI_AGAIN",
                "ECONNREFUSED",
                "ETIMEDOUT",
                "network",
            )
        )
        if unreachable:
            pytest.skip(f"npm cannot reach its registry: {out[-300:]}")
        raise AssertionError(f"npm install failed:\n{out}")
    return CACHE


async def test_the_typescript_client_drives_a_thread() -> None:
    """HS-80, HS-84, HS-86, HS-87, HS-88, HS-89, HS-90, HS-92: `HttpAgent` accepts
    every event stream (its own verifier rejects any sequence or shape the protocol
    forbids); a server tool's result, the client tool declared beside the agent's,
    handed back and answered, the approval interrupt resumed and the shared state all
    arrive as the client holds them."""
    directory = await _client_dir()
    client = ScriptedChatClient(
        [
            reply(call("remember", {"item": "milk"}, call_id="c1")),
            reply("Now a color.", call("pick_color", {"hint": "warm"}, call_id="c2")),
            text_chunks("Red ", "it is."),
            reply(call("delete_file", {"path": "/tmp/x"}, call_id="c3")),
            text_chunks("Deleted."),
        ]
    )
    app = HostingApp([Agent(client, name="helper", tools=[remember, delete_file])])
    script = directory / f"drive-{os.getpid()}.mjs"
    script.write_text(SCRIPT)
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        code, out = await _sh(
            "node", str(script), f"http://127.0.0.1:{port}/agui/helper", cwd=directory
        )
    finally:
        server.close()
        await server.wait_closed()
    assert code == 0, out
    runs: list[dict[str, Any]] = json.loads(out.strip().splitlines()[-1])
    first, second, third, fourth = runs

    # run 1: the server tool ran (its result is a tool message the client holds), the
    # state change arrived as a delta, the client tool is pending
    assert first["outcome"] == {"type": "success", "pendingToolCallIds": ["c2"]}
    assert "STATE_DELTA" in first["events"]
    assert first["state"] == {"items": ["milk"]}
    tool_messages = [m for m in first["messages"] if m["role"] == "tool"]
    assert [(m["toolCallId"], m["content"]) for m in tool_messages] == [
        ("c1", "remembered milk")
    ]
    calls = [
        c
        for m in first["messages"]
        if m["role"] == "assistant"
        for c in m.get("toolCalls", [])
    ]
    assert [(c["id"], c["function"]["name"]) for c in calls] == [
        ("c1", "remember"),
        ("c2", "pick_color"),
    ]
    assert json.loads(calls[1]["function"]["arguments"]) == {"hint": "warm"}

    # run 2: the client's tool message is the call's result for the model
    assert second["outcome"] == {"type": "success"}
    assert second["messages"][-1] == {
        **second["messages"][-1],
        "role": "assistant",
        "content": "Red it is.",
    }
    model_saw = client.requests[2].messages
    assert [m.role for m in model_saw] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert model_saw[-1].contents[0].result == "red"

    # run 3: the approval is an interrupt the client records as pending
    assert third["outcome"]["type"] == "interrupt"
    assert [i["toolCallId"] for i in third["pendingInterrupts"]] == ["c3"]

    # run 4: resumed, the approved call ran and the interrupt is cleared
    assert fourth["outcome"] == {"type": "success"}
    assert fourth["pendingInterrupts"] == []
    results = [
        m for m in fourth["messages"] if m["role"] == "tool" and m["toolCallId"] == "c3"
    ]
    assert [m["content"] for m in results] == ["deleted /tmp/x"]
    assert fourth["messages"][-1]["content"] == "Deleted."
    assert fourth["state"] == {"items": ["milk"]}
    for run in runs:
        assert run["events"][0] == "RUN_STARTED"
        assert run["events"][-1] == "RUN_FINISHED"
    declared = {getattr(t, "name", None) for t in client.requests[0].options["tools"]}
    assert declared == {"remember", "delete_file", "pick_color"}
    client.assert_consumed()
