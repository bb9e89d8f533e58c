"""Upstream's API at the edge of the core (spec/upstream.md UP-10, spec/agent.md AG-12,
spec/decisions.md "The edge"): the core never imports minagent/upstream/; upstream's API
reached through a core object loads that folder through the edge, and a keyword the core
does not take is answered by the core itself, also in a copy without folders."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from minagent import Agent, AgentContext, RawAgent, _edge, agent_middleware
from minagent._compat import AGENT_KEYWORDS, RUN_KEYWORDS, _near_miss
from minagent.testing import ScriptedChatClient
from tests._support.modes import run

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "minagent"

# A client of the core's own two hooks, for a copy without minagent/testing/.
CLIENT = """
import asyncio, sys
from minagent import Agent, BaseChatClient, ChatResponse, Content, Message

class Plain(BaseChatClient):
    async def _inner_get_response(self, *, messages, options, **kwargs):
        return ChatResponse([Message("assistant", ["ok"])])

def show(label, call):
    try:
        print(label, "->", repr(call()))
    except BaseException as exc:
        print(label, "->", type(exc).__name__ + ":", exc)
"""


def _run(script: str, *, core_only: Path | None = None) -> list[str]:
    """``script`` in a fresh interpreter: on this checkout, or (``core_only``) on a copy
    of the top-level files alone in that folder; its output lines."""
    if core_only is None:
        command = [sys.executable, "-c", script]
        cwd = ROOT
    else:
        copy = core_only / "minagent"
        copy.mkdir()
        for path in PACKAGE.glob("*.py"):
            shutil.copy(path, copy / path.name)
        command = [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(core_only)!r}); exec({script!r})",
        ]
        cwd = core_only
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


# Each: code that reaches upstream's API through a core object, and what it prints.
THROUGH_CORE_OBJECTS = {
    "content kind": (
        "show('x', lambda: Content.from_hosted_file('f1').file_id)",
        "'f1'",
    ),
    "thread": (
        "show('x', lambda: type(Agent(Plain()).get_new_thread()).__name__)",
        "'AgentThread'",
    ),
    "restored thread": (
        "t = Agent(Plain()).get_new_thread(thread_id='t1')\n"
        "show('x', lambda: Agent(Plain()).deserialize_thread({'type': 'agent_thread', "
        "'version': 1, 'thread_id': 't1', 'messages': []}).thread_id)",
        "'t1'",
    ),
    "single hook": (
        "class Single(BaseChatClient):\n"
        "    async def _inner_get_response(self, *, messages, stream, options, **kw):\n"
        "        return ChatResponse([Message('assistant', ['single'])])\n"
        "show('x', lambda: asyncio.run(Agent(Single()).run('hi')).text)",
        "'single'",
    ),
    "per-service-call history": (
        "a = Agent(Plain(), require_per_service_call_history_persistence=True)\n"
        "show('x', lambda: type(a.context_providers[0]).__name__)",
        "'PerCallHistory'",
    ),
    "thread-era provider": (
        "from minagent import ContextProvider\n"
        "class Old(ContextProvider):\n"
        "    async def invoking(self, messages, **kwargs):\n"
        "        return None\n"
        "a = Agent(Plain(), context_providers=[Old()])\n"
        "show('x', lambda: asyncio.run(a.run('hi', session=a.create_session())).text)",
        "'ok'",
    ),
}


@pytest.mark.parametrize("case", sorted(THROUGH_CORE_OBJECTS))
def test_upstream_api_on_a_core_object_loads_the_folder(case: str) -> None:
    """UP-10: upstream's API reached through a core object works in a fresh process
    where no upstream name was used, and loads minagent/upstream/ then, not before."""
    code, expected = THROUGH_CORE_OBJECTS[case]
    script = (
        CLIENT
        + "print('before', 'minagent.upstream' in sys.modules)\n"
        + code
        + "\nprint('after', 'minagent.upstream' in sys.modules)\n"
    )
    lines = _run(script)
    assert lines == ["before False", f"x -> {expected}", "after True"]


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("Agent(Plain()).get_new_thread()", "ImportError"),
        ("Agent(Plain()).deserialize_thread({})", "ImportError"),
        (
            "Agent(Plain(), require_per_service_call_history_persistence=True)",
            "ImportError",
        ),
        ("Content.from_hosted_file('f1')", "AttributeError"),
        (
            "type('Single', (BaseChatClient,), {'_inner_get_response': "
            "lambda self, *, messages, stream, options: None})",
            "ImportError",
        ),
    ],
)
def test_a_core_only_copy_names_the_upstream_folder(
    code: str, error: str, tmp_path: Path
) -> None:
    """UP-10, PK-9: in a copy of the core without minagent/upstream/, upstream's API on
    a core object is an error naming the folder to copy (a factory lookup an
    AttributeError, so hasattr stays false)."""
    script = (
        CLIENT
        + f"show('x', lambda: {code})\n"
        + "print(hasattr(Content, 'from_hosted_file'))\n"
    )
    found, has = _run(script, core_only=tmp_path)
    assert found.startswith(f"x -> {error}: "), found
    assert "the optional folder minagent/upstream/" in found
    assert has == "False"


def test_a_core_only_copy_answers_keywords_itself(tmp_path: Path) -> None:
    """AG-12, LP-60, SE-65, TY-16, PK-2: a copy of the core alone answers a misspelt
    keyword, upstream's keywords and upstream's configuration keys with its own errors,
    and adds contents, without minagent/upstream/."""
    script = CLIENT + (
        "show('tols', lambda: Agent(Plain(), tols=[]))\n"
        "show('sesion', lambda: Agent(Plain()).run('x', sesion=object()))\n"
        "show('chat_client', lambda: Agent(Plain(), chat_client=Plain()))\n"
        "show('temperature', lambda: Agent(Plain()).run('x', temperature=0.2))\n"
        "from minagent import FunctionInvocationConfiguration as F\n"
        "show('config', lambda: F.coerce({'max_duration_seconds': 3}))\n"
        "show('add', lambda: (Content.from_text('a') + Content.from_text('b')).text)\n"
        "a = Agent(Plain())\n"
        "s = a.get_session({'task': 't1'})\n"
        "show('structured', lambda: asyncio.run(a.run('x', session=s)))\n"
        "print('upstream' in sys.modules or 'minagent.upstream' in sys.modules)\n"
    )
    lines = dict(
        line.split(" -> ", 1) for line in _run(script, core_only=tmp_path)[:-1]
    )
    assert lines["tols"] == (
        "TypeError: Agent() got an unexpected keyword argument 'tols': did you mean tools=?"
    )
    assert lines["sesion"] == (
        "TypeError: Agent.run() got an unexpected keyword argument 'sesion': "
        "did you mean session=?"
    )
    assert lines["chat_client"].startswith("TypeError: Agent() got chat_client=: ")
    assert "client=" in lines["chat_client"]
    assert lines["temperature"] == (
        "TypeError: Agent.run() got temperature=: chat options go in "
        "options={'temperature': ...}"
    )
    assert lines["config"].startswith("KeyError: ")
    assert (
        "max_duration_seconds is upstream's: wrap the run in asyncio.timeout"
        in (lines["config"])
    )
    assert lines["add"] == "'ab'"
    assert lines["structured"].startswith(
        "AgentInvalidRequestException: Agent expects a string service_session_id"
    )


def test_the_keyword_lists_are_the_signatures() -> None:
    """AG-12: the keywords a misspelling is measured against are exactly those
    `RawAgent.run` and `Agent` name."""
    run_names = [
        p.name
        for p in inspect.signature(RawAgent.run).parameters.values()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"
    ]
    agent_names = [
        p.name
        for p in inspect.signature(Agent.__init__).parameters.values()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"
    ]
    assert sorted(RUN_KEYWORDS) == sorted(run_names)
    assert sorted(AGENT_KEYWORDS) == sorted(agent_names)


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("sesion", "session"),  # a letter dropped
        ("sessions", "session"),  # a letter added
        ("sessoin", "session"),  # two neighbours swapped
        ("sessiun", "session"),  # a letter changed
        ("tols", "tools"),
        ("optoins", "options"),
        ("stram", "stream"),
        ("user_id", None),
        ("thread_id", None),
        ("session_state", None),
        ("sesoin", None),  # two edits
        ("ix", None),  # too short to misspell anything
    ],
)
def test_a_near_miss_is_one_edit(key: str, meant: str | None) -> None:
    """AG-12: a keyword misspells one of `run`'s own when it is one edit away from it
    (a letter added, dropped or changed, or two neighbours swapped)."""
    assert _near_miss(key, RUN_KEYWORDS) == meant


async def test_a_misspelt_run_keyword_is_a_type_error(stream: bool) -> None:
    """AG-12: ``run(..., sesion=...)`` is a TypeError naming the keyword meant, in both
    modes, before anything runs; another keyword still travels as ``**kwargs`` (AG-2)."""
    client = ScriptedChatClient(["ok"])
    agent = Agent(client)
    with pytest.raises(TypeError, match=r"'sesion': did you mean session=\?"):
        await run(agent, "hi", stream=stream, sesion=agent.create_session())
    assert client.requests == []
    seen: list[dict[str, Any]] = []

    @agent_middleware
    async def record(context: AgentContext, call_next: Any) -> None:
        seen.append(dict(context.kwargs))
        await call_next()

    agent = Agent(client, middleware=[record])
    response = await run(agent, "hi", stream=stream, user_id="u1")
    assert response.text == "ok"
    assert seen == [{"user_id": "u1"}]


def test_the_edge_takes_an_edge_and_a_loader() -> None:
    """UP-10: only an `Edge` is installed, only a callable is a loader; installing
    returns the edge installed before."""
    with pytest.raises(TypeError, match="takes an Edge"):
        _edge.install(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a callable"):
        _edge.set_loader("minagent.upstream")  # type: ignore[arg-type]
    import minagent.upstream  # noqa: F401  (installs its edge)

    installed = _edge.current()
    assert type(installed).__name__ == "UpstreamEdge"
    previous = _edge.install(_edge.Edge())
    try:
        assert previous is installed
    finally:
        _edge.install(previous)
    assert _edge.current() is installed


def test_a_loader_that_installs_nothing_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """UP-10: the base edge asks the folder's edge after loading it; a loader whose
    import installs no edge is a RuntimeError, not a loop or a silent None."""
    loads: list[str] = []
    monkeypatch.setattr(_edge, "_EDGE", _edge.Edge())
    monkeypatch.setattr(_edge, "_LOADER", loads.append)
    with pytest.raises(RuntimeError, match="installed no edge"):
        _edge.current().new_thread()
    assert loads == ["upstream's thread era (agent.get_new_thread())"]
