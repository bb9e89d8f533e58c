"""Upstream's edge: what the core asks of upstream's API, answered by this folder
(spec/upstream.md UP-10, spec/decisions.md "The edge").

`UpstreamEdge` is the `minagent._edge.Edge` this folder installs when it is imported
(``upstream/__init__``): each method hands the core's question to the module of this
folder that owns it: ``content`` (upstream's other content kinds, TY-15), ``layers``
(upstream's single provider hook, UP-2), ``threads`` (the thread era, SE-9, SE-10) and
``persistence`` (per-service-call history, SE-60).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from minagent._edge import Edge

from .content import factory
from .layers import adapt_single_hook
from .persistence import per_service_call
from .threads import (
    AgentThread,
    Context,
    invoked_as_after_run,
    invoking_as_before_run,
)

__all__ = ["UpstreamEdge"]

T = TypeVar("T")


class UpstreamEdge(Edge):
    """The edge with upstream's API (see the module docstring)."""

    def content_factory(self, cls: type[T], name: str) -> Callable[..., T]:
        return factory(cls, name)  # type: ignore[arg-type, return-value]

    def adapt_single_hook(self, cls: type[Any]) -> None:
        adapt_single_hook(cls)

    def new_thread(self, **kwargs: Any) -> AgentThread:
        return AgentThread(**kwargs)

    def restore_thread(self, data: Any) -> AgentThread:
        return AgentThread.deserialize(data)

    def empty_context(self) -> Context:
        return Context()

    async def invoking_as_before_run(
        self, provider: Any, *, agent: Any, context: Any
    ) -> None:
        await invoking_as_before_run(provider, agent=agent, context=context)

    async def invoked_as_after_run(
        self, provider: Any, *, agent: Any, context: Any
    ) -> None:
        await invoked_as_after_run(provider, agent=agent, context=context)

    def per_service_call(
        self, context_providers: Any, middleware: Any
    ) -> tuple[list[Any], list[Any]]:
        return per_service_call(context_providers, middleware)
