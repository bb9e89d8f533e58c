"""The command line and plugin discovery (spec/package.md PK-3, spec/agent.md AG-10,
spec/providers.md PV-22)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import minagent
from minagent import (
    MinagentError,
    PluginNotFoundError,
    get_client,
)
from minagent.cli import main
from minagent.testing import ScriptedChatClient, text_chunks
from tests._support.entry_points import FakeEntryPoint, fake_entry_points

ROOT = Path(__file__).resolve().parents[2]


def python_m_minagent(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "minagent", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


def test_version() -> None:
    """PK-3: `python -m minagent --version` prints `minagent <version>`."""
    done = python_m_minagent("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"minagent {minagent.__version__}"
    assert minagent.__version__[0].isdigit()


@pytest.mark.parametrize("args", [(), ("about",)], ids=["no-args", "about"])
def test_about_lists_the_commands(args: tuple[str, ...]) -> None:
    """PK-3: no arguments (or `about`) prints what minagent is and the commands it
    offers."""
    done = python_m_minagent(*args)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"minagent {minagent.__version__}")
    assert "agent core" in out
    for command in (
        "python -m minagent demo",
        "python -m minagent run PROMPT",
        "--version",
    ):
        assert command in out
    assert "--provider NAME" in out
    assert "--model MODEL" in out


def test_main_without_cli_folder_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """PK-3: `python -m minagent` in a copy without minagent/cli/ exits 2 with an error
    naming the folder."""
    from minagent import __main__ as entry

    for mod in [
        m for m in sys.modules if m == "minagent.cli" or m.startswith("minagent.cli.")
    ]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "minagent.cli", None)  # type: ignore[arg-type]
    assert entry.main() == 2
    assert "minagent/cli/" in capsys.readouterr().err


def test_main_reraises_a_missing_module_other_than_cli(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PK-3: a missing dependency inside the command line is not disguised as a missing
    folder."""
    from minagent import __main__ as entry

    for mod in [
        m for m in sys.modules if m == "minagent.cli" or m.startswith("minagent.cli.")
    ]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "minagent.cli", None)  # type: ignore[arg-type]
    real = ModuleNotFoundError

    class Other(real):
        pass

    err = ModuleNotFoundError("No module named 'x'", name="x")
    monkeypatch.setitem(sys.modules, "minagent.cli", None)  # type: ignore[arg-type]
    import builtins

    orig_import = builtins.__import__

    def fake(name: str, *a: Any, **k: Any) -> Any:
        if name == "cli" or name.endswith(".cli"):
            raise err
        return orig_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ModuleNotFoundError) as info:
        entry.main()
    assert info.value is err


def test_python_dash_m_minagent_version_runs_main() -> None:
    """PK-3: `python -m minagent --version` prints `minagent <version>` (the module's
    __main__ guard)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "minagent", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("minagent ")


def test_demo_shows_every_layer_in_order() -> None:
    """AG-10: `python -m minagent demo` runs offline and prints, in order, agent
    middleware, chat middleware, the model's tool calls, function middleware, tool
    results and the streamed final answer."""
    done = python_m_minagent("demo")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()

    def first(prefix: str, after: int = -1) -> int:
        for index, line in enumerate(lines):
            if index > after and line.strip().startswith(prefix):
                return index
        raise AssertionError(
            f"no line starting with {prefix!r} after line {after}:\n{done.stdout}"
        )

    agent_mw = first("agent middleware  >")
    chat_mw = first("chat middleware   > model call 1", agent_mw)
    weather_call = first("model asks for get_weather", chat_mw)
    weather_mw = first("function middleware > get_weather", weather_call)
    weather_returned = first("function middleware < get_weather", weather_mw)
    weather_result = first("tool result for c1", weather_returned)
    second_call = first("chat middleware   > model call 2", weather_result)
    convert_call = first("model asks for to_fahrenheit", second_call)
    convert_mw = first("function middleware > to_fahrenheit", convert_call)
    convert_result = first("tool result for c2", convert_mw)
    third_call = first("chat middleware   > model call 3", convert_result)
    answer = first("WeatherBot: In Paris it is 18 °C, which is 64.4 °F.", third_call)
    assert answer > third_call
    assert '"celsius": 18.0' in lines[weather_result]
    assert lines[convert_result].endswith("64.4")
    assert "3 model calls" in done.stdout


def test_demo_in_process_matches() -> None:
    """AG-10: the demo is deterministic: in process it prints the same as in a
    subprocess."""
    out = io.StringIO()
    assert main(["demo"], out=out) == 0
    assert out.getvalue() == python_m_minagent("demo").stdout


def test_run_with_an_unknown_provider_exits_2_naming_the_install_command() -> None:
    """AG-10, PV-22: `run` with a provider no plugin provides exits with status 2 and
    says how to install a plugin from a checkout, never a registry name (PK-12)."""
    done = python_m_minagent(
        "run", "hello", "--provider", "nosuchprovider", "--model", "m"
    )
    assert done.returncode == 2
    assert "pip install -e . -e plugins/http -e plugins/<folder>" in done.stderr
    assert "minagent-nosuchprovider" not in done.stderr
    assert done.stdout == ""


def test_run_streams_one_answer_from_a_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """AG-10, PV-22: `run` gets the client from the plugin, with the model, and streams
    the answer."""
    made: list[ScriptedChatClient] = []

    def factory(**kwargs: Any) -> ScriptedChatClient:
        client = ScriptedChatClient([text_chunks("Hello", ", ", "world")], **kwargs)
        made.append(client)
        return client

    fake_entry_points(monkeypatch, FakeEntryPoint("fake", factory))
    out = io.StringIO()
    code = main(
        [
            "run",
            "greet me",
            "--provider",
            "fake",
            "--model",
            "tiny",
            "--instructions",
            "Be kind.",
        ],
        out=out,
    )
    assert code == 0
    assert out.getvalue() == "Hello, world\n"
    [client] = made
    assert client.model == "tiny"
    assert client.requests[0].stream is True
    assert client.requests[0].texts == ["user: greet me"]
    assert client.requests[0].options["instructions"] == "Be kind."


def test_get_client_unknown_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """PV-22: an unknown provider is a PluginNotFoundError (a LookupError) naming the
    installed providers and the command that installs a plugin from a checkout
    (PK-12)."""
    groups = fake_entry_points(
        monkeypatch, FakeEntryPoint("alpha", object), FakeEntryPoint("beta", object)
    )
    with pytest.raises(PluginNotFoundError) as info:
        get_client("gamma", model="m")
    assert isinstance(info.value, LookupError)
    assert isinstance(info.value, MinagentError)
    message = str(info.value)
    assert "'gamma'" in message
    assert "alpha, beta" in message
    assert "`pip install -e . -e plugins/http -e plugins/<folder>`" in message
    assert "minagent-gamma" not in message
    assert set(groups) == {"minagent.clients"}


def test_get_client_with_nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """PV-22, PK-12: with no plugin at all the message says none is installed, and gives
    the command that installs the folder providing the name from a checkout."""
    fake_entry_points(monkeypatch)
    for name, folder in (
        ("openai", "openai"),
        ("openai-responses", "openai"),
        ("anthropic", "anthropic"),
    ):
        with pytest.raises(LookupError) as info:
            minagent.get_client(name)
        assert "installed: none" in str(info.value)
        assert (
            f"from a checkout of minagent: `pip install -e . -e plugins/http -e plugins/{folder}`"
            in str(info.value)
        )
        assert "pip install minagent" not in str(info.value)


def test_get_client_instantiates_the_registered_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-22: the class registered under the provider's name in `minagent.clients` is
    instantiated with the keyword arguments; other entry points are not loaded."""
    other = FakeEntryPoint("other", ScriptedChatClient)
    wanted = FakeEntryPoint("scripted", ScriptedChatClient)
    fake_entry_points(monkeypatch, other, wanted)
    client = get_client("scripted", model="m-1", steps=["hi"])
    assert isinstance(client, ScriptedChatClient)
    assert client.model == "m-1"
    assert client.steps == ["hi"]
    assert (wanted.loads, other.loads) == (1, 0)


def test_get_client_rejects_an_entry_point_that_makes_no_chat_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-22: get_client returns a BaseChatClient; an entry point that makes anything
    else is a TypeError naming the provider and what it made."""
    fake_entry_points(monkeypatch, FakeEntryPoint("odd", dict))
    with pytest.raises(
        TypeError,
        match=r"'odd' of 'minagent.clients' made a builtins.dict, not a minagent.BaseChatClient",
    ):
        get_client("odd")


def test_run_reports_a_provider_failure_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """AG-10: a provider's failure is `error: <message>` on stderr and exit status 1, no
    traceback."""
    from minagent import ProviderConnectionError

    failing = ScriptedChatClient(
        [
            ProviderConnectionError(
                "fake: cannot connect to 127.0.0.1:9", provider="fake"
            )
        ]
    )
    monkeypatch.setattr("minagent.cli.get_client", lambda name, **kw: failing)
    assert (
        main(["run", "hello", "--provider", "fake", "--model", "m"], out=io.StringIO())
        == 1
    )
    err = capsys.readouterr().err
    assert err.strip() == "error: fake: cannot connect to 127.0.0.1:9"


def test_other_pythons_are_found_not_hard_coded() -> None:
    """PK-5: the gate finds further CPythons >= 3.11 itself, one per minor version,
    never this one."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import other_pythons
    finally:
        sys.path.pop(0)
    found = other_pythons.interpreters()
    assert sys.version_info[:2] not in found
    assert all(version >= (3, 11) for version in found)
    for python, full in found.values():
        assert other_pythons.version_of(python) is not None
        assert full.startswith("3.")
    assert "other-pythons" in (ROOT / "tools" / "check.py").read_text(encoding="utf-8")
