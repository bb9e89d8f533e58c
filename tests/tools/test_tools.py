"""`FunctionTool`, `@tool`, invoking a tool and `FunctionInvocationConfiguration`
(spec/tools.md). A tool's result is in test_results.py, upstream's tool API in
test_upstream_api.py.

This module deliberately does not use `from __future__ import annotations`, so that the
functions below carry real (non-string) annotations; the string-annotation cases live in
tests/tools/_fixtures.py.
"""

import asyncio
import dataclasses
import enum
import json
import threading
import time
import types
from typing import (
    Annotated,
    Any,
    Literal,
    Optional,
    TypedDict,
)

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import (
    Agent,
    Content,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    FunctionMiddleware,
    FunctionTool,
    Message,
    ToolError,
    ValidationIssue,
    tool,
)
from minagent._toolset import normalize_tools
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run

from . import _fixtures as fx

# --------------------------------------------------------------------------- shared types


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    width: float
    height: float = 1.0


def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    maybe: Optional[int],  # noqa: UP045 - the typing spelling is what is under test
    unit: Literal["metric", "imperial"],
    color: Color,
    tags: list[str],
    extra: dict[str, int],
    point: Point,
    box: Box,
    limit: int = 10,
    note: Annotated[str, "a short note"] = "",
) -> str:
    """Do everything at once.

    Args:
        text: the text to use.
        count: how many times.
    """
    return f"{text}*{count}"


def get_weather(city: str, units: Literal["metric", "imperial"] = "metric") -> str:
    """Get the weather for a city."""
    return f"sunny in {city} ({units})"


def no_doc(x: int) -> int:
    return x * 2


def _context(tool_: FunctionTool, call_id: str = "call-1") -> FunctionInvocationContext:
    return FunctionInvocationContext(function=tool_, arguments={}, call_id=call_id)


# --------------------------------------------------------------------------- TL-1


def test_bare_decorator_defaults() -> None:
    """TL-1: bare `@tool` takes the name from `__name__`, the description from the
    docstring's summary, the parameters from the signature, and the defaults for the
    other fields."""
    t = tool(get_weather)
    assert isinstance(t, FunctionTool)
    assert t.name == "get_weather"
    assert t.description == "Get the weather for a city."
    assert t.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {
                "type": "string",
                "enum": ["metric", "imperial"],
                "default": "metric",
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert t.approval_mode == "never_require"
    assert t.sequential is False
    assert t.declaration_only is False


def test_bare_decorator_syntax_and_no_docstring() -> None:
    """TL-1: `@tool` written as a decorator; no docstring gives an empty description."""

    @tool
    def double(x: int) -> int:
        return x * 2

    assert isinstance(double, FunctionTool)
    assert double.name == "double"
    assert double.description == ""
    assert tool(no_doc).description == ""


def test_decorator_with_arguments() -> None:
    """TL-1: `@tool(name=..., description=..., approval_mode=..., sequential=True)` sets
    every field; the parameters are still generated from the signature."""

    @tool(
        name="weather.lookup",
        description="Look it up.",
        approval_mode="always_require",
        sequential=True,
    )
    def lookup(city: str) -> str:
        """Ignored docstring."""
        return city

    assert lookup.name == "weather.lookup"
    assert lookup.description == "Look it up."
    assert lookup.approval_mode == "always_require"
    assert lookup.sequential is True
    assert lookup.parameters["properties"] == {"city": {"type": "string"}}
    assert lookup.parameters["required"] == ["city"]


def test_decorator_with_arguments_keeps_generated_defaults() -> None:
    """TL-1: `@tool(...)` without name or description falls back to `__name__` and the
    docstring."""
    t = tool(sequential=True)(get_weather)
    assert (t.name, t.description, t.sequential) == (
        "get_weather",
        "Get the weather for a city.",
        True,
    )


def test_generated_parameters_for_many_types() -> None:
    """TL-1: the generated schema covers scalars, Optional, Literal, Enum, list, dict,
    TypedDict, dataclass, defaults and Annotated / docstring descriptions."""
    t = tool(everything)
    assert t.description == "Do everything at once."
    params = t.parameters
    props = params["properties"]
    assert list(props) == [
        "text",
        "count",
        "ratio",
        "flag",
        "maybe",
        "unit",
        "color",
        "tags",
        "extra",
        "point",
        "box",
        "limit",
        "note",
    ]
    assert params["required"] == list(props)[:11]
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert props["text"] == {"type": "string", "description": "the text to use."}
    assert props["count"] == {"type": "integer", "description": "how many times."}
    assert props["ratio"] == {"type": "number"}
    assert props["flag"] == {"type": "boolean"}
    assert props["maybe"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert props["unit"] == {"type": "string", "enum": ["metric", "imperial"]}
    assert props["color"] == {"type": "string", "enum": ["red", "green"]}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["extra"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert props["point"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
        "additionalProperties": False,
    }
    assert props["box"] == {
        "type": "object",
        "properties": {
            "width": {"type": "number"},
            "height": {"type": "number", "default": 1.0},
        },
        "required": ["width"],
        "additionalProperties": False,
    }
    assert props["limit"] == {"type": "integer", "default": 10}
    assert props["note"] == {
        "type": "string",
        "description": "a short note",
        "default": "",
    }
    assert json.loads(json.dumps(params)) == params


def test_generated_parameters_under_future_annotations() -> None:
    """TL-1: string annotations (`from __future__ import annotations`) generate the same
    schema."""
    t = tool(fx.order)
    assert t.description == "Place an order."
    assert t.parameters["required"] == ["items"]
    assert t.parameters["properties"]["items"]["items"]["properties"] == {
        "sku": {"type": "string"},
        "qty": {"type": "integer"},
    }
    ship_to = t.parameters["properties"]["ship_to"]
    assert ship_to["default"] is None
    where, null = ship_to["anyOf"]
    assert null == {"type": "null"}
    assert where["properties"]["zip_code"] == {
        "type": "string",
        "description": "postal code",
        "default": "00000",
    }


async def test_decorated_tool_is_still_callable() -> None:
    """TL-1: the decorated object is still callable like the function, sync and
    async."""
    t = tool(everything)
    args: dict[str, Any] = {
        "text": "ab",
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "maybe": None,
        "unit": "metric",
        "color": Color.RED,
        "tags": [],
        "extra": {},
        "point": {"x": 1, "y": 2},
        "box": Box(1.0),
    }
    assert t(**args) == everything(**args) == "ab*3"
    assert tool(no_doc)(21) == 42

    @tool
    async def later(x: int) -> int:
        return x + 1

    assert await later(1) == 2


# --------------------------------------------------------------------------- TL-2


@pytest.mark.parametrize(
    "bad_name",
    [
        "",
        "has space",
        "semi;colon",
        "a" * 129,
        "trailing\n",
        "ünïcode",
        "slash/name",
        42,
        None,
    ],
)
def test_bad_name_is_a_tool_error(bad_name: Any) -> None:
    """TL-2: a name that is not 1-128 letters, digits, `_`, `.`, `-` is a ToolError
    naming the field and the offending value."""
    with pytest.raises(ToolError) as info:
        FunctionTool(name=bad_name)
    message = str(info.value)
    assert "name" in message
    assert repr(bad_name) in message


@pytest.mark.parametrize(
    "good_name", ["a", "get_weather", "ns.tool-v2", "A1", "x" * 128]
)
def test_good_names(good_name: str) -> None:
    """TL-2: every name of 1-128 letters, digits, `_`, `.` and `-` is accepted."""
    assert FunctionTool(name=good_name).name == good_name


def test_bad_approval_mode_is_a_tool_error() -> None:
    """TL-2: an approval_mode other than never_require / always_require names tool and
    field."""
    with pytest.raises(ToolError) as info:
        FunctionTool(name="deploy", approval_mode="sometimes")  # type: ignore[arg-type]
    message = str(info.value)
    assert "'deploy'" in message
    assert "approval_mode" in message
    assert "'sometimes'" in message
    with pytest.raises(ToolError, match="approval_mode"):
        tool(approval_mode="maybe")(get_weather)  # type: ignore[call-overload]


def test_non_callable_func_is_a_tool_error() -> None:
    """TL-2: a func that is not callable is a ToolError naming the tool and the
    field."""
    with pytest.raises(ToolError) as info:
        FunctionTool(name="calc", func=42)  # type: ignore[arg-type]
    message = str(info.value)
    assert "'calc'" in message
    assert "func" in message


@pytest.mark.parametrize(
    "bad_parameters",
    [{"type": "array", "items": {}}, {"type": "string"}, [1, 2], "object"],
)
def test_parameters_must_be_an_object_schema(bad_parameters: Any) -> None:
    """TL-2: parameters that are not a JSON schema of type object are a ToolError naming
    the tool and the field."""
    with pytest.raises(ToolError) as info:
        FunctionTool(name="calc", parameters=bad_parameters)
    message = str(info.value)
    assert "'calc'" in message
    assert "parameters" in message


def test_raw_parameters_are_used_as_given() -> None:
    """TL-2: given parameters are used as is; nothing is generated, even for a function
    whose signature has no supported schema."""
    raw = {
        "type": "object",
        "properties": {"payload": {"type": "string", "contentEncoding": "base64"}},
        "required": ["payload"],
    }

    def upload(payload: bytes) -> int:  # bytes has no generated schema (SC-23)
        return len(payload)

    with pytest.raises(TypeError):
        tool(upload)
    t = FunctionTool(name="upload", func=upload, parameters=raw)
    assert t.parameters == raw
    assert "additionalProperties" not in t.parameters  # not normalised either
    assert t.to_dict()["parameters"] == raw
    assert t(b"abc") == 3


async def test_raw_parameters_still_pass_the_context() -> None:
    """TL-2, TL-4: with raw parameters the function still receives the invocation
    context."""
    raw = {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }
    t = FunctionTool(name="search", func=fx.with_context, parameters=raw)
    assert t.parameters == raw
    ctx = _context(t, "call-raw")
    assert await t.invoke({"query": "q"}, context=ctx, skip_parsing=True) == {
        "query": "q",
        "call_id": "call-raw",
    }


def test_normalize_tools_accepts_every_kind() -> None:
    """TL-2: tool lists accept FunctionTools, plain functions (wrapped with `tool`),
    declaration dicts and tool-like objects, in order; None is an empty list and one
    item a list of one."""
    existing = tool(get_weather)
    declaration = {
        "name": "lookup",
        "description": "",
        "parameters": {"type": "object"},
    }

    class ToolLike:
        name = "agent_tool"
        description = "an agent as a tool"
        parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

        async def invoke(self, arguments: Any, *, context: Any = None) -> str:
            return "ok"

    like = ToolLike()
    out = normalize_tools([existing, no_doc, declaration, like])
    assert out[0] is existing
    assert isinstance(out[1], FunctionTool)
    assert out[1].name == "no_doc"
    assert out[1].func is no_doc
    assert out[2] is declaration
    assert out[3] is like
    assert normalize_tools(None) == []
    assert normalize_tools(existing) == [existing]
    assert normalize_tools(declaration) == [declaration]
    assert normalize_tools((existing,)) == [existing]
    (wrapped,) = normalize_tools(no_doc)
    assert isinstance(wrapped, FunctionTool)
    assert wrapped.name == "no_doc"


class _NotATool:
    name = "half"  # no invoke, no parameters

    def __repr__(self) -> str:
        return "<half a tool>"


@pytest.mark.parametrize(
    ("item", "shown"),
    [(42, "42"), ("get_weather", "'get_weather'"), (_NotATool(), "<half a tool>")],
)
def test_normalize_tools_rejects_other_values(item: Any, shown: str) -> None:
    """TL-2: anything else is a ToolError that shows the value and says what a tool can
    be."""
    with pytest.raises(ToolError) as info:
        normalize_tools([tool(get_weather), item])
    message = str(info.value)
    assert shown in message
    assert "not a tool" in message
    assert "FunctionTool" in message


# --------------------------------------------------------------------------- TL-3


def test_to_dict_is_the_declaration() -> None:
    """TL-3: `to_dict()` is exactly {name, description, parameters}, plain JSON, and
    matches the attributes of the same names."""
    t = tool(get_weather)
    d = t.to_dict()
    assert d == {
        "name": t.name,
        "description": t.description,
        "parameters": t.parameters,
    }
    assert d["name"] == "get_weather"
    assert d["description"] == "Get the weather for a city."
    assert json.loads(json.dumps(d)) == d


def test_to_dict_of_a_declaration_only_tool() -> None:
    """TL-3: a declaration-only tool without parameters declares an empty object
    schema."""
    d = FunctionTool(name="ask_user", description="Ask the user.").to_dict()
    assert d["name"] == "ask_user"
    assert d["description"] == "Ask the user."
    assert d["parameters"]["type"] == "object"
    assert d["parameters"].get("properties", {}) == {}


# --------------------------------------------------------------------------- TL-4


async def test_invoke_passes_arguments_as_keywords() -> None:
    """TL-4: `invoke` calls the function with the arguments as keyword arguments (any
    mapping)."""
    seen: list[tuple[str, int]] = []

    def record(*, city: str, days: int = 1) -> str:
        seen.append((city, days))
        return f"{city}:{days}"

    t = tool(record)
    assert await t.invoke({"city": "Oslo", "days": 3}, skip_parsing=True) == "Oslo:3"
    assert (
        await t.invoke(types.MappingProxyType({"city": "Rome"}), skip_parsing=True)
        == "Rome:1"
    )
    assert seen == [("Oslo", 3), ("Rome", 1)]


async def test_sync_function_runs_in_a_worker_thread() -> None:
    """TL-4: a sync function runs in a worker thread, not on the event loop's thread."""
    threads: list[int] = []

    def where() -> str:
        threads.append(threading.get_ident())
        return "done"

    assert await tool(where).invoke({}, skip_parsing=True) == "done"
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()


async def test_sync_function_does_not_block_the_loop() -> None:
    """TL-4: while a sync tool sleeps for 0.2 s, another coroutine on the loop makes
    progress."""
    events: list[str] = []
    loop = asyncio.get_running_loop()
    started = asyncio.Event()

    def slow() -> str:
        events.append("tool started")
        loop.call_soon_threadsafe(started.set)
        time.sleep(0.2)
        events.append("tool finished")
        return "slow"

    async def other() -> None:
        await started.wait()
        events.append("loop progressed")

    result, _ = await asyncio.gather(tool(slow).invoke({}, skip_parsing=True), other())
    assert result == "slow"
    assert events == ["tool started", "loop progressed", "tool finished"]


async def test_async_function_is_awaited_on_the_loop() -> None:
    """TL-4: an async function is awaited (on the loop's thread) and its value
    returned."""
    threads: list[int] = []

    @tool
    async def fetch(key: str) -> dict[str, str]:
        threads.append(threading.get_ident())
        await asyncio.sleep(0)
        return {"key": key}

    assert await fetch.invoke({"key": "k"}, skip_parsing=True) == {"key": "k"}
    assert threads == [threading.get_ident()]


async def test_tool_exception_propagates_from_invoke() -> None:
    """TL-4: an exception raised by the function reaches the caller of `invoke` (sync
    and async)."""

    def boom() -> None:
        raise LookupError("sync boom")

    async def aboom() -> None:
        raise LookupError("async boom")

    with pytest.raises(LookupError, match="sync boom"):
        await tool(boom).invoke({})
    with pytest.raises(LookupError, match="async boom"):
        await tool(aboom).invoke({})


async def test_context_parameter_plain_annotation() -> None:
    """TL-4: a parameter annotated `FunctionInvocationContext` receives the context
    passed to `invoke` and is not part of the schema."""
    received: list[Any] = []

    def search(query: str, ctx: FunctionInvocationContext) -> str:
        received.append(ctx)
        return query.upper()

    t = tool(search)
    assert t.parameters["properties"] == {"query": {"type": "string"}}
    assert t.parameters["required"] == ["query"]
    ctx = _context(t)
    assert await t.invoke({"query": "q"}, context=ctx, skip_parsing=True) == "Q"
    assert received == [ctx]
    assert received[0] is ctx
    assert t.validate_arguments({"query": "q"}) == []


@pytest.mark.parametrize(
    ("func", "param"), [(fx.with_context, "context"), (fx.with_late_context, "ctx")]
)
async def test_context_parameter_string_annotation(func: Any, param: str) -> None:
    """TL-4: under `from __future__ import annotations` (also when the context type is
    imported only for type checkers) the context parameter is found, filled and left out
    of the schema."""
    t = tool(func)
    assert param not in t.parameters["properties"]
    assert param not in t.parameters["required"]
    assert t.parameters["properties"] == {"query": {"type": "string"}}
    ctx = _context(t, "call-42")
    assert await t.invoke({"query": "q"}, context=ctx, skip_parsing=True) == {
        "query": "q",
        "call_id": "call-42",
    }


# --------------------------------------------------------------------------- TL-6


async def test_declaration_only_tool() -> None:
    """TL-6: a tool with no function is declaration-only; `invoke` and calling it raise
    ToolError naming the tool, and the function is never needed for the declaration."""
    schema = {"type": "object", "properties": {"question": {"type": "string"}}}
    t = FunctionTool(name="ask_user", description="Ask the user.", parameters=schema)
    assert t.declaration_only is True
    assert t.func is None
    assert t.to_dict() == {
        "name": "ask_user",
        "description": "Ask the user.",
        "parameters": schema,
    }
    with pytest.raises(ToolError, match="ask_user"):
        await t.invoke({"question": "why?"})
    with pytest.raises(ToolError, match="ask_user"):
        t(question="why?")
    assert tool(get_weather).declaration_only is False


# --------------------------------------------------------------------------- TL-7


def test_validate_arguments_valid() -> None:
    """TL-7: valid arguments give no issues."""
    t = tool(get_weather)
    assert t.validate_arguments({"city": "Oslo"}) == []
    assert t.validate_arguments({"city": "Oslo", "units": "imperial"}) == []


def test_validate_arguments_reports_every_issue_with_its_path() -> None:
    """TL-7: invalid arguments give every issue, each naming the path of the failing
    argument."""
    t = tool(get_weather)
    issues = t.validate_arguments({"units": "kelvin", "zone": 1})
    assert all(isinstance(issue, ValidationIssue) for issue in issues)
    by_path = {issue.path: issue.problem for issue in issues}
    assert set(by_path) == {"$.city", "$.units", "$.zone"}
    assert "required" in by_path["$.city"]
    assert '"metric", "imperial"' in by_path["$.units"]
    assert "kelvin" in by_path["$.units"]
    assert "unexpected property" in by_path["$.zone"]


def test_validate_arguments_nested_paths() -> None:
    """TL-7: issues inside nested values name the full path."""
    t = tool(fx.order)
    issues = t.validate_arguments(
        {"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": "two"}]}
    )
    assert [issue.path for issue in issues] == ["$.items[1].qty"]
    assert "integer" in issues[0].problem
    assert t.validate_arguments("not an object") != []
    assert t.validate_arguments("not an object")[0].path == "$"


def test_validate_arguments_uses_raw_parameters() -> None:
    """TL-7: a tool with raw parameters validates against exactly those."""
    raw = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    t = FunctionTool(name="count", parameters=raw)
    assert t.validate_arguments({"n": 3, "other": "allowed"}) == []
    (issue,) = t.validate_arguments({"n": 0})
    assert issue.path == "$.n"
    assert ">= 1" in issue.problem


# --------------------------------------------------------------------------- LP-1


def test_function_invocation_configuration_defaults() -> None:
    """LP-1, LP-34: a dataclass with the seed-000 defaults plus max_function_calls=None
    and
    disable_approval_response_binding=False."""
    config = FunctionInvocationConfiguration()
    assert dataclasses.is_dataclass(config)
    assert dataclasses.asdict(config) == {
        "enabled": True,
        "max_iterations": 40,
        "max_consecutive_errors_per_request": 3,
        "terminate_on_unknown_calls": False,
        "additional_tools": [],
        "include_detailed_errors": False,
        "max_function_calls": None,
        "disable_approval_response_binding": False,
    }
    other = FunctionInvocationConfiguration()
    config.additional_tools.append("x")
    assert other.additional_tools == []


def test_function_invocation_configuration_accepts_boundaries() -> None:
    """LP-1: the smallest in-range values are accepted."""
    config = FunctionInvocationConfiguration(
        max_iterations=1, max_consecutive_errors_per_request=0, max_function_calls=1
    )
    assert (
        config.max_iterations,
        config.max_consecutive_errors_per_request,
        config.max_function_calls,
    ) == (1, 0, 1)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_iterations", 0),
        ("max_iterations", -5),
        ("max_iterations", 2.5),
        ("max_consecutive_errors_per_request", -1),
        ("max_function_calls", 0),
        ("max_function_calls", -1),
    ],
)
def test_function_invocation_configuration_rejects_out_of_range(
    field: str, value: Any
) -> None:
    """LP-1: out-of-range values are a ValueError naming the field."""
    with pytest.raises(ValueError, match=field):
        FunctionInvocationConfiguration(**{field: value})


def results(response: Any) -> list[Content]:
    return [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]


@pytest.mark.parametrize("raised", [StopIteration, StopAsyncIteration])
async def test_a_sync_tool_raising_stop_iteration_gives_an_error_result(
    stream: bool, raised: type
) -> None:
    """TL-9, LP-6: a sync tool that raises StopIteration (or StopAsyncIteration) gives
    an error result instead of hanging the run forever (the exception cannot cross the
    executor future)."""

    @tool
    def first_item(items: list[int]) -> int:
        """The first item."""
        raise raised("empty")

    client = ScriptedChatClient(
        [reply(call("first_item", {"items": []}, call_id="f1")), "No items."]
    )
    response = await asyncio.wait_for(
        run(Agent(client, tools=[first_item]), "go", stream=stream), 10
    )
    assert response.text == "No items."
    [result] = results(response)
    assert result.exception == f"the tool raised {raised.__name__}: empty"


@tool(name="get_weather")
def get_location_weather(location):
    """Get the weather for a location."""
    return f"sunny in {location}"


class CountingMiddleware(FunctionMiddleware):
    def __init__(self):
        self.seen = []

    async def process(self, context, next):
        self.seen.append(context.function.name)
        await next(context)


async def test_seed_style_run_survives_a_tool_raising_stop_iteration(stream):
    """TL-9, LP-6: a sync tool that raises StopIteration gives an error result; the run
    goes on."""

    @tool
    def first_item(items):
        """The first of the items."""
        return next(iter(items))

    middleware = CountingMiddleware()
    client = ScriptedChatClient(
        [reply(call("first_item", {"items": []}, call_id="f1")), "There are no items."]
    )
    agent = client.as_agent(name="lister", tools=[first_item], middleware=[middleware])
    response = await asyncio.wait_for(
        run(agent, Message(role="user", text="first?"), stream=stream), 10
    )
    assert str(response) == "There are no items."
    assert middleware.seen == ["first_item"]
    result = next(
        c for m in response.messages for c in m.contents if c.type == "function_result"
    )
    assert result.exception.startswith("the tool raised StopIteration")


class _Shaped:
    """A tool of ToolProtocol's shape, no minagent base class (TL-12)."""

    name = "shaped"
    description = "doubles n"
    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def invoke(self, arguments: Any, context: Any = None) -> int:
        self.seen.append(dict(arguments))
        return int(arguments["n"]) * 2


async def test_any_object_of_the_tool_protocol_is_called_like_a_function_tool(
    stream: bool,
) -> None:
    """TL-12: FunctionTool, as_tool() and an object of the shape satisfy ToolProtocol;
    the loop calls the shaped object with the validated arguments, in both modes."""
    from minagent import Agent, ToolProtocol
    from minagent.testing import ScriptedChatClient, call, reply

    shaped = _Shaped()
    assert isinstance(shaped, ToolProtocol)
    assert isinstance(tool(get_weather), ToolProtocol)
    assert isinstance(
        Agent(ScriptedChatClient([]), name="helper").as_tool(), ToolProtocol
    )
    assert not isinstance(_NotATool(), ToolProtocol)
    client = ScriptedChatClient(
        [reply(call("shaped", {"n": 21}, call_id="c1")), "done"]
    )
    agent = Agent(client, tools=[shaped])
    if stream:
        response = await agent.run("go", stream=True).get_final_response()
    else:
        response = await agent.run("go")
    assert shaped.seen == [{"n": 21}]
    results = [
        c.result
        for m in response.messages
        for c in m.contents
        if c.type == "function_result"
    ]
    assert results == [42]
    assert response.text == "done"


@given(
    levels=st.lists(
        st.lists(st.sampled_from(["f", "g", "declared"]), max_size=3),
        min_size=1,
        max_size=4,
    )
)
def test_one_normaliser_wraps_a_function_once_across_levels(
    levels: list[list[str]],
) -> None:
    """TL-12, OP-3: normalising the levels of one run in order with one ``known`` list
    wraps each plain function once: every later level gets the same FunctionTool
    object."""

    def f(x: int) -> int:
        return x

    def g(y: str) -> str:
        return y

    source = {
        "f": f,
        "g": g,
        "declared": {"name": "declared", "parameters": {"type": "object"}},
    }
    known: list[Any] = []
    made: dict[str, Any] = {}
    for level in levels:
        out = normalize_tools([source[name] for name in level], known)
        for name, item in zip(level, out, strict=True):
            if name == "declared":
                assert item is source["declared"]
                continue
            assert isinstance(item, FunctionTool)
            assert item.func is source[name]
            assert made.setdefault(name, item) is item
    if "f" in made:  # without the run's known tools, a function is wrapped anew
        assert normalize_tools([f])[0] is not made["f"]


def test_method_tool_read_from_the_class_is_the_tool() -> None:
    """TL-15: `@tool` on a method, read from the class, is the tool itself; from an
    instance, bound."""

    class Box:
        def __init__(self) -> None:
            self.v = 7

        @tool
        def get(self) -> int:
            """Value."""
            return self.v

    assert Box.get is Box.__dict__["get"]
    assert Box().get is not Box.get
    assert Box().get() == 7


def test_plain_function_tool_on_a_class_is_not_bound() -> None:
    """TL-15: a tool whose function takes no self, stored on a class, is the same tool
    from an instance."""

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    class Holder:
        t = ping

    assert Holder().t is ping


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


async def test_tool_on_a_method_binds_to_the_instance():
    """TL-15: `@tool` on a method: `self` is not a parameter, and the tool read from an
    instance calls the method bound to it."""

    class Counter:
        def __init__(self, start):
            self.start = start

        @tool
        def add(self, x: int) -> int:
            """Add to the start."""
            return self.start + x

    counter = Counter(10)
    assert list(counter.add.parameters["properties"]) == ["x"]
    assert await counter.add.invoke(x=1, skip_parsing=True) == 11
    assert await Counter(20).add.invoke(x=1, skip_parsing=True) == 21


def test_normalize_tools_flattens():
    """TL-12: `normalize_tools` takes a tool, a function or nested lists of them, flat,
    in order."""

    def plain(x: int) -> int:
        return x

    found = normalize_tools([explicit, [plain]])
    assert [t.name for t in found] == ["explicit", "plain"]
    assert [t.name for t in normalize_tools(explicit)] == ["explicit"]


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def test_max_invocations_limits_a_tool_over_its_lifetime(stream):
    """TL-8: after max_invocations the tool is not called; the model gets an error
    result and the run goes on; the counters are the tool's own."""
    calls = []

    @tool(max_invocations=1)
    def unlock(door):
        """Unlock a door."""
        calls.append(door)
        return "unlocked"

    client = ScriptedChatClient(
        [
            reply(call("unlock", {"door": "a"}, call_id="u1")),
            reply(call("unlock", {"door": "b"}, call_id="u2")),
            "ok",
        ]
    )
    response = await run(Agent(client, tools=[unlock]), "go", stream=stream)
    results = [
        c for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    assert calls == ["a"]
    assert results[0].result == "unlocked"
    assert (
        results[1].exception == "tool 'unlock' has reached its maximum of 1 invocations"
    )
    assert unlock.invocation_count == 1
    assert response.text == "ok"


async def test_max_invocation_exceptions_counts_failures():
    """TL-8: invocation_exception_count counts raising invocations; at the limit invoke
    refuses."""

    @tool(max_invocation_exceptions=2)
    def flaky():
        """Always fails."""
        raise RuntimeError("down")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            await flaky.invoke({})
    with pytest.raises(Exception, match="failed 2 times"):
        await flaky.invoke({})
    assert (flaky.invocation_count, flaky.invocation_exception_count) == (2, 2)
    with pytest.raises(Exception, match="max_invocations"):
        tool(max_invocations=0)(get_location_weather.func)
