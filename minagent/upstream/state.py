"""``register_state_type`` under upstream's module (spec/sessions.md SE-2).

The registration and its codec are the core's (`minagent._sessions`): session state's
serialization is part of the flow, so a copy of the core alone has them. This module
keeps the names it has always had, ``minagent.upstream.state.register_state_type`` and
``StateType``.
"""

from minagent._sessions import StateType, register_state_type

__all__ = ["StateType", "register_state_type"]
