"""A deliberately broken minagent, to show that the flow kit catches what it must
(spec/conformance.md CF-8).

Each break is a classic mistake in an implementation of the flow, and names the rules
that must catch it — and no other rule may (CF-8):

| break | what it does | caught by |
|---|---|---|
| ``chat-once-per-run`` | chat middleware acts on a run's first model call only (seed 002's layering) | LP-3 |
| ``max-iterations-off-by-one`` | one tool round more than ``max_iterations`` allows | LP-7, LP-T4, LP-T10 |
| ``stream-skips-function-middleware`` | streaming runs register no function middleware | LP-2; more, streaming only |

The loop table's rows LP-T4 and LP-T10 are where "no room" is decided by
``max_iterations``, so they name it too; a streaming-only difference is a parity
difference (LP-2) and a difference, streaming only, of each rule whose check saw it
(flow_run rule 2): here every rule checked by a scenario with function middleware that
runs in both modes.

    python -m minagent conformance --adapter minagent.conformance.flow_broken:adapter

Rules
-----
1. The breaks live in the adapter (how it builds the agent), never in minagent itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import BaseChatClient, CallNext, ChatContext, chat_middleware
from .flow import Mw, World
from .flow_minagent import MinagentAdapter, Ops, ScriptedModel, build_middleware

__all__ = ["BREAKS", "BrokenAdapter", "adapter"]

BREAKS: Mapping[str, tuple[str, ...]] = {
    "chat-once-per-run": ("LP-3",),
    "max-iterations-off-by-one": ("LP-7", "LP-T4", "LP-T10"),
    # LP-2, and (streaming only) the rules of the scenarios with function middleware
    "stream-skips-function-middleware": (
        "LP-2",
        "LP-3",
        "LP-11",
        "LP-15",
        "LP-20",
        "LP-21",
        "LP-23",
        "LP-T13",
        "LP-T14",
        "MW-4",
        "MW-5",
        "MW-6",
        "MW-7",
        "MW-8",
        "MW-11",
        "MW-T1",
        "MW-T2",
        "MW-T3",
        "MW-T4",
        "MW-T5",
        "MW-T6",
        "MW-T7",
    ),
}


class _OffByOne(ScriptedModel):
    def __init__(self, world: World) -> None:
        super().__init__(world)
        config = dict(world.plan.config)
        config["max_iterations"] = int(config.get("max_iterations", 40)) + 1
        self.function_invocation_configuration = config


class BrokenAdapter(MinagentAdapter):
    """minagent with the named breaks (all three by default)."""

    def __init__(self, breaks: tuple[str, ...] = tuple(BREAKS)) -> None:
        unknown = set(breaks) - set(BREAKS)
        if unknown:
            raise ValueError(
                f"unknown breaks {sorted(unknown)}; the breaks are {sorted(BREAKS)}"
            )
        self.breaks = frozenset(breaks)
        self.name = f"broken minagent ({', '.join(sorted(self.breaks))})"

    def model(self, world: World) -> BaseChatClient:
        return (
            _OffByOne(world)
            if "max-iterations-off-by-one" in self.breaks
            else ScriptedModel(world)
        )

    def middleware(self, world: World, spec: Mw) -> Any:
        if (
            spec.layer == "function"
            and world.stream
            and "stream-skips-function-middleware" in self.breaks
        ):
            return None
        if spec.layer == "chat" and "chat-once-per-run" in self.breaks:
            ran: list[bool] = []

            @chat_middleware
            async def once(context: ChatContext, call_next: CallNext) -> None:
                if ran:
                    await call_next()
                    return
                ran.append(True)
                await world.middleware(spec, Ops(context), call_next)

            return once
        return build_middleware(world, spec)


def adapter() -> BrokenAdapter:
    """All three breaks: ``--adapter minagent.conformance.flow_broken:adapter``."""
    return BrokenAdapter()
