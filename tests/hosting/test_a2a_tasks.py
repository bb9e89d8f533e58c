"""A2A tasks after they start: get, cancel, resubscribe, non-blocking sends, dropped
streams, shutdown and the bound on kept tasks (spec/hosting.md HS-58, HS-64 ..
HS-68)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

from minagent import Agent
from minagent.hosting import HostingApp
from minagent.testing import ScriptedChatClient, call
from tests.hosting._a2a import (
    Gate,
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
# get, cancel, resubscribe


@both_versions
async def test_cancel_a_running_task(stream: bool, version: str) -> None:
    """HS-65, HS-57, HS-143: tasks/cancel cancels the run (the tool sees the
    cancellation), the task is canceled, the sender's answer ends with that state, the
    session is not saved, and a second cancel is -32002."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "never"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    async with (
        served(app) as base,
        sdk(base, "worker", streaming=stream, version=version) as a2a,
    ):
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


@both_versions
async def test_resubscribe_follows_a_running_task(version: str) -> None:
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
    async with (
        served(app) as base,
        sdk(base, "worker", streaming=True, version=version) as a2a,
    ):
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


async def test_a_running_task_is_never_forgotten() -> None:
    """HS-68: past `max_tasks` a task whose run is going is kept (only tasks without a
    running run are forgotten), so it can still be followed and settles."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "finished", "quick"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    app.a2a.max_tasks = 1
    params = text_message("work")
    params["configuration"] = {"blocking": False}
    running = (await rpc(app, "worker", "message/send", params))["result"]
    await gate.started.wait()
    quick = (await rpc(app, "worker", "message/send", text_message("hi")))["result"]
    assert quick["status"]["state"] == "completed"
    assert list(app.a2a.tasks) == [running["id"], quick["id"]]
    gate.release.set()
    run = app.a2a.tasks[running["id"]].run
    assert run is not None
    await asyncio.wait({run})
    got = (await rpc(app, "worker", "tasks/get", {"id": running["id"]}))["result"]
    assert got["status"]["state"] == "completed"


async def test_a_run_cancelled_before_its_first_step_is_canceled() -> None:
    """HS-65, HS-68: a task cancelled right after a non-blocking send, and one whose
    run is still going at lifespan shutdown, become `canceled`, and no session is
    saved for them."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "never"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    params = text_message("work")
    params["configuration"] = {"blocking": False}
    first = (await rpc(app, "worker", "message/send", params))["result"]
    canceled = await rpc(app, "worker", "tasks/cancel", {"id": first["id"]})
    assert canceled["result"]["status"]["state"] == "canceled"
    assert app.a2a.tasks[first["id"]].run is None
    assert await app.conversations.get("worker", first["contextId"]) is None
    second = (await rpc(app, "worker", "message/send", params))["result"]
    await app.a2a.aclose()
    assert app.a2a.tasks[second["id"]].state == "canceled"
    assert await app.conversations.get("worker", second["contextId"]) is None
    again = await rpc(app, "worker", "tasks/cancel", {"id": second["id"]})
    assert again["error"]["code"] == -32002


async def test_cancelling_a_wait_the_context_went_on_from() -> None:
    """HS-65, HS-70: an input-required task whose conversation went on (another task of
    the context ran and removed the pending record) is still cancelled, and its tool
    never runs."""
    deleted.clear()
    gate = Gate()
    client = ScriptedChatClient(
        [
            [call("delete_file", {"path": "x"}, call_id="c1")],
            [call("slow_work", {})],
            "ok",
        ]
    )
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file, gate.tool])])
    paused = (await rpc(app, "janitor", "message/send", text_message("clean")))[
        "result"
    ]
    assert paused["status"]["state"] == "input-required"
    params = text_message("work", contextId=paused["contextId"])
    params["configuration"] = {"blocking": False}
    other = (await rpc(app, "janitor", "message/send", params))["result"]
    await gate.started.wait()
    gate.release.set()
    run = app.a2a.tasks[other["id"]].run
    assert run is not None
    await asyncio.wait({run})
    session = await app.conversations.get("janitor", paused["contextId"])
    assert session is not None
    assert "minagent.a2a.pending" not in session.state
    canceled = await rpc(app, "janitor", "tasks/cancel", {"id": paused["id"]})
    assert canceled["result"]["status"]["state"] == "canceled"
    assert deleted == []


async def test_return_immediately_is_a_non_blocking_send_in_1_0() -> None:
    """HS-72, HS-58: in 1.0 `configuration.returnImmediately: true` answers at once
    with the task as it is while the run goes on; `false` waits for the settled task.
    A part's metadata is kept in the task's history."""
    gate = Gate()
    client = ScriptedChatClient([[call("slow_work", {})], "finished", "again"])
    app = HostingApp([Agent(client, name="worker", tools=[gate.tool])])
    part = {"text": "work", "metadata": {"note": "kept"}}
    params: dict[str, Any] = {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [part]},
        "configuration": {"returnImmediately": True, "historyLength": 5},
    }
    first = (await rpc(app, "worker", "SendMessage", params))["result"]["task"]
    assert first["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    await gate.started.wait()
    gate.release.set()
    run = app.a2a.tasks[first["id"]].run
    assert run is not None
    await asyncio.wait({run})
    got = (await rpc(app, "worker", "GetTask", {"id": first["id"]}))["result"]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    assert got["history"][0]["parts"] == [part]
    params["configuration"] = {"returnImmediately": False}
    params["message"] = {
        "messageId": "m2",
        "role": "ROLE_USER",
        "parts": [{"text": "more"}],
    }
    second = (await rpc(app, "worker", "SendMessage", params))["result"]["task"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_cancel_that_an_answer_overtakes_cancels_the_answer() -> None:
    """HS-65, HS-70, HS-143: a cancel of an input-required task that waits for the
    conversation while an answer takes the task cancels the answer's run instead: the
    task is `canceled`, the tool never runs, and the stored session is left as it was
    (its record included), so the task takes no further answer here (-32004)."""
    deleted.clear()
    client = ScriptedChatClient([[call("delete_file", {"path": "x"}, call_id="c1")]])
    app = HostingApp([Agent(client, name="janitor", tools=[delete_file])])
    paused = (await rpc(app, "janitor", "message/send", text_message("clean")))[
        "result"
    ]
    task_id, context_id = paused["id"], paused["contextId"]
    answer = text_message("approve", taskId=task_id, contextId=context_id)
    answer["configuration"] = {"blocking": False}
    # the conversation is busy (held here) while the cancel, then the answer, come in
    async with app.conversations.session("janitor", context_id):
        cancel = asyncio.create_task(
            rpc(app, "janitor", "tasks/cancel", {"id": task_id})
        )
        # let the cancel reach the conversation's lock; were it slower, the answer
        # would take the task first and the cancel find it running: the same outcome
        for _ in range(50):
            await asyncio.sleep(0)
        taken = (await rpc(app, "janitor", "message/send", answer))["result"]
        assert taken["status"]["state"] in ("submitted", "working")
    canceled = (await cancel)["result"]
    assert canceled["status"]["state"] == "canceled"
    assert app.a2a.tasks[task_id].run is None
    assert deleted == []
    assert len(client.requests) == 1
    session = await app.conversations.get("janitor", context_id)
    assert session is not None
    assert session.state["minagent.a2a.pending"]["task"] == task_id
    again = await rpc(
        app,
        "janitor",
        "message/send",
        text_message("approve", taskId=task_id, contextId=context_id),
    )
    assert again["error"]["code"] == -32004
