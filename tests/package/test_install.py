"""Installing minagent from a clone: distribution names that are ours, and installs that
work (PK-12, PK-13)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))
IGNORE = shutil.ignore_patterns(
    "__pycache__", "*.egg-info", "build", ".venv*", ".hypothesis", "*_cache", ".git"
)


def _name(requirement: str) -> str:
    """The normalised distribution name of a PEP 508 requirement."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _own() -> dict[str, Path]:
    """Every distribution of the project: its name -> its folder."""
    folders = [ROOT, *PLUGINS]
    return {
        _name(tomllib.loads((f / "pyproject.toml").read_text())["project"]["name"]): f
        for f in folders
    }


def _install_commands() -> list[str]:
    """The commands of the README's install section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


def _clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }


def test_the_core_and_the_plugins_have_names_nobody_else_owns() -> None:
    """PK-12: the core is `minagent-core`, never the registry's `minagent`; every plugin
    is `minagent-*`."""
    own = _own()
    assert _own()["minagent-core"] == ROOT
    assert "minagent" not in own
    assert all(name.startswith("minagent-") for name in own)
    assert len(own) == len(PLUGINS) + 1


def test_built_plugin_metadata_depends_only_on_our_own_distributions(
    tmp_path: Path,
) -> None:
    """PK-12: the metadata setuptools builds for every plugin names the core as
    `minagent-core`, and every dependency named like the project's is one of the
    project's own distributions."""
    own = _own()
    for folder in PLUGINS:
        copy = tmp_path / folder.name
        shutil.copytree(folder, copy, ignore=IGNORE)
        out = tmp_path / f"{folder.name}-meta"
        out.mkdir()
        # setuptools reads pyproject.toml, as a build does
        code = "from setuptools import setup; setup()"
        subprocess.run(
            [sys.executable, "-c", code, "-q", "egg_info", "--egg-base", str(out)],
            cwd=copy,
            capture_output=True,
            check=True,
        )
        (info,) = out.glob("*.egg-info")
        requires = (info / "requires.txt").read_text().split("\n[", 1)[0].split()
        names = {_name(r) for r in requires}
        assert "minagent-core" in names, (folder.name, names)
        ours = {n for n in names if n.startswith("minagent")}
        assert ours <= set(own), (folder.name, ours - set(own))
        assert "minagent" not in names


def test_requirements_name_no_distribution_of_ours_from_a_registry() -> None:
    """PK-12: requirements-test.txt installs every distribution of the project from the
    clone (``-e``), and names none of them, nor the registry's `minagent`, as a registry
    requirement."""
    own = _own()
    for line in (ROOT / "requirements-test.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name = _name(line)
            assert name != "minagent", line
            assert name not in own, line


def _editable_folders(commands: list[str]) -> set[str]:
    found: set[str] = set()
    for command in commands:
        for path in re.findall(r"-e\s+(\S+)", command):
            found.add(os.path.normpath(path.split("[", 1)[0]))
    return found


def test_readme_install_commands_are_the_ones_the_test_command_uses() -> None:
    """PK-12: the README's install section installs exactly the folders that the test
    command (``pip install -r requirements-test.txt``) installs, and nothing by name
    from a registry."""
    commands = _install_commands()
    assert all(c.startswith("python -m pip install ") for c in commands), commands
    for command in commands:
        args = command.split()[4:]
        # only clone folders
        assert all(a == "-e" or args[i - 1] == "-e" for i, a in enumerate(args)), (
            command
        )
        assert "." in _editable_folders([command])  # the core comes with every command
    requirements = (ROOT / "requirements-test.txt").read_text()
    assert _editable_folders(commands) == _editable_folders(requirements.splitlines())
    assert _editable_folders(commands) == {
        ".",
        *(str(p.relative_to(ROOT)) for p in PLUGINS),
    }


def test_readme_install_in_a_fresh_venv_from_a_clone(tmp_path: Path) -> None:
    """PK-12, PK-13: in a fresh virtual environment, the README's install commands, run
    in a clone (a folder named ``minagent``, as ``git clone`` makes it), install every
    distribution from the clone and nothing called `minagent` from a registry; then a
    script run from another folder, and one run from the folder that holds the clone,
    import the clone's core and every plugin, and mypy (pointed at that environment)
    finds them all."""
    clone = tmp_path / "minagent"
    for item in ("minagent", "plugins", "pyproject.toml", "README.md"):
        source = ROOT / item
        if source.is_dir():
            shutil.copytree(source, clone / item, ignore=IGNORE)
        else:
            shutil.copy2(source, clone / item)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = _clean_env()
    for command in _install_commands():
        args = command.split()[1:]  # "python" is the environment's
        done = subprocess.run(
            [str(python), *args, "-q"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {_name(d["name"]): d for d in json.loads(listed.stdout)}
    assert "minagent" not in installed
    assert set(_own()) <= set(installed)
    plugins = [
        "minagent_http",
        "minagent_openai",
        "minagent_anthropic",
        "minagent_ollama",
    ]
    plugins += ["minagent_mcp_http", "minagent_redis", "minagent_otel", "minagent_dbos"]
    script = f"import minagent, {', '.join(plugins)}; print(minagent.__file__); print(minagent.get_client)"
    for where in (tmp_path, tmp_path / "elsewhere"):
        where.mkdir(exist_ok=True)
        done = subprocess.run(
            [str(python), "-c", script],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.splitlines()[0] == str(clone / "minagent" / "__init__.py")
    user = tmp_path / "elsewhere" / "user.py"
    user.write_text(
        "import minagent_openai\nfrom minagent import Agent, ChatResponse\n\n"
        "def text(response: ChatResponse) -> str:\n    return response.text\n\n"
        "reveal_type(Agent)\nreveal_type(minagent_openai.OpenAIChatClient)\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            str(python),
            "user.py",
        ],
        cwd=user.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "import-not-found" not in done.stdout, done.stdout
    assert "minagent._agents.Agent" in done.stdout, done.stdout
    assert "minagent_openai._client.OpenAIChatClient" in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("Success: no issues found in 1 source file"), (
        done.stdout
    )
