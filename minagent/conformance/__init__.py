"""Conformance kits: a provider plugin's checks (`minagent.conformance.providers`, spec/providers.md).

Optional: nothing in the core imports this folder.

Rules
-----
1. One kit, one prefix: the provider kit is `providers.py` (the checks) and
   `provider_harness.py` (what a plugin implements); another kit gets files of its own name.
2. A kit uses the core's public names, and only `minagent.providers` among the folders.
3. ``__init__`` only re-exports.
"""

from .providers import (
    CHECKS,
    SECRET,
    CheckResult,
    ConformanceCheck,
    ConformanceError,
    ProviderHarness,
    ScriptedCall,
    ScriptedHarness,
    ScriptedStep,
    run_check,
    run_conformance,
)

__all__ = [
    "CHECKS",
    "SECRET",
    "CheckResult",
    "ConformanceCheck",
    "ConformanceError",
    "ProviderHarness",
    "ScriptedCall",
    "ScriptedHarness",
    "ScriptedStep",
    "run_check",
    "run_conformance",
]
