"""Upstream's other middleware shapes (spec/middleware.md MW-60): callable class
instances, and what is not middleware."""

from __future__ import annotations

from typing import Any

import pytest

from minagent import (
    Agent,
    FunctionInvocationContext,
    MiddlewareException,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply


def test_a_builtin_without_a_signature_is_not_middleware() -> None:
    """MW-60: a callable whose parameters cannot be read (a builtin such as max) is
    refused with the 'must have at least 2 parameters' error naming it."""
    with pytest.raises(
        MiddlewareException, match="middleware max must have at least 2 parameters"
    ):
        Agent(ScriptedChatClient(["x"]), middleware=[max])


class CountCalls:
    """Function middleware written as a class with ``__call__`` (upstream's
    callable-class style)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(
        self, context: FunctionInvocationContext, call_next: Any
    ) -> None:
        self.seen.append(context.function.name)
        await call_next()


async def test_a_callable_class_instance_runs_as_middleware(stream: bool) -> None:
    """MW-60: its layer comes from its annotation; it runs in both modes."""

    @tool
    def add(a: int, b: int) -> int:
        return a + b

    counter = CountCalls()
    client = ScriptedChatClient([reply(call("add", {"a": 1, "b": 2})), reply("3")])
    agent = Agent(client, tools=[add], middleware=[counter])
    run = (
        agent.run("sum", stream=True).get_final_response()
        if stream
        else agent.run("sum")
    )
    text = (await run).text
    assert text == "3"
    assert counter.seen == ["add"]


def test_callable_class_errors_say_upstreams_words() -> None:
    """MW-60: too few parameters, a contradicting marker, no way to tell: named, in
    upstream's words."""

    class OneParam:
        async def __call__(self, context: Any) -> None: ...

    class Mismatch:
        _middleware_type = "agent"

        async def __call__(
            self, context: FunctionInvocationContext, call_next: Any
        ) -> None: ...

    class Unknown:
        async def __call__(self, a: Any, b: Any) -> None: ...

    client = ScriptedChatClient([])
    for cls, words in (
        (OneParam, "must have at least 2 parameters"),
        (Mismatch, "MiddlewareTypes type mismatch"),
        (Unknown, "Cannot determine middleware type"),
    ):
        with pytest.raises(MiddlewareException, match=words) as info:
            Agent(client, middleware=[cls()])
        assert cls.__name__ in str(info.value)


def test_a_class_is_not_taken_for_a_callable_object() -> None:
    """MW-60: a class (callable, but not an instance) is not middleware."""

    class NotMiddleware:
        pass

    with pytest.raises(MiddlewareException, match="is not middleware"):
        Agent(ScriptedChatClient([]), middleware=[NotMiddleware])
