"""Issue 26: upstream's public API on minagent, used as upstream's users and tests use
it.

Tools, contents, responses, streams, helpers and exception names, in upstream's
spelling; the words of errors that upstream's tests match are checked here.
"""

import asyncio
import base64
import copy
from dataclasses import dataclass

import pytest

from minagent import (
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    MinagentError,
    ResponseStream,
    ToolError,
    UsageDetails,
    tool,
)
from minagent.upstream import (
    SKIP_PARSING,
    AdditionItemMismatch,
    AgentFrameworkException,
    ChatClientInvalidRequestException,
    ToolExecutionException,
    add_usage_details,
    detect_media_type_from_base64,
    map_chat_to_agent_update,
    normalize_function_invocation_configuration,
    normalize_tools,
    prepend_instructions_to_messages,
    validate_tool_mode,
)


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


# -- tools (TL-14, TL-15) -----------------------------------------------------------------------


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


def test_two_context_parameters_are_a_value_error():
    """TL-14: a function with two context parameters is a `ValueError`, as
    upstream's."""
    with pytest.raises(
        ValueError, match="multiple FunctionInvocationContext parameters"
    ):

        @tool
        def two(a: FunctionInvocationContext, b: FunctionInvocationContext):
            return None


def test_normalize_tools_flattens():
    """TL-12: `normalize_tools` takes a tool, a function or nested lists of them, flat,
    in order."""

    def plain(x: int) -> int:
        return x

    found = normalize_tools([explicit, [plain]])
    assert [t.name for t in found] == ["explicit", "plain"]
    assert [t.name for t in normalize_tools(explicit)] == ["explicit"]


# -- contents (TY-15, TY-16, TY-17) ---------------------------------------------------------


def test_upstream_content_kinds_and_helpers():
    """TY-15: upstream's other kinds have factories whose fields read as attributes;
    `str()` of an error is upstream's; `has_top_level_media_type`, `to_dict(exclude=,
    exclude_none=)`, a parsed result's `items`, `annotations`, and `from_dict` of data
    bytes."""
    hosted = Content.from_hosted_file("file_1")
    assert (hosted.type, hosted.file_id) == ("hosted_file", "file_1")
    assert Content.from_dict(hosted.to_dict()) == hosted
    assert str(Content.from_error("Oops", error_code="E1")) == "Error E1: Oops"
    assert str(Content.from_error()) == "Unknown error"
    assert str(Content.from_text("hi")) == "hi"
    assert Content.from_uri(
        "https://x/a.png", media_type="image/png"
    ).has_top_level_media_type("IMAGE")
    with pytest.raises(ValueError, match="no media_type found"):
        Content.from_text("x").has_top_level_media_type("image")
    text = Content.from_text(
        "hi", annotations=[{"type": "citation", "url": "https://x"}]
    )
    assert text.to_dict(exclude={"type"}) == {
        "text": "hi",
        "annotations": [{"type": "citation", "url": "https://x"}],
    }
    assert text.to_dict(exclude_none=False)["call_id"] is None
    result = Content.from_function_result(
        "c", [Content.from_text("x"), Content.from_text("y")]
    )
    assert result.result == "x\ny"
    assert [c.text for c in result.items] == ["x", "y"]
    png = b"\x89PNG\r\n\x1a\n0000"
    data = Content.from_dict({"type": "data", "data": png, "media_type": "image/png"})
    assert data.uri == "data:image/png;base64," + base64.b64encode(png).decode()


def test_contents_add_as_upstream_chunks():
    """TY-16: `a + b` merges two chunks of one content: texts join, call arguments join,
    usages sum; two kinds are a `TypeError`, reasoning of two ids an
    `AdditionItemMismatch`."""
    assert (Content.from_text("a") + Content.from_text("b")).text == "ab"
    joined = Content.from_function_call("c", "f", '{"a"') + Content.from_function_call(
        "c", "", ": 1}"
    )
    assert joined.parse_arguments() == {"a": 1}
    usage = Content.from_usage({"input_token_count": 1}) + Content.from_usage(
        {"input_token_count": 2}
    )
    assert usage.usage_details.input_token_count == 3
    with pytest.raises(TypeError, match="Cannot add Content of type 'text'"):
        Content.from_text("a") + Content.from_function_call("x", "f", "{}")
    with pytest.raises(AdditionItemMismatch):
        Content.from_text_reasoning(id="r1", text="a") + Content.from_text_reasoning(
            id="r2", text="b"
        )


def test_deepcopy_keeps_raw_representation():
    """TY-17: a deep copy of a content, message or response copies everything but
    `raw_representation`, which it keeps by reference."""
    raw = object()
    content = Content.from_text("a", raw_representation=raw)
    response = ChatResponse(
        messages=[Message("assistant", [content])], raw_representation=raw
    )
    copied = copy.deepcopy(response)
    assert copied == response
    assert copied.raw_representation is raw
    assert copied.messages[0].contents[0] is not content
    assert copied.messages[0].contents[0].raw_representation is raw


@dataclass
class Point:
    x: int


# -- responses and streams (UP-5, UP-6, ST-17) ----------------------------------------------


async def test_responses_parse_and_fold_as_upstream():
    """UP-5: `from_updates(..., output_format_type=T)` and `ChatResponse(...,
    response_format=T)` parse `.value`; `from_update_generator` folds an async iterable;
    `continuation_token` is the last update's."""
    updates = [
        ChatResponseUpdate([Content.from_text('{"x": ')], "assistant"),
        ChatResponseUpdate([Content.from_text("1}")], continuation_token={"id": "t1"}),
    ]
    assert ChatResponse.from_updates(updates, output_format_type=Point).value == Point(
        1
    )

    async def gen():
        for update in updates:
            yield update

    folded = await ChatResponse.from_update_generator(gen(), output_format_type=Point)
    assert folded.value == Point(1)
    assert folded.continuation_token == {"id": "t1"}
    made = ChatResponse(
        messages=[Message("assistant", ['{"x": 2}'])], response_format=Point
    )
    assert made.value == Point(2)


def test_usage_details_is_a_dict_with_attributes():
    """UP-6: `UsageDetails` is a dict of counts that also reads them as attributes;
    dicts add."""
    usage = UsageDetails(input_token_count=1)
    assert usage == {"input_token_count": 1}
    assert usage.input_token_count == 1
    assert usage.output_token_count is None
    summed = usage + {"input_token_count": 2, "extra_count": 3}
    assert summed == {"input_token_count": 3, "extra_count": 3}
    assert summed.additional_counts == {"extra_count": 3}
    assert (
        ChatResponse(
            usage_details={"input_token_count": 4}
        ).usage_details.input_token_count
        == 4
    )


async def test_flat_map_and_with_finalizer():
    """ST-17: `flat_map` turns each update into zero or more; `with_finalizer` gives the
    same updates another final value, and the inner stream still finalises first."""
    finalised = []

    async def source():
        for text in ("a", "b"):
            yield ChatResponseUpdate([Content.from_text(text)], "assistant")

    def inner_final(updates):
        finalised.append("inner")
        return ChatResponse.from_updates(updates)

    def doubled(update):
        return [update, update] if update.text == "a" else []

    stream = ResponseStream(source(), finalizer=inner_final).flat_map(
        doubled, ChatResponse.from_updates
    )
    assert [u.text async for u in stream] == ["a", "a"]
    assert (await stream.get_final_response()).text == "aa"
    assert finalised == ["inner"]
    other = ResponseStream(source(), finalizer=inner_final).with_finalizer(
        lambda ups: len(ups)
    )
    assert [u.text async for u in other] == ["a", "b"]
    assert await other.get_final_response() == 2
    assert finalised == ["inner", "inner"]


# -- helpers and exception names (UP-7, UP-8) ------------------------------------------------


def test_upstream_helpers():
    """UP-7: upstream's helper functions on minagent's types."""
    messages = prepend_instructions_to_messages([Message("user", ["hi"])], "be nice")
    assert [(m.role, m.text) for m in messages] == [
        ("system", "be nice"),
        ("user", "hi"),
    ]
    assert add_usage_details(
        {"input_token_count": 1}, {"input_token_count": 2, "x": 1}
    ) == {
        "input_token_count": 3,
        "x": 1,
    }
    assert validate_tool_mode("auto") == {"mode": "auto"}
    assert (
        validate_tool_mode({"mode": "required", "required_function_name": "f"})[
            "required_function_name"
        ]
        == "f"
    )
    with pytest.raises(ValueError, match="Invalid tool choice: bogus"):
        validate_tool_mode("bogus")
    assert (
        detect_media_type_from_base64(data_bytes=b"\x89PNG\r\n\x1a\n...") == "image/png"
    )
    assert (
        detect_media_type_from_base64(data_str=base64.b64encode(b"%PDF-1.4").decode())
        == "application/pdf"
    )
    with pytest.raises(ValueError, match="Provide exactly one of"):
        detect_media_type_from_base64()
    assert (
        normalize_function_invocation_configuration(
            {"max_iterations": 3}
        ).max_iterations
        == 3
    )
    update = map_chat_to_agent_update(
        ChatResponseUpdate([Content.from_text("x")], "assistant"), "bot"
    )
    assert isinstance(update, AgentResponseUpdate)
    assert update.author_name == "bot"


def test_upstream_exception_names():
    """UP-8: upstream's exception names are minagent's errors (or derive from
    `MinagentError`); `inner_exception=` is kept and is the cause."""
    assert AgentFrameworkException is MinagentError
    assert issubclass(ToolExecutionException, MinagentError)
    assert issubclass(ChatClientInvalidRequestException, ValueError)
    inner = ValueError("v")
    error = ChatClientInvalidRequestException("bad", inner_exception=inner)
    assert error.inner_exception is inner
    assert error.__cause__ is inner


def test_upstream_spellings_resolve_from_minagent():
    """UP-9: upstream's names resolve from `minagent` itself, lazily, without being
    minagent's own `__all__`."""
    import minagent

    assert (
        minagent.FunctionInvocationLayer
        is __import__("minagent.upstream").upstream.FunctionInvocationLayer
    )
    assert minagent.AgentFrameworkException is MinagentError
    assert "FunctionInvocationLayer" not in minagent.__all__


def test_run_helper_loop_is_fresh():
    """UP-5: `from_update_generator` is a coroutine (awaited, as upstream's)."""
    assert asyncio.iscoroutinefunction(ChatResponse.from_update_generator)


def test_layer_keywords_go_down_the_mro():
    """UP-4: a layered client's keywords the layers do not take reach the provider's own
    base; with none to take them, an unknown keyword is a `TypeError` naming it."""
    from minagent import BaseChatClient
    from minagent.upstream import FunctionInvocationLayer

    class Transport:
        def __init__(self, *, api_key):
            self.api_key = api_key

    class Keyed(FunctionInvocationLayer, BaseChatClient, Transport):
        pass

    class Bare(FunctionInvocationLayer, BaseChatClient):
        pass

    assert Keyed(api_key="k").api_key == "k"
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        Bare(bogus=1)


def test_from_dict_without_type():
    """TY-15: upstream's dicts without `type` read where the place says what they
    are."""
    message = Message.from_dict(
        {"role": "user", "contents": [{"type": "text", "text": "x"}]}
    )
    assert message.text == "x"
    assert ChatResponse.from_dict({"messages": [message.to_dict()]}).text == "x"


@pytest.mark.parametrize("serialization_format", ["json", "msgpack"])
async def test_file_history_and_sessions(tmp_path, serialization_format, stream):
    """SE-24: `FileHistoryProvider` appends a session's messages to one file and reads
    them back; `FileSessionStore` keeps a session's state in one snapshot; an unsafe id
    stays in the directory."""
    from minagent import Agent, AgentSession, FileHistoryProvider, FileSessionStore
    from minagent.testing import ScriptedChatClient, reply

    history = FileHistoryProvider(
        tmp_path / "h", serialization_format=serialization_format
    )
    agent = Agent(
        ScriptedChatClient([reply("one"), reply("two")]), context_providers=[history]
    )
    session = AgentSession(session_id="../escape")
    for text in ("first", "second"):
        if stream:
            async for _ in agent.run(text, session=session, stream=True):
                pass
        else:
            await agent.run(text, session=session)
    stored = await history.get_messages("../escape")
    assert [m.text for m in stored] == ["first", "one", "second", "two"]
    assert all(
        p.resolve().is_relative_to((tmp_path / "h").resolve())
        for p in (tmp_path / "h").rglob("*")
    )
    assert not (tmp_path / "escape.jsonl").exists()
    store = FileSessionStore(tmp_path / "s", serialization_format=serialization_format)
    session.state["n"] = 3
    await store.set("../escape", session)
    restored = await store.get("../escape")
    assert restored.session_id == "../escape"
    assert restored.state["n"] == 3
    await store.delete("../escape")
    assert await store.get("../escape") is None


def test_state_types_and_messages_as_upstream_stores_them():
    """SE-2: a registered class's type id is upstream's (`_get_type_identifier()`, else
    `TYPE`); a message stored without `version` (upstream's form) is restored as a
    message."""
    from minagent import AgentSession, register_state_type

    class Note:
        TYPE = "upstream_note"

        def __init__(self, text):
            self.text = text

        def to_dict(self):
            return {"text": self.text}

        @classmethod
        def from_dict(cls, data):
            return cls(data["text"])

    register_state_type(Note)
    session = AgentSession(session_id="s")
    session.state["note"] = Note("hi")
    data = session.to_dict()
    assert data["state"]["note"]["type"] == "upstream_note"
    assert AgentSession.from_dict(data).state["note"].text == "hi"
    stored = Message("user", ["x"]).to_dict()
    stored.pop("version", None)
    data["state"]["history"] = [stored]
    assert AgentSession.from_dict(data).state["history"][0] == Message("user", ["x"])


def test_messages_from_other_sessions_are_attributed():
    """SE-3: `extend_messages(source, messages, origin_session_ids=[...])` marks each
    copy with upstream's `_attribution` (source id, source type, origins each once);
    without origins no mark, and the given messages are never changed."""
    from minagent import InMemoryHistoryProvider, SessionContext

    context = SessionContext(session_id="s", input_messages=[])
    provider = InMemoryHistoryProvider()
    given = [Message("user", ["from elsewhere"])]
    context.extend_messages(provider, given, origin_session_ids=["a", "b", "a"])
    context.extend_messages("plain", given)
    marked = context.context_messages[provider.source_id][0]
    assert marked.additional_properties["_attribution"] == {
        "source_id": provider.source_id,
        "source_type": "InMemoryHistoryProvider",
        "origin_session_ids": ["a", "b"],
    }
    assert (
        "_attribution" not in context.context_messages["plain"][0].additional_properties
    )
    assert given[0].additional_properties == {}


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


def test_an_mcp_server_call_can_be_approved():
    """TY-15: an approval request may hold an `mcp_server_tool_call`, which is
    informational."""
    mcp_call = Content.from_mcp_server_tool_call(
        call_id="m1", tool_name="search", server_name="docs"
    )
    assert mcp_call.informational_only is True
    assert Content.from_dict(mcp_call.to_dict()).informational_only is True
    request = Content.from_function_approval_request("m1", mcp_call)
    assert request.function_call.tool_name == "search"
    assert Content.from_dict(request.to_dict()) == request
    with pytest.raises(ValueError, match="expected a function_call Content"):
        Content.from_function_approval_request("t", Content.from_text("x"))


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


_WRITER = """
import asyncio, sys
from minagent import FileHistoryProvider, Message

async def main(root, fmt, worker):
    history = FileHistoryProvider(root, serialization_format=fmt)
    for run in range(15):
        texts = [f"{worker}-{run}-{part}" + "x" * 3000 for part in range(3)]
        await history.save_messages("shared", [Message("user", [t]) for t in texts])

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


@pytest.mark.parametrize("serialization_format", ["json", "msgpack"])
def test_file_history_across_processes(tmp_path, serialization_format):
    """SE-24: processes appending to one session's file at once interleave whole runs:
    every run's messages are read back together, in order, none lost or torn."""
    import subprocess
    import sys

    from minagent import FileHistoryProvider

    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), serialization_format, str(w)]
        )
        for w in range(4)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    history = FileHistoryProvider(tmp_path, serialization_format=serialization_format)
    texts = [m.text.rstrip("x") for m in asyncio.run(history.get_messages("shared"))]
    assert len(texts) == 4 * 15 * 3
    runs = [texts[i : i + 3] for i in range(0, len(texts), 3)]
    assert all(len({t.rsplit("-", 1)[0] for t in run}) == 1 for run in runs)
    assert all([t.rsplit("-", 1)[1] for t in run] == ["0", "1", "2"] for run in runs)
