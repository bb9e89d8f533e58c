"""The flow kit's agent scenarios (spec/agent.md AG-3 .. AG-6; spec/options.md OP-1,
OP-4 .. OP-6; spec/sessions.md SE-3, SE-5, SE-6; spec/threads.md TH-1;
spec/structured.md SO-7 .. SO-9; spec/loop.md LP-2, LP-15 .. LP-19; spec/conformance.md
CF-3).

Options merging, context providers, sessions, structured output, streaming (laziness,
what a stream yields, random chunkings) and what is added to a run while it runs (the
live transcript, the inbox, an answer the inbox interrupts).

Rules
-----
1. Options are read from what the model received (``world.requests``), never from the
   agent.
2. Streaming-only checks run in streaming mode only; everything else in both.
"""

from __future__ import annotations

import json
from typing import Any

from .flow import Answer, Call, Mw, Plan, Provider, Tool, Turn, World, message
from .flow_loop import GO, answered, asked, said, user
from .flow_run import Draw, Expect, Scenario

__all__ = ["SCHEMA", "chunkings", "scenarios"]

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
F = Tool("f", results=("r",))
ROUND = (Answer(calls=(Call("f", call_id="c1"),)), Answer("done"))
DONE = [asked(("c1", "f")), answered(("c1", "r", False)), said("done")]


def _sent(world: World, index: int = 0) -> dict[str, Any]:
    return world.requests[index].options if len(world.requests) > index else {}


def _messages(world: World, index: int) -> Any:
    return world.requests[index].messages if len(world.requests) > index else None


def _options() -> list[Scenario]:
    """AG-5, OP-1, OP-4 .. OP-6: the agent's defaults, then the run's options."""
    merge = Plan(
        script=(Answer("a"),),
        instructions="agent",
        options={"temperature": 0.1, "metadata": {"a": 1}},
        tools=(Tool("t1"),),
        turns=(
            Turn(
                options={
                    "instructions": "run",
                    "metadata": {"b": 2},
                    "temperature": 0.3,
                },
                tools=(Tool("t2"),),
            ),
        ),
    )

    def merged(world: World, expect: Expect) -> None:
        options = _sent(world)
        expect.equal("OP-4", "instructions", options.get("instructions"), "agent\nrun")
        expect.equal("OP-5", "metadata", options.get("metadata"), {"a": 1, "b": 2})
        expect.equal("OP-6", "temperature", options.get("temperature"), 0.3)
        expect.equal("AG-5", "tools", options.get("tools"), ["t1", "t2"])
        expect.equal("AG-5", "tool_choice", options.get("tool_choice"), "auto")

    keep = Plan(
        script=(Answer("a"),),
        options={"temperature": 0.1},
        turns=(Turn(options={"temperature": None}),),
    )

    def kept(world: World, expect: Expect) -> None:
        expect.equal("OP-1", "temperature", _sent(world).get("temperature"), 0.1)

    changed = Plan(
        script=(Answer("a"),),
        middleware=(Mw("A", "agent", option=("temperature", 0.5)),),
    )

    def by_middleware(world: World, expect: Expect) -> None:
        expect.equal("AG-4", "temperature", _sent(world).get("temperature"), 0.5)

    providers = Plan(
        script=(Answer("a"),),
        instructions="agent",
        tools=(Tool("t1"),),
        providers=(
            Provider(
                "P1",
                instructions="provider",
                messages=("from P1",),
                tools=(Tool("t2"),),
            ),
            Provider("P2"),
        ),
        turns=(Turn(options={"instructions": "run"}, tools=(Tool("t3"),)),),
    )

    def provided(world: World, expect: Expect) -> None:
        options = _sent(world)
        expect.equal(
            "AG-5", "instructions", options.get("instructions"), "agent\nprovider\nrun"
        )
        expect.equal("AG-5", "tools", options.get("tools"), ["t1", "t2", "t3"])
        expect.equal(
            "AG-5", "the messages sent", _messages(world, 0), [user("from P1"), GO]
        )
        expect.equal(
            "SE-3",
            "the providers' order",
            world.events,
            ["P1>", "P2>", "model", "P2<", "P1<"],
        )

    return [
        Scenario(
            "AG-5 options: agent defaults, then the run's",
            merge,
            ("AG-5", "OP-4", "OP-5", "OP-6"),
            merged,
        ),
        Scenario("OP-1 a run option None keeps the default", keep, ("OP-1",), kept),
        Scenario(
            "AG-4 agent middleware changes the run's options",
            changed,
            ("AG-4",),
            by_middleware,
        ),
        Scenario(
            "AG-5 with context providers",
            providers,
            ("AG-5", "SE-3"),
            provided,
            frozenset({"providers"}),
        ),
    ]


def _sessions() -> list[Scenario]:
    """TH-1, SE-5, SE-6: a session's local history."""
    two = Plan(
        script=(*ROUND, Answer("a2")),
        tools=(F,),
        session=True,
        turns=(Turn(input=("go",)), Turn(input=("again",))),
    )

    def history(world: World, expect: Expect) -> None:
        expect.equal(
            "TH-1",
            "what the second run sent",
            _messages(world, 2),
            [GO, *DONE, user("again")],
        )
        stored = world.results[-1].history if world.results else None
        expect.equal(
            "SE-6",
            "the history after two runs",
            stored,
            [GO, *DONE, user("again"), said("a2")],
        )

    failing = Plan(
        script=(Answer("a1"), Answer(fail="down"), Answer("a3")),
        session=True,
        turns=(Turn(input=("one",)), Turn(input=("two",)), Turn(input=("three",))),
    )

    def unchanged(world: World, expect: Expect) -> None:
        results = world.results
        expect.true(
            "SE-5",
            "the second run failed",
            len(results) > 1 and results[1].error is not None,
            len(results),
        )
        before, after = (
            (results[0].history, results[1].history)
            if len(results) > 1
            else (None, "missing")
        )
        expect.equal("SE-5", "the history after the failed run", after, before)
        expect.equal(
            "SE-5",
            "what the third run sent",
            _messages(world, 2),
            [user("one"), said("a1"), user("three")],
        )

    return [
        Scenario(
            "TH-1 two runs on one session",
            two,
            ("TH-1", "SE-6"),
            history,
            frozenset({"sessions"}),
        ),
        Scenario(
            "SE-5 a failed run leaves the history",
            failing,
            ("SE-5",),
            unchanged,
            frozenset({"sessions"}),
        ),
    ]


def _added() -> list[Scenario]:
    """LP-15 .. LP-17 (design decisions 2, 3, 14): what reaches the conversation while a
    run runs."""
    note = [
        asked(("c1", "f")),
        answered(("c1", "r", False)),
        user("note"),
        said("done"),
    ]

    def durable(rule: str) -> Any:
        def check(world: World, expect: Expect) -> None:
            expect.equal(
                rule,
                "what the next call received",
                _messages(world, 1),
                [GO, *note[:3]],
            )
            expect.response(rule, world, note)

        return check

    def steered(world: World, expect: Expect) -> None:
        expect.equal("LP-17", "model calls", len(world.requests), 2)
        expect.response("LP-17", world, [said("a1"), user("more"), said("a2")])

    def stored(world: World, expect: Expect) -> None:
        expect.equal("TH-1", "the history", world.last.history, [GO, *note])

    tool_appends = Plan(script=ROUND, tools=(Tool("f", results=("r",), append="note"),))
    middleware_appends = Plan(
        script=ROUND, tools=(F,), middleware=(Mw("M", "function", append="note"),)
    )
    injects = Plan(script=ROUND, tools=(Tool("f", results=("r",), inject="note"),))
    inbox, transcript, sessions = (
        frozenset({"inbox"}),
        frozenset({"transcript"}),
        frozenset({"inbox", "sessions"}),
    )
    interrupted = Plan(script=(Answer("a1", inject=("more",)), Answer("a2")))
    kept = Plan(
        script=ROUND, tools=(Tool("f", results=("r",), inject="note"),), session=True
    )
    return [
        Scenario(
            "LP-15 a tool appends to the transcript",
            tool_appends,
            ("LP-15",),
            durable("LP-15"),
            transcript,
        ),
        Scenario(
            "LP-15 function middleware appends",
            middleware_appends,
            ("LP-15",),
            durable("LP-15"),
            transcript,
        ),
        Scenario(
            "LP-16 a tool puts a message into the inbox",
            injects,
            ("LP-16",),
            durable("LP-16"),
            inbox,
        ),
        Scenario(
            "LP-17 a message arrives with the answer",
            interrupted,
            ("LP-17",),
            steered,
            inbox,
        ),
        Scenario(
            "TH-1 the history keeps an injected message",
            kept,
            ("TH-1",),
            stored,
            sessions,
        ),
    ]


def _across_calls() -> list[Scenario]:
    """LP-18 usage summed, LP-19 a conversation the service keeps."""
    usage = Plan(
        script=(
            Answer(calls=(Call("f", call_id="c1"),), usage=(5, 1)),
            Answer("done", usage=(7, 2)),
        ),
        tools=(F,),
    )

    def summed(world: World, expect: Expect) -> None:
        expect.equal("LP-18", "the response's usage", world.last.usage, (12, 3))

    service = Plan(
        script=(
            Answer(calls=(Call("f", call_id="c1"),), conversation_id="conv1"),
            Answer("done", conversation_id="conv1"),
        ),
        tools=(F,),
    )

    def continued(world: World, expect: Expect) -> None:
        expect.equal(
            "LP-19",
            "the next call's conversation_id",
            _sent(world, 1).get("conversation_id"),
            "conv1",
        )
        expect.equal(
            "LP-19",
            "what the next call received",
            _messages(world, 1),
            [answered(("c1", "r", False))],
        )

    return [
        Scenario("LP-18 usage over two calls", usage, ("LP-18",), summed),
        Scenario(
            "LP-19 a conversation id",
            service,
            ("LP-19",),
            continued,
            frozenset({"conversation_id"}),
        ),
    ]


def _structured() -> list[Scenario]:
    """SO-7 .. SO-9: a JSON schema as response_format."""
    plain = Plan(
        script=(Answer('{"n": 1}'),), turns=(Turn(options={"response_format": SCHEMA}),)
    )
    tools = Plan(
        script=(ROUND[0], Answer('{"n": 2}')),
        tools=(F,),
        turns=(Turn(options={"response_format": SCHEMA}),),
    )

    def parsed(world: World, expect: Expect) -> None:
        expect.equal(
            "SO-7",
            "the model received a response_format",
            _sent(world).get("response_format"),
            True,
        )
        expect.equal("SO-9", "the response's value", world.last.value, {"n": 1})

    def with_tools(world: World, expect: Expect) -> None:
        formats = [r.options.get("response_format") for r in world.requests]
        expect.equal("SO-8", "every call received the format", formats, [True, True])
        expect.equal("SO-9", "the response's value", world.last.value, {"n": 2})

    needs = frozenset({"structured"})
    return [
        Scenario("SO-7 a JSON schema", plain, ("SO-7", "SO-9"), parsed, needs),
        Scenario(
            "SO-8 a JSON schema with tools", tools, ("SO-8", "SO-9"), with_tools, needs
        ),
    ]


def _streaming() -> list[Scenario]:
    """AG-3 laziness; LP-2 what a stream yields (streaming only, rule 2)."""
    lazy = Plan(script=(Answer("a"),), middleware=(Mw("A", "agent"), Mw("C", "chat")))

    def nothing_before(world: World, expect: Expect) -> None:
        expect.equal("AG-3", "events before the stream was used", world.created, [0])

    chunked = Plan(script=(ROUND[0], Answer("hello world", split=(3, 6))), tools=(F,))

    def yielded(world: World, expect: Expect) -> None:
        updates = world.last.updates
        tools = [u for u in updates if u["role"] == "tool"]
        expect.equal(
            "LP-2", "one tool update per batch", tools, [answered(("c1", "r", False))]
        )
        texts = [
            c["text"] for u in updates for c in u["contents"] if c["type"] == "text"
        ]
        expect.equal(
            "LP-2", "every chunk as it arrived", texts, ["hel", "lo ", "world"]
        )

    return [
        Scenario(
            "AG-3 streaming is lazy", lazy, ("AG-3",), nothing_before, modes=(True,)
        ),
        Scenario(
            "LP-2 what a stream yields", chunked, ("LP-2",), yielded, modes=(True,)
        ),
    ]


def scenarios() -> list[Scenario]:
    return [
        *_options(),
        *_sessions(),
        *_added(),
        *_across_calls(),
        *_structured(),
        *_streaming(),
    ]


# --------------------------------------------------------------------------------------------
# Generated: random chunkings


def chunkings(draw: Draw, name: str) -> Scenario:
    """A call whose arguments and an answer whose text arrive split at random points:
    both modes give the same response, and a stream yields every text chunk as it came
    (LP-2)."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    phrase = " ".join(draw.choice(words) for _ in range(draw.integer(2, 5)))
    arguments = {"q": phrase, "k": draw.integer(0, 99)}
    encoded = json.dumps(arguments)
    cuts = tuple(
        sorted({draw.integer(1, len(encoded) - 1) for _ in range(draw.integer(0, 4))})
    )
    answer = f"{draw.choice(words)} {phrase}."
    splits = tuple(
        sorted({draw.integer(1, len(answer) - 1) for _ in range(draw.integer(0, 5))})
    )
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "k": {"type": "integer"}},
    }
    plan = Plan(
        script=(
            Answer(calls=(Call("f", arguments, "c1", split=cuts),)),
            Answer(answer, split=splits),
        ),
        tools=(Tool("f", results=("r",), schema=schema),),
    )
    pieces = Answer(answer, split=splits).chunks()

    def check(world: World, expect: Expect) -> None:
        expected = [
            message(
                "assistant",
                [
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "f",
                        "arguments": arguments,
                    }
                ],
            ),
            answered(("c1", "r", False)),
            said(answer),
        ]
        expect.response("LP-2", world, expected)
        expect.equal(
            "LP-2",
            "the arguments the tool received",
            world.arguments,
            [("f", arguments)],
        )
        if world.stream:
            texts = [
                c["text"]
                for u in world.last.updates
                for c in u["contents"]
                if c["type"] == "text"
            ]
            expect.equal(
                "LP-2",
                "every text chunk as it arrived",
                texts,
                [p["text"] for p in pieces],
            )

    return Scenario(
        f"{name} (arguments cut at {list(cuts)}, text at {list(splits)})",
        plan,
        ("LP-2",),
        check,
    )
