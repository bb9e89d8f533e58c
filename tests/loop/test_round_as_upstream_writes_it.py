"""A tool round written the way the seed documents and upstream's samples write it
(spec/loop.md LP-35): un-annotated class middleware calling ``next(context)``, a
decorated function calling ``call_next()``, options passed as a plain dict — in both
modes. What the round skips (LP-35) changes no outcome, and the run edits no dict it was
given."""

import copy

from minagent import (
    Agent,
    FunctionMiddleware,
    Message,
    function_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import get_response, run

seen = []


@tool
def get_weather(location: str, unit: str = "celsius") -> str:
    """Get the weather for a location."""
    return f"The weather in {location} is sunny, 21 {unit}."


class LoggingFunctionMiddleware(FunctionMiddleware):
    async def process(self, context, next):
        seen.append(f"before {context.function.name}")
        await next(context)
        seen.append(f"after {context.function.name}")


class RedirectMiddleware(FunctionMiddleware):
    async def process(self, context, next):
        context.arguments["location"] = "Paris"
        await next(context)


@function_middleware
async def timing_middleware(context, call_next):
    seen.append("timing")
    await call_next()


def script():
    return [
        reply(call("get_weather", {"location": "Oslo"}, call_id="call_1")),
        reply(
            call(
                "get_weather",
                '{"location": "Bergen", "unit": "kelvin"}',
                call_id="call_2",
            ),
            conversation_id="conv_1",
        ),
        "It is sunny in both.",
    ]


def results(response):
    return [
        (c.call_id, c.result)
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    ]


EXPECTED = [
    ("call_1", "The weather in Oslo is sunny, 21 celsius."),
    ("call_2", "The weather in Bergen is sunny, 21 kelvin."),
]


async def test_the_same_results_with_and_without_function_middleware(stream):
    """LP-35: a round with no function middleware calls the tool directly; with class
    middleware (``next(context)``) and a decorated function (``call_next()``) it goes
    through the pipeline; the results, the answer and the middleware's order are the
    same in both modes."""
    plain = Agent(ScriptedChatClient(script()), tools=[get_weather])
    direct = await run(plain, "Weather in Oslo and Bergen?", stream=stream)
    seen.clear()
    layered = Agent(
        ScriptedChatClient(script()),
        tools=[get_weather],
        middleware=[LoggingFunctionMiddleware(), timing_middleware],
    )
    through = await run(layered, "Weather in Oslo and Bergen?", stream=stream)
    assert results(direct) == results(through) == EXPECTED
    assert direct.text == through.text == "It is sunny in both."
    assert seen == ["before get_weather", "timing", "after get_weather"] * 2


async def test_middleware_that_edits_the_arguments_changes_no_given_object(stream):
    """LP-35, SE-53: class middleware that rewrites ``context.arguments`` changes what
    the tool gets, and neither the model's call objects nor the caller's options."""
    steps = script()
    calls_before = copy.deepcopy(
        [c.arguments for r in steps[:2] for c in r.messages[0].contents]
    )
    options = {"temperature": 0.2, "tool_choice": "auto"}
    given = copy.deepcopy(options)
    agent = Agent(
        ScriptedChatClient(steps),
        tools=[get_weather],
        middleware=[RedirectMiddleware()],
    )
    response = await run(agent, "Weather?", stream=stream, options=options)
    assert [r for _, r in results(response)] == [
        "The weather in Paris is sunny, 21 celsius.",
        "The weather in Paris is sunny, 21 kelvin.",
    ]
    assert [
        c.arguments for r in steps[:2] for c in r.messages[0].contents
    ] == calls_before
    assert options == given


async def test_a_clients_options_dict_is_never_edited(stream):
    """LP-35, LP-19: ``client.get_response(messages, options={...})`` with tools: a
    conversation id the model returns and the last call's ``tool_choice`` go into new
    dicts; the caller's dict and its tool list stay as they were."""
    tools = [get_weather]
    options = {"tools": tools, "temperature": 0.0}
    client = ScriptedChatClient(
        script(), function_invocation_configuration={"max_iterations": 2}
    )
    response = await get_response(
        client, [Message("user", ["Weather?"])], stream=stream, options=options
    )
    assert response.text == "It is sunny in both."
    assert options == {"tools": [get_weather], "temperature": 0.0}
    assert options["tools"] is tools
    assert [r.options.get("conversation_id") for r in client.requests] == [
        None,
        None,
        "conv_1",
    ]
    assert client.requests[-1].options["tool_choice"] == "none"
