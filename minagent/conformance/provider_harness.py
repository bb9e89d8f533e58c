"""The provider kit's harness: what a plugin implements, and `ScriptedHarness`
(spec/providers.md).

Rules
-----
1. The harness knows no wire format: a plugin's subclass decides how a step looks on its
   wire; this module keeps only the script and the record.
2. Nothing here runs a check: the checks are in `providers.py`.

Theory of operation
-------------------
A `ScriptedHarness` holds a queue of `ScriptedStep` and the bodies its fake server
received. Each ``script_*`` call describes the answer to the next request the fake
server receives, whatever the request's mode; the server renders it as a whole body when
the request does not stream and as a stream when it does, with the same ids, model and
``created`` either way (so both modes must decode to equal responses, PV-9). ``reset()``
empties both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .._types import UsageDetails

__all__ = [
    "ConformanceError",
    "ProviderHarness",
    "ScriptedCall",
    "ScriptedHarness",
    "ScriptedStep",
]


class ConformanceError(AssertionError):
    """A conformance check failed; the message says what was expected and what
    happened."""


@dataclass(frozen=True)
class ScriptedCall:
    """One function call the fake model makes."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str


@dataclass(frozen=True)
class ScriptedStep:
    """The answer to one request.

    ``kind``: ``"text"`` (``text``), ``"tool_calls"`` (``calls``, in order, in one
    response), ``"error"`` (a non-2xx answer: ``status``, ``message`` as the provider's
    error message, ``headers``), or ``"stall"`` (a stream that sends ``text`` as one
    delta and then nothing, holding the connection open until the client goes away).
    ``usage`` is reported with the answer when set.
    """

    kind: Literal["text", "tool_calls", "error", "stall"]
    text: str = ""
    calls: tuple[ScriptedCall, ...] = ()
    usage: UsageDetails | None = None
    status: int = 200
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class ProviderHarness(Protocol):
    """The plugin's side of the kit: a fake server that plays a script, and its client.

    ``request_id_header`` is the response header in which the provider sends its request
    id. ``make_client(**kwargs)`` returns a new client of the plugin aimed at the fake
    server; ``kwargs`` are passed to the client's constructor, which accepts at least
    ``max_retries``, ``sleep``, ``rng`` and ``api_key`` (PV-32). ``requests()`` returns
    the JSON bodies the server received since the last ``reset()``, in order;
    ``tool_results(body)`` the payloads of the tool results that body sends, in order;
    ``declared_tools(body)`` the names of the tools it declares. ``open_connections()``
    counts the client connections the server holds open right now.
    """

    request_id_header: str

    def make_client(self, **kwargs: Any) -> Any: ...

    def reset(self) -> None: ...

    def script_text(self, text: str, *, usage: UsageDetails | None = None) -> None: ...

    def script_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        *,
        usage: UsageDetails | None = None,
    ) -> None: ...

    def script_parallel_tool_calls(
        self, calls: Sequence[ScriptedCall], *, usage: UsageDetails | None = None
    ) -> None: ...

    def script_error(
        self, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> None: ...

    def script_stalled_stream(self, text: str) -> None: ...

    def requests(self) -> list[dict[str, Any]]: ...

    def tool_results(self, body: Mapping[str, Any]) -> list[str]: ...

    def declared_tools(self, body: Mapping[str, Any]) -> list[str]: ...

    async def open_connections(self) -> int: ...


class ScriptedHarness:
    """The bookkeeping half of a `ProviderHarness`: the script queue and the request
    record.

    A plugin subclasses it, adds ``make_client``, ``tool_results``, ``declared_tools``
    and ``open_connections``, and has its fake server call ``record(body)`` and
    ``next_step()`` for every request (``next_step`` raises `ConformanceError` when the
    script is exhausted).
    """

    request_id_header = "x-request-id"

    def __init__(self) -> None:
        self.steps: list[ScriptedStep] = []
        self.received: list[dict[str, Any]] = []

    def reset(self) -> None:
        self.steps.clear()
        self.received.clear()

    def script_text(self, text: str, *, usage: UsageDetails | None = None) -> None:
        self.steps.append(ScriptedStep("text", text=text, usage=usage))

    def script_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        *,
        usage: UsageDetails | None = None,
    ) -> None:
        self.script_parallel_tool_calls(
            [ScriptedCall(name, arguments, call_id)], usage=usage
        )

    def script_parallel_tool_calls(
        self, calls: Sequence[ScriptedCall], *, usage: UsageDetails | None = None
    ) -> None:
        self.steps.append(ScriptedStep("tool_calls", calls=tuple(calls), usage=usage))

    def script_error(
        self, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.steps.append(
            ScriptedStep(
                "error", status=status, message=message, headers=dict(headers or {})
            )
        )

    def script_stalled_stream(self, text: str) -> None:
        self.steps.append(ScriptedStep("stall", text=text))

    def requests(self) -> list[dict[str, Any]]:
        return list(self.received)

    def record(self, body: dict[str, Any]) -> None:
        self.received.append(body)

    def next_step(self) -> ScriptedStep:
        if not self.steps:
            raise ConformanceError(
                f"request {len(self.received)} reached the fake server, but no answer is scripted"
            )
        return self.steps.pop(0)
