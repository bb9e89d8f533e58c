"""The streaming bridge of ``wrap_model_call`` and context variables (spec/hooks.md,
HK-13)."""

from __future__ import annotations

import contextvars
from typing import Any

from minagent import Agent, ChatMiddleware, tool
from minagent.hooks import HookMiddleware, HookState, wrap_model_call
from minagent.testing import ScriptedChatClient, call, text_chunks

WHO = contextvars.ContextVar("WHO", default="unset")
HOLDER: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("HOLDER")


class _Seen:
    """What each part of one run read from WHO, part by part, in order."""

    def __init__(self) -> None:
        self.parts: dict[str, list[str]] = {}

    def read(self, part: str) -> None:
        self.parts.setdefault(part, []).append(WHO.get())


def _run_parts(seen: _Seen) -> tuple[Any, list[Any]]:
    """An agent whose stack reads WHO everywhere around a wrap hook that sets it."""
    calls = 0

    @tool
    def probe() -> str:
        """A tool that reads the variable."""
        seen.read("tool")
        return "probed"

    class Outer(ChatMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            await call_next()
            if context.stream:
                context.result.with_result_hook(
                    lambda _r: seen.read("outer after call_next")
                )
            else:
                seen.read("outer after call_next")

    class OuterHooks(HookMiddleware):
        def before_model(self, state: HookState) -> None:
            seen.read("outer before_model")

        def after_model(self, state: HookState) -> None:
            seen.read("outer after_model")

    @wrap_model_call
    async def setter(request: Any, handler: Any) -> Any:
        nonlocal calls
        calls += 1
        WHO.set(f"call {calls}")
        HOLDER.get()["calls"] = calls
        return await handler(request)

    class Inner(ChatMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            seen.read("inner")
            await call_next()

    return probe, [OuterHooks(), Outer(), setter, Inner()]


async def test_context_variables_set_by_a_wrap_hook(stream: bool) -> None:
    """HK-13: streaming, a variable the wrap_model_call hook sets reaches the inner
    middleware and the provider call only, never the consumer, outer middleware after
    call_next, after_model hooks, the tools or the next model call's outer hooks;
    without streaming all of them see it. A change to the object a variable holds is
    seen in both modes."""
    seen = _Seen()
    probe, middleware = _run_parts(seen)
    holder: dict[str, int] = {}
    HOLDER.set(holder)

    def provider(step: Any) -> Any:
        def answer(messages: Any, options: Any) -> Any:
            seen.read("provider call")
            return step

        return answer

    client = ScriptedChatClient(
        [provider([call("probe", {}, call_id="c1")]), provider(text_chunks("do", "ne"))]
    )
    agent = Agent(client, tools=[probe], middleware=middleware)
    if stream:
        run = agent.run("go", stream=True)
        async for _ in run:
            seen.read("consumer")
        final = await run.get_final_response()
    else:
        final = await agent.run("go")
    assert final.text == "done"
    # both modes: the holder is shared, only the binding is per task
    assert holder == {"calls": 2}
    # both modes: the inner pipeline runs where the hook runs
    assert (seen.parts["inner"], seen.parts["provider call"]) == (
        ["call 1", "call 2"],
        ["call 1", "call 2"],
    )
    if stream:
        assert seen.parts == {
            "outer before_model": ["unset", "unset"],
            "inner": ["call 1", "call 2"],
            "provider call": ["call 1", "call 2"],
            "consumer": ["unset"] * len(seen.parts["consumer"]),
            "outer after call_next": ["unset", "unset"],
            "outer after_model": ["unset", "unset"],
            "tool": ["unset"],
        }
        # at least the two chunks of the answer were read
        assert len(seen.parts["consumer"]) >= 2
    else:
        assert seen.parts == {
            "outer before_model": ["unset", "call 1"],
            "inner": ["call 1", "call 2"],
            "provider call": ["call 1", "call 2"],
            "outer after call_next": ["call 1", "call 2"],
            "outer after_model": ["call 1", "call 2"],
            "tool": ["call 1"],
        }
