// The flow in detail (spec/hosting.md HS-237, the events of HS-98): a run's CUSTOM
// events folded into its steps, with no DOM and no I/O, so that node's test runner can
// check it.
//
// `minagent.middleware` reports a middleware that finished: it joins the `middleware`
// list of the step it names (the run's own list when that step is not known).
// `minagent.loop` reports a decision of the loop's table: it joins the run's steps, in
// the order it came, as a step of layer `loop` named `outcome → next`.

// HS-237: what every run of the page asks for in its forwardedProps.
export const FLOW_PROPS = { minagentFlow: true };

// HS-237: one CUSTOM event into `run` (an entry of the state's runs).
export function foldFlow(run, event, now) {
  const value = event.value || {};
  if (event.name === "minagent.middleware") {
    const entry = { layer: value.layer, name: value.name, ms: value.ms };
    const step = run.steps.findLast((s) => s.name === value.step && s.layer !== "loop");
    const owner = step || run;
    (owner.middleware ||= []).push(entry);
  } else if (event.name === "minagent.loop") {
    run.steps.push({
      name: `${value.outcome} → ${value.next}`,
      layer: "loop",
      outcome: value.outcome,
      next: value.next,
      started: now,
      ended: now,
    });
  }
  return run;
}

// HS-237: a middleware's own time, as the panel shows it.
export function milliseconds(ms) {
  if (typeof ms !== "number") return "…";
  return ms < 10 ? `${ms.toFixed(2)} ms` : `${Math.round(ms)} ms`;
}
