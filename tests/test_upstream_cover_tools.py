"""Upstream's tool API at its edges (spec/tools.md TL-14, TL-16; spec/loop.md LP-33):
progressive tools on a context, arguments a caller passes to ``invoke``, explicit
schemas, ``from_dict`` and ``parse_result``."""

from __future__ import annotations

from typing import Any

import pytest

from minagent import Content, FunctionInvocationContext, FunctionTool, ToolError, tool


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"found {city}"


@tool
def clock() -> str:
    """The time."""
    return "noon"


@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


# -- LP-33: progressive tools ---------------------------------------------------------------------


def test_adding_tools_is_all_or_nothing() -> None:
    """LP-33: the same tool again is nothing new; a different tool with a name already
    there is an error naming it, and then none of the tools given is added."""
    context = FunctionInvocationContext(lookup, {"city": "Oslo"}, tools=[lookup])
    context.add_tools([lookup, clock])
    assert context.tools == [lookup, clock]
    context.add_tools(clock)
    assert context.tools == [lookup, clock]

    other = FunctionTool(
        name="lookup",
        func=lambda city: city,
        parameters={"type": "object", "properties": {}},
    )
    with pytest.raises(
        ValueError,
        match="a different tool named 'lookup' is already among the run's tools",
    ):
        context.add_tools([add, other])
    # `add`, before the clash, was not added either
    assert context.tools == [lookup, clock]


@pytest.mark.parametrize("verb", ["add", "remove"])
def test_a_context_outside_a_run_cannot_change_tools(verb: str) -> None:
    """LP-33: only a context the loop made has the run's live tool list; changing the
    tools of another is a `RuntimeError` saying so."""
    context = FunctionInvocationContext(lookup, {"city": "Oslo"})
    with pytest.raises(
        RuntimeError,
        match=f"Cannot {verb} tools: this FunctionInvocationContext is not bound",
    ):
        getattr(context, f"{verb}_tools")([clock])


# -- TL-14: invoke's arguments ---------------------------------------------------------------------


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


# -- TL-14: explicit schemas -------------------------------------------------------------------------


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


# -- TL-16: from_dict -------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [["function_tool"], "function_tool", None])
def test_from_dict_takes_a_dict(data: Any) -> None:
    """TL-16: `FunctionTool.from_dict` of something that is not a dict is a `TypeError`
    naming its type."""
    with pytest.raises(
        TypeError,
        match=f"FunctionTool.from_dict takes a dict, got {type(data).__name__}",
    ):
        FunctionTool.from_dict(data)


# -- TL-14: parse_result -----------------------------------------------------------------------------


def test_parse_result_keeps_contents() -> None:
    """TL-14: a `Content` is kept as it is, and a list holding contents keeps them, its
    other items as their JSON text."""
    image = Content.from_uri("https://example.com/a.png", media_type="image/png")
    assert FunctionTool.parse_result(image) == [image]
    parsed = FunctionTool.parse_result([image, {"n": 1}, "note"])
    assert parsed[0] is image
    assert [c.text for c in parsed[1:]] == ['{"n": 1}', "note"]
    assert [c.text for c in FunctionTool.parse_result(None)] == [""]
