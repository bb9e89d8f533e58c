"""Provider plugin discovery through the entry-point group ``minagent.clients`` (spec/providers.md PV-22)."""

from __future__ import annotations

from typing import Any

from .. import MinagentError

__all__ = ["ENTRY_POINT_GROUP", "PluginNotFoundError", "get_client"]

ENTRY_POINT_GROUP = "minagent.clients"


class PluginNotFoundError(MinagentError, LookupError):
    """No installed plugin provides the requested client."""


def entry_points(*, group: str) -> Any:
    """importlib.metadata.entry_points, imported on first use (it costs ~20 ms at import time)."""
    from importlib.metadata import entry_points as find

    return find(group=group)


def available_providers() -> list[str]:
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def get_client(provider: str, /, **kwargs: Any) -> Any:
    """Create the chat client that the plugin registered as ``provider`` (e.g. "openai")."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == provider:
            return ep.load()(**kwargs)
    installed = ", ".join(available_providers()) or "none"
    raise PluginNotFoundError(
        f"no minagent plugin provides the client {provider!r} (installed: {installed}); "
        f"install the distribution that does, e.g. `pip install minagent-{provider}`"
    )
