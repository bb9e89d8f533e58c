"""A2A against the official `a2a-sdk` client, served on loopback by
minagent.hosting.server: the card, sending and streaming, contexts, approvals through
input-required, on one worker and across two (spec/hosting.md HS-50 .. HS-63, HS-70)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.compat.v0_3 import types as v03
from a2a.helpers.proto_helpers import new_data_part
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Role,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict, ParseDict

from minagent import Agent, tool
from minagent.hosting import HostingApp
from minagent.stores import SQLiteSessionStore
from minagent.testing import ScriptedChatClient, call, text_chunks
from tests.hosting._a2a import (
    answer_text,
    both_versions,
    delete_file,
    deleted,
    rpc,
    sdk,
    send,
    served,
    settled,
    text_message,
    user,
)

# --------------------------------------------------------------------------------------
# the card


async def test_the_card_is_discovered_by_the_sdk() -> None:
    """HS-51, HS-52, HS-50, HS-71: the SDK's resolver finds each agent's card at its
    well-known path; the card names the agent, its endpoint for A2A 1.0 and 0.3,
    streaming, protocol 0.3 in the 0.3 fields, and one skill per tool; the host's own
    well-known path is the first agent's card, also under the older name agent.json;
    the card is a valid 0.3 AgentCard."""

    @tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    app = HostingApp(
        [
            Agent(ScriptedChatClient(), name="first"),
            Agent(
                ScriptedChatClient(),
                name="weather",
                description="Knows the weather.",
                # a declaration given as a mapping has no tool name of its own: no
                # skill
                tools=[lookup, delete_file, {"type": "function", "function": {}}],
            ),
        ]
    )
    async with served(app) as base, httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"{base}/a2a/weather").get_agent_card()
        root = await A2ACardResolver(http, base).get_agent_card()
        old = (await http.get(f"{base}/a2a/weather/.well-known/agent.json")).json()
        raw = (await http.get(f"{base}/a2a/weather/.well-known/agent-card.json")).json()
        posted = await http.post(f"{base}/.well-known/agent-card.json")
    assert card.name == "weather"
    assert card.description == "Knows the weather."
    assert [
        (i.url, i.protocol_binding, i.protocol_version)
        for i in card.supported_interfaces
    ] == [
        (f"{base}/a2a/weather", "JSONRPC", "1.0"),
        (f"{base}/a2a/weather", "JSONRPC", "0.3"),
    ]
    assert card.capabilities.streaming
    assert [(s.id, s.description, list(s.tags)) for s in card.skills] == [
        ("lookup", "The weather in a city.", ["tool"]),
        ("delete_file", "Delete a file.", ["tool", "approval-required"]),
    ]
    assert root.name == "first"
    assert root.description
    assert list(root.skills) == []
    assert old == raw
    v03.AgentCard.model_validate(raw)
    assert raw["protocolVersion"] == "0.3.0"
    assert posted.status_code == 405


# --------------------------------------------------------------------------------------
# sending


@both_versions
async def test_send_answers_with_a_completed_task(stream: bool, version: str) -> None:
    """HS-55, HS-56, HS-57, HS-58, HS-59, HS-71: a message starts a task that
    completes with the run's text as its `answer` artifact; the message reaches the
    model; the history holds the message; sending runs the agent unstreamed, streaming
    streamed; in A2A 1.0 and 0.3."""
    client = ScriptedChatClient([text_chunks("Hel", "lo")])
    app = HostingApp([Agent(client, name="greeter")])
    async with (
        served(app) as base,
        sdk(base, "greeter", streaming=stream, version=version) as a2a,
    ):
        events = await send(a2a, user("hi there"))
        task = await settled(a2a, events)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer_text(task) == "Hello"
    assert task.context_id
    assert [m.parts[0].text for m in task.history] == ["hi there"]
    assert client.requests[0].texts == ["user: hi there"]
    assert client.requests[0].stream is stream
    if not stream:
        # HS-58: one answer, the settled task
        assert [list(e) for e in events] == [["task"]]
        assert events[0]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_stream_events_in_order() -> None:
    """HS-60: message/stream sends the task, `working`, one artifact chunk per delta
    (appended after the first), a closing last chunk, then the settled status; each
    event is valid A2A 0.3."""
    client = ScriptedChatClient([text_chunks("Hel", "lo")])
    app = HostingApp([Agent(client, name="greeter")])
    body = {"jsonrpc": "2.0", "id": "s1", "method": "message/stream"}
    body["params"] = text_message("hi")  # type: ignore[assignment]
    async with served(app) as base, httpx.AsyncClient() as http:
        response = await http.post(f"{base}/a2a/greeter", json=body)
    assert response.headers["content-type"] == "text/event-stream"
    frames = [f for f in response.text.split("\n\n") if f]
    assert all(f.startswith("data: ") for f in frames)
    answers = [json.loads(f[len("data: ") :]) for f in frames]
    assert {(a["jsonrpc"], a["id"]) for a in answers} == {("2.0", "s1")}
    results = [a["result"] for a in answers]
    for result in results:
        v03.SendStreamingMessageSuccessResponse.model_validate(
            {"jsonrpc": "2.0", "id": "s1", "result": result}
        )
    kinds = [
        (r["kind"], r.get("status", {}).get("state"), r.get("append")) for r in results
    ]
    assert kinds == [
        ("task", "submitted", None),
        ("status-update", "working", None),
        ("artifact-update", None, False),
        ("artifact-update", None, True),
        ("artifact-update", None, True),
        ("status-update", "completed", None),
    ]
    assert [r["final"] for r in results if r["kind"] == "status-update"] == [
        False,
        True,
    ]
    chunks = [r["artifact"] for r in results if r["kind"] == "artifact-update"]
    assert len({c["artifactId"] for c in chunks}) == 1
    assert [c["parts"][0]["text"] for c in chunks] == ["Hel", "lo", ""]
    assert [r["lastChunk"] for r in results if r["kind"] == "artifact-update"] == [
        False,
        False,
        True,
    ]


async def test_a2a_1_0_speaks_protojson() -> None:
    """HS-71, HS-72: the 1.0 methods answer in 1.0's ProtoJSON, each answer parsed
    strictly (no unknown field) by the SDK's own protobuf types: SendMessage's task,
    an approval asked and answered with a data part, every SendStreamingMessage event,
    GetTask, CancelTask; a non-user role is -32602 and a url part -32005."""
    client = ScriptedChatClient(
        [
            text_chunks("Hel", "lo"),
            [call("delete_file", {"path": "p"}, call_id="c1")],
            "Done.",
        ]
    )
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])

    def v1_message(*parts: Any, **fields: Any) -> dict[str, Any]:
        return {
            "message": {
                "messageId": "m1",
                "role": "ROLE_USER",
                "parts": list(parts),
                **fields,
            }
        }

    async with served(app) as base, httpx.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage"}
        body["params"] = v1_message({"text": "hi"})
        response = await http.post(
            f"{base}/a2a/janitor", json=body, headers={"A2A-Version": "1.0"}
        )
    frames = [f for f in response.text.split("\n\n") if f]
    events = [json.loads(f.removeprefix("data: "))["result"] for f in frames]
    parsed = [ParseDict(e, StreamResponse()) for e in events]
    assert [p.WhichOneof("payload") for p in parsed] == [
        "task",
        "status_update",
        "artifact_update",
        "artifact_update",
        "artifact_update",
        "status_update",
    ]
    assert parsed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert "final" not in json.dumps(events)
    asked = (await rpc(app, "janitor", "SendMessage", v1_message({"text": "clean"})))[
        "result"
    ]
    task = ParseDict(asked, SendMessageResponse()).task
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert task.status.message.role == Role.ROLE_AGENT
    (request,) = [p for p in task.status.message.parts if p.HasField("data")]
    assert MessageToDict(request.data)["id"] == "c1"
    answer = v1_message({"data": {"approved": True}}, taskId=task.id)
    done = (await rpc(app, "janitor", "SendMessage", answer))["result"]
    assert (
        ParseDict(done, SendMessageResponse()).task.status.state
        == TaskState.TASK_STATE_COMPLETED
    )
    assert deleted[-1] == "p"
    got = (await rpc(app, "janitor", "GetTask", {"id": task.id, "historyLength": 1}))[
        "result"
    ]
    assert len(ParseDict(got, Task()).history) == 1
    refused = await rpc(app, "janitor", "CancelTask", {"id": task.id})
    assert refused["error"]["code"] == -32002
    agent_role = v1_message({"text": "hi"})
    agent_role["message"]["role"] = "ROLE_AGENT"
    assert (await rpc(app, "janitor", "SendMessage", agent_role))["error"][
        "code"
    ] == -32602
    url = v1_message({"url": "https://example.test/a.png"})
    assert (await rpc(app, "janitor", "SendMessage", url))["error"]["code"] == -32005


@both_versions
async def test_a_context_is_one_session(stream: bool, version: str) -> None:
    """HS-56, HS-140: a second task in the same context continues the first one's
    history (one session of app.conversations); another context starts afresh."""
    client = ScriptedChatClient(["one", "two", "three"])
    app = HostingApp([Agent(client, name="helper")])
    async with (
        served(app) as base,
        sdk(base, "helper", streaming=stream, version=version) as a2a,
    ):
        first = await settled(a2a, await send(a2a, user("hello")))
        second = await settled(
            a2a, await send(a2a, user("again", context_id=first.context_id))
        )
        other = await settled(a2a, await send(a2a, user("elsewhere")))
    assert second.context_id == first.context_id
    assert second.id != first.id
    assert answer_text(second) == "two"
    assert client.requests[1].texts == ["user: hello", "assistant: one", "user: again"]
    assert other.context_id != first.context_id
    assert client.requests[2].texts == ["user: elsewhere"]
    assert await app.conversations.get("helper", first.context_id) is not None


# --------------------------------------------------------------------------------------
# approvals


@both_versions
@pytest.mark.parametrize(
    ("answer", "approved"),
    [
        ({"approved": True}, True),
        ({"approved": False}, False),
        ("approve", True),
        (" Reject ", False),
    ],
    ids=["data-yes", "data-no", "text-approve", "text-reject"],
)
async def test_an_approval_round_trip(
    stream: bool, answer: Any, approved: bool, version: str
) -> None:
    """HS-61, HS-62, HS-57, HS-71, HS-72: an approval request makes the task
    input-required with the request as a data part; the client's next message on the
    task answers it (a data part or the text approve/reject), the tool runs only when
    approved, and the task completes; in A2A 1.0 and 0.3."""
    deleted.clear()
    client = ScriptedChatClient(
        [[call("delete_file", {"path": "/tmp/x"}, call_id="c1")], "Done."]
    )
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])
    async with (
        served(app) as base,
        sdk(base, "janitor", streaming=stream, version=version) as a2a,
    ):
        paused = await settled(a2a, await send(a2a, user("clean /tmp/x")))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert paused.status.message.role == Role.ROLE_AGENT
        (part,) = [p for p in paused.status.message.parts if p.HasField("data")]
        assert MessageToDict(part.data) == {
            "type": "function_approval_request",
            "id": "c1",
            "function_call": {
                "call_id": "c1",
                "name": "delete_file",
                "arguments": {"path": "/tmp/x"},
            },
        }
        assert deleted == []
        reply = new_data_part(answer) if isinstance(answer, dict) else answer
        events = await send(
            a2a, user(reply, task_id=paused.id, context_id=paused.context_id)
        )
        done = await settled(a2a, events)
    assert done.id == paused.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer_text(done) == "Done."
    assert deleted == (["/tmp/x"] if approved else [])
    result = client.requests[1].messages[-1].contents[0]
    assert result.type == "function_result"
    assert (result.result == "deleted /tmp/x") is approved
    assert len(done.history) == 3


@both_versions
async def test_an_approval_answered_on_another_worker(
    stream: bool, tmp_path: Path, version: str
) -> None:
    """HS-70, HS-68, LP-34: two workers share a SQLite session store; an approval asked
    on one is answered on the other, whose run resumes it (the tool runs once); the
    first worker then refuses an answer (-32004), a third message for the task on the
    second is -32004 too, and the second answers -32001 for the first's other tasks."""
    deleted.clear()
    path = tmp_path / "sessions.db"
    one = HostingApp(
        [
            Agent(
                ScriptedChatClient(
                    [[call("delete_file", {"path": "/tmp/x"}, call_id="c1")], "hi"]
                ),
                name="janitor",
                tools=[delete_file],
            )
        ],
        store=SQLiteSessionStore(path),
    )
    two_client = ScriptedChatClient(["Done."])
    two = HostingApp(
        [Agent(two_client, name="janitor", tools=[delete_file])],
        store=SQLiteSessionStore(path),
    )
    async with (
        served(one) as base_one,
        served(two) as base_two,
        sdk(base_one, "janitor", streaming=stream, version=version) as first,
        sdk(base_two, "janitor", streaming=stream, version=version) as second,
    ):
        paused = await settled(first, await send(first, user("clean /tmp/x")))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        answer = user("approve", task_id=paused.id, context_id=paused.context_id)
        done = await settled(second, await send(second, answer))
        with pytest.raises(UnsupportedOperationError):
            await send(first, answer)
        with pytest.raises(UnsupportedOperationError):
            await send(second, answer)
        other = await settled(first, await send(first, user("hello")))
        with pytest.raises(TaskNotFoundError):
            await second.get_task(GetTaskRequest(id=other.id))
    assert done.id == paused.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer_text(done) == "Done."
    assert deleted == ["/tmp/x"]
    assert two_client.requests[0].texts[0] == "user: clean /tmp/x"


async def test_a_cancelled_wait_cannot_be_answered_elsewhere(tmp_path: Path) -> None:
    """HS-70, HS-65: cancelling an input-required task removes its record, so no other
    worker can answer it (-32001); a made-up task id in a real context is -32001."""
    deleted.clear()
    path = tmp_path / "sessions.db"
    script = [call("delete_file", {"path": "x"}, call_id="c1")]
    one = HostingApp(
        [Agent(ScriptedChatClient([script]), name="janitor", tools=[delete_file])],
        store=SQLiteSessionStore(path),
    )
    two = HostingApp(
        [Agent(ScriptedChatClient(), name="janitor", tools=[delete_file])],
        store=SQLiteSessionStore(path),
    )
    paused = (await rpc(one, "janitor", "message/send", text_message("clean")))[
        "result"
    ]
    answer = text_message("approve", taskId=paused["id"], contextId=paused["contextId"])
    made_up = text_message("approve", taskId="made-up", contextId=paused["contextId"])
    assert (await rpc(two, "janitor", "message/send", made_up))["error"][
        "code"
    ] == -32001
    canceled = await rpc(one, "janitor", "tasks/cancel", {"id": paused["id"]})
    assert canceled["result"]["status"]["state"] == "canceled"
    refused = await rpc(two, "janitor", "message/send", answer)
    assert refused["error"]["code"] == -32001
    assert deleted == []


async def test_answers_that_are_no_answer_are_refused() -> None:
    """HS-62, HS-63: a message to an input-required task that does not answer every
    request, answers a request the task does not wait for, or has a malformed data
    part is -32602 and the task stays input-required; unknown tasks are -32001, another
    context -32602, a settled task -32004."""
    deleted.clear()
    client = ScriptedChatClient(
        [
            [
                call("delete_file", {"path": "a"}, call_id="c1"),
                call("delete_file", {"path": "b"}, call_id="c2"),
            ],
            "Done.",
        ]
    )
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])
    paused = (await rpc(app, "janitor", "message/send", text_message("clean")))[
        "result"
    ]
    assert paused["status"]["state"] == "input-required"
    task_id, context_id = paused["id"], paused["contextId"]

    def on_task(*parts: Any, **fields: Any) -> dict[str, Any]:
        params = text_message("", taskId=task_id, **fields)
        params["message"]["parts"] = list(parts)
        return params

    bad = [
        on_task({"kind": "text", "text": "sure, go ahead"}),
        on_task({"kind": "data", "data": {"approved": True, "id": "c1"}}),
        on_task({"kind": "data", "data": {"approved": "yes"}}),
        on_task({"kind": "data", "data": {"approved": True, "extra": 1}}),
        on_task({"kind": "data", "data": {"approved": True, "id": "nope"}}),
        on_task({"kind": "text", "text": "approve"}, contextId="another"),
    ]
    codes = []
    for params in bad:
        codes.append(
            (await rpc(app, "janitor", "message/send", params))["error"]["code"]
        )
    assert codes == [-32602] * 6
    got = await rpc(app, "janitor", "tasks/get", {"id": task_id})
    assert got["result"]["status"]["state"] == "input-required"
    assert deleted == []
    assert len(client.requests) == 1
    # HS-62: an answer by id wins over the answer for every request
    answer = on_task(
        {"kind": "data", "data": {"approved": False}},
        {"kind": "data", "data": {"approved": True, "id": "c2"}},
        contextId=context_id,
    )
    done = (await rpc(app, "janitor", "message/send", answer))["result"]
    assert done["status"]["state"] == "completed"
    assert deleted == ["b"]
    again = await rpc(
        app, "janitor", "message/send", on_task({"kind": "text", "text": "approve"})
    )
    assert again["error"]["code"] == -32004
    unknown = await rpc(
        app, "janitor", "message/send", text_message("hi", taskId="no-such-task")
    )
    assert unknown["error"]["code"] == -32001


async def test_a_client_side_call_fails_the_task() -> None:
    """HS-61: a run that ends with a declaration-only call waiting for the caller
    leaves the task failed with a message saying why."""
    from minagent import FunctionTool

    declared = FunctionTool(
        name="ask_user", parameters={"type": "object", "properties": {}}
    )
    client = ScriptedChatClient([[call("ask_user", {})]])
    app = HostingApp([Agent(client, name="asker", tools=[declared])])
    result = (await rpc(app, "asker", "message/send", text_message("hi")))["result"]
    assert result["status"]["state"] == "failed"
    assert "client-side tool call" in result["status"]["message"]["parts"][0]["text"]


async def test_arguments_that_are_not_json_are_shown_as_sent() -> None:
    """HS-61, HS-55: an approval request whose call arguments are not JSON carries the
    model's raw text as `arguments`; a message accepting `text/plain` output is
    served."""
    client = ScriptedChatClient([[call("delete_file", "{not json", call_id="c1")]])
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])
    params = text_message("clean")
    params["configuration"] = {"acceptedOutputModes": ["text/plain"]}
    result = (await rpc(app, "janitor", "message/send", params))["result"]
    assert result["status"]["state"] == "input-required"
    [part] = result["status"]["message"]["parts"]
    assert part["data"]["function_call"] == {
        "call_id": "c1",
        "name": "delete_file",
        "arguments": "{not json",
    }


async def test_a_record_that_is_no_wait_continues_nothing() -> None:
    """HS-70, HS-63: a conversation's pending record that names the task but holds no
    approval request it could be rebuilt from (no requests, an empty list, content that
    does not parse, another kind of content, or an approval request naming no call)
    continues nothing: the message is -32001, no run starts and the record is left as
    it was."""
    client = ScriptedChatClient()
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])
    records: list[dict[str, Any]] = [
        {"task": "t1"},
        {"task": "t1", "requests": []},
        {"task": "t1", "requests": ["not an object"]},
        {"task": "t1", "requests": [{"type": 5}]},
        {"task": "t1", "requests": [{"type": "text", "text": "approve?"}]},
        {"task": "t1", "requests": [{"type": "function_approval_request", "id": "x"}]},
    ]
    for number, record in enumerate(records):
        context = f"c{number}"
        async with app.conversations.session("janitor", context) as session:
            session.state["minagent.a2a.pending"] = record
        answer = text_message("approve", taskId="t1", contextId=context)
        refused = await rpc(app, "janitor", "message/send", answer)
        assert refused["error"]["code"] == -32001, record
        stored = await app.conversations.get("janitor", context)
        assert stored is not None
        assert stored.state["minagent.a2a.pending"] == record
    assert client.requests == []
    assert app.a2a.tasks == {}


async def test_a_task_of_another_agent_is_unknown() -> None:
    """HS-63, HS-64: a message or tasks/get naming a task of another hosted agent is
    -32001; the task is left as it was."""
    app = HostingApp(
        [
            Agent(ScriptedChatClient(["hello"]), name="first"),
            Agent(ScriptedChatClient(), name="second"),
        ]
    )
    done = (await rpc(app, "first", "message/send", text_message("hi")))["result"]
    answer = text_message("more", taskId=done["id"])
    assert (await rpc(app, "second", "message/send", answer))["error"]["code"] == -32001
    got = await rpc(app, "second", "tasks/get", {"id": done["id"]})
    assert got["error"]["code"] == -32001
    assert app.a2a.tasks[done["id"]].state == "completed"


async def test_a_card_asked_without_host_header_names_the_server() -> None:
    """HS-51: without a `Host` header the card's `url` is built from the ASGI
    `server` address and `root_path`; `localhost` when the server gives no address or
    a Unix socket's path."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])

    async def card(scope_fields: dict[str, Any]) -> dict[str, Any]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        path = "/a2a/greeter/.well-known/agent-card.json"
        scope = {"type": "http", "method": "GET", "path": path, **scope_fields}
        await app(scope, receive, send)
        assert sent[0]["status"] == 200
        found: dict[str, Any] = json.loads(sent[1]["body"])
        return found

    served_at = await card(
        {"scheme": "https", "server": ("10.0.0.5", 8443), "root_path": "/api"}
    )
    assert served_at["url"] == "https://10.0.0.5:8443/api/a2a/greeter"
    unix = await card({"server": ("/run/app.sock", None)})
    assert unix["url"] == "http://localhost/a2a/greeter"
    bare = await card({})
    assert bare["url"] == "http://localhost/a2a/greeter"
