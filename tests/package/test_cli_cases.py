"""The command line as users expect it: one test per case a new user met (spec/agent.md
AG-15, spec/mcp.md MCP-34)."""

from __future__ import annotations

import argparse
import io
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from minagent import ChatResponse, Content, Message
from minagent.cli import _sqlite_problem, main
from minagent.mcp.server import serve_command
from minagent.stores import SQLiteSchemaError
from minagent.testing import ScriptedChatClient

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONIOENCODING": "utf-8", **env}
    return subprocess.run(
        [sys.executable, "-m", "minagent", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single ``error:`` line a failure prints (and that no traceback came with
    it)."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--base-url", "127.0.0.1:9911"], {}),
        ([], {"OPENAI_BASE_URL": "127.0.0.1:9911"}),
    ],
    ids=["option", "variable"],
)
def test_a_bad_base_url_is_one_error_line(args: list[str], env: dict[str, str]) -> None:
    """AG-15: a base URL the client refuses (from --base-url or the provider's variable)
    is one `error:` line and status 2."""
    done = cli("run", "hi", "--provider", "openai", "--model", "m", *args, **env)
    assert done.returncode == 2
    assert (
        one_error_line(done)
        == "error: base_url must be an http(s) URL, got '127.0.0.1:9911'"
    )
    assert done.stdout == ""


def test_a_session_db_in_a_missing_folder_or_not_sqlite_is_one_error_line(
    tmp_path: Path,
) -> None:
    """AG-15: a --session-db whose folder does not exist, or a file that is not a SQLite
    database, is one `error:` line saying which, and status 2; the file is left as it
    was."""
    missing = tmp_path / "nowhere" / "cli.db"
    done = cli(
        "run",
        "hi",
        "--provider",
        "openai",
        "--model",
        "m",
        "--session-db",
        str(missing),
        "--session",
        "a",
    )
    assert done.returncode == 2
    assert (
        one_error_line(done)
        == f"error: --session-db {missing}: its folder {str(missing.parent)!r} does not exist"
    )
    foreign = tmp_path / "notes.txt"
    foreign.write_text("these are my notes, not a database\n" * 20)
    done = cli(
        "run",
        "hi",
        "--provider",
        "openai",
        "--model",
        "m",
        "--session-db",
        str(foreign),
        "--session",
        "a",
    )
    assert done.returncode == 2
    assert (
        one_error_line(done)
        == f"error: --session-db {foreign}: the file is not a SQLite database"
    )
    assert foreign.read_text() == "these are my notes, not a database\n" * 20


def test_session_options_go_together_without_a_rule_id() -> None:
    """AG-15, PK-15: --session without --session-db is a usage error that cites no
    rule."""
    done = cli("run", "hi", "--provider", "openai", "--model", "m", "--session", "a")
    assert done.returncode == 2
    assert one_error_line(done) == "error: --session and --session-db go together"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "json:dumps",
            "error: json:dumps is not an agent, and calling it with no arguments fails: ",
        ),
        ("nosuchmodule:agent", "error: cannot import module 'nosuchmodule': "),
        (
            "json",
            "error: expected module:attribute (e.g. myapp.agents:assistant), got 'json'",
        ),
        (
            "json:loads",
            "error: json:loads is not an agent, and calling it with no arguments fails: ",
        ),
    ],
)
def test_a_bad_mcp_serve_target_is_one_error_line(target: str, message: str) -> None:
    """MCP-34: a target that is not an agent (a function needing arguments included) is
    one `error:` line and status 2."""
    done = cli("mcp-serve", target)
    assert done.returncode == 2
    assert one_error_line(done).startswith(message)


def test_a_raising_factory_is_one_error_line(tmp_path: Path) -> None:
    """MCP-34: a zero-argument factory that raises is one `error:` line naming what it
    raised."""
    (tmp_path / "broken.py").write_text(
        "def make():\n    raise RuntimeError('no model configured')\n"
    )
    done = cli(
        "mcp-serve",
        "broken:make",
        cwd=tmp_path,
        PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    )
    assert done.returncode == 2
    assert (
        one_error_line(done)
        == "error: broken:make() raised RuntimeError: no model configured"
    )


@pytest.mark.parametrize(
    "address", ["8000", "localhost:", "host:port", "127.0.0.1:99999"]
)
def test_a_bad_http_address_is_one_error_line(address: str) -> None:
    """MCP-34: --http takes HOST:PORT; anything else is one `error:` line and status
    2."""
    done = cli("mcp-serve", "json:dumps", "--http", address)
    assert done.returncode == 2
    assert (
        one_error_line(done)
        == f"error: --http expects HOST:PORT (e.g. 127.0.0.1:8000), got {address!r}"
    )


def test_mcp_serve_over_http_says_where_it_listens(tmp_path: Path) -> None:
    """MCP-34, MCP-35: `mcp-serve --http 127.0.0.1:0` prints the URL it serves (with the
    port the system chose) on stderr once it listens, and an MCP request there is
    answered."""
    import json
    import urllib.request

    (tmp_path / "agents.py").write_text(
        "from minagent import Agent\nfrom minagent.testing import ScriptedChatClient\n"
        "assistant = Agent(ScriptedChatClient(['hi']), name='assistant', description='Says hi.')\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minagent",
            "mcp-serve",
            "agents:assistant",
            "--http",
            "127.0.0.1:0",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        match = re.fullmatch(
            r"serving 'assistant' over MCP Streamable HTTP at (http://127\.0\.0\.1:(\d+)/mcp)\n",
            line,
        )
        assert match is not None, line
        assert match.group(2) != "0"
        request = urllib.request.Request(
            match.group(1),
            data=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                }
            ).encode(),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
            assert b"assistant" in answer.read()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert process.returncode is not None


def test_mcp_serve_on_a_busy_address_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """MCP-34: an --http address that cannot be bound is one `error:` line naming it,
    status 2."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert (
            serve_command("tests.mcp.plain_agent:agent", http=f"127.0.0.1:{port}") == 2
        )
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot serve at 127.0.0.1:{port}: ")
    assert err.count("\n") == 1


def test_mcp_serve_of_a_builtin_without_signature_calls_it_and_refuses_the_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """MCP-34: a callable whose signature cannot be read is called with no arguments;
    what it returns is not an agent, so that is one `error:` line, status 2."""
    assert serve_command("builtins:dict") == 2
    assert (
        capsys.readouterr().err
        == "error: builtins:dict is dict, not an agent (or a factory returning one)\n"
    )


def _always_calls(messages: list[Message], options: dict[str, Any]) -> Any:
    """A model that keeps asking for a tool the agent does not have."""
    return ChatResponse(
        [
            Message(
                "assistant",
                [Content.from_function_call(f"c{len(messages)}", "nope", "{}")],
            )
        ]
    )


def test_a_run_that_stops_at_a_limit_says_so_and_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """AG-15: a run that ends at a limit of the tool loop prints the loop's text, then
    one `error:` line, and exits with status 3 (not 0)."""
    client = ScriptedChatClient([_always_calls] * 10)
    monkeypatch.setattr("minagent.cli.get_client", lambda name, **kwargs: client)
    out = io.StringIO()
    assert main(["run", "hi", "--provider", "fake", "--model", "m"], out=out) == 3
    assert (
        "Function invocation limit reached before a final answer could be produced."
        in out.getvalue()
    )
    err = capsys.readouterr().err
    assert (
        err.strip()
        == "error: the run stopped at a limit of the tool loop before the model answered"
    )


def test_base_url_api_key_and_system_reach_the_client_and_the_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AG-15: --base-url and --api-key are given to the provider's client, --system (or
    --instructions) becomes the agent's instructions; without them nothing is passed."""
    made: list[dict[str, Any]] = []
    clients: list[ScriptedChatClient] = []

    def get_client(name: str, **kwargs: Any) -> ScriptedChatClient:
        made.append(kwargs)
        clients.append(ScriptedChatClient(["hello"]))
        return clients[-1]

    monkeypatch.setattr("minagent.cli.get_client", get_client)
    args = [
        "run",
        "hi",
        "--provider",
        "p",
        "--model",
        "m",
        "--base-url",
        "http://h:1/v1",
        "--api-key",
        "sk-1",
    ]
    assert main([*args, "--system", "Be brief."], out=io.StringIO()) == 0
    assert (
        main(
            [
                "run",
                "hi",
                "--provider",
                "p",
                "--model",
                "m",
                "--instructions",
                "Be kind.",
            ],
            out=io.StringIO(),
        )
        == 0
    )
    assert made == [
        {"model": "m", "base_url": "http://h:1/v1", "api_key": "sk-1"},
        {"model": "m"},
    ]
    assert clients[0].requests[0].options["instructions"] == "Be brief."
    assert clients[1].requests[0].options["instructions"] == "Be kind."


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("parsed")
        self.parser = parser


def test_every_option_of_every_command_has_a_help_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AG-15, PK-15: every option and argument of every command has a --help text, and
    none cites a rule ID."""

    def capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Parsed) as info:
        main([], out=io.StringIO())
    parser = info.value.parser
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(commands) == 1
    parsers = {"": parser, **commands[0].choices}
    assert {"run", "demo", "mcp-serve", "about"} <= set(parsers)
    missing = []
    for name, command in parsers.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            if not action.help or re.search(r"\b[A-Z]{2,3}-\d+\b", action.help):
                missing.append(
                    f"{name or 'minagent'} {action.option_strings or action.dest}: {action.help!r}"
                )
    assert missing == []


def test_a_good_session_db_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AG-15: the checks leave a real session file working: two runs share one
    conversation."""
    client = ScriptedChatClient(["first", "second"])
    monkeypatch.setattr("minagent.cli.get_client", lambda name, **kwargs: client)
    db = tmp_path / "cli.db"
    for prompt in ("one", "two"):
        args = [
            "run",
            prompt,
            "--provider",
            "p",
            "--model",
            "m",
            "--session-db",
            str(db),
            "--session",
            "ada",
        ]
        assert main(args, out=io.StringIO()) == 0
    assert client.requests[1].texts[:2] == ["user: one", "assistant: first"]
    with sqlite3.connect(db) as connection:
        assert connection.execute("select count(*) from messages").fetchone()[0] == 4


def test_session_db_problems_in_a_users_words(tmp_path: Path) -> None:
    """AG-15: a --session-db that minagent cannot use is described without the path
    repeated, or with the exception's type and text when it is something else."""
    path = str(tmp_path / "s.db")
    schema = SQLiteSchemaError(f"{path}: the table 'messages' has an unexpected layout")
    assert (
        _sqlite_problem(path, schema) == "the table 'messages' has an unexpected layout"
    )
    assert _sqlite_problem(path, PermissionError("denied")) == (
        "cannot be used as minagent's session database (PermissionError: denied)"
    )


# --------------------------------------------------------------------------------------------
# Paths checked before the run, and Ctrl-C: real runs of the command against a provider
# registered the way a plugin registers one (an entry point of an installed
# distribution), whose model notes that it was called, streams a few words, then waits
# until the run is cancelled.

SLOW_MODEL = """
import asyncio
import os

from minagent import ChatResponseUpdate, Content
from minagent.testing import ScriptedChatClient


class Slow(ScriptedChatClient):
    async def _inner_get_streaming_response(self, *, messages, options, **kwargs):
        with open(os.environ["SLOW_MODEL_CALLED"], "a") as called:
            called.write("called\\n")
        yield ChatResponseUpdate([Content.from_text("first words")], "assistant")
        await asyncio.Event().wait()
        yield ChatResponseUpdate([Content.from_text("never")], "assistant")


def make(model):
    return Slow(model=model)
"""


@pytest.fixture
def slow_provider(tmp_path: Path) -> dict[str, str]:
    """The environment of a process where the provider ``slow`` is installed; the file
    ``SLOW_MODEL_CALLED`` names exists once its model was called."""
    site = tmp_path / "site"
    info = site / "slowmodel-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "slowmodel.py").write_text(SLOW_MODEL, encoding="utf-8")
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: slowmodel\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[minagent.clients]\nslow = slowmodel:make\n", encoding="utf-8"
    )
    paths = [str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "SLOW_MODEL_CALLED": str(tmp_path / "model-called"),
    }


def _unwritable() -> str:
    """A path where no file can be created, not even by root: sysfs refuses it."""
    path = Path("/sys/kernel/minagent-trace.md")
    try:
        path.open("a").close()
    except OSError:
        return str(path)
    path.unlink()  # pragma: no cover - a system where /sys takes files
    pytest.skip("no place refuses a new file here")  # pragma: no cover


@pytest.mark.parametrize("option", ["--trace", "--trace-json"])
@pytest.mark.parametrize(
    "case", ["a-folder", "a-missing-folder", "a-file-as-folder", "unwritable"]
)
def test_a_trace_path_that_cannot_be_written_is_found_before_the_model_is_called(
    tmp_path: Path, slow_provider: dict[str, str], option: str, case: str
) -> None:
    """AG-15: a --trace or --trace-json path that is a folder, whose folder does not
    exist, that lies under a file, or where no file can be created is one `error:` line
    and status 2, before the model is called; nothing is left behind."""
    (tmp_path / "notes.txt").write_text("mine\n")
    path, why = {
        "a-folder": (str(tmp_path), "it is a folder, not a file"),
        "a-missing-folder": (
            str(tmp_path / "nowhere" / "trace.md"),
            f"its folder {str(tmp_path / 'nowhere')!r} does not exist",
        ),
        "a-file-as-folder": (
            str(tmp_path / "notes.txt" / "trace.md"),
            f"{str(tmp_path / 'notes.txt')!r} is not a folder",
        ),
        "unwritable": (
            _unwritable(),
            "it cannot be written (Permission denied)",
        ),
    }[case]
    done = cli(
        "run", "hi", "--provider", "slow", "--model", "m", option, path, **slow_provider
    )
    assert done.returncode == 2, done.stderr
    assert one_error_line(done) == f"error: {option} {path}: {why}"
    assert done.stdout == ""
    assert not Path(slow_provider["SLOW_MODEL_CALLED"]).exists()
    assert (tmp_path / "notes.txt").read_text() == "mine\n"
    assert not (tmp_path / "nowhere").exists()


def test_a_trace_path_of_the_demo_is_checked_before_it_runs(tmp_path: Path) -> None:
    """AG-15: `demo --trace` at a folder is one `error:` line and status 2, and the
    demo does not run; a good path next to it still works."""
    done = cli(
        "demo", "--trace-json", str(tmp_path / "t.json"), "--trace", str(tmp_path)
    )
    assert done.returncode == 2
    assert (
        one_error_line(done) == f"error: --trace {tmp_path}: it is a folder, not a file"
    )
    assert done.stdout == ""
    assert not (tmp_path / "t.json").exists()


def test_a_trace_that_cannot_be_written_after_the_run_is_one_error_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """AG-15, OB-14: a trace file that cannot be written once the run is over (its
    folder went away while the model answered) is one `error:` line and status 2; the
    answer was printed."""
    folder = tmp_path / "traces"
    folder.mkdir()

    def answer_and_remove_the_folder(
        messages: list[Message], options: dict[str, Any]
    ) -> Any:
        folder.rmdir()
        return "the answer"

    client = ScriptedChatClient([answer_and_remove_the_folder])
    monkeypatch.setattr("minagent.cli.get_client", lambda name, **kwargs: client)
    out = io.StringIO()
    trace = folder / "run.md"
    status = main(
        ["run", "hi", "--provider", "p", "--model", "m", "--trace", str(trace)], out=out
    )
    assert status == 2
    assert out.getvalue() == "the answer\n"
    assert capsys.readouterr().err == (
        f"error: --trace {trace}: it cannot be written (No such file or directory)\n"
    )


def test_ctrl_c_mid_stream_is_one_line_and_status_130(
    tmp_path: Path, slow_provider: dict[str, str]
) -> None:
    """AG-15, OB-14: SIGINT while `run` streams an answer ends the command with the line
    `error: interrupted` and status 130, no traceback; the trace is still written."""
    trace = tmp_path / "run.md"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minagent",
            "run",
            "hi",
            "--provider",
            "slow",
            "--model",
            "m",
            "--trace",
            str(trace),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **slow_provider},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        # the model has answered its first words: the run is mid-stream
        assert process.stdout.read(len("first words")) == "first words"
        process.send_signal(signal.SIGINT)
        rest, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:  # pragma: no cover - only when the test failed
            process.kill()
            process.communicate(timeout=60)
    done = subprocess.CompletedProcess(process.args, process.returncode, rest, err)
    assert done.returncode == 130, err
    assert one_error_line(done) == "error: interrupted"
    assert rest == ""
    assert trace.read_text(encoding="utf-8").startswith("```mermaid\n")
