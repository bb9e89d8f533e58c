"""Transitional: the old home of `describe_issues` (spec/schema.md SC-42).

A call's arguments are checked and their problems described in `minagent._validate`,
which owns `ValidationIssue` and `describe_issues`. This module only re-exports
`describe_issues` for ``minagent/upstream/tools.py``, which still imports it from here
and is another branch's file while issue 35 is worked on; once that import reads
``from minagent._validate import describe_issues``, delete this module.
"""

from ._validate import describe_issues

__all__ = ["describe_issues"]
