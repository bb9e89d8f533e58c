"""The run trace: what crossed which layer in a run, as events and as a Mermaid sequence
diagram (spec/observability.md OB-12, OB-13).

Theory of operation
-------------------
`RunTrace` is a `Tracer` (spec/observability.md OB-1) that keeps events instead of
exporting spans, plus two middleware (agent and function layer) that mark the innermost
crossing of their pipelines. While ``with trace.recording():`` is active it is the
process's tracer, so every run started meanwhile is recorded (OB-12). The events come
from:

    event          made by                                       arrow drawn run_start
    the run's ``invoke_agent`` span starts          Caller ->> Agent middleware
    agent_in/out   the trace's agent middleware around call_next   Agent middleware ->>
    Agent, and back model_call     the loop calls the model (OB-11)                Agent
    ->> Chat middleware chat_start/end the ``chat`` span (the provider call)
    Chat middleware ->> Model, and back step           the loop's table answers
    (outcome, next step)   a note: "calls -> run batch" tool_start/end the
    ``execute_tool`` span                       Agent ->> Function middleware, and back
    tool_in/out    the trace's function middleware                 Function middleware
    ->> Tool, and back injected       the loop drained the inbox (OB-11)              a
    note run_end        the run's span ends                             Agent middleware
    -->> Caller

A model call's return arrow (Chat middleware -->> Agent) is drawn when the loop's next
step event (or the run's end) shows the call is over. Runs nested in a tool (an agent as
a tool) are recorded with their depth and drawn as a note over the tool.
`render_mermaid` is a pure function of the events: it pairs every call arrow with a
return, closing whatever is still open when the events end, so any event sequence — also
a truncated or failed run's — draws a diagram whose arrows pair up (OB-13).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .._middleware import AgentContext, FunctionInvocationContext, categorize_middleware
from . import genai

__all__ = ["RunTrace", "render_mermaid"]

PARTICIPANTS = (
    ("Caller", "Caller"),
    ("AM", "Agent middleware"),
    ("A", "Agent"),
    ("CM", "Chat middleware"),
    ("M", "Model"),
    ("FM", "Function middleware"),
    ("T", "Tool"),
)


class _TraceSpan:
    """A span of a `RunTrace`: records its start and end as events."""

    __slots__ = ("attributes", "depth", "error", "kind", "trace")

    def __init__(
        self, trace: RunTrace, kind: str, depth: int, attributes: Mapping[str, Any]
    ) -> None:
        self.trace = trace
        self.kind = kind
        self.depth = depth
        self.attributes = dict(attributes)
        self.error: str | None = None

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def record_error(self, error: BaseException) -> None:
        self.error = genai.error_type(error)

    def add_event(self, name: str, attributes: Mapping[str, Any]) -> None:
        kind = name.removeprefix("minagent.")
        self.trace._add(kind, self.depth, dict(attributes))

    def end(self) -> None:
        a = self.attributes
        fields: dict[str, Any] = {"error": self.error} if self.error else {}
        if self.kind == "invoke_agent":
            fields["input_tokens"] = a.get(genai.INPUT_TOKENS)
            fields["output_tokens"] = a.get(genai.OUTPUT_TOKENS)
            self.trace._add("run_end", self.depth, fields)
        elif self.kind == "chat":
            reasons = a.get(genai.FINISH_REASONS) or []
            fields["finish_reason"] = reasons[0] if reasons else None
            self.trace._add("chat_end", self.depth, fields)
        elif self.kind == "execute_tool":
            fields["call_id"] = a.get(genai.TOOL_CALL_ID)
            fields["error"] = self.error or a.get(genai.ERROR_TYPE)
            self.trace._add("tool_end", self.depth, fields)


class RunTrace:
    """Records every layer crossing of the runs made while ``recording()`` is active
    (OB-12).

    ``trace.middleware`` goes into the run's ``middleware=`` (run-level, so it is the
    innermost of its layer); ``trace.events`` is the raw record, ``trace.to_json()`` its
    JSON and ``trace.to_mermaid()`` the diagram."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.middleware: list[Any] = [self._agent_layer, self._function_layer]
        self._t0: float | None = None

    # -- the Tracer protocol ---------------------------------------------------------------

    def start_span(
        self, name: str, attributes: Mapping[str, Any], parent: Any
    ) -> _TraceSpan:
        kind = str(attributes.get(genai.OPERATION, name.split(" ")[0]))
        depth = parent.depth if isinstance(parent, _TraceSpan) else 0
        if kind == "invoke_agent" and isinstance(parent, _TraceSpan):
            depth += 1
        span = _TraceSpan(self, kind, depth, attributes)
        if kind == "invoke_agent":
            self._add("run_start", depth, {"agent": attributes.get(genai.AGENT_NAME)})
        elif kind == "chat":
            self._add(
                "chat_start", depth, {"model": attributes.get(genai.REQUEST_MODEL)}
            )
        elif kind == "execute_tool":
            tool, call_id = (
                attributes.get(genai.TOOL_NAME),
                attributes.get(genai.TOOL_CALL_ID),
            )
            self._add("tool_start", depth, {"tool": tool, "call_id": call_id})
        return span

    def activate(self, span: Any) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    # -- recording -------------------------------------------------------------------------

    @contextlib.contextmanager
    def recording(self) -> Iterator[RunTrace]:
        """Be the process's tracer inside the block; the previous tracer is restored
        after."""
        previous, content = genai.get_tracer(), genai.records_content()
        genai.set_tracer(self)
        try:
            yield self
        finally:
            genai.set_tracer(previous, record_content=content)

    def _add(self, kind: str, depth: int, fields: dict[str, Any]) -> None:
        now = time.perf_counter()
        if self._t0 is None:
            self._t0 = now
        event = {
            "kind": kind,
            "depth": depth,
            **{k: v for k, v in fields.items() if v is not None},
        }
        # OB-29: seconds since the trace's first event
        event["t"] = round(now - self._t0, 6)
        self.events.append(event)

    def _depth(self) -> int:
        span = genai.current_span()
        return span.depth if isinstance(span, _TraceSpan) else 0

    async def _agent_layer(self, context: AgentContext, call_next: Any) -> None:
        depth = self._depth()
        fields: dict[str, Any] = {
            "stream": context.stream,
            "messages": len(context.messages),
        }
        # OB-29
        fields["middleware"] = _middleware_names(context.agent, self.middleware) or None
        self._add("agent_in", depth, fields)
        try:
            await call_next()
        finally:
            result = context.result
            self._add(
                "agent_out",
                depth,
                {"result": type(result).__name__ if result is not None else "nothing"},
            )

    async def _function_layer(
        self, context: FunctionInvocationContext, call_next: Any
    ) -> None:
        depth = self._depth()
        call_id = context.call_id
        self._add(
            "tool_in",
            depth,
            {"tool": getattr(context.function, "name", "?"), "call_id": call_id},
        )
        outcome = "raised"
        try:
            await call_next()
            outcome = "returned"
        finally:
            self._add("tool_out", depth, {"call_id": call_id, "outcome": outcome})

    # -- output ----------------------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps(self.events, indent=1, ensure_ascii=False, default=str)

    def to_mermaid(self) -> str:
        return render_mermaid(self.events)


_STEP_NOTES = {
    "terminated": "terminated by MiddlewareTermination",
    "approval": "approval needed: pause",
    "limited": "limit reached: last call",
    "pending": "declaration-only call: returned to the caller",
    "forced": 'tool_choice "required": return after the batch',
    "steered": "inbox messages arrived: call again",
}


def _middleware_names(agent: Any, own: Sequence[Any]) -> dict[str, list[str]]:
    """OB-29: the names of the agent's and its client's middleware, by layer (not the
    trace's own)."""
    client = getattr(agent, "client", None)
    found = categorize_middleware(
        getattr(agent, "middleware", None), getattr(client, "middleware", None)
    )
    names: dict[str, list[str]] = {}
    for layer in ("agent", "chat", "function"):
        listed = [_name_of(m) for m in getattr(found, layer) if m not in own]
        if listed:
            names[layer] = listed
    return names


def _name_of(middleware: Any) -> str:
    owner = (
        getattr(middleware, "__self__", None) if inspect.ismethod(middleware) else None
    )
    if owner is not None and getattr(middleware, "__name__", "") == "process":
        return type(owner).__name__  # an instance of a middleware class
    name = str(getattr(middleware, "__qualname__", None) or type(middleware).__name__)
    return name.rpartition("<locals>.")[2]


def _took(seconds: float) -> str:
    return (
        f"{seconds * 1000:.1f} ms"
        if seconds < 0.01
        else f"{seconds * 1000:.0f} ms"
        if seconds < 1
        else f"{seconds:.2f} s"
    )


def render_mermaid(events: Sequence[Mapping[str, Any]]) -> str:
    """The events as a Mermaid sequence diagram; every call arrow gets its return
    (OB-13), with the time it took when the events carry times; the middleware are named
    and a limit's end says so (OB-29)."""
    lines = ["sequenceDiagram"]
    lines += [f"    participant {key} as {label}" for key, label in PARTICIPANTS]
    # key -> (from, to, parent key, start)
    open_calls: dict[str, tuple[str, str, str | None, Any]] = {}
    now: Any = None
    limited = False  # the run's last model call was made (a limit was reached)

    def call(
        key: str, source: str, target: str, text: str, parent: str | None = "run"
    ) -> None:
        if key in open_calls:
            ret(key, "ended")
        lines.append(f"    {source}->>{target}: {_label(text)}")
        open_calls[key] = (source, target, parent, now)

    def ret(key: str, text: str) -> None:
        """Return the call ``key``, closing first the calls it made that are still
        open."""
        if key not in open_calls:
            return
        for inner in [k for k in reversed(open_calls) if k != key and _within(k, key)]:
            source, target, _, _ = open_calls.pop(inner)
            lines.append(f"    {target}-->>{source}: ended")
        source, target, _, start = open_calls.pop(key)
        if (
            isinstance(start, int | float)
            and isinstance(now, int | float)
            and now >= start
        ):
            text = f"{text} ({_took(now - start)})"
        lines.append(f"    {target}-->>{source}: {_label(text)}")

    def _within(key: str, ancestor: str) -> bool:
        parent = open_calls[key][2]
        while parent is not None:
            if parent == ancestor:
                return True
            parent = open_calls[parent][2] if parent in open_calls else None
        return False

    def note(over: str, text: str) -> None:
        lines.append(f"    Note over {over}: {_label(text)}")

    nested: dict[int, int] = {}
    for event in events:
        kind, depth = event.get("kind"), int(event.get("depth", 0) or 0)
        now = event.get("t")
        if depth > 0:  # a run nested in a tool: counted, drawn as one note when it ends
            if kind == "model_call":
                nested[depth] = nested.get(depth, 0) + 1
            elif kind == "run_end" and depth == 1:
                note("T", f"nested agent run: {nested.pop(1, 0)} model call(s)")
            continue
        if kind == "run_start":
            agent = event.get("agent")
            call("run", "Caller", "AM", f"run() of {agent}" if agent else "run()", None)
        elif kind == "agent_in":
            named = event.get("middleware")
            for layer, over in (("agent", "AM"), ("chat", "CM"), ("function", "FM")):
                if isinstance(named, Mapping) and named.get(layer):
                    note(
                        over,
                        f"{layer} middleware: {', '.join(str(n) for n in named[layer])}",
                    )
            call("agent", "AM", "A", f"call_next() stream={event.get('stream')}")
        elif kind == "agent_out":
            ret("agent", str(event.get("result", "")))
        elif kind == "model_call":
            ret("model", "ended")
            limited = limited or bool(event.get("last"))
            choice = event.get("tool_choice")
            # without a tool_choice (the dev UI's events, HS-229) none is named
            parts = [f"tool_choice={choice}"] if choice is not None else []
            if event.get("last"):
                parts.append("last call")
            extra = f" ({', '.join(parts)})" if parts else ""
            call("model", "A", "CM", f"model call {event.get('number')}{extra}")
        elif kind == "model_end":
            # HS-229: the end of a model call as the dev UI's steps mark it
            ret("model", "ChatResponse")
        elif kind == "chat_start":
            call("chat", "CM", "M", f"chat {event.get('model') or ''}".strip(), "model")
        elif kind == "chat_end":
            error = event.get("error")
            reason = event.get("finish_reason")
            ret(
                "chat",
                f"raised {error}"
                if error
                else (f"finish_reason={reason}" if reason else "response"),
            )
        elif kind == "step":
            ret("model", "ChatResponse")
            outcome, after = str(event.get("outcome")), str(event.get("next"))
            # OB-29: the run ends because a limit was reached
            if limited and after == "finish":
                note("A", f"limit reached → finish (the last call, after {outcome!s})")
                continue
            note(
                "A",
                f"{outcome} → {after}"
                + (f" ({_STEP_NOTES[outcome]})" if outcome in _STEP_NOTES else ""),
            )
        elif kind == "injected":
            note(
                "Caller,A",
                f"{event.get('messages')} message(s) from the inbox join the conversation",
            )
        elif kind == "tool_start":
            call(
                f"tool {event.get('call_id')}",
                "A",
                "FM",
                f"{event.get('tool')} [{event.get('call_id')}]",
            )
        elif kind == "tool_in":
            call_id = event.get("call_id")
            call(
                f"invoke {call_id}",
                "FM",
                "T",
                f"invoke {event.get('tool')}",
                f"tool {call_id}",
            )
        elif kind == "tool_out":
            ret(f"invoke {event.get('call_id')}", str(event.get("outcome", "")))
        elif kind == "tool_end":
            error = event.get("error")
            ret(
                f"tool {event.get('call_id')}",
                f"error result ({error})" if error else "result",
            )
        elif kind == "run_end":
            ret("model", "ended")
            error = event.get("error")
            usage = ""
            if (
                event.get("input_tokens") is not None
                or event.get("output_tokens") is not None
            ):
                usage = f" ({event.get('input_tokens')} in / {event.get('output_tokens')} out tokens)"
            ended = " after a limit" if limited else ""
            ret("run", f"raised {error}" if error else f"AgentResponse{ended}{usage}")
            limited = False
    while open_calls:  # the events ended mid-run: close what is open, innermost first
        ret(next(reversed(open_calls)), "ended")
    return "\n".join(lines) + "\n"


def _label(text: str) -> str:
    """Text safe in a Mermaid message: one line, no characters Mermaid reads as
    syntax."""
    cleaned = " ".join(str(text).split())
    for bad, good in ((";", ","), ("#", "No."), ("<", "‹"), (">", "›"), ("%", " pct")):
        cleaned = cleaned.replace(bad, good)
    return cleaned[:120] or "-"
