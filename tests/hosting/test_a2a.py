"""A2A against the official `a2a-sdk` client, served on loopback by
minagent.hosting.server (spec/hosting.md HS-50 .. HS-69)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.compat.v0_3 import types as v03
from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_part
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent, tool
from minagent.hosting import HostingApp
from minagent.hosting.server import serve
from minagent.stores import SQLiteSessionStore
from minagent.testing import ScriptedChatClient, call, text_chunks

# ---------------------------------------------------------------------------------------
# helpers


@asynccontextmanager
async def served(app: HostingApp) -> AsyncIterator[str]:
    """The app on loopback; yields its base URL."""
    server = await serve(app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
        for _ in range(10):
            await asyncio.sleep(0)


@asynccontextmanager
async def sdk(base: str, name: str, *, streaming: bool) -> AsyncIterator[Client]:
    """The SDK's client for one agent, found through its card."""
    async with httpx.AsyncClient(timeout=60) as http:
        factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
        client = await factory.create_from_url(f"{base}/a2a/{name}")
        try:
            yield client
        finally:
            await client.close()


def user(
    *parts: Any, task_id: str | None = None, context_id: str | None = None
) -> SendMessageRequest:
    built = [new_text_part(p) if isinstance(p, str) else p for p in parts]
    message = new_message(
        built, task_id=task_id, context_id=context_id, role=Role.ROLE_USER
    )
    return SendMessageRequest(message=message)


async def send(client: Client, request: SendMessageRequest) -> list[dict[str, Any]]:
    """Every event the SDK yields for one message, as dicts."""
    return [MessageToDict(e) async for e in client.send_message(request)]


def task_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e["task"] for e in events if "task" in e)


async def settled(client: Client, events: list[dict[str, Any]]) -> Task:
    """The task the events belong to, as `tasks/get` now answers it."""
    return await client.get_task(GetTaskRequest(id=task_of(events)["id"]))


def answer_text(task: Task) -> str:
    (artifact,) = task.artifacts
    assert artifact.name == "answer"
    return "".join(p.text for p in artifact.parts)


async def asgi(
    app: HostingApp,
    method: str,
    path: str,
    body: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """One request straight through ASGI: status, body, headers."""
    sent: list[dict[str, Any]] = []
    chunks = [body]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b""}

    async def send_(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "scheme": "http",
        "headers": [(b"host", b"example.test:8000"), *(headers or [])],
    }
    await app(scope, receive, send_)
    data = b"".join(m.get("body", b"") for m in sent[1:])
    return int(sent[0]["status"]), data, list(sent[0]["headers"])


async def rpc(
    app: HostingApp,
    name: str,
    method: str,
    params: Any,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> dict[str, Any]:
    """A JSON-RPC request through ASGI; the one JSON response (HTTP 200)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    status, data, _ = await asgi(app, "POST", f"/a2a/{name}", body.encode(), headers)
    assert status == 200
    answer: dict[str, Any] = json.loads(data)
    # every answer is a valid A2A 0.3 JSON-RPC response
    if "error" in answer:
        v03.JSONRPCErrorResponse.model_validate(answer)
    elif answer["result"].get("kind") == "task":
        v03.Task.model_validate(answer["result"])
    return answer


def text_message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "message": {
            "kind": "message",
            "role": "user",
            "messageId": "m1",
            "parts": [{"kind": "text", "text": text}],
            **fields,
        }
    }


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


deleted: list[str] = []


# ---------------------------------------------------------------------------------------
# the card


async def test_the_card_is_discovered_by_the_sdk() -> None:
    """HS-51, HS-52, HS-50: the SDK's resolver finds each agent's card at its
    well-known path; the card names the agent, its endpoint, streaming, protocol 0.3
    and one skill per tool; the host's own well-known path is the first agent's card,
    also under the older name agent.json; the card is a valid 0.3 AgentCard."""

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
                tools=[lookup, delete_file],
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
    (interface,) = card.supported_interfaces
    assert interface.url == f"{base}/a2a/weather"
    assert interface.protocol_binding == "JSONRPC"
    assert interface.protocol_version == "0.3.0"
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


# ---------------------------------------------------------------------------------------
# sending


async def test_send_answers_with_a_completed_task(stream: bool) -> None:
    """HS-55, HS-56, HS-57, HS-58, HS-59: a message starts a task that completes with
    the run's text as its `answer` artifact; the message reaches the model; the history
    holds the message; message/send runs the agent unstreamed, message/stream
    streamed."""
    client = ScriptedChatClient([text_chunks("Hel", "lo")])
    app = HostingApp([Agent(client, name="greeter")])
    async with served(app) as base, sdk(base, "greeter", streaming=stream) as a2a:
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


async def test_a_context_is_one_session(stream: bool) -> None:
    """HS-56, HS-140: a second task in the same context continues the first one's
    history (one session of app.conversations); another context starts afresh."""
    client = ScriptedChatClient(["one", "two", "three"])
    app = HostingApp([Agent(client, name="helper")])
    async with served(app) as base, sdk(base, "helper", streaming=stream) as a2a:
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


# ---------------------------------------------------------------------------------------
# approvals


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
    stream: bool, answer: Any, approved: bool
) -> None:
    """HS-61, HS-62, HS-57: an approval request makes the task input-required with the
    request as a data part; the client's next message on the task answers it (a data
    part or the text approve/reject), the tool runs only when approved, and the task
    completes."""
    deleted.clear()
    client = ScriptedChatClient(
        [[call("delete_file", {"path": "/tmp/x"}, call_id="c1")], "Done."]
    )
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])
    async with served(app) as base, sdk(base, "janitor", streaming=stream) as a2a:
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


async def test_an_approval_answered_on_another_worker(
    stream: bool, tmp_path: Path
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
        sdk(base_one, "janitor", streaming=stream) as first,
        sdk(base_two, "janitor", streaming=stream) as second,
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


# ---------------------------------------------------------------------------------------
# get, cancel, resubscribe


class Gate:
    """A tool that waits until the test lets it finish."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

        @tool
        async def slow_work() -> str:
            """Work slowly."""
            self.started.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            return "worked"

        self.tool = slow_work


async def test_cancel_a_running_task(stream: bool) -> None:
    """HS-65, HS-57, HS-143: tasks/cancel cancels the run (the tool sees the
    cancellation), the task is canceled, the sender's answer ends with that state, the
    session is not saved, and a second cancel is -32002."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "never"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    async with served(app) as base, sdk(base, "worker", streaming=stream) as a2a:
        sender = asyncio.create_task(send(a2a, user("work")))
        await gate.started.wait()
        (task_id,) = app.a2a.tasks
        canceled = await a2a.cancel_task(CancelTaskRequest(id=task_id))
        events = await sender
        with pytest.raises(TaskNotCancelableError):
            await a2a.cancel_task(CancelTaskRequest(id=task_id))
        got = await a2a.get_task(GetTaskRequest(id=task_id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert got.status.state == TaskState.TASK_STATE_CANCELED
    assert gate.cancelled
    last = events[-1]
    state = (
        last["statusUpdate"]["status"]["state"]
        if stream
        else last["task"]["status"]["state"]
    )
    assert state == "TASK_STATE_CANCELED"
    assert await app.conversations.get("worker", got.context_id) is None


async def test_cancel_an_input_required_task() -> None:
    """HS-65: an input-required task can be cancelled; it then takes no answer."""
    client = ScriptedChatClient([[call("delete_file", {"path": "x"}, call_id="c1")]])
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])
    async with served(app) as base, sdk(base, "janitor", streaming=False) as a2a:
        paused = await settled(a2a, await send(a2a, user("clean")))
        canceled = await a2a.cancel_task(CancelTaskRequest(id=paused.id))
        with pytest.raises(UnsupportedOperationError):
            await send(a2a, user("approve", task_id=paused.id))
        with pytest.raises(TaskNotFoundError):
            await a2a.cancel_task(CancelTaskRequest(id="no-such-task"))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED


async def test_get_task_and_its_history_length() -> None:
    """HS-64, HS-59: tasks/get answers the task; historyLength keeps the last that
    many messages; an unknown id is -32001 and so is another agent's task."""
    client = ScriptedChatClient([[call("delete_file", {"path": "x"}, call_id="c1")]])
    app = HostingApp(
        [
            Agent(client, name="janitor", tools=[delete_file]),
            Agent(ScriptedChatClient(), name="other"),
        ]
    )
    async with served(app) as base, sdk(base, "janitor", streaming=False) as a2a:
        paused = await settled(a2a, await send(a2a, user("clean")))
        full = await a2a.get_task(GetTaskRequest(id=paused.id))
        short = await a2a.get_task(GetTaskRequest(id=paused.id, history_length=1))
        with pytest.raises(TaskNotFoundError):
            await a2a.get_task(GetTaskRequest(id="no-such-task"))
    assert [m.role for m in full.history] == [Role.ROLE_USER, Role.ROLE_AGENT]
    assert [m.role for m in short.history] == [Role.ROLE_AGENT]
    none = await rpc(app, "janitor", "tasks/get", {"id": paused.id, "historyLength": 0})
    assert none["result"]["history"] == []
    elsewhere = await rpc(app, "other", "tasks/get", {"id": paused.id})
    assert elsewhere["error"]["code"] == -32001
    missing = await rpc(app, "janitor", "tasks/get", {})
    assert missing["error"]["code"] == -32602


async def test_resubscribe_follows_a_running_task() -> None:
    """HS-66: tasks/resubscribe streams the task as it is, then its run's events until
    it settles; an input-required task is the task alone; a settled task is
    -32004."""
    gate = Gate()
    client = ScriptedChatClient(
        [
            [call("slow_work", {})],
            "finished",
            [call("delete_file", {"path": "x"}, call_id="c1")],
        ]
    )
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool, delete_file])])
    async with served(app) as base, sdk(base, "worker", streaming=True) as a2a:
        sender = asyncio.create_task(send(a2a, user("work")))
        await gate.started.wait()
        (task_id,) = app.a2a.tasks

        following = asyncio.Event()

        async def follow() -> list[dict[str, Any]]:
            request = SubscribeToTaskRequest(id=task_id)
            events = []
            async for event in a2a.subscribe(request):
                # the task comes first, once the subscription is in place
                following.set()
                events.append(MessageToDict(event))
            return events

        follower = asyncio.create_task(follow())
        await following.wait()
        gate.release.set()
        followed, sent = await follower, await sender
        with pytest.raises(UnsupportedOperationError):
            await follow()
        paused = await settled(a2a, await send(a2a, user("clean")))
        request = SubscribeToTaskRequest(id=paused.id)
        alone = [MessageToDict(e) async for e in a2a.subscribe(request)]
    assert followed[0]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert followed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert sent[-1] == followed[-1]
    texts = [
        p["text"]
        for e in followed
        if "artifactUpdate" in e
        for p in e["artifactUpdate"]["artifact"]["parts"]
    ]
    assert "".join(texts) == "finished"
    assert [list(e) for e in alone] == [["task"]]
    assert alone[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_dropped_stream_leaves_the_task_running() -> None:
    """HS-68, HS-66: a client that drops its message/stream does not cancel the task;
    it follows the task again with tasks/resubscribe and sees it complete."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "finished"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/stream"}
    body["params"] = text_message("work")  # type: ignore[assignment]
    async with served(app) as base, httpx.AsyncClient() as http:
        async with http.stream("POST", f"{base}/a2a/worker", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    first = json.loads(line[len("data: ") :])["result"]
                    break
        await gate.started.wait()
        async with sdk(base, "worker", streaming=True) as a2a:
            following = asyncio.Event()

            async def follow() -> list[dict[str, Any]]:
                events = []
                request = SubscribeToTaskRequest(id=first["id"])
                async for event in a2a.subscribe(request):
                    following.set()
                    events.append(MessageToDict(event))
                return events

            follower = asyncio.create_task(follow())
            await following.wait()
            gate.release.set()
            events = await follower
    assert not gate.cancelled
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert app.a2a.tasks[first["id"]].artifacts[0]["parts"][0]["text"] == "finished"


async def test_resubscribe_to_an_unstreamed_run() -> None:
    """HS-66, HS-60, HS-58: following a task whose run does not stream (a
    non-blocking message/send) gives the whole answer as one last artifact chunk."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "finished"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    params = text_message("work")
    params["configuration"] = {"blocking": False}
    async with served(app) as base, sdk(base, "worker", streaming=True) as a2a:
        first = (await rpc(app, "worker", "message/send", params))["result"]
        await gate.started.wait()
        following = asyncio.Event()

        async def follow() -> list[dict[str, Any]]:
            events = []
            async for event in a2a.subscribe(SubscribeToTaskRequest(id=first["id"])):
                following.set()
                events.append(MessageToDict(event))
            return events

        follower = asyncio.create_task(follow())
        await following.wait()
        gate.release.set()
        events = await follower
    assert client.requests[-1].stream is False
    (chunk,) = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert chunk["artifact"]["parts"] == [{"text": "finished"}]
    assert chunk.get("lastChunk") is True
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_non_blocking_send_answers_at_once() -> None:
    """HS-58: with blocking false the answer is the task as it is while the run goes
    on; tasks/get then shows it completed."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "finished"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    params = text_message("work", kind="message")
    params["configuration"] = {"blocking": False}
    first = (await rpc(app, "worker", "message/send", params))["result"]
    assert first["status"]["state"] in ("submitted", "working")
    await gate.started.wait()
    gate.release.set()
    run = app.a2a.tasks[first["id"]].run
    assert run is not None
    await asyncio.wait({run})
    got = (await rpc(app, "worker", "tasks/get", {"id": first["id"]}))["result"]
    assert got["status"]["state"] == "completed"
    assert got["artifacts"][0]["parts"] == [{"kind": "text", "text": "finished"}]


async def test_shutdown_cancels_the_runs_still_going() -> None:
    """HS-68: lifespan shutdown cancels every run still going; its task is
    canceled."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "never"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    params = text_message("work")
    params["configuration"] = {"blocking": False}
    first = (await rpc(app, "worker", "message/send", params))["result"]
    await gate.started.wait()
    incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for kind in ("lifespan.startup", "lifespan.shutdown"):
        incoming.put_nowait({"type": kind})
    sent: list[dict[str, Any]] = []

    async def collect(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "lifespan"}, incoming.get, collect)
    assert gate.cancelled
    assert app.a2a.tasks[first["id"]].state == "canceled"


async def test_the_oldest_idle_tasks_are_forgotten() -> None:
    """HS-68: past `max_tasks` the oldest tasks without a run are forgotten."""
    app = HostingApp([Agent(ScriptedChatClient(["a", "b", "c"]), name="helper")])
    app.a2a.max_tasks = 2
    ids = []
    for text in ("1", "2", "3"):
        ids.append(
            (await rpc(app, "helper", "message/send", text_message(text)))["result"][
                "id"
            ]
        )
    assert list(app.a2a.tasks) == ids[1:]
    gone = await rpc(app, "helper", "tasks/get", {"id": ids[0]})
    assert gone["error"]["code"] == -32001


# ---------------------------------------------------------------------------------------
# errors


async def test_a_failed_run_tells_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    """HS-57, HS-69, HS-143: a run that raises fails its task with a fixed text; the
    exception's text reaches no client, goes to the log, and the session is not
    saved."""
    secret = "sk-SECRET-1234"
    client = ScriptedChatClient([RuntimeError(f"upstream said {secret}")])
    app = HostingApp([Agent(client, name="greeter")])
    with caplog.at_level(logging.ERROR, logger="minagent.hosting"):
        answer = await rpc(app, "greeter", "message/send", text_message("hi"))
    result = answer["result"]
    assert result["status"]["state"] == "failed"
    assert result["status"]["message"]["parts"] == [
        {"kind": "text", "text": "The agent's run failed."}
    ]
    assert secret not in json.dumps(answer)
    assert secret in caplog.text
    assert await app.conversations.get("greeter", result["contextId"]) is None


async def test_an_unexpected_error_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """HS-69: an exception while answering a method is -32603 with no exception text;
    the exception goes to the log."""
    from minagent.hosting.a2a import A2AHost

    def broken(*args: Any) -> Any:
        raise RuntimeError("sk-SECRET-5678")

    monkeypatch.setattr(A2AHost, "_task", broken)
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])
    with caplog.at_level(logging.ERROR, logger="minagent.hosting"):
        answer = await rpc(app, "greeter", "tasks/get", {"id": "t"})
    assert answer["error"] == {"code": -32603, "message": "internal error"}
    assert "sk-SECRET-5678" in caplog.text


async def test_json_rpc_errors() -> None:
    """HS-54, HS-50, HS-67: malformed envelopes, unknown methods and the parts not
    supported each get their JSON-RPC or A2A error code."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])

    async def post(body: bytes, headers: Any = None) -> dict[str, Any]:
        status, data, _ = await asgi(app, "POST", "/a2a/greeter", body, headers)
        assert status == 200
        answer: dict[str, Any] = json.loads(data)
        return answer

    parse = await post(b"{not json")
    assert (parse["id"], parse["error"]["code"]) == (None, -32700)
    assert (await post(b"[" * 10_000))["error"]["code"] == -32700
    for body in (b"[]", b"3", b'{"jsonrpc": "2.0", "method": "tasks/get"}'):
        assert (await post(body))["error"]["code"] == -32600
    envelope = {"jsonrpc": "2.0", "id": "x", "method": "tasks/get", "params": {}}
    wrong = await post(json.dumps({**envelope, "jsonrpc": "1.0"}).encode())
    assert (wrong["id"], wrong["error"]["code"]) == ("x", -32600)
    assert (await post(json.dumps({**envelope, "id": True}).encode()))["error"][
        "code"
    ] == -32600
    assert (await post(json.dumps({**envelope, "params": [1]}).encode()))["error"][
        "code"
    ] == -32602
    codes = {
        "SendMessage": -32601,
        "tasks/list": -32601,
        "tasks/pushNotificationConfig/set": -32003,
        "agent/getAuthenticatedExtendedCard": -32007,
    }
    for method, code in codes.items():
        assert (await rpc(app, "greeter", method, {}))["error"]["code"] == code
    v1 = await rpc(
        app, "greeter", "tasks/get", {"id": "t"}, headers=[(b"a2a-version", b"1.0")]
    )
    assert v1["error"]["code"] == -32009
    assert "1.0" in v1["error"]["message"]
    file_part = text_message("hi")
    file_part["message"]["parts"] = [
        {"kind": "file", "file": {"uri": "https://example.test/a.png"}}
    ]
    data_part = text_message("hi")
    data_part["message"]["parts"] = [{"kind": "data", "data": {"approved": True}}]
    params_codes = [
        (file_part, -32005),
        (data_part, -32005),
        (
            {
                **text_message("hi"),
                "configuration": {"acceptedOutputModes": ["image/png"]},
            },
            -32005,
        ),
        (
            {
                **text_message("hi"),
                "configuration": {"pushNotificationConfig": {"url": "x"}},
            },
            -32003,
        ),
        ({**text_message("hi"), "configuration": {"blocking": "no"}}, -32602),
        ({**text_message("hi"), "configuration": {"historyLength": -1}}, -32602),
        (text_message("hi", role="agent"), -32602),
        (text_message("hi", messageId=""), -32602),
        (text_message("hi", parts=[]), -32602),
        (text_message("hi", parts=[{"kind": "text"}]), -32602),
        (text_message("hi", kind="task"), -32602),
        ({"message": "hi"}, -32602),
    ]
    for params, code in params_codes:
        answer = await rpc(app, "greeter", "message/stream", params)
        assert answer["error"]["code"] == code, params
        assert answer["error"]["message"]
    client = app.agents["greeter"].client  # type: ignore[attr-defined]
    assert client.requests == []
    assert app.a2a.tasks == {}


async def test_http_level_errors() -> None:
    """HS-53: an unknown agent is a 404, another method than POST a 405, a body over
    the cap a 413, each with a JSON-RPC error body."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")], max_body=100)
    cases = [
        ("POST", "/a2a/nobody", b"{}", 404),
        ("GET", "/a2a/nobody/.well-known/agent-card.json", b"", 404),
        ("GET", "/a2a/greeter", b"", 405),
        ("POST", "/a2a/greeter/extra", b"{}", 404),
        ("POST", "/a2a/greeter", b"x" * 500, 413),
    ]
    for method, path, body, status in cases:
        got, data, _ = await asgi(app, method, path, body)
        answer = json.loads(data)
        assert (got, answer["id"], answer["error"]["code"]) == (status, None, -32600)
    status, data, _ = await asgi(app, "GET", "/.well-known/agent-card.json")
    assert status == 200
    assert json.loads(data)["url"] == "http://example.test:8000/a2a/greeter"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["jsonrpc", "id", "method", "params", "message", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150)
@given(body=st.binary(max_size=40) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_body_gets_a_json_rpc_answer(body: bytes) -> None:
    """HS-54: whatever the body, the endpoint answers HTTP 200 with a JSON-RPC error of
    a known code (or a result), and no run starts for a malformed request."""
    client = ScriptedChatClient()
    app = HostingApp([Agent(client, name="greeter")])
    status, data, _ = asyncio.run(asgi(app, "POST", "/a2a/greeter", body))
    answer = json.loads(data)
    assert status == 200
    assert answer["jsonrpc"] == "2.0"
    assert "result" in answer or answer["error"]["code"] in {
        -32700,
        -32600,
        -32601,
        -32602,
        -32001,
        -32003,
        -32004,
        -32005,
        -32007,
    }
    assert client.requests == []


fields = st.sampled_from(
    [
        "kind",
        "role",
        "messageId",
        "parts",
        "text",
        "data",
        "taskId",
        "contextId",
        "message",
        "configuration",
        "blocking",
        "historyLength",
        "id",
        "approved",
    ]
)
params_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from(["", "user", "agent", "text", "data", "file", "message", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(fields, inner, max_size=5)
    ),
    max_leaves=16,
)


def valid_or(value: Any) -> st.SearchStrategy[Any]:
    """Mostly the valid value, so later checks are reached too."""
    return st.one_of(st.just(value), st.just(value), st.just(value), params_values)


parts = st.lists(
    st.fixed_dictionaries({"kind": st.just("text"), "text": st.text(max_size=5)})
    | st.fixed_dictionaries({"kind": st.just("data"), "data": params_values})
    | params_values,
    max_size=3,
)
message_params = st.fixed_dictionaries(
    {
        "message": st.fixed_dictionaries(
            {
                "role": valid_or("user"),
                "messageId": valid_or("m1"),
                "parts": st.one_of(parts, parts, parts, params_values),
            },
            optional={
                "kind": valid_or("message"),
                "contextId": valid_or("c1"),
            },
        )
    },
    optional={"configuration": st.dictionaries(fields, params_values, max_size=3)},
)


task_params = st.fixed_dictionaries(
    {}, optional={"id": valid_or("t1"), "historyLength": params_values}
) | st.dictionaries(fields, params_values, max_size=4)
requests = st.tuples(
    st.sampled_from(["message/send", "message/stream"]), message_params
) | st.tuples(
    st.sampled_from(["tasks/get", "tasks/cancel", "tasks/resubscribe"]), task_params
)


@settings(max_examples=200)
@given(request=requests)
def test_any_params_get_a_protocol_answer(
    request: tuple[str, dict[str, Any]],
) -> None:
    """HS-54, HS-55, HS-64: whatever the params of a method, the answer is a result
    or a JSON-RPC error naming what was wrong — never an internal error."""
    method, params = request
    client = ScriptedChatClient(["fine"])
    app = HostingApp([Agent(client, name="greeter")])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    status, data, _ = asyncio.run(asgi(app, "POST", "/a2a/greeter", body.encode()))
    assert status == 200
    frames = [f for f in data.decode().split("\n\n") if f]
    answers = [json.loads(f.removeprefix("data: ")) for f in frames]
    for answer in answers:
        assert answer["id"] == 1
        if "error" in answer:
            assert answer["error"]["code"] != -32603
            assert answer["error"]["message"]
