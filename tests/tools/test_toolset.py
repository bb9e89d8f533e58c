"""A run's tools normalised once into a `ToolSet` of `ToolSpec` records (spec/tools.md
TL-13)."""

from __future__ import annotations

from typing import Any

import pytest

import minagent._toolset as toolset_module
from minagent import Agent, FunctionTool, tool
from minagent._toolset import ToolSet, ToolSpec, tool_specs
from minagent.testing import ScriptedChatClient, call
from tests._support.modes import run


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool(approval_mode="always_require", sequential=True)
def guarded(x: int) -> int:
    """Needs approval."""
    return x


def double(x: int) -> int:
    """Double."""
    return 2 * x


DECLARED = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look up.",
        "parameters": {"type": "object"},
    },
}
HOSTED = {"type": "web_search_preview"}


async def test_the_tools_are_normalised_once_per_run(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TL-13: the agent's tools are normalised when it is made; a run without tools of
    its own normalises nothing again, a run with its own tools normalises its list once
    — not again in the client or the loop."""
    calls: list[int] = []
    real = toolset_module.normalize_tools

    def counting(tools: Any, known: Any = None) -> list[Any]:
        calls.append(1)
        return real(tools, known)

    monkeypatch.setattr(toolset_module, "normalize_tools", counting)
    client = ScriptedChatClient(
        [
            [call("add", {"a": 1, "b": 2}, call_id="c1")],
            "3",
            [call("double", {"x": 2})],
            "4",
        ]
    )
    agent = Agent(client, tools=[add])
    assert len(calls) == 1
    assert (await run(agent, "go", stream=stream)).text == "3"
    assert len(calls) == 1  # the agent's ToolSet went through as it is
    assert (await run(agent, "go", stream=stream, tools=[double])).text == "4"
    assert len(calls) == 2  # the run's list: once
    assert [t.name for t in client.requests[2].options["tools"]] == ["add", "double"]


def test_a_toolset_holds_one_record_per_tool() -> None:
    """TL-13, LP-11, LP-13, LP-5: the records say name, description, schema, what
    answers a call (nothing for a declaration dict), approval and sequential; a hosted
    dict has no name and is kept as it is; the ToolSet is the list of the tools
    themselves, in order."""
    tools = ToolSet.of([add, guarded, double, DECLARED, HOSTED])
    assert isinstance(tools, list)
    assert tools[0] is add
    assert tools[3] is DECLARED
    assert tools[4] is HOSTED
    specs = tool_specs(tools)
    assert specs is tools.specs
    assert [s.name for s in specs] == ["add", "guarded", "double", "lookup", None]
    assert specs[0] == ToolSpec("add", "Add.", add.parameters, add, add, False, False)
    assert (specs[1].approval, specs[1].sequential) == (True, True)
    assert isinstance(specs[2].runnable, FunctionTool)
    assert specs[2].runnable.func is double
    assert specs[3].runnable is None
    assert specs[3].description == "Look up."
    assert specs[3].parameters == {"type": "object"}
    assert specs[4].runnable is None
    assert tools.approval_names == frozenset({"guarded"})
    assert ToolSet.of(tools) is tools
    copy = tools.copy()
    assert type(copy) is ToolSet
    assert copy == tools
    assert copy is not tools
    assert copy.specs is tools.specs


async def test_a_toolset_edited_in_place_is_read_anew(stream: bool) -> None:
    """TL-13: the agent's tools are a list; a tool appended to it joins the next run
    (its records are read anew), and the provider receives a list of its own, never the
    agent's."""
    client = ScriptedChatClient([[call("double", {"x": 4}, call_id="c1")], "8"])
    agent = Agent(client, tools=[add])
    agent.default_options["tools"].append(tool(double))
    response = await run(agent, "go", stream=stream)
    assert response.messages[1].contents[0].result == 8
    sent = client.requests[0].options["tools"]
    assert [t.name for t in sent] == ["add", "double"]
    assert sent is not agent.default_options["tools"]


def test_a_codec_reads_records_of_any_tool_list() -> None:
    """TL-13: `minagent.providers.tool_specs` gives the records of a ToolSet as they
    are, and of a plain list read now; a dict with a ``type`` is a provider's own
    declaration (``wire``), a {name, description, parameters} dict and a tool object are
    described by the record's fields."""
    from minagent.providers import ToolSpec as PublicToolSpec
    from minagent.providers import tool_specs as public_tool_specs

    assert PublicToolSpec is ToolSpec
    plain = {"name": "find", "description": "Find.", "parameters": {"type": "object"}}
    specs = public_tool_specs([add, plain, DECLARED, HOSTED])
    assert [s.wire for s in specs] == [None, None, DECLARED, HOSTED]
    assert (specs[1].name, specs[1].description, specs[1].parameters) == (
        "find",
        "Find.",
        {"type": "object"},
    )
    assert specs[1].declaration is plain
    assert specs[0].declaration is None
    assert public_tool_specs(None) == ()
