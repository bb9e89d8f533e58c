"""Test doubles and the provider conformance kit (see `minagent.testing.scripted`).

Optional: nothing in the core imports this folder.
"""

from ..conformance.providers import (
    CHECKS,
    CheckResult,
    ConformanceError,
    ProviderHarness,
    ScriptedCall,
    ScriptedHarness,
    ScriptedStep,
    run_check,
    run_conformance,
)
from .scripted import Request, ScriptedChatClient, ScriptExhaustedError, call, reply, text_chunks

__all__ = [
    "CHECKS",
    "CheckResult",
    "ConformanceError",
    "ProviderHarness",
    "Request",
    "ScriptExhaustedError",
    "ScriptedCall",
    "ScriptedChatClient",
    "ScriptedHarness",
    "ScriptedStep",
    "call",
    "reply",
    "run_check",
    "run_conformance",
    "text_chunks",
]
