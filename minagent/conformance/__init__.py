"""Conformance kits: a provider plugin's checks (`minagent.conformance.providers`,
spec/providers.md), and the flow's rules against any implementation of the flow
(`minagent.conformance.flow*`, spec/conformance.md).

Optional: nothing in the core imports this folder.

Rules
-----
1. One kit, one prefix: the provider kit is `providers.py` (the checks) and
   `provider_harness.py` (what a plugin implements); the flow kit is `flow.py` (what an
   adapter builds and reports) and `flow_*.py` (scenarios, runner, report, the shipped
   adapters).
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
