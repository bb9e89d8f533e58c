// The dev UI's view state (spec/hosting.md HS-220 .. HS-224): AG-UI events folded into
// plain data, with no DOM and no I/O, so that node's test runner can check it.
//
// The state is one object: `items` (the chat's timeline: messages and tool cards, in
// order), `runs` (one entry per run: its steps with their times, usage, outcome),
// `interrupts` (approvals waiting for an answer), `shared` (the thread's AG-UI state),
// `error` (the last RUN_ERROR's message) and `status` ("idle", "running", "stopped",
// "error"). `apply` changes the state it is given and returns it.
import { foldFlow } from "./flow.js";

export function initialState() {
  return {
    items: [],
    runs: [],
    interrupts: [],
    shared: null,
    error: null,
    status: "idle",
    openText: null,
  };
}

// HS-222: the layer a step belongs to, by the names hosting gives steps (HS-91).
export function layerOf(stepName) {
  if (stepName === "agent") return "agent";
  if (stepName.startsWith("model call")) return "chat";
  if (stepName.startsWith("tool ")) return "function";
  return "other";
}

function currentRun(state) {
  return state.runs.length ? state.runs[state.runs.length - 1] : null;
}

function toolItem(state, id) {
  return state.items.find((item) => item.kind === "tool" && item.id === id) || null;
}

function closeRun(state, now) {
  const run = currentRun(state);
  if (run && run.ended === null) {
    run.ended = now;
    for (const step of run.steps) {
      if (step.ended === null) step.ended = now;
    }
  }
  state.openText = null;
}

// RFC 6902 add / replace / remove on JSON objects (what HS-93's deltas use).
export function applyPatch(doc, patch) {
  let root = doc === null || doc === undefined ? {} : JSON.parse(JSON.stringify(doc));
  for (const op of patch) {
    const keys = op.path
      .split("/")
      .slice(1)
      .map((k) => k.replace(/~1/g, "/").replace(/~0/g, "~"));
    if (keys.length === 0) {
      root = op.op === "remove" ? null : op.value;
      continue;
    }
    let target = root;
    for (const key of keys.slice(0, -1)) {
      if (target[key] === null || typeof target[key] !== "object") target[key] = {};
      target = target[key];
    }
    const last = keys[keys.length - 1];
    if (op.op === "remove") delete target[last];
    else target[last] = op.value;
  }
  return root;
}

// HS-220: one AG-UI event into the state; `now` is the time in milliseconds.
export function apply(state, event, now) {
  const run = currentRun(state);
  switch (event.type) {
    case "RUN_STARTED":
      state.runs.push({
        runId: event.runId,
        threadId: event.threadId,
        started: now,
        ended: null,
        steps: [],
        // HS-229: every step event in its order, for the Mermaid export
        marks: [],
        usage: null,
        outcome: null,
      });
      state.status = "running";
      state.error = null;
      break;
    case "TEXT_MESSAGE_START": {
      const item = { kind: "message", id: event.messageId, role: event.role, text: "" };
      state.items.push(item);
      state.openText = item;
      break;
    }
    case "TEXT_MESSAGE_CONTENT":
      if (state.openText && state.openText.id === event.messageId) {
        state.openText.text += event.delta;
      }
      break;
    case "TEXT_MESSAGE_END":
      state.openText = null;
      break;
    case "TOOL_CALL_START":
      state.openText = null;
      state.items.push({
        kind: "tool",
        id: event.toolCallId,
        name: event.toolCallName,
        args: "",
        result: null,
        error: null,
        status: "running",
      });
      break;
    case "TOOL_CALL_ARGS": {
      const item = toolItem(state, event.toolCallId);
      if (item) item.args += event.delta;
      break;
    }
    case "TOOL_CALL_END": {
      const item = toolItem(state, event.toolCallId);
      if (item && item.status === "running") item.status = "called";
      break;
    }
    case "TOOL_CALL_RESULT": {
      const item = toolItem(state, event.toolCallId);
      if (item) {
        item.result = event.content;
        item.status = item.status === "rejected" ? "rejected" : "done";
      }
      break;
    }
    case "STEP_STARTED":
      if (run) {
        run.steps.push({
          name: event.stepName,
          layer: layerOf(event.stepName),
          started: now,
          ended: null,
        });
        run.marks.push({ name: event.stepName, start: true, at: now });
      }
      break;
    case "STEP_FINISHED":
      if (run) {
        const step = run.steps.find((s) => s.name === event.stepName && s.ended === null);
        if (step) step.ended = now;
        run.marks.push({ name: event.stepName, start: false, at: now });
      }
      break;
    case "CUSTOM":
      // HS-237: the flow in detail (HS-98)
      if (run) foldFlow(run, event, now);
      break;
    case "STATE_SNAPSHOT":
      state.shared = event.snapshot;
      break;
    case "STATE_DELTA":
      state.shared = applyPatch(state.shared, event.delta);
      break;
    case "RUN_FINISHED": {
      closeRun(state, now);
      if (run) {
        run.outcome = event.outcome || { type: "success" };
        run.usage = event.usage && event.usage.length ? event.usage[0] : null;
      }
      const outcome = event.outcome || {};
      if (outcome.type === "interrupt") {
        state.interrupts = outcome.interrupts.map((i) => ({
          id: i.id,
          toolCallId: i.toolCallId,
          message: i.message,
        }));
        for (const interrupt of state.interrupts) {
          const item = toolItem(state, interrupt.toolCallId);
          if (item) item.status = "awaiting approval";
        }
      }
      for (const id of outcome.pendingToolCallIds || []) {
        const item = toolItem(state, id);
        if (item) item.status = "pending";
      }
      state.status = "idle";
      break;
    }
    case "RUN_ERROR":
      closeRun(state, now);
      if (run) run.outcome = { type: "error", message: event.message };
      state.error = event.message || "the run failed";
      state.status = "error";
      break;
    default:
      break;
  }
  return state;
}

// HS-221: the user's own message, shown before the run answers.
export function addUserMessage(state, id, text) {
  state.items.push({ kind: "message", id, role: "user", text });
  return state;
}

// HS-221: the stop button: the run ends here, its open steps with it.
export function stopped(state, now) {
  closeRun(state, now);
  const run = currentRun(state);
  if (run && run.outcome === null) run.outcome = { type: "stopped" };
  for (const item of state.items) {
    if (item.kind === "tool" && item.status === "running") item.status = "stopped";
  }
  state.status = "stopped";
  return state;
}

// HS-223: one approval's answer. Every open interrupt needs an answer in one run
// (HS-90): until each has one this returns null; then the next run's `resume` entries.
export function decide(state, interruptId, approved) {
  const interrupt = state.interrupts.find((i) => i.id === interruptId);
  if (!interrupt) return null;
  interrupt.approved = approved;
  const item = toolItem(state, interrupt.toolCallId);
  if (item) item.status = approved ? "approved" : "rejected";
  if (state.interrupts.some((i) => i.approved === undefined)) return null;
  const resume = state.interrupts.map((i) => ({
    interruptId: i.id,
    status: "resolved",
    payload: { approved: i.approved },
  }));
  state.interrupts = [];
  return resume;
}

// HS-224: a stored thread (GET /ui/api/threads/...) as the state's timeline.
export function fromHistory(thread) {
  const state = initialState();
  for (const message of thread.messages || []) {
    if (message.role === "tool") {
      const item = toolItem(state, message.toolCallId);
      if (item) {
        item.result = message.content;
        item.error = message.error || null;
        item.status = message.error ? "error" : "done";
      }
      continue;
    }
    if (message.content) {
      state.items.push({
        kind: "message",
        id: message.id,
        role: message.role,
        text: message.content,
      });
    }
    for (const call of message.toolCalls || []) {
      state.items.push({
        kind: "tool",
        id: call.id,
        name: call.function.name,
        args: call.function.arguments,
        result: null,
        error: null,
        status: "called",
      });
    }
  }
  state.interrupts = (thread.interrupts || []).map((i) => ({
    id: i.id,
    toolCallId: i.toolCallId,
    message: `Approve the call of ${i.name} with ${i.arguments}?`,
  }));
  for (const interrupt of state.interrupts) {
    const item = toolItem(state, interrupt.toolCallId);
    if (item) item.status = "awaiting approval";
  }
  return state;
}

// HS-225: server-sent events off a byte stream's text: the complete events of
// `buffer` (each `data:` line's JSON) and what is left for the next chunk.
export function parseSSE(buffer) {
  const events = [];
  const text = buffer.replace(/\r\n/g, "\n");
  const blocks = text.split("\n\n");
  const rest = blocks.pop();
  for (const block of blocks) {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data) events.push(JSON.parse(data));
  }
  return { events, rest };
}

// HS-222: a duration in milliseconds, for the flow panel.
export function duration(start, end) {
  if (end === null || end === undefined) return "…";
  const ms = Math.max(0, end - start);
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

// HS-221: JSON text shown indented when it parses, as it is otherwise.
export function prettyJSON(text) {
  if (text === null || text === undefined || text === "") return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}
