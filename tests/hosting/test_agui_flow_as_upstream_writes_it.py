"""The flow in detail (spec/hosting.md HS-98, spec/observability.md OB-31) for
middleware written the way upstream's samples write it: un-annotated classes whose
``process`` calls ``next(context)``, and a decorated function calling ``call_next()``,
in both modes."""

from minagent import (
    Agent,
    AgentMiddleware,
    ChatMiddleware,
    FunctionMiddleware,
    _observe,
    function_middleware,
    tool,
)
from minagent.hosting.agui_flow import flow_run
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run


class LoggingAgentMiddleware(AgentMiddleware):
    async def process(self, context, next):
        await next(context)


class LoggingChatMiddleware(ChatMiddleware):
    async def process(self, context, next):
        await next(context)


class LoggingFunctionMiddleware(FunctionMiddleware):
    async def process(self, context, next):
        await next(context)


@function_middleware
async def timing_middleware(context, call_next):
    await call_next()


@tool
def get_weather(location: str) -> str:
    """Get the weather for a location."""
    return f"sunny in {location}"


class Sink:
    """What the AG-UI run is told, kept."""

    def __init__(self):
        self.done = []
        self.decisions = []

    def own(self, middleware):
        return False

    def middleware_done(self, layer, name, context, milliseconds):
        assert milliseconds >= 0
        self.done.append((layer, name))

    def decided(self, outcome, next_step):
        self.decisions.append((outcome, next_step))


async def test_each_middleware_is_timed_by_its_class_name(stream):
    """HS-98, OB-31: each middleware of the three layers is reported once per time it
    ran, named by its class (or its function), the loop's decisions in order; the run's
    answer is the same as without the flow, and the observer is put back after."""
    before = _observe.current()
    agent = Agent(
        ScriptedChatClient(
            [
                reply(call("get_weather", {"location": "Oslo"}, call_id="call_1")),
                "Sunny.",
            ]
        ),
        tools=[get_weather],
        middleware=[
            LoggingAgentMiddleware(),
            LoggingChatMiddleware(),
            LoggingFunctionMiddleware(),
            timing_middleware,
        ],
    )
    sink = Sink()
    with flow_run(sink):
        response = await run(agent, "Weather in Oslo?", stream=stream)
    assert response.text == "Sunny."
    assert _observe.current() is before
    assert sorted(sink.done) == sorted(
        [
            ("agent", "LoggingAgentMiddleware"),
            ("chat", "LoggingChatMiddleware"),
            ("chat", "LoggingChatMiddleware"),
            ("function", "LoggingFunctionMiddleware"),
            ("function", "timing_middleware"),
        ]
    )
    # the inner function middleware ends first
    functions = [name for layer, name in sink.done if layer == "function"]
    assert functions == ["timing_middleware", "LoggingFunctionMiddleware"]
    assert sink.decisions == [
        ("calls", "run batch"),
        ("ran", "call model"),
        ("answered", "finish"),
    ]
