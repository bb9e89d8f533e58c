"""Test doubles and the provider conformance kit: `ScriptedChatClient`
(`minagent.testing.scripted`), the in-memory HTTP transport `MockTransport`
(`minagent.testing.mock_transport`) (spec/providers.md PV-33, PV-40).

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
from .mock_transport import MockResponse, MockTransport
from .scripted import (
    Request,
    ScriptedChatClient,
    ScriptExhaustedError,
    call,
    reply,
    text_chunks,
)

__all__ = [
    "CHECKS",
    "CheckResult",
    "ConformanceError",
    "MockResponse",
    "MockTransport",
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
