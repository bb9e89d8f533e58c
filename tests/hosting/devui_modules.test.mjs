// The dev UI's sessions list, token and Mermaid export, their pure parts (spec/hosting.md
// HS-227, HS-229, HS-230), under node's own test runner: `node --test
// tests/hosting/devui_modules.test.mjs` (run by tests/hosting/test_devui.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import { withToken } from "../../minagent/hosting/ui/auth.js";
import {
  label,
  pyFixed,
  renderMermaid,
  traceEvents,
} from "../../minagent/hosting/ui/mermaid.js";
import {
  localThreads,
  rememberLocal,
  threadList,
} from "../../minagent/hosting/ui/sessions.js";
import { apply, initialState, stopped } from "../../minagent/hosting/ui/state.js";

class Storage {
  constructor() {
    this.data = new Map();
  }
  getItem(key) {
    return this.data.has(key) ? this.data.get(key) : null;
  }
  setItem(key, value) {
    this.data.set(key, String(value));
  }
}

test("HS-227: the browser's own list, newest first, titles kept, at most 50", () => {
  const storage = new Storage();
  rememberLocal(storage, "a", "t1", "first prompt");
  rememberLocal(storage, "a", "t2", "x".repeat(100));
  rememberLocal(storage, "a", "t1", "a later prompt");
  rememberLocal(storage, "b", "t9", "other agent");
  assert.deepEqual(localThreads(storage, "a"), [
    { id: "t1", title: "first prompt" },
    { id: "t2", title: "x".repeat(80) },
  ]);
  for (let i = 0; i < 60; i += 1) rememberLocal(storage, "c", `t${i}`, "p");
  const many = localThreads(storage, "c");
  assert.equal(many.length, 50);
  assert.equal(many[0].id, "t59");
  storage.setItem("minagent-ui:threads:d", "not json");
  assert.deepEqual(localThreads(storage, "d"), []);
});

test("HS-227: the store's list when it lists, else the browser's; a thread just sent first", () => {
  const local = [{ id: "mine", title: "local" }];
  const stored = {
    agent: "a",
    listed: true,
    threads: [
      { threadId: "s1", title: "one" },
      { threadId: "s2", title: "" },
    ],
  };
  assert.deepEqual(threadList(stored, local, null), [
    { id: "s1", title: "one" },
    { id: "s2", title: "" },
  ]);
  assert.deepEqual(threadList(stored, local, { id: "new", title: "hi" }).map((t) => t.id), [
    "new",
    "s1",
    "s2",
  ]);
  // already listed by the store: not twice
  assert.equal(threadList(stored, local, { id: "s2", title: "x" }).length, 2);
  assert.deepEqual(threadList({ listed: false, threads: [] }, local, null), local);
  assert.deepEqual(threadList(null, local, { id: "new", title: "hi" }), local);
});

test("HS-230: the token goes in the Authorization header, the caller's headers kept", () => {
  const headers = withToken({ accept: "application/json" }, "s3cret");
  assert.equal(headers.get("authorization"), "Bearer s3cret");
  assert.equal(headers.get("accept"), "application/json");
  assert.equal(withToken({ accept: "x" }, null).has("authorization"), false);
});

function fold(events) {
  const state = initialState();
  let now = 1000;
  for (const event of events) apply(state, event, (now += 250));
  return state;
}

const AGENT = { name: "WeatherBot", middleware: { agent: ["Guard"], chat: [], function: ["audit"] } };

const TOOL_RUN = [
  { type: "RUN_STARTED", threadId: "t", runId: "r1" },
  { type: "STEP_STARTED", stepName: "agent" },
  { type: "STEP_STARTED", stepName: "model call 1" },
  { type: "STEP_FINISHED", stepName: "model call 1" },
  { type: "STEP_STARTED", stepName: "tool get_weather (call (1))" },
  { type: "STEP_FINISHED", stepName: "tool get_weather (call (1))" },
  { type: "STEP_STARTED", stepName: "model call 2" },
  { type: "STEP_FINISHED", stepName: "model call 2" },
  { type: "STEP_FINISHED", stepName: "agent" },
  { type: "RUN_FINISHED", threadId: "t", runId: "r1", usage: [{ inputTokens: 12, outputTokens: 5 }] },
];

test("HS-229: the step events become the run trace's events, in order, t in seconds", () => {
  const [run] = fold(TOOL_RUN).runs;
  assert.deepEqual(traceEvents(run, AGENT), [
    { kind: "run_start", depth: 0, agent: "WeatherBot", t: 0 },
    {
      kind: "agent_in",
      stream: true,
      middleware: { agent: ["Guard"], function: ["audit"] },
      depth: 0,
      t: 0.25,
    },
    { kind: "model_call", number: 1, depth: 0, t: 0.5 },
    { kind: "model_end", depth: 0, t: 0.75 },
    { kind: "tool_start", tool: "get_weather", call_id: "call (1)", depth: 0, t: 1 },
    { kind: "tool_end", call_id: "call (1)", depth: 0, t: 1.25 },
    { kind: "model_call", number: 2, depth: 0, t: 1.5 },
    { kind: "model_end", depth: 0, t: 1.75 },
    { kind: "agent_out", result: "AgentResponse", depth: 0, t: 2 },
    { kind: "run_end", depth: 0, t: 2.25, input_tokens: 12, output_tokens: 5 },
  ]);
  const text = renderMermaid(traceEvents(run, AGENT));
  assert.match(text, /^sequenceDiagram\n {4}participant Caller as Caller\n/);
  assert.ok(text.includes("    Note over AM: agent middleware: Guard\n"));
  assert.ok(text.includes("    A->>CM: model call 1\n    CM-->>A: ChatResponse (250 ms)\n"));
  assert.ok(text.includes("    A->>FM: get_weather [call (1)]\n    FM-->>A: result (250 ms)\n"));
  assert.ok(text.endsWith("    AM-->>Caller: AgentResponse (12 in / 5 out tokens) (2.25 s)\n"));
});

test("HS-229: a failed run ends raising its message; a stopped one closes what is open", () => {
  const failed = fold([
    ...TOOL_RUN.slice(0, 3),
    { type: "RUN_ERROR", message: "model down; retry" },
  ]).runs[0];
  const events = traceEvents(failed, { name: "a", middleware: {} });
  assert.deepEqual(events.at(-1), {
    kind: "run_end",
    depth: 0,
    error: "model down; retry",
    t: 0.75,
  });
  assert.ok(renderMermaid(events).includes("AM-->>Caller: raised model down, retry (750 ms)"));
  const state = fold(TOOL_RUN.slice(0, 3));
  stopped(state, 2000);
  const stoppedEvents = traceEvents(state.runs[0], { name: "a", middleware: {} });
  assert.ok(!stoppedEvents.some((e) => e.kind === "run_end"));
  const text = renderMermaid(stoppedEvents);
  // every call arrow has its return
  assert.equal((text.match(/\w->>/g) || []).length, (text.match(/-->>/g) || []).length);
  assert.match(text, / {4}AM-->>Caller: ended \(\d+ ms\)\n$/);
});

test("HS-229: durations round like Python (an exact tie to the even digit)", () => {
  assert.equal(pyFixed(12.5, 0), "12");
  assert.equal(pyFixed(13.5, 0), "14");
  assert.equal(pyFixed(0.25, 1), "0.2");
  assert.equal(pyFixed(1.125, 2), "1.12");
  assert.equal(pyFixed(0.15, 1), "0.1");
  assert.equal(pyFixed(2.675, 2), "2.67");
  assert.equal(label(" a\u2003b\x1c c; #1 <x> 5% "), "a b c, No.1 ‹x› 5 pct");
  assert.equal(label("é".repeat(130)), "é".repeat(120));
  assert.equal(label(""), "-");
});
