"""The pipeline executor, checked against the control-flow table of spec/middleware.md.

The expectations of the property tests are derived from the table itself (parsed below),
so a change to the table that the code does not follow fails here, and the other way
round.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentMiddleware,
    AgentResponse,
    AgentSession,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    ContentError,
    FunctionInvocationContext,
    FunctionMiddleware,
    Message,
    MiddlewareException,
    MiddlewareTermination,
    ResponseStream,
    agent_middleware,
    categorize_middleware,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent._middleware import (
    AgentContext,
    ChatContext,
    middleware_layer,
    run_pipeline,
)
from minagent.testing import (
    ScriptedChatClient,
    call,
    reply,
)
from tests._support.modes import get_response, run

SPEC = Path(__file__).resolve().parents[2] / "spec" / "middleware.md"


@dataclass(frozen=True)
class Row:
    rule: str
    exit: str  # return | terminate | raise
    calls: int
    downstream: str
    upstream_continues: bool
    result: tuple[str, ...]  # terms tried in order; ("exception",) means it propagates


def _read_table() -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for line in SPEC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.fullmatch(r"MW-T\d+", cells[0]):
            rule, exit_, calls, downstream, upstream, result = cells
            rows[rule] = Row(
                rule,
                exit_,
                int(calls),
                downstream,
                upstream == "yes",
                tuple(result.split(" or ")),
            )
    return rows


TABLE = _read_table()

# The behaviours a generated middleware can have, and the table row each one exercises.
BEHAVIOURS: dict[str, tuple[str, bool, bool]] = {
    # name: (row, sets context.result before exiting, termination carries a result)
    "pass": ("MW-T1", False, False),
    "return_without": ("MW-T2", False, False),
    "set_and_return": ("MW-T2", True, False),
    "terminate_before": ("MW-T3", False, True),
    "terminate_before_bare": ("MW-T3", False, False),
    "set_and_terminate": ("MW-T3", True, True),
    "terminate_after": ("MW-T4", False, True),
    "raise_before": ("MW-T5", False, False),
    "raise_after": ("MW-T6", False, False),
    "twice": ("MW-T7", False, False),
}


class Boom(Exception):
    pass


def test_table_is_well_formed() -> None:
    """MW-T1, MW-T2, MW-T3, MW-T4, MW-T5, MW-T6, MW-T7: the table has every row, and its
    columns agree."""
    assert sorted(TABLE) == [f"MW-T{i}" for i in range(1, 8)]
    for row in TABLE.values():
        assert row.downstream.startswith("yes") == (row.calls > 0), row
        assert ("twice" in row.downstream) == (row.calls == 2), row
        assert row.upstream_continues == (row.exit == "return"), row
        assert (row.result == ("exception",)) == (row.exit == "raise"), row


# --------------------------------------------------------------------------------------------
# The model: what the table predicts for a chain of behaviours.


@dataclass
class Prediction:
    events: list[str]
    text: str | None  # final result's text; None = the layer's empty result
    raises: int | None  # index of the middleware whose exception propagates
    terminated: bool


def predict(chain: list[str]) -> Prediction:
    events: list[str] = []
    state: dict[str, Any] = {"result": None, "ops": 0}

    def run(i: int) -> tuple[Row, str, Any] | None:
        """Run middleware i; return None for a normal exit, else the row that unwinds
        and its payload."""
        if i == len(chain):
            state["ops"] += 1
            events.append(f"op{state['ops']}")
            state["result"] = f"op{state['ops']}"
            return None
        row_id, sets, carries = BEHAVIOURS[chain[i]]
        row = TABLE[row_id]
        events.append(f"{i}:before")
        if sets:
            state["result"] = f"set{i}"
        for _ in range(row.calls):
            unwinding = run(i + 1)
            if unwinding is not None:
                return unwinding
        if row.upstream_continues:
            events.append(f"{i}:after")
            return None
        return (row, chain[i], f"term{i}" if carries else i)

    unwinding = run(0) if chain else None
    if not chain:
        return Prediction(["op1"], "op1", None, False)
    if unwinding is None:
        outer = TABLE[BEHAVIOURS[chain[0]][0]]
        return Prediction(
            events, _resolve(outer.result, state["result"], None), None, False
        )
    row, _name, payload = unwinding
    if row.result == ("exception",):
        return Prediction(events, None, payload, False)
    exc_result = payload if isinstance(payload, str) else None
    return Prediction(
        events, _resolve(row.result, state["result"], exc_result), None, True
    )


def _resolve(
    terms: tuple[str, ...], context_result: str | None, exception_result: str | None
) -> str | None:
    for term in terms:
        if term == "context.result" and context_result is not None:
            return context_result
        if term == "exception.result" and exception_result is not None:
            return exception_result
        if term == "empty":
            return None
    return context_result


# --------------------------------------------------------------------------------------------
# The real thing: build middleware with those behaviours and run them through
# run_pipeline.


def _value(layer: str, stream: bool, text: str, log: list[str]) -> Any:
    if layer == "function":
        return text
    kind = AgentResponse if layer == "agent" else ChatResponse
    if not stream:
        return kind([Message("assistant", [text])])

    async def updates() -> AsyncIterator[ChatResponseUpdate]:
        log.append(f"update:{text}")
        yield ChatResponseUpdate([text], "assistant")

    return ResponseStream(updates(), finalizer=kind.from_updates)


def build(chain: list[str], layer: str, stream: bool, log: list[str]) -> list[Any]:
    def make(i: int, behaviour: str) -> Any:
        async def mw(context: Any, call_next: Any) -> None:
            log.append(f"{i}:before")
            if behaviour == "set_and_return":
                context.result = _value(layer, stream, f"set{i}", log)
            elif behaviour == "terminate_before":
                raise MiddlewareTermination(
                    result=_value(layer, stream, f"term{i}", log)
                )
            elif behaviour == "set_and_terminate":
                context.result = _value(layer, stream, f"set{i}", log)
                raise MiddlewareTermination(
                    result=_value(layer, stream, f"term{i}", log)
                )
            elif behaviour == "terminate_before_bare":
                raise MiddlewareTermination()
            elif behaviour == "raise_before":
                raise Boom(i)
            elif behaviour in ("pass", "terminate_after", "raise_after"):
                await (call_next(context) if i % 2 else call_next())
            elif behaviour == "twice":
                await call_next()
                await call_next()
            if behaviour == "terminate_after":
                raise MiddlewareTermination(
                    result=_value(layer, stream, f"term{i}", log)
                )
            if behaviour == "raise_after":
                raise Boom(i)
            log.append(f"{i}:after")

        return mw

    return [make(i, b) for i, b in enumerate(chain)]


def make_context(layer: str, stream: bool) -> Any:
    if layer == "agent":
        return AgentContext(agent=None, messages=[], stream=stream)
    if layer == "chat":
        return ChatContext(client=None, messages=[], stream=stream)
    return FunctionInvocationContext(function=None, arguments={})  # type: ignore[arg-type]


async def observe(chain: list[str], layer: str, stream: bool) -> Prediction:
    log: list[str] = []
    ops = 0

    async def handler(context: Any) -> Any:
        nonlocal ops
        ops += 1
        log.append(f"op{ops}")
        return _value(layer, stream, f"op{ops}", log)

    context = make_context(layer, stream)
    try:
        result = await run_pipeline(build(chain, layer, stream, log), context, handler)
    except Boom as exc:
        return Prediction(log, None, exc.args[0], False)
    assert result is context.result
    events = list(log)
    if stream:
        assert isinstance(result, ResponseStream)
        final = await result.get_final_response()
        text = final.text or None
        # MW-9: nothing was streamed while the pipeline ran; only the result's updates
        # afterwards.
        assert all(not e.startswith("update:") for e in events)
        assert log[len(events) :] == ([f"update:{text}"] if text else [])
    elif layer == "function":
        text = result
    else:
        assert isinstance(result, AgentResponse if layer == "agent" else ChatResponse)
        text = result.text or None
    return Prediction(events, text, None, getattr(context, "terminated", False))


chains = st.lists(st.sampled_from(sorted(BEHAVIOURS)), min_size=0, max_size=6)
modes = st.sampled_from(
    [
        ("agent", False),
        ("agent", True),
        ("chat", False),
        ("chat", True),
        ("function", False),
    ]
)


@settings(max_examples=300, deadline=None)
@given(chain=chains, mode=modes)
def test_random_chains_follow_the_table(
    chain: list[str], mode: tuple[str, bool]
) -> None:
    """MW-4, MW-5, MW-6, MW-7, MW-8, MW-T1, MW-T2, MW-T3, MW-T4, MW-T5, MW-T6, MW-T7:
    any chain of 0-6 middleware, in every layer and mode, produces the event log and
    result the table predicts."""
    layer, stream = mode
    observed = asyncio.run(observe(chain, layer, stream))
    expected = predict(chain)
    if layer != "function":
        # only the function context records termination (MW-8)
        expected.terminated = False
    assert observed == expected


@pytest.mark.parametrize("layer", ["agent", "chat"])
def test_empty_result_is_a_response_of_the_layer(layer: str, stream: bool) -> None:
    """MW-7: a middleware that neither calls call_next nor sets a result yields an empty
    response."""

    async def skip(context: Any, call_next: Any) -> None:
        return None

    async def handler(context: Any) -> Any:
        raise AssertionError("the operation must not run")

    async def main() -> Any:
        result = await run_pipeline([skip], make_context(layer, stream), handler)
        if stream:
            assert isinstance(result, ResponseStream)
            assert [u async for u in result] == []
            result = await result.get_final_response()
        return result

    result = asyncio.run(main())
    assert result == (AgentResponse() if layer == "agent" else ChatResponse())


# --------------------------------------------------------------------------------------------
# The seed's worked example, verbatim.


class MiddlewareA(AgentMiddleware):
    def __init__(self, out: list[str]) -> None:
        self.out = out

    async def process(self, context: AgentContext, call_next: Any) -> None:
        self.out.append("A: before")
        await call_next(context)
        self.out.append("A: after")


class MiddlewareB(AgentMiddleware):
    def __init__(self, out: list[str], terminate: bool) -> None:
        self.out, self.terminate = out, terminate

    async def process(self, context: AgentContext, call_next: Any) -> None:
        self.out.append("B: before")
        context.result = "early result"
        if self.terminate:
            raise MiddlewareTermination()
        return


@pytest.mark.parametrize(
    ("terminate", "expected"),
    [
        (False, ["A: before", "B: before", "A: after"]),
        (True, ["A: before", "B: before"]),
    ],
)
async def test_seed_worked_example(terminate: bool, expected: list[str]) -> None:
    """MW-6, MW-T2, MW-T3: [MiddlewareA, MiddlewareB] with return vs raise
    MiddlewareTermination."""
    out: list[str] = []
    mws = categorize_middleware([MiddlewareA(out), MiddlewareB(out, terminate)]).agent

    async def handler(context: Any) -> Any:
        out.append("handler")
        return "real"

    result = await run_pipeline(mws, AgentContext(agent=None, messages=[]), handler)
    assert out == expected
    assert result == "early result"


# --------------------------------------------------------------------------------------------
# Details of the executor.


async def test_call_next_rejects_a_foreign_context() -> None:
    """MW-1: call_next(context) takes the same context; another object is a clear
    error."""

    async def mw(context: Any, call_next: Any) -> None:
        await call_next(ChatContext(client=None, messages=[]))

    with pytest.raises(MiddlewareException, match="call_next"):
        await run_pipeline([mw], ChatContext(client=None, messages=[]), _echo)


async def _echo(context: Any) -> Any:
    return ChatResponse([Message("assistant", ["ok"])])


async def test_metadata_is_shared_and_mutations_reach_the_operation() -> None:
    """MW-11: metadata is shared along one pipeline run; changes before call_next reach
    the operation."""
    seen: dict[str, Any] = {}

    async def outer(context: ChatContext, call_next: Any) -> None:
        context.metadata["who"] = "outer"
        context.options["temperature"] = 0.1
        context.messages.append(Message("system", ["injected"]))
        await call_next()

    async def inner(context: ChatContext, call_next: Any) -> None:
        seen["who"] = context.metadata["who"]
        await call_next()
        seen["result"] = context.result

    async def handler(context: ChatContext) -> ChatResponse:
        seen["options"] = dict(context.options)
        seen["messages"] = [m.text for m in context.messages]
        return ChatResponse([Message("assistant", ["done"])])

    result = await run_pipeline(
        [outer, inner],
        ChatContext(client=None, messages=[Message("user", ["hi"])]),
        handler,
    )
    assert seen["who"] == "outer"
    assert seen["options"] == {"temperature": 0.1}
    assert seen["messages"] == ["hi", "injected"]
    assert seen["result"] is result


async def test_retry_middleware_reruns_the_rest() -> None:
    """MW-5: a retry middleware calls call_next again after a failure; the second result
    wins."""
    attempts = 0

    async def handler(context: Any) -> Any:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("flaky")
        return ChatResponse([Message("assistant", [f"attempt {attempts}"])])

    async def retry(context: Any, call_next: Any) -> None:
        for _ in range(3):
            try:
                await call_next()
                return
            except ConnectionError:
                continue

    result = await run_pipeline([retry], ChatContext(client=None, messages=[]), handler)
    assert (attempts, result.text) == (2, "attempt 2")


async def test_other_exceptions_propagate_unchanged() -> None:
    """MW-6, MW-T5: an exception other than MiddlewareTermination reaches the caller as
    it was raised."""
    error = KeyError("x")

    async def mw(context: Any, call_next: Any) -> None:
        raise error

    with pytest.raises(KeyError) as info:
        await run_pipeline(
            [mw], FunctionInvocationContext(function=None, arguments={}), _echo
        )  # type: ignore[arg-type]
    assert info.value is error


async def test_function_termination_is_visible() -> None:
    """MW-8: termination in function middleware marks the context so the loop can
    stop."""

    async def stop(context: FunctionInvocationContext, call_next: Any) -> None:
        context.result = "blocked"
        raise MiddlewareTermination("policy")

    ctx = FunctionInvocationContext(function=None, arguments={})  # type: ignore[arg-type]
    assert await run_pipeline([stop], ctx, _echo) == "blocked"
    assert ctx.terminated is True


async def test_non_stream_result_in_streaming_mode_is_a_clear_error() -> None:
    """MW-9: a streaming pipeline whose result is not a ResponseStream raises
    MiddlewareException."""

    async def wrong(context: ChatContext, call_next: Any) -> None:
        context.result = ChatResponse([Message("assistant", ["not a stream"])])

    with pytest.raises(
        MiddlewareException, match=r"chat pipeline is streaming.*got ChatResponse"
    ):
        await run_pipeline(
            [wrong], ChatContext(client=None, messages=[], stream=True), _echo
        )


async def test_stream_hooks_attach_to_a_substituted_stream() -> None:
    """MW-9, MW-10: after-code runs before any update; context hooks attach in order to
    the final stream."""
    log: list[str] = []

    async def source() -> AsyncIterator[ChatResponseUpdate]:
        log.append("stream start")
        yield ChatResponseUpdate(["a"], "assistant")
        yield ChatResponseUpdate(["b"])

    async def handler(context: Any) -> Any:
        return ResponseStream(source(), finalizer=ChatResponse.from_updates)

    async def replace(context: ChatContext, call_next: Any) -> None:
        log.append("before")
        await call_next()
        log.append("after")
        inner = context.result
        context.result = ResponseStream(inner)  # substitute a wrapping stream
        context.stream_transform_hooks.append(
            lambda u: ChatResponseUpdate([u.text.upper()], u.role)
        )
        context.stream_result_hooks.append(
            lambda r: ChatResponse([Message("assistant", [r.text + "!"])])
        )
        context.stream_cleanup_hooks.append(lambda: log.append("cleanup"))

    stream = await run_pipeline(
        [replace], ChatContext(client=None, messages=[], stream=True), handler
    )
    seen = [u.text async for u in stream]
    final = await stream.get_final_response()
    assert log == ["before", "after", "stream start", "cleanup"]
    assert seen == ["A", "B"]
    assert final.text == "ab!"


# --------------------------------------------------------------------------------------------
# Type detection and categorisation.


def test_detect_by_decorator_only() -> None:
    """MW-2: a decorator alone decides the layer."""

    @chat_middleware
    async def mw(context, call_next):  # type: ignore[no-untyped-def]
        await call_next()

    assert middleware_layer(mw) == "chat"


def test_detect_by_annotation_only() -> None:
    """MW-2: the first parameter's annotation alone decides the layer."""

    async def mw(context: FunctionInvocationContext, call_next: Any) -> None:
        await call_next()

    assert middleware_layer(mw) == "function"


def test_detect_string_annotations() -> None:
    """MW-2: string annotations (from __future__ import annotations) are resolved."""
    from tests.middleware import _future_annotations as m

    assert middleware_layer(m.agent_mw) == "agent"
    assert middleware_layer(m.chat_mw) == "chat"
    assert middleware_layer(m.function_mw) == "function"
    assert middleware_layer(m.unresolvable) == "chat"
    assert categorize_middleware([m.agent_mw, m.chat_mw, m.function_mw]).chat == (
        m.chat_mw,
    )


def test_decorator_and_annotation_mismatch() -> None:
    """MW-2: a decorator that disagrees with the annotation is an error naming the
    function."""

    @agent_middleware
    async def confused(context: ChatContext, call_next: Any) -> None: ...

    with pytest.raises(MiddlewareException, match=r"confused.*agent.*chat"):
        middleware_layer(confused)


def test_neither_decorator_nor_annotation() -> None:
    """MW-2: a function with no decorator and no annotation cannot be typed."""

    async def anonymous(context, call_next):  # type: ignore[no-untyped-def]
        ...

    with pytest.raises(MiddlewareException, match="anonymous"):
        middleware_layer(anonymous)


def test_fewer_than_two_parameters() -> None:
    """MW-2: middleware must take (context, call_next)."""

    @function_middleware
    async def lonely(context):  # type: ignore[no-untyped-def]
        ...

    with pytest.raises(MiddlewareException, match=r"lonely.*at least 2 parameters"):
        middleware_layer(lonely)


def test_untypable_object() -> None:
    """MW-2: an object that is neither middleware nor callable is an error naming it."""
    with pytest.raises(MiddlewareException, match="42"):
        categorize_middleware(42)


def test_object_with_process_method_is_typed_by_it() -> None:
    """MW-2: duck-typed middleware objects are typed by their process method."""

    class Duck:
        async def process(self, context: ChatContext, call_next: Any) -> None: ...

    duck = Duck()
    assert middleware_layer(duck) == "chat"
    assert categorize_middleware(duck).chat == (duck.process,)


def test_a_nested_middleware_list_says_so() -> None:
    """MW-2: a list inside the middleware list is named as one, with how to pass its
    items."""

    async def layer(context: Any, call_next: Any) -> None:
        await call_next()

    from minagent import chat_middleware

    inner = [chat_middleware(layer)]
    with pytest.raises(MiddlewareException) as info:
        Agent(ScriptedChatClient(["hi"]), middleware=[inner])
    assert (
        "got list; it is a list inside the middleware list: pass its items, middleware=[*a, *b]"
        in str(info.value)
    )
    with pytest.raises(ContentError, match="got int"):
        Agent(ScriptedChatClient(["hi"])).run([3])  # type: ignore[list-item]


@tool
def get_weather(location):
    """Get the weather for a location."""
    return f"sunny in {location}"


class ChatLogger(ChatMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, next):
        self.log.append("chat")
        await next(context)


class FunctionLogger(FunctionMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, call_next):
        self.log.append(f"function {context.function.name}")
        await call_next()


class AgentLogger(AgentMiddleware):
    def __init__(self, log):
        self.log = log

    async def process(self, context, next):
        self.log.append("agent")
        await next(context)


def _weather_script():
    return [reply(call("get_weather", {"location": "Paris"})), "It is sunny."]


@pytest.mark.parametrize("where", ["agent", "run", "client", "bound-process"])
async def test_unannotated_class_middleware_runs_wherever_it_is_given(stream, where):
    """MW-2, MW-3: instances of the middleware classes need no annotation, also as bound
    `process` methods, given to Agent(middleware=...), run(middleware=...) or to the
    client inside an Agent."""
    log = []
    instances = [AgentLogger(log), ChatLogger(log), FunctionLogger(log)]
    client_mw = instances[1:] if where == "client" else None
    client = ScriptedChatClient(_weather_script(), middleware=client_mw)
    agent_mw = instances if where == "agent" else [instances[0]]
    agent = Agent(client, tools=[get_weather], middleware=agent_mw)
    run_mw = None
    if where == "run":
        run_mw = instances[1:]
    elif where == "bound-process":
        run_mw = [instances[1].process, instances[2].process]
    response = await run(agent, "weather?", stream=stream, middleware=run_mw)
    assert response.text == "It is sunny."
    assert log == ["agent", "chat", "function get_weather", "chat"]


def test_an_unannotated_plain_function_is_still_an_error_naming_it():
    """MW-2: a bare function with neither decorator nor annotation cannot be typed."""

    async def mystery(context, next):
        await next(context)

    with pytest.raises(MiddlewareException, match="mystery"):
        Agent(ScriptedChatClient([]), middleware=[mystery])


def test_a_middleware_class_instead_of_an_instance_names_the_fix():
    """MW-2: passing the class is an error that says to pass an instance."""
    with pytest.raises(MiddlewareException, match=r"pass an instance: ChatLogger\(\)"):
        Agent(ScriptedChatClient([]), middleware=[ChatLogger])


def test_categorize_accepts_none_one_or_many_and_keeps_order() -> None:
    """MW-3, MW-4: None, a single item, lists and tuples; order kept within each
    layer."""

    class A1(AgentMiddleware):
        async def process(self, context: AgentContext, call_next: Any) -> None: ...

    class C1(ChatMiddleware):
        async def process(self, context: ChatContext, call_next: Any) -> None: ...

    class F1(FunctionMiddleware):
        async def process(
            self, context: FunctionInvocationContext, call_next: Any
        ) -> None: ...

    a1, a2, c1, f1 = A1(), A1(), C1(), F1()
    found = categorize_middleware(None, a1, [c1, f1], (a2,))
    assert found.agent == (a1.process, a2.process)
    assert found.chat == (c1.process,)
    assert found.function == (f1.process,)
    assert categorize_middleware() == categorize_middleware(None, [], ())


async def test_the_agent_forwards_one_categorized_middleware_to_its_client() -> None:
    """MW-3: the client's get_response receives the chat and function layers as one
    CategorizedMiddleware with an empty agent tuple, taken as it is (not detected
    again)."""
    from minagent import Agent, CategorizedMiddleware
    from minagent.testing import ScriptedChatClient

    seen: list[Any] = []

    class Watching(ScriptedChatClient):
        def get_response(self, messages: Any, **kwargs: Any) -> Any:
            seen.append(kwargs.get("middleware"))
            return super().get_response(messages, **kwargs)

    @agent_middleware
    async def outer(context: Any, call_next: Any) -> None:
        await call_next()

    @chat_middleware
    async def chat(context: Any, call_next: Any) -> None:
        await call_next()

    @function_middleware
    async def func(context: Any, call_next: Any) -> None:
        await call_next()

    agent = Agent(Watching(["one", "two"]), middleware=[outer, chat, func])
    assert (await agent.run("hi")).text == "one"
    assert (await agent.run("hi", stream=True).get_final_response()).text == "two"
    assert len(seen) == 2
    for forwarded in seen:
        assert isinstance(forwarded, CategorizedMiddleware)
        assert forwarded == CategorizedMiddleware((), (chat,), (func,))


_LAYER_MAKERS = {
    "agent": agent_middleware,
    "chat": chat_middleware,
    "function": function_middleware,
}


def _made(layer: str, tag: int) -> Any:
    async def mw(context: Any, call_next: Any) -> None:
        await call_next()

    mw.__qualname__ = f"{layer}{tag}"
    return _LAYER_MAKERS[layer](mw)


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(st.sampled_from(["agent", "chat", "function"]), max_size=5),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["append", "insert", "pop", "replace", "reverse"]),
            st.sampled_from(["agent", "chat", "function"]),
            st.integers(0, 6),
        ),
        max_size=6,
    ),
)
def test_a_list_changed_in_place_is_categorised_anew(
    first: list[str], edits: list[tuple[str, str, int]]
) -> None:
    """MW-3: categorising the same list object again after any in-place change gives
    exactly what a fresh list with the same items gives (the remembered result never
    goes stale)."""
    tag = iter(range(10_000))
    items = [_made(layer, next(tag)) for layer in first]
    categorize_middleware(items)
    for op, layer, index in edits:
        if op == "append":
            items.append(_made(layer, next(tag)))
        elif op == "insert":
            items.insert(index, _made(layer, next(tag)))
        elif op == "pop" and items:
            items.pop(index % len(items))
        elif op == "replace" and items:
            items[index % len(items)] = _made(layer, next(tag))
        elif op == "reverse":
            items.reverse()
        assert categorize_middleware(items) == categorize_middleware(list(items))
        expected = {
            name: tuple(m for m in items if middleware_layer(m) == name)
            for name in _LAYER_MAKERS
        }
        found = categorize_middleware(items)
        assert (found.agent, found.chat, found.function) == (
            expected["agent"],
            expected["chat"],
            expected["function"],
        )


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await run(target, *args, stream=stream, **kwargs)
    return await get_response(target, *args, stream=stream, **kwargs)


async def test_middleware_in_client_kwargs_runs(stream):
    """MW-14: `client_kwargs={"middleware": [...]}` runs as the run's middleware and
    never reaches the provider as a keyword; a session given there is the run's
    session."""
    seen = []

    class Counting(ChatMiddleware):
        async def process(self, context, call_next):
            seen.append(context.session)
            await call_next()

    session = AgentSession()
    client = ScriptedChatClient([reply("hi")])
    response = await run_or_get_response(
        client,
        "hello",
        stream=stream,
        client_kwargs={"middleware": [Counting()], "session": session, "x": 1},
    )
    assert response.text == "hi"
    assert seen == [session]
    assert client.requests[0].kwargs == {"x": 1}


def test_categorized_middleware_is_taken_as_it_is():
    """MW-3: what categorize_middleware returned can be categorised again,
    unannotated."""
    log = []
    first = categorize_middleware([ChatLogger(log), FunctionLogger(log)])
    again = categorize_middleware(first)
    assert again == first
    forwarded = categorize_middleware([*first.function, *first.chat])
    assert forwarded.chat == first.chat
    assert forwarded.function == first.function


async def test_context_terminate_stops_the_pipeline_and_the_loop(stream):
    """MW-12: upstream's ``context.terminate = True``: call_next then runs nothing
    further (the tool is not called, the middleware's result stands), and a function
    pipeline ends the loop; an agent or chat middleware that sets it after call_next
    changes nothing."""
    ran: list[str] = []

    @tool
    def lookup(key: str) -> str:
        """Look up."""
        ran.append(key)
        return "value"

    class Stopper(FunctionMiddleware):
        async def process(self, context, next):
            context.terminate = True
            context.result = "from middleware"
            await next()

    client = ScriptedChatClient([reply(call("lookup", {"key": "k"})), "never"])
    response = await run(
        Agent(client, tools=[lookup], middleware=[Stopper()]), "go", stream=stream
    )
    assert ran == []
    [result] = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert result.result == "from middleware"
    assert len(client.requests) == 1  # the loop stopped after the batch

    @agent_middleware
    async def late(context, next):
        await next()
        context.terminate = True

    @chat_middleware
    async def late_chat(context, next):
        await next()
        context.terminate = True

    answered = await run(
        Agent(ScriptedChatClient(["hello"]), middleware=[late, late_chat]),
        "hi",
        stream=stream,
    )
    assert answered.text == "hello"


async def test_middleware_appended_to_the_agents_list_runs_on_the_next_run(stream):
    """MW-3: `agent.middleware.append(...)`, `.remove(...)` between runs take effect on
    the next run (the categorisation is not stale); the runs do not change the list."""
    log = []
    client = ScriptedChatClient(
        [*_weather_script(), *_weather_script(), *_weather_script()]
    )
    chat, function = ChatLogger(log), FunctionLogger(log)
    agent = Agent(client, tools=[get_weather], middleware=[chat])
    await run(agent, "weather?", stream=stream)
    assert log == ["chat", "chat"]
    log.clear()
    agent.middleware.append(function)
    before = list(agent.middleware)
    await run(agent, "weather?", stream=stream)
    assert log == ["chat", "function get_weather", "chat"]
    assert agent.middleware == before
    assert all(a is b for a, b in zip(agent.middleware, before, strict=True))
    log.clear()
    agent.middleware.remove(chat)
    await run(agent, "weather?", stream=stream)
    assert log == ["function get_weather"]
