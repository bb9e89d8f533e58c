"""The one place minagent_gemini names minagent (spec/providers.md PV-43).

Every other module of this plugin imports the core's names from here, never ``minagent``
by its absolute name, so that the plugin works installed (beside the top-level
``minagent``) and vendored: copied beside a copy of ``minagent/`` under any package
(``myapp/_vendor/minagent`` and ``myapp/_vendor/minagent_gemini``), it uses that copy
and never loads a second one. ``FOLDERS`` names the folders of minagent it needs
beside the core's top-level files; a copy without one of them makes importing the plugin
an ImportError that names the folder to copy.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

# PK-19: the folders of minagent this plugin needs beside the core's top-level files
FOLDERS = ("providers", "structured")

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
    _core = import_module(_name)

    # PK-19: the folders of minagent this plugin imports beside the core (the README's
    # "Vendoring" lists them); in a copy without one of them, the core's ImportError
    # that names the folder to copy
    _core._require_folders(FOLDERS, __name__.split(".")[-2])

    _modules = [
        _core,
        *(
            import_module(_name + suffix)
            for suffix in (".providers", ".providers.http", ".providers.transport")
        ),
    ]

    def __getattr__(name: str) -> Any:
        for module in _modules:
            if name in module.__all__:
                return getattr(module, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
