"""The dev UI's server side: the page's files, their headers, the read-only JSON
endpoints, ``serve --ui`` and the page's origins; the page's pure logic (``state.js``)
under node's own test runner; the page's Mermaid against the run trace's (spec/hosting.md
HS-210 .. HS-215, HS-220, HS-225, HS-228 .. HS-231)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent, AgentSession
from minagent.cli.serve import page_origins
from minagent.hosting import HostingApp
from minagent.hosting.devui import (
    CONTENT_SECURITY_POLICY,
    FILES,
    PUBLIC_PATHS,
    UI_FOLDER,
)
from minagent.tracing.runtrace import render_mermaid
from tests._support.modes import run

from ._agui import served
from ._served import EchoModel, approving, echo, served_process

HERE = Path(__file__).resolve().parent


async def call(
    app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request straight into the ASGI application: status, headers, body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "headers": headers or [],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    start = sent[0]
    head = {k.decode(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], head, body


def ui_app() -> HostingApp:
    return HostingApp([echo(), approving()], ui=True)


async def test_the_ui_is_off_unless_asked_for() -> None:
    """HS-210: without ``ui=True`` the page and its endpoints are no route (404); with
    it, another method than GET is a 405 in OpenAI's error shape."""
    plain = HostingApp([echo()])
    for path in ("/", "/ui/index.html", "/ui/app.js", "/ui/api/agents"):
        status, _, body = await call(plain, "GET", path)
        assert status == 404, path
        assert json.loads(body)["error"]["code"] == "not_found"
    app = ui_app()
    for method in ("POST", "DELETE", "PUT"):
        status, _, body = await call(app, method, "/ui/app.js")
        assert status == 405
        assert json.loads(body)["error"]["code"] == "method_not_allowed"
    status, _, _ = await call(app, "POST", "/")
    assert status == 405


async def test_files_are_served_with_their_types_and_the_policy() -> None:
    """HS-211, HS-212: ``/`` is index.html; each file is the package's own bytes with
    its content type and length, and every answer (JSON included) carries the content
    security policy and the other security headers."""
    app = ui_app()
    paths = {"/": "index.html", **{f"/ui/{name}": name for name in FILES}}
    for path, name in paths.items():
        status, head, body = await call(app, "GET", path)
        assert status == 200, path
        assert body == (UI_FOLDER / name).read_bytes()
        assert head["content-length"] == str(len(body))
        assert head["content-type"] == FILES[name].decode()
        assert head["content-security-policy"] == CONTENT_SECURITY_POLICY
    expected_types = {
        "index.html": "text/html; charset=utf-8",
        "app.css": "text/css; charset=utf-8",
        "app.js": "text/javascript; charset=utf-8",
        "state.js": "text/javascript; charset=utf-8",
        "clienttools.js": "text/javascript; charset=utf-8",
        "flow.js": "text/javascript; charset=utf-8",
        "auth.js": "text/javascript; charset=utf-8",
        "sessions.js": "text/javascript; charset=utf-8",
        "mermaid.js": "text/javascript; charset=utf-8",
    }
    assert {k: v.decode() for k, v in FILES.items()} == expected_types
    for path in (
        "/",
        "/ui/api/agents",
        "/ui/api/threads/echo/t",
        "/ui/api/threads/echo",
    ):
        _, head, _ = await call(app, "GET", path)
        assert head["content-security-policy"] == (
            "default-src 'none'; script-src 'self'; style-src 'self'; "
            "img-src 'self'; connect-src 'self'; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'"
        )
        assert head["x-content-type-options"] == "nosniff"
        assert head["referrer-policy"] == "no-referrer"
        assert head["cache-control"] == "no-cache"


@settings(max_examples=150, deadline=None)
@given(
    name=st.one_of(
        st.text(min_size=0, max_size=30),
        st.sampled_from(
            [
                "../app.py",
                "..%2Fapp.py",
                "./index.html",
                "/index.html",
                "index.html/",
                "APP.JS",
                "api",
                "api/",
                "api/agents/",
                "api/threads/echo/",
                "api/threads//t",
                "api/threads/echo/a/b",
                "../devui.py",
                "__init__.py",
            ]
        ),
    )
)
def test_any_other_name_is_not_found(name: str) -> None:
    """HS-211: only the fixed files and the three endpoints answer under ``/ui/``;
    every other name (traversal, a folder, another case) is a 404."""
    if (
        name in FILES
        or name == "api/agents"
        or re.fullmatch(r"api/threads/[^/]+(?:/[^/]+)?", name)
    ):
        return
    status, _, body = asyncio.run(call(ui_app(), "GET", "/ui/" + name))
    assert status == 404, name
    assert json.loads(body)["error"]["code"] == "not_found"


async def test_agents_are_listed_with_their_tools() -> None:
    """HS-213: each hosted agent in order, its description, its tools with their
    schemas and whether they need approval, and its middleware's names by layer."""
    described = Agent(EchoModel(), name="described", description="says it back")
    app = HostingApp([approving(), described], ui=True)
    status, _, body = await call(app, "GET", "/ui/api/agents")
    assert status == 200
    agents = json.loads(body)["agents"]
    assert [a["name"] for a in agents] == ["approving", "described"]
    assert agents[1] == {
        "name": "described",
        "description": "says it back",
        "tools": [],
        "middleware": {"agent": [], "chat": [], "function": []},
    }
    # the agent's middleware by layer: a class by its class name, a function by its own
    assert agents[0]["middleware"] == {
        "agent": ["Timing"],
        "chat": [],
        "function": ["audit_calls"],
    }
    (tool,) = agents[0]["tools"]
    assert agents[0]["description"] == ""
    assert tool["name"] == "delete_file"
    assert tool["approvalRequired"] is True
    assert tool["description"].startswith("Delete a file")
    assert tool["parameters"]["properties"]["path"]["type"] == "string"
    assert tool["parameters"]["required"] == ["path"]


def _events(data: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in data.decode().split("\n")
        if line.startswith("data: ")
    ]


async def test_a_thread_history_and_its_open_approval() -> None:
    """HS-214: a thread's stored messages as AG-UI messages and its open interrupt;
    the answered approval's result and the rejection's error afterwards; an unknown
    thread is empty, an unknown agent a 404; reading saves nothing."""
    app = ui_app()
    async with served(app) as http:
        first = await http.post(
            "/agui/approving",
            json={
                "threadId": "th-1",
                "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "a.txt"}],
            },
        )
        outcome = _events(first.content)[-1]["outcome"]
        assert outcome["type"] == "interrupt"
        (interrupt,) = outcome["interrupts"]
        thread = (await http.get("/ui/api/threads/approving/th-1")).json()
        assert thread["agent"] == "approving"
        assert thread["threadId"] == "th-1"
        assert thread["interrupts"] == [
            {
                "id": interrupt["id"],
                "toolCallId": "del-1",
                "name": "delete_file",
                "arguments": '{"path": "a.txt"}',
            }
        ]
        user, call_message = thread["messages"]
        assert user == {"id": "u1", "role": "user", "content": "a.txt"}
        assert call_message["role"] == "assistant"
        assert call_message["toolCalls"] == [
            {
                "id": "del-1",
                "type": "function",
                "function": {"name": "delete_file", "arguments": '{"path": "a.txt"}'},
            }
        ]
        # reject it: the rejection is the call's result, with an error
        await http.post(
            "/agui/approving",
            json={
                "threadId": "th-1",
                "runId": "r2",
                "messages": [],
                "resume": [
                    {
                        "interruptId": interrupt["id"],
                        "status": "resolved",
                        "payload": {"approved": False},
                    }
                ],
            },
        )
        thread = (await http.get("/ui/api/threads/approving/th-1")).json()
        assert thread["interrupts"] == []
        tool_messages = [m for m in thread["messages"] if m["role"] == "tool"]
        assert [m["toolCallId"] for m in tool_messages] == ["del-1"]
        assert "rejected" in tool_messages[0]["content"]
        assert tool_messages[0]["error"]
        ids = [m["id"] for m in thread["messages"]]
        assert len(set(ids)) == len(ids)
        again = (await http.get("/ui/api/threads/approving/th-1")).json()
        assert again == thread
        empty = await http.get("/ui/api/threads/approving/never-seen")
        assert empty.json() == {
            "agent": "approving",
            "threadId": "never-seen",
            "messages": [],
            "interrupts": [],
        }
        assert await app.conversations.get("approving", "never-seen") is None
        missing = await http.get("/ui/api/threads/nobody/th-1")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"


async def test_history_of_a_run_made_in_either_mode(stream: bool) -> None:
    """HS-214: the history shown is what the run stored, in either mode: the user's
    text, the call with its arguments, the result as JSON text, the answer."""
    app = HostingApp([approving()], ui=True)
    agent = app.agents["approving"]
    async with app.conversations.session("approving", "t") as session:
        assert isinstance(session, AgentSession)
        first = await run(agent, "b.txt", stream=stream, session=session)
        (request,) = first.user_input_requests
        answer = request.to_function_approval_response(True)
        from minagent import Message

        await run(agent, Message("user", [answer]), stream=stream, session=session)
    status, _, body = await call(app, "GET", "/ui/api/threads/approving/t")
    assert status == 200
    messages = json.loads(body)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["content"] == "b.txt"
    assert messages[1]["toolCalls"][0]["function"]["name"] == "delete_file"
    assert messages[2] == {
        "id": messages[2]["id"],
        "role": "tool",
        "toolCallId": "del-1",
        "content": "deleted b.txt",
    }
    assert messages[3]["content"] == "result: deleted b.txt"


def _prompt(thread: str, run_id: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run_id,
        "messages": [{"id": f"m-{run_id}", "role": "user", "content": text}],
    }


class _NoListing:
    """A session store with get, set and delete only (SE-11), no ``list_ids``."""

    def __init__(self) -> None:
        self.sessions: dict[str, AgentSession] = {}

    async def get(self, session_id: str) -> AgentSession | None:
        return self.sessions.get(session_id)

    async def set(self, session_id: str, session: AgentSession) -> None:
        self.sessions[session_id] = session

    async def delete(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)


async def test_the_agents_threads_from_the_store() -> None:
    """HS-228: the agent's stored threads, the last saved first, titled by the first
    prompt (one line, at most 80 characters); another agent's threads, also one whose
    name extends this one's with "/", are not listed; a thread made by any client (the
    API here, not the page) is listed; an unknown agent is a 404; reading saves
    nothing."""
    longer = Agent(EchoModel(), name="echo/x")
    app = HostingApp([echo(), approving(), longer], ui=True)
    async with served(app) as http:
        await http.post("/agui/echo", json=_prompt("t-1", "r1", "first   prompt\nhere"))
        await http.post("/agui/echo", json=_prompt("t-2", "r2", "x" * 100))
        await http.post("/agui/approving", json=_prompt("t-3", "r3", "a.txt"))
        await http.post("/agui/echo%2Fx", json=_prompt("y", "r4", "theirs"))
        await http.post("/agui/echo", json=_prompt("t-1", "r5", "second"))
        listed = (await http.get("/ui/api/threads/echo")).json()
        assert listed == {
            "agent": "echo",
            "listed": True,
            "threads": [
                {"threadId": "t-1", "title": "first prompt here"},
                {"threadId": "t-2", "title": "x" * 80},
            ],
        }
        theirs = (await http.get("/ui/api/threads/approving")).json()
        assert [t["threadId"] for t in theirs["threads"]] == ["t-3"]
        missing = await http.get("/ui/api/threads/nobody")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"
        keys = await app.conversations.store.list_ids()  # type: ignore[attr-defined]
        assert sorted(keys) == ["approving/t-3", "echo/t-1", "echo/t-2", "echo/x/y"]


async def test_a_store_that_cannot_list() -> None:
    """HS-228: a store without ``list_ids`` answers ``"listed": false`` and no
    threads."""
    app = HostingApp([echo()], ui=True, store=_NoListing())
    async with served(app) as http:
        await http.post("/agui/echo", json=_prompt("t-1", "r1", "hello"))
        answer = (await http.get("/ui/api/threads/echo")).json()
    assert answer == {"agent": "echo", "listed": False, "threads": []}


# HS-229: folds AG-UI runs with state.js and draws them with mermaid.js; reads JSON
# from stdin: {"runs": [{"agent": {...}, "events": [...]}], "drawings": [[event, ...]]}
_NODE_MERMAID = """
import { readFileSync } from "node:fs";
const ui = process.argv[1];
const state = await import(ui + "/state.js");
const mermaid = await import(ui + "/mermaid.js");
const input = JSON.parse(readFileSync(0, "utf8"));
const runs = input.runs.map(({ agent, events }) => {
  const view = state.initialState();
  let now = 1000;
  for (const event of events) state.apply(view, event, (now += 7.3));
  return view.runs.map((run) => {
    const trace = mermaid.traceEvents(run, agent);
    return { events: trace, text: mermaid.renderMermaid(trace) };
  });
});
const drawings = input.drawings.map((events) => mermaid.renderMermaid(events));
process.stdout.write(JSON.stringify({ runs, drawings }));
"""


def _node_mermaid(
    runs: list[dict[str, Any]], drawings: list[list[dict[str, Any]]]
) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    result = subprocess.run(
        [node, "--input-type=module", "-e", _NODE_MERMAID, UI_FOLDER.as_uri()],
        input=json.dumps({"runs": runs, "drawings": drawings}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


async def test_the_pages_mermaid_is_the_run_traces() -> None:
    """HS-229: runs made over AG-UI (the demo's two tool calls; an approval asked, then
    rejected), folded by state.js and turned into run-trace events by mermaid.js, are
    drawn exactly as ``render_mermaid`` draws the same events, with the steps mapped as
    the rule says."""
    from minagent.cli import get_weather, scripted_model, to_fahrenheit
    from minagent.cli.serve import demo_agent

    weather = demo_agent(scripted_model, [get_weather, to_fahrenheit])
    app = HostingApp([weather, approving()], ui=True)
    async with served(app) as http:
        agents = {
            a["name"]: a for a in (await http.get("/ui/api/agents")).json()["agents"]
        }
        demo = await http.post("/agui/WeatherBot", json=_prompt("w", "r1", "Paris?"))
        asked = await http.post("/agui/approving", json=_prompt("a", "r2", "a.txt"))
        (interrupt,) = _events(asked.content)[-1]["outcome"]["interrupts"]
        rejected = await http.post(
            "/agui/approving",
            json={
                "threadId": "a",
                "runId": "r3",
                "messages": [],
                "resume": [
                    {
                        "interruptId": interrupt["id"],
                        "status": "resolved",
                        "payload": {"approved": False},
                    }
                ],
            },
        )
    runs = [
        {"agent": agents["WeatherBot"], "events": _events(demo.content)},
        {
            "agent": agents["approving"],
            "events": _events(asked.content) + _events(rejected.content),
        },
    ]
    (weather_runs, approving_runs) = _node_mermaid(runs, [])["runs"]
    for drawn in weather_runs + approving_runs:
        assert drawn["text"] == render_mermaid(drawn["events"])
    (weather_run,) = weather_runs
    kinds = [e["kind"] for e in weather_run["events"]]
    assert kinds == [
        "run_start",
        "agent_in",
        "model_call",
        "model_end",
        "tool_start",
        "tool_end",
        "model_call",
        "model_end",
        "tool_start",
        "tool_end",
        "model_call",
        "model_end",
        "agent_out",
        "run_end",
    ]
    text = weather_run["text"]
    assert "Caller->>AM: run() of WeatherBot" in text
    assert "A->>FM: get_weather [" in text
    assert re.search(r"AM-->>Caller: AgentResponse \([\d.]+ m?s\)\n$", text)
    first, second = approving_runs
    assert "Note over FM: function middleware: audit_calls" in first["text"]
    assert first["events"][-1]["kind"] == "run_end"
    assert [e["kind"] for e in second["events"]][:2] == ["run_start", "agent_in"]


_TEXT = st.text(
    alphabet=st.characters(exclude_categories=["Cs"]), max_size=12
) | st.sampled_from(["", " a;b ", "x#<y>%", "\x1c\x85\u2003z\ufeff", "é" * 130])
# times whose durations since 0 are exact ties of the rounding (12.5 ms, 0.25 ms, 1.125 s,
# 512.5 ms: Python rounds them to the even digit)
_TIES = st.sampled_from([0.0, 0.0, 0.0125, 0.00025, 1.125, 0.5125])
_TIME = (
    st.none() | _TIES | st.floats(0, 3) | st.integers(0, 24000).map(lambda k: k / 8000)
)
_EVENT = st.one_of(
    st.fixed_dictionaries({"kind": st.just("run_start")}, optional={"agent": _TEXT}),
    st.fixed_dictionaries(
        {"kind": st.just("agent_in"), "stream": st.booleans()},
        optional={
            "middleware": st.dictionaries(
                st.sampled_from(["agent", "chat", "function"]),
                st.lists(_TEXT, max_size=2),
            )
        },
    ),
    st.fixed_dictionaries({"kind": st.just("agent_out")}, optional={"result": _TEXT}),
    st.fixed_dictionaries(
        {"kind": st.just("model_call"), "number": st.integers(1, 9)},
        optional={"tool_choice": _TEXT, "last": st.booleans()},
    ),
    st.fixed_dictionaries({"kind": st.just("model_end")}),
    st.fixed_dictionaries(
        {"kind": st.just("tool_start"), "call_id": st.sampled_from(["c1", "c2"])},
        optional={"tool": _TEXT},
    ),
    st.fixed_dictionaries(
        {"kind": st.just("tool_end"), "call_id": st.sampled_from(["c1", "c2"])},
        optional={"error": _TEXT},
    ),
    st.fixed_dictionaries(
        {"kind": st.just("run_end")},
        optional={
            "error": _TEXT,
            "input_tokens": st.integers(0, 10**6),
            "output_tokens": st.integers(0, 10**6),
        },
    ),
)


def _timed(event: dict[str, Any], t: float | None) -> dict[str, Any]:
    return event if t is None else {**event, "t": t}


@settings(max_examples=8, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(_EVENT, _TIME).map(lambda p: _timed(*p)), max_size=14),
        min_size=20,
        max_size=40,
    )
)
def test_mermaid_js_draws_as_render_mermaid(
    drawings: list[list[dict[str, Any]]],
) -> None:
    """HS-229, OB-13: for any sequence of the events the page makes (in any order, with
    or without times, any text), mermaid.js's text is render_mermaid's, character for
    character: labels cleaned and cut alike, durations rounded alike (ties included)."""
    drawn = _node_mermaid([], drawings)["drawings"]
    for events, text in zip(drawings, drawn, strict=True):
        assert text == render_mermaid(events), events


def test_the_files_ship_in_the_wheel(tmp_path: Path) -> None:
    """HS-211: the page's files are package data: a wheel built from the sources holds
    each of them, byte for byte."""
    root = HERE.parents[1]
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, source / name)
    shutil.copytree(
        root / "minagent",
        source / "minagent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps"]
    command += ["--no-build-isolation", "-w", str(tmp_path / "dist"), str(source)]
    built = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for name in FILES:
            data = archive.read(f"minagent/hosting/ui/{name}")
            assert data == (UI_FOLDER / name).read_bytes(), name


def test_the_files_are_small_and_name_no_other_origin() -> None:
    """HS-215: plain files under 100 KB in all; no URL of another origin (a scheme or
    protocol-relative) anywhere in them."""
    names = sorted(p.name for p in UI_FOLDER.iterdir())
    assert names == sorted(FILES)
    assert sum((UI_FOLDER / n).stat().st_size for n in names) < 100_000
    outside = re.compile(r"(?i)(?:https?:|wss?:|[\"'(=]\s*//)")
    for name in names:
        text = (UI_FOLDER / name).read_text()
        assert not outside.search(text), (name, outside.search(text))
        assert "@import" not in text


def test_state_logic_under_node() -> None:
    """HS-220, HS-225: ``state.js`` folded over event sequences, run by node's own test
    runner (``tests/hosting/devui_state.test.mjs``)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    result = subprocess.run(
        [node, "--test", str(HERE / "devui_state.test.mjs")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"# pass [1-9]", result.stdout), result.stdout
    assert "# fail 0" in result.stdout


def test_sessions_token_and_mermaid_logic_under_node() -> None:
    """HS-227, HS-229, HS-230: ``sessions.js`` (the list: the store's or the browser's),
    ``auth.js`` (the header) and ``mermaid.js`` (a run's steps as run-trace events and
    their drawing) under node's own test runner
    (``tests/hosting/devui_modules.test.mjs``)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    result = subprocess.run(
        [node, "--test", str(HERE / "devui_modules.test.mjs")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"# pass [1-9]", result.stdout), result.stdout
    assert "# fail 0" in result.stdout


def test_page_origins() -> None:
    """HS-231: the page's origins: the bound address, and on loopback each loopback
    name of it."""
    assert page_origins("127.0.0.1", 8123) == {
        "http://127.0.0.1:8123",
        "http://localhost:8123",
        "http://[::1]:8123",
    }
    assert page_origins("::1", 9) == {
        "http://[::1]:9",
        "http://127.0.0.1:9",
        "http://localhost:9",
    }
    assert page_origins("10.1.2.3", 80) == {"http://10.1.2.3:80"}


def test_serve_ui_and_the_page_origins() -> None:
    """HS-230, HS-231, HS-239: ``--demo`` serves the UI and names it first in the
    banner; the page's own origins may POST, another origin is refused; without
    ``--ui`` or ``--demo`` there is no page; with a token (``--demo`` or ``--ui``) the
    page's files are served without it and every API request needs it; the token is in
    neither the banner nor the log."""
    with served_process("--demo") as served_demo:
        lines = served_demo.banner.splitlines()
        assert re.fullmatch(r"  Dev UI\s+GET  http://127\.0\.0\.1:\d+/", lines[1])
        base = served_demo.base
        assert httpx.get(base + "/").status_code == 200
        body = {
            "threadId": "o",
            "runId": "r",
            "messages": [{"id": "m", "role": "user", "content": "hi"}],
        }
        for host in ("127.0.0.1", "localhost"):
            origin = f"http://{host}:{served_demo.port}"
            answer = httpx.post(
                base + "/agui/WeatherBot",
                json=body | {"runId": host},
                headers={"origin": origin},
            )
            assert answer.status_code == 200, answer.text
            assert '"RUN_FINISHED"' in answer.text
        refused = httpx.post(
            base + "/agui/WeatherBot",
            json=body,
            headers={"origin": f"http://127.0.0.1:{served_demo.port + 1}"},
        )
        assert refused.status_code == 403
    with served_process("tests.hosting._served:echo") as plain:
        assert "Dev UI" not in plain.banner
        assert httpx.get(plain.base + "/").status_code == 404
    with served_process("tests.hosting._served:echo", "--ui") as with_ui:
        assert "Dev UI" in with_ui.banner
        assert httpx.get(with_ui.base + "/ui/app.js").status_code == 200
    with served_process("--demo", "--token", "tok-1") as tokened:
        # HS-230: --demo with a token serves the page; its files need no token, every
        # API and AG-UI request does
        assert "Dev UI" in tokened.banner
        for path in sorted(PUBLIC_PATHS):
            assert httpx.get(tokened.base + path).status_code == 200, path
        agui = tokened.base + "/agui/WeatherBot"
        for refused_path in (
            "/ui/api/agents",
            "/ui/api/threads/WeatherBot",
            "/ui/x.js",
        ):
            assert httpx.get(tokened.base + refused_path).status_code == 401
        assert httpx.post(agui, json=body).status_code == 401
        assert httpx.head(tokened.base + "/ui/api/agents").status_code == 401
        bearer = {"authorization": "Bearer tok-1"}
        agents = httpx.get(tokened.base + "/ui/api/agents", headers=bearer)
        assert agents.status_code == 200
        ran = httpx.post(agui, json=body, headers=bearer)
        assert '"RUN_FINISHED"' in ran.text
        assert "tok-1" not in tokened.banner
        status, log = tokened.stop()
        assert status == 0
        assert "GET /ui/api/agents 401" in log
        assert "tok-1" not in log
    with served_process(
        "tests.hosting._served:echo", "--ui", env={"MINAGENT_TOKEN": "tok-2"}
    ) as with_token:
        assert "Dev UI" in with_token.banner
        assert httpx.get(with_token.base + "/").status_code == 200
        assert httpx.get(with_token.base + "/ui/api/agents").status_code == 401
