"""Edge cases of minagent.hooks and minagent.middleware: the errors and the quiet
paths."""

from __future__ import annotations

import pytest

from minagent import (
    Agent,
    ChatMiddleware,
    ChatResponse,
    Content,
    Message,
    MiddlewareException,
    MiddlewareTermination,
    tool,
)
from minagent.hooks import (
    HookMiddleware,
    HookState,
    ModelRequest,
    ToolCallRequest,
    after_agent,
    wrap_model_call,
)
from minagent.middleware import (
    HistoryTrimmer,
    ModelRetry,
    Summarizer,
    ToolRetry,
    approx_tokens,
    clean_cut,
)
from minagent.testing import ScriptedChatClient, call
from tests._support.streamed import run, tool_t


async def test_default_hooks_do_nothing():
    """HK-3: the base class's hooks are no-ops (so a subclass may call super())."""
    mw = HookMiddleware()
    state = HookState((), {})
    assert [
        mw.before_agent(state),
        mw.after_agent(state),
        mw.before_model(state),
        mw.after_model(state),
    ] == [None] * 4
    assert mw.wrap_model_call("r", lambda r: r) == "r"
    assert mw.wrap_tool_call("r", lambda r: r) == "r"
    assert repr(mw) == "<HookMiddleware hook middleware: no hooks>"


def test_request_override_errors():
    """HK-8, HK-10: override refuses unknown fields and named options inside options; a
    new tool_call brings its arguments."""
    request = ModelRequest((), None, (), None, None, {}, None, HookState((), {}))
    with pytest.raises(TypeError, match="may not hold"):
        request.override(options={"instructions": "x"})
    assert request.override(messages=[Message("user", ["hi"])]).messages[0].text == "hi"
    tool_request = ToolCallRequest(
        call("f", {"a": 1}), None, {"a": 1}, HookState((), {})
    )
    with pytest.raises(TypeError, match="unknown field"):
        tool_request.override(name="g")
    assert dict(tool_request.override(tool_call=call("g", {"b": 2})).arguments) == {
        "b": 2
    }


class _Jump(HookMiddleware):
    def __init__(self, hook, update):
        self.hook = hook
        self.update = update

    def before_agent(self, state):
        return self.update if self.hook == "before_agent" else None

    def after_agent(self, state):
        return self.update if self.hook == "after_agent" else None

    def after_model(self, state):
        return self.update if self.hook == "after_model" else None


@pytest.mark.parametrize(
    ("hook", "update", "message"),
    [
        (
            "before_agent",
            {"jump_to": "tools", "response": [Message("assistant", [call("tool_t")])]},
            "is for before_model",
        ),
        ("after_agent", {"jump_to": "end"}, "the run has ended"),
        (
            "after_model",
            {"jump_to": "tools", "response": [Message("assistant", [call("tool_t")])]},
            "is for before_model",
        ),
        ("before_agent", {"messages": [3]}, "must be Message objects or str"),
    ],
)
async def test_misplaced_updates(hook, update, message):
    """HK-5: jump_to where it does not apply, or messages of the wrong type, are errors
    naming the hook."""
    with pytest.raises(MiddlewareException, match=message):
        await Agent(
            ScriptedChatClient(["x"]), tools=[tool_t], middleware=[_Jump(hook, update)]
        ).run("x")


async def test_after_model_end_without_response(stream):
    """HK-5: after_model "end" without a response just removes the calls; text already
    there stays."""

    class Stop(HookMiddleware):
        def after_model(self, state):
            return {"jump_to": "end"}

    client = ScriptedChatClient([[Content.from_text("thinking"), call("tool_t")]])
    result = await run(
        Agent(client, tools=[tool_t], middleware=[Stop()]), "x", stream=stream
    )
    assert [(m.role, m.text) for m in result.messages] == [("assistant", "thinking")]


async def test_wrap_model_call_must_return_a_response():
    """HK-7: any other return value is a MiddlewareException naming the hook."""

    @wrap_model_call
    async def wrong(request, handler):
        await handler(request)
        return 42

    with pytest.raises(
        MiddlewareException, match=r"wrong\.wrap_model_call must return a ChatResponse"
    ):
        await Agent(ScriptedChatClient(["x"]), middleware=[wrong]).run("x")


async def test_inner_middleware_leaving_no_stream_is_named():
    """HK-7: while streaming, an inner middleware that leaves a ChatResponse is reported
    by the wrap hook."""

    class NotAStream(ChatMiddleware):
        async def process(self, context, call_next):
            context.result = ChatResponse([Message("assistant", ["x"])])

    @wrap_model_call
    async def outer(request, handler):
        return await handler(request)

    stream = Agent(ScriptedChatClient([]), middleware=[outer, NotAStream()]).run(
        "x", stream=True
    )
    with pytest.raises(MiddlewareException, match="did not produce a ResponseStream"):
        await stream.get_final_response()


async def test_after_agent_returning_nothing_keeps_the_response(stream):
    """HK-5: an after_agent hook that returns None leaves the response as it is."""

    @after_agent
    def look(state):
        return None

    result = await run(
        Agent(ScriptedChatClient(["x"]), middleware=[look]), "x", stream=stream
    )
    assert result.text == "x"


async def test_retry_predicate_and_control_flow(stream):
    """ML-1, ML-7: retry_on may be a predicate; MiddlewareTermination from a tool is
    never retried."""
    client = ScriptedChatClient([KeyError("k"), "ok"])
    retry = ModelRetry(
        1, retry_on=lambda exc: isinstance(exc, KeyError), sleep=_no_sleep
    )
    assert (
        await run(Agent(client, middleware=[retry]), "x", stream=stream)
    ).text == "ok"
    tries = []

    @tool
    def stop() -> str:
        """Stops the loop."""
        tries.append(1)
        raise MiddlewareTermination(result="stopped")

    client = ScriptedChatClient([[call("stop")]])
    result = await run(
        Agent(client, tools=[stop], middleware=[ToolRetry(3, sleep=_no_sleep)]),
        "x",
        stream=stream,
    )
    assert tries == [1]
    assert result.messages[-1].contents[0].result == "stopped"


async def _no_sleep(seconds: float) -> None:
    return None


async def test_history_processors_quiet_paths(stream):
    """ML-9, ML-10: under their limits the trimmer and the summarizer send the call
    unchanged."""
    summarizer = Summarizer(ScriptedChatClient([]), trigger_messages=5, keep_last=1)
    client = ScriptedChatClient(["a"])
    agent = Agent(client, middleware=[HistoryTrimmer(max_messages=5), summarizer])
    await run(agent, "x", stream=stream)
    assert client.requests[0].texts == ["user: x"]
    tangled = (  # every cut separates a call from its result: nothing can be summarised
        Message("assistant", [call("f", call_id="a")]),
        Message("assistant", [call("f", call_id="b")]),
        Message("tool", [Content.from_function_result("a", "r")]),
        Message("tool", [Content.from_function_result("b", "r")]),
    )
    request = ModelRequest(tangled, None, (), None, None, {}, None, HookState((), {}))
    sent = []

    async def handler(req):
        sent.append(req)
        return ChatResponse([Message("assistant", ["ok"])])

    summarizer = Summarizer(ScriptedChatClient([]), trigger_messages=3, keep_last=1)
    await summarizer.wrap_model_call(request, handler)
    assert sent == [request]


def test_token_counting_and_cuts():
    """ML-9: approx_tokens counts arguments and results; clean_cut falls back to keeping
    everything."""
    assert (
        approx_tokens(Message("assistant", [call("f", {"a": "12345678"})]))
        == 4 + len('{"a": "12345678"}') // 4
    )
    assert (
        approx_tokens(Message("tool", [Content.from_function_result("k", {"x": 1})]))
        == 4 + len('{"x": 1}') // 4
    )
    history = [
        Message("assistant", [call("f", call_id="a")]),
        Message("tool", [Content.from_function_result("a", "r")]),
    ]
    assert clean_cut(history, 1) == 0


async def test_redact_tool_results_sent_to_the_model():
    """ML-11: with inputs=True string tool results are redacted before the model sees
    them."""
    from minagent.middleware import Redact

    @tool
    def leak() -> str:
        """Returns a secret."""
        return "token sk-ABCDEF0123456789"

    client = ScriptedChatClient([[call("leak")], "done"])
    await Agent(
        client, tools=[leak], middleware=[Redact([r"sk-[A-Za-z0-9]{16}"], inputs=True)]
    ).run("x")
    assert client.requests[1].messages[-1].contents[0].result == "token [REDACTED]"
