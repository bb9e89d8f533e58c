"""Print the size of minagent's core by the measures of spec/package.md PK-11.

    python tools/core_size.py            # the core: minagent/*.py
    python tools/core_size.py --all      # the core, then each folder of minagent/

The measures are read from the source as it is committed (formatted by ruff at its
defaults, 88 columns): statements (every `ast.stmt` node, the amount of code whatever
its layout), lines (as formatted), docstring lines, comment lines and blank lines. They
are reported in benchmarks/README.md so that growth is visible and discussed; no test
bounds them.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from dataclasses import dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "minagent"


_WITH_DOCSTRING = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Size:
    files: int = 0
    statements: int = 0
    lines: int = 0
    docstring_lines: int = 0
    comment_lines: int = 0
    blank_lines: int = 0

    def add(self, other: Size) -> None:
        for field in fields(self):
            name = field.name
            setattr(self, name, getattr(self, name) + getattr(other, name))


def measure(path: Path) -> Size:
    """The measures of one module."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, _WITH_DOCSTRING) or not node.body:
            continue
        first = node.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
            and first.end_lineno is not None
        ):
            docstrings.update(range(first.lineno, first.end_lineno + 1))
    comments = {
        token.start[0]
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
        and not lines[token.start[0] - 1][: token.start[1]].strip()
    }
    return Size(
        files=1,
        statements=sum(isinstance(node, ast.stmt) for node in ast.walk(tree)),
        lines=len(lines),
        docstring_lines=len(docstrings),
        comment_lines=len(comments),
        blank_lines=sum(not line.strip() for line in lines),
    )


def total(paths: list[Path]) -> Size:
    size = Size()
    for path in paths:
        size.add(measure(path))
    return size


def main(argv: list[str]) -> int:
    rows = [("core (minagent/*.py)", total(sorted(PACKAGE.glob("*.py"))))]
    if "--all" in argv:
        for folder in sorted(
            p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
        ):
            rows.append((f"{folder.name}/", total(sorted(folder.rglob("*.py")))))
    names = [field.name for field in fields(Size)]
    print(f"{'part':<22}" + "".join(f"{name.replace('_', ' '):>17}" for name in names))
    for label, size in rows:
        print(f"{label:<22}" + "".join(f"{getattr(size, n):>17,}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
