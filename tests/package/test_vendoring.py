"""PK-2, PK-11: a vendor copies the top-level files of minagent/ and nothing else, and
gets a working agent: the tool loop, middleware at all three layers, both modes, a
session in memory."""

from __future__ import annotations

import ast
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


def test_the_top_level_files_alone_are_a_working_agent(tmp_path: Path) -> None:
    """PK-2: only minagent/*.py copied, run with the standard library only (`-I -S`):
    tool loop, agent/chat/function middleware, non-streaming and streaming, a session in
    memory; nothing of a folder is loaded."""
    copy = tmp_path / "vendor" / "minagent"
    copy.mkdir(parents=True)
    for path in PACKAGE.glob("*.py"):
        shutil.copy(path, copy / path.name)
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, sys.argv[1]); exec({PROGRAM!r})",
            str(copy.parent),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    first, modules = done.stdout.splitlines()
    assert (
        first == "sum=5 sum=5 sum=5 8 agent,chat,function,chat,agent,chat,function,chat"
    )
    loaded = ast.literal_eval(modules)  # the module names the program printed
    assert loaded
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
        "_run",
    ]
    stateful += ["_sessions", "_stream", "_toolset", "_transcript"]
    for stem in stateful:
        doc = (
            ast.get_docstring(
                ast.parse((PACKAGE / f"{stem}.py").read_text(encoding="utf-8"))
            )
            or ""
        )
        assert "\nRules\n-----\n1. " in doc, stem
        assert "Theory of operation" in doc or stem in ("_clients", "_compat"), stem
