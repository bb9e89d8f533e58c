"""The house (spec/package.md PK-8 .. PK-11, spec/decisions.md "The house"): the
top-level modules of minagent/ are the core, each folder an optional feature; the core
imports a folder only at the listed seams and never minagent/upstream/, folders import
the core's public names only, nothing in minagent/ imports in a circle, nothing outside
the standard library."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import minagent
import minagent.providers

PACKAGE = Path(__file__).resolve().parents[2] / "minagent"
CORE = sorted(p.stem for p in PACKAGE.glob("*.py"))
FOLDERS = sorted(
    p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()
)

# The seams (spec/decisions.md): (core module, the function holding the import) -> the
# folder it may load. (`minagent.__getattr__` loads the folder of an optional name with
# importlib, by the table `_LAZY`; the edge's loader, `_load_upstream`, loads upstream/
# the same way.) No seam leads to upstream/: upstream's API reaches the core only
# through the edge it installs (`minagent._edge`). The one import of upstream/ a core
# file holds is `__init__`'s `TYPE_CHECKING` block, which only type checkers read.
SEAMS: dict[tuple[str, str], str] = {
    ("__init__", "TYPE_CHECKING"): "*",  # what type checkers see of those names
    ("__main__", "main"): "cli",
    ("_responses", "response_format"): "structured",
    ("_agents", "BaseAgent.as_mcp_server"): "mcp",
    ("_agents", "BaseAgent.as_tool"): "delegation",
}

# Folder -> folders it may import (PK-10); a folder always may import itself.
FOLDER_EDGES: dict[str, set[str]] = {
    "middleware": {"hooks", "upstream"},
    "testing": {"conformance", "providers"},
    "conformance": {"providers"},
    "mcp": {"providers"},
    "cli": set(FOLDERS),
}


class Import:
    def __init__(self, target: list[str], names: list[str], where: str) -> None:
        # the imported module's path inside minagent, e.g. ["mcp", "server"]; [] =
        # minagent
        self.target = target
        self.names = names  # the names taken from it (from-imports)
        # "" at module level, "TYPE_CHECKING", or the enclosing function's qualified
        # name
        self.where = where


def imports(path: Path) -> Iterator[Import | str]:
    """Every import in the file: an `Import` of minagent, or the top-level name of
    anything else."""
    here = list(path.relative_to(PACKAGE).parent.parts)

    def visit(node: ast.AST, where: str) -> Iterator[Import | str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = (
                    f"{where}.{child.name}"
                    if where and where != "TYPE_CHECKING"
                    else child.name
                )
                yield from visit(child, inner)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(
                child.test
            ):
                yield from visit(child, "TYPE_CHECKING")
            elif isinstance(child, ast.ImportFrom):
                names = [a.name for a in child.names]
                if child.level:
                    base = (
                        here[: len(here) - (child.level - 1)]
                        if child.level > 1
                        else here
                    )
                    target = base + (child.module.split(".") if child.module else [])
                    if not child.module:  # from . import x: x may be a module
                        for name in names:
                            yield Import(
                                [*target, name]
                                if (PACKAGE.joinpath(*target, name)).exists()
                                or PACKAGE.joinpath(*target, f"{name}.py").exists()
                                else target,
                                [name],
                                where,
                            )
                        continue
                    yield Import(target, names, where)
                elif child.module and child.module.split(".")[0] == "minagent":
                    yield Import(child.module.split(".")[1:], names, where)
                elif child.module:
                    yield child.module.split(".")[0]
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    parts = alias.name.split(".")
                    yield (
                        Import(parts[1:], [], where)
                        if parts[0] == "minagent"
                        else parts[0]
                    )
            else:
                yield from visit(child, where)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), "")


def _folder_of(target: list[str]) -> str | None:
    return target[0] if target and target[0] in FOLDERS else None


def test_the_core_imports_a_folder_only_at_the_seams() -> None:
    """PK-8: no core module imports a folder at module level; inside a function only at
    a listed seam."""
    found: list[str] = []
    for stem in CORE:
        for item in imports(PACKAGE / f"{stem}.py"):
            if (
                isinstance(item, Import)
                and (folder := _folder_of(item.target)) is not None
            ):
                allowed = SEAMS.get((stem, item.where))
                if allowed not in ("*", folder):
                    found.append(
                        f"{stem} ({item.where or 'module level'}) imports {'.'.join(item.target)}"
                    )
    assert found == []


def test_the_seams_exist() -> None:
    """PK-8: every listed seam is still where the list says (a stale entry would allow
    too much)."""
    seen = {
        (stem, item.where)
        for stem in CORE
        for item in imports(PACKAGE / f"{stem}.py")
        if isinstance(item, Import) and _folder_of(item.target)
    }
    assert set(SEAMS) <= seen


def test_no_core_module_imports_upstream() -> None:
    """PK-8, UP-10: no core module imports minagent/upstream/, at module level or inside
    a function; the only mention is `__init__`'s `TYPE_CHECKING` block, which type
    checkers read and Python never runs."""
    found = [
        f"{stem} ({item.where or 'module level'}) imports {'.'.join(item.target)}"
        for stem in CORE
        for item in imports(PACKAGE / f"{stem}.py")
        if isinstance(item, Import)
        and _folder_of(item.target) == "upstream"
        and (stem, item.where) != ("__init__", "TYPE_CHECKING")
    ]
    assert found == []


# A module is named by its dotted path inside minagent ("" is the package itself,
# "upstream" a folder's __init__, "upstream.threads" a module of it).
MODULES: dict[str, Path] = {
    ".".join(
        path.relative_to(PACKAGE)
        .with_suffix("")
        .parts[: -1 if path.name == "__init__.py" else None]
    ): path
    for path in PACKAGE.rglob("*.py")
}


def _reexports(package: str) -> dict[str, str]:
    """The names a package's __init__ takes from its modules at module level, and the
    module each comes from (what ``from <package> import <name>`` depends on)."""
    found: dict[str, str] = {}
    for item in imports(MODULES[package]):
        if isinstance(item, Import) and item.where == "":
            module = ".".join(item.target)
            for name in item.names:
                found[name] = module
    return found


def _module_for(target: list[str], name: str | None) -> str | None:
    """The module an import depends on: a module of the tree, or for a name taken
    from a package, the module that defines it (a package only re-exports: PK-7's
    names come from the core's modules, a folder's from its files)."""
    module = ".".join(target)
    if module not in MODULES:
        return None
    if name is None or name == "*" or MODULES[module].name != "__init__.py":
        return module
    if f"{module}.{name}".lstrip(".") in MODULES:
        return f"{module}.{name}".lstrip(".")
    source = _reexports(module).get(name)
    if source is None or source == module:
        return module
    return _module_for(source.split(".") if source else [], name)


def _import_graph() -> dict[str, set[str]]:
    """Every module of minagent/ -> the modules it imports: at module level, under
    `TYPE_CHECKING`, and inside functions."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module, path in MODULES.items():
        for item in imports(path):
            if not isinstance(item, Import):
                continue
            for name in item.names or [None]:
                found = _module_for(item.target, name)
                if found is not None and found != module:
                    graph[module].add(found)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_minagent_has_no_import_cycle() -> None:
    """PK-8: the modules of minagent/, core and folders, import each other without a
    circle, counting module-level, `TYPE_CHECKING` and function-level imports (a name
    taken from a package counts as an import of the module that defines it)."""
    cycles = _cycles(_import_graph())
    assert cycles == []


def test_the_cycle_check_finds_a_circle() -> None:
    """PK-8: the graph is read as the check reads it: a lazy import back is a circle,
    a name re-exported by a package leads to the module that defines it."""
    graph = _import_graph()
    # `from minagent._types import ...`; `from minagent import Content` depends on
    # `_types` too, not on the package
    assert "_types" in graph["upstream.content"]
    assert "" not in graph["upstream.content"]
    # `from .content import factory`, and `from minagent._edge import Edge`
    assert {"upstream.content", "_edge"} <= graph["upstream.edge"]
    # `from ..hooks import Handler`: the hooks module that defines it
    assert "hooks.requests" in graph["middleware.retry"]
    assert "hooks" not in graph["middleware.retry"]
    # a function-level import counts (`BaseAgent.as_tool`)
    assert "delegation.tool" in graph["_agents"]
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_minagent_imports_only_the_standard_library() -> None:
    """PK-8, PK-1: nothing outside the standard library, anywhere in minagent/, folders
    included."""
    outside = {
        f"{path.relative_to(PACKAGE)}: {item}"
        for path in PACKAGE.rglob("*.py")
        for item in imports(path)
        if isinstance(item, str)
        and item not in sys.stdlib_module_names
        and item != "__future__"
    }
    assert outside == set()


def test_folders_use_the_cores_public_names() -> None:
    """PK-10: a folder imports from the core only names in `minagent.__all__` or in the
    core module's `__all__`, and other folders only along the listed edges."""
    found: list[str] = []
    for path in sorted(PACKAGE.glob("*/**/*.py")):
        folder = path.relative_to(PACKAGE).parts[0]
        for item in imports(path):
            if not isinstance(item, Import):
                continue
            where = f"{path.relative_to(PACKAGE)}"
            if not item.target:
                hidden = [
                    n
                    for n in item.names
                    if n not in importlib.import_module("minagent").__all__
                ]
                found += [f"{where}: minagent.{n}" for n in hidden]
            elif item.target[0] in CORE:
                public = set(
                    getattr(
                        importlib.import_module(f"minagent.{item.target[0]}"),
                        "__all__",
                        (),
                    )
                )
                found += [
                    f"{where}: {item.target[0]}.{n}"
                    for n in item.names
                    if n not in public
                ]
                if not item.names:
                    found.append(f"{where}: import of the module {item.target[0]}")
            elif item.target[0] != folder and item.target[0] not in FOLDER_EDGES.get(
                folder, set()
            ):
                found.append(
                    f"{where}: folder {folder} imports folder {item.target[0]}"
                )
    assert found == []


def test_import_minagent_loads_the_core_only() -> None:
    """PK-9: `import minagent` loads no module of a folder; an optional name loads its
    folder on first use."""
    script = (
        "import sys, minagent\n"
        "print(sorted(m for m in sys.modules if m.startswith('minagent.') and m.count('.') > 0\n"
        "             and m.split('.')[1] in " + repr(FOLDERS) + "))\n"
        "minagent.ResponseFormat\n"
        "print('minagent.structured' in sys.modules, 'minagent.mcp' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == ["[]", "True False"]


@pytest.mark.parametrize(
    "name",
    ["ResponseFormat", "MCPTool", "get_client", "RunTrace", "SQLiteSessionStore"],
)
def test_an_optional_name_without_its_folder_says_which_folder(
    name: str, tmp_path: Path
) -> None:
    """PK-9: in a copy of the core without the folders, an optional name is an
    ImportError naming the folder to copy."""
    import shutil

    copy = tmp_path / "minagent"
    copy.mkdir()
    for stem in CORE:
        shutil.copy(PACKAGE / f"{stem}.py", copy / f"{stem}.py")
    script = f"import minagent\ntry:\n    minagent.{name}\nexcept ImportError as exc:\n    print(exc)\n"
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {str(tmp_path)!r}); exec({script!r})",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    folder = importlib.import_module("minagent").__dict__["_LAZY"][name]
    assert f"minagent/{folder}/" in done.stdout, done.stdout + done.stderr


def test_every_name_in_all_resolves() -> None:
    """PK-7, PK-9: every name in `minagent.__all__` resolves (the optional ones through
    their folder)."""
    import minagent

    assert sorted(set(minagent.__all__)) == sorted(minagent.__all__)
    for name in minagent.__all__:
        assert getattr(minagent, name) is not None, name


def test_lazy_name_without_its_folder_names_the_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PK-9: in a copy of the core without a folder, its optional name is an ImportError
    naming the folder."""
    name = next(n for n, folder in minagent._LAZY.items() if folder == "structured")
    monkeypatch.delitem(minagent.__dict__, name, raising=False)
    for mod in [
        m
        for m in sys.modules
        if m == "minagent.structured" or m.startswith("minagent.structured.")
    ]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "minagent.structured", None)  # type: ignore[arg-type]
    with pytest.raises(ImportError, match=r"minagent/structured/") as info:
        getattr(minagent, name)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert name not in minagent.__dict__  # nothing cached on failure


def test_lazy_name_reraises_a_missing_dependency_of_the_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PK-9: only the folder's own absence becomes the 'copy that folder' error; any
    other missing module propagates."""
    import importlib

    name = next(n for n, folder in minagent._LAZY.items() if folder == "structured")
    monkeypatch.delitem(minagent.__dict__, name, raising=False)

    def fake_import(module: str, package: str | None = None) -> Any:
        raise ModuleNotFoundError("No module named 'somedep'", name="somedep")

    monkeypatch.setattr(importlib, "import_module", fake_import)
    with pytest.raises(ModuleNotFoundError) as info:
        getattr(minagent, name)
    assert info.value.name == "somedep"


def test_providers_unknown_name_is_an_attribute_error() -> None:
    """PK-9: the providers folder's lazy names resolve; another name is an
    AttributeError naming it."""
    with pytest.raises(AttributeError, match="nosuch"):
        minagent.providers.nosuch  # noqa: B018
    assert (
        importlib.import_module("minagent.providers").StdlibTransport.__name__
        == "StdlibTransport"
    )


def test_control_flow_exceptions_are_not_errors() -> None:
    """PK-6: MiddlewareTermination and UserInputRequiredError are not MinagentErrors;
    errors are."""
    import minagent
    from minagent import MinagentError

    assert not issubclass(minagent.MiddlewareTermination, MinagentError)
    assert not issubclass(minagent.UserInputRequiredError, MinagentError)
    for name in (
        "ContentError",
        "SerializationError",
        "StreamError",
        "MiddlewareException",
        "ToolError",
    ):
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

    assert {"CallNext", "CategorizedMiddleware", "MessageInput"} <= set(
        minagent.__all__
    )
    assert minagent.CallNext is CallNext
    assert minagent.CategorizedMiddleware is CategorizedMiddleware
    assert minagent.MessageInput is MessageInput
