"""Upstream's tool API (spec/tools.md TL-14, TL-16, TL-60, TL-61): `invoke` and its
arguments, input models, `from_dict`, `parse_result`, `parameters()` and bundles."""

import keyword
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import (
    Agent,
    Content,
    FunctionInvocationContext,
    FunctionTool,
    ToolError,
    normalize_tools,
    tool,
)
from minagent._tools import SKIP_PARSING
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import get_response, run


def test_skip_parsing_repr() -> None:
    """TL-14: upstream's SKIP_PARSING sentinel (`result_parser=SKIP_PARSING`) shows its
    name."""
    assert repr(SKIP_PARSING) == "SKIP_PARSING"


@tool(
    schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }
)
def explicit(a, ctx=None):
    """Echo a, and whether a context came."""
    return {"a": a, "ctx": ctx is not None}


async def test_invoke_as_upstream_calls_it():
    """TL-14: `@tool(schema=)` is the schema as given; `invoke(arguments=...)` parses
    the value into contents, `skip_parsing=True` returns it, keywords are the arguments,
    `context=` alone gives the context's arguments, and an un-annotated `ctx=None`
    receives the context."""
    assert explicit.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }
    assert await explicit.invoke(arguments={"a": 1}) == [
        Content.from_text('{"a": 1, "ctx": false}')
    ]
    assert await explicit.invoke(a=2, skip_parsing=True) == {"a": 2, "ctx": False}
    context = FunctionInvocationContext(function=explicit, arguments={"a": 3})
    assert await explicit.invoke(context=context, skip_parsing=True) == {
        "a": 3,
        "ctx": True,
    }


async def test_invoke_rejects_arguments_in_upstreams_words():
    """TL-14: arguments `invoke` is given that the schema rejects are a `ToolError`
    saying "Invalid type for 'a' in 'explicit'" (upstream's words), then every
    problem."""
    with pytest.raises(ToolError, match="Invalid type for 'a' in 'explicit'") as raised:
        await explicit.invoke(arguments={"a": "x"})
    assert "expected integer" in str(raised.value)


async def test_result_parser_and_skip_parsing():
    """TL-14: `result_parser=` turns the value into the result (a str becomes a text
    content); `SKIP_PARSING` returns the raw value; `FunctionTool.parse_result` is
    upstream's default."""

    @tool(result_parser=lambda value: f"<{value}>")
    def double(x: int) -> int:
        return x * 2

    @tool(result_parser=SKIP_PARSING)
    def triple(x: int) -> int:
        return x * 3

    assert await double.invoke(x=2) == [Content.from_text("<4>")]
    assert await triple.invoke(x=2) == 6
    assert FunctionTool.parse_result("s") == [Content.from_text("s")]
    assert FunctionTool.parse_result(None) == [Content.from_text("")]
    assert FunctionTool.parse_result({"a": 1}) == [Content.from_text('{"a": 1}')]


def test_two_context_parameters_are_a_value_error():
    """TL-14: a function with two context parameters is a `ValueError`, as
    upstream's."""
    with pytest.raises(
        ValueError, match="multiple FunctionInvocationContext parameters"
    ):

        @tool
        def two(a: FunctionInvocationContext, b: FunctionInvocationContext):
            return None


async def test_a_model_result_is_its_json(stream):
    """TL-5: a tool returning a pydantic-style model (`model_dump()`) gives its JSON as
    the result."""
    from minagent.testing import ScriptedChatClient, call, reply

    class Model:
        def model_dump(self):
            return {"city": "Paris", "temp": 21}

    @tool
    def forecast() -> object:
        return Model()

    client = ScriptedChatClient([reply(call("forecast")), reply("ok")])
    if stream:
        updates = client.get_response("go", options={"tools": [forecast]}, stream=True)
        async for _ in updates:
            pass
        response = await updates.get_final_response()
    else:
        response = await client.get_response("go", options={"tools": [forecast]})
    result = next(
        c for m in response.messages for c in m.contents if c.type == "function_result"
    )
    assert result.result == {"city": "Paris", "temp": 21}


async def test_function_tool_from_dict():
    """TL-16: `FunctionTool.from_dict` reads upstream's form and minagent's declaration;
    dependencies inject the function for every tool or for the tool a `field:value` key
    names."""

    def multiply(a: int, b: int) -> int:
        return a * b

    upstream_form = {
        "type": "function_tool",
        "name": "multiply",
        "input_model": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
    }
    named = FunctionTool.from_dict(
        upstream_form,
        dependencies={"function_tool": {"name:multiply": {"func": multiply}}},
    )
    assert await named.invoke(a=6, b=7, skip_parsing=True) == 42
    assert named.parameters == upstream_form["input_model"]
    other = FunctionTool.from_dict(
        upstream_form,
        dependencies={"function_tool": {"name:divide": {"func": multiply}}},
    )
    assert other.declaration_only
    declared = FunctionTool.from_dict(
        named.to_dict(), dependencies={"function_tool": {"func": multiply}}
    )
    assert (declared.name, declared.parameters) == ("multiply", named.parameters)
    assert await declared.invoke(a=2, b=3, skip_parsing=True) == 6
    with pytest.raises(ValueError, match="Type mismatch"):
        FunctionTool.from_dict({"type": "mcp_tool", "name": "x"})
    with pytest.raises(TypeError, match="bogus"):
        FunctionTool.from_dict({"name": "x", "bogus": 1})


@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


async def test_missing_and_unexpected_arguments_in_upstreams_words() -> None:
    """TL-14: arguments a caller passes are checked against the schema; a missing one
    and an unexpected one are `ToolError`s (also `TypeError`s) in upstream's words."""
    with pytest.raises(
        ToolError, match=r"^Missing required argument\(s\) for 'add': a"
    ) as caught:
        await add.invoke(arguments={"b": 1})
    assert isinstance(caught.value, TypeError)
    with pytest.raises(ToolError, match=r"^Unexpected argument\(s\) for 'add': c"):
        await add.invoke(arguments={"a": 1, "c": 2})
    with pytest.raises(ToolError, match=r"^Invalid type for 'a' in 'add'"):
        await add.invoke(arguments={"a": "one"})


async def test_a_callers_own_objects_are_not_checked() -> None:
    """TL-14: Python values that have no JSON form (a caller's own objects) reach the
    function unchecked."""
    seen: list[Any] = []

    @tool
    def keep(city: Any) -> str:
        """Keep what was given."""
        seen.append(city)
        return "kept"

    marker = object()
    assert await keep.invoke(arguments={"city": marker}, skip_parsing=True) == "kept"
    assert seen == [marker]


async def test_keyword_arguments_to_invoke() -> None:
    """TL-14: the parameters as keywords are the arguments; a keyword that is not a
    parameter, or keywords with ``arguments=``, is a `TypeError` naming them."""
    assert await add.invoke(a=2, b=3, skip_parsing=True) == 5
    with pytest.raises(
        TypeError, match=r"Unexpected keyword argument\(s\) for tool 'add': user"
    ):
        await add.invoke(a=2, user="me")
    with pytest.raises(
        TypeError, match=r"Unexpected keyword argument\(s\) for tool 'add': a"
    ):
        await add.invoke({"a": 1}, a=2)


async def test_a_model_as_the_arguments() -> None:
    """TL-14: ``arguments`` may be a model with ``model_dump()``: its set fields are the
    arguments."""

    class Model:
        def model_dump(self, *, exclude_unset: bool = False) -> dict[str, Any]:
            assert exclude_unset
            return {"a": 4, "b": 5}

    assert await add.invoke(Model(), skip_parsing=True) == 9
    assert [c.text for c in await add.invoke(Model())] == ["9"]


def test_input_model_and_parameters_together_are_refused() -> None:
    """TL-14: ``input_model=`` is the schema; giving ``parameters=`` too is a
    `ToolError`."""
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    with pytest.raises(ToolError, match="give parameters= or input_model=, not both"):
        FunctionTool(
            name="search", func=lambda q: q, input_model=schema, parameters=schema
        )


def test_an_input_model_that_is_no_schema_is_refused() -> None:
    """TL-14: an ``input_model`` that is neither a JSON schema dict nor a class with
    ``model_json_schema()`` is a `ToolError` naming the tool."""
    with pytest.raises(
        ToolError, match="tool 'search': input_model must be a JSON schema dict"
    ):
        FunctionTool(name="search", func=lambda q: q, input_model=42)


def test_an_input_model_class_gives_its_schema() -> None:
    """TL-14: a pydantic-style class as ``input_model`` is the schema its
    ``model_json_schema()`` gives."""
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }

    class Query:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            return schema

    assert (
        dict(
            FunctionTool(name="search", func=lambda q: q, input_model=Query).parameters
        )
        == schema
    )


@pytest.mark.parametrize("data", [["function_tool"], "function_tool", None])
def test_from_dict_takes_a_dict(data: Any) -> None:
    """TL-16: `FunctionTool.from_dict` of something that is not a dict is a `TypeError`
    naming its type."""
    with pytest.raises(
        TypeError,
        match=f"FunctionTool.from_dict takes a dict, got {type(data).__name__}",
    ):
        FunctionTool.from_dict(data)


def test_parse_result_keeps_contents() -> None:
    """TL-14: a `Content` is kept as it is, and a list holding contents keeps them, its
    other items as their JSON text."""
    image = Content.from_uri("https://example.com/a.png", media_type="image/png")
    assert FunctionTool.parse_result(image) == [image]
    parsed = FunctionTool.parse_result([image, {"n": 1}, "note"])
    assert parsed[0] is image
    assert [c.text for c in parsed[1:]] == ['{"n": 1}', "note"]
    assert [c.text for c in FunctionTool.parse_result(None)] == [""]


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


# A parameter's name is an identifier that is not a keyword ("if" cannot be one).
@given(
    st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
        lambda n: not keyword.iskeyword(n)
    )
)
def test_every_generated_property_is_titled(name: str) -> None:
    """TL-60: a property's title is its name, underscores as spaces, each word
    capitalised."""
    f = FunctionTool(name="t", parameters=None, func=None)
    # a function whose one parameter is ``name``
    f = tool(eval(f"lambda {name}: 0", {}), name="t")
    assert f.parameters()["properties"][name]["title"] == name.replace("_", " ").title()


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


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await run(target, *args, stream=stream, **kwargs)
    return await get_response(target, *args, stream=stream, **kwargs)


def results(response):
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


async def test_an_optional_context_parameter_is_injected(stream):
    """TL-4, TL-14: `ctx: FunctionInvocationContext | None = None` (upstream's optional
    context) is not in the schema and receives the context in a run."""
    seen = []

    @tool
    def lookup(city: str, ctx: FunctionInvocationContext | None = None) -> str:
        seen.append(ctx.arguments if ctx is not None else None)
        return city.upper()

    assert list(lookup.parameters["properties"]) == ["city"]
    client = ScriptedChatClient(
        [reply(call("lookup", {"city": "oslo"})), reply("OSLO it is.")]
    )
    response = await run_or_get_response(
        Agent(client, tools=[lookup]), "city?", stream=stream
    )
    assert seen == [{"city": "oslo"}]
    assert [r.result for r in results(response)] == ["OSLO"]
