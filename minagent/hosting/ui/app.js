// The dev UI's page (spec/hosting.md HS-220 .. HS-229): the DOM around state.js. Runs
// go through AG-UI (POST /agui/{agent}, read as server-sent events off fetch's stream);
// the history and the agents come from the read-only endpoints under /ui/api/.
import {
  addUserMessage,
  apply,
  decide,
  duration,
  fromHistory,
  initialState,
  parseSSE,
  prettyJSON,
  stopped,
} from "./state.js";
import { answerCall, declaredTools, pendingFromHistory, questionOf } from "./clienttools.js";
import { FLOW_PROPS, milliseconds } from "./flow.js";
import { authFetch } from "./auth.js";
import { localThreads, rememberLocal, threadItems, threadList } from "./sessions.js";
import { mermaidButton } from "./mermaid.js";

const $ = (id) => document.getElementById(id);
const page = {
  agents: [],
  agent: null,
  threadId: null,
  view: initialState(),
  controller: null,
  // HS-228: the store's list of the agent's threads (null: not asked yet or failed),
  // and the thread this page last sent to
  stored: null,
  sent: null,
  // bumped by each thread opened and each run: a history that arrives after either
  // is stale and dropped
  token: 0,
};
const opened = new Set();
let frame = 0;

// Random ids without crypto.randomUUID, which needs a secure context (a LAN address
// is not one).
function newId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

// -- where the thread is kept: the URL's hash, and per agent in localStorage --

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { agent: params.get("agent"), thread: params.get("thread") };
}

function keepThread() {
  const params = new URLSearchParams({ agent: page.agent, thread: page.threadId });
  history.replaceState(null, "", `#${params}`);
  localStorage.setItem(`minagent-ui:thread:${page.agent}`, page.threadId);
  $("thread-id").textContent = page.threadId;
}

// HS-227, HS-228: the agent's threads as the store lists them, else this browser's own
let threadsAsked = 0;
async function loadThreads(agent) {
  // only the last list asked for is shown: an earlier answer arriving late is dropped
  const asked = ++threadsAsked;
  let answer = null;
  try {
    answer = await getJSON(`/ui/api/threads/${encodeURIComponent(agent)}`);
  } catch {
    answer = null;
  }
  if (asked === threadsAsked && agent === page.agent) {
    page.stored = answer;
    renderThreads();
  }
}

function renderThreads() {
  const threads = threadList(page.stored, localThreads(localStorage, page.agent), page.sent);
  const open = (id) => {
    if (page.controller) page.controller.abort();
    openThread(page.agent, id);
  };
  $("threads").replaceChildren(...threadItems(el, threads, page.threadId, open));
}

async function getJSON(url) {
  const response = await authFetch(url, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${response.status}`;
    throw new Error(`${url}: ${message}`);
  }
  return body;
}

async function openThread(agent, threadId, fresh = false) {
  const token = ++page.token;
  if (agent !== page.agent) {
    page.stored = null;
    page.sent = null;
  }
  page.agent = agent;
  page.threadId =
    threadId || localStorage.getItem(`minagent-ui:thread:${agent}`) || newId("thread");
  $("agent").value = agent;
  keepThread();
  page.view = initialState();
  loadThreads(agent);
  if (!fresh) {
    document.body.dataset.ready = "false";
    render();
    const url = `/ui/api/threads/${encodeURIComponent(agent)}/${encodeURIComponent(page.threadId)}`;
    let view;
    try {
      view = pendingFromHistory(
        fromHistory(await getJSON(url)),
        page.agents.find((a) => a.name === agent),
      );
    } catch (error) {
      view = initialState();
      view.error = error.message;
    }
    if (token !== page.token) return;
    page.view = view;
  }
  document.body.dataset.ready = "true";
  render();
}

// -- rendering --

function schedule() {
  if (!frame) frame = requestAnimationFrame(() => {
    frame = 0;
    render();
  });
}

function jsonBlock(key, label, text) {
  const details = el("details", { "data-key": key }, el("summary", { text: label }));
  details.append(el("pre", { text: prettyJSON(text) }));
  if (opened.has(key)) details.open = true;
  details.addEventListener("toggle", () => {
    if (details.open) opened.add(key);
    else opened.delete(key);
  });
  return details;
}

function toolCard(item) {
  const card = el(
    "article",
    { class: "tool", "data-tool": item.id, "aria-label": `Tool call ${item.name}` },
    el(
      "div",
      { class: "head" },
      el("strong", { text: item.name }),
      el("code", { text: item.id }),
      el("span", { class: "status", text: item.status }),
    ),
    jsonBlock(`${item.id}:args`, "Arguments", item.args),
  );
  if (item.result !== null) {
    card.append(jsonBlock(`${item.id}:result`, item.error ? "Error" : "Result", item.result));
  }
  if (item.status === "pending") card.append(answerForm(item));
  const interrupt = page.view.interrupts.find((i) => i.toolCallId === item.id);
  if (interrupt) {
    card.append(el("p", { text: interrupt.message }));
    card.append(
      el(
        "div",
        { class: "buttons" },
        el("button", {
          type: "button",
          class: "approve",
          "data-key": `${interrupt.id}:approve`,
          "aria-label": `Approve the call of ${item.name}`,
          text: "Approve",
          onclick: () => answer(interrupt.id, true),
        }),
        el("button", {
          type: "button",
          class: "reject",
          "data-key": `${interrupt.id}:reject`,
          "aria-label": `Reject the call of ${item.name}`,
          text: "Reject",
          onclick: () => answer(interrupt.id, false),
        }),
      ),
    );
  }
  return card;
}

// HS-234: a pending client call's card asks the user; the answer goes back as the
// call's result (once every pending call has one)
function answerForm(item) {
  const field = `answer-${item.id}`;
  const input = el("input", { id: field, type: "text", "data-key": `${item.id}:answer` });
  // what was typed survives a redraw (another card answered, a details toggled)
  input.value = item.answer ?? item.draft ?? "";
  input.addEventListener("input", () => {
    item.draft = input.value;
  });
  const form = el(
    "form",
    { class: "answer", "data-answer": item.id },
    el("label", { for: field, text: `Answer to ${item.name}: ${questionOf(item)}` }),
    input,
    el("button", {
      type: "submit",
      "data-key": `${item.id}:send-answer`,
      "aria-label": `Answer the call of ${item.name}`,
      text: "Answer",
    }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (page.controller) return;
    const messages = answerCall(page.view, item.id, input.value, newId);
    if (messages) run(messages);
    else render();
  });
  return form;
}

// HS-235: the thread's shared state, as collapsible JSON (hidden while there is none)
function renderShared() {
  const box = $("shared");
  const shared = page.view.shared;
  box.hidden = shared === null || shared === undefined;
  box.replaceChildren(
    box.hidden ? "" : jsonBlock("shared-state", "Shared state", JSON.stringify(shared)),
  );
}

function renderTimeline() {
  const list = $("timeline");
  list.replaceChildren(
    ...page.view.items.map((item) =>
      el(
        "li",
        {},
        item.kind === "tool"
          ? toolCard(item)
          : el(
              "div",
              { class: `message ${item.role}`, "data-role": item.role },
              el("span", { class: "role", text: item.role }),
              el("span", { class: "text", text: item.text }),
            ),
      ),
    ),
  );
}

// the agent a run was made with, and its middleware by layer (HS-213), for HS-229
function runAgent() {
  const agent = page.agents.find((a) => a.name === page.agent);
  return { name: page.agent, middleware: (agent && agent.middleware) || {} };
}


const DEPTH = { agent: 0, chat: 1, function: 2, loop: 1, other: 0 };

// HS-237: the middleware a step crossed, each with its own time
function middlewareList(entries) {
  const list = el("ul", { class: "mw" });
  for (const m of entries || []) {
    list.append(
      el(
        "li",
        { "data-middleware": m.name },
        el("span", { class: "name", text: m.name }),
        el("span", { class: "dur", text: milliseconds(m.ms) }),
      ),
    );
  }
  return list.childElementCount ? list : null;
}

function renderRuns() {
  const runs = page.view.runs.map((run, index) => {
    const steps = el("ol", { class: "steps" });
    for (const step of run.steps) {
      const li = el(
        "li",
        { "data-layer": step.layer },
        el("span", { class: `layer ${step.layer}`, text: step.layer }),
        el("span", { class: "name", text: step.name }),
        step.layer === "loop"
          ? null
          : el("span", { class: "dur", text: duration(step.started, step.ended) }),
        middlewareList(step.middleware),
      );
      li.style.setProperty("--depth", String(DEPTH[step.layer]));
      steps.append(li);
    }
    const usage = run.usage
      ? ["inputTokens", "outputTokens", "totalTokens"]
          .filter((k) => run.usage[k] !== undefined)
          .map((k) => `${k.replace("Tokens", "")} ${run.usage[k]}`)
          .join(" · ") + " tokens"
      : "no usage reported";
    const outcome = run.outcome ? run.outcome.type : "running";
    return el(
      "li",
      { class: "run", "data-run": run.runId },
      el("h3", { text: `Run ${index + 1} — ${outcome}, ${duration(run.started, run.ended)}` }),
      el("p", { class: "usage", text: usage }),
      steps,
      mermaidButton(el, run, index, runAgent()),
    );
  });
  $("runs").replaceChildren(...runs);
}

// HS-222: the selected agent's middleware by layer, as the agents endpoint names them
function renderLayers() {
  const agent = page.agents.find((a) => a.name === page.agent);
  const named = (agent && agent.middleware) || {};
  const rows = [];
  for (const layer of ["agent", "chat", "function"]) {
    const names = named[layer] || [];
    rows.push(
      el("dt", { class: `layer ${layer}`, text: `${layer} middleware` }),
      el("dd", { "data-layer": layer, text: names.length ? names.join(" → ") : "none" }),
    );
  }
  $("layers").replaceChildren(...rows);
}

function render() {
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.key
    : undefined;
  renderTimeline();
  renderShared();
  renderRuns();
  renderThreads();
  renderLayers();
  const running = page.controller !== null;
  $("stop").disabled = !running;
  $("send").disabled = running;
  document.body.dataset.status = page.view.status;
  // one short line for screen readers when the run's status changes (the timeline
  // itself is redrawn as text streams, too often to announce)
  const status = page.view.interrupts.length
    ? "waiting for approval"
    : { idle: "", running: "running", stopped: "stopped", error: "failed" }[page.view.status];
  if ($("status").textContent !== status) $("status").textContent = status;
  showError(page.view.error);
  if (focused) {
    const again = document.querySelector(`[data-key="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}

// -- runs --

async function failure(response) {
  const body = await response.json().catch(() => null);
  if (body && typeof body.message === "string") return body.message;
  if (body && body.error && typeof body.error.message === "string") return body.error.message;
  return `HTTP ${response.status}`;
}

async function run(messages, resume) {
  page.token += 1;
  document.body.dataset.ready = "true";
  const view = page.view;
  page.controller = new AbortController();
  view.error = null;
  render();
  const input = {
    threadId: page.threadId,
    runId: newId("run"),
    messages,
    tools: declaredTools(page.agents.find((a) => a.name === page.agent)),
    context: [],
    forwardedProps: FLOW_PROPS,
  };
  if (resume) input.resume = resume;
  try {
    const response = await authFetch(`/agui/${encodeURIComponent(page.agent)}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(input),
      signal: page.controller.signal,
    });
    if (!response.ok) {
      apply(view, { type: "RUN_ERROR", message: await failure(response) }, performance.now());
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const parsed = parseSSE(buffer + value);
      buffer = parsed.rest;
      for (const event of parsed.events) apply(view, event, performance.now());
      schedule();
    }
    if (view.status === "running") {
      apply(view, { type: "RUN_ERROR", message: "the stream ended before the run finished" }, performance.now());
    }
  } catch (error) {
    if (error.name === "AbortError") stopped(view, performance.now());
    else apply(view, { type: "RUN_ERROR", message: `the request failed: ${error.message}` }, performance.now());
  } finally {
    page.controller = null;
    render();
    loadThreads(page.agent);
  }
}

function send(event) {
  event.preventDefault();
  const prompt = $("prompt");
  const text = prompt.value.trim();
  if (!text || page.controller) return;
  prompt.value = "";
  const id = newId("msg");
  rememberLocal(localStorage, page.agent, page.threadId, text);
  if (!page.sent || page.sent.id !== page.threadId) {
    page.sent = { id: page.threadId, title: text.slice(0, 80) };
  }
  addUserMessage(page.view, id, text);
  run([{ id, role: "user", content: text }]);
}

function answer(interruptId, approved) {
  if (page.controller) return;
  const resume = decide(page.view, interruptId, approved);
  if (resume) run([], resume);
  else render();
}

async function start() {
  $("composer").addEventListener("submit", send);
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) send(event);
  });
  $("stop").addEventListener("click", () => page.controller && page.controller.abort());
  $("new-thread").addEventListener("click", () => {
    if (page.controller) page.controller.abort();
    localStorage.removeItem(`minagent-ui:thread:${page.agent}`);
    openThread(page.agent, newId("thread"), true);
  });
  $("agent").addEventListener("change", (event) => {
    if (page.controller) page.controller.abort();
    openThread(event.target.value, null);
  });
  try {
    page.agents = (await getJSON("/ui/api/agents")).agents;
  } catch (error) {
    showError(error.message);
    document.body.dataset.ready = "true";
    return;
  }
  $("agent").replaceChildren(
    ...page.agents.map((a) => el("option", { value: a.name, text: a.name })),
  );
  const wanted = readHash();
  const known = page.agents.some((a) => a.name === wanted.agent);
  await openThread(known ? wanted.agent : page.agents[0].name, known ? wanted.thread : null);
}

start();
