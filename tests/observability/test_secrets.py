"""Logging under the `minagent` hierarchy and no secret anywhere (spec/observability.md
OB-15, OB-16)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import minagent
from minagent import (
    Agent,
    BaseChatClient,
    ChatResponse,
    FunctionTool,
    Message,
    RunTrace,
    set_tracer,
)
from minagent.providers import Secret, redact
from minagent.testing import call
from minagent.tracing import genai
from minagent.tracing.safety import SECRET_TEXT, secret_names

from ._recording import RecordingTracer

KEY = "sk-test-FAKEKEY-0123456789abcdef"

plugin_logger = logging.getLogger("minagent_fakeprovider")
# kept outside the client, whose vars are searched for the key
HEADERS_SEEN: list[Any] = []


class KeyedClient(BaseChatClient):
    """A provider the way plugins are written: the key in a Secret, a DEBUG record per
    request."""

    def __init__(self, api_key: str) -> None:
        super().__init__()
        self._key = Secret(api_key)
        self.model = "fake-model"
        self.calls = 0

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        self.calls += 1
        HEADERS_SEEN.append(kwargs.get("headers"))
        plugin_logger.debug(
            "POST %s",
            redact(f"https://api.example/v1?key={self._key.reveal()}", self._key),
        )
        if self.calls == 1:
            login = call("login", {"user": "bob", "password": KEY}, call_id="c1")
            return ChatResponse([Message("assistant", [login])], response_id="r1")
        return ChatResponse([Message("assistant", ["logged in"])], response_id="r2")


def login_tool(seen: list[str]) -> FunctionTool:
    def login(user: str, password: str) -> str:
        seen.append(password)
        return f"welcome {user}"

    return FunctionTool(
        name="login",
        description="Log in.",
        func=login,
        parameters={
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "password": {"type": "string", "format": "password", "writeOnly": True},
            },
            "required": ["user", "password"],
        },
    )


class FanoutSpan:
    def __init__(self, spans: list[Any]) -> None:
        self.spans = spans

    def set_attributes(self, attributes: Any) -> None:
        for span in self.spans:
            span.set_attributes(attributes)

    def record_error(self, error: BaseException) -> None:
        for span in self.spans:
            span.record_error(error)

    def add_event(self, name: str, attributes: Any) -> None:
        for span in self.spans:
            if hasattr(span, "add_event"):
                span.add_event(name, attributes)

    def end(self) -> None:
        for span in self.spans:
            span.end()


class Fanout:
    """Two tracers at once: the recording tracer and the run trace."""

    def __init__(self, *tracers: Any) -> None:
        self.tracers = tracers

    def start_span(self, name: str, attributes: Any, parent: Any) -> FanoutSpan:
        parents = (
            parent.spans
            if isinstance(parent, FanoutSpan)
            else [None] * len(self.tracers)
        )
        return FanoutSpan(
            [
                t.start_span(name, attributes, p)
                for t, p in zip(self.tracers, parents, strict=True)
            ]
        )

    def activate(self, span: Any) -> Any:
        return self.tracers[0].activate(span.spans[0])


async def test_a_whole_run_at_debug_level_shows_no_secret(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """OB-16, OB-15, OB-6: a run with an API key, an Authorization and an x-api-key
    header and a secret tool argument, at DEBUG level, traced with contents and recorded
    as a run trace: the key is in no log record, repr, span attribute, trace event or
    diagram (while the tool got it)."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    client = KeyedClient(KEY)
    agent = Agent(client, "help", name="Bot", tools=[login_tool(seen)])
    headers = {"Authorization": f"Bearer {KEY}", "x-api-key": KEY}
    spans = RecordingTracer()
    trace = RunTrace()
    set_tracer(Fanout(spans, trace), record_content=True)
    try:
        kwargs: dict[str, Any] = {
            "client_kwargs": {"headers": headers},
            "middleware": trace.middleware,
        }
        if stream:
            response = await agent.run(
                "log me in", stream=True, **kwargs
            ).get_final_response()
        else:
            response = await agent.run("log me in", **kwargs)
    finally:
        set_tracer(None)
    assert seen == [KEY]  # the tool received the secret
    assert HEADERS_SEEN[-2:] == [headers, headers]  # and the provider its headers
    assert response.text == "logged in"

    records = [r for r in caplog.records if r.name.startswith("minagent")]
    assert {r.name for r in records} >= {"minagent.client", "minagent_fakeprovider"}
    texts = [r.getMessage() for r in caplog.records] + [
        logging.Formatter().format(r) for r in caplog.records
    ]
    assert all(KEY not in text for text in texts)
    attributes = json.dumps([s.attributes for s in spans.spans], default=str)
    assert KEY not in attributes
    assert '"[secret]"' in attributes or "[secret]" in attributes
    tool_span = spans.named("execute_tool")[0]
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {
        "user": "bob",
        "password": "[secret]",
    }
    assert [e["kind"] for e in trace.events if e["kind"].startswith("tool")] == [
        "tool_start",
        "tool_in",
        "tool_out",
        "tool_end",
    ]
    assert KEY not in trace.to_json()
    assert KEY not in trace.to_mermaid()
    assert KEY not in repr(client)
    assert KEY not in repr(vars(client))


def test_the_loop_logs_each_model_call_and_tool_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """OB-15: DEBUG records on `minagent.client` for each model call and each tool call,
    with counts, names and ids only."""
    import asyncio

    caplog.set_level(logging.DEBUG, logger="minagent")
    seen: list[str] = []
    agent = Agent(KeyedClient(KEY), tools=[login_tool(seen)])
    asyncio.run(agent.run("hi"))
    messages = [r.getMessage() for r in caplog.records if r.name == "minagent.client"]
    assert messages == [
        "model call 1 (model=None, tool_choice=auto, stream=False): finish_reason=None, 1 message(s)",
        "tool call login [c1]",
        "model call 2 (model=None, tool_choice=auto, stream=False): finish_reason=None, 1 message(s)",
    ]
    assert all(
        r.levelno == logging.DEBUG
        for r in caplog.records
        if r.name == "minagent.client"
    )
    assert logging.getLogger("minagent").handlers == []


async def test_a_failing_tool_is_logged_by_type_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """OB-15, OB-16: a tool's exception is logged by its type, never its text."""
    caplog.set_level(logging.DEBUG, logger="minagent")

    def login(user: str, password: str) -> str:
        raise PermissionError(f"bad password {password}")

    tool = FunctionTool(name="login", func=login, parameters=login_tool([]).parameters)
    response = await Agent(KeyedClient(KEY), tools=[tool]).run("hi")
    assert response.text == "logged in"
    messages = [r.getMessage() for r in caplog.records if r.name == "minagent.client"]
    assert "tool call login [c1] raised PermissionError" in messages
    assert all(KEY not in m for m in messages)


@pytest.mark.parametrize("detailed", [False, True])
async def test_a_failing_tool_logs_one_warning_naming_the_setting(
    caplog: pytest.LogCaptureFixture, stream: bool, detailed: bool
) -> None:
    """OB-30: a tool that raises logs exactly one WARNING on `minagent.client` naming
    the tool, the exception's type and `include_detailed_errors`, with or without the
    detail and in both modes; never the exception's message."""
    from minagent import FunctionInvocationConfiguration
    from minagent.testing import ScriptedChatClient, reply
    from tests._support.modes import run

    caplog.set_level(logging.WARNING, logger="minagent")

    def find_flights(city: str) -> str:
        raise ConnectionError(f"flight search is down for {city} {KEY}")

    client = ScriptedChatClient(
        [reply(call("find_flights", {"city": "Oslo"}, call_id="c1")), "sorry"]
    )
    client.function_invocation_configuration = FunctionInvocationConfiguration(
        include_detailed_errors=detailed
    )
    response = await run(Agent(client, tools=[find_flights]), "go", stream=stream)
    assert response.text == "sorry"
    warnings = [
        r
        for r in caplog.records
        if r.name == "minagent.client" and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "'find_flights'" in message
    assert "ConnectionError" in message
    assert "include_detailed_errors" in message
    assert "flight search is down" not in message
    assert KEY not in message


def test_secret_parameters_are_read_from_the_schema() -> None:
    """OB-16: writeOnly or format password marks a parameter secret."""
    from minagent._schema import secret_parameters

    assert secret_parameters(login_tool([])) == frozenset({"password"})
    assert (
        secret_parameters(FunctionTool(name="x", parameters={"type": "object"}))
        == frozenset()
    )
    assert secret_parameters(object()) == frozenset()
    assert minagent.get_tracer() is None


SECRET = frozenset({"password"})


def test_a_tool_without_a_schema_has_no_secret_names() -> None:
    """OB-16: secret names come from the tool's schema; a tool with none (or not a
    mapping) has none."""

    class Bare:
        parameters = None

    assert secret_names(Bare()) == frozenset()
    assert secret_names(object()) == frozenset()


def test_arguments_are_hidden_whatever_their_form() -> None:
    """OB-16, OB-21: recorded arguments hide the secret keys when they are a mapping
    (given as data or JSON text); anything else (not JSON, not an object) is recorded as
    [secret] whole."""
    assert genai._hide({"k": "v", "password": "x"}, SECRET) == {
        "k": "v",
        "password": SECRET_TEXT,
    }
    assert genai._hide('{"password": "x"}', SECRET) == {"password": SECRET_TEXT}
    assert genai._hide("not json", SECRET) == SECRET_TEXT
    assert genai._hide("[1]", SECRET) == SECRET_TEXT
    assert genai._parsed({"a": 1}) == {"a": 1}


def test_context_reprs_carry_no_secret() -> None:
    """OB-20: kwargs show their keys only; secret tool arguments show as [secret]."""
    from minagent import ChatContext, FunctionInvocationContext, FunctionTool

    chat = ChatContext(
        None, [], kwargs={"headers": {"Authorization": "Bearer sk-live-123456789"}}
    )
    assert "sk-live" not in repr(chat)
    assert "headers" in repr(chat)
    login = FunctionTool(
        name="login",
        parameters={
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "password": {"type": "string", "format": "password"},
            },
        },
    )
    context = FunctionInvocationContext(
        login, {"user": "ada", "password": "hunter2-secret"}
    )
    assert "hunter2" not in repr(context)
    assert "[secret]" in repr(context)
    assert "ada" in repr(context)


async def test_debug_is_asked_once_per_request(
    caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    """OB-15: whether DEBUG is enabled is asked when the request starts: a level raised
    by the tool while the request runs applies from the next request, which logs every
    call."""
    logger = logging.getLogger("minagent.client")
    caplog.set_level(logging.INFO, logger="minagent.client")  # restored after the test
    caplog.handler.setLevel(logging.DEBUG)  # the logger's level decides

    def raise_level(user: str, password: str) -> str:
        logger.setLevel(logging.DEBUG)
        return "ok"

    tool = FunctionTool(
        name="login", func=raise_level, parameters=login_tool([]).parameters
    )
    for expected in (0, 3):
        # a fresh client: a tool call, then the answer
        agent = Agent(KeyedClient(KEY), tools=[tool])
        caplog.clear()
        if stream:
            await agent.run("hi", stream=True).get_final_response()
        else:
            await agent.run("hi")
        assert (
            len([r for r in caplog.records if r.name == "minagent.client"]) == expected
        )
