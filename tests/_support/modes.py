"""Run an agent or a client in the mode a test is given, to its final response.

A test that takes a ``stream: bool`` argument runs twice, non-streaming then streaming:
the ``stream`` fixture of tests/conftest.py gives it both values. These helpers make the
call in that mode and return what a non-streaming call returns, so that one assertion
checks both modes:

    async def test_answer(stream: bool) -> None:
        response = await run(agent, "hi", stream=stream)
        assert response.text == "hello"

Streaming, every update is read before the final response is asked for, as a consumer
that iterates does. The ``*_with_updates`` forms also return the updates (none when not
streaming). A test that needs more (a session, a recorder, finalising without iterating)
keeps a local helper built on these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


async def run(agent: Any, *args: Any, stream: bool, **kwargs: Any) -> Any:
    """``agent.run(*args, **kwargs)`` in the given mode; its final response."""
    final, _updates = await run_with_updates(agent, *args, stream=stream, **kwargs)
    return final


async def run_with_updates(
    agent: Any, *args: Any, stream: bool, **kwargs: Any
) -> tuple[Any, list[Any]]:
    """``agent.run(*args, **kwargs)`` in the given mode; its final response and the
    updates streamed (an empty list when not streaming)."""
    return await _to_the_end(agent.run, args, kwargs, stream=stream)


async def get_response(client: Any, *args: Any, stream: bool, **kwargs: Any) -> Any:
    """``client.get_response(*args, **kwargs)`` in the given mode; its final
    response."""
    final, _updates = await get_response_with_updates(
        client, *args, stream=stream, **kwargs
    )
    return final


async def get_response_with_updates(
    client: Any, *args: Any, stream: bool, **kwargs: Any
) -> tuple[Any, list[Any]]:
    """``client.get_response(*args, **kwargs)`` in the given mode; its final response
    and the updates streamed (an empty list when not streaming)."""
    return await _to_the_end(client.get_response, args, kwargs, stream=stream)


async def _to_the_end(
    call: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    stream: bool,
) -> tuple[Any, list[Any]]:
    if not stream:
        return await call(*args, **kwargs), []
    response_stream = call(*args, stream=True, **kwargs)
    updates = [update async for update in response_stream]
    return await response_stream.get_final_response(), updates
