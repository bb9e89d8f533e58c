"""A durable agent run in a process of its own, for the crash, approval and worker tests
(spec/dbos.md).

    python -m tests.dbos._app run WID [--stream] [--session] [--approval]  start a run, print its response
    python -m tests.dbos._app recover WID [--stream] [--session] DBOS.launch(), print the recovered response
    python -m tests.dbos._app approve WID CALL_ID yes|no         answer from a process with a DBOSClient only
    python -m tests.dbos._app cancel WID                         cancel from a process with a DBOSClient only
    python -m tests.dbos._app probe WID                          DBOS.launch(), try to take over this executor's
                                                                 pending runs, print what it took and the run's
                                                                 status and application version
    python -m tests.dbos._app worker                             take runs from the queue until killed; when a
                                                                 file "takeover" beside
                                                                 COUNTS names executors,
                                                                 recover their pending
                                                                 runs

The environment says where: ``DBOS_URL`` (the system database), ``COUNTS`` (a file every
model call and tool execution appends a line to), ``CRASH`` (where this process kills
itself with SIGKILL:
``model:N`` inside the N-th model round, ``tool:NAME`` inside that tool, ``between:N``
after the steps before model round N completed and before it starts, ``session`` inside
the session store's ``set`` after it wrote, ``history`` inside the history provider's
save after it wrote), ``STORE`` (a SQLite session store), ``HISTORY`` (the agent's
history provider: ``sqlite:PATH``, or ``redis:URL`` on the key prefix
``minagent-tests:``, logging each save's run key and how many messages it appended),
``EXECUTOR`` (the DBOS executor id, added to every line logged), ``SLOW`` (seconds
``add`` sleeps), ``CONCURRENCY`` (a worker's runs at once), ``CHANGE`` (a changed agent:
``middleware`` adds an agent middleware, ``instructions`` gives it instructions; DU-20).

The model is a function of the request: round N (the number of tool messages it received
so far) asks for the tools of that round, then answers; each answer's message id is new
(random) and logged, so a test sees which process made which call.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSClient
from minagent_dbos import (
    DurableAgent,
    approve,
    cancel,
    idempotency_key,
    recover,
    result,
)

from minagent import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FileHistoryProvider,
    Message,
    SQLiteHistoryProvider,
    SQLiteSessionStore,
    agent_middleware,
    chat_middleware,
    tool,
)

APP = "minagent-tests"
QUEUE = "minagent-runs"


def log(line: str) -> None:
    if os.environ.get("EXECUTOR"):
        line = f"{line} {os.environ['EXECUTOR']}"
    with open(os.environ["COUNTS"], "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def crash_if(point: str) -> None:
    if os.environ.get("CRASH") == point:
        if point.startswith("tool:"):
            # the other call of the batch finishes its step: this one is the step
            # running
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)


def rounds(messages: list[Message]) -> int:
    return sum(1 for m in messages if m.role == "tool")


class RoundsClient(BaseChatClient):
    """Round 0: add and charge (concurrently); round 1: add again; round 2: the
    answer."""

    def answer(self, messages: list[Message]) -> ChatResponse:
        n = rounds(messages)
        message_id = f"m{n}-{uuid.uuid4().hex[:8]}"
        log(f"model {n} {message_id}")
        crash_if(f"model:{n}")
        if n == 0:
            contents = [
                Content.from_function_call(
                    "c-add", "add", json.dumps({"a": 1, "b": 2})
                ),
                Content.from_function_call(
                    "c-charge", "charge", json.dumps({"amount": 5})
                ),
            ]
        elif n == 1:
            contents = [
                Content.from_function_call(
                    "c-add2", "add", json.dumps({"a": 3, "b": 3})
                )
            ]
        elif n == 2 and "needs-approval" in (messages[0].text or ""):
            contents = [
                Content.from_function_call(
                    "c-refund", "refund", json.dumps({"amount": 5})
                )
            ]
        else:
            results = [
                str(c.result)
                for m in messages
                for c in m.contents
                if c.type == "function_result"
            ]
            contents = [Content.from_text(f"done: {', '.join(results)}")]
        return ChatResponse(
            [Message("assistant", contents, message_id=message_id)], model="rounds"
        )

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> Any:
        return self.answer(messages)

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        response = self.answer(messages)
        message = response.messages[0]
        for content in message.contents:
            if content.type == "text" and content.text:
                half = len(content.text) // 2
                for part in (content.text[:half], content.text[half:]):
                    yield ChatResponseUpdate(
                        [Content.from_text(part)],
                        "assistant",
                        message_id=message.message_id,
                    )
            else:
                yield ChatResponseUpdate(
                    [content], "assistant", message_id=message.message_id
                )


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    log(f"tool add {idempotency_key()}")
    crash_if("tool:add")
    await asyncio.sleep(float(os.environ.get("SLOW", "0")))
    return a + b


@tool
def charge(amount: int) -> str:
    """Charge a card (runs in a worker thread)."""
    log(f"tool charge {idempotency_key()}")
    crash_if("tool:charge")
    return f"charged {amount}"


@tool(approval_mode="always_require")
def refund(amount: int) -> str:
    """Refund, after a human approved."""
    log(f"tool refund {idempotency_key()}")
    return f"refunded {amount}"


@chat_middleware
async def between(context: Any, call_next: Any) -> None:
    """A user's chat middleware (outside the step): the "between steps" crash point."""
    crash_if(f"between:{rounds(context.messages)}")
    await call_next()


@agent_middleware
async def audit(context: Any, call_next: Any) -> None:
    """The middleware a changed agent adds (``CHANGE=middleware``, DU-20)."""
    await call_next()


class CrashingStore(SQLiteSessionStore):
    async def set(self, session_id: str, session: Any) -> None:
        await super().set(session_id, session)
        log(f"session set {session_id}")
        crash_if("session")


class CountedSaves:
    """A history provider's saves logged: ``history save APPENDED RUN_KEY`` (DU-13,
    DU-18)."""

    async def save_messages(
        self, session_id: Any, messages: Any, *, state: Any = None, **kwargs: Any
    ) -> None:
        before = len(await self.get_messages(session_id))  # type: ignore[attr-defined]
        await super().save_messages(session_id, messages, state=state, **kwargs)  # type: ignore[misc]
        appended = len(await self.get_messages(session_id)) - before  # type: ignore[attr-defined]
        log(f"history save {appended} {(state or {}).get('run_key')}")
        crash_if("history")


class CountedSQLite(CountedSaves, SQLiteHistoryProvider):
    pass


def history() -> list[Any]:
    """The agent's history provider that ``HISTORY`` names, or none."""
    kind, _, where = os.environ.get("HISTORY", "").partition(":")
    if kind == "sqlite":
        return [CountedSQLite("history", path=where)]
    if kind == "files":

        class CountedFiles(CountedSaves, FileHistoryProvider):
            pass

        return [CountedFiles(where, source_id="history")]
    if kind == "redis":
        from minagent_redis import RedisHistoryProvider

        class CountedRedis(CountedSaves, RedisHistoryProvider):
            pass

        return [CountedRedis("history", url=where, key_prefix="minagent-tests:")]
    return []


def configure() -> DurableAgent:
    config: Any = {
        "name": APP,
        "system_database_url": os.environ["DBOS_URL"],
        "log_level": "ERROR",
    }
    if os.environ.get("EXECUTOR"):
        config["executor_id"] = os.environ["EXECUTOR"]
    DBOS(config=config)
    change = os.environ.get("CHANGE", "")
    agent = Agent(
        RoundsClient(),
        "Answer briefly." if change == "instructions" else None,
        tools=[add, charge, refund],
        middleware=[between, audit] if change == "middleware" else [between],
        name="rounds",
        context_providers=history(),
    )
    store = CrashingStore(os.environ["STORE"]) if os.environ.get("STORE") else None
    durable = DurableAgent(agent, name="rounds", sessions=store)
    log(f"agent {agent.id}")
    return durable


def emit(kind: str, data: Any) -> None:
    print(json.dumps({kind: data}), flush=True)


async def start(
    durable: DurableAgent, wid: str, stream: bool, with_session: bool
) -> None:
    store = durable.sessions
    session = None
    if with_session:
        session = (
            await store.get("s1")
            if store is not None
            else AgentSession(session_id="s1")
        )
        assert session is not None, "the test stores session s1 first"
    text = "sum it needs-approval" if "--approval" in sys.argv else "sum it"
    if stream:
        run = durable.run(text, stream=True, workflow_id=wid, session=session)
        async for update in run:
            emit("update", update.to_dict())
        response = await run.get_final_response()
    else:
        response = await durable.run(text, workflow_id=wid, session=session)
    emit("response", response.to_dict())
    if session is not None:
        emit("session", session.to_dict())


async def finish(
    durable: DurableAgent, wid: str, stream: bool, with_session: bool
) -> None:
    # takes the recorded state (DU-13)
    session = AgentSession(session_id="s1") if with_session else None
    if stream:
        # before launch: the recovered run is seen whole (DU-9)
        attached = durable.attach(wid, session=session)
        DBOS.launch()
        async for update in attached:
            emit("update", update.to_dict())
        response = await attached.get_final_response()
    else:
        DBOS.launch()
        response = await result(wid, session=session)
    emit("response", response.to_dict())
    if session is not None:
        emit("session", session.to_dict())


def ordered(order: Path) -> list[str]:
    """The executors the file ``order`` names (then gone), or none."""
    if not order.exists():
        return []
    dead = order.read_text().split()
    order.unlink()
    return dead


async def take_over(order: Path) -> None:
    """A worker: when the file ``order`` names dead executors, run their pending runs
    here (DU-14)."""
    while True:
        dead = await asyncio.to_thread(ordered, order)
        if dead:
            emit("recovered", await recover(dead))
        await asyncio.sleep(0.2)


async def main(argv: list[str]) -> None:
    command = argv[0]
    if command in ("approve", "cancel"):
        client = DBOSClient(system_database_url=os.environ["DBOS_URL"])
        try:
            if command == "approve":
                await approve(argv[1], {argv[2]: argv[3] == "yes"}, client=client)
            else:
                await cancel(argv[1], client=client)
        finally:
            client.destroy()
        return
    durable = configure()
    try:
        if command == "run":
            DBOS.launch()
            await start(durable, argv[1], "--stream" in argv, "--session" in argv)
        elif command == "recover":
            await finish(durable, argv[1], "--stream" in argv, "--session" in argv)
        elif command == "probe":
            DBOS.launch()
            taken = await recover([DBOS.executor_id])
            status = await DBOS.get_workflow_status_async(argv[1])
            assert status is not None, argv[1]
            emit(
                "probe",
                {
                    "version": DBOS.application_version,
                    "taken": taken,
                    "status": status.status,
                    "run_version": status.app_version,
                },
            )
        elif command == "worker":
            DBOS.launch()
            await DBOS.register_queue_async(
                QUEUE, worker_concurrency=int(os.environ.get("CONCURRENCY", "4"))
            )
            print("ready", flush=True)
            await take_over(Path(os.environ["COUNTS"]).with_name("takeover"))
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
