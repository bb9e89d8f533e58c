"""AG-UI (spec/hosting.md HS-80 .. HS-97): runs posted over loopback to the dev server,
every event validated against the `ag-ui-protocol` package's models and the run's
lifecycle rules (tests/hosting/_agui.py)."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentContext,
    AgentMiddleware,
    ChatContext,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    UsageDetails,
    _observe,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent._observe import Observer
from minagent._sessions import _RUNNING
from minagent.hosting import HostingApp, agui_flow
from minagent.hosting.agui import STATE_KEY, state_patch
from minagent.hosting.conversations import _key
from minagent.testing import ScriptedChatClient, call, reply, text_chunks
from minagent.testing.scripted import Request

from ._agui import history, post, run_input, served, user


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def remember(item: str, context: FunctionInvocationContext) -> str:
    """Add an item to the shared list."""
    assert context.session is not None
    state = context.session.state[STATE_KEY]
    state.setdefault("items", []).append(item)
    state["count"] = len(state["items"])
    return "ok"


def text_step(text: str, stream: bool) -> Any:
    """A model answer: streamed in chunks, or whole."""
    if stream:
        return text_chunks(*[text[i : i + 3] for i in range(0, len(text), 3)])
    return reply(text)


def call_step(name: str, arguments: dict[str, Any], call_id: str, stream: bool) -> Any:
    """A model call of a tool: its arguments streamed in two deltas, or whole."""
    if stream:
        text = json.dumps(arguments)
        half = len(text) // 2
        return [
            ChatResponseUpdate(
                [Content.from_function_call(call_id, name, text[:half])], "assistant"
            ),
            ChatResponseUpdate(
                [Content.from_function_call("", None, text[half:])], "assistant"
            ),
        ]
    return reply(call(name, arguments, call_id=call_id))


# -- the endpoint and the input --------------------------------------------------------


async def test_a_text_run_streams_the_answer(stream: bool) -> None:
    """HS-80, HS-86: RUN_STARTED (protocolVersion 1.0), one text message carrying the
    answer, RUN_FINISHED with the success outcome; every event is valid AG-UI."""
    client = ScriptedChatClient([text_step("Hello there, friend", stream)])
    app = HostingApp([Agent(client, name="greeter")])
    async with served(app) as http:
        result = await post(http, run_input([user("hi", "u1")]))
    assert result.status == 200
    started = result.events[0]
    assert (started["threadId"], started["runId"]) == ("t1", "r1")
    assert started["protocolVersion"] == "1.0"
    assert result.text == "Hello there, friend"
    assert len(result.of("TEXT_MESSAGE_START")) == 1
    assert result.of("TEXT_MESSAGE_START")[0]["role"] == "assistant"
    assert result.finished["outcome"] == {"type": "success"}
    assert client.requests[0].texts == ["user: hi"]


async def test_parent_run_id_is_echoed() -> None:
    """HS-80: the input's parentRunId is on RUN_STARTED."""
    app = HostingApp([Agent(ScriptedChatClient(["ok"]), name="a")])
    async with served(app) as http:
        result = await post(http, run_input([user("hi", "u1")], parentRunId="p0"))
    assert result.events[0]["parentRunId"] == "p0"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"runId": "r", "messages": []}, "invalid_input"),
        ({"threadId": "", "runId": "r", "messages": []}, "invalid_input"),
        ({"threadId": "t", "runId": "r"}, "invalid_input"),
        (
            {"threadId": "t", "runId": "r", "messages": [], "extra": 1},
            "unsupported_field",
        ),
        (
            {"threadId": "t", "runId": "r", "messages": [], "protocolVersion": "2.0"},
            "unsupported_version",
        ),
        (
            {"threadId": "t", "runId": "r", "messages": [], "tools": [{"name": "x"}]},
            "invalid_input",
        ),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "context": [{"value": "v"}],
            },
            "invalid_input",
        ),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [{"role": "user", "content": "x"}],
            },
            "invalid_input",
        ),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [
                    {
                        "id": "u",
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {"type": "url", "value": "http://x"},
                            }
                        ],
                    }
                ],
            },
            "unsupported_content",
        ),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [
                    {"id": "a", "role": "activity", "activityType": "x", "content": {}}
                ],
            },
            "unsupported_message",
        ),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "resume": [{"interruptId": "nope", "status": "resolved"}],
            },
            "unknown_interrupt",
        ),
    ],
)
async def test_bad_input_is_refused_before_the_run(
    body: dict[str, Any], code: str
) -> None:
    """HS-81, HS-82, HS-85, HS-90: input the endpoint cannot honour is a 400 whose body
    is one RUN_ERROR naming the problem; the model is never called."""
    client = ScriptedChatClient([])
    app = HostingApp([Agent(client, name="a")])
    async with served(app) as http:
        result = await post(http, body, check_input=False)
    assert result.status == 400
    assert result.error is not None
    assert result.error["code"] == code
    assert result.error["message"]
    assert client.requests == []


async def test_the_http_refusals() -> None:
    """HS-81: GET is 405, an unknown agent 404, a body that is not JSON 400, a body over
    the cap 413 — each body one RUN_ERROR event."""
    app = HostingApp([Agent(ScriptedChatClient([]), name="a")], max_body=30_000)
    async with served(app) as http:
        response = await http.get("/agui")
        assert response.status_code == 405
        assert response.json()["type"] == "RUN_ERROR"
        result = await post(http, run_input([]), "/agui/nobody")
        assert (result.status, result.error) == (
            404,
            {
                "type": "RUN_ERROR",
                "message": "no agent named 'nobody'",
                "code": "agent_not_found",
            },
        )
        deep = b"[" * 10_000 + b"]" * 10_000
        result = await post(http, deep, check_input=False)
        assert (result.status, result.error and result.error["code"]) == (
            400,
            "invalid_json",
        )
        result = await post(http, b"{not json", check_input=False)
        assert (result.status, result.error and result.error["code"]) == (
            400,
            "invalid_json",
        )
        result = await post(http, run_input([user("x" * 40_000, "u1")]))
        assert (result.status, result.error and result.error["code"]) == (
            413,
            "request_too_large",
        )


async def test_the_agent_is_named_by_the_path_or_forwarded_props() -> None:
    """HS-83: /agui/{agent} and forwardedProps.agent pick the agent; several agents and
    no name is refused; one agent needs no name."""
    one = ScriptedChatClient(["from one", "one again"])
    two = ScriptedChatClient(["from two"])
    app = HostingApp([Agent(one, name="one"), Agent(two, name="two")])
    async with served(app) as http:
        assert (
            await post(http, run_input([user("hi", "u1")]), "/agui/two")
        ).text == "from two"
        result = await post(
            http,
            run_input([user("hi", "u1")], thread="t2", forwardedProps={"agent": "one"}),
        )
        assert result.text == "from one"
        result = await post(http, run_input([user("hi", "u1")], thread="t3"))
        assert (result.status, result.error and result.error["code"]) == (
            400,
            "agent_required",
        )
        result = await post(
            http,
            run_input([user("hi", "u1")], thread="t4", forwardedProps={"agent": 3}),
        )
        assert (result.status, result.error and result.error["code"]) == (
            400,
            "invalid_input",
        )
    single = HostingApp([Agent(ScriptedChatClient(["only"]), name="solo")])
    async with served(single) as http:
        assert (await post(http, run_input([user("hi", "u1")]))).text == "only"


# -- the thread ------------------------------------------------------------------------


async def test_the_thread_keeps_the_conversation(stream: bool) -> None:
    """HS-84: threadId is the session; a front end that sends the whole conversation
    again adds only its new message; another thread starts empty."""
    client = ScriptedChatClient(
        [text_step("first answer", stream), text_step("second answer", stream), "other"]
    )
    app = HostingApp([Agent(client, name="a")])
    async with served(app) as http:
        first_input = [user("first", "u1")]
        first = await post(http, run_input(first_input))
        messages = [*history(first, first_input), user("second", "u2")]
        second = await post(http, run_input(messages, run="r2"))
        assert second.text == "second answer"
        await post(http, run_input([user("elsewhere", "x1")], thread="t9", run="r3"))
    assert client.requests[1].texts == [
        "user: first",
        "assistant: first answer",
        "user: second",
    ]
    assert client.requests[2].texts == ["user: elsewhere"]
    stored = await app.conversations.get("a", "t1")
    assert stored is not None


async def test_a_new_thread_takes_the_whole_input_as_history() -> None:
    """HS-84, HS-85: every role of the input reaches the model: system, developer,
    user, an assistant turn with a tool call and its tool message."""
    client = ScriptedChatClient(["done"])
    app = HostingApp([Agent(client, name="a")])
    messages = [
        {"id": "s", "role": "system", "content": "be brief"},
        {"id": "d", "role": "developer", "content": "no jokes"},
        {
            "id": "u",
            "role": "user",
            "content": [
                {"type": "text", "text": "add "},
                {"type": "text", "text": "1 and 2"},
            ],
        },
        {
            "id": "a1",
            "role": "assistant",
            "content": "calling",
            "toolCalls": [
                {
                    "id": "c9",
                    "type": "function",
                    "function": {"name": "add", "arguments": "{}"},
                }
            ],
        },
        {"id": "t", "role": "tool", "toolCallId": "c9", "content": "3"},
    ]
    async with served(app) as http:
        result = await post(http, run_input(messages))
    assert result.text == "done"
    sent = client.requests[0].messages
    assert [m.role for m in sent] == ["system", "system", "user", "assistant", "tool"]
    assert sent[2].text == "add 1 and 2"
    assert sent[3].contents[1].type == "function_call"
    assert (sent[3].contents[1].call_id, sent[3].contents[1].name) == ("c9", "add")
    assert (sent[4].contents[0].call_id, sent[4].contents[0].result) == ("c9", "3")


# -- tools -----------------------------------------------------------------------------


async def test_a_server_tool_is_run_and_reported(stream: bool) -> None:
    """HS-86: the agent's tool call streams as TOOL_CALL_START/ARGS/END with the model
    call's message as parent, its result as TOOL_CALL_RESULT, then the answer."""
    client = ScriptedChatClient(
        [
            call_step("add", {"a": 1, "b": 2}, "c1", stream),
            text_step("It is 3.", stream),
        ]
    )
    app = HostingApp([Agent(client, name="calc", tools=[add])])
    async with served(app) as http:
        result = await post(http, run_input([user("1+2?", "u1")]))
    (start,) = result.of("TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == ("c1", "add")
    args = "".join(e["delta"] for e in result.of("TOOL_CALL_ARGS"))
    assert json.loads(args) == {"a": 1, "b": 2}
    (_end,) = result.of("TOOL_CALL_END")
    (done,) = result.of("TOOL_CALL_RESULT")
    assert (done["toolCallId"], done["content"]) == ("c1", "3")
    kinds = result.kinds
    assert kinds.index("TOOL_CALL_END") < kinds.index("TOOL_CALL_RESULT")
    assert kinds.index("TOOL_CALL_RESULT") < kinds.index("TEXT_MESSAGE_START")
    assert result.text == "It is 3."
    assert result.finished["outcome"] == {"type": "success"}


async def test_text_and_call_of_one_model_call_share_a_message(stream: bool) -> None:
    """HS-86: text before a call is closed before the call starts, and the call's parent
    is the text's message."""
    if stream:
        step: Any = [
            ChatResponseUpdate([Content.from_text("Let me add.")], "assistant"),
            ChatResponseUpdate(
                [Content.from_function_call("c1", "add", '{"a": 2, "b": 2}')],
                "assistant",
            ),
        ]
    else:
        step = reply("Let me add.", call("add", {"a": 2, "b": 2}, call_id="c1"))
    client = ScriptedChatClient([step, "4"])
    app = HostingApp([Agent(client, name="calc", tools=[add])])
    async with served(app) as http:
        result = await post(http, run_input([user("2+2?", "u1")]))
    first_text = result.of("TEXT_MESSAGE_START")[0]["messageId"]
    assert result.of("TOOL_CALL_START")[0]["parentMessageId"] == first_text
    kinds = result.kinds
    assert kinds.index("TEXT_MESSAGE_END") < kinds.index("TOOL_CALL_START")
    assert len({e["messageId"] for e in result.of("TEXT_MESSAGE_START")}) == 2


async def test_a_client_tool_is_handed_back(stream: bool) -> None:
    """HS-87, HS-88, HS-91: the client's tool is the model's to call and not the
    agent's to run: its call streams without a result (its function-layer step is
    marked), the run succeeds naming it pending, and the tool message of the next run
    is its result."""
    client = ScriptedChatClient(
        [
            call_step("pick_color", {"hint": "warm"}, "c7", stream),
            text_step("Red it is.", stream),
        ]
    )
    app = HostingApp([Agent(client, name="a")])
    tools = [
        {
            "name": "pick_color",
            "description": "Ask the user for a color",
            "parameters": {
                "type": "object",
                "properties": {"hint": {"type": "string"}},
            },
        }
    ]
    async with served(app) as http:
        first_input = [user("pick a color", "u1")]
        first = await post(http, run_input(first_input, tools=tools))
        assert first.of("TOOL_CALL_RESULT") == []
        assert first.of("TOOL_CALL_START")[0]["toolCallName"] == "pick_color"
        # HS-91: the function layer sees the client tool's call too
        assert "tool pick_color (c7)" in [
            e["stepName"] for e in first.of("STEP_STARTED")
        ]
        assert first.finished["outcome"] == {
            "type": "success",
            "pendingToolCallIds": ["c7"],
        }
        messages = [
            *history(first, first_input),
            {"id": "tm1", "role": "tool", "toolCallId": "c7", "content": "red"},
        ]
        second = await post(http, run_input(messages, run="r2", tools=tools))
    assert second.text == "Red it is."
    assert second.finished["outcome"] == {"type": "success"}
    declared = client.requests[0].options["tools"]
    assert [getattr(t, "name", None) for t in declared] == ["pick_color"]
    last = client.requests[1].messages
    assert [m.role for m in last] == ["user", "assistant", "tool"]
    assert (last[2].contents[0].call_id, last[2].contents[0].result) == ("c7", "red")


async def test_a_client_tool_named_like_a_server_tool_is_refused() -> None:
    """HS-87: a client tool may not shadow the agent's tool, nor another client tool."""
    app = HostingApp([Agent(ScriptedChatClient([]), name="calc", tools=[add])])
    tool_spec = {"name": "add", "description": "mine"}
    other = {"name": "x", "description": "x"}
    async with served(app) as http:
        result = await post(http, run_input([user("hi", "u1")], tools=[tool_spec]))
        assert (result.status, result.error and result.error["code"]) == (
            400,
            "tool_conflict",
        )
        result = await post(http, run_input([user("hi", "u1")], tools=[other, other]))
        assert (result.status, result.error and result.error["code"]) == (
            400,
            "tool_conflict",
        )


# -- approvals -------------------------------------------------------------------------


async def _interrupted(
    http: Any, client: ScriptedChatClient
) -> tuple[Any, list[dict[str, Any]]]:
    first_input = [user("delete /tmp/x", "u1")]
    first = await post(http, run_input(first_input))
    return first, history(first, first_input)


def approval_client(stream: bool, answer: str) -> ScriptedChatClient:
    return ScriptedChatClient(
        [
            call_step("delete_file", {"path": "/tmp/x"}, "c1", stream),
            text_step(answer, stream),
        ]
    )


async def test_an_approval_is_an_interrupt_answered_by_resume(stream: bool) -> None:
    """HS-89, HS-90: a call that needs approval streams without a result and ends the
    run with an interrupt; resume with approved: true runs it in the next run."""
    client = approval_client(stream, "Deleted.")
    app = HostingApp([Agent(client, name="a", tools=[delete_file])])
    async with served(app) as http:
        first, messages = await _interrupted(http, client)
        outcome = first.finished["outcome"]
        assert outcome["type"] == "interrupt"
        (interrupt,) = outcome["interrupts"]
        assert interrupt["toolCallId"] == "c1"
        assert interrupt["reason"] == "tool_approval"
        assert "delete_file" in interrupt["message"]
        assert interrupt["responseSchema"]["required"] == ["approved"]
        assert first.of("TOOL_CALL_RESULT") == []
        resume = [
            {
                "interruptId": interrupt["id"],
                "status": "resolved",
                "payload": {"approved": True},
            }
        ]
        second = await post(http, run_input(messages, run="r2", resume=resume))
    (result,) = second.of("TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == ("c1", "deleted /tmp/x")
    assert second.text == "Deleted."
    assert second.finished["outcome"] == {"type": "success"}


@pytest.mark.parametrize(
    "entry",
    [{"status": "resolved", "payload": {"approved": False}}, {"status": "cancelled"}],
    ids=["rejected", "cancelled"],
)
async def test_a_rejected_or_cancelled_approval_does_not_run(
    entry: dict[str, Any],
) -> None:
    """HS-90: approved: false, and a cancelled entry, give the call the rejection
    result."""
    client = approval_client(False, "Not deleted.")
    app = HostingApp([Agent(client, name="a", tools=[delete_file])])
    async with served(app) as http:
        first, messages = await _interrupted(http, client)
        interrupt_id = first.finished["outcome"]["interrupts"][0]["id"]
        second = await post(
            http,
            run_input(
                messages, run="r2", resume=[{"interruptId": interrupt_id, **entry}]
            ),
        )
    (result,) = second.of("TOOL_CALL_RESULT")
    assert "rejected" in result["content"]
    assert second.text == "Not deleted."


@pytest.mark.parametrize(
    ("resume", "code"),
    [
        (None, "interrupt_not_answered"),
        (
            [
                {
                    "interruptId": "c1",
                    "status": "resolved",
                    "payload": {"approved": "yes"},
                }
            ],
            "invalid_resume",
        ),
        (
            [
                {
                    "interruptId": "c1",
                    "status": "resolved",
                    "payload": {"approved": True, "editedArgs": {}},
                }
            ],
            "invalid_resume",
        ),
        ([{"interruptId": "c1", "status": "later"}], "invalid_resume"),
        ([{"interruptId": "zz", "status": "cancelled"}], "unknown_interrupt"),
        ([{"interruptId": "c1", "status": "cancelled"}] * 2, "unknown_interrupt"),
    ],
)
async def test_a_bad_answer_to_an_interrupt_is_refused(resume: Any, code: str) -> None:
    """HS-90: the open interrupt stays open while the answer is missing or malformed;
    the refusal changes nothing, so a good answer still runs the call."""
    client = approval_client(False, "Deleted.")
    app = HostingApp([Agent(client, name="a", tools=[delete_file])])
    async with served(app) as http:
        _first, messages = await _interrupted(http, client)
        extra = {} if resume is None else {"resume": resume}
        bad = await post(
            http,
            run_input([*messages, user("and?", "u2")], run="r2", **extra),
            check_input=False,
        )
        assert (bad.status, bad.error and bad.error["code"]) == (400, code)
        good = await post(
            http,
            run_input(
                messages,
                run="r3",
                resume=[
                    {
                        "interruptId": "c1",
                        "status": "resolved",
                        "payload": {"approved": True},
                    }
                ],
            ),
        )
    assert good.of("TOOL_CALL_RESULT")[0]["content"] == "deleted /tmp/x"


# -- steps, state, context, usage ------------------------------------------------------


async def test_steps_mark_every_layer(stream: bool) -> None:
    """HS-91: the agent layer spans the run; each model call and each tool call is a
    step, in the order of the flow, each finished before RUN_FINISHED."""
    client = ScriptedChatClient(
        [call_step("add", {"a": 1, "b": 1}, "c1", stream), text_step("2", stream)]
    )
    app = HostingApp([Agent(client, name="a", tools=[add])])
    async with served(app) as http:
        result = await post(http, run_input([user("1+1", "u1")]))
    steps = [
        (e["type"][5:], e["stepName"])
        for e in result.events
        if e["type"] in ("STEP_STARTED", "STEP_FINISHED")
    ]
    assert steps == [
        ("STARTED", "agent"),
        ("STARTED", "model call 1"),
        ("FINISHED", "model call 1"),
        ("STARTED", "tool add (c1)"),
        ("FINISHED", "tool add (c1)"),
        ("STARTED", "model call 2"),
        ("FINISHED", "model call 2"),
        ("FINISHED", "agent"),
    ]


def apply_events(state: Any, events: list[dict[str, Any]]) -> Any:
    """The state a front end holds after these events (RFC 6902 by `jsonpatch`)."""
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            state = copy.deepcopy(event["snapshot"])
        elif event["type"] == "STATE_DELTA":
            state = jsonpatch.apply_patch(state, event["delta"])
    return state


async def test_the_shared_state_is_synchronised(stream: bool) -> None:
    """HS-92, HS-93: the input's state is snapshotted; a tool's change is a STATE_DELTA
    right after its step; the front end's copy ends equal to the thread's; a run without
    state continues the stored one."""
    client = ScriptedChatClient(
        [
            call_step("remember", {"item": "milk"}, "c1", stream),
            text_step("noted", stream),
            call_step("remember", {"item": "eggs"}, "c2", stream),
            text_step("noted again", stream),
        ]
    )
    app = HostingApp([Agent(client, name="a", tools=[remember])])
    start = {"owner": "ann", "items": []}
    async with served(app) as http:
        first_input = [user("add milk", "u1")]
        first = await post(http, run_input(first_input, state=start))
        assert first.kinds[1] == "STATE_SNAPSHOT"
        assert first.of("STATE_SNAPSHOT")[0]["snapshot"] == start
        (_delta,) = first.of("STATE_DELTA")
        kinds = first.kinds
        assert kinds.index("STATE_DELTA") > kinds.index(
            "STEP_FINISHED", kinds.index("TOOL_CALL_END")
        )
        held = apply_events(start, first.events)
        assert held == {"owner": "ann", "items": ["milk"], "count": 1}
        messages = [*history(first, first_input), user("add eggs", "u2")]
        second = await post(http, run_input(messages, run="r2"))
    assert second.of("STATE_SNAPSHOT")[0]["snapshot"] == held
    assert apply_events(held, second.events) == {
        "owner": "ann",
        "items": ["milk", "eggs"],
        "count": 2,
    }
    stored = await app.conversations.get("a", "t1")
    assert stored is not None
    assert stored.state[STATE_KEY]["count"] == 2


async def test_a_run_without_state_sends_none() -> None:
    """HS-92: a thread that never had a state gets no state events."""
    app = HostingApp([Agent(ScriptedChatClient(["hi"]), name="a")])
    async with served(app) as http:
        result = await post(http, run_input([user("hi", "u1")]))
    assert not {"STATE_SNAPSHOT", "STATE_DELTA"} & set(result.kinds)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "b", "~", "/", "a/b", "~1", ""]), inner, max_size=3
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300)
@given(old=JSON, new=JSON)
def test_a_state_patch_turns_the_old_state_into_the_new(old: Any, new: Any) -> None:
    """HS-93: applied by an RFC 6902 implementation, the patch between two object states
    gives the new state exactly; a root that is not an object has no patch."""
    patch = state_patch(old, new)
    if not isinstance(old, dict) or not isinstance(new, dict):
        assert patch is None
        return
    assert patch is not None
    before = copy.deepcopy(old)
    assert jsonpatch.apply_patch(old, patch) == new
    assert json.dumps(jsonpatch.apply_patch(old, patch), sort_keys=True) == json.dumps(
        new, sort_keys=True
    )
    assert old == before
    assert (patch == []) == (
        json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)
    )


async def test_a_state_whose_root_is_not_an_object_is_snapshotted() -> None:
    """HS-93: a change of a list state is a STATE_SNAPSHOT, not a delta."""

    @tool
    def push(item: str, context: FunctionInvocationContext) -> str:
        """Push."""
        assert context.session is not None
        context.session.state[STATE_KEY] = [*context.session.state[STATE_KEY], item]
        return "ok"

    client = ScriptedChatClient(
        [reply(call("push", {"item": "x"}, call_id="c1")), "ok"]
    )
    app = HostingApp([Agent(client, name="a", tools=[push])])
    async with served(app) as http:
        result = await post(http, run_input([user("push", "u1")], state=["a"]))
    assert [e["snapshot"] for e in result.of("STATE_SNAPSHOT")] == [["a"], ["a", "x"]]
    assert result.of("STATE_DELTA") == []


async def test_context_and_state_reach_the_model_not_the_history() -> None:
    """HS-94: context items and the current state are instructions of each model call,
    after the agent's; they are not stored as messages; forwardedProps reach the
    tools."""
    seen: list[Any] = []

    @tool
    def peek(context: FunctionInvocationContext) -> str:
        """Peek."""
        seen.append(context.kwargs.get("forwarded_props"))
        return "ok"

    client = ScriptedChatClient([reply(call("peek", {}, call_id="c1")), "done"])
    app = HostingApp([Agent(client, "You are terse.", name="a", tools=[peek])])
    context = [{"description": "page", "value": "checkout"}]
    async with served(app) as http:
        await post(
            http,
            run_input(
                [user("hi", "u1")],
                context=context,
                state={"cart": 2},
                forwardedProps={"tenant": "acme"},
            ),
        )
    instructions = client.requests[0].options["instructions"]
    assert instructions.startswith("You are terse.")
    assert "Context from the application:\n- page: checkout" in instructions
    assert 'The application\'s shared state (JSON): {"cart": 2}' in instructions
    assert seen == [{"tenant": "acme"}]
    assert all("checkout" not in m.text for m in client.requests[1].messages)
    assert "forwarded_props" not in client.requests[0].kwargs


async def test_usage_is_reported_on_run_finished() -> None:
    """HS-95: the run's token counts as one TokenUsage entry; unknown counts left
    out."""
    usage = UsageDetails(input_token_count=7, output_token_count=3)
    app = HostingApp(
        [Agent(ScriptedChatClient([text_chunks("hi", usage=usage)]), name="a")]
    )
    only_input = UsageDetails(input_token_count=4)
    other = HostingApp(
        [Agent(ScriptedChatClient([reply("hi", usage=only_input)]), name="a")]
    )
    async with served(app) as http:
        result = await post(http, run_input([user("hi", "u1")]))
    async with served(other) as http:
        partial = await post(http, run_input([user("hi", "u1")]))
    assert result.finished["usage"] == [
        {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}
    ]
    assert partial.finished["usage"] == [{"inputTokens": 4}]
    only_output = UsageDetails(output_token_count=5)
    third = HostingApp(
        [Agent(ScriptedChatClient([reply("hi", usage=only_output)]), name="a")]
    )
    async with served(third) as http:
        outputs = await post(http, run_input([user("hi", "u1")]))
    assert outputs.finished["usage"] == [{"outputTokens": 5}]


async def test_a_failed_run_ends_with_run_error_and_stores_nothing(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """HS-96: a failure inside the run is RUN_ERROR without the exception's text,
    logged; the thread keeps neither the messages nor the state of the failed run."""
    client = ScriptedChatClient(
        [RuntimeError("secret-token-123"), text_step("fine", stream)]
    )
    app = HostingApp([Agent(client, name="a")])
    async with served(app) as http:
        with caplog.at_level(logging.ERROR, logger="minagent.hosting"):
            failed = await post(http, run_input([user("first", "u1")], state={"x": 1}))
        assert failed.status == 200
        error = failed.events[-1]
        assert error["type"] == "RUN_ERROR"
        assert error["code"] == "run_failed"
        assert "secret" not in failed.body.decode()
        assert "secret-token-123" in caplog.text
        again = await post(http, run_input([user("retry", "u2")], run="r2"))
    assert again.text == "fine"
    assert client.requests[1].texts == ["user: retry"]
    assert not {"STATE_SNAPSHOT"} & set(again.kinds)


async def test_what_is_not_supported_is_never_sent(stream: bool) -> None:
    """HS-97, HS-86: reasoning and other contents the run produces are not sent; no
    MESSAGES_SNAPSHOT, activity, subagent or cancelled outcome; RUN_STARTED does not
    echo the input."""
    if stream:
        step: Any = [
            ChatResponseUpdate([Content.from_text_reasoning("thinking")], "assistant"),
            ChatResponseUpdate([Content.from_text("answer")], "assistant"),
        ]
    else:
        step = reply(Content.from_text_reasoning("thinking"), "answer")
    app = HostingApp([Agent(ScriptedChatClient([step]), name="a")])
    async with served(app) as http:
        result = await post(http, run_input([user("hi", "u1")]))
    assert result.text == "answer"
    assert "thinking" not in result.body.decode()
    kinds = set(result.kinds)
    assert kinds <= {
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    }
    assert "input" not in result.events[0]
    assert result.finished["outcome"]["type"] == "success"


async def test_a_client_gone_mid_stream_stops_the_run(stream: bool) -> None:
    """HS-96: when sending fails (the client went away) the run's stream is closed: the
    tool the model called does not run, no later model call is made, nothing is stored,
    and no task is left running (tests/conftest.py)."""
    ran: list[str] = []

    @tool
    def slow(x: int) -> int:
        """Slow."""
        ran.append("slow")
        return x

    client = ScriptedChatClient([call_step("slow", {"x": 1}, "c1", stream), "never"])
    app = HostingApp([Agent(client, name="a", tools=[slow])])
    body = json.dumps(run_input([user("go", "u1")], state={"n": 1})).encode()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if b"TOOL_CALL_START" in message.get("body", b""):
            raise ConnectionResetError("the client went away")
        sent.append(message)

    await app({"type": "http", "method": "POST", "path": "/agui"}, receive, send)
    assert ran == []
    assert len(client.requests) == 1
    assert await app.conversations.get("a", "t1") is None
    assert sent[0]["status"] == 200
    # once a send failed nothing more is sent: no closing event, no RUN_ERROR
    kinds = [
        json.loads(m["body"].removeprefix(b"data: "))["type"]
        for m in sent[1:]
        if m.get("body")
    ]
    assert kinds == ["RUN_STARTED", "STATE_SNAPSHOT", "STEP_STARTED", "STEP_STARTED"]


@settings(max_examples=25)
@given(
    turns=st.lists(
        st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3),
        min_size=1,
        max_size=4,
    ),
    streamed=st.booleans(),
)
def test_a_resent_conversation_reaches_the_model_once(
    turns: list[list[str]], streamed: bool
) -> None:
    """HS-84: a front end that resends the whole conversation with each run's new
    messages: every model call sees every message of the thread exactly once, in
    order."""
    answers = iter(range(1_000))

    def answer(messages: list[Any], options: dict[str, Any]) -> Any:
        text = f"answer {next(answers)}"
        return text_step(text, streamed)

    async def scenario() -> None:
        client = ScriptedChatClient([answer] * len(turns))
        app = HostingApp([Agent(client, name="a")])
        held: list[dict[str, Any]] = []
        expected: list[str] = []
        async with served(app) as http:
            for number, texts in enumerate(turns):
                new = [user(t, f"u{number}-{i}") for i, t in enumerate(texts)]
                before = [*held, *new]
                result = await post(http, run_input(before, run=f"r{number}"))
                expected += [f"user: {t}" for t in texts]
                assert client.requests[number].texts == expected
                expected.append(f"assistant: {result.text}")
                held = history(result, before)

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("gone_at", "logged"),
    [
        (b"STATE_SNAPSHOT", "no RUN_ERROR"),
        (b"TOOL_CALL_START", "no RUN_ERROR"),
        (b"RUN_ERROR", "RUN_ERROR could not be sent"),
    ],
)
async def test_a_client_gone_for_good_stores_nothing(
    gone_at: bytes, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    """HS-96: a client gone before the run's stream was made (at the first state
    snapshot), during it, or when a failed run's RUN_ERROR is sent, for whom no later
    send succeeds either: nothing more is sent, this is logged, no tool or model call
    is made after it, nothing of the run is stored, and the thread takes its next run
    (the failed one holds nothing)."""
    ran: list[int] = []

    @tool
    def slow(x: int) -> int:
        """Slow."""
        ran.append(x)
        return x

    first: Any = call_step("slow", {"x": 1}, "c1", True)
    if gone_at == b"RUN_ERROR":
        first = RuntimeError("the model failed")
    client = ScriptedChatClient([first, "again"])
    app = HostingApp([Agent(client, name="a", tools=[slow])])
    body = json.dumps(run_input([user("go", "u1")], state={"n": 1})).encode()
    sent: list[dict[str, Any]] = []
    gone = False

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal gone
        gone = gone or gone_at in message.get("body", b"")
        if gone:
            raise ConnectionResetError("the client went away")
        sent.append(message)

    with caplog.at_level(logging.WARNING, logger="minagent.hosting"):
        await app({"type": "http", "method": "POST", "path": "/agui"}, receive, send)
    assert logged in caplog.text
    assert ran == []
    assert len(client.requests) == (0 if gone_at == b"STATE_SNAPSHOT" else 1)
    assert await app.conversations.get("a", "t1") is None
    assert sent[0]["status"] == 200
    assert sent[-1]["body"].startswith(b"data: ")
    assert not any(b"RUN_ERROR" in m.get("body", b"") for m in sent)
    async with served(app) as http:
        again = await post(http, run_input([user("go", "u1")], run="r2"))
    assert again.text == "again"


async def test_calls_with_object_or_no_arguments_stream_as_json_text() -> None:
    """HS-86, HS-89: a call whose arguments the model gave as an object streams them as
    one JSON text TOOL_CALL_ARGS, a call without arguments has no TOOL_CALL_ARGS, a
    chunk that adds nothing sends nothing, and an approval asked for a call with object
    arguments names them in its interrupt."""

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    client = ScriptedChatClient(
        [
            [
                ChatResponseUpdate(
                    [Content.from_function_call("c1", "add", {"a": 1, "b": 2})],
                    "assistant",
                ),
                ChatResponseUpdate([Content.from_function_call("", None)], "assistant"),
                ChatResponseUpdate(
                    [Content.from_function_call("c2", "ping", None)], "assistant"
                ),
            ],
            [
                ChatResponseUpdate(
                    [Content.from_function_call("c3", "delete_file", {"path": "/x"})],
                    "assistant",
                )
            ],
        ]
    )
    app = HostingApp([Agent(client, name="a", tools=[add, ping, delete_file])])
    async with served(app) as http:
        result = await post(http, run_input([user("go", "u1")]))
    starts = [
        (e["toolCallId"], e["toolCallName"]) for e in result.of("TOOL_CALL_START")
    ]
    assert starts == [("c1", "add"), ("c2", "ping"), ("c3", "delete_file")]
    args = [
        (e["toolCallId"], json.loads(e["delta"])) for e in result.of("TOOL_CALL_ARGS")
    ]
    assert args == [("c1", {"a": 1, "b": 2}), ("c3", {"path": "/x"})]
    results = [(e["toolCallId"], e["content"]) for e in result.of("TOOL_CALL_RESULT")]
    assert results == [("c1", "3"), ("c2", "pong")]
    (interrupt,) = result.finished["outcome"]["interrupts"]
    assert interrupt["toolCallId"] == "c3"
    assert "/x" in interrupt["message"]


class _UnclosableModel(ScriptedChatClient):
    """A model whose stream fails while it is being closed."""

    async def _inner_get_streaming_response(
        self, *, messages: list[Any], options: dict[str, Any], **kwargs: Any
    ) -> Any:
        self.requests.append(Request(list(messages), dict(options), True, kwargs))
        try:
            yield ChatResponseUpdate([Content.from_text("Hel")], "assistant")
            yield ChatResponseUpdate([Content.from_text("lo")], "assistant")
        finally:
            raise RuntimeError("the model's connection broke while closing")


async def test_a_stream_that_fails_to_close_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """HS-96: when the failed run's stream itself fails while it is closed, that is
    logged and the request still ends as HS-96 says: nothing more is sent to a client
    that is gone, and nothing of the run is stored."""
    client = _UnclosableModel()
    app = HostingApp([Agent(client, name="a")])
    body = json.dumps(run_input([user("hi", "u1")])).encode()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if b"TEXT_MESSAGE_CONTENT" in message.get("body", b""):
            raise ConnectionResetError("the client went away")
        sent.append(message)

    with caplog.at_level(logging.WARNING, logger="minagent.hosting"):
        await app({"type": "http", "method": "POST", "path": "/agui"}, receive, send)
    assert "closing the failed AG-UI run's stream failed" in caplog.text
    assert "connection broke while closing" in caplog.text
    assert len(client.requests) == 1
    assert await app.conversations.get("a", "t1") is None
    assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [
        200
    ]
    assert not any(b"RUN_ERROR" in m.get("body", b"") for m in sent)
    # ST-6, SE-12: the run's session is free again, though its stream failed to close
    assert _key("a", "t1") not in _RUNNING


# -- the flow in detail (HS-98) ---------------------------------------------------------


class _Clock:
    """A clock the middleware and the tool move on: the times are exact."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class _SpendAgent(AgentMiddleware):
    """An agent middleware that spends 1 s of the clock itself."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock

    async def process(self, context: AgentContext, call_next: Any) -> None:
        self.clock.now += 1.0
        await call_next()


class _Notes(Observer):
    """An observer installed before the run: it must still see everything."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, str]] = []
        self.runs = 0

    def run(self, agent: Any, messages: Any, stream: bool, result: Any) -> Any:
        self.runs += 1
        return result

    def step(self, outcome: str, next_step: str) -> None:
        self.steps.append((outcome, next_step))


async def test_the_flow_in_detail(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HS-98, OB-31: with ``minagentFlow`` a run reports each middleware of the three
    layers with its own time (its call_next's excluded) and the step it belongs to, and
    each decision of the loop's table; the endpoint's own step middleware is not
    reported; the observer installed before still sees every note and is in place
    after; without ``minagentFlow`` no CUSTOM event is sent."""
    clock = _Clock()
    monkeypatch.setattr(agui_flow, "time", clock)

    @chat_middleware
    async def shape(context: ChatContext, call_next: Any) -> None:
        clock.now += 0.002
        await call_next()

    @function_middleware
    async def audit(context: FunctionInvocationContext, call_next: Any) -> None:
        clock.now += 0.0005
        await call_next()
        clock.now += 0.0005

    @tool
    def slow_add(a: int, b: int) -> int:
        """Add, taking 5 s of the clock."""
        clock.now += 5.0
        return a + b

    def agent() -> Agent:
        client = ScriptedChatClient(
            [
                call_step("slow_add", {"a": 1, "b": 1}, "c1", stream),
                text_step("2", stream),
            ]
        )
        return Agent(
            client,
            name="a",
            tools=[slow_add],
            middleware=[_SpendAgent(clock), shape, audit],
        )

    notes = _Notes()
    before = _observe.install(notes)
    try:
        async with served(HostingApp([agent()])) as http:
            result = await post(
                http,
                run_input(
                    [user("1+1", "u1")],
                    thread="flow-1",
                    forwardedProps={"minagentFlow": True},
                ),
            )
        assert _observe.current() is notes
        async with served(HostingApp([agent()])) as http:
            plain = await post(http, run_input([user("1+1", "u1")], thread="flow-2"))
    finally:
        _observe.install(before)
    assert result.finished["outcome"] == {"type": "success"}
    customs = result.of("CUSTOM")
    timed = sorted(
        (e["value"]["step"], e["value"]["layer"], e["value"]["name"], e["value"]["ms"])
        for e in customs
        if e["name"] == "minagent.middleware"
    )
    assert timed == [
        ("agent", "agent", "_SpendAgent", 1000.0),
        ("model call 1", "chat", "shape", 2.0),
        ("model call 2", "chat", "shape", 2.0),
        ("tool slow_add (c1)", "function", "audit", 1.0),
    ]
    decisions = [
        (e["value"]["outcome"], e["value"]["next"])
        for e in customs
        if e["name"] == "minagent.loop"
    ]
    assert decisions == [
        ("calls", "run batch"),
        ("ran", "call model"),
        ("answered", "finish"),
    ]
    assert {e["name"] for e in customs} == {"minagent.middleware", "minagent.loop"}
    # each report follows the start of the step it names; a decision follows the end
    # of the model call it decides on
    order = [
        e.get("stepName") or json.dumps(e.get("value"))
        for e in result.events
        if e["type"] in ("STEP_STARTED", "STEP_FINISHED", "CUSTOM")
    ]
    kinds = [e["type"] for e in result.events]
    for event in customs:
        at = result.events.index(event)
        if event["name"] == "minagent.middleware":
            started = {"type": "STEP_STARTED", "stepName": event["value"]["step"]}
            assert started in result.events[:at], (event, order)
    first_decision = next(e for e in customs if e["name"] == "minagent.loop")
    at = result.events.index(first_decision)
    assert {"type": "STEP_FINISHED", "stepName": "model call 1"} in result.events[:at]
    assert {"type": "STEP_STARTED", "stepName": "tool slow_add (c1)"} not in (
        result.events[:at]
    )
    assert kinds.index("RUN_FINISHED") > max(
        i for i, k in enumerate(kinds) if k == "CUSTOM"
    )
    # the observer in place saw both runs and all their decisions
    assert notes.runs == 2
    assert notes.steps == decisions * 2
    assert plain.of("CUSTOM") == []
