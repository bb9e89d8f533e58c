"""PK-19: a provider plugin vendored beside a copy of the core, as the README's
"Vendoring" section says: its commands and program run as written, each plugin imports
with exactly the folders the README lists, and a copy without one of them is an
ImportError that names the folder to copy.

Every vendored tree is built in ``tmp_path`` (``app/myapp/_vendor/minagent`` and the
plugin's package beside it) and used by a real subprocess run with ``python -S`` and an
environment whose only path is the app's folder: no site-packages, so neither the
clone's editable install nor aiohttp (``minagent_http``'s test adds aiohttp's folder
alone, whose ``.pth`` files ``-S`` leaves unread).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import minagent

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "minagent"


def _section() -> str:
    """The README's "Vendoring" section, up to the next section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"\n## Vendoring\n(.*?)\n## ", readme, re.S)
    assert match is not None, "the README has no Vendoring section"
    return match.group(1)


def _listed() -> dict[str, tuple[str, ...]]:
    """The README's table: each plugin package and the minagent folders it needs."""
    rows = re.findall(r"^\| `(minagent_\w+)` \| (.*?) \|$", _section(), re.M)
    assert rows
    return {plugin: tuple(re.findall(r"`(\w+)/`", folders)) for plugin, folders in rows}


def _plugin_dir(plugin: str) -> Path:
    """The source of a plugin package (``minagent_openai`` → plugins/openai/...)."""
    (found,) = ROOT.glob(f"plugins/*/{plugin}")
    return found


# the provider plugins: the packages with a `_minagent` seam that finds a vendored core
SEAMED = sorted(p.parent.name for p in ROOT.glob("plugins/*/minagent_*/_minagent.py"))
LISTED = _listed()
# aiohttp's own folder, for minagent_http (the rest of site-packages stays unread)
AIOHTTP_DIR = str(Path(str(aiohttp.__file__)).parents[1])


def _tree(app: Path, plugin: str, folders: tuple[str, ...]) -> Path:
    """``app/myapp/_vendor/`` with the core's top-level files, ``folders`` of minagent
    and the plugin's package; returns ``app``."""
    vendor = app / "myapp" / "_vendor"
    core = vendor / "minagent"
    core.mkdir(parents=True)
    (app / "myapp" / "__init__.py").write_text("", encoding="utf-8")
    (vendor / "__init__.py").write_text("", encoding="utf-8")
    ignore = shutil.ignore_patterns("__pycache__")
    for path in PACKAGE.glob("*.py"):
        shutil.copy(path, core / path.name)
    for folder in folders:
        shutil.copytree(PACKAGE / folder, core / folder, ignore=ignore)
    shutil.copytree(_plugin_dir(plugin), vendor / plugin, ignore=ignore)
    return app


# Printed after a program: every loaded module of minagent or a plugin with its file, so
# that a test sees which folders were loaded and that nothing came from outside the tree.
REPORT = """
import json as _json, sys as _sys
print(_json.dumps({name: getattr(module, "__file__", None)
                   for name, module in list(_sys.modules.items())
                   if "minagent" in name}))
"""


def _run(
    app: Path, code: str, *, extra_path: tuple[str, ...] = (), **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``python -S`` in ``app``, whose folder is the only path."""
    return subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=app,
        env={"PYTHONPATH": os.pathsep.join([str(app), *extra_path]), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _loaded(done: subprocess.CompletedProcess[str], app: Path) -> set[str]:
    """The folders of the vendored minagent the program loaded (from REPORT's line),
    after checking that every module of minagent or a plugin came from the tree."""
    modules: dict[str, str | None] = json.loads(done.stdout.splitlines()[-1])
    assert modules
    for name, file in modules.items():
        assert name.startswith("myapp._vendor."), name
        assert file is not None, name
        assert Path(file).is_relative_to(app), (name, file)
    return {
        name.split(".")[3]
        for name in modules
        if name.startswith("myapp._vendor.minagent.")
        and not name.split(".")[3].startswith("_")
    }


# -- the README's commands and program ------------------------------------------------------


class _Server(ThreadingHTTPServer):
    """A loopback Chat Completions server: "Hello." as a JSON body, or streamed as SSE
    in two pieces; it keeps each request's path, authorization and body."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, self.headers["Authorization"], body))
        head = {"id": "chatcmpl-1", "created": 1, "model": "gpt-4o-mini"}
        if body.get("stream"):
            chunks: list[dict[str, Any]] = [
                {
                    "delta": {"role": "assistant", "content": "Hel"},
                    "finish_reason": None,
                },
                {"delta": {"content": "lo."}, "finish_reason": None},
                {"delta": {}, "finish_reason": "stop"},
            ]
            events = [
                {
                    **head,
                    "object": "chat.completion.chunk",
                    "choices": [chunk | {"index": 0}],
                }
                for chunk in chunks
            ]
            data = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
            payload, kind = (data + "data: [DONE]\n\n").encode(), "text/event-stream"
        else:
            message = {"role": "assistant", "content": "Hello."}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            answer = {**head, "object": "chat.completion", "choices": [choice]}
            payload, kind = json.dumps(answer).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[_Server]:
    """The loopback server, served from a thread for the length of a test."""
    serving = _Server()
    thread = threading.Thread(target=serving.serve_forever)
    thread.start()
    try:
        yield serving
    finally:
        serving.shutdown()
        serving.server_close()
        thread.join()


# The README's program, streamed: the same agent, its answer read as it arrives.
STREAMED = """
import asyncio

from myapp._vendor.minagent import Agent
from myapp._vendor.minagent_openai import OpenAIChatClient


async def main():
    async with OpenAIChatClient("gpt-4o-mini") as client:
        agent = Agent(client, "You are brief.")
        stream = agent.run("Say hello.", stream=True)
        pieces = [update.text async for update in stream]
        final = await stream.get_final_response()
        assert "".join(pieces) == final.text, (pieces, final.text)
        print(final.text)


asyncio.run(main())
"""


def test_the_readme_commands_and_program_run_as_written(
    stream: bool, tmp_path: Path, server: _Server
) -> None:
    """PK-19: the README's Vendoring commands, run by bash from an app's folder with
    the clone at ``$CLONE``, build a tree whose program (as written; streamed in the
    streaming mode) imports ``myapp._vendor.minagent`` and the OpenAI plugin beside it
    and answers through a loopback server, with no site-packages: every module of
    minagent and the plugin comes from the tree, and the folders loaded are the ones
    the README lists for the plugin."""
    section = _section()
    commands = re.search(r"```sh\n(.*?)```", section, re.S)
    program = re.search(r"```py\n(.*?)```", section, re.S)
    assert commands is not None
    assert program is not None
    assert "from myapp._vendor.minagent import Agent\n" in program.group(1)
    app = tmp_path / "app"
    app.mkdir()
    built = subprocess.run(
        ["bash", "-e", "-c", commands.group(1)],
        cwd=app,
        env={"CLONE": str(ROOT), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    code = STREAMED if stream else program.group(1)
    done = _run(
        app,
        code + REPORT,
        OPENAI_API_KEY="sk-vendored",
        OPENAI_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}/v1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Hello."
    assert _loaded(done, app) == set(LISTED["minagent_openai"])
    ((path, authorization, body),) = server.seen
    assert path == "/v1/chat/completions"
    assert authorization == "Bearer sk-vendored"
    assert body["model"] == "gpt-4o-mini"
    assert bool(body.get("stream")) is stream


# -- each plugin with the folders the README lists ------------------------------------------

# Imports the vendored plugin and resolves every name it exports (its client classes load
# on first use), then prints the loaded modules.
IMPORT_ALL = """
import importlib
plugin = importlib.import_module("myapp._vendor." + {plugin!r})
for name in plugin.__all__:
    getattr(plugin, name)
"""


@pytest.mark.parametrize("plugin", SEAMED)
def test_each_plugin_works_with_the_folders_the_readme_lists(
    plugin: str, tmp_path: Path
) -> None:
    """PK-19: a tree with the core's top-level files, the folders the README lists for
    the plugin and nothing else imports the vendored plugin and every name it exports,
    with the standard library only (aiohttp's folder too, for ``minagent_http``, the
    aiohttp transport); it loads exactly those folders, all from the tree."""
    folders = LISTED[plugin]
    app = _tree(tmp_path / "app", plugin, folders)
    extra = (AIOHTTP_DIR,) if plugin == "minagent_http" else ()
    done = _run(app, IMPORT_ALL.format(plugin=plugin) + REPORT, extra_path=extra)
    assert done.returncode == 0, done.stderr
    assert _loaded(done, app) == set(folders)


# Imports the vendored plugin and prints the error's type and text.
IMPORT_FAILS = """
import importlib
try:
    importlib.import_module("myapp._vendor." + {plugin!r})
except ImportError as exc:
    print(type(exc).__name__)
    print(exc)
    print(getattr(exc, "name", None))
else:
    print("imported")
"""

MISSING = [(plugin, folder) for plugin in SEAMED for folder in LISTED[plugin]]


@pytest.mark.parametrize(("plugin", "folder"), MISSING)
def test_a_missing_listed_folder_is_an_import_error_naming_it(
    plugin: str, folder: str, tmp_path: Path
) -> None:
    """PK-19: in a copy of minagent without one of the folders the README lists for a
    plugin, importing the plugin is an ImportError (not a ModuleNotFoundError) that names
    the plugin and the folder and says to copy that folder beside the core."""
    others = tuple(f for f in LISTED[plugin] if f != folder)
    app = _tree(tmp_path / "app", plugin, others)
    extra = (AIOHTTP_DIR,) if plugin == "minagent_http" else ()
    done = _run(app, IMPORT_FAILS.format(plugin=plugin), extra_path=extra)
    assert done.returncode == 0, done.stderr
    kind, text, _name = done.stdout.splitlines()
    assert kind == "ImportError"
    assert text.startswith(f"{plugin} needs the optional folder minagent/{folder}/ ")
    assert "copy that folder beside the core" in text
    assert str(app / "myapp" / "_vendor" / "minagent") in text


@pytest.mark.parametrize("plugin", ["minagent_http", "minagent_openai"])
def test_an_incomplete_folder_is_an_import_error_naming_it(
    plugin: str, tmp_path: Path
) -> None:
    """PK-19: a copy whose ``providers/`` lacks one of its modules is the same
    ImportError, naming the folder and the module missing from it."""
    app = _tree(tmp_path / "app", plugin, LISTED[plugin])
    (app / "myapp" / "_vendor" / "minagent" / "providers" / "http.py").unlink()
    extra = (AIOHTTP_DIR,) if plugin == "minagent_http" else ()
    done = _run(app, IMPORT_FAILS.format(plugin=plugin), extra_path=extra)
    assert done.returncode == 0, done.stderr
    kind, text, _name = done.stdout.splitlines()
    assert kind == "ImportError"
    assert "needs the optional folder minagent/providers/" in text
    assert "myapp._vendor.minagent.providers.http" in text
    assert "copy that folder beside the core" in text


def test_a_module_missing_for_another_reason_propagates(tmp_path: Path) -> None:
    """PK-19: only a listed folder's absence is reworded: ``minagent_http`` vendored
    with its folders but without aiohttp is the plain ModuleNotFoundError for aiohttp."""
    plugin = "minagent_http"
    app = _tree(tmp_path / "app", plugin, LISTED[plugin])
    done = _run(app, IMPORT_FAILS.format(plugin=plugin))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "ModuleNotFoundError",
        "No module named 'aiohttp'",
        "aiohttp",
    ]


# -- the README's list stays true -----------------------------------------------------------


def _imported_names(package: Path) -> set[str]:
    """The names the plugin's modules import from its ``_minagent`` seam, at any level
    (module, function, ``TYPE_CHECKING``)."""
    names: set[str] = set()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "_minagent":
                names.update(alias.name for alias in node.names)
    return names


def _folder_of(name: str) -> str | None:
    """The folder of minagent a name of the seam comes from (None: the core), looked
    up in the order the seam looks: minagent's names (an optional one loads its folder),
    then ``minagent.providers`` and its ``http`` and ``transport`` modules."""
    import importlib

    if name in minagent.__all__:
        folder: str | None = minagent.__dict__["_LAZY"].get(name)
        return folder
    for module in ("providers", "providers.http", "providers.transport"):
        if name in importlib.import_module(f"minagent.{module}").__all__:
            return "providers"
    raise AssertionError(f"{name} is no name of minagent the seam can give")


def _declared(package: Path) -> tuple[str, ...]:
    """The ``FOLDERS`` the plugin's seam declares."""
    tree = ast.parse((package / "_minagent.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [
            t.id for t in node.targets if isinstance(t, ast.Name)
        ] == ["FOLDERS"]:
            value: tuple[str, ...] = ast.literal_eval(node.value)
            return value
    raise AssertionError(f"{package.name}/_minagent.py declares no FOLDERS")


def test_the_readme_lists_exactly_the_folders_each_plugin_imports() -> None:
    """PK-19: the README's table names every plugin with a ``_minagent`` seam and no
    other; for each, the folders it lists are exactly the seam's ``FOLDERS`` and exactly
    the folders of the names the plugin's modules import from the seam."""
    assert sorted(LISTED) == SEAMED
    for plugin in SEAMED:
        package = _plugin_dir(plugin)
        used = {_folder_of(name) for name in _imported_names(package)} - {None}
        assert set(LISTED[plugin]) == used, plugin
        assert _declared(package) == LISTED[plugin], plugin
