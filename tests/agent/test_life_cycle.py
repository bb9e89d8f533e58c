"""An agent's life cycle (spec/agent.md AG-9): what it enters with `async with` and
closes in reverse order, run-level tools entered lazily and closed when the run ends."""

from __future__ import annotations

from typing import Any

import pytest

from minagent import (
    Agent,
    FunctionTool,
)
from minagent.testing import ScriptedChatClient, call, reply
from tests._support.modes import run


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Connection:
    """A tool that holds a connection: an async context manager with a name, parameters
    and invoke."""

    def __init__(self, log):
        self.name = "lookup"
        self.description = "Looks something up."
        self.parameters = {
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
        }
        self.log = log

    async def __aenter__(self):
        self.log.append("open")
        return self

    async def __aexit__(self, *exc_info):
        self.log.append("close")

    async def invoke(self, arguments, *, context=None):
        return f"value of {arguments['key']}"


class Resource:
    """Mixin: an async context manager that logs enter and exit."""

    log: list[str]
    label: str

    async def __aenter__(self) -> Any:
        self.log.append(f"enter {self.label}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.log.append(f"exit {self.label}")


class ManagedClient(Resource, ScriptedChatClient):
    def __init__(self, log: list[str], steps: list[Any]) -> None:
        super().__init__(steps)
        self.log, self.label = log, "client"


class ManagedTool(Resource, FunctionTool):
    def __init__(self, log: list[str], name: str) -> None:
        super().__init__(
            name=name, func=lambda: f"{name} ran", parameters={"type": "object"}
        )
        self.log, self.label = log, name


class BrokenTool(ManagedTool):
    async def __aenter__(self) -> Any:
        raise ConnectionError("cannot connect")


class TestLifeCycle:
    """AG-9: `async with agent:` enters the client and agent-level tools that are async
    context managers into one stack; a run-level one is entered on first use, once;
    leaving (also after an error) or aclose() closes all of them in reverse order."""

    async def test_enter_and_exit_in_reverse_order(self) -> None:
        log: list[str] = []
        client = ManagedClient(log, ["ok"])
        agent = Agent(
            client, tools=[ManagedTool(log, "t1"), add, ManagedTool(log, "t2")]
        )
        async with agent as entered:
            assert entered is agent
            assert log == ["enter client", "enter t1", "enter t2"]
            assert (await agent.run("hi")).text == "ok"
            assert log == ["enter client", "enter t1", "enter t2"]
        assert log[3:] == ["exit t2", "exit t1", "exit client"]

    async def test_exit_also_when_a_run_raises(self) -> None:
        log: list[str] = []
        agent = Agent(
            ManagedClient(log, [RuntimeError("model down")]),
            tools=[ManagedTool(log, "t")],
        )
        with pytest.raises(RuntimeError, match="model down"):
            async with agent:
                await agent.run("hi")
        assert log == ["enter client", "enter t", "exit t", "exit client"]

    async def test_exit_also_when_a_streaming_run_raises(self) -> None:
        log: list[str] = []
        agent = Agent(ManagedClient(log, [RuntimeError("model down")]))

        async def consume() -> None:
            async with agent:
                async for _ in agent.run("hi", stream=True):
                    pass

        with pytest.raises(RuntimeError, match="model down"):
            await consume()
        assert log == ["enter client", "exit client"]

    async def test_run_level_tool_entered_lazily_once_and_closed_by_aclose(
        self,
    ) -> None:
        log: list[str] = []
        script = [[call("lazy", {}, call_id="c1")], "first", "second"]
        agent = Agent(
            ManagedClient(log, script), tools=[ManagedTool(log, "agent_tool")]
        )
        lazy = ManagedTool(log, "lazy")
        async with agent:
            assert "enter lazy" not in log
            first = await agent.run("one", tools=[lazy])
            assert first.messages[1].contents[0].result == "lazy ran"
            await agent.run("two", tools=[lazy])
            assert log.count("enter lazy") == 1
            assert "exit lazy" not in log
            await agent.aclose()
            assert log[-4:] == [
                "enter lazy",
                "exit lazy",
                "exit agent_tool",
                "exit client",
            ]
        # leaving after aclose() closes nothing twice
        assert log.count("exit client") == 1

    async def test_without_async_with_the_first_run_enters_and_aclose_closes(
        self,
    ) -> None:
        """AG-9: outside `async with`, an agent-level tool is entered by the first run
        and closed by aclose(); a run-level tool is entered by each run and closed when
        that run ends."""
        log: list[str] = []
        agent = Agent(ManagedClient(log, ["a", "b"]), tools=[ManagedTool(log, "t")])
        lazy = ManagedTool(log, "lazy")
        await agent.run("one", tools=[lazy])
        await agent.run("two", tools=[lazy])
        assert log == ["enter t", "enter lazy", "exit lazy", "enter lazy", "exit lazy"]
        await agent.aclose()
        await agent.aclose()
        assert log == [
            "enter t",
            "enter lazy",
            "exit lazy",
            "enter lazy",
            "exit lazy",
            "exit t",
        ]

    async def test_run_level_tools_are_closed_when_the_run_ends_in_any_way(
        self, stream: bool
    ) -> None:
        """AG-9 (issue 13): 50 runs with 50 run-level context-manager tools leave none
        open, also when a run fails; inside `async with agent` they stay open until the
        block ends."""
        log: list[str] = []
        steps: list[Any] = [f"answer {i}" for i in range(50)] + [
            RuntimeError("model down")
        ]
        agent = Agent(ScriptedChatClient(steps))
        for i in range(50):
            await run(agent, "go", stream=stream, tools=[ManagedTool(log, f"r{i}")])
        with pytest.raises(RuntimeError, match="model down"):
            await run(agent, "go", stream=stream, tools=[ManagedTool(log, "failing")])
        entered = [e for e in log if e.startswith("enter")]
        exited = [e for e in log if e.startswith("exit")]
        assert len(entered) == len(exited) == 51
        log.clear()
        async with Agent(ScriptedChatClient(["x"])) as inside:
            await run(inside, "go", stream=stream, tools=[ManagedTool(log, "kept")])
            assert log == ["enter kept"]
        assert log == ["enter kept", "exit kept"]

    async def test_failed_enter_closes_what_was_entered(self) -> None:
        log: list[str] = []
        agent = Agent(
            ManagedClient(log, []), tools=[ManagedTool(log, "t1"), BrokenTool(log, "b")]
        )
        with pytest.raises(ConnectionError):
            async with agent:
                pytest.fail("the block must not run")
        assert log == ["enter client", "enter t1", "exit t1", "exit client"]


async def test_seed_style_run_level_connection_is_closed_after_the_run(stream):
    """AG-9: a connection given to one run outside `async with agent` is opened for that
    run and closed when it ends; inside `async with agent` it stays open until the block
    ends."""
    log = []
    client = ScriptedChatClient([reply(call("lookup", {"key": "k"})), "found", "again"])
    agent = Agent(client=client)
    await run(agent, "find k", stream=stream, tools=[Connection(log)])
    assert log == ["open", "close"]
    log.clear()
    async with agent:
        await run(agent, "again", stream=stream, tools=[Connection(log)])
        assert log == ["open"]
    assert log == ["open", "close"]
