// The page's client tools (spec/hosting.md HS-234, AG-UI's client tools: HS-87, HS-88),
// with no DOM and no I/O, so that node's test runner can check them.
//
// Every run declares CLIENT_TOOLS as the input's `tools` (less a name the agent's own
// tools use, which the server refuses). The model may call one; the agent does not run
// it, so the run finishes with the call in `pendingToolCallIds` and state.js marks its
// card `pending`. The user types an answer on the card; once every pending call has
// one, `answerCall` returns the next run's `tool` messages.

export const CLIENT_TOOLS = [
  {
    name: "ask_user",
    description:
      "Ask the user of the dev UI a question; the result is the answer they type.",
    parameters: {
      type: "object",
      properties: { question: { type: "string", description: "The question to ask." } },
      required: ["question"],
    },
  },
];

// HS-234: the tools a run declares for `agent` (an entry of /ui/api/agents).
export function declaredTools(agent) {
  const own = new Set(((agent && agent.tools) || []).map((t) => t.name));
  return CLIENT_TOOLS.filter((t) => !own.has(t.name));
}

// HS-234: what the card asks: a call's `question` argument when it has one.
export function questionOf(item) {
  try {
    const args = JSON.parse(item.args || "{}");
    if (args && typeof args.question === "string") return args.question;
  } catch {
    // arguments that are not JSON are shown as they are
  }
  return item.args || "";
}

// HS-234: a stored thread's calls of the page's client tools that have no result are
// still pending (the agent runs its own tools, so only a client's call is left without
// one): after a reload they are answered as before.
export function pendingFromHistory(state, agent) {
  const names = new Set(declaredTools(agent).map((t) => t.name));
  for (const item of state.items) {
    const unanswered = item.kind === "tool" && item.status === "called" && item.result === null;
    if (unanswered && names.has(item.name)) item.status = "pending";
  }
  return state;
}

// HS-234: the user's answer to one pending call. Every pending call needs an answer
// before the next run (HS-88): until each has one this returns null; then one AG-UI
// `tool` message per pending call, in the calls' order, each with an id from `newId`.
export function answerCall(state, toolCallId, text, newId) {
  const pending = state.items.filter((i) => i.kind === "tool" && i.status === "pending");
  const item = pending.find((i) => i.id === toolCallId);
  if (!item) return null;
  item.answer = String(text);
  if (pending.some((i) => i.answer === undefined)) return null;
  return pending.map((i) => {
    i.result = i.answer;
    i.status = "answered";
    delete i.answer;
    return { id: newId("msg"), role: "tool", toolCallId: i.id, content: i.result };
  });
}
