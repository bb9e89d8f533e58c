"""The edge: the one hook where ``minagent/upstream/`` attaches upstream's API to the core
(spec/upstream.md UP-10, spec/decisions.md "The edge").

Rules
-----
1. No core module imports ``minagent/upstream/``, not even inside a function. What of
   upstream's API is reached through a core object (a ``Content.from_<kind>`` factory of
   upstream's other content kinds, the thread era of an agent and of a context
   provider, upstream's single provider hook, upstream's per-service-call history
   keyword) the core asks of the one `Edge` installed here, and of nothing else.
2. ``minagent/upstream/`` installs its edge (`install`) when it is imported, as
   ``minagent.tracing`` installs an observer through ``_observe``. Until then the edge
   is this module's `Edge`, which has none of upstream's API: each of its methods asks
   the package's loader to import the folder (`set_loader`; ``minagent/__init__`` sets
   it, the one place that maps names to folders) and then asks the edge installed by
   that import. In a copy of the core without the folder, the loader's `ImportError`
   names the folder to copy (PK-9).
3. This module imports nothing of minagent, so every core module may ask it without an
   import circle (PK-8). Its types therefore name the core's objects as `Any`; each
   method's docstring says what they are.

Theory of operation
-------------------
The core calls ``current().<method>(...)``. Once the folder is imported, that is the
folder's own edge, and the call costs one attribute lookup. A program that never
touches upstream's API never loads the folder (``import minagent`` loads the core only,
PK-9).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Edge", "current", "install", "set_loader"]

T = TypeVar("T")

# Imports the folder that installs upstream's edge; ``what`` names what the caller
# asked for, for the ImportError of a copy without that folder.
Loader = Callable[[str], None]


class Edge:
    """What the core asks of upstream's API. This base has none of it: each method
    loads ``minagent/upstream/``, whose import installs its own edge, and asks that one
    (see the module docstring)."""

    def content_factory(self, cls: type[T], name: str) -> Callable[..., T]:
        """TY-15: ``Content.<name>`` for one of upstream's other content kinds
        (``from_hosted_file``, ...); a name that is no such factory is an
        `AttributeError`."""
        return _loaded(
            f"upstream's content kind factory Content.{name}"
        ).content_factory(cls, name)

    def adapt_single_hook(self, cls: type[Any]) -> None:
        """UP-2: give a client class that implements upstream's single hook,
        ``_inner_get_response(*, messages, stream, options)``, minagent's two."""
        _loaded(
            f"upstream's single provider hook ({cls.__name__}._inner_get_response with stream)"
        ).adapt_single_hook(cls)

    def new_thread(self, **kwargs: Any) -> Any:
        """SE-9: ``agent.get_new_thread(**kwargs)``, a new `AgentThread` (an
        `AgentSession`)."""
        return _loaded("upstream's thread era (agent.get_new_thread())").new_thread(
            **kwargs
        )

    def restore_thread(self, data: Any) -> Any:
        """TH-2: ``agent.deserialize_thread(data)``, the `AgentThread` that
        ``serialize()`` wrote."""
        return _loaded(
            "upstream's thread era (agent.deserialize_thread())"
        ).restore_thread(data)

    def empty_context(self) -> Any:
        """SE-10: an empty thread-era `Context`, what ``ContextProvider.invoking``
        returns by default."""
        return _loaded(
            "upstream's thread era (ContextProvider.invoking)"
        ).empty_context()

    async def invoking_as_before_run(
        self, provider: Any, *, agent: Any, context: Any
    ) -> None:
        """SE-10: a thread-era provider's ``invoking`` run as a ``before_run``: its
        `Context` goes into the run's `SessionContext` (``context``)."""
        edge = _loaded("upstream's thread era (a provider's invoking)")
        await edge.invoking_as_before_run(provider, agent=agent, context=context)

    async def invoked_as_after_run(
        self, provider: Any, *, agent: Any, context: Any
    ) -> None:
        """SE-10: a thread-era provider's ``invoked`` run as an ``after_run`` with the
        run's `SessionContext` (``context``)."""
        edge = _loaded("upstream's thread era (a provider's invoked)")
        await edge.invoked_as_after_run(provider, agent=agent, context=context)

    def per_service_call(
        self, context_providers: Any, middleware: Any
    ) -> tuple[list[Any], list[Any]]:
        """SE-60: an agent's context providers and middleware when its history is saved
        after every model call (``require_per_service_call_history_persistence=True``)."""
        edge = _loaded(
            "upstream's per-service-call history "
            "(Agent(require_per_service_call_history_persistence=True))"
        )
        return edge.per_service_call(context_providers, middleware)


_EDGE: Edge = Edge()
_LOADER: Loader | None = None


def _loaded(what: str) -> Edge:
    """The edge ``minagent/upstream/`` installs, imported now by the package's loader
    for ``what``."""
    if _LOADER is None:
        raise RuntimeError(
            f"{what} needs minagent/upstream/, and no loader is set (minagent/__init__ sets it)"
        )
    _LOADER(what)
    if type(_EDGE) is Edge:
        raise RuntimeError(
            f"{what}: importing minagent/upstream/ installed no edge (its __init__ calls install)"
        )
    return _EDGE


def install(edge: Edge) -> Edge:
    """Make ``edge`` the one the core asks from now on (``minagent/upstream/`` calls
    this when it is imported); returns the edge installed before."""
    global _EDGE
    if not isinstance(edge, Edge):
        raise TypeError(f"install() takes an Edge, got {type(edge).__name__}")
    previous, _EDGE = _EDGE, edge
    return previous


def set_loader(loader: Loader) -> None:
    """How the base `Edge` imports ``minagent/upstream/`` (``minagent/__init__`` sets
    it once, when the package loads)."""
    global _LOADER
    if not callable(loader):
        raise TypeError(f"set_loader() takes a callable, got {type(loader).__name__}")
    _LOADER = loader


def current() -> Edge:
    """The edge installed now: upstream's once ``minagent/upstream/`` was imported, else
    the base, which imports it on first use."""
    return _EDGE
