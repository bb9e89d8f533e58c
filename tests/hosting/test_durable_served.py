"""A durable agent served (spec/hosting.md HS-190 .. HS-195): a
`minagent_dbos.DurableAgent` with ``return_at_pause=True`` behind `HostingApp`, each
worker a real process (tests/hosting/_durable_worker.py) on one DBOS SQLite database
and one SQLite session store, driven by the official `a2a-sdk` client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")
pytest.importorskip("minagent_dbos")
pytest.importorskip("a2a")

from a2a.types.a2a_pb2 import TaskState
from dbos import DBOS, DBOSClient
from google.protobuf.json_format import MessageToDict
from minagent_dbos import DurableAgent, pending_approvals
from minagent_dbos._durable import PAUSED_KEY

from minagent import Agent, AgentSession, Content, Message, tool
from minagent.hosting import HostingApp
from minagent.hosting.conversations import conversation_key
from minagent.stores import SQLiteSessionStore
from minagent.testing import ScriptedChatClient, call

from .._support.modes import run
from ._a2a import answer_text, asgi, sdk, send, settled, user

ROOT = Path(__file__).resolve().parents[2]


class Workers:
    """Worker processes sharing one DBOS database, one session store, one count file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.counts = directory / "counts"
        self.counts.touch()
        self.dbos_url = f"sqlite:///{directory}/dbos.sqlite"
        self.store = directory / "sessions.db"
        self.running: list[subprocess.Popen[str]] = []

    def start(self, executor: str) -> tuple[subprocess.Popen[str], str]:
        env = dict(os.environ)
        env.update(
            DBOS_URL=self.dbos_url,
            STORE=str(self.store),
            COUNTS=str(self.counts),
            EXECUTOR=executor,
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.hosting._durable_worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.running.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise AssertionError(process.stderr.read() if process.stderr else "")
        return process, f"http://127.0.0.1:{json.loads(line)['port']}"

    def close(self) -> None:
        for process in self.running:
            if process.poll() is None:
                assert process.stdin is not None
                process.stdin.close()
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            for pipe in (process.stdout, process.stderr, process.stdin):
                if pipe is not None and not pipe.closed:
                    pipe.close()

    async def answer_sent(self) -> None:
        """Until the system database holds one approval message (DBOS 3.4's own
        ``notifications`` table, read directly: DBOS has no reader for it)."""
        path = self.dbos_url.removeprefix("sqlite:///")
        while True:
            with closing(sqlite3.connect(path)) as db:
                (count,) = db.execute(
                    "SELECT count(*) FROM notifications WHERE topic = ?",
                    ("minagent.approval",),
                ).fetchone()
            if count:
                return
            await asyncio.sleep(0.1)

    def refunds(self) -> list[str]:
        return self.counts.read_text().splitlines()


@contextmanager
def workers(directory: Path) -> Iterator[Workers]:
    running = Workers(directory)
    try:
        yield running
    finally:
        running.close()


@asynccontextmanager
async def dbos_client(url: str) -> AsyncIterator[DBOSClient]:
    client = DBOSClient(system_database_url=url)
    try:
        yield client
    finally:
        client.destroy()


def request_ids(task: Any) -> list[str]:
    """The approval request ids of an input-required task's status message."""
    parts = MessageToDict(task.status.message).get("parts", [])
    data = [p["data"] for p in parts if "data" in p]
    assert [d["type"] for d in data] == ["function_approval_request"] * len(data)
    return [d["id"] for d in data]


async def transcript(store: Path, context_id: str) -> list[tuple[str, list[str]]]:
    """The conversation's stored session: each message's role and content types."""
    key = conversation_key("cashier", context_id)
    session = await SQLiteSessionStore(store).get(key)
    assert session is not None
    assert set(session.state) >= {"in_memory"}
    assert "minagent_dbos.paused" not in session.state
    assert "minagent.a2a.pending" not in session.state
    return [
        (m.role, [c.type for c in m.contents])
        for m in session.state["in_memory"]["messages"]
    ]


async def test_an_approval_asked_on_one_worker_is_answered_on_another(
    stream: bool, tmp_path: Path
) -> None:
    """HS-193, HS-190, HS-191: a request pauses the durable run at an approval
    (input-required) on worker one; the answer goes to worker two, another process;
    the one workflow — still waiting on worker one — takes it and completes, the tool
    runs once, and worker two's task completes with the run's answer."""
    with workers(tmp_path) as running:
        _, base_one = running.start("one")
        _, base_two = running.start("two")
        async with (
            sdk(base_one, "cashier", streaming=stream) as first,
            sdk(base_two, "cashier", streaming=stream) as second,
        ):
            paused = await settled(first, await send(first, user("Refund A-17")))
            assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            (request,) = request_ids(paused)
            assert running.refunds() == []
            answer = user("approve", task_id=paused.id, context_id=paused.context_id)
            done = await settled(second, await send(second, answer))
        assert done.id == paused.id
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_text(done) == "Result: refunded 30 on A-17"
        # the workflow that waited on worker one ran the tool, once
        assert running.refunds() == ["refund A-17 one"]
        async with dbos_client(running.dbos_url) as client:
            runs = await client.list_workflows_async()
        assert [(r.name, r.status) for r in runs] == [
            ("minagent.run:cashier", "SUCCESS")
        ]
        # the conversation holds the run once: the question, the call and its
        # request, the answer, the result and the reply
        assert await transcript(running.store, paused.context_id) == [
            ("user", ["text"]),
            ("assistant", ["function_call", "function_approval_request"]),
            ("user", ["function_approval_response"]),
            ("tool", ["function_result"]),
            ("assistant", ["text"]),
        ]
        assert request


async def test_the_worker_that_waited_is_killed_and_its_run_still_completes(
    stream: bool, tmp_path: Path
) -> None:
    """HS-193, DU-6, DU-11: worker one is killed with SIGKILL while its durable run
    waits for the approval; worker two takes the answer (the task is rebuilt from the
    shared session store, the answer sent to the run) and waits for the run's
    result; worker one, started again under its executor id, recovers the run
    (DBOS hands it to a live worker), which takes the answer: the tool runs once, in
    the one workflow, and worker two's task completes."""
    with workers(tmp_path) as running:
        one, base_one = running.start("one")
        _, base_two = running.start("two")
        async with sdk(base_one, "cashier", streaming=stream) as first:
            paused = await settled(first, await send(first, user("Refund A-17")))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        os.kill(one.pid, signal.SIGKILL)
        one.wait()
        async with sdk(base_two, "cashier", streaming=stream) as second:
            answer = user("approve", task_id=paused.id, context_id=paused.context_id)
            answering = asyncio.ensure_future(send(second, answer))
            try:
                # the answer is sent to the run before anything runs it again
                await asyncio.wait_for(running.answer_sent(), 60)
                assert not answering.done()
                await asyncio.to_thread(running.start, "one")
                done = await settled(second, await answering)
            finally:
                if not answering.done():
                    answering.cancel()
                await asyncio.gather(answering, return_exceptions=True)
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_text(done) == "Result: refunded 30 on A-17"
        # DBOS gives the recovered run to one of the live workers: the tool ran
        # once, in the one workflow
        (refunded,) = running.refunds()
        assert refunded.startswith("refund A-17 ")
        async with dbos_client(running.dbos_url) as client:
            runs = await client.list_workflows_async()
        assert [(r.name, r.status) for r in runs] == [
            ("minagent.run:cashier", "SUCCESS")
        ]


# --------------------------------------------------------------------------------------
# in one process: the plugin's side of a served durable agent


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Path]:
    DBOS(
        config={
            "name": "minagent-served-tests",
            "system_database_url": f"sqlite:///{tmp_path}/dbos.sqlite",
            "log_level": "ERROR",
        }
    )
    try:
        yield tmp_path
    finally:
        DBOS.destroy(destroy_registry=True)


refunded: list[str] = []


@tool(approval_mode="always_require")
def give_back(order: str) -> str:
    """Refund an order (a human approves first)."""
    refunded.append(order)
    return f"refunded {order}"


def cashier_model(messages: list[Message], options: Any) -> Any:
    last = messages[-1]
    if last.role == "user" and last.text == "never mind":
        return "OK."
    results = [
        c.result for m in messages for c in m.contents if c.type == "function_result"
    ]
    if results:
        return f"Result: {results[-1]}"
    return [call("give_back", {"order": "A-17"})]


def cashier(**settings: Any) -> DurableAgent:
    refunded.clear()
    agent = Agent(
        ScriptedChatClient([cashier_model] * 10),
        tools=[give_back],
        name="cashier",
        description="Refunds orders.",
    )
    return DurableAgent(agent, name="cashier", **settings)


async def status_of(workflow_id: str) -> str:
    status = await DBOS.get_workflow_status_async(workflow_id)
    assert status is not None
    return str(status.status)


async def test_a_served_run_returns_at_the_pause_and_its_answer_resumes_it(
    stream: bool, app: Path
) -> None:
    """HS-190, HS-191: with return_at_pause the run returns at the approval pause (the
    request in user_input_requests) while its workflow waits; the session records the
    waiting run; the session's next run, the answer alone, resumes that workflow,
    which runs the tool once and returns the durable run's whole response; the
    session then holds the run's state, the record gone."""
    durable = cashier(return_at_pause=True)
    DBOS.launch()
    session = AgentSession()
    paused = await run(durable, "Refund A-17", stream=stream, session=session)
    (request,) = paused.user_input_requests
    assert request.type == "function_approval_request"
    record = session.state[PAUSED_KEY]
    workflow_id = record["workflow_id"]
    assert record == {"workflow_id": workflow_id, "requests": [request.id]}
    assert await status_of(workflow_id) == "PENDING"
    assert [r.id for r in await pending_approvals(workflow_id)] == [request.id]
    assert refunded == []
    answer = Message("user", [request.to_function_approval_response(True)])
    done = await run(durable, [answer], stream=stream, session=session)
    assert done.text == "Result: refunded A-17"
    assert done.user_input_requests == []
    assert refunded == ["A-17"]
    assert await status_of(workflow_id) == "SUCCESS"
    assert PAUSED_KEY not in session.state
    assert len(await DBOS.list_workflows_async()) == 1


async def test_a_served_run_refuses_what_a_waiting_run_cannot_take(app: Path) -> None:
    """HS-190, HS-191: return_at_pause needs a session; an answer with other content,
    an answer naming a request the run does not wait for, or an answer with options
    is a ValueError, and the run goes on waiting; the option leaves the version
    (DU-20) as it is."""
    durable = cashier(return_at_pause=True)
    DBOS.launch()
    with pytest.raises(ValueError, match="session"):
        durable.run("Refund A-17")
    session = AgentSession()
    paused = await durable.run("Refund A-17", session=session)
    (request,) = paused.user_input_requests
    workflow_id = session.state[PAUSED_KEY]["workflow_id"]
    yes = request.to_function_approval_response(True)
    stray = Content.from_function_approval_response(
        True, "other", request.function_call
    )
    refused: list[tuple[list[Message], dict[str, Any], str]] = [
        ([Message("user", [yes, "and more"])], {}, "alone"),
        ([Message("user", [stray])], {}, "waits for the requests"),
        ([Message("user", [yes])], {"options": {"temperature": 0.5}}, "options"),
    ]
    for messages, kwargs, why in refused:
        with pytest.raises(ValueError, match=why):
            durable.run(messages, session=session, **kwargs)
    assert [r.id for r in await pending_approvals(workflow_id)] == [request.id]
    assert await status_of(workflow_id) == "PENDING"
    assert refunded == []
    agent = durable.agent
    assert DurableAgent(agent, name="other", return_at_pause=True).version == (
        DurableAgent(agent, name="other").version
    )
    await durable.run([Message("user", [yes])], session=session)
    assert refunded == ["A-17"]


async def test_a_new_message_on_a_waiting_session_cancels_the_waiting_run(
    stream: bool, app: Path
) -> None:
    """HS-192, DU-12: a run on a session whose durable run waits, with messages that
    are not its answer, cancels the waiting run and starts a new one from the
    session (the pause's messages in its history, the record gone)."""
    durable = cashier(return_at_pause=True)
    DBOS.launch()
    session = AgentSession()
    await run(durable, "Refund A-17", stream=stream, session=session)
    waiting = session.state[PAUSED_KEY]["workflow_id"]
    done = await run(durable, "never mind", stream=stream, session=session)
    # the cancelled workflow ran in this process: its own task, woken by the
    # cancel (DU-12), ends by itself
    others = asyncio.all_tasks() - {asyncio.current_task()}
    await asyncio.wait_for(asyncio.gather(*others, return_exceptions=True), 30)
    assert done.text == "OK."
    assert await status_of(waiting) == "CANCELLED"
    assert PAUSED_KEY not in session.state
    assert refunded == []
    # the history a plain agent keeps for the same two runs
    plain = Agent(ScriptedChatClient([cashier_model] * 10), tools=[give_back])
    plain_session = AgentSession()
    await plain.run("Refund A-17", session=plain_session)
    await plain.run("never mind", session=plain_session)

    def shape(kept: AgentSession) -> list[tuple[str, list[str]]]:
        return [
            (m.role, [c.type for c in m.contents])
            for m in kept.state["in_memory"]["messages"]
        ]

    assert shape(session) == shape(plain_session)
    assert shape(session)[:3] == [
        ("user", ["text"]),
        ("assistant", ["function_call", "function_approval_request"]),
        ("user", ["text"]),
    ]
    results = [
        c.result
        for m in session.state["in_memory"]["messages"]
        for c in m.contents
        if c.type == "function_result"
    ]
    assert results == ["Error: Tool call invocation was rejected by user."]
    assert refunded == []
    runs = await DBOS.list_workflows_async()
    assert sorted(r.status for r in runs) == ["CANCELLED", "SUCCESS"]


async def test_the_card_of_a_durable_agent_is_its_agents() -> None:
    """HS-194, HS-51, HS-52: a served durable agent's card has the wrapped agent's
    description and its tools as skills."""
    DBOS(
        config={
            "name": "minagent-card",
            "system_database_url": "sqlite:///:memory:",
            "log_level": "ERROR",
        }
    )
    try:
        # DurableAgent is not a SupportsAgentRun to mypy (no id, no threads)
        host = HostingApp([cashier(return_at_pause=True)])  # type: ignore[list-item]
        status, body, _ = await asgi(
            host, "GET", "/a2a/cashier/.well-known/agent-card.json"
        )
    finally:
        DBOS.destroy(destroy_registry=True)
    assert status == 200
    card = json.loads(body)
    assert card["description"] == "Refunds orders."
    assert [(s["id"], s["tags"]) for s in card["skills"]] == [
        ("give_back", ["tool", "approval-required"])
    ]


async def test_the_protocols_a_durable_agent_does_not_serve(app: Path) -> None:
    """HS-195: Chat Completions and the Responses API pass tools=, AG-UI run
    middleware, which a durable run refuses (DU-2): a 500 in OpenAI's shape, a
    RUN_ERROR event; no durable run starts."""
    durable = cashier(return_at_pause=True)
    DBOS.launch()
    host = HostingApp([durable])  # type: ignore[list-item]
    user_says = [{"role": "user", "content": "Refund A-17"}]
    chat = {"model": "cashier", "messages": user_says}
    status, body, _ = await asgi(
        host, "POST", "/v1/chat/completions", json.dumps(chat).encode()
    )
    assert (status, json.loads(body)["error"]["type"]) == (500, "server_error")
    responses = {"model": "cashier", "input": "Refund A-17"}
    status, body, _ = await asgi(
        host, "POST", "/v1/responses", json.dumps(responses).encode()
    )
    assert (status, json.loads(body)["error"]["type"]) == (500, "server_error")
    agui = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "Refund A-17"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    status, body, _ = await asgi(
        host, "POST", "/agui/cashier", json.dumps(agui).encode()
    )
    events = [
        json.loads(line[len("data: ") :])
        for line in body.decode().splitlines()
        if line.startswith("data: ")
    ]
    assert status == 200
    assert [e["type"] for e in events][-1] == "RUN_ERROR"
    assert await DBOS.list_workflows_async() == []
    assert refunded == []


def two_refunds_model(messages: list[Message], options: Any) -> Any:
    results = [
        c.result for m in messages for c in m.contents if c.type == "function_result"
    ]
    if len(results) == 2:
        return f"Done: {', '.join(str(r) for r in results)}"
    return [call("give_back", {"order": ["A-17", "B-9"][len(results)]})]


async def test_a_run_with_two_pauses_returns_at_each(stream: bool, app: Path) -> None:
    """HS-191: an answer's run returns at the workflow's next pause, whose requests are
    new (the session's record names them), and the answer to that one at the result;
    one workflow, each tool call run once."""
    refunded.clear()
    agent = Agent(
        ScriptedChatClient([two_refunds_model] * 10), tools=[give_back], name="twice"
    )
    durable = DurableAgent(agent, name="twice", return_at_pause=True)
    DBOS.launch()
    session = AgentSession()
    first = await run(durable, "Refund both", stream=stream, session=session)
    (one,) = first.user_input_requests
    workflow_id = session.state[PAUSED_KEY]["workflow_id"]
    answer = Message("user", [one.to_function_approval_response(True)])
    second = await run(durable, [answer], stream=stream, session=session)
    (two,) = second.user_input_requests
    assert two.id != one.id
    assert two.function_call is not None
    assert two.function_call.parse_arguments() == {"order": "B-9"}
    assert session.state[PAUSED_KEY] == {
        "workflow_id": workflow_id,
        "requests": [two.id],
    }
    assert refunded == ["A-17"]
    answer = Message("user", [two.to_function_approval_response(True)])
    done = await run(durable, [answer], stream=stream, session=session)
    assert done.text == "Done: refunded A-17, refunded B-9"
    assert refunded == ["A-17", "B-9"]
    assert PAUSED_KEY not in session.state
    assert [r.workflow_id for r in await DBOS.list_workflows_async()] == [workflow_id]
