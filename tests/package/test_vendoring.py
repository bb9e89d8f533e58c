"""PK-2, PK-11, PK-17: a vendor copies the top-level files of minagent/ and nothing else, and
gets a working agent: the tool loop, middleware at all three layers, both modes, a
session in memory."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "minagent"

# A program a vendor would write: no minagent.testing (a folder), its own scripted
# client instead.
PROGRAM = '''
import asyncio, sys
import minagent
from minagent import (Agent, BaseChatClient, ChatResponse, ChatResponseUpdate, Content, Message,
                      agent_middleware, chat_middleware, function_middleware, tool)

assert minagent.__file__.startswith(sys.argv[1]), minagent.__file__

class Scripted(BaseChatClient):
    """Asks for add(2, 3) when the last message is the user's, else answers with the tool's result."""
    async def _inner_get_response(self, *, messages, options, **kwargs):
        last = messages[-1]
        if last.role == "user":
            return ChatResponse([Message("assistant", [Content.from_function_call("c1", "add", '{"a": 2, "b": 3}')])])
        result = last.contents[0].result
        return ChatResponse([Message("assistant", [f"sum={result}"])])

    async def _inner_get_streaming_response(self, *, messages, options, **kwargs):
        response = await self._inner_get_response(messages=messages, options=options, **kwargs)
        for content in response.messages[0].contents:
            if content.type == "text":
                for piece in (content.text[:2], content.text[2:]):
                    yield ChatResponseUpdate([piece], "assistant")
            else:
                yield ChatResponseUpdate([content], "assistant")

@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b

order = []

@agent_middleware
async def outer(context, call_next):
    order.append("agent")
    await call_next()

@chat_middleware
async def model(context, call_next):
    order.append("chat")
    await call_next()

@function_middleware
async def calls(context, call_next):
    order.append("function")
    await call_next()

async def main():
    agent = Agent(Scripted(), "be brief", tools=[add], middleware=[outer, model, calls])
    session = agent.create_session()
    plain = await agent.run("2 + 3?", session=session)
    streamed = agent.run("again: 2 + 3?", stream=True, session=session)
    chunks = [u.text async for u in streamed]
    final = await streamed.get_final_response()
    history = session.state["in_memory"]["messages"]
    print(plain.text, final.text, "".join(chunks), len(history), ",".join(order))
    print(sorted(m for m in sys.modules if m.startswith("minagent.")))

asyncio.run(main())
'''


def run_vendored(tmp_path: Path, program: str) -> subprocess.CompletedProcess[str]:
    """Copy only minagent/*.py (a vendor's copy, PK-2) and run ``program`` against it
    with the standard library only (`-I -S`); the copy's parent is ``sys.argv[1]``."""
    return _run_isolated(_core_copy(tmp_path), program, tmp_path)


def test_the_top_level_files_alone_are_a_working_agent(tmp_path: Path) -> None:
    """PK-2: only minagent/*.py copied, run with the standard library only (`-I -S`):
    tool loop, agent/chat/function middleware, non-streaming and streaming, a session in
    memory; nothing of a folder is loaded."""
    done = run_vendored(tmp_path, PROGRAM)
    assert done.returncode == 0, done.stderr
    first, modules = done.stdout.splitlines()
    assert (
        first == "sum=5 sum=5 sum=5 8 agent,chat,function,chat,agent,chat,function,chat"
    )
    loaded = ast.literal_eval(modules)  # the module names the program printed
    assert loaded
    assert all(name.split(".")[1].startswith("_") for name in loaded)


# The folders the flow conformance kit needs beside a core-only copy (PK-2): the kit,
# its scripted clients, the command line and the provider support the kit's adapters
# import. No other folder is copied.
KIT_FOLDERS = ("conformance", "testing", "cli", "providers")


def _core_copy(tmp_path: Path, folders: tuple[str, ...] = ()) -> Path:
    """A copy of minagent/*.py (and the named folders) under ``tmp_path/vendor``."""
    copy = tmp_path / "vendor" / "minagent"
    copy.mkdir(parents=True)
    for path in PACKAGE.glob("*.py"):
        shutil.copy(path, copy / path.name)
    for folder in folders:
        shutil.copytree(
            PACKAGE / folder,
            copy / folder,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    return copy.parent


def _run_isolated(
    vendor: Path, code: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with only the standard library and the copy importable."""
    return subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, sys.argv[1]); exec({code!r})",
            str(vendor),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_a_core_only_copy_passes_the_flow_conformance_kit(tmp_path: Path) -> None:
    """PK-2, CF-5: a copy of the core with only the kit's folders beside it runs
    `python -m minagent conformance --adapter minagent` (both modes, every family):
    every rule holds, except structured output's, which are not applicable because
    the copy has no structured/ folder, and the report says so; nothing crashes."""
    vendor = _core_copy(tmp_path, KIT_FOLDERS)
    report = tmp_path / "report.json"
    code = (
        "from minagent.__main__ import main\n"
        f"sys.argv = ['minagent', 'conformance', '--adapter', 'minagent', "
        f"'--json', {str(report)!r}]\n"
        "sys.exit(main())\n"
    )
    done = _run_isolated(vendor, code, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    verdicts = {row["rule"]: row["verdict"] for row in data["rules"]}
    not_applicable = {rule for rule, verdict in verdicts.items() if verdict != "holds"}
    assert not_applicable == {rule for rule in verdicts if rule.startswith("SO-")}
    assert not_applicable
    assert all(verdicts[rule] == "not applicable" for rule in not_applicable)
    assert data["summary"]["differs"] == 0
    assert "structured/" in data["adapter"]["missing"]["structured"]
    assert set(data["adapter"]["features"]) >= {"approvals", "sessions", "inbox"}
    # both modes ran: the loop's rows are checked in each
    assert data["runs"] > 100


# Ordinary input a vendored core meets on its first bad day: a history with an orphan
# tool call (what a cancelled run leaves), a misspelt keyword, a stream its reader
# abandons, a session carried over runs. Nothing of a folder may be needed.
ORDINARY = """
import asyncio, sys
from minagent import Agent, BaseChatClient, ChatResponse, ChatResponseUpdate, Content, Message

class Echo(BaseChatClient):
    async def _inner_get_response(self, *, messages, options, **kwargs):
        return ChatResponse([Message("assistant", [f"seen {len(messages)}"])])

    async def _inner_get_streaming_response(self, *, messages, options, **kwargs):
        for piece in ("a", "b", "c"):
            yield ChatResponseUpdate([piece], "assistant")
            await asyncio.sleep(0)

async def main():
    agent = Agent(Echo())
    orphan = [
        Message("user", ["refund my order"]),
        Message("assistant", [Content.from_function_call("c1", "refund", "{}")]),
        Message("user", ["never mind"]),
    ]
    repaired = await agent.run(orphan)
    print("orphan:", repaired.text)
    try:
        Agent(Echo(), tols=[])
    except TypeError as exc:
        print("typo:", type(exc).__name__, "tols" in str(exc))
    try:
        await agent.run("hi", sesion=None)
    except TypeError as exc:
        print("run typo:", type(exc).__name__, "sesion" in str(exc))
    session = agent.create_session()
    stream = agent.run("hello", stream=True, session=session)
    async for update in stream:
        break
    await stream.aclose()
    me = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    print("cancelled:", len(left), session.state.get("in_memory", {}).get("messages", []))
    await agent.run("one", session=session)
    await agent.run("two", session=session)
    print("session:", [m.text for m in session.state["in_memory"]["messages"]])
    print(sorted(m for m in sys.modules if m.startswith("minagent.") and not m.split(".")[1].startswith("_")))

asyncio.run(main())
"""


# What a cancelled run leaves in a session: the model's call, and no result for it. The
# next run must send the call with a "not executed" result (LP-28, HI-3), in a copy of
# the core alone as in the whole package.
ORPHAN_PROGRAM = """
import asyncio, sys
import minagent
from minagent import Agent, BaseChatClient, ChatResponse, Content, Message

assert minagent.__file__.startswith(sys.argv[1]), minagent.__file__
sent = []

class Recording(BaseChatClient):
    async def _inner_get_response(self, *, messages, options, **kwargs):
        sent.append(list(messages))
        return ChatResponse([Message("assistant", ["done"])])

async def main():
    agent = Agent(Recording())
    session = agent.create_session()
    call = Content.from_function_call("c1", "add", '{"a": 2, "b": 3}')
    session.state["in_memory"] = {
        "messages": [Message("user", ["2 + 3?"]), Message("assistant", [call])]
    }
    response = await agent.run("and now?", session=session)
    roles = [m.role for m in sent[0]]
    answer = sent[0][2].contents[0]
    print(response.text, roles, answer.type, answer.call_id, answer.exception)
    print(sorted(m for m in sys.modules if m.startswith("minagent.")))

asyncio.run(main())
"""


def test_a_core_only_copy_handles_ordinary_input(tmp_path: Path) -> None:
    """PK-2, HI-3, AG-12, ST-7, SE-5: in a copy of minagent/*.py alone, a history with
    an orphan call is repaired and answered, a misspelt keyword of Agent() or run() is
    a plain TypeError naming it, an abandoned stream leaves no task and nothing stored,
    and a session carries its history across runs; no folder is loaded."""
    done = _run_isolated(_core_copy(tmp_path), ORDINARY, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "orphan: seen 4"
    assert lines[1] == "typo: TypeError True"
    assert lines[2] == "run typo: TypeError True"
    assert lines[3] == "cancelled: 0 []"
    assert lines[4] == "session: ['one', 'seen 1', 'two', 'seen 3']"
    assert lines[5] == "[]"


def test_the_project_is_formatted_at_ruffs_defaults() -> None:
    """PK-17: pyproject.toml sets no line length for the formatter, the gate runs
    `ruff format --check` on every Python folder of the project, and that check
    passes."""
    import tomllib

    ruff = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "ruff"
    ]
    assert "line-length" not in ruff
    assert "line-length" not in ruff.get("format", {})
    check = (ROOT / "tools" / "check.py").read_text(encoding="utf-8")
    assert '"format", [PY, "-m", "ruff", "format", "--check", *LINTED]' in check
    folders = ["minagent", "plugins", "tests", "tools", "benchmarks", "examples"]
    assert f"LINTED = {folders!r}".replace("'", '"') in check
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--quiet", *folders],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_core_size_is_reported_not_bounded() -> None:
    """PK-11: tools/core_size.py prints the core's statements, lines, docstring and
    comment lines, counted from the source; no test bounds them."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "core_size.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    header, core = done.stdout.splitlines()
    assert header.split()[:4] == ["part", "files", "statements", "lines"]
    counts = [int(cell.replace(",", "")) for cell in core.split(")")[1].split()]
    files, statements, lines, docstrings, comments, blanks = counts
    assert files == len(list(PACKAGE.glob("*.py")))
    assert lines == sum(
        len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")
    )
    assert 0 < docstrings + comments + blanks < lines
    assert 0 < statements < lines


def test_the_top_level_files_alone_repair_an_orphan_call(tmp_path: Path) -> None:
    """PK-2, LP-28, HI-3: in a copy of the core alone, a session whose history ends with
    a call and no result (a cancelled run) is sent with a "not executed" result for that
    call; no folder is loaded."""
    done = run_vendored(tmp_path, ORPHAN_PROGRAM)
    assert done.returncode == 0, done.stderr
    first, modules = done.stdout.splitlines()
    assert first == (
        "done ['user', 'assistant', 'tool', 'user'] function_result c1 not executed"
    )
    loaded = ast.literal_eval(modules)
    assert "minagent._history" in loaded
    assert all(name.split(".")[1].startswith("_") for name in loaded)


# A class registered to live in session state, written and read back (SE-2).
STATE_PROGRAM = """
import sys
import minagent
from minagent import AgentSession, register_state_type

assert minagent.__file__.startswith(sys.argv[1]), minagent.__file__

class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def to_dict(self):
        return {"x": self.x, "y": self.y}
    @classmethod
    def from_dict(cls, data):
        return cls(data["x"], data["y"])

register_state_type(Point, type_id="point")
session = AgentSession(session_id="s1", state={"where": {"at": Point(2, 3)}})
data = session.to_dict()
back = AgentSession.from_dict(data)
point = back.state["where"]["at"]
print(data["state"]["where"]["at"], type(point).__name__, point.x, point.y)
print(sorted(m for m in sys.modules if m.startswith("minagent.")))
"""


def test_the_top_level_files_alone_register_a_state_type(tmp_path: Path) -> None:
    """PK-2, SE-2: in a copy of the core alone, `register_state_type` lets a class live
    in session state: written as its dict plus its type id, read back as an instance; no
    folder is loaded."""
    done = run_vendored(tmp_path, STATE_PROGRAM)
    assert done.returncode == 0, done.stderr
    first, modules = done.stdout.splitlines()
    assert first == "{'x': 2, 'y': 3, 'type': 'point'} Point 2 3"
    loaded = ast.literal_eval(modules)
    assert all(name.split(".")[1].startswith("_") for name in loaded)


def test_every_module_opens_with_what_it_is_and_its_spec() -> None:
    """PK-11: every module of minagent/ opens with a docstring whose first paragraph
    names its spec file, and a module of the core that holds state states its rules and
    theory of operation."""
    import ast

    unnamed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if "spec/" not in doc.split("\n\n")[0]:
            unnamed.append(str(path.relative_to(PACKAGE)))
    assert unnamed == []
    stateful = [
        "_agents",
        "_calls",
        "_clients",
        "_loop",
        "_loop_table",
        "_middleware",
        "_observe",
        "_sessions",
    ]
    stateful += ["_stream", "_toolset", "_transcript", "_validate"]
    for stem in stateful:
        doc = (
            ast.get_docstring(
                ast.parse((PACKAGE / f"{stem}.py").read_text(encoding="utf-8"))
            )
            or ""
        )
        assert "\nRules\n-----\n1. " in doc, stem
        assert "Theory of operation" in doc or stem in ("_clients", "_compat"), stem
