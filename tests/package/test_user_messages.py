"""Messages meant for users (spec/package.md PK-14, PK-15): two copies of minagent are
named, and no message shows a rule ID."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_two_copies_of_minagent_are_named(tmp_path: Path) -> None:
    """PK-14: a Message of another copy of minagent is named as such, with both
    packages."""
    vendor = tmp_path / "myapp" / "_vendor"
    shutil.copytree(
        ROOT / "minagent",
        vendor / "minagent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (vendor / "__init__.py").write_text("")
    code = (
        "import asyncio, minagent\n"
        "from minagent.testing import ScriptedChatClient\n"
        "from myapp._vendor import minagent as vendored\n"
        "client = ScriptedChatClient(['hi'])\n"
        "try:\n"
        "    asyncio.run(minagent.Agent(client).run([vendored.Message('user', ['Hi'])]))\n"
        "except minagent.ContentError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "messages[0]: expected str, Content or Message, got Message of another copy of minagent "
        "(myapp._vendor.minagent, not minagent: import every minagent name from one)"
    )


RULE_ID = re.compile(
    r"\b(?:AG|AN|BR|CF|DU|EX|GM|HI|HK|HS|LP|MCP|ML|MW|OA|OB|OL|OR|PK|PV|RD|SC|SE|SO|ST|TH|TL|TY|UP)-\d+\b"
)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            # module, class and function docstrings, and attribute docstrings
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(
                    statement.value, ast.Constant
                ):
                    found.add(id(statement.value))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "__doc__" for t in node.targets
        ):
            found |= {id(sub) for sub in ast.walk(node.value)}
    return found


def test_no_rule_ids_in_messages_meant_for_users() -> None:
    """PK-15: no string of minagent/ or of a plugin that is not a docstring cites a rule
    ID (the conformance kit, which reports rules to plugin authors, aside)."""
    offenders = []
    files = [
        p for p in (ROOT / "minagent").rglob("*.py") if "conformance" not in p.parts
    ]
    files += list((ROOT / "plugins").rglob("minagent_*/*.py"))
    assert len(files) > 80
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstring_nodes(tree)
        for node in ast.walk(tree):
            text = (
                node.value
                if isinstance(node, ast.Constant) and id(node) not in skip
                else None
            )
            if isinstance(text, str) and RULE_ID.search(text):
                offenders.append(
                    f"{path.relative_to(ROOT)}:{node.lineno}: {text[:80]!r}"
                )
    assert offenders == []
    spec_prefixes = {
        m.group(1) for m in re.finditer(r"\*\*([A-Z]+)-\d+\*\*", _spec_text())
    }
    assert spec_prefixes <= set(
        RULE_ID.pattern.split("(?:")[1].split(")")[0].split("|")
    )


def _spec_text() -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (ROOT / "spec").glob("*.md"))
