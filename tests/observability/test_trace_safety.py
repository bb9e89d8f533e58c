"""A trace keeps no secret the run hid, and a tracer that raises never breaks the run
(spec/observability.md OB-21, OB-22), in both modes."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from minagent import Agent, Content, FunctionTool, set_tracer
from minagent._observe import current, install
from minagent.middleware import Redact
from minagent.testing import ScriptedChatClient, call
from minagent.tracing import RecordedToolError, error_type, genai
from minagent.tracing.safety import SECRET_TEXT, hide, secret_values
from tests._support.modes import run

from ._recording import RecordedSpan, RecordingTracer

SECRET = "hunter2-very-secret-value"


@pytest.fixture(autouse=True)
def no_tracer_after() -> Iterator[None]:
    yield
    set_tracer(None)


def recorded(tracer: RecordingTracer) -> str:
    """Everything the tracer was given: attributes and recorded errors' texts."""
    return "\n".join(
        [json.dumps(s.attributes, default=str) for s in tracer.spans]
        + [f"{e!s} {e!r}" for s in tracer.spans for e in s.errors]
    )


def tool_of(
    name: str, parameters: dict[str, Any], func: Callable[..., Any]
) -> FunctionTool:
    return FunctionTool(name=name, description="", func=func, parameters=parameters)


NESTED = {
    "type": "object",
    "properties": {
        "creds": {
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "token": {"type": "string", "writeOnly": True},
            },
        },
        "keys": {"type": "array", "items": {"type": "string", "format": "password"}},
        "vault": {"$ref": "#/$defs/Vault"},
        "either": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Vault"}]},
    },
    "$defs": {
        "Vault": {
            "type": "object",
            "properties": {"pin": {"type": "string", "format": "password"}},
        }
    },
}
NESTED_ARGUMENTS = {
    "creds": {"user": "bob", "token": SECRET},
    "keys": [SECRET + "-1", SECRET + "-2"],
    "vault": {"pin": SECRET + "-pin"},
    "either": {"pin": SECRET + "-either"},
}


async def test_secrets_nested_in_arguments_are_never_recorded(stream: bool) -> None:
    """OB-21, OB-16: with record_content=True, a secret inside an object parameter, an
    array of secrets, a secret behind $ref and behind anyOf are recorded as "[secret]"
    in the tool span's arguments and in the chat and agent spans' messages; the rest is
    recorded as it is."""
    tracer = RecordingTracer()
    set_tracer(tracer, record_content=True)
    connect = tool_of("connect", NESTED, lambda **arguments: "connected")
    agent = Agent(
        ScriptedChatClient([call("connect", NESTED_ARGUMENTS), "ok"]), tools=[connect]
    )
    assert (await run(agent, "go", stream=stream)).text == "ok"
    assert SECRET not in recorded(tracer)
    [span] = tracer.named("execute_tool")
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {
        "creds": {"user": "bob", "token": "[secret]"},
        "keys": "[secret]",
        "vault": {"pin": "[secret]"},
        "either": {"pin": "[secret]"},
    }
    assert (
        '"user": "bob"' in tracer.named("chat")[-1].attributes["gen_ai.input.messages"]
    )


def failing_login(password: str) -> str:
    raise ValueError(f"wrong password {password} for the account")


LOGIN = {
    "type": "object",
    "properties": {"password": {"type": "string", "format": "password"}},
}


@pytest.mark.parametrize("record_content", [False, True])
async def test_a_tools_exception_text_keeps_no_secret(
    stream: bool, record_content: bool
) -> None:
    """OB-21, OB-7: a tool whose exception quotes its secret argument: without
    record_content the span records a RecordedToolError of the exception's type only;
    with it, the text with the secret replaced; error.type names the tool's exception in
    both cases."""
    tracer = RecordingTracer()
    set_tracer(tracer, record_content=record_content)
    agent = Agent(
        ScriptedChatClient([call("login", {"password": SECRET}), "ok"]),
        tools=[tool_of("login", LOGIN, failing_login)],
    )
    assert (await run(agent, "go", stream=stream)).text == "ok"
    assert SECRET not in recorded(tracer)
    [span] = tracer.named("execute_tool")
    [error] = span.errors
    assert isinstance(error, RecordedToolError)
    assert error_type(error) == span.attributes["error.type"] == "ValueError"
    if record_content:
        assert str(error) == "wrong password [secret] for the account"
    else:
        assert (
            str(error)
            == "ValueError (its message is recorded only with record_content=True)"
        )


async def test_the_chat_span_keeps_nothing_redact_removed(stream: bool) -> None:
    """OB-21, ML-11, ML-12: with record_content=True and Redact in the chat middleware,
    the chat span's output messages are redacted as the run's consumer saw them."""
    tracer = RecordingTracer()
    set_tracer(tracer, record_content=True)
    agent = Agent(
        ScriptedChatClient([f"my key is {SECRET} ok"]),
        middleware=[Redact([r"hunter2-\S+"])],
    )
    assert (await run(agent, "go", stream=stream)).text == "my key is [REDACTED] ok"
    assert SECRET not in recorded(tracer)
    [chat] = tracer.named("chat")
    assert "my key is [REDACTED] ok" in chat.attributes["gen_ai.output.messages"]


SECRET_NAMES = frozenset({"password"})


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"inner": value}
    return value


def test_hide_walks_lists_and_hides_what_is_too_deep_to_walk() -> None:
    """OB-21: a secret parameter is hidden at any depth, inside lists too; a value
    nested deeper than the walk goes is hidden whole rather than risk showing a
    secret."""
    value = {
        "users": [{"name": "ann", "password": "hunter22"}, ("x", {"password": "p4ss"})]
    }
    assert hide(value, SECRET_NAMES) == {
        "users": [
            {"name": "ann", "password": SECRET_TEXT},
            ["x", {"password": SECRET_TEXT}],
        ]
    }
    deep = hide(nested(200, {"password": "hunter22"}), SECRET_NAMES)
    assert "hunter22" not in repr(deep)
    assert SECRET_TEXT in repr(deep)


def test_secret_values_stop_at_the_depth_limit() -> None:
    """OB-21: the secret values collected for scrubbing are those within the walked
    depth, longest first."""
    value = {
        "password": "short-one",
        "list": [{"password": "a-much-longer-one"}],
        "deep": nested(200, "x"),
    }
    assert secret_values(value, SECRET_NAMES) == ["a-much-longer-one", "short-one"]


def test_secret_values_of_a_call_with_unreadable_arguments_are_none() -> None:
    """OB-21: a call whose arguments cannot be parsed yields no secret values to scrub
    (nothing to match)."""

    class Tool:
        def __init__(self) -> None:
            self.parameters = {
                "type": "object",
                "properties": {"password": {"type": "string", "writeOnly": True}},
            }

    good = Content.from_function_call("c", "t", '{"password": "hunter22"}')
    bad = Content.from_function_call("c", "t", "{not json")
    assert genai._secret_values_of(good, Tool()) == ["hunter22"]
    assert genai._secret_values_of(bad, Tool()) == []


class Raising(RecordingTracer):
    """A recording tracer whose ``hook`` raises every time it is called."""

    def __init__(self, hook: str) -> None:
        super().__init__()
        self.hook = hook
        self.raised = 0

    def _boom(self, *args: Any, **kwargs: Any) -> Any:
        self.raised += 1
        raise RuntimeError(f"tracer bug in {self.hook}")

    def start_span(self, name: str, attributes: Any, parent: Any) -> RecordedSpan:
        if self.hook == "start_span":
            self._boom()
        span = super().start_span(name, attributes, parent)
        if self.hook in ("set_attributes", "record_error", "end", "add_event"):
            setattr(span, self.hook, self._boom)
        return span

    def activate(self, span: Any) -> Any:
        if self.hook == "activate":
            self._boom()
        manager = super().activate(span)
        if self.hook == "activate-exit":

            class Leaving:
                def __enter__(inner) -> None:
                    manager.__enter__()

                def __exit__(inner, *exc: Any) -> None:
                    manager.__exit__(*exc)
                    self._boom()

            return Leaving()
        return manager


HOOKS = [
    "start_span",
    "set_attributes",
    "record_error",
    "end",
    "add_event",
    "activate",
    "activate-exit",
]


@pytest.mark.parametrize("hook", HOOKS)
async def test_a_tracer_that_raises_never_fails_the_run(
    stream: bool, hook: str, caplog: pytest.LogCaptureFixture
) -> None:
    """OB-22: a tracer raising in any hook leaves the run as it is without a tracer (its
    answer, the tool's error result); the first failure is logged once at WARNING with
    its traceback."""
    tracer = Raising(hook)
    set_tracer(tracer, record_content=True)
    client = ScriptedChatClient([call("login", {"password": "x"}), "done"])
    agent = Agent(client, tools=[tool_of("login", LOGIN, failing_login)])
    with caplog.at_level(logging.DEBUG, logger="minagent.tracing"):
        answer = await run(agent, "go", stream=stream)
    assert answer.text == "done"
    assert [c.type for m in answer.messages for c in m.contents][:2] == [
        "function_call",
        "function_result",
    ]
    assert tracer.raised >= 1
    warnings = [
        r
        for r in caplog.records
        if r.name == "minagent.tracing" and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 1
    assert warnings[0].exc_info is not None
    assert (
        len([r for r in caplog.records if r.name == "minagent.tracing"])
        == tracer.raised
    )


def test_install_refuses_what_is_not_an_observer() -> None:
    """OB-22: install() takes an Observer (or None); anything else is a TypeError naming
    its type, and the installed observer is unchanged."""
    before = current()
    with pytest.raises(TypeError, match="takes an Observer, got str"):
        install("tracer")  # type: ignore[arg-type]
    assert current() is before
