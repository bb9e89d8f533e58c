// A run of the flow panel as Mermaid (spec/hosting.md HS-229): its step events
// (HS-91) become the run trace's events (spec/observability.md OB-12) and are drawn by
// `renderMermaid`, the same drawing as `minagent.tracing.runtrace.render_mermaid` for
// the events the page makes, character for character (tests/hosting/test_devui.py
// checks the two against each other). No DOM but `mermaidButton`.

const PARTICIPANTS = [
  ["Caller", "Caller"],
  ["AM", "Agent middleware"],
  ["A", "Agent"],
  ["CM", "Chat middleware"],
  ["M", "Model"],
  ["FM", "Function middleware"],
  ["T", "Tool"],
];

// Python's str() of the values the events hold.
function pyStr(value) {
  if (value === undefined || value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  return String(value);
}

// Python's f"{x:.Nf}": correctly rounded like toFixed, but an exact tie goes to the
// even digit (toFixed takes the larger). x is an exact tie when x * 2^(N+1) is an odd
// integer.
export function pyFixed(x, digits) {
  const doubled = x * 2 ** (digits + 1);
  if (Number.isInteger(doubled) && Math.abs(doubled % 2) === 1) {
    let whole = Math.floor(x * 10 ** digits);
    if (whole % 2 !== 0) whole += 1;
    const text = String(whole).padStart(digits + 1, "0");
    return digits ? `${text.slice(0, -digits)}.${text.slice(-digits)}` : text;
  }
  return x.toFixed(digits);
}

function took(seconds) {
  if (seconds < 0.01) return `${pyFixed(seconds * 1000, 1)} ms`;
  if (seconds < 1) return `${pyFixed(seconds * 1000, 0)} ms`;
  return `${pyFixed(seconds, 2)} s`;
}

// the characters Python's str.split() splits on
const SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

// OB-13: one line without the characters Mermaid reads as syntax, at most 120
// characters (code points, as Python counts them).
export function label(text) {
  let cleaned = pyStr(text).split(SPACE).filter(Boolean).join(" ");
  for (const [bad, good] of [[";", ","], ["#", "No."], ["<", "‹"], [">", "›"], ["%", " pct"]]) {
    cleaned = cleaned.split(bad).join(good);
  }
  return Array.from(cleaned).slice(0, 120).join("") || "-";
}

// HS-229: a run of the state (state.js: `marks` in the order the step events came) as
// the run trace's events, `t` in seconds since the run started. `agent` is
// `{name, middleware}` (HS-213).
export function traceEvents(run, agent) {
  const t = (at) => (at - run.started) / 1000;
  const events = [{ kind: "run_start", depth: 0, agent: agent.name, t: 0 }];
  const middleware = {};
  for (const layer of ["agent", "chat", "function"]) {
    const names = (agent.middleware && agent.middleware[layer]) || [];
    if (names.length) middleware[layer] = names;
  }
  for (const mark of run.marks || []) {
    const at = t(mark.at);
    const name = mark.name;
    let event = null;
    if (name === "agent") {
      event = mark.start
        ? { kind: "agent_in", stream: true }
        : { kind: "agent_out", result: run.outcome && run.outcome.type === "error" ? "nothing" : "AgentResponse" };
      if (mark.start && Object.keys(middleware).length) event.middleware = middleware;
    } else if (/^model call \d+$/.test(name)) {
      event = mark.start
        ? { kind: "model_call", number: Number(name.slice("model call ".length)) }
        : { kind: "model_end" };
    } else if (name.startsWith("tool ") && name.endsWith(")") && name.includes(" (")) {
      const cut = name.indexOf(" (");
      const callId = name.slice(cut + 2, -1);
      event = mark.start
        ? { kind: "tool_start", tool: name.slice(5, cut), call_id: callId }
        : { kind: "tool_end", call_id: callId };
    }
    if (event) events.push({ ...event, depth: 0, t: at });
  }
  const outcome = run.outcome ? run.outcome.type : null;
  if (run.ended !== null && (outcome === "success" || outcome === "interrupt")) {
    const end = { kind: "run_end", depth: 0, t: t(run.ended) };
    if (run.usage && run.usage.inputTokens !== undefined) end.input_tokens = run.usage.inputTokens;
    if (run.usage && run.usage.outputTokens !== undefined) end.output_tokens = run.usage.outputTokens;
    events.push(end);
  } else if (run.ended !== null && outcome === "error") {
    events.push({ kind: "run_end", depth: 0, error: run.outcome.message || "error", t: t(run.ended) });
  }
  // stopped or still running: no run_end; the drawing closes what is open ("ended")
  return events;
}

// OB-13: the run trace's drawing (render_mermaid) of the kinds the page makes:
// run_start, agent_in/out, model_call, model_end, tool_start/end, run_end.
export function renderMermaid(events) {
  const lines = ["sequenceDiagram"];
  for (const [key, name] of PARTICIPANTS) lines.push(`    participant ${key} as ${name}`);
  // key -> [from, to, parent key, start]; a Map keeps Python's dict order
  const open = new Map();
  let now = null;
  let limited = false;

  const within = (key, ancestor) => {
    let parent = open.get(key)[2];
    while (parent !== null && parent !== undefined) {
      if (parent === ancestor) return true;
      parent = open.has(parent) ? open.get(parent)[2] : null;
    }
    return false;
  };
  const ret = (key, text) => {
    if (!open.has(key)) return;
    const inner = [...open.keys()].reverse().filter((k) => k !== key && within(k, key));
    for (const k of inner) {
      const [source, target] = open.get(k);
      open.delete(k);
      lines.push(`    ${target}-->>${source}: ended`);
    }
    const [source, target, , start] = open.get(key);
    open.delete(key);
    if (typeof start === "number" && typeof now === "number" && now >= start) {
      text = `${text} (${took(now - start)})`;
    }
    lines.push(`    ${target}-->>${source}: ${label(text)}`);
  };
  const call = (key, source, target, text, parent = "run") => {
    if (open.has(key)) ret(key, "ended");
    lines.push(`    ${source}->>${target}: ${label(text)}`);
    open.set(key, [source, target, parent, now]);
  };
  const note = (over, text) => lines.push(`    Note over ${over}: ${label(text)}`);

  for (const event of events) {
    const kind = event.kind;
    now = event.t === undefined ? null : event.t;
    if (kind === "run_start") {
      call("run", "Caller", "AM", event.agent ? `run() of ${event.agent}` : "run()", null);
    } else if (kind === "agent_in") {
      const named = event.middleware;
      for (const [layer, over] of [["agent", "AM"], ["chat", "CM"], ["function", "FM"]]) {
        const names = named && typeof named === "object" ? named[layer] : null;
        if (names && names.length) note(over, `${layer} middleware: ${names.map(pyStr).join(", ")}`);
      }
      call("agent", "AM", "A", `call_next() stream=${pyStr(event.stream)}`);
    } else if (kind === "agent_out") {
      ret("agent", event.result === undefined ? "" : pyStr(event.result));
    } else if (kind === "model_call") {
      ret("model", "ended");
      limited = limited || Boolean(event.last);
      const parts = [];
      if (event.tool_choice !== undefined && event.tool_choice !== null) {
        parts.push(`tool_choice=${pyStr(event.tool_choice)}`);
      }
      if (event.last) parts.push("last call");
      const extra = parts.length ? ` (${parts.join(", ")})` : "";
      call("model", "A", "CM", `model call ${pyStr(event.number)}${extra}`);
    } else if (kind === "model_end") {
      ret("model", "ChatResponse");
    } else if (kind === "tool_start") {
      call(`tool ${pyStr(event.call_id)}`, "A", "FM", `${pyStr(event.tool)} [${pyStr(event.call_id)}]`);
    } else if (kind === "tool_end") {
      ret(`tool ${pyStr(event.call_id)}`, event.error ? `error result (${pyStr(event.error)})` : "result");
    } else if (kind === "run_end") {
      ret("model", "ended");
      let usage = "";
      const given = (v) => v !== undefined && v !== null;
      if (given(event.input_tokens) || given(event.output_tokens)) {
        usage = ` (${pyStr(event.input_tokens)} in / ${pyStr(event.output_tokens)} out tokens)`;
      }
      const ended = limited ? " after a limit" : "";
      ret("run", event.error ? `raised ${pyStr(event.error)}` : `AgentResponse${ended}${usage}`);
      limited = false;
    }
  }
  while (open.size) ret([...open.keys()].pop(), "ended");
  return `${lines.join("\n")}\n`;
}

// HS-229: the flow panel's button that downloads a run as a Mermaid file (a Blob
// download: allowed by the page's content security policy, nothing leaves the page).
export function mermaidButton(el, run, index, agent) {
  return el("button", {
    type: "button",
    class: "export",
    "data-key": `mermaid:${run.runId}`,
    "aria-label": `Download run ${index + 1} as Mermaid`,
    text: "Mermaid",
    onclick: () => {
      const text = renderMermaid(traceEvents(run, agent));
      const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
      const link = el("a", { href: url, download: `run-${index + 1}.mmd` });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 0);
    },
  });
}
