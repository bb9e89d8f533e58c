"""The version of a durable agent's definition (spec/dbos.md DU-20): what changes it and
what does not, in another process, the pins, and DBOS's application version that
follows it. The recovery under a changed agent, with real processes killed with SIGKILL,
is in test_dbos_crash.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("dbos")
pytest.importorskip("minagent_dbos")

from dbos import DBOS
from minagent_dbos import DurableAgent, definition_version

from minagent import Agent, FunctionTool, merge_options, normalize_messages, tool
from minagent.testing import ScriptedChatClient
from tests.dbos._definition import (
    BASE,
    NOISE,
    PROVIDERS,
    TOOLS,
    build,
)

ROOT = Path(__file__).resolve().parents[2]

# each field of a definition, and the values it may take
FIELDS: dict[str, Any] = {
    "name": st.sampled_from([None, "planner", "booker"]),
    "instructions": st.none() | st.text(max_size=12),
    "tools": st.lists(st.sampled_from(sorted(TOOLS)), unique=True),
    "middleware": st.lists(
        st.sampled_from(["audit", "limit", "guard", "trace"]), unique=True
    ),
    "providers": st.lists(st.sampled_from(sorted(PROVIDERS)), unique=True),
    "client_middleware": st.lists(st.sampled_from(["trace", "guard"]), unique=True),
    # None: the default (40)
    "max_iterations": st.sampled_from([None, 3, 10]),
}
NOISES = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=8),
        "description": st.none() | st.text(max_size=8),
        "model": st.sampled_from(["scripted", "gpt-x", "local"]),
        "limit": st.integers(1, 5),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    first=st.fixed_dictionaries(FIELDS),
    changed=st.sets(st.sampled_from(sorted(FIELDS))),
    noise=st.tuples(NOISES, NOISES),
    data=st.data(),
)
def test_version_changes_with_the_definition_and_only_with_it(
    first: dict[str, Any],
    changed: set[str],
    noise: tuple[dict[str, Any], dict[str, Any]],
    data: st.DataObject,
) -> None:
    """DU-20: two agents built afresh have the same version exactly when their
    definitions are the same (name, instructions, tools, middleware in order, context
    providers, the client's middleware and loop configuration), whatever their ids,
    descriptions, client settings and middleware objects' state."""
    second = dict(first)
    for field in changed:
        second[field] = data.draw(
            FIELDS[field].filter(lambda v, f=field: v != first[f])
        )
    one = definition_version(build(first, noise[0]))
    other = definition_version(build(second, noise[1]))
    assert (one == other) == (not changed), (first, second)


def _tool_from(source: str) -> Any:
    """A tool named ``where`` compiled from ``source``, in this module's name."""
    namespace: dict[str, Any] = {"__name__": __name__}
    exec(compile(source, "<tool>", "exec"), namespace)
    return tool(namespace["where"])


WHERE = '''
def where(city: str) -> str:
    """Where a city is."""
    return "France" if city == "Paris" else "elsewhere"
'''


def _with_tool(made: Any) -> Agent:
    return Agent(ScriptedChatClient(), "Plan trips.", tools=[made], name="planner")


def test_a_tools_code_counts_and_its_comments_do_not() -> None:
    """DU-20: a tool of the same name, description and schema whose function's body
    differs gives another version; the same body with a comment added (and moved a line
    down) gives the same."""
    base = definition_version(_with_tool(_tool_from(WHERE)))
    body = WHERE.replace('"elsewhere"', '"abroad"')
    commented = WHERE.replace("    return", "    # the only city we know\n\n    return")
    assert definition_version(_with_tool(_tool_from(body))) != base
    assert definition_version(_with_tool(_tool_from(commented))) == base
    assert definition_version(_with_tool(_tool_from(WHERE))) == base


def test_a_middleware_class_code_counts() -> None:
    """DU-20: a class-based middleware counts by its class's code: a class of the same
    name whose method's body differs gives another version."""
    made = []
    for body in (
        "await call_next()",
        "context.metadata['seen'] = 1\n        await call_next()",
    ):
        namespace: dict[str, Any] = {"__name__": __name__}
        source = (
            "from minagent import AgentMiddleware\n"
            "class Gate(AgentMiddleware):\n"
            "    async def process(self, context, call_next):\n"
            f"        {body}\n"
        )
        exec(compile(source, "<middleware>", "exec"), namespace)
        agent = Agent(ScriptedChatClient(), middleware=[namespace["Gate"]()])
        made.append(definition_version(agent))
    assert made[0] != made[1]


def test_the_version_is_the_same_in_another_process() -> None:
    """DU-20: the same definition built in other processes, under other hash seeds
    (a tool's set literal is a constant whose order follows the seed), gives the same
    version as here; its functions in another module (a script's ``__main__``) give
    another."""
    here = definition_version(build(BASE, NOISE))
    seen = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-m", "tests.dbos._definition"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        seen.add(done.stdout.strip())
    assert seen == {here}
    # the same code run as a script is __main__'s, another module: another version
    script = subprocess.run(
        [sys.executable, "-m", "tests.dbos._definition", "--main"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert script.stdout.strip() != here


@pytest.fixture
def app(tmp_path: Path) -> Iterator[dict[str, Any]]:
    config: dict[str, Any] = {
        "name": "minagent-tests",
        "system_database_url": f"sqlite:///{tmp_path}/dbos.sqlite",
        "log_level": "ERROR",
    }
    yield config
    DBOS.destroy(destroy_registry=True)


def launched_version(config: dict[str, Any], agent: Agent, **kwargs: Any) -> str:
    """DBOS's application version in a process that made ``agent``'s `DurableAgent`."""
    DBOS.destroy(destroy_registry=True)
    DBOS(config=dict(config))
    DurableAgent(agent, name="planner", **kwargs)
    DBOS.launch()
    return str(DBOS.application_version)


def test_dbos_application_version_follows_the_agent(app: dict[str, Any]) -> None:
    """DU-20: DBOS's computed application version changes when the durable agent's
    definition does (one more middleware) and comes back with the same definition;
    with version= pinned it is the same for both definitions; DBOS's own
    application_version pin fixes it whatever the agent."""
    plain = dict(BASE, middleware=["audit"])
    more = dict(BASE, middleware=["audit", "guard"])
    first = launched_version(app, build(plain, NOISE))
    assert launched_version(app, build(more, NOISE)) != first
    assert launched_version(app, build(plain, NOISE)) == first
    pinned = launched_version(app, build(plain, NOISE), version="v7")
    assert launched_version(app, build(more, NOISE), version="v7") == pinned
    assert pinned != first
    fixed = dict(app, application_version="release-12")
    assert launched_version(fixed, build(more, NOISE)) == "release-12"


def test_durable_settings_count_and_a_pin_is_kept(app: dict[str, Any]) -> None:
    """DU-20: the DurableAgent's name, wait_for_approvals and approval_timeout count;
    version= is kept as given, whatever the agent; a version that is not a non-empty
    string is a ValueError."""
    DBOS(config=app)
    agent = build(BASE, NOISE)
    versions = {
        DurableAgent(agent, name="planner").version,
        DurableAgent(agent, name="planner-2").version,
        DurableAgent(agent, name="planner", wait_for_approvals=False).version,
        DurableAgent(agent, name="planner", approval_timeout=30.0).version,
    }
    assert len(versions) == 4
    assert DurableAgent(agent, name="planner").version in versions
    other = build(dict(BASE, tools=[]), NOISE)
    assert DurableAgent(agent, name="planner", version="v7").version == "v7"
    assert DurableAgent(other, name="planner", version="v7").version == "v7"
    for bad in ("", 7):
        with pytest.raises(ValueError, match="version"):
            DurableAgent(agent, name="planner", version=bad)  # type: ignore[arg-type]


def test_a_middleware_list_order_counts() -> None:
    """DU-20: the same middleware in another order is another definition."""
    one = build(dict(BASE, middleware=["audit", "guard"]), NOISE)
    two = build(dict(BASE, middleware=["guard", "audit"]), NOISE)
    assert definition_version(one) != definition_version(two)


def scale(value: float, factor: float) -> float:
    return value * factor


def shift(value: float, factor: float) -> float:
    return value + factor


class Units:
    """A response format and a tool's owner: its methods' code counts."""

    label = "km"

    @staticmethod
    def convert(value: float) -> float:
        return value * 1.609

    @property
    def name(self) -> str:
        return self.label

    def measure(self, city: str) -> str:
        """Measure a city."""
        return f"{len(city)} {self.label}"


SCHEMA = {"type": "object", "properties": {"value": {"type": "number"}}}


def _agent(**options: Any) -> Agent:
    return Agent(ScriptedChatClient(), "Convert.", default_options=options)


def test_other_kinds_of_code_and_options_count() -> None:
    """DU-20: a float option, a set option (in any order), a response-format class (by
    its methods' code, static methods and properties included), a tool over a bound
    method, a partial, a builtin, a minagent function, a class or a callable object (by
    the function or class it calls) count as the rest does; an option that contains
    itself is described without end."""
    import functools

    def version(**options: Any) -> str:
        return definition_version(_agent(**options))

    assert version(temperature=0.2) == version(temperature=0.2)
    assert version(temperature=0.2) != version(temperature=0.3)
    assert version(stop={"a", "b", "c"}) == version(stop={"c", "b", "a"})
    assert version(stop={"a", "b"}) != version(stop={"a", "c"})
    assert version(response_format=Units) == version(response_format=Units)

    namespace: dict[str, Any] = {"__name__": __name__}
    changed = inspect_free_source(Units).replace("1.609", "1.61")
    exec(compile(changed, "<units>", "exec"), namespace)
    assert version(response_format=namespace["Units"]) != version(response_format=Units)

    def tools(func: Any) -> str:
        made = FunctionTool(name="calc", func=func, parameters=SCHEMA)
        return definition_version(Agent(ScriptedChatClient(), tools=[made]))

    assert tools(Units().measure) == tools(Units().measure)
    assert tools(functools.partial(scale, factor=2.0)) == tools(
        functools.partial(scale, factor=2.0)
    )
    assert tools(functools.partial(scale, factor=2.0)) != tools(
        functools.partial(scale, factor=3.0)
    )
    assert tools(functools.partial(scale, factor=2.0)) != tools(
        functools.partial(shift, factor=2.0)
    )
    assert tools(len) != tools(abs)
    assert tools(normalize_messages) == tools(normalize_messages)
    assert tools(normalize_messages) != tools(merge_options)

    class Meter:
        def __call__(self, value: float) -> float:
            return value

    class Gauge:
        def __call__(self, value: float) -> float:
            return -value

    assert tools(Meter()) == tools(Meter())
    assert tools(Meter()) != tools(Gauge())
    assert tools(Meter) != tools(Gauge)

    looped: dict[str, Any] = {"level": 1}
    looped["self"] = looped
    assert version(metadata=looped) == version(metadata=looped)


def inspect_free_source(cls: type) -> str:
    """The source of ``cls`` (a class of this module), without its indentation."""
    import inspect
    import textwrap

    return textwrap.dedent(inspect.getsource(cls))
