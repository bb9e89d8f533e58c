"""Upstream users' code that failed on minagent, each behaviour with its rule: tool
schemas in upstream's form, bundles, callable middleware classes, deep copies of
contents."""

from __future__ import annotations

import copy
import threading
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import (
    Agent,
    ChatResponse,
    Content,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    MiddlewareException,
    normalize_tools,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply

# -- TL-60: parameters() in upstream's form -------------------------------------------------------


def test_parameters_call_gives_upstreams_form_of_a_generated_schema() -> None:
    """TL-60: titled ``<name>_input``, each property titled, no additionalProperties;
    the dict the model receives is unchanged."""

    @tool(name="search")
    def search_flows(category: Literal["Data", "Network"], max_hits: int = 3) -> str:
        return category

    assert search_flows.parameters() == {
        "properties": {
            "category": {
                "enum": ["Data", "Network"],
                "title": "Category",
                "type": "string",
            },
            "max_hits": {"default": 3, "title": "Max Hits", "type": "integer"},
        },
        "required": ["category"],
        "title": "search_input",
        "type": "object",
    }
    assert search_flows.parameters["additionalProperties"] is False
    assert "title" not in search_flows.parameters
    assert search_flows.to_dict()["parameters"] is search_flows.parameters


def test_parameters_call_of_a_tool_without_arguments_has_no_required() -> None:
    """TL-60: no empty ``required``."""

    @tool
    def ping() -> str:
        return "pong"

    assert ping.parameters() == {
        "properties": {},
        "title": "ping_input",
        "type": "object",
    }


def test_parameters_given_are_returned_as_given() -> None:
    """TL-60: a schema given as ``parameters=`` is not rewritten."""
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "additionalProperties": False,
    }
    t = FunctionTool(name="q", parameters=schema)
    assert t.parameters() == schema
    assert t.parameters() is t.parameters


@given(st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True))
def test_every_generated_property_is_titled(name: str) -> None:
    """TL-60: a property's title is its name, underscores as spaces, each word
    capitalised."""
    f = FunctionTool(name="t", parameters=None, func=None)
    # a function whose one parameter is ``name``
    f = tool(eval(f"lambda {name}: 0", {}), name="t")
    assert f.parameters()["properties"][name]["title"] == name.replace("_", " ").title()


# -- TL-61: bundles ---------------------------------------------------------------------------------


def _t(name: str) -> FunctionTool:
    return FunctionTool(name=name, func=lambda: name)


def test_an_iterable_bundle_is_flattened() -> None:
    """TL-61: a class with only ``__iter__`` (a toolbox), nested in a list, is its
    tools."""

    class Toolbox:
        def __init__(self, tools: list[Any]) -> None:
            self._tools = tools

        def __iter__(self) -> Any:
            return iter(self._tools)

    a, b, c = _t("a"), _t("b"), _t("c")
    assert normalize_tools([Toolbox([a, Toolbox([b])]), c]) == [a, b, c]
    assert normalize_tools([(x for x in (a, b))]) == [a, b]


def test_a_bundle_with_a_tools_attribute_is_flattened() -> None:
    """TL-61: an object with ``tools`` is its tools."""

    class Bundle:
        tools = (_t("x"), _t("y"))

    assert [t.name for t in normalize_tools(Bundle())] == ["x", "y"]


# -- MW-60: callable classes as middleware ------------------------------------------------------------


class CountCalls:
    """Function middleware written as a class with ``__call__`` (upstream's
    callable-class style)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(
        self, context: FunctionInvocationContext, call_next: Any
    ) -> None:
        self.seen.append(context.function.name)
        await call_next()


async def test_a_callable_class_instance_runs_as_middleware(stream: bool) -> None:
    """MW-60: its layer comes from its annotation; it runs in both modes."""

    @tool
    def add(a: int, b: int) -> int:
        return a + b

    counter = CountCalls()
    client = ScriptedChatClient([reply(call("add", {"a": 1, "b": 2})), reply("3")])
    agent = Agent(client, tools=[add], middleware=[counter])
    run = (
        agent.run("sum", stream=True).get_final_response()
        if stream
        else agent.run("sum")
    )
    text = (await run).text
    assert text == "3"
    assert counter.seen == ["add"]


def test_callable_class_errors_say_upstreams_words() -> None:
    """MW-60: too few parameters, a contradicting marker, no way to tell: named, in
    upstream's words."""

    class OneParam:
        async def __call__(self, context: Any) -> None: ...

    class Mismatch:
        _middleware_type = "agent"

        async def __call__(
            self, context: FunctionInvocationContext, call_next: Any
        ) -> None: ...

    class Unknown:
        async def __call__(self, a: Any, b: Any) -> None: ...

    client = ScriptedChatClient([])
    for cls, words in (
        (OneParam, "must have at least 2 parameters"),
        (Mismatch, "MiddlewareTypes type mismatch"),
        (Unknown, "Cannot determine middleware type"),
    ):
        with pytest.raises(MiddlewareException, match=words) as info:
            Agent(client, middleware=[cls()])
        assert cls.__name__ in str(info.value)


def test_a_class_is_not_taken_for_a_callable_object() -> None:
    """MW-60: a class (callable, but not an instance) is not middleware."""

    class NotMiddleware:
        pass

    with pytest.raises(MiddlewareException, match="is not middleware"):
        Agent(ScriptedChatClient([]), middleware=[NotMiddleware])


# -- TY-17: deep copies keep the provider's object ------------------------------------------------------


def test_deepcopy_of_content_message_and_response_keeps_raw_by_reference() -> None:
    """TY-60: a content (whose class has class variables), a message and a response
    deep-copy; ``raw_representation`` is shared, everything else copied."""
    lock = threading.Lock()  # cannot be deep-copied
    content = Content.from_text(
        "hi", raw_representation=lock, additional_properties={"k": [1]}
    )
    clone = copy.deepcopy(content)
    assert clone == content
    assert clone.raw_representation is lock
    assert clone.additional_properties is not content.additional_properties
    response = ChatResponse(
        messages=[Message("assistant", [content], raw_representation=lock)]
    )
    copied = copy.deepcopy(response)
    assert copied.messages[0].raw_representation is lock
    assert copied.messages[0].contents[0].raw_representation is lock
    assert copied.messages[0] is not response.messages[0]
