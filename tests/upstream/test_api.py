"""Upstream's API surface (spec/upstream.md UP-5, UP-6, UP-8, UP-9): responses as
upstream reads them, usage details as a dict, exception names and spellings."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from minagent import (
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    MinagentError,
    UsageDetails,
)
from minagent.upstream import (
    AgentFrameworkException,
    ChatClientInvalidRequestException,
    ToolExecutionException,
)


@dataclass
class Point:
    x: int


async def test_responses_parse_and_fold_as_upstream():
    """UP-5: `from_updates(..., output_format_type=T)` and `ChatResponse(...,
    response_format=T)` parse `.value`; `from_update_generator` folds an async iterable;
    `continuation_token` is the last update's."""
    updates = [
        ChatResponseUpdate([Content.from_text('{"x": ')], "assistant"),
        ChatResponseUpdate([Content.from_text("1}")], continuation_token={"id": "t1"}),
    ]
    assert ChatResponse.from_updates(updates, output_format_type=Point).value == Point(
        1
    )

    async def gen():
        for update in updates:
            yield update

    folded = await ChatResponse.from_update_generator(gen(), output_format_type=Point)
    assert folded.value == Point(1)
    assert folded.continuation_token == {"id": "t1"}
    made = ChatResponse(
        messages=[Message("assistant", ['{"x": 2}'])], response_format=Point
    )
    assert made.value == Point(2)


def test_usage_details_is_a_dict_with_attributes():
    """UP-6: `UsageDetails` is a dict of counts that also reads them as attributes;
    dicts add."""
    usage = UsageDetails(input_token_count=1)
    assert usage == {"input_token_count": 1}
    assert usage.input_token_count == 1
    assert usage.output_token_count is None
    summed = usage + {"input_token_count": 2, "extra_count": 3}
    assert summed == {"input_token_count": 3, "extra_count": 3}
    assert summed.additional_counts == {"extra_count": 3}
    assert (
        ChatResponse(
            usage_details={"input_token_count": 4}
        ).usage_details.input_token_count
        == 4
    )


def test_upstream_exception_names():
    """UP-8: upstream's exception names are minagent's errors (or derive from
    `MinagentError`); `inner_exception=` is kept and is the cause."""
    assert AgentFrameworkException is MinagentError
    assert issubclass(ToolExecutionException, MinagentError)
    assert issubclass(ChatClientInvalidRequestException, ValueError)
    inner = ValueError("v")
    error = ChatClientInvalidRequestException("bad", inner_exception=inner)
    assert error.inner_exception is inner
    assert error.__cause__ is inner


def test_upstream_spellings_resolve_from_minagent():
    """UP-9: upstream's names resolve from `minagent` itself, lazily, without being
    minagent's own `__all__`."""
    import minagent

    assert (
        minagent.FunctionInvocationLayer
        is __import__("minagent.upstream").upstream.FunctionInvocationLayer
    )
    assert minagent.AgentFrameworkException is MinagentError
    assert "FunctionInvocationLayer" not in minagent.__all__


def test_run_helper_loop_is_fresh():
    """UP-5: `from_update_generator` is a coroutine (awaited, as upstream's)."""
    assert asyncio.iscoroutinefunction(ChatResponse.from_update_generator)
