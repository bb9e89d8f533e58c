"""Conformance kits: a provider plugin's checks (`minagent.conformance.providers`).

Optional: nothing in the core imports this folder.
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
