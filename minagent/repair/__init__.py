"""The repair of an invalid history (spec/hooks.md HI-3).

Optional: loaded when ``minagent.repair_history`` meets an invalid history (the seam in
``minagent._history``).

Rules
-----
1. Built on the core's public names only.
2. ``__init__`` only re-exports.
"""

from .history import repair_invalid_history

__all__ = ["repair_invalid_history"]
