"""The flow conformance kit: what an adapter builds and what it reports
(spec/conformance.md, CF-1 .. CF-4).

The kit runs minagent's behavioural rules of the flow (spec/middleware.md, spec/loop.md,
spec/agent.md, spec/options.md, spec/sessions.md, spec/structured.md) against any
implementation of the same flow. The implementation is reached through an *adapter*: an
object with a name, the features it offers, the differences it expects, and one method,

    async def run(self, world: World) -> list[TurnResult]

which builds an agent from ``world.plan`` (a scripted model, tools, middleware at the
three layers, options, context providers, a session) in its framework's idiom, runs
every turn in ``world.stream`` mode, and reports each turn's response in the neutral
form below. Everything the flow does on the way — what the model was sent, which
middleware, tool and provider ran in which order — reaches the kit because the adapter's
model, tools, middleware and providers call the world: ``world.answer``, ``world.tool``,
``world.middleware``, ``world.provider``.

Rules
-----
1. The vocabulary is neutral: a plan says what the model answers, what a tool and a
   middleware do (pass, terminate, override the result, raise, change the arguments),
   never how a framework spells it; the adapter builds each in its own idiom (CF-1).
2. Neutral messages are plain JSON data (``message``, ``text``, ``call``, ``result``,
   ...): a result is compared as text, arguments as a dict, so frameworks are compared
   on the flow, not on their types (CF-1).
3. The world records in the order things happen: ``events`` (``A>`` a middleware
   entered, ``A<`` it left normally, ``model``, ``tool:NAME``, ``P>``/``P<`` a provider
   before/after the run) and ``requests`` (each model call's messages and options).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from types import MappingProxyType
from typing import Any, Literal, NoReturn, Protocol, runtime_checkable

__all__ = [
    "FEATURES",
    "Answer",
    "Approval",
    "Call",
    "FlowAdapter",
    "FlowFailure",
    "MiddlewareOps",
    "ModelFailure",
    "Mw",
    "Plan",
    "Provider",
    "Request",
    "ScriptExhausted",
    "Tool",
    "ToolFailure",
    "Turn",
    "TurnResult",
    "World",
    "approval_request",
    "approval_response",
    "call",
    "message",
    "result",
    "result_text",
    "text",
]

Layer = Literal["agent", "chat", "function"]
Json = Any

# What an adapter may lack; a scenario that needs a missing feature is not applicable
# (CF-2).
FEATURES: Mapping[str, str] = MappingProxyType(
    {
        "inbox": "a message put from outside the loop (a tool, another task) reaches the next model call",
        "transcript": "function middleware and tools append to the run's live transcript",
        "sessions": "a session with a local history across runs",
        "providers": "context providers (instructions, messages, tools; before and after the run)",
        "approvals": "tools that need approval, and resuming with the answer",
        "structured": "response_format given as a JSON schema, and the parsed value of the answer",
        "conversation_id": "a conversation the service keeps (a response carries a conversation id)",
    }
)


class FlowFailure(Exception):
    """Raised by a middleware whose exit is ``raise``: the run's caller must see it
    (MW-T5, LP-21)."""


class ToolFailure(RuntimeError):
    """Raised by a tool whose plan says it fails: the model must get an error result
    (LP-6)."""


class ModelFailure(RuntimeError):
    """Raised by the scripted model for an answer that fails (a failing run, SE-5)."""


class ScriptExhausted(AssertionError):
    """The model was called more often than the plan's script allows."""


# --------------------------------------------------------------------------------------------
# Neutral messages: what an adapter reports and what the kit compares


def text(value: str) -> dict[str, Json]:
    return {"type": "text", "text": value}


def call(
    call_id: str, name: str, arguments: Any = None, *, user_input_request: bool = False
) -> dict[str, Json]:
    """A function call; ``arguments`` given as a JSON string is parsed when it is a JSON
    object."""
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # not JSON: kept as the text it is
            arguments = json.loads(arguments) if arguments.strip() else {}
    out: dict[str, Json] = {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments or {},
    }
    if user_input_request:
        out["user_input_request"] = True
    return out


def result_text(value: Any) -> str:
    """A tool result as text: a str as it is, None as ``""``, anything else as compact
    JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def result(call_id: str, value: Any, *, error: bool = False) -> dict[str, Json]:
    return {
        "type": "function_result",
        "call_id": call_id,
        "result": result_text(value),
        "error": error,
    }


def approval_request(id: str, call_id: str, name: str) -> dict[str, Json]:
    """A request to approve the call ``call_id`` of ``name``; ``id`` is the request's
    own id."""
    return {
        "type": "function_approval_request",
        "id": id,
        "call_id": call_id,
        "name": name,
    }


def approval_response(id: str, approved: bool) -> dict[str, Json]:
    return {"type": "function_approval_response", "id": id, "approved": approved}


def message(role: str, contents: Sequence[Mapping[str, Json]]) -> dict[str, Json]:
    return {"role": role, "contents": [dict(c) for c in contents]}


# --------------------------------------------------------------------------------------------
# The plan: what the adapter builds


@dataclass(frozen=True)
class Call:
    """A function call the model makes. ``split``: where the streamed arguments string
    is cut."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    call_id: str = ""
    split: tuple[int, ...] = ()

    @property
    def arguments_json(self) -> str:
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True)
class Answer:
    """One model answer. ``split``: where the streamed text is cut into chunks;
    ``inject``: messages that arrive in the inbox while the model answers; ``fail``: the
    model call raises."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    split: tuple[int, ...] = ()
    usage: tuple[int, int] | None = None
    conversation_id: str | None = None
    inject: tuple[str, ...] = ()
    fail: str | None = None

    def chunks(self) -> list[dict[str, Json]]:
        """The answer as a stream carries it, in neutral chunks: ``{"text"}``,
        ``{"call_id", "name", "arguments"}`` (a continuation has ``call_id`` and
        ``name`` None), ``{"usage"}``. The adapter turns each chunk into one update; a
        ``conversation_id`` goes on every chunk."""
        out: list[dict[str, Json]] = [
            {"text": piece} for piece in _cut(self.text, self.split) if piece
        ]
        for c in self.calls:
            for i, piece in enumerate(_cut(c.arguments_json, c.split)):
                first = i == 0
                out.append(
                    {
                        "call_id": c.call_id if first else None,
                        "name": c.name if first else None,
                        "arguments": piece,
                    }
                )
        if self.usage is not None:
            out.append({"usage": self.usage})
        return out


def _cut(value: str, at: tuple[int, ...]) -> list[str]:
    points = [0, *sorted({p for p in at if 0 < p < len(value)}), len(value)]
    return [value[a:b] for a, b in pairwise(points)] or [value]


@dataclass(frozen=True)
class Tool:
    """A tool. It returns ``results`` in turn (cycling), or raises `ToolFailure` when
    ``fail`` is set; ``append`` adds a user message to the live transcript, ``inject``
    puts one into the inbox; ``wait_for`` waits until the named tool has started (so it
    finishes last when both run concurrently). ``schema``: its parameters (default: an
    object with no properties)."""

    name: str
    results: tuple[str, ...] = ("ok",)
    fail: str | None = None
    schema: Mapping[str, Any] | None = None
    declaration_only: bool = False
    approval: bool = False
    append: str | None = None
    inject: str | None = None
    wait_for: str | None = None

    @property
    def parameters(self) -> dict[str, Any]:
        return (
            json.loads(json.dumps(dict(self.schema)))
            if self.schema
            else {"type": "object", "properties": {}}
        )


@dataclass(frozen=True)
class Mw:
    """A middleware, by what it does (spec/middleware.md, the control-flow table): enter
    (event ``NAME>``), make its changes, call ``call_next`` ``calls`` times, then leave
    by ``exit``:
    ``return`` (event ``NAME<``), ``terminate`` (the framework's termination, with
    ``term_result`` when given) or ``raise`` (`FlowFailure`). ``result`` is set before
    or after ``call_next`` (``when``): a response with that text in the agent and chat
    layers, that value in the function layer. ``option`` sets a run option (agent) or
    this call's option (chat); ``add_message`` adds a user message to this model call's
    messages (chat); ``arguments`` replaces the arguments and ``append`` appends to the
    live transcript (function); with ``only`` a function middleware acts on calls of
    that tool only and passes the others through without a trace."""

    name: str
    layer: Layer
    exit: Literal["return", "terminate", "raise"] = "return"
    calls: int = 1
    result: str | None = None
    when: Literal["before", "after"] = "after"
    term_result: str | None = None
    option: tuple[str, Any] | None = None
    add_message: str | None = None
    arguments: Mapping[str, Any] | None = None
    append: str | None = None
    only: str | None = None


@dataclass(frozen=True)
class Provider:
    """A context provider: before the run it adds instructions, user messages and
    tools."""

    name: str
    instructions: str | None = None
    messages: tuple[str, ...] = ()
    tools: tuple[Tool, ...] = ()


@dataclass(frozen=True)
class Approval:
    """The caller's answer to an approval request of the previous turn."""

    call_id: str
    approved: bool


@dataclass(frozen=True)
class Turn:
    """One run: its input (texts are user messages), run options, run-level tools and
    middleware."""

    input: tuple[str | Approval, ...] = ("go",)
    options: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[Tool, ...] = ()
    middleware: tuple[Mw, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The agent to build and the runs to make. ``config`` holds the loop's
    configuration (spec/loop.md LP-1 names); ``options`` the agent's default options;
    with ``session`` every turn runs on one session with a local history."""

    script: tuple[Answer, ...]
    turns: tuple[Turn, ...] = (Turn(),)
    tools: tuple[Tool, ...] = ()
    middleware: tuple[Mw, ...] = ()
    instructions: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    providers: tuple[Provider, ...] = ()
    session: bool = False


# --------------------------------------------------------------------------------------------
# What the adapter reports


@dataclass
class TurnResult:
    """One run's outcome, neutral: the response's messages (None when the run raised),
    the error, the updates the consumer saw (streaming), usage ``(input, output)``, the
    parsed structured value, and the session's stored history after the run (with
    ``plan.session``)."""

    messages: list[dict[str, Json]] | None = None
    error: BaseException | None = None
    updates: list[dict[str, Json]] = field(default_factory=list)
    usage: tuple[int | None, int | None] | None = None
    value: Any = None
    history: list[dict[str, Json]] | None = None


@dataclass
class Request:
    """One model call: its messages and options, neutral (options keys: ``tool_choice``
    as its mode string or None, ``tools`` as names, ``instructions``, ``temperature``,
    ``metadata``, ``response_format`` as True when set, ``conversation_id``; a key only
    when set)."""

    messages: list[dict[str, Json]]
    options: dict[str, Json]


class MiddlewareOps(Protocol):
    """What `World.middleware` asks of one middleware's context, written by the
    adapter."""

    # agent/chat: a response with this text; function: the value
    def set_result(self, text: str) -> None: ...

    # raise the termination (its result: as set_result)
    def terminate(self, result: str | None) -> NoReturn: ...

    def set_option(self, key: str, value: Any) -> None: ...

    def add_message(self, text: str) -> None: ...

    def set_arguments(self, arguments: Mapping[str, Any]) -> None: ...

    def append(self, text: str) -> None: ...


@runtime_checkable
class FlowAdapter(Protocol):
    """An implementation of the flow, as the kit drives it (CF-1).

    ``features``: what of `FEATURES` it offers; ``expected``: rule ID -> why it differs
    (the decision of spec/decisions.md that explains it); ``notes``: feature -> why it
    is missing."""

    name: str
    features: frozenset[str]
    expected: Mapping[str, str]

    async def run(self, world: World) -> list[TurnResult]: ...


# --------------------------------------------------------------------------------------------
# The world: what one run of a scenario shares with the adapter


class World:
    """The plan, the mode, and the record of one run of a scenario (rule 3)."""

    def __init__(self, plan: Plan, *, stream: bool) -> None:
        self.plan = plan
        self.stream = stream
        self.requests: list[Request] = []
        self.events: list[str] = []
        self.results: list[TurnResult] = []
        # each tool invocation's arguments
        self.arguments: list[tuple[str, dict[str, Any]]] = []
        self.created: list[int] = []  # len(events) when each streaming run was created
        self._position = 0
        self._inbox: Callable[[str], None] | None = None
        self._invocations: dict[str, int] = {}
        self._started: set[str] = set()
        tools = [*plan.tools, *(t for turn in plan.turns for t in turn.tools)]
        tools += [t for p in plan.providers for t in p.tools]
        self.tools: dict[str, Tool] = {t.name: t for t in tools}

    # -- the model -------------------------------------------------------------------------

    def answer(
        self, messages: Sequence[Mapping[str, Json]], options: Mapping[str, Json]
    ) -> Answer:
        """The scripted model: record the request, take the next answer (its injections
        arrive now)."""
        self.requests.append(Request([dict(m) for m in messages], dict(options)))
        self.events.append("model")
        if self._position >= len(self.plan.script):
            raise ScriptExhausted(f"model call {self._position + 1} was not scripted")
        answer = self.plan.script[self._position]
        self._position += 1
        for item in answer.inject:
            self.inject(item)
        if answer.fail is not None:
            raise ModelFailure(answer.fail)
        return answer

    # -- the inbox -------------------------------------------------------------------------

    def bind_inbox(self, put: Callable[[str], None] | None) -> None:
        """The adapter's way to put a user message into the current run's inbox."""
        self._inbox = put

    def inject(self, item: str) -> None:
        if self._inbox is None:
            raise RuntimeError(
                "the plan injects a message but the adapter bound no inbox"
            )
        self._inbox(item)

    # -- tools -----------------------------------------------------------------------------

    async def tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        append: Callable[[str], None] | None = None,
    ) -> str:
        """Run the plan's tool ``name``: record ``tool:NAME``, do what it does, return
        its result."""
        spec = self.tools.get(name)
        if spec is None:
            raise KeyError(
                f"the plan has no tool {name!r}; it has {sorted(self.tools)}"
            )
        self.events.append(f"tool:{name}")
        self.arguments.append((name, dict(arguments)))
        self._started.add(name)
        count = self._invocations.get(name, 0)
        self._invocations[name] = count + 1
        if spec.wait_for is not None:
            for _ in range(200):
                if spec.wait_for in self._started:
                    break
                await asyncio.sleep(0.005)
            else:
                return f"{spec.wait_for} did not start while {name} ran"
        if spec.append is not None:
            if append is None:
                raise RuntimeError(
                    "the tool appends to the transcript but the adapter gave no way to"
                )
            append(spec.append)
        if spec.inject is not None:
            self.inject(spec.inject)
        if spec.fail is not None:
            raise ToolFailure(spec.fail)
        return spec.results[count % len(spec.results)]

    # -- middleware and providers ------------------------------------------------------------

    async def middleware(
        self,
        mw: Mw,
        ops: MiddlewareOps,
        call_next: Callable[[], Awaitable[None]],
        *,
        tool: str | None = None,
    ) -> None:
        """What ``mw`` does, through the adapter's ``ops`` on its context (the class
        docstring of `Mw`); a function middleware's adapter passes the called tool's
        name as ``tool``."""
        if mw.only is not None and tool != mw.only:
            await call_next()
            return
        self.events.append(f"{mw.name}>")
        if mw.option is not None:
            ops.set_option(*mw.option)
        if mw.add_message is not None:
            ops.add_message(mw.add_message)
        if mw.arguments is not None:
            ops.set_arguments(mw.arguments)
        if mw.append is not None:
            ops.append(mw.append)
        if mw.result is not None and mw.when == "before":
            ops.set_result(mw.result)
        for _ in range(mw.calls):
            await call_next()
        if mw.result is not None and mw.when == "after":
            ops.set_result(mw.result)
        if mw.exit == "raise":
            raise FlowFailure(f"raised by {mw.name}")
        if mw.exit == "terminate":
            ops.terminate(mw.term_result)
        self.events.append(f"{mw.name}<")

    def provider(self, provider: Provider, when: Literal["before", "after"]) -> None:
        self.events.append(f"{provider.name}{'>' if when == 'before' else '<'}")

    def stream_created(self) -> None:
        """Call right after ``run(..., stream=True)`` returned, before using the stream
        (AG-3)."""
        self.created.append(len(self.events))

    # -- reading the record ------------------------------------------------------------------

    @property
    def last(self) -> TurnResult:
        return (
            self.results[-1]
            if self.results
            else TurnResult(error=RuntimeError("the adapter reported no turn"))
        )
