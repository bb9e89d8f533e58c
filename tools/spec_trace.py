"""Check that spec/ and the tests cite each other (spec/README.md, "Conventions").

Rules are defined in ``spec/*.md`` as list items starting with a bold ID (``- **ST-3**
...``) or as table rows whose first cell is an ID (``| MW-R4 | ...``). Tests cite rules
in the docstring of a test function or of its test class. The check fails when a rule is
cited by no test, or a test cites an ID that no spec file defines.

    python tools/spec_trace.py           # the check, one summary line
    python tools/spec_trace.py --table   # every rule with the tests that cite it
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ID = r"[A-Z]{2,4}-[A-Z]?\d+[a-z]?"
DEFINITION = re.compile(rf"^\s*(?:[-*]\s+\*\*({ID})\*\*|\|\s*\**({ID})\**\s*\|)")
CITATION = re.compile(rf"(?<![A-Za-z0-9-])({ID})(?![A-Za-z0-9])")


def defined_rules(spec_dir: Path) -> dict[str, str]:
    """Rule ID -> 'file:line' of its definition. A rule defined twice is an error."""
    return {rule: where for rule, (where, _retired) in _definitions(spec_dir).items()}


def retired_rules(spec_dir: Path) -> set[str]:
    """Rules whose definition says "(retired)": kept so the ID is never reused, cited by
    no test."""
    return {
        rule for rule, (_where, retired) in _definitions(spec_dir).items() if retired
    }


def _definitions(spec_dir: Path) -> dict[str, tuple[str, bool]]:
    rules: dict[str, tuple[str, bool]] = {}
    for path in sorted(spec_dir.glob("*.md")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = DEFINITION.match(line)
            if match:
                rule = match.group(1) or match.group(2)
                where = f"{path.relative_to(ROOT)}:{lineno}"
                if rule in rules:
                    raise SystemExit(
                        f"spec: {rule} is defined twice: {rules[rule][0]} and {where}"
                    )
                rules[rule] = (where, "(retired)" in line)
    return rules


def citations(test_dir: Path) -> dict[str, list[str]]:
    """Rule ID -> the tests ('file::name') whose docstring, or class docstring, cites
    it."""
    cited: dict[str, list[str]] = defaultdict(list)
    for path in sorted(test_dir.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(ROOT)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                outer = ast.get_docstring(node) or ""
                for item in node.body:
                    if _is_test(item):
                        _cite(cited, f"{rel}::{node.name}::{item.name}", outer, item)
            elif _is_test(node):
                _cite(cited, f"{rel}::{node.name}", "", node)  # type: ignore[arg-type]
    return cited


def _is_test(node: ast.AST) -> bool:
    return isinstance(
        node, ast.FunctionDef | ast.AsyncFunctionDef
    ) and node.name.startswith("test")


def _cite(
    cited: dict[str, list[str]],
    name: str,
    outer: str,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> None:
    for rule in dict.fromkeys(
        CITATION.findall(outer + "\n" + (ast.get_docstring(node) or ""))
    ):
        cited[rule].append(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--table",
        action="store_true",
        help="print every rule and the tests that cite it",
    )
    parser.add_argument("--spec", type=Path, default=ROOT / "spec")
    parser.add_argument("--tests", type=Path, default=ROOT / "tests")
    args = parser.parse_args(argv)

    rules = defined_rules(args.spec)
    retired = retired_rules(args.spec)
    cited = citations(args.tests)
    if args.table:
        for rule in sorted(rules, key=_order):
            tests = cited.get(rule, [])
            print(f"{rule:8} {rules[rule]}")
            for test in tests or ["(no test)"]:
                print(f"         {test}")
    uncited = sorted(
        (r for r in rules if r not in cited and r not in retired), key=_order
    )
    unknown = sorted((r for r in cited if r not in rules or r in retired), key=_order)
    for rule in uncited:
        print(f"spec: {rule} ({rules[rule]}) is cited by no test")
    for rule in unknown:
        what = "retired" if rule in retired else "defined nowhere in spec/"
        print(f"spec: {rule} is cited by {', '.join(cited[rule][:3])} but {what}")
    if uncited or unknown:
        print(
            f"spec: {len(rules)} rules, {len(uncited)} uncited, {len(unknown)} unknown citations: FAILED"
        )
        return 1
    print(
        f"spec: {len(rules) - len(retired)} rules, all cited by tests ({len(retired)} retired)"
    )
    return 0


def _order(rule: str) -> tuple[str, int, str]:
    prefix, _, rest = rule.partition("-")
    digits = "".join(ch for ch in rest if ch.isdigit())
    return (prefix, int(digits or 0), rest)


if __name__ == "__main__":
    sys.exit(main())
