"""The provider conformance kit: the checks and how to run them (spec/providers.md,
PV-33, PV-34).

A provider plugin proves that its client honours the generic contract by running these
checks against its own loopback fake server. The kit knows no wire format: the plugin's
tests implement `ProviderHarness` — usually by subclassing `ScriptedHarness`, which
keeps the script and the record, so that the plugin writes only how a step looks on its
wire — and the kit drives real clients through ``get_response`` and `Agent.run` with
real ``@tool`` functions.

    async def test_conformance_text() -> None:
        \"\"\"PV-34: ...\"\"\"
        async with MyHarness() as harness:
            await run_check(harness, "text")

``run_conformance(harness)`` runs every check and returns one `CheckResult` per check;
``run_check(harness, name)`` runs one and raises `ConformanceError` when it fails. Every
check names the rules it proves (``CHECKS``). The harness, and the script's semantics,
are in `provider_harness.py`.

Rules
-----
1. A check drives a real client of the plugin through its public API only
   (``get_response``, `Agent.run`, ``@tool``), in both modes where the rule concerns
   both.
2. A failing check raises `ConformanceError` saying what it expected and what happened;
   ``run_check`` adds the rules the check proves.
3. No check leaves anything running: clients are closed, and no single wait exceeds
   ``_WAIT``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from .._agents import Agent
from .._responses import ChatResponse
from .._tools import tool
from .._types import Message, UsageDetails
from ..providers.errors import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from .provider_harness import (
    ConformanceError,
    ProviderHarness,
    ScriptedCall,
    ScriptedHarness,
    ScriptedStep,
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

SECRET = "sk-conformance-5ecret-DO-NOT-PRINT"  # the API key the secrets check hands out
_WAIT = 5.0  # seconds any single wait of a check may take before it fails


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: its name, the rules it proves, and why it failed."""

    name: str
    rules: tuple[str, ...]
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class ConformanceCheck:
    name: str
    rules: tuple[str, ...]
    run: Callable[[ProviderHarness], Awaitable[None]]
    doc: str


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise ConformanceError(message)


@asynccontextmanager
async def _client(harness: ProviderHarness, **kwargs: Any) -> AsyncIterator[Any]:
    client = harness.make_client(**kwargs)
    try:
        yield client
    finally:
        closer = getattr(client, "aclose", None)
        if closer is not None:
            await closer()


async def _respond(
    client: Any, prompt: str, *, stream: bool, **kwargs: Any
) -> ChatResponse:
    if stream:
        result = client.get_response([Message("user", [prompt])], stream=True, **kwargs)
        async with asyncio.timeout(_WAIT):
            async for _ in result:
                pass
            final: ChatResponse = await result.get_final_response()
            return final
    async with asyncio.timeout(_WAIT):
        response: ChatResponse = await client.get_response(
            [Message("user", [prompt])], **kwargs
        )
        return response


MODES = (False, True)


def _mode(stream: bool) -> str:
    return "streaming" if stream else "non-streaming"


# --------------------------------------------------------------------------------------------
# The checks


async def check_text(harness: ProviderHarness) -> None:
    """Plain text, non-streaming: one assistant message with the text, a finish
    reason."""
    harness.reset()
    harness.script_text("Hello from the conformance kit.")
    async with _client(harness) as client:
        response = await _respond(client, "Say hello.", stream=False)
    _expect(
        response.text == "Hello from the conformance kit.",
        f"text was {response.text!r}",
    )
    _expect(
        [m.role for m in response.messages] == ["assistant"],
        f"expected one assistant message, got roles {[m.role for m in response.messages]}",
    )
    _expect(
        response.finish_reason is not None, "the response has no finish_reason (PV-8)"
    )
    _expect(
        len(harness.requests()) == 1, f"{len(harness.requests())} requests, expected 1"
    )


async def check_streaming_text(harness: ProviderHarness) -> None:
    """Plain text, streaming: assistant updates whose texts join to the text; same
    final."""
    harness.reset()
    text = "Streaming words arrive one by one."
    harness.script_text(text)
    async with _client(harness) as client:
        stream = client.get_response([Message("user", ["Stream."])], stream=True)
        updates = []
        async with asyncio.timeout(_WAIT):
            async for update in stream:
                updates.append(update)
            final: ChatResponse = await stream.get_final_response()
    joined = "".join(u.text for u in updates)
    _expect(joined == text, f"the streamed texts join to {joined!r}, expected {text!r}")
    _expect(
        all(u.role in (None, "assistant") for u in updates),
        f"streamed roles {[u.role for u in updates]} are not all assistant (PV-16)",
    )
    _expect(final.text == text, f"final text {final.text!r}")
    _expect(
        final.finish_reason is not None, "the streamed response has no finish_reason"
    )


_WEATHER = {"Paris": "Sunny, 21 degrees in Paris", "Tokyo": "Rain, 14 degrees in Tokyo"}


def _weather_tool(seen: list[tuple[str, str]]) -> Any:
    @tool
    async def get_weather(location: str, unit: str = "celsius") -> str:
        """Current weather for a city."""
        seen.append((location, unit))
        return _WEATHER.get(location, f"No data for {location}")

    return get_weather


async def check_tool_round_trip(harness: ProviderHarness) -> None:
    """A tool call through `Agent.run`, both modes: the tool runs, its result is sent
    back."""
    for stream in MODES:
        harness.reset()
        seen: list[tuple[str, str]] = []
        harness.script_tool_call("get_weather", {"location": "Paris"}, "call_kit_1")
        harness.script_text("It is sunny in Paris.")
        async with _client(harness) as client:
            agent = Agent(
                client, "You report the weather.", tools=[_weather_tool(seen)]
            )
            async with asyncio.timeout(_WAIT):
                if stream:
                    run = agent.run("Weather in Paris?", stream=True)
                    async for _ in run:
                        pass
                    response = await run.get_final_response()
                else:
                    response = await agent.run("Weather in Paris?")
        mode = _mode(stream)
        _expect(seen == [("Paris", "celsius")], f"{mode}: the tool saw {seen}")
        _expect(
            response.text.endswith("It is sunny in Paris."),
            f"{mode}: {response.text!r}",
        )
        calls = [
            c
            for m in response.messages
            for c in m.contents
            if c.type == "function_call"
        ]
        results = [
            c
            for m in response.messages
            for c in m.contents
            if c.type == "function_result"
        ]
        _expect(
            len(calls) == 1 and calls[0].name == "get_weather",
            f"{mode}: calls in the response: {calls}",
        )
        _expect(
            len(results) == 1 and results[0].call_id == calls[0].call_id,
            f"{mode}: the result does not answer the call: {results}",
        )
        _expect(
            calls[0].parse_arguments() == {"location": "Paris"},
            f"{mode}: arguments {calls[0].arguments!r}",
        )
        sent = harness.requests()
        _expect(len(sent) == 2, f"{mode}: {len(sent)} requests, expected 2")
        _expect(
            "get_weather" in harness.declared_tools(sent[0]),
            f"{mode}: the first request declares {harness.declared_tools(sent[0])} (PV-5)",
        )
        _expect(
            harness.tool_results(sent[1]) == [_WEATHER["Paris"]],
            f"{mode}: the second request sends results {harness.tool_results(sent[1])} (PV-7)",
        )


async def check_parallel_tool_calls(harness: ProviderHarness) -> None:
    """Two calls in one response, both modes: both run, both results go back, in call
    order."""
    for stream in MODES:
        harness.reset()
        seen: list[tuple[str, str]] = []
        harness.script_parallel_tool_calls(
            [
                ScriptedCall("get_weather", {"location": "Paris"}, "call_kit_p"),
                ScriptedCall(
                    "get_weather",
                    {"location": "Tokyo", "unit": "kelvin"},
                    "call_kit_tyo",
                ),
            ]
        )
        harness.script_text("Sunny in Paris, rain in Tokyo.")
        async with _client(harness) as client:
            response = await _respond(
                client, "Weather in Paris and Tokyo?", stream=stream,
                options={"tools": [_weather_tool(seen)]},
            )  # fmt: skip
        mode = _mode(stream)
        _expect(
            sorted(seen) == [("Paris", "celsius"), ("Tokyo", "kelvin")],
            f"{mode}: the tool saw {seen}",
        )
        calls = [
            c
            for m in response.messages
            for c in m.contents
            if c.type == "function_call"
        ]
        _expect(
            len(calls) == 2, f"{mode}: {len(calls)} calls in the response, expected 2"
        )
        tool_messages = [m for m in response.messages if m.role == "tool"]
        _expect(
            len(tool_messages) == 1
            and [c.call_id for c in tool_messages[0].contents]
            == [c.call_id for c in calls],
            f"{mode}: expected one tool message with both results in call order, got {tool_messages}",
        )
        sent = harness.requests()
        _expect(len(sent) == 2, f"{mode}: {len(sent)} requests, expected 2")
        results = harness.tool_results(sent[1])
        _expect(
            results == [_WEATHER["Paris"], _WEATHER["Tokyo"]],
            f"{mode}: the second request sends results {results}",
        )


_USAGE = UsageDetails(input_token_count=11, output_token_count=7, total_token_count=18)


async def check_usage(harness: ProviderHarness) -> None:
    """Usage is reported as ``usage_details`` in both modes, never as text (PV-8)."""
    for stream in MODES:
        harness.reset()
        harness.script_text("Counted.", usage=_USAGE)
        async with _client(harness) as client:
            response = await _respond(client, "Count.", stream=stream)
        usage = response.usage_details
        mode = _mode(stream)
        _expect(usage is not None, f"{mode}: no usage_details")
        assert usage is not None
        got = (
            usage.input_token_count,
            usage.output_token_count,
            usage.total_token_count,
        )
        _expect(got == (11, 7, 18), f"{mode}: usage (input, output, total) was {got}")
        _expect(response.text == "Counted.", f"{mode}: text {response.text!r}")


_STATUS_ERRORS: tuple[tuple[int, type[ProviderError]], ...] = (
    (400, BadRequestError),
    (401, AuthenticationError),
    (403, AuthenticationError),
    (404, NotFoundError),
    (422, BadRequestError),
    (429, RateLimitError),
    (500, ServerError),
    (503, ServerError),
)


async def check_error_status(harness: ProviderHarness) -> None:
    """Each error status raises its typed error with status, message and request id
    (PV-23)."""
    for stream in MODES:
        for status, expected in _STATUS_ERRORS:
            harness.reset()
            message = f"kit says no ({status})"
            request_id = f"req_kit_{status}"
            harness.script_error(
                status, message, {harness.request_id_header: request_id}
            )
            mode = f"{_mode(stream)} HTTP {status}"
            async with _client(harness, max_retries=0) as client:
                try:
                    await _respond(client, "Fail.", stream=stream)
                except ProviderError as exc:
                    error: ProviderError = exc
                else:
                    raise ConformanceError(f"{mode}: no error was raised")
            _expect(
                isinstance(error, expected),
                f"{mode}: raised {type(error).__name__}, expected {expected.__name__}",
            )
            _expect(error.status == status, f"{mode}: .status is {error.status}")
            _expect(
                message in error.provider_message, f"{mode}: {error.provider_message!r}"
            )
            _expect(
                error.request_id == request_id,
                f"{mode}: .request_id {error.request_id!r}",
            )
            _expect(
                message in str(error) and str(status) in str(error), f"{mode}: {error}"
            )
            _expect(len(harness.requests()) == 1, f"{mode}: retried with max_retries=0")


async def check_secrets(harness: ProviderHarness) -> None:
    """The API key is in neither the client's repr nor an error's text (PV-24)."""
    harness.reset()
    harness.script_error(401, f"Incorrect API key provided: {SECRET}.")
    async with _client(harness, api_key=SECRET, max_retries=0) as client:
        _expect(SECRET not in repr(client), f"repr shows the key: {client!r}")
        try:
            await _respond(client, "Hi.", stream=False)
        except ProviderError as exc:
            texts = [str(exc), repr(exc), exc.provider_message, *map(str, exc.args)]
            _expect(
                not any(SECRET in t for t in texts), f"the key is in the error: {texts}"
            )
        else:
            raise ConformanceError("a 401 raised nothing")


class _Sleeps:
    """A fake ``asyncio.sleep``: records the delays, waits for nothing."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class _FixedRandom:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


async def check_retry(harness: ProviderHarness) -> None:
    """Retryable answers are retried after the server's or the policy's delay (PV-25,
    PV-27)."""
    for stream in MODES:
        mode = _mode(stream)
        harness.reset()
        sleep = _Sleeps()

        harness.script_error(429, "slow down", {"retry-after-ms": "1500"})
        harness.script_error(503, "overloaded")
        harness.script_text("Third time lucky.")
        async with _client(
            harness, max_retries=2, sleep=sleep, rng=_FixedRandom(0.0)
        ) as client:
            response = await _respond(client, "Retry.", stream=stream)
        _expect(response.text == "Third time lucky.", f"{mode}: text {response.text!r}")
        _expect(
            len(harness.requests()) == 3, f"{mode}: {len(harness.requests())} requests"
        )
        _expect(
            sleep.calls == [1.5, 0.0],
            f"{mode}: slept {sleep.calls}, expected [1.5, 0.0]",
        )

        harness.reset()
        harness.script_error(503, "still overloaded")
        async with _client(harness, max_retries=0, sleep=sleep) as client:
            try:
                await _respond(client, "No retry.", stream=stream)
            except ServerError:
                pass
            else:
                raise ConformanceError(
                    f"{mode}: a 503 with max_retries=0 raised no ServerError"
                )
        _expect(len(harness.requests()) == 1, f"{mode}: max_retries=0 still retried")


async def check_stream_equals_non_stream(harness: ProviderHarness) -> None:
    """The same script gives equal final responses in both modes, tool loop included
    (PV-9)."""
    responses: list[ChatResponse] = []
    for stream in MODES:
        harness.reset()
        harness.script_tool_call(
            "get_weather", {"location": "Tokyo"}, "call_kit_eq", usage=_USAGE
        )
        harness.script_text("Rain in Tokyo.", usage=_USAGE)
        async with _client(harness) as client:
            responses.append(
                await _respond(
                    client,
                    "Tokyo?",
                    stream=stream,
                    options={"tools": [_weather_tool([])]},
                )
            )
    plain, streamed = responses
    if plain != streamed:
        raise ConformanceError(
            "streaming and non-streaming final responses differ:\n"
            f"  non-streaming: {plain.to_dict()}\n  streaming:     {streamed.to_dict()}"
        )


async def _cancel_consumer(client: Any) -> None:
    """Start a task that consumes a stream, cancel it once the first text arrived."""
    first = asyncio.Event()

    async def consume() -> None:
        async for update in client.get_response(
            [Message("user", ["Go."])], stream=True
        ):
            if update.text:
                first.set()

    task = asyncio.create_task(consume())
    try:
        async with asyncio.timeout(_WAIT):
            await first.wait()
    finally:
        task.cancel()
        # never raises, so our own cancellation is not swallowed
        await asyncio.wait([task])
    _expect(task.cancelled(), f"the consumer ended without being cancelled: {task!r}")


async def _leave_early(client: Any) -> None:
    """Break out of a stream after the first text; ``async with`` closes it."""
    stream = client.get_response([Message("user", ["Go."])], stream=True)
    async with asyncio.timeout(_WAIT), stream:
        async for update in stream:
            if update.text:
                break


async def check_cancellation(harness: ProviderHarness) -> None:
    """Cancelling a consumer or closing a stream early closes its connection (PV-30)."""
    before = {t for t in asyncio.all_tasks() if not t.done()}
    rounds = 10
    async with _client(harness) as client:
        for i in range(rounds):
            harness.reset()
            harness.script_stalled_stream(f"partial {i}")
            if i % 2 == 0:
                await _cancel_consumer(client)
            else:
                await _leave_early(client)
        still_open = await harness.open_connections()
        # the server notices closed connections soon, not at once
        for _ in range(int(_WAIT / 0.01)):
            if not still_open:
                break
            await asyncio.sleep(0.01)
            still_open = await harness.open_connections()
        _expect(
            still_open == 0,
            f"{still_open} connection(s) still open after {rounds} abandoned streams",
        )
    for _ in range(3):
        await asyncio.sleep(0)
    left = [t for t in asyncio.all_tasks() - before if not t.done()]
    left = [t for t in left if t is not asyncio.current_task()]
    _expect(not left, f"tasks left running: {left}")


CHECKS: tuple[ConformanceCheck, ...] = tuple(
    ConformanceCheck(name, rules, run, (run.__doc__ or "").strip())
    for name, rules, run in (
        ("text", ("PV-8", "PV-34"), check_text),
        ("streaming_text", ("PV-16", "PV-34"), check_streaming_text),
        ("tool_round_trip", ("PV-5", "PV-7", "PV-34"), check_tool_round_trip),
        ("parallel_tool_calls", ("PV-13", "PV-34"), check_parallel_tool_calls),
        ("usage", ("PV-8", "PV-34"), check_usage),
        ("error_status", ("PV-23", "PV-24"), check_error_status),
        ("secrets", ("PV-24",), check_secrets),
        ("retry", ("PV-25", "PV-27", "PV-32"), check_retry),
        ("stream_equals_non_stream", ("PV-9", "PV-34"), check_stream_equals_non_stream),
        ("cancellation", ("PV-30",), check_cancellation),
    )
)


def _detail(exc: Exception) -> str:
    return (
        str(exc)
        if isinstance(exc, ConformanceError)
        else f"{type(exc).__name__}: {exc}"
    )


async def run_check(harness: ProviderHarness, name: str) -> CheckResult:
    """Run one check by name; raise `ConformanceError` (naming its rules) when it
    fails."""
    for check in CHECKS:
        if check.name == name:
            try:
                await check.run(harness)
            except Exception as exc:  # an unexpected exception fails the check too
                raise ConformanceError(
                    f"{name} ({', '.join(check.rules)}): {_detail(exc)}"
                ) from exc
            return CheckResult(check.name, check.rules, True)
    raise KeyError(f"no conformance check {name!r}; known: {[c.name for c in CHECKS]}")


async def run_conformance(harness: ProviderHarness) -> list[CheckResult]:
    """Run every check; one `CheckResult` per check, failures included (never raises for
    them)."""
    results: list[CheckResult] = []
    for check in CHECKS:
        try:
            await check.run(harness)
        # a failing check is a result, and the others still run
        except Exception as exc:
            results.append(CheckResult(check.name, check.rules, False, _detail(exc)))
        else:
            results.append(CheckResult(check.name, check.rules, True))
    return results
