"""Provider plugin discovery through the entry-point group ``minagent.clients``
(spec/providers.md PV-22)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from .. import BaseChatClient, MinagentError

__all__ = ["ENTRY_POINT_GROUP", "PluginNotFoundError", "get_client"]

ENTRY_POINT_GROUP = "minagent.clients"


class PluginNotFoundError(MinagentError, LookupError):
    """No installed plugin provides the requested client."""


def entry_points(*, group: str) -> Any:
    """importlib.metadata.entry_points, imported on first use (it costs ~20 ms at import
    time)."""
    from importlib.metadata import entry_points as find

    return find(group=group)


def available_providers() -> list[str]:
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


# The plugin folder of this checkout that provides each provider name (PV-22): what to
# install.
FOLDERS = {
    "openai": "openai",
    "openai-responses": "openai",
    "azure_openai": "openai",
    "azure_openai_responses": "openai",
    "anthropic": "anthropic",
    "ollama": "ollama",
}


def install_command(*folders: str) -> str:
    """The command that installs plugin folders from a checkout of minagent, the core
    and the shared transport with them: no distribution of this project is on a package
    registry (PK-12)."""
    return "pip install -e . " + " ".join(
        f"-e plugins/{folder}" for folder in ("http", *folders)
    )


def _check_keywords(provider: str, factory: Any, kwargs: Mapping[str, Any]) -> None:
    """Raise a `TypeError` naming the keywords ``factory`` takes when ``kwargs`` holds
    one it does not take (PV-22)."""
    # A factory whose signature cannot be read, or that takes **kwargs, is called
    # as it is: its own error is then the only one there can be.
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = [
        p.name
        for p in parameters
        if p.kind
        in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    unknown = [name for name in kwargs if name not in accepted]
    if unknown:
        name = getattr(factory, "__qualname__", repr(factory))
        raise TypeError(
            f"the client of provider {provider!r} ({name}) takes no keyword "
            f"{', '.join(repr(k) for k in unknown)}; it takes: {', '.join(accepted)}"
        )


def get_client(provider: str, /, **kwargs: Any) -> BaseChatClient:
    """Create the chat client that the plugin registered as ``provider`` (e.g.
    "openai"): a `BaseChatClient` (a plugin that registers anything else is a
    `TypeError` naming it, PV-22)."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == provider:
            factory = ep.load()
            _check_keywords(provider, factory, kwargs)
            client = factory(**kwargs)
            if not isinstance(client, BaseChatClient):
                raise TypeError(
                    f"the plugin entry point {provider!r} of {ENTRY_POINT_GROUP!r} made a "
                    f"{type(client).__module__}.{type(client).__qualname__}, not a minagent.BaseChatClient"
                )
            return client
    installed = ", ".join(available_providers()) or "none"
    folder = FOLDERS.get(provider)
    how = (
        f"from a checkout of minagent: `{install_command(folder)}`"
        if folder
        else "install the plugin that registers it in the entry-point group "
        f"{ENTRY_POINT_GROUP!r} (from a checkout of minagent: `{install_command('<folder>')}`)"
    )
    raise PluginNotFoundError(
        f"no minagent plugin provides the client {provider!r} (installed: {installed}); {how}"
    )
