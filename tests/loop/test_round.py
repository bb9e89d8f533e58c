"""What a tool round does not do (spec/loop.md LP-35): no `FunctionInvocationContext`
for a call that nothing would show it to, no second walk of arguments the tool's compiled
check accepted, no general conversion of a plain result; and none of it changes an
outcome. Counted, never timed."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    ChatResponse,
    Content,
    FunctionInvocationContext,
    FunctionTool,
    MiddlewareTermination,
    _calls,
    _types,
    _validate,
    tool,
)
from minagent._validate import set_argument_limits
from minagent.testing import ScriptedChatClient, call, reply


class _Counting(FunctionInvocationContext):
    made = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).made += 1
        super().__init__(*args, **kwargs)


@pytest.fixture
def contexts(monkeypatch: pytest.MonkeyPatch) -> type[_Counting]:
    """Counts the contexts the runner makes."""
    _Counting.made = 0
    monkeypatch.setattr(_calls, "FunctionInvocationContext", _Counting)
    return _Counting


async def _pass_through(context: FunctionInvocationContext, call_next: Any) -> None:
    await call_next()


async def _run(
    the_tool: Any, arguments: Any, *, middleware: Any = None, calls: int = 1
) -> ChatResponse:
    steps: list[Any] = [
        reply(*[call(the_tool.name, arguments, call_id=f"c{i}") for i in range(calls)]),
        "done",
    ]
    client = ScriptedChatClient(steps, middleware=middleware)
    return await client.get_response("go", options={"tools": [the_tool]})


def _results(response: ChatResponse) -> list[tuple[Any, ...]]:
    return [
        (c.call_id, c.result, c.exception, c.extra)
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    ]


async def test_no_context_for_a_plain_tool_without_function_middleware(
    contexts: type[_Counting],
) -> None:
    """LP-35: with no function middleware, a tool whose function takes no context gets
    none made; two calls, two results."""

    @tool
    async def double(n: int) -> int:
        return 2 * n

    response = await _run(double, {"n": 4}, calls=2)
    assert _results(response) == [("c0", 8, None, {}), ("c1", 8, None, {})]
    assert contexts.made == 0


async def test_a_context_where_something_sees_it(contexts: type[_Counting]) -> None:
    """LP-35: function middleware, a tool that takes the context, a tool with a
    result_parser, a declaration-only tool: each call still gets its context."""
    seen: list[Any] = []

    @tool
    async def plain(n: int) -> int:
        return n

    @tool
    async def asks(n: int, ctx: FunctionInvocationContext) -> int:
        seen.append(ctx)
        return n

    @tool(result_parser=lambda v: f"<{v}>")
    async def parsed(n: int) -> int:
        return n

    declared = FunctionTool(name="declared", parameters={"type": "object"})

    await _run(plain, {"n": 1}, middleware=[_pass_through])
    assert contexts.made == 1
    await _run(asks, {"n": 1})
    assert contexts.made == 2
    assert isinstance(seen[0], FunctionInvocationContext)
    response = await _run(parsed, {"n": 3})
    assert contexts.made == 3
    assert _results(response)[0][1] == "<3>"
    await _run(declared, {})
    assert contexts.made == 4


async def test_accepted_arguments_are_not_walked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LP-35, SC-55: arguments the compiled check accepts (a dict or JSON text) are
    neither walked for the limits nor validated again; arguments it does not accept still
    are, with the same error result."""
    walked: list[Any] = []
    real_check, real_parse = _types.check_limits, _types.parse_json_arguments
    real_validate = _validate.validate

    def check(value: Any, limits: Any = None) -> Any:
        walked.append(("limits", value))
        return real_check(value, limits)

    def parse(text: str, limits: Any = None) -> Any:
        walked.append(("parse", text))
        return real_parse(text, limits)

    def validate(*args: Any, **kwargs: Any) -> Any:
        walked.append(("validate", args[0]))
        return real_validate(*args, **kwargs)

    monkeypatch.setattr(_types, "check_limits", check)
    monkeypatch.setattr(_types, "parse_json_arguments", parse)
    monkeypatch.setattr("minagent._tools.validate", validate)

    @tool
    async def echo(t: str) -> str:
        return t

    response = await _run(echo, {"t": "hi"})  # sent as JSON text
    assert _results(response) == [("c0", "hi", None, {})]
    assert walked == []
    as_dict = Content.from_function_call("d0", "echo", {"t": "hi"})
    client = ScriptedChatClient([reply(as_dict), "done"])
    response = await client.get_response("go", options={"tools": [echo]})
    assert _results(response) == [("d0", "hi", None, {})]
    assert walked == []
    # refused by the check: the full path, the same words as ever
    previous = set_argument_limits(max_string_chars=3)
    try:
        response = await _run(echo, {"t": "too long"})
    finally:
        set_argument_limits(previous)
    (result,) = _results(response)
    assert result[2] == "invalid arguments"
    assert str(result[1]).startswith("Error: Argument parsing failed.")
    assert "at most 3 characters" in str(result[1])
    assert walked
    assert walked[0][0] == "parse"


async def test_a_long_property_name_is_not_accepted_by_the_check() -> None:
    """SC-55: the compiled check keeps the limit on a property name's length."""
    schema = {
        "type": "object",
        "properties": {"longname": {"type": "integer"}},
        "additionalProperties": False,
    }
    check = _validate.compile_fast_check(schema)
    assert check is not None
    assert check({"longname": 1})
    previous = set_argument_limits(max_string_chars=4)
    try:
        assert _validate.validate({"longname": 1}, schema) != []
        assert not check({"longname": 1})
    finally:
        set_argument_limits(previous)


class _Boom(Exception):
    pass


OUTCOMES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**25), max_value=10**25),
    st.integers(min_value=-(2**61), max_value=2**61),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from(["\ud83d", "a\ud83d\ude00b", "é"]),
    st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3)),
    st.lists(st.integers(), max_size=3),
    st.tuples(st.sampled_from(["raise", "terminate"]), st.text(max_size=3)),
)


@settings(max_examples=60)
@given(outcome=OUTCOMES)
def test_the_direct_call_and_the_pipeline_give_the_same_outcome(outcome: Any) -> None:
    """LP-35: for any value a tool returns or exception it raises, the round without a
    context gives the same results, error results and ending as the round through a
    pass-through function middleware."""

    async def body(**_: Any) -> Any:
        if isinstance(outcome, tuple):
            kind, text = outcome
            if kind == "raise":
                raise _Boom(text)
            raise MiddlewareTermination(result=text)
        return outcome

    def make() -> FunctionTool:
        return FunctionTool(
            name="t", func=body, parameters={"type": "object", "properties": {}}
        )

    async def both() -> tuple[Any, Any]:
        direct = await _run(make(), {})
        piped = await _run(make(), {}, middleware=[_pass_through])
        return direct, piped

    direct, piped = asyncio.run(both())

    def key(response: ChatResponse) -> list[Any]:
        out = []
        for m in response.messages:
            for c in m.contents:
                value = c.result if c.type == "function_result" else c.text
                nan = isinstance(value, float) and math.isnan(value)
                out.append((m.role, c.type, "nan" if nan else value, c.exception))
        return out

    assert key(direct) == key(piped)


class _Keeping(ScriptedChatClient):
    """Keeps the options dicts themselves, not copies."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.given: list[dict[str, Any]] = []

    async def _inner_get_response(
        self, *, messages: Any, options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        self.given.append(options)
        return await super()._inner_get_response(
            messages=messages, options=options, **kwargs
        )


async def test_options_are_sent_as_they_are_and_never_edited_after() -> None:
    """LP-35: model calls that change nothing share the run's options dict; a change
    (LP-19's conversation id, the last call's tool_choice, LP-7) is a new dict, and a dict
    once sent is never edited."""

    @tool
    async def double(n: int) -> int:
        return 2 * n

    client = _Keeping(
        [
            reply(call("double", {"n": 1}, call_id="a")),
            reply(call("double", {"n": 2}, call_id="b"), conversation_id="conv-1"),
            reply(call("double", {"n": 3}, call_id="c")),
            "done",
        ],
        function_invocation_configuration={"max_iterations": 3},
    )
    response = await client.get_response("go", options={"tools": [double]})
    assert response.text == "done"
    first, second, third, last = client.given
    assert first is second
    assert "conversation_id" not in first
    assert third is not second
    assert third["conversation_id"] == "conv-1"
    assert "tool_choice" not in third
    assert last["tool_choice"] == "none"
    assert last is not third


async def test_accepted_arguments_still_convert_where_the_types_differ() -> None:
    """LP-35, TL-10: arguments the compiled check accepts skip only the conversions that
    would change nothing: a float parameter given an integer still gets a float."""

    @tool
    async def kinds(x: float, n: int, flag: bool, s: str) -> str:
        return ",".join(type(v).__name__ for v in (x, n, flag, s))

    response = await _run(kinds, {"x": 1, "n": 2, "flag": True, "s": "a"})
    assert _results(response) == [("c0", "float,int,bool,str", None, {})]
