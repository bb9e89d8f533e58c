"""PK-2, PK-11: a vendor copies the top-level files of minagent/ and nothing else, and
gets a working agent: the tool loop, middleware at all three layers, both modes, a
session in memory."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
    copy = tmp_path / "vendor" / "minagent"
    copy.mkdir(parents=True)
    for path in PACKAGE.glob("*.py"):
        shutil.copy(path, copy / path.name)
    return subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, sys.argv[1]); exec({program!r})",
            str(copy.parent),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


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


def test_the_core_is_small_and_every_module_is_short() -> None:
    """PK-11: the core (the top-level files) is at most 8,000 lines, and no module of
    minagent/ is over 600 lines."""
    core = sum(
        len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")
    )
    assert core <= 8000, core
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}


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
