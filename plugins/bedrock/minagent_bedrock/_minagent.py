"""The one place minagent_bedrock names minagent (spec/providers.md PV-43).

Every other module of this plugin imports the core's names from here, never ``minagent``
by its absolute name, so that the plugin works installed (beside the top-level
``minagent``) and vendored: copied beside a copy of ``minagent/`` under any package
(``myapp/_vendor/minagent`` and ``myapp/_vendor/minagent_bedrock``), it uses that copy
and never loads a second one.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minagent import *  # noqa: F403
    from minagent.providers import *  # noqa: F403
    from minagent.providers.http import *  # noqa: F403
    from minagent.providers.transport import *  # noqa: F403
else:
    _parent = __name__.rsplit(".", 2)[0] if __name__.count(".") >= 2 else ""
    _name = (
        f"{_parent}.minagent"
        if _parent and find_spec(f"{_parent}.minagent") is not None
        else "minagent"
    )
    _modules = [
        import_module(_name + suffix)
        for suffix in ("", ".providers", ".providers.http", ".providers.transport")
    ]

    def __getattr__(name: str) -> Any:
        for module in _modules:
            if name in module.__all__:
                return getattr(module, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
