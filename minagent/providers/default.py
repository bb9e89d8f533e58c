"""The transport a provider plugin sends through when it is given none (spec/providers.md
PV-41).

Rules
-----
1. The choice is made here only: the transport given, else aiohttp's (the plugin
   ``minagent_http`` beside this copy of minagent) when it can be imported, else the
   standard library's `StdlibTransport`, which loads only then (it imports ``zlib`` and,
   for HTTPS, ``ssl``).
2. ``transport`` and ``stdlib`` know nothing of this choice: this module imports them,
   never the reverse, so the folder's imports have no circle.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from .transport import Transport

__all__ = ["aiohttp_transport", "transport_for"]


def aiohttp_transport() -> Callable[..., Transport] | None:
    """The aiohttp transport's class when it can be used: the plugin ``minagent_http``
    beside this copy of minagent (a sibling package when minagent is vendored, else the
    top-level one) and aiohttp importable; None otherwise (PV-41)."""
    core = __name__.rsplit(".", 2)[0]  # "minagent", or "myapp._vendor.minagent"
    parent = core.rpartition(".")[0]
    for name in (
        (f"{parent}.minagent_http", "minagent_http") if parent else ("minagent_http",)
    ):
        try:
            module = import_module(name)
        except ImportError:  # not there, or aiohttp is not installed
            continue
        found: Callable[..., Transport] = module.AiohttpTransport
        return found
    return None


def transport_for(
    transport: Transport | None, *, session: Any = None, trust_env: bool = True
) -> Transport:
    """What a plugin's constructor sends through (PV-41): ``transport`` when given; else
    the aiohttp transport (over ``session`` when given) when aiohttp and
    ``minagent_http`` are importable; else the standard library's `StdlibTransport`
    (``stdlib``)."""
    if transport is not None:
        if session is not None:
            raise ValueError(
                "pass session= or transport=, not both: a transport brings its own connections"
            )
        return transport
    found = aiohttp_transport()
    if found is not None:
        return found(session=session, trust_env=trust_env)
    if session is not None:
        raise ValueError(
            "session= is an aiohttp.ClientSession, but aiohttp (or minagent_http) cannot be imported"
        )
    from .stdlib import StdlibTransport

    return StdlibTransport(trust_env=trust_env)
