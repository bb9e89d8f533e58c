"""PK-8: the floors of spec/decisions.md hold, no two modules import each other, stdlib only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "minagent"

# The house (spec/decisions.md): lowest floor first. A module may import its own floor or lower.
FLOORS: dict[str, int] = {
    # 1 types
    "_exceptions": 1,
    "_version": 1,
    "_issues": 1,
    "_limits": 1,
    "_docstrings": 1,
    "_types": 1,
    "_responses": 1,
    "_stream": 1,
    "_options": 1,
    "_history": 1,
    "_tracing": 1,
    "_runtrace": 2,
    # 2 tools and middleware
    "_schema": 2,
    "_convert": 2,
    "_structured": 2,
    "_tools": 2,
    "_middleware": 2,
    # 3 the client and its loop
    "_calls": 3,
    "_loop": 3,
    "_clients": 3,
    "_providers": 3,
    "_sse": 3,
    "_plugins": 3,
    "_mcp_session": 3,
    "_mcp_client": 3,
    # 4 agent, threads
    "_sessions": 4,
    "_sqlite": 4,
    "_threads": 4,
    "_agents": 4,
    "_mcp_server": 4,
    # 5 faces
    "_cli": 5,
    "__main__": 5,
    "testing": 5,
    "_conformance": 5,
    "hooks": 5,
    "middleware": 5,
    "providers": 5,
    "__init__": 5,
}


def imports_of(path: Path) -> tuple[set[str], set[str]]:
    """(minagent modules, other top-level packages) imported anywhere in the file: at module top,
    under TYPE_CHECKING, inside functions."""
    ours: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                ours.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
            elif node.module and node.module.split(".")[0] == "minagent":
                parts = node.module.split(".")
                ours.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
            elif node.module:
                others.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                (ours if top == "minagent" else others).add(top)
    ours.discard("minagent")
    return {m for m in ours if m in FLOORS or (PACKAGE / f"{m}.py").exists()}, others


def graph() -> dict[str, set[str]]:
    return {path.stem: imports_of(path)[0] for path in sorted(PACKAGE.glob("*.py"))}


def test_every_module_has_a_floor() -> None:
    """PK-8: a new module must be placed on a floor before it may import anything."""
    assert sorted(set(graph()) - set(FLOORS)) == []


def test_no_module_imports_a_higher_floor() -> None:
    """PK-8: types -> tools/middleware -> client/loop -> agent -> faces, never upward."""
    upward = [
        f"{module} (floor {FLOORS[module]}) imports {dep} (floor {FLOORS[dep]})"
        for module, deps in graph().items()
        for dep in sorted(deps)
        if FLOORS[dep] > FLOORS[module]
    ]
    assert upward == []


def test_no_two_modules_import_each_other() -> None:
    """PK-8: the import graph has no cycle (TYPE_CHECKING and function-level imports included)."""
    edges = graph()
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str], on_path: set[str], done: set[str]) -> None:
        for dep in sorted(edges.get(node, ())):
            if dep in on_path:
                cycles.append([*path[path.index(dep) :], dep])
            elif dep not in done:
                on_path.add(dep)
                visit(dep, [*path, dep], on_path, done)
                on_path.discard(dep)
                done.add(dep)

    done: set[str] = set()
    for start in sorted(edges):
        if start not in done:
            visit(start, [start], {start}, done)
            done.add(start)
    assert cycles == []


def test_the_core_imports_only_the_standard_library() -> None:
    """PK-8, PK-1: nothing outside the standard library, anywhere in minagent/."""
    outside = {
        f"{path.stem}: {name}"
        for path in PACKAGE.glob("*.py")
        for name in imports_of(path)[1]
        if name not in sys.stdlib_module_names and name != "__future__"
    }
    assert outside == set()


def test_control_flow_exceptions_are_not_errors() -> None:
    """PK-6: MiddlewareTermination and UserInputRequiredError are not MinagentErrors; errors are."""
    import minagent
    from minagent import MinagentError

    assert not issubclass(minagent.MiddlewareTermination, MinagentError)
    assert not issubclass(minagent.UserInputRequiredError, MinagentError)
    for name in ("ContentError", "SerializationError", "StreamError", "MiddlewareException", "ToolError"):
        assert issubclass(getattr(minagent, name), MinagentError), name

    def guarded() -> None:
        try:
            raise minagent.MiddlewareTermination(result="x")
        except MinagentError:  # pragma: no cover - the point of the test
            pytest.fail("except MinagentError swallowed a termination")

    with pytest.raises(minagent.MiddlewareTermination):
        guarded()


def test_names_users_need_are_exported() -> None:
    """PK-7: CallNext, CategorizedMiddleware and MessageInput are public, in __all__."""
    import minagent
    from minagent._middleware import CallNext, CategorizedMiddleware
    from minagent._types import MessageInput

    assert {"CallNext", "CategorizedMiddleware", "MessageInput"} <= set(minagent.__all__)
    assert minagent.CallNext is CallNext
    assert minagent.CategorizedMiddleware is CategorizedMiddleware
    assert minagent.MessageInput is MessageInput
    assert sorted(set(minagent.__all__)) == sorted(minagent.__all__)
    for name in minagent.__all__:
        assert getattr(minagent, name) is not None, name
