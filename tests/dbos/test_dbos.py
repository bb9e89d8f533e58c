"""Durable runs in one process, on DBOS with a SQLite system database (spec/dbos.md).

Replays are made in-process with ``DBOS.fork_workflow``: a fork re-executes the workflow
with the recorded results of the steps before ``start_step``, exactly as a recovery
after a crash does (the tests with real crashes are in test_dbos_crash.py).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

dbos = pytest.importorskip("dbos")
minagent_dbos = pytest.importorskip("minagent_dbos")

from dbos import DBOS  # noqa: E402
from minagent_dbos import (  # noqa: E402
    MODEL_STEP,
    TOOL_STEP,
    DurableAgent,
    approve,
    cancel,
    idempotency_key,
    pending_approvals,
    recorded,
    result,
)

from minagent import (  # noqa: E402
    Agent,
    AgentSession,
    ChatResponse,
    Content,
    ContextProvider,
    FunctionInvocationContext,
    InMemoryHistoryProvider,
    Message,
    SessionStore,
    SQLiteHistoryProvider,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent.testing import ScriptedChatClient, call, reply, text_chunks  # noqa: E402
from tests._support.modes import run  # noqa: E402


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Path]:
    DBOS(
        config={
            "name": "minagent-tests",
            "system_database_url": f"sqlite:///{tmp_path}/dbos.sqlite",
            "log_level": "ERROR",
        }
    )
    try:
        yield tmp_path
    finally:
        DBOS.destroy(destroy_registry=True)


async def steps_of(workflow_id: str) -> list[str]:
    return [
        s["function_name"] for s in await DBOS.list_workflow_steps_async(workflow_id)
    ]


executed: list[str] = []


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    executed.append(f"add {a} {b}")
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text (a sync tool: it runs in a worker thread)."""
    executed.append(f"shout {text}")
    return text.upper()


@tool
def fail(reason: str) -> str:
    """Always fails."""
    executed.append(f"fail {reason}")
    raise ValueError(f"cannot: {reason}")


@tool(approval_mode="always_require")
def refund(amount: int) -> str:
    """Refund money (needs a human's approval)."""
    executed.append(f"refund {amount}")
    return f"refunded {amount}"


def two_rounds() -> list[Any]:
    return [
        [
            call("add", {"a": 1, "b": 2}, call_id="c1"),
            call("shout", {"text": "hi"}, call_id="c2"),
        ],
        [call("add", {"a": 3, "b": 4}, call_id="c3")],
        "all done",
    ]


class TestWorkflow:
    """DU-1, DU-2, DU-3, DU-4: a run is a workflow; every model call and tool call is
    one step."""

    async def test_steps_and_result(self, app: Path, stream: bool) -> None:
        client = ScriptedChatClient(two_rounds())
        agent = Agent(client, tools=[add, shout], name="bot")
        durable = DurableAgent(agent, name="bot")
        DBOS.launch()
        executed.clear()
        response = await run(durable, "go", stream=stream, workflow_id="w1")
        assert response.text == "all done"
        assert [m.role for m in response.messages] == [
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
        ]
        assert response.agent_id == agent.id
        assert sorted(executed) == ["add 1 2", "add 3 4", "shout hi"]
        tool_add, tool_shout = f"{TOOL_STEP}:add", f"{TOOL_STEP}:shout"
        assert await steps_of("w1") == [
            MODEL_STEP,
            tool_add,
            tool_shout,
            MODEL_STEP,
            tool_add,
            MODEL_STEP,
        ]
        # DU-2: the recorded result, restored with from_dict
        stored = await result("w1")
        assert stored.to_dict() == response.to_dict()

    async def test_a_finished_workflow_id_gives_its_recorded_response(
        self, app: Path, stream: bool
    ) -> None:
        client = ScriptedChatClient(["only once"])
        durable = DurableAgent(Agent(client), name="once")
        DBOS.launch()
        first = await run(durable, "hi", stream=stream, workflow_id="same")
        again = await run(durable, "something else", stream=stream, workflow_id="same")
        assert again.to_dict() == first.to_dict()
        assert len(client.requests) == 1

    async def test_lazy_and_refused_arguments(self, app: Path) -> None:
        client = ScriptedChatClient(["x"])
        durable = DurableAgent(Agent(client), name="lazy")
        DBOS.launch()
        stream = durable.run("hi", stream=True, workflow_id="never")
        # nothing before the first use
        assert await DBOS.get_workflow_status_async("never") is None
        await stream.aclose()
        for bad in (
            {"tools": [add]},
            {"middleware": []},
            {"inbox": None},
            {"thread": None},
        ):
            with pytest.raises(TypeError, match="recorded"):
                durable.run("hi", **bad)
        with pytest.raises(TypeError, match="unexpected keyword"):
            durable.run("hi", colour="red")
        with pytest.raises(TypeError, match="options\\['tools'\\]"):
            durable.run("hi", options={"tools": [add]})
        with pytest.raises(TypeError, match="AgentSession"):
            durable.run("hi", session={"id": "x"})  # type: ignore[arg-type]
        assert client.requests == []

    def test_bad_construction(self, app: Path) -> None:
        with pytest.raises(ValueError, match="non-empty name"):
            DurableAgent(Agent(ScriptedChatClient([])), name="")
        with pytest.raises(TypeError, match="run method"):
            DurableAgent(object(), name="nothing")
        with pytest.raises(ValueError, match="approval_timeout"):
            DurableAgent(Agent(ScriptedChatClient([])), name="t", approval_timeout=0)


class TestReplay:
    """DU-4, DU-8: a replay (a fork from a later step) returns recorded results without
    running the model or the tools, and raises a recorded tool exception as the tool's
    (LP-6)."""

    async def test_fork_replays_recorded_steps(self, app: Path, stream: bool) -> None:
        def answer(messages: list[Message], _options: dict[str, Any]) -> ChatResponse:
            results = [
                str(c.result)
                for m in messages
                for c in m.contents
                if c.type == "function_result"
            ]
            return reply(f"results: {results}")

        client = ScriptedChatClient(
            [
                [
                    call("fail", {"reason": "x"}, call_id="f1"),
                    call("add", {"a": 2, "b": 2}, call_id="a1"),
                ],
                answer,
                answer,
            ]
        )
        picks: list[float] = []

        @chat_middleware
        async def choose(context: Any, call_next: Any) -> None:
            # a "random" choice, recorded
            picks.append(await recorded(lambda: float(len(picks) + 100)))
            await call_next()

        durable = DurableAgent(
            Agent(client, tools=[fail, add], middleware=[choose]), name="replay"
        )
        DBOS.launch()
        executed.clear()
        original = await run(durable, "go", stream=stream, workflow_id="orig")
        names = await steps_of("orig")
        assert names.count("minagent.recorded") == 2
        # its 1-based step id
        second_choice = len(names) - names[::-1].index("minagent.recorded")
        handle = await DBOS.fork_workflow_async("orig", second_choice)
        forked = await handle.get_result()
        # the tools ran once, in the original only
        assert sorted(executed) == ["add 2 2", "fail x"]
        # the forked run made only its last model call again
        assert len(client.requests) == 3
        assert forked["response"]["messages"] == original.to_dict()["messages"]
        failure = original.messages[1].contents[0]
        assert failure.exception is not None
        assert "Function failed" in str(failure.result)
        assert picks == [
            100.0,
            101.0,
            100.0,
            103.0,
        ]  # the fork replayed the first choice (not 102), made the second anew


DURABLE: DurableAgent


@pytest.fixture
def launched(app: Path) -> Iterator[Path]:
    global DURABLE
    DURABLE = DurableAgent(Agent(ScriptedChatClient([])), name="same")
    DBOS.launch()
    return app


class TestSameBehaviour:
    """DU-5: a durable run and a plain run of one scripted conversation send identical
    requests, run the middleware in the same order and produce identical transcripts, in
    both modes."""

    @settings(
        max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        script=st.lists(
            st.lists(
                st.tuples(
                    st.sampled_from(["add", "shout", "fail"]), st.integers(0, 50)
                ),
                min_size=1,
                max_size=3,
            ),
            max_size=3,
        ),
        final=st.lists(
            st.text("abc xyz", min_size=1, max_size=6), min_size=1, max_size=3
        ),
        stream=st.booleans(),
    )
    def test_durable_equals_plain(
        self,
        launched: Path,
        script: list[list[tuple[str, int]]],
        final: list[str],
        stream: bool,
    ) -> None:
        asyncio.run(self._compare(script, final, stream))

    async def _compare(
        self, script: list[list[tuple[str, int]]], final: list[str], stream: bool
    ) -> None:
        steps: list[Any] = []
        for r, batch in enumerate(script):
            contents = []
            for i, (name, n) in enumerate(batch):
                args = (
                    {"a": n, "b": 1}
                    if name == "add"
                    else {"text": f"t{n}"}
                    if name == "shout"
                    else {"reason": str(n)}
                )
                contents.append(call(name, args, call_id=f"r{r}c{i}"))
            steps.append(contents)
        steps.append(text_chunks(*final) if stream else "".join(final))

        def build(log: list[str]) -> tuple[Agent, ScriptedChatClient]:
            @chat_middleware
            async def outer_chat(context: Any, call_next: Any) -> None:
                log.append("agent chat before")
                await call_next()
                log.append("agent chat after")

            @chat_middleware
            async def client_chat(context: Any, call_next: Any) -> None:
                log.append("client chat")
                await call_next()

            @function_middleware
            async def on_tool(
                context: FunctionInvocationContext, call_next: Any
            ) -> None:
                log.append(f"tool {context.function.name} before")
                await call_next()
                log.append(f"tool {context.function.name} after")

            client = ScriptedChatClient(list(steps), middleware=[client_chat])
            return Agent(
                client,
                tools=[add, shout, fail],
                middleware=[outer_chat, on_tool],
                name="same",
            ), client

        plain_log: list[str] = []
        plain_agent, plain_client = build(plain_log)
        plain = await run(
            plain_agent, "start", stream=stream, session=AgentSession(session_id="s")
        )
        durable_log: list[str] = []
        agent, client = build(durable_log)
        DURABLE.agent = agent
        durable = await run(
            DURABLE, "start", stream=stream, session=AgentSession(session_id="s")
        )

        def requests(c: ScriptedChatClient) -> list[Any]:
            out = []
            for r in c.requests:
                options = {k: v for k, v in r.options.items() if k != "tools"}
                names = [t.name for t in r.options.get("tools", [])]
                out.append(
                    ([m.to_dict() for m in r.messages], options, names, r.stream)
                )
            return out

        assert requests(client) == requests(plain_client)
        assert [m.to_dict() for m in durable.messages] == [
            m.to_dict() for m in plain.messages
        ]
        # concurrent tools interleave freely
        assert sorted(durable_log) == sorted(plain_log)
        assert [e for e in durable_log if "chat" in e] == [
            e for e in plain_log if "chat" in e
        ]


class TestIdempotencyKey:
    """DU-7: every tool call has the key "{workflow_id}:{call_id}", in a worker thread
    too."""

    async def test_key(self, app: Path, stream: bool) -> None:
        seen: list[Any] = []

        @tool
        def sync_tool(ctx: FunctionInvocationContext) -> str:
            """Read the key in a worker thread."""
            seen.append((idempotency_key(), ctx.kwargs["idempotency_key"]))
            return "ok"

        @tool
        async def async_tool() -> str:
            """Read the key on the loop."""
            seen.append((idempotency_key(),))
            return "ok"

        client = ScriptedChatClient(
            [
                [
                    call("sync_tool", {}, call_id="k1"),
                    call("async_tool", {}, call_id="k2"),
                ],
                "end",
            ]
        )
        durable = DurableAgent(
            Agent(client, tools=[sync_tool, async_tool]), name="keys"
        )
        DBOS.launch()
        await run(durable, "go", stream=stream, workflow_id="wk")
        assert sorted(seen) == [("wk:k1", "wk:k1"), ("wk:k2",)]
        with pytest.raises(LookupError, match="durable run"):
            idempotency_key()


class TestStreaming:
    """DU-9: updates reach the caller live, while the run is still running."""

    async def test_updates_are_live(self, app: Path) -> None:
        seen_call = asyncio.Event()

        @tool
        async def wait_for_caller() -> str:
            """Finishes only once the caller saw the call."""
            await asyncio.wait_for(seen_call.wait(), 10)
            return "seen"

        client = ScriptedChatClient(
            [[call("wait_for_caller", {}, call_id="w")], text_chunks("a", "b", "c")]
        )
        durable = DurableAgent(Agent(client, tools=[wait_for_caller]), name="live")
        DBOS.launch()
        stream = durable.run("go", stream=True, workflow_id="live1")
        texts = []
        async for update in stream:
            if any(c.type == "function_call" for c in update.contents):
                seen_call.set()  # the tool is still waiting: this update came live
            texts.append(update.text)
        final = await stream.get_final_response()
        assert "".join(texts) == "abc"
        assert final.text == "abc"
        assert isinstance(final.messages[-1].contents[0], Content)


class TestApprovals:
    """DU-11: a pause for approval waits durably; the answer resumes the run."""

    async def test_approve_and_reject(self, app: Path, stream: bool) -> None:
        client = ScriptedChatClient(
            [
                [
                    call("refund", {"amount": 5}, call_id="r1"),
                    call("refund", {"amount": 7}, call_id="r2"),
                ],
                "finished",
            ]
        )
        durable = DurableAgent(Agent(client, tools=[refund]), name="approvals")
        DBOS.launch()
        executed.clear()
        task = asyncio.ensure_future(
            run(durable, "refund both", stream=stream, workflow_id="ap")
        )
        requests = await pending_approvals("ap", wait_seconds=20)
        assert [r.id for r in requests] == ["r1", "r2"]
        assert executed == []
        await approve("ap", {"r1": True})  # r2 not named: rejected
        response = await asyncio.wait_for(task, 30)
        assert executed == ["refund 5"]
        results = {
            c.call_id: c.result
            for m in response.messages
            for c in m.contents
            if c.type == "function_result"
        }
        assert results == {
            "r1": "refunded 5",
            "r2": "Error: Tool call invocation was rejected by user.",
        }
        assert response.text.endswith("finished")
        assert await pending_approvals("ap", wait_seconds=1) == []

    async def test_timeout_rejects_everything(self, app: Path) -> None:
        client = ScriptedChatClient(
            [[call("refund", {"amount": 5}, call_id="r1")], "gave up"]
        )
        durable = DurableAgent(
            Agent(client, tools=[refund]), name="timeout", approval_timeout=0.5
        )
        DBOS.launch()
        executed.clear()
        response = await durable.run("refund", workflow_id="to")
        assert executed == []
        assert response.text.endswith("gave up")

    async def test_without_waiting_the_pause_returns(self, app: Path) -> None:
        client = ScriptedChatClient([[call("refund", {"amount": 5}, call_id="r1")]])
        durable = DurableAgent(
            Agent(client, tools=[refund]), name="nowait", wait_for_approvals=False
        )
        DBOS.launch()
        response = await durable.run("refund", workflow_id="nw")
        assert [c.type for c in response.user_input_requests] == [
            "function_approval_request"
        ]

    async def test_cancel_while_waiting(self, app: Path) -> None:
        """DU-12: a cancelled run stops at once, and its session is unchanged."""
        client = ScriptedChatClient(
            [[call("refund", {"amount": 5}, call_id="r1")], "never"]
        )
        durable = DurableAgent(Agent(client, tools=[refund]), name="cancelled")
        DBOS.launch()
        session = AgentSession(session_id="c")
        task = asyncio.ensure_future(
            durable.run("refund", workflow_id="cw", session=session)
        )
        assert len(await pending_approvals("cw", wait_seconds=20)) == 1
        await cancel("cw")
        with pytest.raises(dbos.error.DBOSException, match="cancelled"):
            await asyncio.wait_for(task, 15)
        assert session.state == {}
        assert len(client.requests) == 1


class TestSessions:
    """DU-13: the caller's session takes the run's state once, after the run; a failed
    run changes nothing; with sessions= the last step stores the session whole."""

    async def test_session_history(self, app: Path, stream: bool) -> None:
        client = ScriptedChatClient(["first answer", "second answer"])
        store = SessionStore()
        durable = DurableAgent(Agent(client), name="sessions", sessions=store)
        DBOS.launch()
        session = AgentSession(session_id="s1")
        await run(durable, "one", stream=stream, session=session)
        await run(durable, "two", stream=stream, session=session)
        texts = [m.text for m in session.state["in_memory"]["messages"]]
        assert texts == ["one", "first answer", "two", "second answer"]
        assert [m.text for m in client.requests[1].messages] == [
            "one",
            "first answer",
            "two",
        ]
        kept = await store.get("s1")
        assert kept is not None
        assert kept.to_dict() == session.to_dict()

    async def test_failed_run_changes_nothing(self, app: Path, stream: bool) -> None:
        client = ScriptedChatClient([RuntimeError("model down")])
        durable = DurableAgent(Agent(client), name="failing")
        DBOS.launch()
        session = AgentSession(session_id="s2")
        with pytest.raises(RuntimeError, match="model down"):
            await run(durable, "one", stream=stream, session=session)
        assert session.state == {}

    async def test_providers_get_a_recorded_session(self, app: Path) -> None:
        """DU-8: a run without a session on an agent with providers: the session id is a
        step."""
        ids: list[str] = []

        class Seen(ContextProvider):
            async def before_run(
                self, *, agent: Any, session: AgentSession, context: Any, state: Any
            ) -> None:
                ids.append(session.session_id)

        client = ScriptedChatClient(["a"])
        durable = DurableAgent(
            Agent(client, context_providers=[Seen("seen")]), name="providers"
        )
        DBOS.launch()
        await durable.run("x", workflow_id="pv")
        assert "minagent.recorded" in await steps_of("pv")
        handle = await DBOS.fork_workflow_async("pv", 2)
        client.steps.append("b")
        await handle.get_result()
        assert len(ids) == 2
        assert ids[0] == ids[1]


class TestRunKeys:
    """DU-18: each agent run of a durable run names itself to the history providers."""

    async def test_each_agent_run_names_itself(self, app: Path, stream: bool) -> None:
        """DU-18, DU-11, SE-40: a run paused for an approval makes two agent runs, keyed
        "{wid}:0" and "{wid}:1", which each history provider sees in its load and its
        save; the key is taken out after each (an entry made for it removed, a
        provider's own entry kept without it), so the caller's session and sessions=
        never hold it; the store holds both parts once."""
        seen: list[tuple[str, str, Any]] = []

        class Recording(SQLiteHistoryProvider):
            async def get_messages(
                self, session_id: Any, *, state: Any = None, **kwargs: Any
            ) -> list[Message]:
                seen.append(
                    (self.source_id or "", "load", (state or {}).get("run_key"))
                )
                return await super().get_messages(session_id, state=state, **kwargs)

            async def save_messages(
                self,
                session_id: Any,
                messages: Any,
                *,
                state: Any = None,
                **kwargs: Any,
            ) -> None:
                seen.append(
                    (self.source_id or "", "save", (state or {}).get("run_key"))
                )
                await super().save_messages(session_id, messages, state=state, **kwargs)

        class Memory(InMemoryHistoryProvider):
            async def save_messages(
                self,
                session_id: Any,
                messages: Any,
                *,
                state: Any = None,
                **kwargs: Any,
            ) -> None:
                seen.append(("memory", "save", (state or {}).get("run_key")))
                await super().save_messages(session_id, messages, state=state, **kwargs)

        history = Recording("history", path=app / "history.db")
        agent = Agent(
            ScriptedChatClient(
                [[call("refund", {"amount": 5}, call_id="r1")], "finished"]
            ),
            tools=[refund],
            context_providers=[history, Memory("memory", load_messages=False)],
        )
        store = SessionStore()
        durable = DurableAgent(agent, name="keyed", sessions=store)
        DBOS.launch()
        session = AgentSession(session_id="k")
        task = asyncio.ensure_future(
            run(durable, "refund", stream=stream, workflow_id="kw", session=session)
        )
        assert len(await pending_approvals("kw", wait_seconds=20)) == 1
        await approve("kw", {"r1": True})
        await asyncio.wait_for(task, 30)
        assert seen == [
            ("history", "load", "kw:0"),
            ("memory", "save", "kw:0"),
            ("history", "save", "kw:0"),
            ("history", "load", "kw:1"),
            ("memory", "save", "kw:1"),
            ("history", "save", "kw:1"),
        ]
        # the approval's record (LP-34)
        assert set(session.state) == {"memory", "minagent.approval_requests"}
        assert list(session.state["memory"]) == ["messages"]
        kept = await store.get("k")
        assert kept is not None
        assert kept.to_dict() == session.to_dict()
        assert "run_key" not in json.dumps(session.to_dict())
        texts = [m.text for m in await history.get_messages("k")]
        assert texts == [m.text for m in session.state["memory"]["messages"]]
        assert texts.count("refund") == 1
        assert texts[-1] == "finished"


class TestQueue:
    """DU-14: a run put on a DBOS queue by this process runs, and result() gives its
    response."""

    async def test_enqueue_and_result(self, app: Path) -> None:
        client = ScriptedChatClient(
            [[call("add", {"a": 2, "b": 5}, call_id="q1")], "seven"]
        )
        durable = DurableAgent(Agent(client, tools=[add]), name="queued")
        DBOS.launch()
        queue = await DBOS.register_queue_async("runs", worker_concurrency=2)
        session = AgentSession(session_id="q")
        wid = await durable.enqueue(
            queue, "add them", workflow_id="queued-1", session=session
        )
        assert wid == "queued-1"
        response = await asyncio.wait_for(result(wid, session=session), 60)
        assert response.text == "seven"
        assert session.state["in_memory"]["messages"][0].text == "add them"
        assert await steps_of(wid) == [MODEL_STEP, f"{TOOL_STEP}:add", MODEL_STEP]


class TestPlacement:
    """DU-3: the agent's chat middleware runs outside the model step (again on a
    replay); the chat middleware a context provider adds comes after the run's, so
    inside the step (recorded)."""

    async def test_provider_middleware_is_inside_the_step(self, app: Path) -> None:
        outside: list[int] = []
        inside: list[int] = []

        @chat_middleware
        async def agent_level(context: Any, call_next: Any) -> None:
            outside.append(1)
            await call_next()

        @chat_middleware
        async def from_provider(context: Any, call_next: Any) -> None:
            inside.append(1)
            await call_next()

        class Adds(ContextProvider):
            async def before_run(
                self, *, agent: Any, session: AgentSession, context: Any, state: Any
            ) -> None:
                context.extend_middleware(self.source_id, [from_provider])

        client = ScriptedChatClient(
            [[call("add", {"a": 1, "b": 1}, call_id="p1")], "two", "two"]
        )
        agent = Agent(
            client,
            tools=[add],
            middleware=[agent_level],
            context_providers=[Adds("adds")],
        )
        durable = DurableAgent(agent, name="placement")
        DBOS.launch()
        await durable.run("go", workflow_id="pl", session=AgentSession(session_id="pl"))
        assert (len(outside), len(inside)) == (2, 2)
        names = await steps_of("pl")
        handle = await DBOS.fork_workflow_async(
            "pl", len(names) - names[::-1].index(MODEL_STEP)
        )
        await handle.get_result()
        # replayed first call: outside ran, inside did not
        assert (len(outside), len(inside)) == (4, 3)


def test_the_overhead_benchmark_runs() -> None:
    """DU-16: benchmarks/durable.py runs the same conversation plain and durable (it
    fails on wrong work) and prints the overhead per step; the figures themselves are
    never asserted."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "benchmarks/durable.py", "--runs", "1", "--no-postgres"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "overhead per step ms" in done.stdout
    rows = [
        line.split()
        for line in done.stdout.splitlines()
        if line.strip()[:2] in ("1 ", "21")
    ]
    assert [row[0] for row in rows] == ["1", "21", "1", "21"]  # SQLite default and WAL


def test_unixepoch_for_old_sqlite() -> None:
    """DU-17: the replacement unixepoch answers as SQLite's does, subsec included, and
    makes a DBOS-style default work on any SQLite."""
    import sqlite3
    import time

    from minagent_dbos import _sqlite

    assert (
        sys.version_info >= (3, 12) and sqlite3.sqlite_version_info < (3, 42, 0)
    ) == _sqlite.NEEDED
    assert _sqlite.unixepoch("2020-01-01") == 1577836800
    assert _sqlite.unixepoch("2020-01-01 00:00:01.5", "subsec") == pytest.approx(
        1577836801.5
    )
    assert _sqlite.unixepoch("2020-01-01", "+1 day") == 1577923200
    assert _sqlite.unixepoch("not a date") is None
    before = time.time()
    with sqlite3.connect(":memory:") as db:
        _sqlite.install(db)
        db.execute(
            "CREATE TABLE t (a INTEGER, at INTEGER NOT NULL DEFAULT (unixepoch('subsec') * 1000))"
        )
        db.execute("INSERT INTO t (a) VALUES (1)")
        (at,) = db.execute("SELECT at FROM t").fetchone()
        assert isinstance(db.execute("SELECT unixepoch()").fetchone()[0], int)
    assert before * 1000 - 1 <= at <= time.time() * 1000 + 1
