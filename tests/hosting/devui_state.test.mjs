// The dev UI's view state (spec/hosting.md HS-220, HS-222 .. HS-225), under node's own
// test runner: `node --test tests/hosting/devui_state.test.mjs` (run by
// tests/hosting/test_devui.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  addUserMessage,
  apply,
  applyPatch,
  decide,
  duration,
  fromHistory,
  initialState,
  layerOf,
  parseSSE,
  prettyJSON,
  stopped,
} from "../../minagent/hosting/ui/state.js";

function fold(events, state = initialState()) {
  let now = 0;
  for (const event of events) apply(state, event, (now += 10));
  return state;
}

const WEATHER_RUN = [
  { type: "RUN_STARTED", threadId: "t", runId: "r1" },
  { type: "STEP_STARTED", stepName: "agent" },
  { type: "STEP_STARTED", stepName: "model call 1" },
  { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "get_weather", parentMessageId: "m1" },
  { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: '{"city": ' },
  { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: '"Paris"}' },
  { type: "TOOL_CALL_END", toolCallId: "c1" },
  { type: "STEP_FINISHED", stepName: "model call 1" },
  { type: "STEP_STARTED", stepName: "tool get_weather (c1)" },
  { type: "STEP_FINISHED", stepName: "tool get_weather (c1)" },
  { type: "TOOL_CALL_RESULT", messageId: "m2", toolCallId: "c1", content: '{"celsius": 18}', role: "tool" },
  { type: "STEP_STARTED", stepName: "model call 2" },
  { type: "TEXT_MESSAGE_START", messageId: "m3", role: "assistant" },
  { type: "TEXT_MESSAGE_CONTENT", messageId: "m3", delta: "It is" },
  { type: "TEXT_MESSAGE_CONTENT", messageId: "m3", delta: " 18 °C." },
  { type: "TEXT_MESSAGE_END", messageId: "m3" },
  { type: "STEP_FINISHED", stepName: "model call 2" },
  { type: "STEP_FINISHED", stepName: "agent" },
  {
    type: "RUN_FINISHED",
    threadId: "t",
    runId: "r1",
    outcome: { type: "success" },
    usage: [{ inputTokens: 5, outputTokens: 7, totalTokens: 12 }],
  },
];

test("HS-220: a run's events become a timeline of tool cards and text", () => {
  const state = fold(WEATHER_RUN);
  assert.equal(state.status, "idle");
  assert.deepEqual(
    state.items.map((i) => [i.kind, i.id]),
    [
      ["tool", "c1"],
      ["message", "m3"],
    ],
  );
  const [card, text] = state.items;
  assert.equal(card.name, "get_weather");
  assert.equal(card.args, '{"city": "Paris"}');
  assert.equal(card.result, '{"celsius": 18}');
  assert.equal(card.status, "done");
  assert.equal(text.text, "It is 18 °C.");
  assert.equal(text.role, "assistant");
});

test("HS-220, HS-222: steps keep their layer and times; the run its usage", () => {
  const state = fold(WEATHER_RUN);
  const [run] = state.runs;
  assert.deepEqual(
    run.steps.map((s) => [s.name, s.layer]),
    [
      ["agent", "agent"],
      ["model call 1", "chat"],
      ["tool get_weather (c1)", "function"],
      ["model call 2", "chat"],
    ],
  );
  for (const step of run.steps) assert.ok(step.ended > step.started, step.name);
  assert.equal(run.steps[0].started, 20);
  assert.equal(run.steps[0].ended, 180);
  assert.deepEqual(run.usage, { inputTokens: 5, outputTokens: 7, totalTokens: 12 });
  assert.deepEqual(run.outcome, { type: "success" });
  assert.equal(run.started, 10);
  assert.equal(run.ended, 190);
  assert.equal(layerOf("something else"), "other");
});

test("HS-220: text streamed in any split arrives whole and in order", () => {
  const words = ["a", " b", " c", "", " d"];
  for (let cut = 0; cut <= words.length; cut++) {
    const events = [
      { type: "RUN_STARTED", threadId: "t", runId: "r" },
      { type: "TEXT_MESSAGE_START", messageId: "m", role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: words.slice(0, cut).join("") },
      ...words.slice(cut).map((w) => ({ type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: w })),
      { type: "TEXT_MESSAGE_END", messageId: "m" },
    ];
    assert.equal(fold(events).items[0].text, "a b c d");
  }
});

test("HS-220: a text message after a call in the same model call is a new item", () => {
  const state = fold([
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "TEXT_MESSAGE_START", messageId: "m", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "first" },
    { type: "TEXT_MESSAGE_END", messageId: "m" },
    { type: "TOOL_CALL_START", toolCallId: "c", toolCallName: "x", parentMessageId: "m" },
    { type: "TOOL_CALL_END", toolCallId: "c" },
    { type: "TEXT_MESSAGE_START", messageId: "m", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "second" },
    { type: "TEXT_MESSAGE_END", messageId: "m" },
  ]);
  assert.deepEqual(
    state.items.map((i) => i.text ?? i.kind),
    ["first", "tool", "second"],
  );
});

test("HS-220, HS-223: an interrupt marks its call; answers become resume entries", () => {
  const state = fold([
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "TOOL_CALL_START", toolCallId: "a", toolCallName: "delete_file", parentMessageId: "m" },
    { type: "TOOL_CALL_START", toolCallId: "b", toolCallName: "delete_file", parentMessageId: "m" },
    {
      type: "RUN_FINISHED",
      threadId: "t",
      runId: "r",
      outcome: {
        type: "interrupt",
        interrupts: [
          { id: "i1", reason: "tool_approval", toolCallId: "a", message: "Approve a?" },
          { id: "i2", reason: "tool_approval", toolCallId: "b", message: "Approve b?" },
        ],
      },
    },
  ]);
  assert.deepEqual(state.items.map((i) => i.status), ["awaiting approval", "awaiting approval"]);
  assert.equal(decide(state, "nope", true), null);
  assert.equal(decide(state, "i1", true), null);
  assert.equal(state.items[0].status, "approved");
  const resume = decide(state, "i2", false);
  assert.deepEqual(resume, [
    { interruptId: "i1", status: "resolved", payload: { approved: true } },
    { interruptId: "i2", status: "resolved", payload: { approved: false } },
  ]);
  assert.deepEqual(state.interrupts, []);
  assert.equal(state.items[1].status, "rejected");
  apply(state, { type: "RUN_STARTED", threadId: "t", runId: "r2" }, 100);
  apply(state, { type: "TOOL_CALL_RESULT", messageId: "x", toolCallId: "b", content: "Error: rejected" }, 101);
  apply(state, { type: "TOOL_CALL_RESULT", messageId: "y", toolCallId: "a", content: "deleted" }, 102);
  assert.deepEqual(state.items.map((i) => [i.status, i.result]), [
    ["done", "deleted"],
    ["rejected", "Error: rejected"],
  ]);
});

test("HS-220: client tool calls left pending are marked pending", () => {
  const state = fold([
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "TOOL_CALL_START", toolCallId: "c", toolCallName: "ask", parentMessageId: "m" },
    { type: "TOOL_CALL_END", toolCallId: "c" },
    { type: "RUN_FINISHED", threadId: "t", runId: "r", outcome: { type: "success", pendingToolCallIds: ["c"] } },
  ]);
  assert.equal(state.items[0].status, "pending");
  assert.equal(state.runs[0].usage, null);
});

test("HS-220, HS-225: RUN_ERROR ends the run, closes its steps and keeps the message", () => {
  const state = fold([
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "STEP_STARTED", stepName: "agent" },
    { type: "RUN_ERROR", message: "the run failed", code: "run_failed" },
  ]);
  assert.equal(state.status, "error");
  assert.equal(state.error, "the run failed");
  assert.ok(state.runs[0].steps[0].ended !== null);
  assert.deepEqual(state.runs[0].outcome, { type: "error", message: "the run failed" });
  // a refusal before any run (HS-81's body) is shown the same way
  const refused = apply(initialState(), { type: "RUN_ERROR", message: "no agent named 'x'" }, 1);
  assert.equal(refused.error, "no agent named 'x'");
  // the next run clears the error
  apply(state, { type: "RUN_STARTED", threadId: "t", runId: "r2" }, 50);
  assert.equal(state.error, null);
  assert.equal(state.status, "running");
});

test("HS-221: stop ends the run and its running calls", () => {
  const state = fold([
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "STEP_STARTED", stepName: "agent" },
    { type: "TOOL_CALL_START", toolCallId: "c", toolCallName: "slow", parentMessageId: "m" },
  ]);
  addUserMessage(state, "u", "hello");
  stopped(state, 99);
  assert.equal(state.status, "stopped");
  assert.deepEqual(state.runs[0].outcome, { type: "stopped" });
  assert.equal(state.runs[0].ended, 99);
  assert.equal(state.runs[0].steps[0].ended, 99);
  assert.equal(state.items[0].status, "stopped");
  assert.deepEqual(state.items[1], { kind: "message", id: "u", role: "user", text: "hello" });
});

test("HS-220: state snapshots and RFC 6902 deltas", () => {
  const state = fold([
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "STATE_SNAPSHOT", snapshot: { a: 1, nested: { b: 2 } } },
    {
      type: "STATE_DELTA",
      delta: [
        { op: "replace", path: "/a", value: 3 },
        { op: "add", path: "/nested/c~1d", value: [1] },
        { op: "remove", path: "/nested/b" },
      ],
    },
  ]);
  assert.deepEqual(state.shared, { a: 3, nested: { "c/d": [1] } });
  const before = { x: { y: 1 } };
  const after = applyPatch(before, [{ op: "add", path: "/x/z", value: 2 }]);
  assert.deepEqual(before, { x: { y: 1 } }, "the patched document is a copy");
  assert.deepEqual(after, { x: { y: 1, z: 2 } });
  assert.equal(applyPatch({ a: 1 }, [{ op: "replace", path: "", value: 5 }]), 5);
});

test("HS-224: a stored thread becomes the timeline, open approvals included", () => {
  const state = fromHistory({
    messages: [
      { id: "u1", role: "user", content: "hi" },
      {
        id: "a1",
        role: "assistant",
        content: "",
        toolCalls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: "{}" } }],
      },
      { id: "t1", role: "tool", toolCallId: "c1", content: "18" },
      { id: "a2", role: "assistant", content: "It is 18." },
      {
        id: "a3",
        role: "assistant",
        content: "",
        toolCalls: [{ id: "d1", type: "function", function: { name: "delete_file", arguments: '{"path": "x"}' } }],
      },
      { id: "t2", role: "tool", toolCallId: "zz", content: "a result of no call" },
    ],
    interrupts: [{ id: "i1", toolCallId: "d1", name: "delete_file", arguments: '{"path": "x"}' }],
  });
  assert.deepEqual(
    state.items.map((i) => [i.kind, i.id, i.status ?? i.text]),
    [
      ["message", "u1", "hi"],
      ["tool", "c1", "done"],
      ["message", "a2", "It is 18."],
      ["tool", "d1", "awaiting approval"],
    ],
  );
  assert.equal(state.items[1].result, "18");
  assert.deepEqual(state.interrupts, [
    { id: "i1", toolCallId: "d1", message: 'Approve the call of delete_file with {"path": "x"}?' },
  ]);
  assert.deepEqual(fromHistory({}).items, []);
});

test("HS-225: server-sent events parse across any chunk boundary", () => {
  const events = [
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "a\nb: ü" },
    { type: "RUN_FINISHED", threadId: "t", runId: "r" },
  ];
  const wire = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("");
  for (let cut = 0; cut <= wire.length; cut++) {
    for (let cut2 = cut; cut2 <= wire.length; cut2 += 7) {
      const seen = [];
      let buffer = "";
      for (const chunk of [wire.slice(0, cut), wire.slice(cut, cut2), wire.slice(cut2)]) {
        const parsed = parseSSE(buffer + chunk);
        buffer = parsed.rest;
        seen.push(...parsed.events);
      }
      assert.deepEqual(seen, events);
      assert.equal(buffer, "");
    }
  }
  assert.deepEqual(parseSSE("data: {\"a\": 1}\r\n\r\n: comment\n\n").events, [{ a: 1 }]);
});

test("HS-222: durations and JSON text for the page", () => {
  assert.equal(duration(0, 12.4), "12 ms");
  assert.equal(duration(0, 2500), "2.50 s");
  assert.equal(duration(5, null), "…");
  assert.equal(prettyJSON('{"a":1}'), '{\n  "a": 1\n}');
  assert.equal(prettyJSON("not json"), "not json");
  assert.equal(prettyJSON(null), "");
});

// -- the page's client tools (HS-234) --

import {
  CLIENT_TOOLS,
  answerCall,
  declaredTools,
  pendingFromHistory,
  questionOf,
} from "../../minagent/hosting/ui/clienttools.js";

const ASKING_RUN = [
  { type: "RUN_STARTED", threadId: "t", runId: "r1" },
  { type: "TOOL_CALL_START", toolCallId: "q1", toolCallName: "ask_user", parentMessageId: "m1" },
  { type: "TOOL_CALL_ARGS", toolCallId: "q1", delta: '{"question": "Which colour?"}' },
  { type: "TOOL_CALL_END", toolCallId: "q1" },
  { type: "TOOL_CALL_START", toolCallId: "q2", toolCallName: "ask_user", parentMessageId: "m1" },
  { type: "TOOL_CALL_ARGS", toolCallId: "q2", delta: '{"question": "Which size?"}' },
  { type: "TOOL_CALL_END", toolCallId: "q2" },
  {
    type: "RUN_FINISHED",
    threadId: "t",
    runId: "r1",
    outcome: { type: "success", pendingToolCallIds: ["q1", "q2"] },
  },
];

function ids() {
  let n = 0;
  return (prefix) => `${prefix}-${++n}`;
}

test("HS-234: every run declares the page's tools, less the agent's own names", () => {
  assert.deepEqual(
    CLIENT_TOOLS.map((t) => t.name),
    ["ask_user"],
  );
  const ask = CLIENT_TOOLS[0];
  assert.equal(typeof ask.description, "string");
  assert.equal(ask.parameters.type, "object");
  assert.deepEqual(declaredTools({ name: "a", tools: [] }), CLIENT_TOOLS);
  assert.deepEqual(declaredTools(undefined), CLIENT_TOOLS);
  assert.deepEqual(
    declaredTools({ name: "a", tools: [{ name: "ask_user" }, { name: "other" }] }),
    [],
  );
});

test("HS-234: the next run waits for an answer to every pending call, in call order", () => {
  const state = fold(ASKING_RUN);
  assert.deepEqual(
    state.items.map((i) => i.status),
    ["pending", "pending"],
  );
  assert.equal(questionOf(state.items[0]), "Which colour?");
  const newId = ids();
  // the second call answered first: nothing is sent until both are
  assert.equal(answerCall(state, "q2", "large", newId), null);
  assert.equal(state.items[1].status, "pending");
  // a call that is not pending is not answered
  assert.equal(answerCall(state, "nope", "x", newId), null);
  const messages = answerCall(state, "q1", "blue", newId);
  assert.deepEqual(messages, [
    { id: "msg-1", role: "tool", toolCallId: "q1", content: "blue" },
    { id: "msg-2", role: "tool", toolCallId: "q2", content: "large" },
  ]);
  assert.deepEqual(
    state.items.map((i) => [i.status, i.result]),
    [
      ["answered", "blue"],
      ["answered", "large"],
    ],
  );
  // answered calls are pending no more: a second answer sends nothing
  assert.equal(answerCall(state, "q1", "red", newId), null);
});

test("HS-234: a question that is not JSON is shown as it is", () => {
  assert.equal(questionOf({ args: "not json" }), "not json");
  assert.equal(questionOf({ args: '{"other": 1}' }), '{"other": 1}');
  assert.equal(questionOf({ args: "" }), "");
});

// -- the flow in detail (HS-237) --

import { FLOW_PROPS, foldFlow, milliseconds } from "../../minagent/hosting/ui/flow.js";

const mw = (step, layer, name, ms) => ({
  type: "CUSTOM",
  name: "minagent.middleware",
  value: { layer, name, ms, step },
});
const loop = (outcome, next) => ({
  type: "CUSTOM",
  name: "minagent.loop",
  value: { outcome, next },
});

test("HS-237: middleware join their steps, decisions join the steps in order", () => {
  assert.deepEqual(FLOW_PROPS, { minagentFlow: true });
  const state = fold([
    { type: "RUN_STARTED", threadId: "t", runId: "r1" },
    { type: "STEP_STARTED", stepName: "agent" },
    mw("agent", "agent", "Timing", 0.5),
    { type: "STEP_STARTED", stepName: "model call 1" },
    mw("model call 1", "chat", "shape", 2),
    { type: "STEP_FINISHED", stepName: "model call 1" },
    loop("calls", "run batch"),
    { type: "STEP_STARTED", stepName: "tool add (c1)" },
    { type: "STEP_FINISHED", stepName: "tool add (c1)" },
    mw("tool add (c1)", "function", "audit", 1.25),
    loop("ran", "call model"),
    { type: "STEP_STARTED", stepName: "model call 2" },
    mw("model call 2", "chat", "shape", 3),
    { type: "STEP_FINISHED", stepName: "model call 2" },
    loop("approval", "pause"),
    mw("somewhere else", "chat", "lost", 1),
    { type: "CUSTOM", name: "another.event", value: { x: 1 } },
    { type: "STEP_FINISHED", stepName: "agent" },
    { type: "RUN_FINISHED", threadId: "t", runId: "r1", outcome: { type: "success" } },
  ]);
  const [run] = state.runs;
  assert.deepEqual(
    run.steps.map((s) => [s.layer, s.name, (s.middleware || []).map((m) => [m.name, m.ms])]),
    [
      ["agent", "agent", [["Timing", 0.5]]],
      ["chat", "model call 1", [["shape", 2]]],
      ["loop", "calls → run batch", []],
      ["function", "tool add (c1)", [["audit", 1.25]]],
      ["loop", "ran → call model", []],
      ["chat", "model call 2", [["shape", 3]]],
      ["loop", "approval → pause", []],
    ],
  );
  assert.deepEqual(run.steps[2].outcome, "calls");
  assert.deepEqual(run.steps[2].next, "run batch");
  // a middleware whose step is unknown stays with the run
  assert.deepEqual(run.middleware, [{ layer: "chat", name: "lost", ms: 1 }]);
  // every step ended with the run, decisions at once
  assert.ok(run.steps.every((s) => s.ended !== null));
});

test("HS-237: a CUSTOM event before any run is ignored", () => {
  const state = fold([loop("calls", "run batch")]);
  assert.deepEqual(state.runs, []);
  // foldFlow folds into the run it is given and returns it
  const run = { steps: [] };
  assert.equal(foldFlow(run, loop("answered", "finish"), 1), run);
  assert.deepEqual(run.steps.map((s) => s.name), ["answered → finish"]);
});

test("HS-237: a middleware's own time as the panel shows it", () => {
  assert.equal(milliseconds(0.123), "0.12 ms");
  assert.equal(milliseconds(9.999), "10.00 ms");
  assert.equal(milliseconds(12.6), "13 ms");
  assert.equal(milliseconds(undefined), "…");
});

test("HS-234: a stored client call without a result is pending again", () => {
  const state = fromHistory({
    messages: [
      { id: "u1", role: "user", content: "pick" },
      {
        id: "a1",
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "q1", type: "function", function: { name: "ask_user", arguments: '{"question": "Which?"}' } },
          { id: "k1", type: "function", function: { name: "keep", arguments: "{}" } },
          { id: "q0", type: "function", function: { name: "ask_user", arguments: "{}" } },
        ],
      },
      { id: "t0", role: "tool", toolCallId: "q0", content: "red" },
    ],
    interrupts: [],
  });
  pendingFromHistory(state, { name: "asking", tools: [{ name: "keep" }] });
  assert.deepEqual(
    state.items.filter((i) => i.kind === "tool").map((i) => [i.id, i.status]),
    [
      ["q1", "pending"],
      ["k1", "called"],
      ["q0", "done"],
    ],
  );
  // an agent whose own tool is named ask_user: its calls are not the page's
  const other = fromHistory({
    messages: [
      {
        id: "a1",
        role: "assistant",
        toolCalls: [{ id: "q1", type: "function", function: { name: "ask_user", arguments: "{}" } }],
      },
    ],
  });
  pendingFromHistory(other, { name: "x", tools: [{ name: "ask_user" }] });
  assert.equal(other.items[0].status, "called");
  const newId = ids();
  assert.deepEqual(answerCall(state, "q1", "blue", newId), [
    { id: "msg-1", role: "tool", toolCallId: "q1", content: "blue" },
  ]);
});
